// Attack 18u P3: a COM_STMT_PREPARE_OK saying 65,535 parameters, with none of their definitions
// after it, had each ~139 KB COM_STMT_EXECUTE of the statement built as 65,535 parameter objects
// and a NULL bitmap of 8,192 numbers; 5 such executes made the set unwritable (768 MB), 150 held
// the loop 1.2 s. Now a prepare's count is taken only with its definitions, an execute's
// parameters share the exchange's value budget (MAX_STRUCTURED_VALUES) and the recording's
// (MAX_RECORDING_VALUES), past which the exchange stays Generic bytes, and a long bitmap is bytes.
import { describe, expect, it } from 'vitest';
import { buildGenericMock, payloadBytes } from '../generic/keploy.js';
import { parseMockSet } from '../keploy/parse.js';
import { serializeMockSet } from '../keploy/serialize.js';
import type { GenericMock, Mock, YamlMap } from '../keploy/types.js';
import { MAX_RECORDING_VALUES, mysqlAsGenerics, mysqlConnectionMocks } from './keploy.js';
import { packetOf } from './wire.js';

const at = new Date('2026-11-27T10:00:00Z');
const exchange = (request: Buffer, response: Buffer): GenericMock => buildGenericMock({ request, response, startedAt: at, endedAt: at, host: '127.0.0.1:3306', connectionId: 'c' }, 0);

/** A bare COM_STMT_PREPARE_OK for statement 1 saying `params` parameters, no definitions after it (as the attacker's fake server answered). */
const barePrepare = (params: number) => {
  const ok = Buffer.alloc(12);
  ok.writeUInt32LE(1, 1);
  ok.writeUInt16LE(params, 7);
  return exchange(packetOf(0, Buffer.from('\x16SELECT ?')), packetOf(1, ok));
};

const lenencText = (text: string) => Buffer.from([text.length, ...Buffer.from(text)]);
const [catalogToTable, typeEtc] = [Buffer.from('\x03def\x04shop\x01t\x01t'), Buffer.from([0x0c, 0x21, 0, 0xa0, 0, 0, 0, 0xfd, 0, 0, 0, 0, 0])];
/** A column definition packet (as MariaDB sends one: catalog def, a VARCHAR). */
const definition = (seq: number, name: string) => packetOf(seq & 0xff, Buffer.concat([catalogToTable, lenencText(name), lenencText(name), typeEtc]));
const eof = (seq: number) => packetOf(seq & 0xff, Buffer.from([0xfe, 0, 0, 2, 0]));

/** A COM_STMT_PREPARE_OK for statement 1 with its `params` parameter definitions (and their EOF). */
const prepared = (params: number) => {
  const ok = Buffer.alloc(12);
  ok.writeUInt32LE(1, 1);
  ok.writeUInt16LE(params, 7);
  const defs = Array.from({ length: params }, (_, k) => definition(2 + k, 'p'));
  return exchange(packetOf(0, Buffer.from('\x16SELECT ?')), Buffer.concat([packetOf(1, ok), ...defs, eof(2 + params)]));
};

/** A binary result of `columns` columns and `rows` rows, every value NULL. */
const nullRows = (columns: number, rows: number) => {
  let seq = 1;
  const packets = [packetOf(seq++, Buffer.from([columns]))];
  for (let c = 0; c < columns; c++) packets.push(definition(seq++, `c${c}`));
  packets.push(eof(seq++));
  const bitmap = Buffer.alloc((columns + 7 + 2) >> 3);
  for (let c = 0; c < columns; c++) bitmap[(c + 2) >> 3]! |= 1 << ((c + 2) & 7);
  for (let r = 0; r < rows; r++) packets.push(packetOf(seq++ & 0xff, Buffer.concat([Buffer.from([0]), bitmap])));
  packets.push(eof(seq));
  return Buffer.concat(packets);
};

/** A COM_STMT_EXECUTE of statement 1 with `n` parameters, all NULL (type 6), answered by `answer` (an OK). */
const allNull = (n: number, answer = packetOf(1, Buffer.from([0, 0, 0, 2, 0, 0, 0]))) => {
  const bitmap = (n + 7) >> 3;
  const b = Buffer.alloc(10 + bitmap + 1 + 2 * n);
  b[0] = 0x17;
  b.writeUInt32LE(1, 1);
  b.writeUInt32LE(1, 6);
  b.fill(0xff, 10, 10 + bitmap);
  if (n % 8) b[10 + bitmap - 1] = (1 << (n % 8)) - 1;
  b[10 + bitmap] = 1;
  for (let k = 0; k < n; k++) b.writeUInt16LE(6, 10 + bitmap + 1 + 2 * k);
  return exchange(packetOf(0, b), answer);
};

const requestMessage = (m: Mock) => (m.kind === 'MySQL' ? ((m.spec as YamlMap)['requests'] as YamlMap[])[0]!['message'] : undefined);
const parametersOf = (m: Mock) => {
  const message = requestMessage(m);
  return message && typeof message === 'object' && Array.isArray((message as YamlMap)['parameters']) ? ((message as YamlMap)['parameters'] as unknown[]).length : 0;
};

describe('MySQL COM_STMT_EXECUTE parameters while recording (attack 18u P3)', () => {
  it("takes a prepare's parameter count only when its definitions follow", () => {
    // Two parameters, a string then a DATETIME: read as ONE string parameter the bytes fit too, so only the prepare can tell.
    const execute = packetOf(0, Buffer.from([0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0xfd, 0, 12, 0, 2, 0x61, 0x62, 7, 0xea, 0x07, 11, 23, 10, 0, 1]));
    const done = exchange(execute, packetOf(1, Buffer.from([0, 1, 0, 2, 0, 0, 0])));
    const connection = mysqlConnectionMocks();
    connection(barePrepare(2));
    // Before: read with the 2 the bare answer said.
    expect(typeof requestMessage(connection(done))).toBe('string');
  });

  // Attack 18v Q3: the check counted packets, so 65,535 one-byte packets after a bare prepare passed it.
  it('takes the count only when the packets after the prepare are column definitions, not any packets', () => {
    const ok = Buffer.alloc(12);
    ok.writeUInt32LE(1, 1);
    ok.writeUInt16LE(2, 7);
    const fake = exchange(packetOf(0, Buffer.from('\x16SELECT ?')), Buffer.concat([packetOf(1, ok), packetOf(2, Buffer.from([1])), packetOf(3, Buffer.from([1])), eof(4)]));
    const execute = packetOf(0, Buffer.from([0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0xfd, 0, 12, 0, 2, 0x61, 0x62, 7, 0xea, 0x07, 11, 23, 10, 0, 1]));
    const done = exchange(execute, packetOf(1, Buffer.from([0, 1, 0, 2, 0, 0, 0])));
    const connection = mysqlConnectionMocks();
    connection(fake);
    expect(typeof requestMessage(connection(done))).toBe('string');
    // With real definitions, the same execute is read with its two parameters.
    const real = mysqlConnectionMocks();
    real(prepared(2));
    expect(parametersOf(real(done))).toBe(2);
  });

  // Attack 18x U3: the check looked only at a packet's length and its opening "def": 61,000 packets of
  // `03 'def'` and nine zero bytes passed, and each execute was built with 61,000 parameters.
  it("takes the count only from whole column definitions, as many as the prepare says, not from packets opening with 'def'", () => {
    const fake = (params: number, filler: Buffer) => {
      const ok = Buffer.alloc(12);
      ok.writeUInt32LE(1, 1);
      ok.writeUInt16LE(params, 7);
      const defs = Array.from({ length: params }, (_, k) => packetOf((2 + k) & 0xff, filler));
      return exchange(packetOf(0, Buffer.from('\x16SELECT ?')), Buffer.concat([packetOf(1, ok), ...defs, eof(2 + params)]));
    };
    const attack = fake(61_000, Buffer.from('03646566000000000000000000', 'hex'));
    expect(attack.spec.metadata?.['truncated']).toBeUndefined();
    const connection = mysqlConnectionMocks();
    connection(attack);
    const executes = Array.from({ length: 3 }, () => connection(allNull(61_000)));
    // Before: parameter_count 61,000, each execute built with its 61,000 parameters.
    expect(executes.map(parametersOf)).toEqual([0, 0, 0]);
    expect(executes.every((m) => typeof requestMessage(m) === 'string')).toBe(true);

    const execute = packetOf(0, Buffer.from([0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0xfd, 0, 12, 0, 2, 0x61, 0x62, 7, 0xea, 0x07, 11, 23, 10, 0, 1]));
    const done = exchange(execute, packetOf(1, Buffer.from([0, 1, 0, 2, 0, 0, 0])));
    const whole = definition(0, 'p').subarray(4);
    for (const [why, answer] of [
      ['fixed fields not 0x0c', fake(2, Buffer.concat([whole.subarray(0, -13), Buffer.from([0x0b]), whole.subarray(-12)]))],
      ['a byte after the fixed fields', fake(2, Buffer.concat([whole, Buffer.from([0])]))],
      ['a string cut short', fake(2, Buffer.concat([catalogToTable, Buffer.from([40]), Buffer.from('p'), typeEtc]))],
      ['another catalog', fake(2, Buffer.concat([Buffer.from('\x03abc'), whole.subarray(4)]))],
      [
        'more definitions than it says',
        exchange(packetOf(0, Buffer.from('\x16SELECT ?')), Buffer.concat([packetOf(1, Buffer.from('000100000000000200000000', 'hex')), definition(2, 'p'), definition(3, 'p'), definition(4, 'p')])),
      ],
    ] as const) {
      const c = mysqlConnectionMocks();
      c(answer);
      expect(typeof requestMessage(c(done)), why).toBe('string');
    }
    // Whole definitions are taken: with their EOF, without one (CLIENT_DEPRECATE_EOF), with MariaDB's extended type info.
    const extended = Buffer.concat([catalogToTable, lenencText('p'), lenencText('p'), lenencText('\x00\x04json'), typeEtc]);
    const noEof = Buffer.from('000100000000000200000000', 'hex');
    for (const answer of [fake(2, whole), fake(2, extended), exchange(packetOf(0, Buffer.from('\x16SELECT ?')), Buffer.concat([packetOf(1, noEof), definition(2, 'p'), definition(3, 'p')]))]) {
      const c = mysqlConnectionMocks();
      c(answer);
      expect(parametersOf(c(done))).toBe(2);
    }
  });

  it("the attack's bare prepare of 65,535 and its executes: no parameter object is built (each execute kept as its bytes)", () => {
    const connection = mysqlConnectionMocks();
    connection(barePrepare(65535));
    const mocks = Array.from({ length: 5 }, () => connection(allNull(65535)));
    // Before: 5 x 65,535 = 327,675 parameter objects, and each bitmap a list of 8,192 numbers.
    expect(mocks.reduce((n, m) => n + parametersOf(m), 0)).toBe(0);
    expect(mocks.every((m) => typeof requestMessage(m) === 'string')).toBe(true);
  });

  it("builds a recording's execute parameters up to MAX_RECORDING_VALUES, then keeps the exchanges as Generic bytes; a long NULL bitmap is bytes", () => {
    const recording = {};
    const connection = mysqlConnectionMocks(recording);
    connection(prepared(30_000));
    const mocks = Array.from({ length: 5 }, () => connection(allNull(30_000)));
    // Before: 150,000 parameter objects.
    expect(mocks.reduce((n, m) => n + parametersOf(m), 0)).toBeLessThanOrEqual(MAX_RECORDING_VALUES);
    expect(mocks.map((m) => m.kind)).toEqual(['MySQL', 'MySQL', 'MySQL', 'MySQL', 'Generic']);
    const bitmap = (requestMessage(mocks[0]!) as YamlMap)['null_bitmap'];
    expect(bitmap instanceof Uint8Array && bitmap.length).toBe(3750);
    // Another connection of the same recording takes from what is left (11,072), a new recording from its own.
    const other = mysqlConnectionMocks(recording);
    other(prepared(30_000));
    expect(other(allNull(30_000)).kind).toBe('Generic');
    const fresh = mysqlConnectionMocks({});
    fresh(prepared(30_000));
    expect(parametersOf(fresh(allNull(30_000)))).toBe(30_000);
  });

  it("an execute's parameters share its exchange's MAX_STRUCTURED_VALUES with the result values: past it the exchange stays Generic bytes", () => {
    const connection = mysqlConnectionMocks();
    connection(prepared(40_000));
    // 40,000 parameters and an OK: built.
    expect(parametersOf(connection(allNull(40_000)))).toBe(40_000);
    // 40,000 parameters and 30 x 1,000 result values: more than 65,536 (before: all built).
    expect(connection(allNull(40_000, nullRows(30, 1000))).kind).toBe('Generic');
  });

  it('a statement of 300 parameters (a bitmap of 38 bytes, written as !!binary) replays its exact bytes', () => {
    const g = allNull(300);
    const m = mysqlConnectionMocks()(g);
    expect(parametersOf(m)).toBe(300);
    const yaml = serializeMockSet([m]);
    expect(yaml).toContain('null_bitmap: !!binary');
    const back = mysqlAsGenerics(parseMockSet(yaml, 'mocks.yaml')[0]!);
    expect(typeof back).not.toBe('string');
    const generics = back as GenericMock[];
    expect(payloadBytes(generics[0]!.spec.genericrequests ?? []).equals(payloadBytes(g.spec.genericrequests ?? []))).toBe(true);
  });
});
