import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { compareKeys, emitDocument, formatNumber, plainReadsAsString, QUOTED_DOCUMENT_MAX, QUOTED_STRING_MAX, type ENode } from './emit.js';
import { quotedLengths, SQL_FILE } from './testkit.js';

const str = (value: string): ENode => ({ kind: 'str', value });
const doc = (entries: Array<[string, ENode]>) => emitDocument({ kind: 'map', entries });
const line = (value: string) => doc([['k', str(value)]]);

describe('scalar styles as yaml.v3 writes a Go string', () => {
  it.each([
    ['plain text', 'Bubbles', 'k: Bubbles\n'],
    ['text with ", " and ";"', 'ISO, MDY', 'k: ISO, MDY\n'],
    ['a URL path', '/documents/_doc/075IJ5EBIPW7ZBPs5-8y', 'k: /documents/_doc/075IJ5EBIPW7ZBPs5-8y\n'],
    ['empty (reads as null)', '', 'k: ""\n'],
    ['an int', '164', 'k: "164"\n'],
    ['a float', '123.00', 'k: "123.00"\n'],
    ['a YAML 1.1 bool', 'on', 'k: "on"\n'],
    ['another one', 'Yes', 'k: "Yes"\n'],
    ['true', 'true', 'k: "true"\n'],
    ['null', 'null', 'k: "null"\n'],
    ['~', '~', 'k: "~"\n'],
    ['a timestamp-like string', '0001-01-01T00:00:00Z', 'k: "0001-01-01T00:00:00Z"\n'],
    ['a date', '2024-01-02', 'k: "2024-01-02"\n'],
    ['hex', '0x1F', 'k: "0x1F"\n'],
    ['underscored int', '1_000', 'k: "1_000"\n'],
    ['exponent', '1e3', 'k: "1e3"\n'],
    ['sexagesimal', '12:30', 'k: "12:30"\n'],
    ['.inf', '.inf', 'k: ".inf"\n'],
    ['JSON', '{"a":1}', `k: '{"a":1}'\n`],
    ['colon space', 'a: b', "k: 'a: b'\n"],
    ['colon without space', 'b64:AAAA', 'k: b64:AAAA\n'],
    ['comment-like', 'a #b', "k: 'a #b'\n"],
    ['dash space', '- x', "k: '- x'\n"],
    ['dash alone', '-', "k: '-'\n"],
    ['dash word', '-x', 'k: -x\n'],
    ['a lone plus', '+', 'k: +\n'],
    ['leading space', ' lead', "k: ' lead'\n"],
    ['trailing space', 'trail ', "k: 'trail '\n"],
    ['a quote inside', "it's", "k: it's\n"],
    ['a leading quote', "'q", "k: '''q'\n"],
    ['a tab', 'a\tb', 'k: "a\\tb"\n'],
    ['CRLF text', 'a\r\nb', 'k: "a\\r\\nb"\n'],
    ['NUL and escape', '\u0000\u001b', 'k: "\\0\\e"\n'],
    ['a line separator', 'a\u2028b', 'k: "a\\Lb"\n'],
    ['unicode', 'héllo ✓', 'k: héllo ✓\n'],
    ['document marker', '--- x', "k: '--- x'\n"],
  ])('%s', (_name, value, expected) => {
    expect(line(value)).toBe(expected);
    expect(parseYaml(expected)).toEqual({ k: value });
  });

  it('multi-line text in block context is a literal with the chomping it needs', () => {
    expect(line('a\nb')).toBe('k: |-\n    a\n    b\n');
    expect(line('a\nb\n')).toBe('k: |\n    a\n    b\n');
    expect(line('a\n\nb\n\n')).toBe('k: |+\n    a\n\n    b\n\n');
    expect(line('  indented\nx')).toBe('k: |4-\n      indented\n    x\n');
    expect(line('trailing space \nx')).toBe('k: "trailing space \\nx"\n');
    for (const v of ['a\nb', 'a\nb\n', 'a\n\nb\n\n', '  indented\nx', '\n', '\n\nx']) expect(parseYaml(line(v))).toEqual({ k: v });
  });

  it('multi-line text in flow context or as a sequence item with leading space is double-quoted', () => {
    expect(doc([['k', { kind: 'seq', items: [str('a\nb')], flow: true }]])).toBe('k: ["a\\nb"]\n');
    expect(doc([['k', { kind: 'seq', items: [str('a\nb'), str(' x\ny')] }]])).toBe('k:\n    - |-\n      a\n      b\n    - " x\\ny"\n');
  });

  it("in flow context, indicators force quotes (the fixture's data_row)", () => {
    const rows: ENode = {
      kind: 'seq',
      flow: true,
      items: [{ kind: 'map', entries: [['row_values', { kind: 'seq', items: [str('b64:AAAAAQ=='), str('Bubbles'), str('123.00'), str('a, b'), str('')] }]] }],
    };
    expect(doc([['data_row', rows]])).toBe(`data_row: [{row_values: ['b64:AAAAAQ==', Bubbles, "123.00", 'a, b', ""]}]\n`);
  });

  it('keys are quoted by the same rules, and a key over 128 characters becomes an explicit ? key', () => {
    expect(
      doc([
        ['1', str('x')],
        ['', str('y')],
        ['a: b', str('z')],
      ]),
    ).toBe(`"1": x\n"": "y"\n'a: b': z\n`);
    const long = 'k'.repeat(130);
    const text = doc([[long, str('v')]]);
    expect(text).toBe(`? "${long}"\n: v\n`);
    expect(parseYaml(text)).toEqual({ [long]: 'v' });
  });

  it('tricky strings read back identically as values, list items, flow items and keys', () => {
    const tricky = [
      '',
      ' ',
      '  ',
      'a',
      '-',
      '--',
      '---',
      '...',
      '?',
      ':',
      '#',
      '@',
      '`',
      '!',
      '&a',
      '*a',
      '|',
      '>',
      '%',
      ',',
      '[',
      ']',
      '{',
      '}',
      '"',
      "'",
      '\\',
      'a:b',
      'a: b',
      'a :b',
      'a#b',
      'a #b',
      'yes',
      'No',
      'OFF',
      'null',
      'NULL',
      'true',
      'False',
      '0',
      '-0',
      '+1',
      '0o17',
      '017',
      '0b101',
      '1.',
      '.5',
      '-.inf',
      '.NaN',
      '1e-3',
      '3:25:45',
      '2024-06-05T16:53:56.841481379+05:30',
      '2024-6-5 1:2:3',
      'a\nb',
      'a\n',
      '\n',
      '\na',
      'a\n\n',
      ' a\nb',
      'a \nb',
      'a\n b',
      '\t',
      'x\u0085y',
      '\uFEFFbom',
      'é',
      '😀',
      'a\u0000b',
      '\u007f',
      'key: value\n- item\n',
      'multi\r\nline\r\n',
      '<<',
      '=',
      'a\u00a0b',
    ];
    for (const s of tricky) {
      const entries: Array<[string, ENode]> = [
        ['value', str(s)],
        ['block', { kind: 'seq', items: [str(s), str('x')] }],
        ['flow', { kind: 'seq', items: [str(s), { kind: 'map', entries: [['in', str(s)]] }], flow: true }],
        ['nested', { kind: 'map', entries: [['deeper', { kind: 'map', entries: [['v', str(s)]] }]] }],
      ];
      if (!s.includes('\n')) entries.push([s, str('as key')]);
      const text = doc(entries);
      const expected: Record<string, unknown> = { value: s, block: [s, 'x'], flow: [s, { in: s }], nested: { deeper: { v: s } } };
      if (!s.includes('\n')) expected[s] = 'as key';
      expect(parseYaml(text, { schema: 'core', uniqueKeys: false }), `${JSON.stringify(s)}:\n${text}`).toEqual(expected);
    }
  });
});

describe('layout as yaml.v3 lays it out', () => {
  it('indents by 4, lists under a key by 4, and the content of a list item 2 after the dash', () => {
    const packet: ENode = {
      kind: 'map',
      entries: [
        ['identifier', str('ClientRequest')],
        [
          'parse',
          {
            kind: 'seq',
            items: [
              {
                kind: 'map',
                entries: [
                  ['name', str('')],
                  ['query', str('SELECT 1')],
                ],
              },
            ],
          },
        ],
        ['startup', { kind: 'map', entries: [['parameters', { kind: 'map', entries: [['user', str('postgres')]] }]] }],
        ['empty', { kind: 'seq', items: [{ kind: 'map', entries: [] }] }],
      ],
    };
    expect(
      doc([
        [
          'spec',
          {
            kind: 'map',
            entries: [
              ['requests', { kind: 'seq', items: [packet] }],
              ['none', { kind: 'seq', items: [] }],
            ],
          },
        ],
      ]),
    ).toBe(
      [
        'spec:',
        '    requests:',
        '        - identifier: ClientRequest',
        '          parse:',
        '            - name: ""',
        '              query: SELECT 1',
        '          startup:',
        '            parameters:',
        '                user: postgres',
        '          empty:',
        '            - {}',
        '    none: []',
        '',
      ].join('\n'),
    );
  });

  it('writes bytes as !!binary, in 70-column literal lines once long', () => {
    expect(doc([['b', { kind: 'binary', value: new Uint8Array([0xff, 0xfe]) }]])).toBe('b: !!binary //4=\n');
    const long = new Uint8Array(60).fill(0xff);
    const text = doc([['b', { kind: 'binary', value: long }]]);
    expect(text).toBe(`b: !!binary |\n    ${'/'.repeat(70)}\n    ${'/'.repeat(10)}\n`);
    expect(new Uint8Array(parseYaml(text).b)).toEqual(long);
  });
});

describe('strings the `yaml` package would read slowly are written as !!binary (attack 18t M3)', () => {
  const crlf = (n: number) => 'abcdefg\r\n'.repeat(Math.ceil(n / 9)).slice(0, n);

  it('a string past QUOTED_STRING_MAX that needs double quotes is !!binary of its UTF-8, on one line, in block and flow context', () => {
    const long = crlf(QUOTED_STRING_MAX + 1) + 'é';
    // 100 characters, 122 as written (`\r\n` is 4): within the bound.
    expect(line(crlf(100))).toBe(`k: ${JSON.stringify(crlf(100))}\n`);
    expect(quotedLengths(line(crlf(100)))).toEqual([122]);
    expect(line(crlf(110))).toMatch(/^k: !!binary /);
    expect(line(long)).toBe(`k: !!binary ${Buffer.from(long).toString('base64')}\n`);
    const inFlow = 'line\n'.repeat(40);
    const flow = doc([['k', { kind: 'seq', items: [str(inFlow), str('x')], flow: true }]]);
    expect(flow).toBe(`k: [!!binary ${Buffer.from(inFlow).toString('base64')}, x]\n`);
    const seq = doc([['k', { kind: 'seq', items: [str(long)] }]]);
    expect(seq).toBe(`k:\n    - !!binary ${Buffer.from(long).toString('base64')}\n`);
    for (const text of [line(long), flow, seq]) expect(quotedLengths(text)).toEqual([]);
    // As yaml.v3 would hand it to a Go string: the same bytes.
    expect(Buffer.from(parseYaml(line(long)).k).toString('utf8')).toBe(long);
    // Text that is not double-quoted stays as it was, however long: a literal block, plain text.
    expect(line('line\n'.repeat(40))).toMatch(/^k: \|\n/);
    expect(line('x'.repeat(1000))).toBe(`k: ${'x'.repeat(1000)}\n`);
  });

  it('a document has at most QUOTED_DOCUMENT_MAX double-quoted characters, the rest !!binary', () => {
    const tabbed = (i: number) => `${i}\t${'v'.repeat(98)}`;
    const text = doc([['rows', { kind: 'seq', items: Array.from({ length: 6 }, (_, i) => str(tabbed(i))), flow: true }]]);
    const quoted = quotedLengths(text);
    expect(quoted).toEqual([101, 101]); // `\t` is 2 characters to read
    expect(quoted.reduce((a, b) => a + b)).toBeLessThanOrEqual(QUOTED_DOCUMENT_MAX);
    expect(text.match(/!!binary/g)).toHaveLength(4);
    expect((parseYaml(text).rows as Array<string | Uint8Array>).map((v) => (typeof v === 'string' ? v : Buffer.from(v).toString('utf8')))).toEqual(Array.from({ length: 6 }, (_, i) => tabbed(i)));
    // Each document starts afresh.
    expect(quotedLengths(doc([['k', str(tabbed(0))]]))).toEqual([101]);
    // Counted as written: 100 control characters are 400 to read.
    expect(line('\x01'.repeat(100))).toMatch(/^k: !!binary /);
    expect(line('\x01'.repeat(32))).toBe(`k: "${'\\x01'.repeat(32)}"\n`);
  });

  it('long base64 in flow context is one plain line, not a double-quoted scalar', () => {
    const bytes = new Uint8Array(200).fill(0xfe);
    const text = doc([['k', { kind: 'seq', items: [{ kind: 'binary', value: bytes }], flow: true }]]);
    expect(text).toBe(`k: [!!binary ${Buffer.from(bytes).toString('base64')}]\n`);
    expect(new Uint8Array(parseYaml(text).k[0])).toEqual(bytes);
  });
});

describe('numbers and key order', () => {
  it('formats numbers like Go (ints as ints, floats with strconv g)', () => {
    expect([0, -3, 100, 2100181801, 1.5, 0.25, 1234567.5, 0.00001, 1e21, 123456789012345678901234567890n].map(formatNumber)).toEqual([
      '0',
      '-3',
      '100',
      '2100181801',
      '1.5',
      '0.25',
      '1.2345675e+06',
      '1e-05',
      '1e+21',
      '123456789012345678901234567890',
    ]);
    expect([NaN, Infinity, -Infinity].map(formatNumber)).toEqual(['.nan', '.inf', '-.inf']);
  });

  it('sorts map keys like yaml.v3: digits by value, non-letters before letters', () => {
    expect(['b', 'a10', 'a2', 'a', 'B', 'a-b', 'ab', 'Content-Type', 'Content-Length', 'Content-Encoding'].sort(compareKeys)).toEqual([
      'B',
      'Content-Encoding',
      'Content-Length',
      'Content-Type',
      'a',
      'a-b',
      'a2',
      'a10',
      'ab',
      'b',
    ]);
    expect(['client_encoding', 'user', 'datestyle', 'database', 'extra_float_digits'].sort(compareKeys)).toEqual(['client_encoding', 'database', 'datestyle', 'extra_float_digits', 'user']);
  });

  it('knows which strings read back as strings when plain', () => {
    expect(['abc', 'b64:x', 'mock-0', '10.5 (Debian)'].every(plainReadsAsString)).toBe(true);
    expect(['', '0', '-1', '1.0', 'true', 'on', 'n', '~', '2024-01-01'].some(plainReadsAsString)).toBe(false);
  });
});

describe("why this emitter rather than yaml's document API", () => {
  it('yaml, even re-writing its own parse of a Keploy file, puts a mapping nested in a list item 2 columns deeper than yaml.v3', () => {
    const text = readFileSync(SQL_FILE, 'utf8');
    const options = { indent: 4, indentSeq: true, lineWidth: 0, flowCollectionPadding: false, doubleQuotedMinMultiLineLength: Infinity };
    const again = parseAllDocuments(text)
      .map((d) => d.toString(options))
      .join('---\n');
    expect(text).toContain('        - identifier: StartupRequest\n          length: 102\n');
    expect(text).toContain('          startup_message:\n            protocolversion: 196608\n');
    expect(again).toContain('          startup_message:\n              protocolversion: 196608\n');
    expect(again).not.toBe(text);
  });
});
