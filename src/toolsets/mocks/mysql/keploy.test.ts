import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildGenericMock, messageOf, payloadBytes } from '../generic/keploy.js';
import { GenericIndex } from '../generic/matcher.js';
import { parseMockSet } from '../keploy/parse.js';
import { numberMocks, serializeMockSet } from '../keploy/serialize.js';
import type { GenericMock, Mock, YamlMap } from '../keploy/types.js';
import { splitPackets } from './wire.js';
import { MAX_MYSQL_SET_BYTES, MysqlSetTooLarge, mysqlAsGenerics, mysqlConnectionMocks, mysqlMockOf, toMysqlMock } from './keploy.js';
import { genericAndMysql } from '../generic/index.js';
import { TimeSlice } from '../../../core/wait.js';
import { replayersFor } from '../replayers.js';
import type { DebugkitCa } from '../tls/index.js';

/** A MySQL mock as one Generic mock of the same bytes (the whole exchange), or why it cannot be. */
function mysqlAsGeneric(m: Mock): GenericMock | string {
  const list = mysqlAsGenerics(m);
  if (typeof list === 'string') return list;
  if (list.length === 1) return list[0]!;
  const bytesOf = (which: 'genericrequests' | 'genericresponses') => Buffer.concat(list.map((g) => payloadBytes(g.spec[which] ?? [])));
  const g = list.at(-1)!;
  return {
    ...g,
    spec: {
      ...g.spec,
      genericrequests: [{ origin: 'client', message: [messageOf(bytesOf('genericrequests'))] }],
      genericresponses: [{ origin: 'server', message: [messageOf(bytesOf('genericresponses'))] }],
    },
  };
}

function packet(seq: number, payload: Buffer | string): Buffer {
  const p = typeof payload === 'string' ? Buffer.from(payload, 'latin1') : payload;
  const head = Buffer.alloc(4);
  head.writeUIntLE(p.length, 0, 3);
  head[3] = seq;
  return Buffer.concat([head, p]);
}

const at = new Date('2026-11-23T10:00:00.123Z');
const exchange = (request: Buffer, response: Buffer): GenericMock => buildGenericMock({ request, response, startedAt: at, endedAt: at, host: '127.0.0.1:3306', connectionId: 'conn-1' }, 0);

const greeting = packet(0, Buffer.concat([Buffer.from('\x0a10.11.18-MariaDB\0', 'latin1'), Buffer.alloc(40, 7), Buffer.from('mysql_native_password\0')]));
const login = packet(1, Buffer.concat([Buffer.alloc(32, 0), Buffer.from('app\0\x14'), Buffer.alloc(20), Buffer.from('shop\0')]));
// An OK whose info carries session-state bytes (control characters), as in Keploy's sample.
const ok = packet(2, Buffer.concat([Buffer.from([0, 0, 0, 2, 0x40, 0, 0]), Buffer.from('\0\v\x01\t\border_db', 'latin1')]));
const query = packet(0, '\x03SELECT name, qty FROM stock; SELECT COUNT(*) FROM stock');
const column = (seq: number, name: string) =>
  packet(
    seq,
    Buffer.concat([
      Buffer.from('\x03def\x04shop\x05stock\x05stock'),
      Buffer.from([name.length]),
      Buffer.from(name),
      Buffer.from([name.length]),
      Buffer.from(name),
      Buffer.from([0x0c, 0x21, 0, 0xa0, 0, 0, 0, 0xfd, 0, 0, 0, 0, 0]),
    ]),
  );
const eof = (seq: number, status: number) => packet(seq, Buffer.from([0xfe, 0, 0, status & 0xff, status >> 8]));
const results = Buffer.concat([
  packet(1, Buffer.from([2])),
  column(2, 'name'),
  column(3, 'qty'),
  eof(4, 0x0a),
  packet(5, '\x04plum\x011'),
  eof(6, 0x0a), // SERVER_MORE_RESULTS_EXISTS: a second result set follows
  packet(7, Buffer.from([1])),
  column(8, 'COUNT(*)'),
  eof(9, 2),
  packet(10, '\x011'),
  eof(11, 2),
]);
const prepare = packet(0, '\x16SELECT price FROM stock WHERE name = ?');
const prepareOk = Buffer.concat([packet(1, Buffer.from([0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0])), column(2, '?'), eof(3, 2), column(4, 'price'), eof(5, 2)]);
const execute = packet(0, Buffer.concat([Buffer.from([0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0xfd, 0, 4]), Buffer.from('kiwi')]));
const binaryRows = Buffer.concat([packet(1, Buffer.from([1])), column(2, 'price'), eof(3, 2), packet(4, Buffer.from([0, 0, 4, 0x32, 0x2e, 0x35, 0x30])), eof(5, 2)]);
const miss = exchange(packet(0, '\x03SELECT 1'), packet(1, Buffer.from([0xff, 0x51, 0x04, 0x23, 0x48, 0x59, 0x30, 0x30, 0x30, 0x6e, 0x6f])));

const generic = [exchange(Buffer.alloc(0), greeting), exchange(login, ok), exchange(query, results), exchange(prepare, prepareOk), exchange(execute, binaryRows), miss];

const types = (m: Mock, list: 'requests' | 'responses') => ((m.spec as YamlMap)[list] as YamlMap[]).map((p) => (p['header'] as YamlMap)['packet_type']);

describe("MySQL as Keploy's MySQL kind", () => {
  const mysql = numberMocks(generic.map(mysqlMockOf));

  it('writes each exchange as a MySQL mock with Keploy field names and packet types', () => {
    expect(mysql.every((m) => m.kind === 'MySQL')).toBe(true);
    expect(types(mysql[0]!, 'responses')).toEqual(['HandshakeV10']);
    expect(types(mysql[1]!, 'requests')).toEqual(['HandshakeResponse41']);
    expect(types(mysql[2]!, 'requests')).toEqual(['COM_QUERY']);
    expect(types(mysql[2]!, 'responses')).toEqual(['TextResultSet', 'TextResultSet']);
    expect(types(mysql[3]!, 'responses')).toEqual(['COM_STMT_PREPARE_OK']);
    expect(types(mysql[4]!, 'requests')).toEqual(['COM_STMT_EXECUTE']);
    expect(types(mysql[4]!, 'responses')).toEqual(['BinaryProtocolResultSet']);
    expect(types(mysql[5]!, 'responses')).toEqual(['ERR']);
    const message = (m: Mock, list: 'requests' | 'responses', i: number) => ((m.spec as YamlMap)[list] as YamlMap[])[i]!['message'];
    expect(message(mysql[1]!, 'responses', 0)).toEqual({ header: 0, affected_rows: 0, last_insert_id: 0, status_flags: 0x4002, warnings: 0, info: '\0\v\x01\t\border_db' });
    expect(message(mysql[5]!, 'responses', 0)).toEqual({ header: 255, error_code: 1105, sql_state_marker: '#', sql_state: 'HY000', error_message: 'no' });
    // Keploy's result-set fields: the EOF after the columns and the closing packet as whole packets (header included).
    const col = (seq: number, name: string) => ({
      header: { payload_length: 36 + 2 * name.length, sequence_id: seq },
      catalog: 'def',
      schema: 'shop',
      table: 'stock',
      org_table: 'stock',
      name,
      org_name: name,
      fixed_length: 12,
      character_set: 33,
      column_length: 160,
      type: 253,
      flags: 0,
      decimals: 0,
      filler: [0, 0],
      defaultValue: '',
    });
    expect(message(mysql[2]!, 'responses', 0)).toEqual({
      columnCount: 2,
      columns: [col(2, 'name'), col(3, 'qty')],
      eofAfterColumns: [5, 0, 0, 4, 0xfe, 0, 0, 0x0a, 0],
      rows: [
        {
          header: { payload_length: 7, sequence_id: 5 },
          values: [
            { type: 253, name: 'name', value: 'plum', unsigned: false },
            { type: 253, name: 'qty', value: '1', unsigned: false },
          ],
        },
      ],
      FinalResponse: { data: [5, 0, 0, 6, 0xfe, 0, 0, 0x0a, 0], type: 'EOF' },
    });
    expect(message(mysql[3]!, 'responses', 0)).toMatchObject({
      status: 0,
      statement_id: 1,
      num_columns: 1,
      num_params: 1,
      filler: 0,
      warning_available: true,
      warning_count: 0,
      meta_follows_available: false,
      eofAfterParamDefs: [5, 0, 0, 3, 0xfe, 0, 0, 2, 0],
    });
    expect(message(mysql[4]!, 'requests', 0)).toEqual({
      status: 0x17,
      statement_id: 1,
      flags: 0,
      iteration_count: 1,
      parameter_count: 1,
      null_bitmap: [0],
      new_params_bind_flag: 1,
      parameters: [{ type: 0xfd, unsigned: false, value: 'kiwi' }],
    });
    expect(message(mysql[4]!, 'responses', 0)).toMatchObject({ rows: [{ values: [{ type: 253, name: 'price', value: '2.50', unsigned: false }], okAfterRow: false, rowNullBuffer: [0] }] });
    // An OK whose info is not UTF-8 keeps its bytes.
    const odd = mysqlMockOf(exchange(packet(0, '\x03DO 1'), packet(1, Buffer.from([0, 0, 0, 2, 0, 0, 0, 0xc3]))));
    expect(message(odd, 'responses', 0)).toBe(Buffer.from([0, 0, 0, 2, 0, 0, 0, 0xc3]).toString('base64'));
    const text = serializeMockSet(mysql);
    expect(text).toContain(
      'kind: MySQL\nname: mock-2\nspec:\n    metadata:\n        connID: conn-1\n        host: 127.0.0.1:3306\n        requestOperation: COM_QUERY\n        responseOperation: TextResultSet\n        type: mocks\n    requests:\n        - header:\n            header:\n                payload_length: 56\n                sequence_id: 0\n            packet_type: COM_QUERY\n          message:\n            command: 3\n            query: SELECT name, qty FROM stock; SELECT COUNT(*) FROM stock\n',
    );
    expect(text).toContain('    created: 1795428000\n    reqtimestampmock: 2026-11-23T10:00:00.123Z\n    restimestampmock: 2026-11-23T10:00:00.123Z\nconnectionId: conn-1\n');
  });

  it("the connection phase as one mock, as Keploy writes it: config, greeting first in responses, labelled HandshakeV10 -> OK; commands are 'mocks'", () => {
    const phase = mysqlMockOf(exchange(login, Buffer.concat([greeting, ok])));
    const meta = (m: Mock) => (m.spec as YamlMap)['metadata'] as YamlMap;
    expect(meta(phase)).toMatchObject({ requestOperation: 'HandshakeV10', responseOperation: 'OK', type: 'config' });
    expect(types(phase, 'requests')).toEqual(['HandshakeResponse41']);
    expect(types(phase, 'responses')).toEqual(['HandshakeV10', 'OK']);
    expect(meta(mysql[2]!)).toMatchObject({ requestOperation: 'COM_QUERY', responseOperation: 'TextResultSet', type: 'mocks' });
    // Replay serves it step by step: the greeting on connect, then the login's answer.
    const steps = mysqlAsGenerics(phase);
    if (typeof steps === 'string') throw new Error(steps);
    expect(steps.map((g) => [payloadBytes(g.spec.genericrequests), payloadBytes(g.spec.genericresponses)])).toEqual([
      [Buffer.alloc(0), greeting],
      [login, ok],
    ]);
  });

  it('parse -> serialize of a MySQL set is byte-identical, and replay gets back the recorded bytes', () => {
    const text = serializeMockSet(mysql);
    const parsed = parseMockSet(text, 'mocks.yaml');
    expect(serializeMockSet(parsed)).toBe(text);
    parsed.forEach((m, i) => {
      const g = mysqlAsGeneric(m);
      if (typeof g === 'string') throw new Error(g);
      expect(payloadBytes(g.spec.genericrequests)).toEqual(payloadBytes(generic[i]!.spec.genericrequests));
      expect(payloadBytes(g.spec.genericresponses)).toEqual(payloadBytes(generic[i]!.spec.genericresponses));
      expect(g.spec.metadata['host']).toBe('127.0.0.1:3306');
    });
    // The replay index sees a MySQL server (authentication matched by sequence id).
    const index = new GenericIndex(parsed.map((m) => mysqlAsGeneric(m) as GenericMock));
    const view = index.forTarget({ host: '127.0.0.1', port: 3306 })!;
    expect(view.mysql).toBe(true);
    const m = view.match(packet(1, Buffer.alloc(60, 9)), false);
    expect(m.kind === 'match' && m.entry.name).toBe('mock-1');
  });

  it("writes a MySQL 8 greeting in Keploy's HandshakeV10 fields (a MariaDB one, with extended capabilities in the reserved bytes, as bytes)", () => {
    const scramble = Buffer.from('0123456789abcdefghij\0', 'latin1');
    const caps = 0xdfffffff;
    const fixed = Buffer.alloc(31);
    fixed.writeUInt32LE(9, 0);
    scramble.copy(fixed, 4, 0, 8);
    fixed.writeUInt16LE(caps & 0xffff, 13);
    fixed[15] = 255;
    fixed.writeUInt16LE(2, 16);
    fixed.writeUInt16LE(caps >>> 16, 18);
    fixed[20] = scramble.length;
    const payload = Buffer.concat([Buffer.from('\x0a8.0.43\0', 'latin1'), fixed, scramble.subarray(8), Buffer.from('caching_sha2_password\0')]);
    const m = mysqlMockOf(exchange(Buffer.alloc(0), packet(0, payload)));
    const message = ((m.spec as YamlMap)['responses'] as YamlMap[])[0]!['message'] as YamlMap;
    expect(message).toMatchObject({
      protocol_version: 10,
      server_version: '8.0.43',
      connection_id: 9,
      filler: 0,
      capability_flags: caps,
      character_set: 255,
      status_flags: 2,
      auth_plugin_name: 'caching_sha2_password',
    });
    expect(message['auth_plugin_data']).toEqual([...scramble]);
    const text = serializeMockSet([m]);
    expect(text).toContain('auth_plugin_data: [48, 49, 50,');
    const back = mysqlAsGeneric(parseMockSet(text, 'm.yaml')[0]!);
    if (typeof back === 'string') throw new Error(back);
    expect(payloadBytes(back.spec.genericresponses)).toEqual(packet(0, payload));
    expect(typeof ((mysql[0]!.spec as YamlMap)['responses'] as YamlMap[])[0]!['message']).toBe('string');
  });

  it("reads a COM_STMT_EXECUTE with the parameter count its connection's prepare gave (attack 18t M5)", () => {
    // Two parameters, a string then a DATETIME; read as ONE string parameter the bytes fit too
    // (its length byte is the DATETIME's type, 12): the bytes alone cannot tell which.
    const execute = packet(0, Buffer.from([0x17, 5, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0xfd, 0, 12, 0, 2, 0x61, 0x62, 7, 0xea, 0x07, 11, 23, 10, 0, 1]));
    const prepared = Buffer.concat([packet(1, Buffer.from([0, 5, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0])), column(2, 'a'), column(3, 'b'), eof(4, 2)]);
    const prepare = exchange(packet(0, '\x16INSERT INTO t VALUES (?, ?)'), prepared);
    const done = exchange(execute, packet(1, Buffer.from([0, 1, 0, 2, 0, 0, 0])));
    const requestOf = (m: Mock) => ((m.spec as YamlMap)['requests'] as YamlMap[])[0]!['message'];
    // Alone, the execute is kept as bytes; after its prepare on the same connection, it is read with 2 parameters.
    expect(typeof requestOf(mysqlMockOf(done))).toBe('string');
    const connection = mysqlConnectionMocks();
    expect(requestOf(connection(prepare))).toEqual({ command: 0x16, query: 'INSERT INTO t VALUES (?, ?)' });
    expect(requestOf(connection(done))).toMatchObject({
      statement_id: 5,
      parameter_count: 2,
      parameters: [
        { type: 0xfd, unsigned: false, value: 'ab' },
        { type: 12, unsigned: false, value: '2026-11-23 10:00:01' },
      ],
    });
    // Closed, the statement's count is forgotten.
    connection(exchange(packet(0, Buffer.from([0x19, 5, 0, 0, 0])), Buffer.alloc(0)));
    expect(typeof requestOf(connection(done))).toBe('string');
  });

  it('refuses a set whose MySQL mocks stand for more than MAX_MYSQL_SET_BYTES of packets, and a column without a name (attack 18t M2)', async () => {
    const header = (seq: number) => ({ header: { payload_length: 0, sequence_id: seq } });
    const resultMock = (name: string, columns: YamlMap[], rows: YamlMap[]): Mock => ({
      version: 'api.keploy.io/v1beta1',
      kind: 'MySQL',
      name,
      spec: {
        metadata: { type: 'mocks' },
        requests: [{ header: { ...header(0), packet_type: 'COM_QUERY' }, message: { command: 3, query: 'SELECT v FROM t' } }],
        responses: [{ header: { ...header(1), packet_type: 'TextResultSet' }, message: { columnCount: columns.length, columns, rows, FinalResponse: { data: [1, 0, 0, 4, 0xfe], type: 'EOF' } } }],
      },
    });
    // A definition of a header alone (the crafted sets': 2048 of them, each row then 2048 NULLs) is refused, naming the mock.
    const nameless = resultMock('nameless', [{ ...header(2) }], [{ ...header(3), values: [] }]);
    expect(mysqlAsGenerics(nameless)).toBe('MySQL mock nameless: responses[0]: a TextResultSet message: columns[0]: no name (a column definition needs its name, as Keploy writes it)');
    // A long name is written as !!binary of its UTF-8 (keploy/emit.ts QUOTED_STRING_MAX): a name all the same.
    const binaryName = resultMock('binary-name', [{ ...header(2), name: new Uint8Array(Buffer.from('x'.repeat(200))) }], []);
    expect(typeof mysqlAsGenerics(binaryName)).not.toBe('string');
    // Each mock within its own bound (10 rows of 100 KB), 80 of them past the set's.
    const value = 'v'.repeat(100 * 1024);
    const rows = Array.from({ length: 10 }, (_, i) => ({ ...header(3 + i), values: [{ type: 253, name: 'v', value, unsigned: false }] }));
    const big = Array.from({ length: 80 }, (_, i) => resultMock(`big-${i}`, [{ ...header(2), name: 'v', type: 253 }], rows));
    expect(typeof mysqlAsGenerics(big[0]!)).not.toBe('string');
    const warnings: string[] = [];
    const loading = genericAndMysql(big, new TimeSlice(10), (w) => warnings.push(w));
    await expect(loading).rejects.toThrow(MysqlSetTooLarge);
    await expect(loading).rejects.toThrow(
      /^the set's MySQL mocks stand for more than 64 MiB of packets \(reached at MySQL mock big-6\d: responses\[0\]\); a set may stand for at most that much: record fewer or smaller results, or split the set$/,
    );
    expect(MAX_MYSQL_SET_BYTES).toBe(64 * 1024 * 1024);
    // Within it, the same mocks load.
    expect((await genericAndMysql(big.slice(0, 60), new TimeSlice(10))).length).toBe(60);
  });

  it('keeps a result of many packets as a Generic mock, and one of many values packet by packet (attack 18t K4)', () => {
    // A text result of `rows` rows of `columns` one-byte values, as MariaDB sends it (EOF after the columns, EOF at the end).
    const result = (columns: number, rows: number) => {
      let seq = 1;
      const next = () => seq++ & 0xff;
      const packets = [packet(next(), Buffer.from([columns >= 251 ? 0xfc : columns, ...(columns >= 251 ? [columns & 0xff, columns >> 8] : [])]))];
      for (let c = 0; c < columns; c++) packets.push(column(next(), `c${c}`));
      packets.push(eof(next(), 2));
      const row = Buffer.concat(Array.from({ length: columns }, () => Buffer.from([1, 0x37])));
      for (let r = 0; r < rows; r++) packets.push(packet(next(), row));
      packets.push(eof(next(), 2));
      return exchange(packet(0, '\x03SELECT * FROM t'), Buffer.concat(packets));
    };
    const kinds = (m: Mock) => (m.kind === 'MySQL' ? types(m, 'responses') : m.kind);
    expect(kinds(mysqlMockOf(result(1, 4000)))).toEqual(['TextResultSet']);
    // One column of 5000 rows: a Generic mock (its bytes, one base64 string), not 5000 row entries.
    const many = mysqlMockOf(result(1, 5000));
    expect(many.kind).toBe('Generic');
    expect(((many as GenericMock).spec.genericresponses ?? []).flatMap((r) => r.message)).toHaveLength(1);
    // 1000 columns of 100 rows: 100,000 values, kept as its 1103 packets.
    const wide = types(mysqlMockOf(result(1000, 100)), 'responses');
    expect(wide).toHaveLength(1 + 1000 + 1 + 100 + 1);
    expect(wide.filter((t) => t === 'TextRow')).toHaveLength(100);
    expect(kinds(mysqlMockOf(result(1000, 65)))).toEqual(['TextResultSet']);
  });

  it('keeps bytes that are not whole packets (or a truncated exchange) as a Generic mock', () => {
    expect(toMysqlMock(exchange(Buffer.from('\x05\x00\x00'), ok))).toBeUndefined();
    expect(mysqlMockOf(exchange(Buffer.from('\x05\x00\x00'), ok)).kind).toBe('Generic');
  });

  it("round-trips Keploy's own MySQL sample (from Keploy's docs) and replays its structured connection phase step by step", async () => {
    const sample = readFileSync(path.join(import.meta.dirname, 'fixtures/keploy-docs-mysql.yaml'), 'utf8');
    const parsed = parseMockSet(sample, 'keploy-docs-mysql.yaml');
    expect(parsed).toHaveLength(1);
    expect(parsed[0]!.kind).toBe('MySQL');
    const written = serializeMockSet(parsed);
    expect(parseMockSet(written, 'again.yaml')).toEqual(parsed);
    expect(serializeMockSet(parseMockSet(written, 'again.yaml'))).toBe(written);
    expect(written).toContain('    reqtimestampmock: 2025-09-04T11:27:46.15043888Z\n');
    // The greeting on connect, then each client packet answered by the server packets after it.
    const steps = mysqlAsGenerics(parsed[0]!);
    if (typeof steps === 'string') throw new Error(steps);
    const seqs = (b: Buffer) => (splitPackets(b) ?? []).map((p) => p.seq);
    expect(steps.map((g) => [seqs(payloadBytes(g.spec.genericrequests)), seqs(payloadBytes(g.spec.genericresponses))])).toEqual([
      [[], [0]],
      [[1], []],
      [[2], [3]],
      [[4], [5]],
    ]);
    // AuthMoreData {status_tag: 1, data: PerformFullAuthentication} is 01 04; plain_password stays the recorded bytes.
    expect(payloadBytes(steps[2]!.spec.genericresponses)).toEqual(packet(3, Buffer.from([1, 4])));
    expect(payloadBytes(steps[3]!.spec.genericrequests)).toEqual(packet(4, 'password\0'));
    // Keploy 3's COM_QUERY with query attributes: the empty prefix comes back from the recorded length.
    const k3 = (length: number) =>
      ({
        ...parsed[0]!,
        spec: {
          requests: [
            {
              header: { header: { payload_length: length, sequence_id: 0 }, packet_type: 'COM_QUERY' },
              message: { command: 3, parameter_count: 0, null_bitmap: [], new_params_bind_flag: 0, parameters: [], query: 'SELECT 1' },
            },
          ],
          responses: [],
        },
      }) as Mock;
    const k3bytes = (length: number) => payloadBytes((mysqlAsGenerics(k3(length)) as GenericMock[])[0]!.spec.genericrequests);
    expect(k3bytes(11)).toEqual(packet(0, '\x03\x00\x01SELECT 1'));
    expect(k3bytes(9)).toEqual(packet(0, '\x03SELECT 1'));
    // Keploy writes the public key request of a full authentication as the word request_public_key.
    const keyRequest = {
      ...parsed[0]!,
      spec: { requests: [{ header: { header: { payload_length: 1, sequence_id: 3 }, packet_type: 'RequestPublicKey' }, message: 'request_public_key' }], responses: [] },
    } as Mock;
    expect(payloadBytes((mysqlAsGenerics(keyRequest) as GenericMock[])[0]!.spec.genericrequests)).toEqual(packet(3, Buffer.from([2])));
    const recordedKeyRequest = mysqlMockOf(exchange(packet(3, Buffer.from([2])), packet(4, '\x01-----BEGIN PUBLIC KEY-----\n')));
    expect(((recordedKeyRequest.spec as YamlMap)['requests'] as YamlMap[])[0]).toEqual({
      header: { header: { payload_length: 1, sequence_id: 3 }, packet_type: 'RequestPublicKey' },
      message: 'request_public_key',
    });
    expect(((recordedKeyRequest.spec as YamlMap)['responses'] as YamlMap[])[0]!['message']).toEqual({ status_tag: 1, data: '-----BEGIN PUBLIC KEY-----\n' });
    const warnings: string[] = [];
    await replayersFor(parsed, { ca: {} as DebugkitCa, onMiss: 'fail', missed: () => {}, recorded: () => {}, warn: (w) => warnings.push(w) });
    expect(warnings).toEqual([]);
    // Its greeting, in Keploy's fields, gives back a payload of the length Keploy recorded.
    const hsOnly = { ...parsed[0]!, spec: { ...(parsed[0]!.spec as YamlMap), requests: [], responses: [((parsed[0]!.spec as YamlMap)['responses'] as YamlMap[])[0]!] } } as Mock;
    const hs = mysqlAsGeneric(hsOnly);
    if (typeof hs === 'string') throw new Error(hs);
    const hsBytes = payloadBytes(hs.spec.genericresponses);
    expect([hsBytes.readUIntLE(0, 3), hsBytes.length]).toEqual([74, 78]);
    expect(hsBytes.subarray(4, 12).toString('latin1')).toBe('\x0a8.0.43\0');
    // Its OK packet, in Keploy's fields, gives back a payload of the length Keploy recorded.
    const spec = parsed[0]!.spec as YamlMap;
    const okOnly = { ...parsed[0]!, spec: { ...spec, requests: [], responses: [(spec['responses'] as YamlMap[])[2]!] } } as Mock;
    const g = mysqlAsGeneric(okOnly);
    if (typeof g === 'string') throw new Error(g);
    const bytes = payloadBytes(g.spec.genericresponses);
    expect(bytes.readUIntLE(0, 3)).toBe(20);
    expect(bytes.length).toBe(24);
    expect(bytes[3]).toBe(5);
  });
});
