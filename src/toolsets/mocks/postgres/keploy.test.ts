import fs from 'node:fs';
import { serialize } from 'pg-protocol';
import { describe, expect, it } from 'vitest';
import { QUOTED_DOCUMENT_MAX, QUOTED_STRING_MAX } from '../keploy/emit.js';
import { parseMockSet } from '../keploy/parse.js';
import { serializeMockSet } from '../keploy/serialize.js';
import { quotedLengths, SQL_FILE } from '../keploy/testkit.js';
import type { PostgresMock, PostgresResponsePacket } from '../keploy/types.js';
import { parseFrontendBytes } from './frontend.js';
import { KeptBytes } from '../kept.js';
import { buildRequestPacket, buildResponsePacket, MAX_STRUCTURED_VALUES, requestMessages, responseMessages } from './keploy.js';
import { binaryToText, convertValue, OID, parameterKey, textToBinary } from './values.js';
import { backend, codeOf } from './wire.js';

const mocks = parseMockSet(fs.readFileSync(SQL_FILE, 'utf8'), SQL_FILE) as PostgresMock[];
const TYPED = ['row_description', 'data_row', 'command_complete', 'parameter_description', 'ready_for_query', 'backend_key_data', 'parameter_status', 'header'] as const;
const typedOf = (p: PostgresResponsePacket) => Object.fromEntries(TYPED.filter((k) => p[k] !== undefined).map((k) => [k, p[k]]));

describe('Keploy packets', () => {
  it('rebuilds the fixture responses from their typed fields into wire messages that describe themselves the same way', () => {
    for (const mock of mocks.slice(1)) {
      const recorded = mock.spec.postgresresponses[0]!;
      const wire = responseMessages(recorded);
      expect(wire.map(codeOf)).toEqual(recorded.header);
      const rebuilt = buildResponsePacket(wire, { length: 102 });
      const expected = typedOf(recorded);
      // Keploy's list repeats TimeZone twice more than the 11 'S' messages its header has.
      if (recorded.parameter_status) expected.parameter_status = recorded.parameter_status.slice(0, 11);
      expect(typedOf(rebuilt)).toEqual(expected);
    }
  });

  it('builds request packets the way Keploy wrote the fixture: header without the trailing Sync, typed parse/bind/describe/execute', () => {
    for (const i of [2, 3, 4, 5, 6, 7]) {
      const recorded = mocks[i]!.spec.postgresrequests[0]!;
      const messages = requestMessages(recorded);
      expect(messages.at(-1)!.type).toBe('S');
      const built = buildRequestPacket(messages, { length: 102 });
      for (const key of ['header', 'identifier', 'length', 'payload', 'bind', 'describe', 'execute', 'msg_type'] as const) {
        expect([i, key, built[key]]).toEqual([i, key, recorded[key]]);
      }
      // mock-4's typed query has one space where its payload, the bytes on the wire, has two.
      const squash = (q: unknown) => String(q).replace(/\s+/g, ' ');
      expect(built.parse?.map((p) => ({ ...p, query: squash(p.query) }))).toEqual(recorded.parse?.map((p) => ({ ...p, query: squash(p.query) })));
    }
  });

  it('builds the startup and password packets as Keploy did, and reads the password back without a payload', () => {
    const startup = buildRequestPacket(requestMessages(mocks[0]!.spec.postgresrequests[0]!), { length: 102 });
    expect(startup).toEqual(mocks[0]!.spec.postgresrequests[0]!);
    const password = mocks[1]!.spec.postgresrequests[0]!;
    const rebuilt = buildRequestPacket(requestMessages(password), { length: 102, authCode: 5 });
    expect(rebuilt.password_message).toEqual(password.password_message);
    expect(rebuilt.header).toEqual(['p']);
  });

  it('keeps exact bytes in response payloads and SQL NULL apart from the empty string', () => {
    const wire = [backend.dataRow([null, Buffer.alloc(0), Buffer.from([0, 0, 0, 7])]), backend.commandComplete('SELECT 1'), backend.readyForQuery('T')];
    const packet = buildResponsePacket(wire, { length: 8 });
    expect(packet.data_row).toEqual([{ row_values: [null, '', 'b64:AAAABw=='] }]);
    expect(packet.header).toEqual(['D', 'C', 'Z']);
    expect(packet.ready_for_query).toEqual({ txstatus: 84 });
    expect(responseMessages(packet)).toEqual(wire);
    expect(responseMessages({ ...packet, payload: undefined })).toEqual(wire);
  });

  it('writes text with \\r\\n and tabs in rows and queries within the double-quote bounds, and reads it back the same (attack 18t M3)', () => {
    const long = 'abcdefg\r\n'.repeat(20_000);
    const rows = [[long, null], ...Array.from({ length: 50 }, (_, i) => [`${i}\t${'v'.repeat(60)}`, `row ${i}\r\n`])].map((r) => r.map((v) => (v === null ? null : Buffer.from(v))));
    const wire = [...rows.map((r) => backend.dataRow(r)), backend.commandComplete('SELECT 51'), backend.readyForQuery('I')];
    const sql = `SELECT a,\r\n       b\r\nFROM t\r\nWHERE note = '${'x\r\n'.repeat(100)}'`;
    const mock: PostgresMock = {
      version: 'api.keploy.io/v1beta1',
      kind: 'Postgres',
      name: 'mock-0',
      spec: {
        metadata: { type: 'config' },
        postgresrequests: [buildRequestPacket(parseFrontendBytes(serialize.query(sql)), { length: 8 })],
        postgresresponses: [buildResponsePacket(wire, { length: 8 })],
        reqtimestampmock: '2024-06-05T16:53:56.841481379+05:30',
        restimestampmock: '2024-06-05T16:53:56.843081163+05:30',
      },
    };
    const text = serializeMockSet([mock]);
    const quoted = quotedLengths(text);
    expect(Math.max(...quoted)).toBeLessThanOrEqual(QUOTED_STRING_MAX);
    expect(quoted.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(QUOTED_DOCUMENT_MAX);
    const back = parseMockSet(text, 'set')[0] as PostgresMock;
    expect(back.spec.postgresrequests[0]!.query).toEqual({ string: sql });
    expect(back.spec.postgresresponses[0]!.data_row).toEqual(mock.spec.postgresresponses[0]!.data_row);
    expect(back.spec.postgresresponses[0]!.data_row![0]!.row_values![0]).toBe(long);
    expect(responseMessages({ ...back.spec.postgresresponses[0]!, payload: undefined })).toEqual(wire);
  });

  it('writes errors with every pgproto3 ErrorResponse key, and rebuilds them', () => {
    const error = backend.error({ S: 'ERROR', V: 'ERROR', C: '23505', M: 'duplicate key', D: 'Key (name)=(a) already exists.', n: 'dk_name_key', L: '664' });
    const packet = buildResponsePacket([error], { length: 8 });
    expect(packet.error_response).toMatchObject({ severity: 'ERROR', code: '23505', message: 'duplicate key', constraint_name: 'dk_name_key', line: 664, hint: '', position: 0 });
    expect(responseMessages({ ...packet, payload: undefined })).toEqual([error]);
  });

  it('lists several Parse/Bind/Execute of one group in order, and a Close in extra', () => {
    const bytes = Buffer.concat([
      serialize.parse({ name: 'a', text: 'SELECT 1' }),
      serialize.bind({ statement: 'a', values: [null] }),
      serialize.execute(),
      serialize.close({ type: 'S', name: 'a' }),
      serialize.sync(),
    ]);
    const packet = buildRequestPacket(parseFrontendBytes(bytes), { length: 8 });
    expect(packet.header).toEqual(['P', 'B', 'E', 'C']);
    expect(packet.bind).toEqual([{ prepared_statement: 'a', parameter_format_codes: [0], parameters: [null], result_format_codes: [0] }]);
    expect(packet.extra).toEqual({ close: { object_type: 83, name: 'a' } });
    expect(requestMessages({ ...packet, payload: undefined }).map((m) => m.type)).toEqual(['P', 'B', 'E', 'C']);
  });
});

describe('bytes-only packets (attack 18u P9)', () => {
  // The answer to a query of `rows` rows of one int4 text column.
  const answer = (rows: number) => [
    backend.rowDescription([{ name: 'i', tableOid: 0, column: 0, typeOid: OID.int4, typeSize: 4, typeModifier: -1, format: 0 }]),
    ...Array.from({ length: rows }, (_, i) => backend.dataRow([Buffer.from(String(i))])),
    backend.commandComplete(`SELECT ${rows}`),
    backend.readyForQuery('I'),
  ];

  it('keeps an answer of more values than the bound as its bytes only, read back the same', () => {
    // A row is two values (its message and its cell): 32,000 rows are within the bound, 33,000 not.
    const within = buildResponsePacket(answer(32_000), { length: 8 });
    expect(within.data_row).toHaveLength(32_000);
    const messages = answer(33_000);
    const over = buildResponsePacket(messages, { length: 8 });
    expect(2 * 33_000).toBeGreaterThan(MAX_STRUCTURED_VALUES);
    expect(over).toEqual({ identifier: 'ServerResponse', length: 8, payload: Buffer.concat(messages).toString('base64'), auth_type: 0, msg_type: 'Z'.charCodeAt(0) });
    expect(Buffer.concat(responseMessages(over)).equals(Buffer.concat(messages))).toBe(true);
    // Through YAML and back: the same bytes again.
    const mock: PostgresMock = { ...mocks[1]!, spec: { ...mocks[1]!.spec, postgresresponses: [over] } };
    const read = parseMockSet(serializeMockSet([mock]), 'big.yaml') as PostgresMock[];
    expect(Buffer.concat(responseMessages(read[0]!.spec.postgresresponses[0]!)).equals(Buffer.concat(messages))).toBe(true);
  });

  it("counts a Bind's parameter bytes: a request of more is kept as its bytes only", () => {
    const bind = (size: number) => parseFrontendBytes(Buffer.concat([serialize.bind({ values: [Buffer.alloc(size, 7)] }), serialize.sync()]));
    expect(buildRequestPacket(bind(1000), { length: 8 }).bind).toHaveLength(1);
    const big = buildRequestPacket(bind(100_000), { length: 8 });
    expect(big.bind).toBeUndefined();
    expect(big.header).toBeUndefined();
    expect(requestMessages(big).map((m) => m.raw)).toEqual(bind(100_000).map((m) => m.raw));
  });

  it("structures no more values than the recording's budget has left, all answers together", () => {
    const budget = new KeptBytes(undefined, 50_000);
    // 20,000 rows: about 40,000 values each; the second no longer fits.
    expect(buildResponsePacket(answer(20_000), { length: 8, budget }).data_row).toHaveLength(20_000);
    expect(budget.valuesLeft).toBeLessThan(10_000);
    expect(buildResponsePacket(answer(20_000), { length: 8, budget }).data_row).toBeUndefined();
    expect(buildResponsePacket(answer(100), { length: 8, budget }).data_row).toHaveLength(100);
  });
});

describe('value formats', () => {
  const hex = (h: string) => Buffer.from(h, 'hex');
  const text = (oid: number, h: string) => binaryToText(oid, hex(h))?.toString();

  it('turns binary values into the text PostgreSQL prints', () => {
    expect(text(OID.int4, '00000002')).toBe('2');
    expect(text(OID.int8, 'ffffffffffffffff')).toBe('-1');
    expect(text(OID.int2, '8000')).toBe('-32768');
    expect(text(OID.bool, '01')).toBe('t');
    expect(text(OID.float8, '3ff8000000000000')).toBe('1.5');
    expect(text(OID.float8, '4415af1d78b58c40')).toBe('1e+20');
    expect(text(OID.float4, '3dcccccd')).toBe('0.1');
    expect(text(OID.numeric, '0002000000000002007b0000')).toBe('123.00'); // 123.00: digits [123, 0], weight 0, dscale 2
    expect(text(OID.numeric, '00010000400000030001')).toBe('-1.000');
    expect(text(OID.numeric, '0001fffe000000050001')).toBe('0.00000');
    expect(text(OID.bytea, '00ff')).toBe('\\x00ff');
    expect(text(OID.uuid, '0123456789abcdef0123456789abcdef')).toBe('01234567-89ab-cdef-0123-456789abcdef');
    expect(text(OID.date, '00002300')).toBe('2024-07-13'); // 8960 days after 2000-01-01
    expect(text(OID.timestamp, '0000000000000001')).toBe('2000-01-01 00:00:00.000001');
    expect(text(OID.jsonb, '017b7d')).toBe('{}');
    expect(text(OID.int4, '0002')).toBeUndefined(); // wrong size
    expect(text(600, '00')).toBeUndefined(); // point: not handled
  });

  it('turns text into binary where it can, and says when it cannot', () => {
    expect(textToBinary(OID.int4, Buffer.from('2'))).toEqual(hex('00000002'));
    expect(textToBinary(OID.int8, Buffer.from('-1'))).toEqual(hex('ffffffffffffffff'));
    expect(textToBinary(OID.bool, Buffer.from('f'))).toEqual(hex('00'));
    expect(textToBinary(OID.bytea, Buffer.from('\\x00ff'))).toEqual(hex('00ff'));
    expect(textToBinary(OID.text, Buffer.from('hi'))).toEqual(Buffer.from('hi'));
    expect(textToBinary(OID.int4, Buffer.from('x'))).toBeUndefined();
    expect(textToBinary(OID.numeric, Buffer.from('1.5'))).toBeUndefined();
    expect(convertValue(OID.int4, Buffer.from('99999999999'), 0, 1)).toBeUndefined(); // out of range: no RangeError
  });

  it('compares parameters by their text when it has one', () => {
    expect(parameterKey(Buffer.from('123'), 0, 23)).toBe("'123'");
    expect(parameterKey(hex('0000007b'), 1, 23)).toBe("'123'");
    expect(parameterKey(hex('0000007b'), 1, undefined)).toBe('binary:0000007b');
    expect(parameterKey(null, 1, 23)).toBe('NULL');
  });
});
