import { describe, it, expect } from 'vitest';
import { parseMiLine, parseCString, MiSyntaxError, type MiRecord, type MiTuple, type MiValue } from './parser.js';

// Unless noted otherwise, every line below was captured verbatim from
// "GNU gdb (Debian 13.1-3) 13.1" run as `gdb --interpreter=mi3 -q -nx` on small
// C programs built with `gcc -g -O0 -pthread`. String.raw keeps GDB's
// backslash escapes exactly as they appear on the wire.

/** Parses a line that must be a result or async record and returns its results. */
function resultsOf(line: string): MiTuple {
  const rec = parseMiLine(line);
  if (!('results' in rec)) throw new Error(`not a result/async record: ${JSON.stringify(rec)}`);
  return rec.results;
}

function textOf(line: string): string {
  const rec = parseMiLine(line);
  if (!('text' in rec) || rec.kind === 'unknown') throw new Error(`not a stream record: ${JSON.stringify(rec)}`);
  return rec.text;
}

const unknown = (text: string): MiRecord => ({ kind: 'unknown', text });

describe('parseCString', () => {
  const decode = (src: string): string => parseCString(src, 0).value;

  it('decodes a plain string and reports the index after the closing quote', () => {
    expect(parseCString('"abc"', 0)).toEqual({ value: 'abc', end: 5 });
    expect(parseCString('""', 0)).toEqual({ value: '', end: 2 });
  });

  it('starts at an arbitrary index and ignores what follows the closing quote', () => {
    const src = String.raw`msg="No symbol \"x\" in current context.",code="y"`;
    const { value, end } = parseCString(src, 4);
    expect(value).toBe('No symbol "x" in current context.');
    expect(src.slice(end)).toBe(',code="y"');
  });

  it('decodes the simple C escapes', () => {
    expect(decode(String.raw`"\n\t\r\"\\"`)).toBe('\n\t\r"\\');
    expect(decode(String.raw`"\a\b\f\v\e"`)).toBe('\x07\b\f\v\x1b');
  });

  it('keeps the character of unknown escapes', () => {
    expect(decode(String.raw`"\q\'\?\%"`)).toBe(`q'?%`);
    expect(decode(String.raw`"\é\✓"`)).toBe('é✓');
  });

  it('decodes octal escapes of 1 to 3 digits', () => {
    expect(decode(String.raw`"\0"`)).toBe('\0');
    expect(decode(String.raw`"\12"`)).toBe('\n');
    expect(decode(String.raw`"\033[1m"`)).toBe('\x1b[1m');
    expect(decode(String.raw`"\177"`)).toBe('\x7f');
    // At most three digits belong to the escape; the fourth is a literal.
    expect(decode(String.raw`"\1011"`)).toBe('A1');
    expect(decode(String.raw`"\0101"`)).toBe('\b1');
    // 8 and 9 are not octal digits.
    expect(decode(String.raw`"\18"`)).toBe('\x018');
  });

  it('truncates octal escapes above 0377 to a byte, like C', () => {
    expect(decode(String.raw`"\501"`)).toBe('A'); // 0501 & 0xff === 0101
  });

  it('decodes consecutive octal bytes as UTF-8', () => {
    expect(decode(String.raw`"h\303\251llo"`)).toBe('héllo');
    expect(decode(String.raw`"w\303\266rld \342\234\223"`)).toBe('wörld ✓');
    expect(decode(String.raw`"\360\237\230\200!"`)).toBe('😀!');
    expect(decode(String.raw`"\302\240"`)).toBe('\u00a0');
  });

  it('decodes \\x escapes as bytes, sharing the UTF-8 run with octal escapes', () => {
    expect(decode(String.raw`"\x41\x7e"`)).toBe('A~');
    expect(decode(String.raw`"\xc3\xa9"`)).toBe('é');
    expect(decode(String.raw`"\303\xa9"`)).toBe('é');
    expect(decode(String.raw`"\x1b[0m"`)).toBe('\x1b[0m');
    // At most two hex digits.
    expect(decode(String.raw`"\x414"`)).toBe('A4');
    expect(decode(String.raw`"\xA"`)).toBe('\n');
  });

  it('treats \\x without hex digits as an unknown escape', () => {
    expect(decode(String.raw`"\xyz"`)).toBe('xyz');
    expect(decode(String.raw`"\x"`)).toBe('x');
  });

  it('replaces invalid UTF-8 byte sequences with U+FFFD', () => {
    expect(decode(String.raw`"a\377b"`)).toBe('a\ufffdb');
    expect(decode(String.raw`"\303"`)).toBe('\ufffd'); // truncated sequence
    expect(decode(String.raw`"\303 "`)).toBe('\ufffd ');
  });

  it('does not merge byte runs separated by text', () => {
    // \303 alone then \251 alone: both invalid, even though together they are é.
    expect(decode(String.raw`"\303-\251"`)).toBe('\ufffd-\ufffd');
    expect(decode(String.raw`"\303\n\251"`)).toBe('\ufffd\n\ufffd');
  });

  it('keeps a leading byte-order mark', () => {
    expect(decode(String.raw`"\357\273\277x"`)).toBe('\ufeffx');
  });

  it('passes through raw non-ASCII characters and control characters', () => {
    expect(decode('"héllo ✓ 😀"')).toBe('héllo ✓ 😀');
    expect(decode('"a\tb"')).toBe('a\tb');
    expect(decode(String.raw`"é\303\251é"`)).toBe('ééé');
  });

  it('throws MiSyntaxError when there is no opening quote', () => {
    expect(() => parseCString('abc', 0)).toThrow(MiSyntaxError);
    expect(() => parseCString('"abc"', 1)).toThrow(MiSyntaxError);
    expect(() => parseCString('', 0)).toThrow(MiSyntaxError);
  });

  it('throws MiSyntaxError on an unterminated string or escape', () => {
    expect(() => parseCString('"abc', 0)).toThrow(/unterminated string/);
    expect(() => parseCString(String.raw`"abc\"`, 0)).toThrow(MiSyntaxError);
    expect(() => parseCString('"abc\\', 0)).toThrow(/unterminated string/);
  });
});

describe('parseMiLine: prompt', () => {
  it('recognises the prompt GDB 13 prints (with a trailing space)', () => {
    expect(parseMiLine('(gdb) ')).toEqual({ kind: 'prompt' });
  });

  it('accepts the prompt without or with several trailing spaces, and with CR', () => {
    expect(parseMiLine('(gdb)')).toEqual({ kind: 'prompt' });
    expect(parseMiLine('(gdb)    ')).toEqual({ kind: 'prompt' });
    expect(parseMiLine('(gdb) \r')).toEqual({ kind: 'prompt' });
  });

  it('does not treat look-alikes as the prompt', () => {
    expect(parseMiLine('(gdb) x')).toEqual(unknown('(gdb) x'));
    expect(parseMiLine(' (gdb)')).toEqual(unknown(' (gdb)'));
    expect(parseMiLine('(gdb')).toEqual(unknown('(gdb'));
    expect(parseMiLine('(lldb) ')).toEqual(unknown('(lldb) '));
  });
});

describe('parseMiLine: stream records', () => {
  it('parses console output', () => {
    expect(parseMiLine(String.raw`~"Reading symbols from ./a...\n"`)).toEqual({
      kind: 'console',
      text: 'Reading symbols from ./a...\n',
    });
    expect(textOf(String.raw`~"Using host libthread_db library \"/lib/x86_64-linux-gnu/libthread_db.so.1\".\n"`)).toBe('Using host libthread_db library "/lib/x86_64-linux-gnu/libthread_db.so.1".\n');
    expect(textOf(String.raw`~"Thread 1 \"a\" hit Breakpoint 2.1, helper (v=1) at a.c:5\n"`)).toBe('Thread 1 "a" hit Breakpoint 2.1, helper (v=1) at a.c:5\n');
  });

  it('parses log output (CLI command echo and error text)', () => {
    expect(parseMiLine(String.raw`&"info locals\n"`)).toEqual({ kind: 'log', text: 'info locals\n' });
    expect(textOf(String.raw`&"No symbol \"nosuchvar\" in current context.\n"`)).toBe('No symbol "nosuchvar" in current context.\n');
    expect(textOf(String.raw`&"44\t./nptl/pthread_kill.c: No such file or directory.\n"`)).toBe('44\t./nptl/pthread_kill.c: No such file or directory.\n');
  });

  it('parses target output (hand-made: GDB 13 only emits @ for remote targets)', () => {
    expect(parseMiLine(String.raw`@"Hello from target\n"`)).toEqual({ kind: 'target', text: 'Hello from target\n' });
    expect(parseMiLine('@""')).toEqual({ kind: 'target', text: '' });
  });

  it('decodes octal-escaped UTF-8 in console output', () => {
    expect(textOf(String.raw`&"print \"h\303\251llo\"\n"`)).toBe('print "héllo"\n');
    expect(textOf(String.raw`~"$1 = \"h\303\251llo\"\n"`)).toBe('$1 = "héllo"\n');
    expect(textOf(String.raw`~"s = 0x555555556015 \"h\303\251llo w\303\266rld \342\234\223\"\n"`)).toBe('s = 0x555555556015 "héllo wörld ✓"\n');
  });

  it('keeps GDB value-level escapes (double backslashes on the wire) as text', () => {
    // In the C locale GDB's value printer itself escapes non-ASCII bytes; MI then escapes the backslashes.
    expect(textOf(String.raw`~"$1 = \"h\\303\\251llo\"\n"`)).toBe(String.raw`$1 = "h\303\251llo"` + '\n');
    expect(textOf(String.raw`~"esc = \"\\a\\b\\f\\v\\r\\n\\\\\"\n"`)).toBe(String.raw`esc = "\a\b\f\v\r\n\\"` + '\n');
    expect(textOf(String.raw`~"10\t  struct point p = { 1, 2, \"h\303\251llo \\\"q\\\"\\t\\x1b end\" };\n"`)).toBe('10\t  struct point p = { 1, 2, "héllo \\"q\\"\\t\\x1b end" };\n');
  });

  it('decodes the escapes GDB uses for raw control bytes (CLI `echo`)', () => {
    // Output of: echo \033[1mbold\033[0m\a\b\f\v\r\001\177\n  -- note GDB writes ESC as \e and VT as \013.
    expect(textOf(String.raw`~"\e[1mbold\e[0m\a\b\f\013\r\001\177\n"`)).toBe('\x1b[1mbold\x1b[0m\x07\b\f\v\r\x01\x7f\n');
    expect(textOf(String.raw`&"echo \\033[1mbold\\033[0m\\a\\b\\f\\v\\r\\001\\177\\n\n"`)).toBe(String.raw`echo \033[1mbold\033[0m\a\b\f\v\r\001\177\n` + '\n');
  });

  it('parses console output split across several records', () => {
    // A watchpoint report arrives in fragments; the client must concatenate them.
    const lines = [String.raw`~"\nOld value = "`, String.raw`~"0\nNew value = "`, String.raw`~"49\n"`];
    expect(lines.map(textOf).join('')).toBe('\nOld value = 0\nNew value = 49\n');
  });

  it('rejects stream records with a token, trailing garbage or no quotes', () => {
    for (const line of ['5~"x"', '~"x" ', '~"x"y', '~x', '~', '~"unterminated', '&"a\\"', '@"a""b"']) {
      expect(parseMiLine(line)).toEqual(unknown(line));
    }
  });
});

describe('parseMiLine: result records', () => {
  it('parses a bare ^done with and without a token', () => {
    expect(parseMiLine('^done')).toEqual({ kind: 'result', resultClass: 'done', results: {} });
    expect(parseMiLine('10^done')).toEqual({ kind: 'result', token: 10, resultClass: 'done', results: {} });
  });

  it('omits the token property entirely when there is none', () => {
    const rec = parseMiLine('^running');
    expect(rec).toEqual({ kind: 'result', resultClass: 'running', results: {} });
    expect('token' in rec).toBe(false);
  });

  it('parses every result class', () => {
    expect(parseMiLine('4^running')).toMatchObject({ kind: 'result', token: 4, resultClass: 'running' });
    expect(parseMiLine('20^exit')).toMatchObject({ kind: 'result', token: 20, resultClass: 'exit' });
    // Hand-made: ^connected needs a remote target.
    expect(parseMiLine('^connected')).toMatchObject({ kind: 'result', resultClass: 'connected', results: {} });
    expect(parseMiLine('2^error,msg="Function \\"nosuchfunc\\" not defined."')).toEqual({
      kind: 'result',
      token: 2,
      resultClass: 'error',
      results: { msg: 'Function "nosuchfunc" not defined.' },
    });
  });

  it('parses ^error with an error code', () => {
    expect(parseMiLine('16^error,msg="Undefined MI command: undefined-cmd",code="undefined-command"')).toEqual({
      kind: 'result',
      token: 16,
      resultClass: 'error',
      results: { msg: 'Undefined MI command: undefined-cmd', code: 'undefined-command' },
    });
    expect(resultsOf('14^error,msg="The program is not being run."')).toEqual({ msg: 'The program is not being run.' });
    expect(resultsOf(String.raw`^error,msg="No symbol \"nosuchvar\" in current context."`)).toEqual({
      msg: 'No symbol "nosuchvar" in current context.',
    });
  });

  it('parses large tokens and token 0', () => {
    expect(parseMiLine('0^done')).toMatchObject({ token: 0 });
    expect(parseMiLine('123456789^done')).toMatchObject({ token: 123456789 });
    expect(parseMiLine('007^done')).toMatchObject({ token: 7 });
  });

  it('parses a breakpoint tuple with a list of strings', () => {
    const line =
      '1^done,bkpt={number="1",type="breakpoint",disp="keep",enabled="y",addr="0x00000000000011a6",func="main",file="a.c",fullname="/tmp/mi/a.c",line="10",thread-groups=["i1"],times="0",original-location="main"}';
    expect(parseMiLine(line)).toEqual({
      kind: 'result',
      token: 1,
      resultClass: 'done',
      results: {
        bkpt: {
          number: '1',
          type: 'breakpoint',
          disp: 'keep',
          enabled: 'y',
          addr: '0x00000000000011a6',
          func: 'main',
          file: 'a.c',
          fullname: '/tmp/mi/a.c',
          line: '10',
          'thread-groups': ['i1'],
          times: '0',
          'original-location': 'main',
        },
      },
    });
  });

  it('parses a pending breakpoint', () => {
    const line = '2^done,bkpt={number="1",type="breakpoint",disp="keep",enabled="y",addr="<PENDING>",pending="nosuch",times="0",original-location="nosuch"}';
    expect(resultsOf(line)).toEqual({
      bkpt: {
        number: '1',
        type: 'breakpoint',
        disp: 'keep',
        enabled: 'y',
        addr: '<PENDING>',
        pending: 'nosuch',
        times: '0',
        'original-location': 'nosuch',
      },
    });
  });

  it('parses an mi3 multi-location breakpoint (locations=[...] list of tuples)', () => {
    const line =
      '3^done,bkpt={number="2",type="breakpoint",disp="keep",enabled="y",addr="<MULTIPLE>",times="0",original-location="helper",locations=[{number="2.1",enabled="y",addr="0x0000000000001180",func="helper",file="a.c",fullname="/tmp/mi/a.c",line="5",thread-groups=["i1"]},{number="2.2",enabled="y",addr="0x00000000000012c4",func="helper",file="b.c",fullname="/tmp/mi/b.c",line="1",thread-groups=["i1"]}]}';
    const bkpt = resultsOf(line).bkpt as MiTuple;
    expect(bkpt.addr).toBe('<MULTIPLE>');
    expect(bkpt.locations).toEqual([
      {
        number: '2.1',
        enabled: 'y',
        addr: '0x0000000000001180',
        func: 'helper',
        file: 'a.c',
        fullname: '/tmp/mi/a.c',
        line: '5',
        'thread-groups': ['i1'],
      },
      {
        number: '2.2',
        enabled: 'y',
        addr: '0x00000000000012c4',
        func: 'helper',
        file: 'b.c',
        fullname: '/tmp/mi/b.c',
        line: '1',
        'thread-groups': ['i1'],
      },
    ]);
  });

  it('parses an mi2 multi-location breakpoint (keyless tuples after bkpt=) into an array', () => {
    // Captured with --interpreter=mi2: the location tuples have no key, which the grammar forbids.
    const line =
      '1^done,bkpt={number="1",type="breakpoint",disp="keep",enabled="y",addr="<MULTIPLE>",times="0",original-location="helper"},{number="1.1",enabled="y",addr="0x0000000000001180",func="helper",file="a.c",fullname="/tmp/mi/a.c",line="5",thread-groups=["i1"]},{number="1.2",enabled="y",addr="0x00000000000012c4",func="helper",file="b.c",fullname="/tmp/mi/b.c",line="1",thread-groups=["i1"]}';
    const bkpt = resultsOf(line).bkpt as MiTuple[];
    expect(bkpt).toHaveLength(3);
    expect(bkpt[0]).toMatchObject({ number: '1', addr: '<MULTIPLE>', 'original-location': 'helper' });
    expect(bkpt[1]).toMatchObject({ number: '1.1', file: 'a.c', line: '5', 'thread-groups': ['i1'] });
    expect(bkpt[2]).toMatchObject({ number: '1.2', file: 'b.c', line: '1' });
  });

  it('stores a keyless value with no preceding key under ""', () => {
    // From the GDB manual's -target-download example.
    expect(parseMiLine('+download,{section=".text",section-size="6668",total-size="9880"}')).toEqual({
      kind: 'status',
      asyncClass: 'download',
      results: { '': { section: '.text', 'section-size': '6668', 'total-size': '9880' } },
    });
  });

  it('parses a watchpoint result', () => {
    expect(resultsOf('5^done,wpt={number="2",exp="counter"}')).toEqual({ wpt: { number: '2', exp: 'counter' } });
  });

  it('parses -stack-list-frames (list of results -> array of values)', () => {
    const line = '6^done,stack=[frame={level="0",addr="0x000055555555524b",func="main",file="a.c",fullname="/tmp/mi/a.c",line="18",arch="i386:x86-64"}]';
    expect(resultsOf(line)).toEqual({
      stack: [
        {
          level: '0',
          addr: '0x000055555555524b',
          func: 'main',
          file: 'a.c',
          fullname: '/tmp/mi/a.c',
          line: '18',
          arch: 'i386:x86-64',
        },
      ],
    });
  });

  it('parses a multi-frame stack (hand-made from the same shape)', () => {
    const line = '^done,stack=[frame={level="0",addr="0x0000555555555180",func="helper",file="a.c",line="5"},frame={level="1",addr="0x000055555555526b",func="main",file="a.c",line="20"}]';
    const stack = resultsOf(line).stack as MiTuple[];
    expect(stack.map((f) => [f.level, f.func])).toEqual([
      ['0', 'helper'],
      ['1', 'main'],
    ]);
  });

  it('parses -stack-list-arguments (list of results nesting a list of tuples)', () => {
    const line = '15^done,stack-args=[frame={level="0",args=[{name="argc",value="1"},{name="argv",value="0x7fffffffe808"}]}]';
    expect(resultsOf(line)).toEqual({
      'stack-args': [
        {
          level: '0',
          args: [
            { name: 'argc', value: '1' },
            { name: 'argv', value: '0x7fffffffe808' },
          ],
        },
      ],
    });
  });

  it('parses -stack-list-locals --all-values with nested escapes and UTF-8', () => {
    const line = String.raw`7^done,locals=[{name="p",value="{x = 1, y = 2, label = 0x555555556004 \"h\303\251llo \\\"q\\\"\\t\\033 end\"}"},{name="s",value="0x555555556015 \"h\303\251llo w\303\266rld \342\234\223\""},{name="esc",value="\"\\a\\b\\f\\v\\r\\n\\\\\""},{name="arr",value="{10, 20, 30}"},{name="t",value="140737351849664"},{name="r",value="0"}]`;
    expect(resultsOf(line)).toEqual({
      locals: [
        { name: 'p', value: String.raw`{x = 1, y = 2, label = 0x555555556004 "héllo \"q\"\t\033 end"}` },
        { name: 's', value: '0x555555556015 "héllo wörld ✓"' },
        { name: 'esc', value: String.raw`"\a\b\f\v\r\n\\"` },
        { name: 'arr', value: '{10, 20, 30}' },
        { name: 't', value: '140737351849664' },
        { name: 'r', value: '0' },
      ],
    });
  });

  it('parses -data-evaluate-expression results', () => {
    expect(resultsOf(String.raw`8^done,value="0x555555556015 \"h\303\251llo w\303\266rld \342\234\223\""`)).toEqual({
      value: '0x555555556015 "héllo wörld ✓"',
    });
    expect(resultsOf(String.raw`10^done,value="\"\\a\\b\\f\\v\\r\\n\\\\\""`)).toEqual({ value: String.raw`"\a\b\f\v\r\n\\"` });
    expect(resultsOf(String.raw`6^done,value="27 '\\033'"`)).toEqual({ value: String.raw`27 '\033'` });
    expect(resultsOf('^done,value="{10, 20, 30}"')).toEqual({ value: '{10, 20, 30}' });
    expect(resultsOf('4^done,value="0x0"')).toEqual({ value: '0x0' });
  });

  it('parses -var-create and -var-list-children', () => {
    expect(resultsOf('11^done,name="var1",numchild="3",value="{...}",type="struct point",thread-id="1",has_more="0"')).toEqual({
      name: 'var1',
      numchild: '3',
      value: '{...}',
      type: 'struct point',
      'thread-id': '1',
      has_more: '0',
    });
    const line = String.raw`12^done,numchild="3",children=[child={name="var1.x",exp="x",numchild="0",value="1",type="int",thread-id="1"},child={name="var1.y",exp="y",numchild="0",value="2",type="int",thread-id="1"},child={name="var1.label",exp="label",numchild="1",value="0x555555556004 \"h\303\251llo \\\"q\\\"\\t\\033 end\"",type="const char *",thread-id="1"}],has_more="0"`;
    const r = resultsOf(line);
    expect(r.numchild).toBe('3');
    expect(r.has_more).toBe('0');
    expect(r.children).toEqual([
      { name: 'var1.x', exp: 'x', numchild: '0', value: '1', type: 'int', 'thread-id': '1' },
      { name: 'var1.y', exp: 'y', numchild: '0', value: '2', type: 'int', 'thread-id': '1' },
      {
        name: 'var1.label',
        exp: 'label',
        numchild: '1',
        value: String.raw`0x555555556004 "héllo \"q\"\t\033 end"`,
        type: 'const char *',
        'thread-id': '1',
      },
    ]);
  });

  it('parses an empty list and -var-create without thread-id', () => {
    expect(resultsOf('4^done,changelist=[]')).toEqual({ changelist: [] });
    expect(resultsOf('3^done,name="v",numchild="0",value="3",type="int",has_more="0"')).toMatchObject({ value: '3' });
  });

  it('parses -thread-info with two threads', () => {
    const line =
      '3^done,threads=[{id="1",target-id="Thread 0x7ffff7dd2740 (LWP 3461)",name="c",frame={level="0",addr="0x0000555555555206",func="main",args=[],file="c.c",fullname="/tmp/mi/c.c",line="13",arch="i386:x86-64"},state="stopped",core="1"},{id="2",target-id="Thread 0x7ffff7dd16c0 (LWP 3464)",name="c",frame={level="0",addr="0x00007ffff7e5c619",func="futex_wait",args=[{name="private",value="0"},{name="expected",value="2"},{name="futex_word",value="0x555555558084 <bar+4>"}],file="../sysdeps/nptl/futex-internal.h",fullname="./nptl/../sysdeps/nptl/futex-internal.h",line="146",arch="i386:x86-64"},state="stopped",core="1"}],current-thread-id="1"';
    const r = resultsOf(line);
    expect(r['current-thread-id']).toBe('1');
    const threads = r.threads as MiTuple[];
    expect(threads).toHaveLength(2);
    expect(threads[0]).toEqual({
      id: '1',
      'target-id': 'Thread 0x7ffff7dd2740 (LWP 3461)',
      name: 'c',
      frame: {
        level: '0',
        addr: '0x0000555555555206',
        func: 'main',
        args: [],
        file: 'c.c',
        fullname: '/tmp/mi/c.c',
        line: '13',
        arch: 'i386:x86-64',
      },
      state: 'stopped',
      core: '1',
    });
    expect((threads[1]!.frame as MiTuple).args).toEqual([
      { name: 'private', value: '0' },
      { name: 'expected', value: '2' },
      { name: 'futex_word', value: '0x555555558084 <bar+4>' },
    ]);
  });

  it('parses -list-thread-groups, -list-features and -stack-info-frame', () => {
    expect(resultsOf('4^done,groups=[{id="i1",type="process",pid="3461",executable="/tmp/mi/c",cores=["1"]}]')).toEqual({
      groups: [{ id: 'i1', type: 'process', pid: '3461', executable: '/tmp/mi/c', cores: ['1'] }],
    });
    const features = resultsOf(
      '18^done,features=["frozen-varobjs","pending-breakpoints","thread-info","data-read-memory-bytes","breakpoint-notifications","ada-task-info","language-option","info-gdb-mi-command","undefined-command-error-code","exec-run-start-option","data-disassemble-a-option","python"]',
    ).features;
    expect(features).toHaveLength(12);
    expect(features).toContain('undefined-command-error-code');
    expect(resultsOf('9^done,frame={level="0",addr="0x0000555555555216",func="main",file="c.c",fullname="/tmp/mi/c.c",line="14",arch="i386:x86-64"}')).toEqual({
      frame: {
        level: '0',
        addr: '0x0000555555555216',
        func: 'main',
        file: 'c.c',
        fullname: '/tmp/mi/c.c',
        line: '14',
        arch: 'i386:x86-64',
      },
    });
  });

  it('keeps empty strings in a list (-data-list-register-names)', () => {
    const line =
      '^done,register-names=["rax","rbx","rcx","rdx","rsi","rdi","rbp","rsp","r8","r9","r10","r11","r12","r13","r14","r15","rip","eflags","cs","ss","ds","es","fs","gs","st0","st1","st2","st3","st4","st5","st6","st7","fctrl","fstat","ftag","fiseg","fioff","foseg","fooff","fop","xmm0","xmm1","xmm2","xmm3","xmm4","xmm5","xmm6","xmm7","xmm8","xmm9","xmm10","xmm11","xmm12","xmm13","xmm14","xmm15","mxcsr","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","","fs_base","gs_base","orig_rax","al","bl","cl","dl","sil","dil","bpl","spl","r8l","r9l","r10l","r11l","r12l","r13l","r14l","r15l","ah","bh","ch","dh","ax","bx","cx","dx","si","di","bp","","r8w","r9w","r10w","r11w","r12w","r13w","r14w","r15w","eax","ebx","ecx","edx","esi","edi","ebp","esp","r8d","r9d","r10d","r11d","r12d","r13d","r14d","r15d"]';
    const names = resultsOf(line)['register-names'] as string[];
    expect(names).toHaveLength(207);
    expect(names.filter((n) => n === '')).toHaveLength(96);
    expect(names.slice(55, 58)).toEqual(['xmm15', 'mxcsr', '']);
    expect(names[152]).toBe('fs_base');
    expect(names.at(-1)).toBe('r15d');
    expect(resultsOf('1^done,register-names=["rax","rbx","rcx"]')).toEqual({ 'register-names': ['rax', 'rbx', 'rcx'] });
  });

  it('parses -break-list (tables: list of tuples and list of results)', () => {
    const line =
      '14^done,BreakpointTable={nr_rows="3",nr_cols="6",hdr=[{width="7",alignment="-1",col_name="number",colhdr="Num"},{width="14",alignment="-1",col_name="type",colhdr="Type"},{width="4",alignment="-1",col_name="disp",colhdr="Disp"},{width="3",alignment="-1",col_name="enabled",colhdr="Enb"},{width="18",alignment="-1",col_name="addr",colhdr="Address"},{width="40",alignment="2",col_name="what",colhdr="What"}],body=[bkpt={number="1",type="breakpoint",disp="keep",enabled="y",addr="0x00005555555551a6",func="main",file="a.c",fullname="/tmp/mi/a.c",line="10",thread-groups=["i1"],times="1",original-location="main"},bkpt={number="2",type="breakpoint",disp="keep",enabled="y",addr="<MULTIPLE>",times="0",original-location="helper",locations=[{number="2.1",enabled="y",addr="0x0000555555555180",func="helper",file="a.c",fullname="/tmp/mi/a.c",line="5",thread-groups=["i1"]},{number="2.2",enabled="y",addr="0x00005555555552c4",func="helper",file="b.c",fullname="/tmp/mi/b.c",line="1",thread-groups=["i1"]}]},bkpt={number="3",type="breakpoint",disp="keep",enabled="y",addr="0x000055555555523a",func="main",file="a.c",fullname="/tmp/mi/a.c",line="17",thread-groups=["i1"],times="1",original-location="a.c:17"}]}';
    const table = resultsOf(line).BreakpointTable as MiTuple;
    expect(table.nr_rows).toBe('3');
    expect(table.hdr).toHaveLength(6);
    expect((table.hdr as MiTuple[])[5]).toEqual({ width: '40', alignment: '2', col_name: 'what', colhdr: 'What' });
    const body = table.body as MiTuple[];
    expect(body.map((b) => b.number)).toEqual(['1', '2', '3']);
    expect((body[1]!.locations as MiTuple[]).map((l) => l.number)).toEqual(['2.1', '2.2']);
    expect(body[2]!['original-location']).toBe('a.c:17');
  });
});

describe('parseMiLine: async records', () => {
  it('parses exec records with and without a token', () => {
    expect(parseMiLine('*running,thread-id="all"')).toEqual({
      kind: 'exec',
      asyncClass: 'running',
      results: { 'thread-id': 'all' },
    });
    expect(parseMiLine('*running,thread-id="2"')).toMatchObject({ results: { 'thread-id': '2' } });
    // Hand-made: the grammar allows a token on async records, though GDB 13 was not seen to emit one.
    expect(parseMiLine('42*stopped,reason="end-stepping-range"')).toEqual({
      kind: 'exec',
      token: 42,
      asyncClass: 'stopped',
      results: { reason: 'end-stepping-range' },
    });
  });

  it('parses *stopped at a breakpoint', () => {
    const line =
      '*stopped,reason="breakpoint-hit",disp="keep",bkptno="1",frame={addr="0x00005555555551a6",func="main",args=[{name="argc",value="1"},{name="argv",value="0x7fffffffe808"}],file="a.c",fullname="/tmp/mi/a.c",line="10",arch="i386:x86-64"},thread-id="1",stopped-threads="all",core="0"';
    expect(parseMiLine(line)).toEqual({
      kind: 'exec',
      asyncClass: 'stopped',
      results: {
        reason: 'breakpoint-hit',
        disp: 'keep',
        bkptno: '1',
        frame: {
          addr: '0x00005555555551a6',
          func: 'main',
          args: [
            { name: 'argc', value: '1' },
            { name: 'argv', value: '0x7fffffffe808' },
          ],
          file: 'a.c',
          fullname: '/tmp/mi/a.c',
          line: '10',
          arch: 'i386:x86-64',
        },
        'thread-id': '1',
        'stopped-threads': 'all',
        core: '0',
      },
    });
  });

  it('parses *stopped at a location of a multi-location breakpoint (locno)', () => {
    const line =
      '*stopped,reason="breakpoint-hit",disp="keep",bkptno="2",locno="1",frame={addr="0x0000555555555180",func="helper",args=[{name="v",value="1"}],file="a.c",fullname="/tmp/mi/a.c",line="5",arch="i386:x86-64"},thread-id="1",stopped-threads="all",core="1"';
    expect(resultsOf(line)).toMatchObject({ bkptno: '2', locno: '1', frame: { func: 'helper', args: [{ name: 'v', value: '1' }] } });
  });

  it('parses the other *stopped reasons', () => {
    expect(
      resultsOf(
        '*stopped,reason="end-stepping-range",frame={addr="0x0000555555555180",func="square",args=[{name="v",value="7"}],file="c.c",fullname="/tmp/mi/c.c",line="6",arch="i386:x86-64"},thread-id="1",stopped-threads="all",core="0"',
      ),
    ).toMatchObject({ reason: 'end-stepping-range', frame: { func: 'square' } });
    expect(
      resultsOf(
        '*stopped,reason="function-finished",frame={addr="0x0000555555555210",func="main",args=[],file="c.c",fullname="/tmp/mi/c.c",line="13",arch="i386:x86-64"},gdb-result-var="$1",return-value="49",thread-id="1",stopped-threads="all",core="1"',
      ),
    ).toMatchObject({ reason: 'function-finished', 'gdb-result-var': '$1', 'return-value': '49', frame: { args: [] } });
    expect(
      resultsOf(
        '*stopped,reason="watchpoint-trigger",wpt={number="2",exp="counter"},value={old="0",new="49"},frame={addr="0x0000555555555216",func="main",args=[],file="c.c",fullname="/tmp/mi/c.c",line="14",arch="i386:x86-64"},thread-id="1",stopped-threads="all",core="0"',
      ),
    ).toMatchObject({ wpt: { number: '2', exp: 'counter' }, value: { old: '0', new: '49' } });
    expect(
      resultsOf(
        '*stopped,reason="signal-received",signal-name="SIGUSR1",signal-meaning="User defined signal 1",frame={addr="0x00007ffff7e5feec",func="__pthread_kill_implementation",args=[{name="threadid",value="<optimized out>"},{name="signo",value="10"},{name="signo@entry",value="10"},{name="no_tid",value="0"},{name="no_tid@entry",value="0"}],file="./nptl/pthread_kill.c",fullname="./nptl/./nptl/pthread_kill.c",line="44",arch="i386:x86-64"},thread-id="1",stopped-threads="all",core="0"',
      ),
    ).toMatchObject({
      reason: 'signal-received',
      'signal-name': 'SIGUSR1',
      frame: { args: [{ value: '<optimized out>' }, {}, { name: 'signo@entry' }, {}, {}] },
    });
    expect(resultsOf('*stopped,reason="exited-signalled",signal-name="SIGUSR1",signal-meaning="User defined signal 1"')).toEqual({
      reason: 'exited-signalled',
      'signal-name': 'SIGUSR1',
      'signal-meaning': 'User defined signal 1',
    });
    expect(resultsOf('*stopped,reason="exited",exit-code="03"')).toEqual({ reason: 'exited', 'exit-code': '03' });
    // GDB formats exit codes in octal: this is `return 10;`. The parser leaves values as strings.
    expect(resultsOf('*stopped,reason="exited",exit-code="012"')).toEqual({ reason: 'exited', 'exit-code': '012' });
    expect(resultsOf('=thread-group-exited,id="i1",exit-code="012"')).toEqual({ id: 'i1', 'exit-code': '012' });
    // Hand-made (GDB manual): normal exit carries no exit code.
    expect(parseMiLine('*stopped,reason="exited-normally"')).toEqual({
      kind: 'exec',
      asyncClass: 'stopped',
      results: { reason: 'exited-normally' },
    });
  });

  it('parses notify records', () => {
    expect(parseMiLine('=thread-group-added,id="i1"')).toEqual({
      kind: 'notify',
      asyncClass: 'thread-group-added',
      results: { id: 'i1' },
    });
    expect(resultsOf('=thread-group-started,id="i1",pid="2585"')).toEqual({ id: 'i1', pid: '2585' });
    expect(resultsOf('=thread-created,id="1",group-id="i1"')).toEqual({ id: '1', 'group-id': 'i1' });
    expect(resultsOf('=thread-exited,id="2",group-id="i1"')).toEqual({ id: '2', 'group-id': 'i1' });
    expect(resultsOf('=thread-group-exited,id="i1",exit-code="03"')).toEqual({ id: 'i1', 'exit-code': '03' });
    expect(parseMiLine('=thread-group-exited,id="i1"')).toMatchObject({ kind: 'notify', asyncClass: 'thread-group-exited' });
    expect(resultsOf('=breakpoint-deleted,id="2"')).toEqual({ id: '2' });
    expect(resultsOf('=cmd-param-changed,param="print pretty",value="on"')).toEqual({ param: 'print pretty', value: 'on' });
  });

  it('parses =library-loaded with a list of range tuples', () => {
    const line =
      '=library-loaded,id="/lib64/ld-linux-x86-64.so.2",target-name="/lib64/ld-linux-x86-64.so.2",host-name="/lib64/ld-linux-x86-64.so.2",symbols-loaded="0",thread-group="i1",ranges=[{from="0x00007ffff7fcb060",to="0x00007ffff7ff0111"}]';
    expect(resultsOf(line)).toEqual({
      id: '/lib64/ld-linux-x86-64.so.2',
      'target-name': '/lib64/ld-linux-x86-64.so.2',
      'host-name': '/lib64/ld-linux-x86-64.so.2',
      'symbols-loaded': '0',
      'thread-group': 'i1',
      ranges: [{ from: '0x00007ffff7fcb060', to: '0x00007ffff7ff0111' }],
    });
  });

  it('parses =breakpoint-created / =breakpoint-modified', () => {
    expect(
      parseMiLine(
        '=breakpoint-created,bkpt={number="3",type="breakpoint",disp="keep",enabled="y",addr="0x0000555555555180",func="square",file="c.c",fullname="/tmp/mi/c.c",line="6",thread-groups=["i1"],times="0",original-location="square"}',
      ),
    ).toMatchObject({ kind: 'notify', asyncClass: 'breakpoint-created', results: { bkpt: { number: '3', func: 'square' } } });
    expect(resultsOf('=breakpoint-modified,bkpt={number="2",type="hw watchpoint",disp="keep",enabled="y",what="counter",thread-groups=["i1"],times="1",original-location="counter"}')).toMatchObject({
      bkpt: { type: 'hw watchpoint', what: 'counter', times: '1' },
    });
    // mi2 form of a multi-location breakpoint update.
    const mi2 =
      '=breakpoint-modified,bkpt={number="1",type="breakpoint",disp="keep",enabled="y",addr="<MULTIPLE>",times="0",original-location="helper"},{number="1.1",enabled="y",addr="0x0000555555555180",func="helper",file="a.c",fullname="/tmp/mi/a.c",line="5",thread-groups=["i1"]},{number="1.2",enabled="y",addr="0x00005555555552c4",func="helper",file="b.c",fullname="/tmp/mi/b.c",line="1",thread-groups=["i1"]}';
    expect((resultsOf(mi2).bkpt as MiTuple[]).map((b) => b.number)).toEqual(['1', '1.1', '1.2']);
  });

  it('parses status records (hand-made, GDB manual -target-download style)', () => {
    expect(parseMiLine('+download,section=".text",section-sent="512",section-size="6668",total-sent="512",total-size="9880"')).toEqual({
      kind: 'status',
      asyncClass: 'download',
      results: { section: '.text', 'section-sent': '512', 'section-size': '6668', 'total-sent': '512', 'total-size': '9880' },
    });
    expect(parseMiLine('7+download')).toEqual({ kind: 'status', token: 7, asyncClass: 'download', results: {} });
  });

  it('accepts unknown async classes (the set is open-ended)', () => {
    expect(parseMiLine('=some-future-event,x="1"')).toEqual({
      kind: 'notify',
      asyncClass: 'some-future-event',
      results: { x: '1' },
    });
    expect(parseMiLine('*stopped')).toEqual({ kind: 'exec', asyncClass: 'stopped', results: {} });
  });
});

describe('parseMiLine: repeated keys', () => {
  it('turns a key repeated in a tuple into an array of all its values', () => {
    expect(resultsOf('^done,t={a="1",b="x",a="2",a="3"}')).toEqual({ t: { a: ['1', '2', '3'], b: 'x' } });
  });

  it('turns a key repeated at the top level into an array', () => {
    // Synthetic: the grammar does not forbid a repeated top-level key.
    const r = resultsOf('^done,bkpt={number="1"},bkpt={number="2"}');
    expect(r).toEqual({ bkpt: [{ number: '1' }, { number: '2' }] });
  });

  it('keeps a single occurrence a scalar', () => {
    expect(resultsOf('^done,a="1",b="2"')).toEqual({ a: '1', b: '2' });
  });

  it('does not confuse a list value with the repeat array', () => {
    expect(resultsOf('^done,a=["x","y"],a=["z"]')).toEqual({ a: [['x', 'y'], ['z']] });
    expect(resultsOf('^done,a=["x"],a=["y"],a=[]')).toEqual({ a: [['x'], ['y'], []] });
  });

  it('mixes repeated keys with keyless mi2 values', () => {
    expect(resultsOf('^done,a="1",{b="2"},"3",c="4"')).toEqual({ a: ['1', { b: '2' }, '3'], c: '4' });
  });

  it('is not fooled by keys named like Object.prototype members', () => {
    expect(resultsOf('^done,constructor="a"')).toEqual({ constructor: 'a' });
    expect(resultsOf('^done,toString="a",toString="b"')).toEqual({ toString: ['a', 'b'] });
    expect(resultsOf('^done,hasOwnProperty="x"').hasOwnProperty).toBe('x');
  });

  it('stores "__proto__" as an own key without touching the prototype', () => {
    const r = resultsOf('^done,__proto__={polluted="yes"},x="1"');
    expect(Object.getPrototypeOf(r)).toBe(Object.prototype);
    expect(Object.keys(r)).toEqual(['__proto__', 'x']);
    expect(JSON.stringify(r)).toBe('{"__proto__":{"polluted":"yes"},"x":"1"}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const twice = resultsOf('^done,t={__proto__="a",__proto__="b"}').t as MiTuple;
    expect(Object.getOwnPropertyDescriptor(twice, '__proto__')?.value).toEqual(['a', 'b']);
  });
});

describe('parseMiLine: structure edge cases', () => {
  it('parses empty tuples and lists at any depth', () => {
    expect(resultsOf('^done,a={},b=[],c=[{}],d=[[]],e={f={}}')).toEqual({ a: {}, b: [], c: [{}], d: [[]], e: { f: {} } });
  });

  it('parses lists of lists and lists of mixed values', () => {
    expect(resultsOf('^done,m=[["1","2"],["3"]],x=["a",{b="c"},["d"]]')).toEqual({
      m: [['1', '2'], ['3']],
      x: ['a', { b: 'c' }, ['d']],
    });
  });

  it('drops keys in lists of results, even mixed with values', () => {
    expect(resultsOf('^done,l=[a="1",b="2",a={c="3"}]')).toEqual({ l: ['1', '2', { c: '3' }] });
    expect(resultsOf('^done,l=[a="1","2"]')).toEqual({ l: ['1', '2'] });
  });

  it('tolerates blanks between tokens', () => {
    expect(resultsOf('^done,l=[ "a","b" ]')).toEqual({ l: ['a', 'b'] });
    expect(resultsOf('^done,t={ a = "1" , b = [ ] , c = { } }')).toEqual({ t: { a: '1', b: [], c: {} } });
  });

  it('accepts structural characters inside strings', () => {
    expect(resultsOf(String.raw`^done,v="{[,=]}\"",w="}"`)).toEqual({ v: '{[,=]}"', w: '}' });
  });

  it('handles nesting up to the depth limit and rejects deeper input', () => {
    const nest = (n: number): string => '^done,x=' + '['.repeat(n) + ']'.repeat(n);
    let v: MiValue = resultsOf(nest(1000)).x!;
    let depth = 0;
    while (Array.isArray(v) && v.length) [v, depth] = [v[0]!, depth + 1];
    expect(depth).toBe(999);
    expect(parseMiLine(nest(1001))).toEqual(unknown(nest(1001)));
    const hostile = '^done,x=' + '{a='.repeat(100_000);
    expect(parseMiLine(hostile)).toEqual(unknown(hostile));
  });

  it('strips one trailing CR from CRLF output', () => {
    expect(parseMiLine('^done,value="1"\r')).toEqual({ kind: 'result', resultClass: 'done', results: { value: '1' } });
    expect(parseMiLine('~"x\\n"\r')).toEqual({ kind: 'console', text: 'x\n' });
    expect(parseMiLine('=thread-group-added,id="i1"\r')).toMatchObject({ kind: 'notify' });
    expect(parseMiLine('garbage\r')).toEqual(unknown('garbage'));
  });
});

describe('parseMiLine: non-MI and malformed lines', () => {
  it('returns unknown for debuggee output interleaved on stdout', () => {
    for (const line of [
      'debuggee says hi',
      '',
      ' ',
      '42',
      '42 is the answer',
      '*** stack smashing detected ***: terminated',
      '===== results =====',
      '+1 for that',
      '^C',
      '^done!',
      '&&',
      '~~~',
      '@home',
      '{"json": true}',
      '[1, 2, 3]',
    ]) {
      expect(parseMiLine(line), line).toEqual(unknown(line));
    }
  });

  it('rejects result classes outside the grammar', () => {
    for (const line of ['^ok', '^Done', '^error2', '^done-ish', '5^', '^']) {
      expect(parseMiLine(line), line).toEqual(unknown(line));
    }
  });

  it('rejects bad classes and separators', () => {
    for (const line of ['*', '*-running', '*run ning', '=a"b"', '*stopped reason="x"', '*stopped;reason="x"', '^done,', '^done,,a="1"']) {
      expect(parseMiLine(line), line).toEqual(unknown(line));
    }
  });

  it('rejects unbalanced or mismatched brackets', () => {
    for (const line of [
      '^done,a={b="1"',
      '^done,a={b="1"}}',
      '^done,a=[',
      '^done,a=["1"',
      '^done,a=["1"]]',
      '^done,a={b="1"]',
      '^done,a=[b="1"}',
      '^done,a=}',
      '^done,a=]',
      '^done,a={,}',
      '^done,a=["1",]',
      '^done,a={b="1",}',
    ]) {
      expect(parseMiLine(line), line).toEqual(unknown(line));
    }
  });

  it('rejects missing or extra quotes', () => {
    for (const line of ['^done,a="1', '^done,a=1', '^done,a="1""', '^done,a="1"b', '^done,a=""x', '^done,msg="x\\"']) {
      expect(parseMiLine(line), line).toEqual(unknown(line));
    }
  });

  it('rejects malformed results', () => {
    for (const line of ['^done,a', '^done,a=', '^done,=1', '^done,="1"', '^done,a=="1"', '^done,a b', '^done,"1"=x']) {
      expect(parseMiLine(line), line).toEqual(unknown(line));
    }
  });

  it('returns the line itself as text for a real record truncated inside a tuple', () => {
    const real =
      '*stopped,reason="breakpoint-hit",disp="keep",bkptno="1",frame={addr="0x00005555555551a6",func="main",args=[{name="argc",value="1"},{name="argv",value="0x7fffffffe808"}],file="a.c",fullname="/tmp/mi/a.c",line="10",arch="i386:x86-64"},thread-id="1",stopped-threads="all",core="0"';
    // Every prefix that ends between "frame=" and the tuple's closing brace is malformed.
    for (let cut = real.indexOf('frame=') + 1; cut < real.indexOf(',thread-id'); cut++) {
      const line = real.slice(0, cut);
      expect(parseMiLine(line), line).toEqual(unknown(line));
    }
    // Prefixes that end on a record boundary are valid records in their own right.
    expect(parseMiLine(real.slice(0, 8))).toEqual({ kind: 'exec', asyncClass: 'stopped', results: {} });
    expect(parseMiLine(real.slice(0, real.indexOf(',disp')))).toMatchObject({ results: { reason: 'breakpoint-hit' } });
  });

  it('never throws on arbitrary input', () => {
    const alphabet = ['"', '\\', '{', '}', '[', ']', ',', '=', 'a', '1', '^', '*', '~', ' ', '\r', 'é', '\0'];
    let seed = 12345;
    const rand = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    for (let k = 0; k < 2000; k++) {
      let line = ['^done,', '*stopped,', '~', '=x,', ''][rand(5)]!;
      for (let j = rand(40); j > 0; j--) line += alphabet[rand(alphabet.length)];
      expect(() => parseMiLine(line)).not.toThrow();
    }
  });
});

// Speed is measured in bench/; these check that ~1 MB lines parse correctly.
describe('parseMiLine: large lines', () => {
  // Real frame shape from -stack-list-frames, repeated to build ~1 MB lines.
  const frame = 'frame={level="0",addr="0x00007ffff7e5feec",func="__pthread_kill_implementation",file="./nptl/pthread_kill.c",fullname="./nptl/./nptl/pthread_kill.c",line="44",arch="i386:x86-64"}';

  it('parses a ~1 MB -stack-list-frames line', () => {
    const n = Math.ceil(1_000_000 / frame.length);
    const line = '6^done,stack=[' + Array.from({ length: n }, (_, i) => frame.replace('"0"', `"${i}"`)).join(',') + ']';
    expect(line.length).toBeGreaterThan(1_000_000);
    const rec = parseMiLine(line);
    const stack = (rec as { results: MiTuple }).results.stack as MiTuple[];
    expect(stack).toHaveLength(n);
    expect(stack[n - 1]).toMatchObject({ level: String(n - 1), line: '44' });
  });

  it('parses a ~1 MB escape-heavy value string', () => {
    // The shape of -data-evaluate-expression on a large char array with UTF-8 and quotes.
    const unit = String.raw`h\303\251llo \\\"q\\\"\t\342\234\223 `;
    const count = Math.ceil(1_000_000 / unit.length);
    const line = '17^done,value="' + unit.repeat(count) + '"';
    expect(line.length).toBeGreaterThan(1_000_000);
    const rec = parseMiLine(line);
    const value = (rec as { results: MiTuple }).results.value as string;
    expect(value).toBe('héllo \\"q\\"\t✓ '.repeat(count));
  });

  it('parses a ~1 MB console record', () => {
    const line = '~"' + 'x'.repeat(1_000_000) + '\\n"';
    const rec = parseMiLine(line);
    expect(rec).toEqual({ kind: 'console', text: 'x'.repeat(1_000_000) + '\n' });
  });

  it('rejects a ~1 MB malformed line', () => {
    const line = '^done,stack=[' + Array.from({ length: 6000 }, () => frame).join(',');
    const rec = parseMiLine(line);
    expect(rec.kind).toBe('unknown');
  });
});

describe('parseMiLine: a captured session transcript', () => {
  // Lines of one real session in order (some omitted): -exec-run to the first
  // stop, CLI commands through MI, debuggee output, and the end after -gdb-exit.
  const transcript = String.raw`=thread-group-added,id="i1"
~"Reading symbols from ./a...\n"
(gdb) 
4^running
*running,thread-id="all"
(gdb) 
~"[Thread debugging using libthread_db enabled]\n"
~"\n"
~"Breakpoint 1, main (argc=1, argv=0x7fffffffe808) at a.c:10\n"
*stopped,reason="breakpoint-hit",disp="keep",bkptno="1",frame={addr="0x00005555555551a6",func="main",args=[{name="argc",value="1"},{name="argv",value="0x7fffffffe808"}],file="a.c",fullname="/tmp/mi/a.c",line="10",arch="i386:x86-64"},thread-id="1",stopped-threads="all",core="0"
(gdb) 
&"info locals\n"
~"arr = {10, 20, 30}\n"
^done
(gdb) 
~"$2 = 3\n"
5^done
(gdb) 
debuggee says hi
20^exit
=thread-exited,id="1",group-id="i1"
=thread-group-exited,id="i1"`;

  it('classifies every line', () => {
    const kinds = transcript.split('\n').map((l) => {
      const r = parseMiLine(l);
      return 'token' in r ? `${r.token}${r.kind}` : r.kind;
    });
    expect(kinds).toEqual([
      'notify',
      'console',
      'prompt',
      '4result',
      'exec',
      'prompt',
      'console',
      'console',
      'console',
      'exec',
      'prompt',
      'log',
      'console',
      'result',
      'prompt',
      'console',
      '5result',
      'prompt',
      'unknown',
      '20result',
      'notify',
      'notify',
    ]);
  });
});
