// gdb's answers as an agent reads them (issue 21): GDB's console text and one stop line, the
// parsed answer once in the structured content (the contract's envelope), the raw MI stop record
// only when asked for, a crash in a library named by the program's own frame, several commands in
// one call, and the contract's JSON text for clients that parse it (--gdb-text json).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectStdio, type TestClient } from './helpers/client.js';
import { compileCInside, tempDir } from './helpers/programs.js';

/** A stop's whole text, as an agent pays for it: at most 250 tokens (characters / 4). */
const STOP_TEXT_CHARS = 1000;

let root: string;
let dk: TestClient;

beforeAll(async () => {
  root = tempDir('debugkit-gdb-answers-');
  for (const name of ['basic', 'dbg_libc', 'spin']) compileCInside(root, name);
  dk = await connectStdio({ root, args: ['--toolsets', 'gdb'] });
}, 60_000);
afterAll(async () => dk?.close());

describe('gdb answers: console text and one stop line', () => {
  it('a breakpoint stop reads as GDB printed it, then where it stopped; the structured stop has no machine fields', async () => {
    const { id } = await dk.ok('open', { program: 'basic' });
    await dk.ok('call', { id, command: 'break add' });
    const run = await dk.tool('call', { id, command: 'run' });
    expect(run.isError).toBe(false);
    expect(run.text).toMatch(/\nBreakpoint 1, add \(a=0, b=0\) at \S*basic\.c:7\n7\t {2}int sum = a \+ b;\n\[stopped: breakpoint 1 in add at basic\.c:7, thread 1\]$/);
    expect(run.text.length).toBeLessThanOrEqual(STOP_TEXT_CHARS);
    expect(run.text).not.toMatch(/^\{/);
    const stopped = run.structured.content.stopped;
    expect(stopped).toMatchObject({ reason: 'breakpoint-hit', bkptno: '1', 'thread-id': '1', frame: { func: 'add', line: '7', file: `${root}/basic.c` } });
    for (const noise of ['arch', 'core', 'stopped-threads', 'disp']) expect(stopped).not.toHaveProperty(noise);
    expect(stopped.frame).not.toHaveProperty('fullname');
    expect(stopped.frame).not.toHaveProperty('arch');

    // The raw record on request.
    const raw = await dk.tool('call', { id, command: 'continue', raw: true });
    expect(raw.structured.content.stopped).toMatchObject({ reason: 'breakpoint-hit', 'stopped-threads': 'all', frame: { fullname: `${root}/basic.c`, arch: 'i386:x86-64' } });
    expect(raw.structured.content.stopped).toHaveProperty('core');

    // A command that moves nothing answers its console text alone; an MI one its record, without `arch`.
    expect((await dk.tool('call', { id, command: 'print a + 40' })).text).toBe('$1 = 40');
    const frames = await dk.tool('call', { id, command: '-stack-list-frames' });
    expect(JSON.parse(frames.text).stack[1]).toMatchObject({ func: 'main', file: `${root}/basic.c` });
    expect(frames.text).not.toMatch(/arch|fullname/);
    expect(frames.structured.content.result.stack[0]).toHaveProperty('arch');

    // The end: the program's output, then how it exited.
    await dk.ok('call', { id, command: 'delete' });
    const end = await dk.tool('call', { id, command: 'continue' });
    expect(end.text).toMatch(/\[program stdout\]\ntotal=3 argc=1 first=-\n\[program stderr\]\nto stderr hello 7\n\[exited normally\]$/);
    await dk.ok('close', { id });
  });

  it("a crash inside libc names the first frame of the program's own code, in the text and the structured stop", async () => {
    const { id } = await dk.ok('open', { program: 'dbg_libc' });
    const run = await dk.tool('call', { id, command: 'run' });
    expect(run.text).toMatch(/\[stopped: SIGSEGV \(Segmentation fault\) in \S*strlen\S*.*; the program's own code: frame #\d+ parse_line at dbg_libc\.c:6\]$/);
    expect(run.text.length).toBeLessThanOrEqual(STOP_TEXT_CHARS);
    expect(run.structured.content.stopped.user_frame).toMatchObject({ func: 'parse_line', line: '6', file: `${root}/dbg_libc.c`, 'stopped-in': expect.stringContaining('strlen') });
    await dk.ok('close', { id });
  });

  it("several commands in one call: one answer, each command's output under its line", async () => {
    const { id } = await dk.ok('open', { program: 'basic' });
    const r = await dk.tool('call', { id, commands: ['break add', 'run', 'next', 'print sum', 'info locals'] });
    expect(r.isError, r.text).toBe(false);
    expect(r.text).toMatch(
      /^\(gdb\) break add\nBreakpoint 1 at .*\n\(gdb\) run\n[\s\S]*\(gdb\) next\n8\t {2}return sum;\n\(gdb\) print sum\n\$1 = 0\n\(gdb\) info locals\nsum = 0\n\[stopped: step done in add at basic\.c:8, thread 1\]$/,
    );
    expect(r.structured.content).toMatchObject({ state: 'stopped', result: { class: 'done' }, stopped: { reason: 'end-stepping-range' } });

    // A refused command ends the list: the error says which, after what the ones before printed.
    const bad = await dk.tool('call', { id, commands: ['print 6 * 7', 'print nosuch', 'bt'] });
    expect(bad.isError).toBe(true);
    expect(bad.text).toBe('(gdb) print 6 * 7\n$2 = 42\n(gdb) print nosuch\nNo symbol "nosuch" in current context.\n[debugkit: command 2 of 3 failed; the 1 after it were not sent]');
    expect(bad.structured).toEqual({ type: 'error', content: bad.text });

    // One command or a list, not both, not neither.
    for (const args of [{ id, command: 'bt', commands: ['bt'] }, { id }]) {
      const both = await dk.tool('call', args);
      expect(both.isError).toBe(true);
      expect(both.text).toMatch(/give `command` \(one GDB command\) or `commands` \(a list of them\), not both and not neither/);
    }
    await dk.ok('close', { id });
  });

  it('a command that leaves the program running ends the list: the rest are named as not sent', async () => {
    const { id } = await dk.ok('open', { program: 'spin' });
    const r = await dk.tool('call', { id, commands: ['run', 'bt', 'info locals'], wait: 0.3 });
    expect(r.isError, r.text).toBe(false);
    expect(r.structured.content.state).toBe('running');
    expect(r.text).toMatch(
      // The program's first line may come after the 0.3 s wait (a loaded machine): then it is in a later answer.
      /\[debugkit: the program is running, so the 2 command\(s\) after "run" were not sent: gdb_wait for the stop, then send them\]\n(?:\[program stderr\]\nspin: started pid \d+\n)?\[running: not stopped yet; gdb_wait waits for the stop, "-exec-interrupt" stops it\]$/,
    );
    const stop = await dk.tool('call', { id, command: '-exec-interrupt' });
    expect(stop.text).toMatch(/\[stopped: (SIGINT \(Interrupt\)|interrupted|signal-received) in main at spin\.c:\d+, thread 1\]$/);
    await dk.ok('close', { id });
  });

  it('a shell command among several is checked like one alone: refused where the shell is not allowed, nothing after it sent', async () => {
    const closed = await connectStdio({ root, args: ['--toolsets', 'gdb', '--no-allow-gdb-shell'] });
    try {
      const { id } = await closed.ok('open', { program: 'basic' });
      const r = await closed.tool('call', { id, commands: ['print 1', 'shell touch pwned', 'print 2'] });
      expect(r.isError).toBe(true);
      expect(r.text).toMatch(/shell/);
      expect(r.text).not.toMatch(/\$2 = 2/);
      await closed.ok('close', { id });
    } finally {
      await closed.close();
    }
  });
});

describe("--gdb-text json: the contract's envelope as the text, for clients that parse it", () => {
  it('answers and errors are the JSON envelope, the same as the structured content', async () => {
    const json = await connectStdio({ root, args: ['--toolsets', 'gdb', '--gdb-text', 'json'] });
    try {
      const { id } = await json.ok('open', { program: 'basic' });
      const r = await json.tool('call', { id, command: 'print 6 * 7' });
      expect(JSON.parse(r.text)).toEqual({ type: 'ok', content: expect.objectContaining({ output: '$1 = 42\n' }) });
      expect(JSON.parse(r.text)).toEqual(r.structured);
      const bad = await json.tool('call', { id, command: 'print nosuch' });
      expect(JSON.parse(bad.text)).toEqual({ type: 'error', content: 'No symbol "nosuch" in current context.' });
      await json.ok('close', { id });
    } finally {
      await json.close();
    }
  });
});
