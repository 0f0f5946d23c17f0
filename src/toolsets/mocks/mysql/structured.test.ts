import { describe, expect, it } from 'vitest';
import { MAX_EXECUTE_GUESS_STEPS, authMessage, binaryValueAt, commandMessage, executeMessage } from './decode.js';
import type { YamlMap } from '../keploy/types.js';
import { binaryValue, structuredPackets } from './structured.js';

const packet = (seq: number, payload: Buffer) => Buffer.concat([Buffer.from([payload.length & 0xff, payload.length >> 8, payload.length >> 16, seq]), payload]);

describe('MySQL binary-protocol values in Keploy fields', () => {
  // [type, unsigned, bytes, value as written]
  const cases: Array<[number, boolean, number[], unknown]> = [
    [1, false, [0xff], -1],
    [1, true, [0xff], 255],
    [2, false, [0x00, 0x80], -32768],
    [13, true, [0xea, 0x07], 2026],
    [3, false, [0xfe, 0xff, 0xff, 0xff], -2],
    [9, true, [0x01, 0x00, 0x00, 0x00], 1],
    [8, true, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], 18446744073709551615n],
    [8, false, [0x2a, 0, 0, 0, 0, 0, 0, 0], 42],
    [5, false, [0, 0, 0, 0, 0, 0, 4, 0x40], 2.5],
    [4, false, [0, 0, 0x20, 0x40], 2.5],
    [12, false, [7, 0xea, 0x07, 11, 23, 10, 0, 0], '2026-11-23 10:00:00'],
    [12, false, [11, 0xea, 0x07, 11, 23, 10, 0, 1, 0x40, 0xe2, 0x01, 0], '2026-11-23 10:00:01.123456'],
    [10, false, [4, 0xea, 0x07, 11, 23], '2026-11-23'],
    [7, false, [0], '0000-00-00 00:00:00'],
    [11, false, [8, 1, 2, 0, 0, 0, 3, 4, 5], '-2 03:04:05.000000'],
    [11, false, [12, 0, 0, 0, 0, 0, 3, 4, 5, 1, 0, 0, 0], '0 03:04:05.000001'],
    [253, false, [4, 0x6b, 0x69, 0x77, 0x69], 'kiwi'],
    [246, false, [4, 0x32, 0x2e, 0x35, 0x30], '2.50'],
    [252, false, [2, 0xc3, 0x28], new Uint8Array([0xc3, 0x28])],
  ];
  it.each(cases)('type %i (unsigned %s): bytes -> value -> the same bytes', (type, unsigned, bytes, value) => {
    const [v, end] = binaryValueAt(type, unsigned, Buffer.from(bytes), 0)!;
    expect(v).toEqual(value);
    expect(end).toBe(bytes.length);
    expect([...binaryValue(type, v, unsigned)]).toEqual(bytes);
  });

  it('reads COM_STMT_EXECUTE parameters (NULL bitmap, types, values) and writes the same bytes', () => {
    // statement 7, no cursor, 1 iteration; 3 parameters, the second NULL; types LONG, NULL, VAR_STRING.
    const payload = Buffer.from([0x17, 7, 0, 0, 0, 0, 1, 0, 0, 0, 0b010, 1, 3, 0, 6, 0, 0xfd, 0, 0x2a, 0, 0, 0, 2, 0x68, 0x69]);
    const m = executeMessage({ seq: 0, payload })!;
    expect(m).toEqual({
      status: 0x17,
      statement_id: 7,
      flags: 0,
      iteration_count: 1,
      parameter_count: 3,
      null_bitmap: [2],
      new_params_bind_flag: 1,
      parameters: [
        { type: 3, unsigned: false, value: 42 },
        { type: 6, unsigned: false, value: null },
        { type: 253, unsigned: false, value: 'hi' },
      ],
    });
    expect(structuredPackets('COM_STMT_EXECUTE', 0, m)).toEqual(packet(0, payload));
    // Re-executed without types (new_params_bind_flag 0): the values cannot be read; kept as bytes.
    expect(executeMessage({ seq: 0, payload: Buffer.from([0x17, 7, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0x2a, 0, 0, 0]) })).toBeUndefined();
  });

  it('guesses a COM_STMT_EXECUTE parameter count with bounded work: a packet every guess nearly fits is kept as bytes (attack 18t M5)', () => {
    // 0x17, statement 1, no flags, 1 iteration, then a bitmap byte 0xff and 0x01 to the end: for
    // every count n the byte after the bitmap is a bind flag of 1 and every type a 1-byte TINY, so
    // each guess walks all its n values before it fails at the packet's end.
    const payload = Buffer.alloc(9000, 1);
    payload[0] = 0x17;
    payload.writeUInt32LE(1, 1);
    payload[5] = 0;
    payload[10] = 0xff;
    // Each guess reads the parameters' types: the reads counted are the work.
    let reads = 0;
    const read = payload.readUInt16LE.bind(payload);
    payload.readUInt16LE = (offset?: number) => (reads++, read(offset));
    expect(executeMessage({ seq: 0, payload })).toBeUndefined();
    // Linear in the packet (before: every n up to 4096 with its n types read, about 8.4 million).
    expect(reads).toBeLessThanOrEqual(MAX_EXECUTE_GUESS_STEPS + 16);
    expect(reads).toBeLessThan(16 * payload.length);
  });

  it('reads a COM_STMT_EXECUTE with the parameter count its prepare gave, in one pass', () => {
    // 1000 INT parameters, read at once when the count is known (no guess walks any values).
    const n = 1000;
    const bitmap = Buffer.alloc((n + 7) >> 3);
    const types = Buffer.alloc(2 * n);
    const values = Buffer.alloc(4 * n);
    for (let k = 0; k < n; k++) [types[2 * k], values[4 * k]] = [3, k & 0xff];
    const payload = Buffer.concat([Buffer.from([0x17, 9, 0, 0, 0, 0, 1, 0, 0, 0]), bitmap, Buffer.from([1]), types, values]);
    let reads = 0;
    const read = payload.readUInt16LE.bind(payload);
    payload.readUInt16LE = (offset?: number) => (reads++, read(offset));
    const m = executeMessage({ seq: 0, payload }, n)!;
    expect(m['parameter_count']).toBe(n);
    expect((m['parameters'] as YamlMap[])[999]).toEqual({ type: 3, unsigned: false, value: 999 & 0xff });
    expect(reads).toBeLessThanOrEqual(2 * n);
    // A count the bytes do not fill is not taken.
    expect(executeMessage({ seq: 0, payload }, n - 1)).toBeUndefined();
  });

  it("reads the connection phase's server packets in Keploy's fields", () => {
    const fast = authMessage('AuthMoreData', { seq: 2, payload: Buffer.from([1, 3]) });
    expect(fast).toEqual({ status_tag: 1, data: 'FastAuthSuccess' });
    const sw = Buffer.concat([Buffer.from('\xfemysql_native_password\0', 'latin1'), Buffer.alloc(20, 0x41), Buffer.from([0])]);
    expect(authMessage('AuthSwitchRequest', { seq: 2, payload: sw })).toEqual({
      status_tag: 0xfe,
      plugin_name: 'mysql_native_password',
      plugin_data: Buffer.concat([Buffer.alloc(20, 0x41), Buffer.from([0])])
        .toString('base64')
        .replace(/=+$/, ''),
    });
    expect(structuredPackets('AuthSwitchRequest', 2, authMessage('AuthSwitchRequest', { seq: 2, payload: sw })!)).toEqual(packet(2, sw));
    expect(authMessage('AuthSwitchResponse', { seq: 3, payload: Buffer.alloc(20) })).toEqual({ data: Buffer.alloc(20).toString('base64') });
  });

  it("reads the other commands in Keploy's fields", () => {
    expect(commandMessage('COM_PING', { seq: 0, payload: Buffer.from([0x0e]) })).toEqual({ command: 14 });
    expect(commandMessage('COM_QUIT', { seq: 0, payload: Buffer.from([0x01]) })).toEqual({ command: 1 });
    expect(commandMessage('COM_INIT_DB', { seq: 0, payload: Buffer.from('\x02shop') })).toEqual({ command: 2, schema: 'shop' });
    expect(commandMessage('COM_STMT_CLOSE', { seq: 0, payload: Buffer.from([0x19, 7, 0, 0, 0]) })).toEqual({ status: 0x19, statement_id: 7 });
    expect(commandMessage('COM_PING', { seq: 0, payload: Buffer.from([0x0e, 0]) })).toBeUndefined();
  });

  it('says what is wrong with a structured message it cannot turn into bytes', () => {
    expect(structuredPackets('TextResultSet', 1, { columnCount: 1, columns: [{ name: 'x' }] })).toBe('a TextResultSet message: columns[0]: no header {payload_length, sequence_id}');
    expect(structuredPackets('BinaryProtocolResultSet', 1, { columnCount: 'two' })).toBe('a BinaryProtocolResultSet message: columnCount is not an integer 0-4096');
    expect(structuredPackets('Nope', 1, {})).toBeUndefined();
  });
});
