import { compareKeys } from '../keploy/emit.js';
import { markStyle } from '../keploy/style.js';
import { KEPLOY_MOCK_VERSION, type GenericMock, type Mock, type PassThroughMock, type YamlMap, type YamlValue } from '../keploy/types.js';
import { META_HOST, META_SERVER_CLOSED, messageOf, payloadBytes } from '../generic/keploy.js';
import { authMessage, commandMessage, executeMessage, MAX_STRUCTURED_VALUES, structuredAnswer, type ValueBudget } from './decode.js';
import { isMap, structuredPackets, writeLenenc } from './structured.js';
import { isMysqlGreeting, lenencAt, packetOf, splitPackets, type MysqlPacket } from './wire.js';
import { exactUtf8 } from '../keploy/utf8.js';
import { MAX_MOCK_EXCHANGE_BYTES } from '../protocol.js';

/**
 * MySQL/MariaDB exchanges as Keploy's `MySQL` mock kind (Keploy `models.MySQLSpec`), one mock
 * per exchange: the whole connection phase in one (`type: config`: the greeting and the login's
 * server packets in `responses`, the client's in `requests`, as Keploy writes it), then each
 * command with its whole answer (`type: mocks`):
 *
 *   spec:
 *     metadata: {connID, host, requestOperation, responseOperation, type: mocks}
 *     requests:            # the client's packets, in order
 *       - header:
 *           header: {payload_length: 33, sequence_id: 0}
 *           packet_type: COM_QUERY
 *         message: {command: 3, query: SELECT 1}
 *     responses:           # the server's packets, in order
 *       - header: {header: {payload_length: 1, sequence_id: 1}, packet_type: TextResultSet}
 *         message: {columnCount: 1, columns: [...], eofAfterColumns: [...], rows: [...], FinalResponse: {data, type}}
 *     created: <unix seconds>
 *     reqtimestampmock / restimestampmock
 *
 * Field names are Keploy's (`header.header.payload_length`, `sequence_id`, `packet_type`,
 * `message`, lowercase timestamps, `connID`/`requestOperation`/`responseOperation` metadata).
 *
 * Messages, as Keploy writes them (each kept only when it gives back exactly the recorded bytes):
 * - COM_QUERY and COM_STMT_PREPARE `{command, query}`; COM_STMT_EXECUTE `{status, statement_id,
 *   flags, iteration_count, parameter_count, null_bitmap, new_params_bind_flag, parameters}`;
 * - HandshakeV10 (`protocol_version, server_version, connection_id, auth_plugin_data, filler,
 *   capability_flags, character_set, status_flags, auth_plugin_name`; a MariaDB greeting, with
 *   extended capabilities in the reserved bytes, stays bytes), OK (`header, affected_rows,
 *   last_insert_id, status_flags, warnings, info`), ERR (`header, error_code, sql_state_marker,
 *   sql_state, error_message`), EOF (`header, warnings, status_flags`);
 * - a result set as ONE entry `TextResultSet` / `BinaryProtocolResultSet` (`columnCount, columns,
 *   eofAfterColumns, rows, FinalResponse`), a prepare's answer as one `COM_STMT_PREPARE_OK` entry
 *   with its definitions (decode.ts records them, structured.ts turns them back into bytes).
 * Every other packet (or one whose fields would not give back its bytes) is one entry a packet,
 * labelled (HandshakeResponse41, AuthSwitchRequest, AuthMoreData, ColumnCount, TextRow, ...), its
 * message the payload as a base64 string, as Keploy itself writes a packet it does not model
 * (e.g. `plain_password`). Authentication secrets were zeroed before (mysql/wire.ts).
 * Additions Keploy ignores: `metadata.host` (`host:port` of the server), `metadata.serverClosed`,
 * and a column's `extended_metadata` (MariaDB's extended type info).
 *
 * Replay turns each MySQL mock back into bytes (Keploy's structured connection phase, result
 * sets and prepared statements included) and serves them with the MySQL-aware byte replayer
 * (generic/replayer.ts), which adapts the framing to the connecting client (CLIENT_DEPRECATE_EOF,
 * query attributes). A MySQL mock whose messages cannot be turned into bytes is reported, not
 * replayed.
 */

const COMMANDS: Record<number, string> = {
  0x01: 'COM_QUIT',
  0x02: 'COM_INIT_DB',
  0x03: 'COM_QUERY',
  0x0e: 'COM_PING',
  0x11: 'COM_CHANGE_USER',
  0x16: 'COM_STMT_PREPARE',
  0x17: 'COM_STMT_EXECUTE',
  0x18: 'COM_STMT_SEND_LONG_DATA',
  0x19: 'COM_STMT_CLOSE',
  0x1a: 'COM_STMT_RESET',
  0x1f: 'COM_RESET_CONNECTION',
};
/** Commands whose message is modelled as `{query}`. */
const QUERY_COMMANDS: Record<string, number> = { COM_QUERY: 0x03, COM_STMT_PREPARE: 0x16 };

function requestTypes(packets: MysqlPacket[], greeting: boolean): string[] {
  return packets.map((p, i) => {
    if (greeting) return 'unknown';
    if (p.seq === 0) return COMMANDS[p.payload[0] ?? -1] ?? `COM_0x${(p.payload[0] ?? 0).toString(16).padStart(2, '0')}`;
    if (p.seq === 1) return p.payload.length === 32 ? 'SSLRequest' : 'HandshakeResponse41';
    // Over TLS the HandshakeResponse41 follows the SSLRequest, as sequence 2.
    if (p.seq === 2 && i > 0 && packets[i - 1]!.seq === 1 && packets[i - 1]!.payload.length === 32) return 'HandshakeResponse41';
    // caching_sha2_password's request for the server's RSA key (Keploy: RequestPublicKey).
    return p.payload.length === 1 && p.payload[0] === 0x02 ? 'RequestPublicKey' : 'AuthSwitchResponse';
  });
}

const isEof = (p: Buffer) => p[0] === 0xfe && p.length < 9;

/** Labels of the server's packets, from the request they answer. */
function responseTypes(packets: MysqlPacket[], command: string | undefined): string[] {
  const out: string[] = [];
  if (!command) {
    // Greeting or authentication.
    for (const p of packets) {
      const b = p.payload;
      out.push(b[0] === 0x0a && p.seq === 0 ? 'HandshakeV10' : b[0] === 0x00 ? 'OK' : b[0] === 0xff ? 'ERR' : b[0] === 0xfe ? 'AuthSwitchRequest' : b[0] === 0x01 ? 'AuthMoreData' : 'unknown');
    }
    return out;
  }
  const rowType = command === 'COM_STMT_EXECUTE' ? 'BinaryRow' : 'TextRow';
  // Definition blocks still to come (a prepare's parameters then columns), each closed by an EOF
  // unless CLIENT_DEPRECATE_EOF was agreed; rows follow a result set's definitions.
  type State = 'start' | 'defs' | 'defsEof' | 'rows';
  let state = 'start' as State;
  let queue: number[] = [];
  let defs = 0;
  let rowsAfter = false;
  const nextBlock = () => {
    const n = queue.shift();
    if (n !== undefined) [state, defs] = ['defs', n];
    else state = rowsAfter ? 'rows' : 'start';
  };
  for (let i = 0; i < packets.length;) {
    const b = packets[i]!.payload;
    const now: State = state;
    if (now === 'start') {
      if (b[0] === 0xff) out.push('ERR');
      else if (command === 'COM_STMT_PREPARE' && b[0] === 0x00 && b.length >= 9) {
        out.push('COM_STMT_PREPARE_OK');
        queue = [b.readUInt16LE(7), b.readUInt16LE(5)].filter((n) => n > 0);
        rowsAfter = false;
        nextBlock();
      } else if (b[0] === 0x00) out.push('OK');
      else if (isEof(b)) out.push('EOF');
      else {
        out.push('ColumnCount');
        queue = [lenencAt(b, 0)?.[0] ?? 0].filter((n) => n > 0);
        rowsAfter = true;
        nextBlock();
      }
    } else if (now === 'defs') {
      out.push('ColumnDefinition41');
      if (--defs <= 0) state = 'defsEof';
    } else if (now === 'defsEof') {
      if (isEof(b)) out.push('EOF');
      nextBlock();
      if (!isEof(b)) continue; // no EOF: this packet belongs to what follows
    } else {
      if (b[0] === 0xff) [out[out.length], state] = ['ERR', 'start'];
      else if (b[0] === 0xfe && b.length < 0xffffff) [out[out.length], state] = [isEof(b) ? 'EOF' : 'OK', 'start'];
      else out.push(rowType);
    }
    i++;
  }
  return out;
}

/** Text that gives back exactly these bytes, else undefined. */
const text = exactUtf8;

const u16 = (v: number) => Buffer.from([v & 0xff, (v >> 8) & 0xff]);
const num = (m: YamlMap, k: string) => (typeof m[k] === 'number' && Number.isSafeInteger(m[k]) && (m[k] as number) >= 0 ? (m[k] as number) : undefined);
const str = (m: YamlMap, k: string) => (typeof m[k] === 'string' ? (m[k] as string) : m[k] === undefined || m[k] === null ? '' : undefined);

/** Keploy's field names for the packets modelled here (OK, ERR, EOF), read from a payload. */
function decodeMessage(type: string, b: Buffer): YamlMap | undefined {
  if (type === 'OK') {
    const a = lenencAt(b, 1);
    const l = a && lenencAt(b, a[1]);
    if (!a || !l || l[1] + 4 > b.length) return undefined;
    const info = text(b.subarray(l[1] + 4));
    if (info === undefined) return undefined;
    return { header: b[0]!, affected_rows: a[0], last_insert_id: l[0], status_flags: b.readUInt16LE(l[1]), warnings: b.readUInt16LE(l[1] + 2), info };
  }
  if (type === 'ERR') {
    if (b.length < 9 || b[3] !== 0x23) return undefined;
    const sqlState = text(b.subarray(4, 9));
    const message = text(b.subarray(9));
    if (sqlState === undefined || message === undefined) return undefined;
    return { header: b[0]!, error_code: b.readUInt16LE(1), sql_state_marker: '#', sql_state: sqlState, error_message: message };
  }
  if (type === 'EOF' && b.length === 5) return { header: b[0]!, warnings: b.readUInt16LE(1), status_flags: b.readUInt16LE(3) };
  if (type === 'HandshakeV10') {
    // protocol 10, version NUL, connection id, scramble part 1 (8), filler, capabilities (low),
    // charset, status, capabilities (high), scramble length, 10 reserved bytes, scramble part 2,
    // plugin name NUL. MariaDB's extended capabilities in the reserved bytes do not fit Keploy's
    // fields: such a greeting stays bytes.
    const end = b.indexOf(0, 1);
    if (b[0] !== 0x0a || end < 0 || b.length < end + 1 + 31) return undefined;
    const version = text(b.subarray(1, end));
    let pos = end + 1;
    const connectionId = b.readUInt32LE(pos);
    const part1 = b.subarray(pos + 4, pos + 12);
    const filler = b[pos + 12]!;
    const capabilities = (b.readUInt16LE(pos + 13) | (b.readUInt16LE(pos + 18) << 16)) >>> 0;
    const charset = b[pos + 15]!;
    const status = b.readUInt16LE(pos + 16);
    const dataLength = b[pos + 20]!;
    pos += 31;
    const part2Length = Math.max(13, dataLength - 8);
    const nameEnd = b.indexOf(0, pos + part2Length);
    if (version === undefined || pos + part2Length > b.length || nameEnd !== b.length - 1) return undefined;
    const name = text(b.subarray(pos + part2Length, nameEnd));
    if (name === undefined) return undefined;
    const data = markStyle([...part1, ...b.subarray(pos, pos + part2Length)], true);
    return {
      protocol_version: 10,
      server_version: version,
      connection_id: connectionId,
      auth_plugin_data: data,
      filler,
      capability_flags: capabilities,
      character_set: charset,
      status_flags: status,
      auth_plugin_name: name,
    };
  }
  return undefined;
}

/** The payload of a modelled message, or undefined when its fields do not make one. */
function encodeMessage(type: string, m: YamlMap): Buffer | undefined {
  const header = num(m, 'header');
  if (type === 'OK') {
    const [a, l, s, w, info] = [num(m, 'affected_rows') ?? 0, num(m, 'last_insert_id') ?? 0, num(m, 'status_flags') ?? 0, num(m, 'warnings') ?? 0, str(m, 'info')];
    if (info === undefined) return undefined;
    return Buffer.concat([Buffer.from([header ?? 0]), writeLenenc(a), writeLenenc(l), u16(s), u16(w), Buffer.from(info, 'utf8')]);
  }
  if (type === 'ERR') {
    const [code, marker, state, message] = [num(m, 'error_code') ?? 0, str(m, 'sql_state_marker'), str(m, 'sql_state'), str(m, 'error_message')];
    if (marker === undefined || state === undefined || message === undefined) return undefined;
    return Buffer.concat([Buffer.from([header ?? 0xff]), u16(code), Buffer.from(marker + state, 'utf8'), Buffer.from(message, 'utf8')]);
  }
  if (type === 'EOF') return Buffer.concat([Buffer.from([header ?? 0xfe]), u16(num(m, 'warnings') ?? 0), u16(num(m, 'status_flags') ?? 0)]);
  if (type === 'HandshakeV10') {
    const [version, name, data] = [str(m, 'server_version'), str(m, 'auth_plugin_name'), m['auth_plugin_data']];
    if (version === undefined || name === undefined || !Array.isArray(data) || data.length < 8) return undefined;
    if (!data.every((x) => typeof x === 'number' && Number.isInteger(x) && x >= 0 && x < 256)) return undefined;
    const scramble = Buffer.from(data as number[]);
    const caps = num(m, 'capability_flags') ?? 0;
    const fixed = Buffer.alloc(4);
    fixed.writeUInt32LE(num(m, 'connection_id') ?? 0);
    return Buffer.concat([
      Buffer.from([num(m, 'protocol_version') ?? 10]),
      Buffer.from(version + '\0', 'utf8'),
      fixed,
      scramble.subarray(0, 8),
      Buffer.from([num(m, 'filler') ?? 0]),
      u16(caps & 0xffff),
      Buffer.from([num(m, 'character_set') ?? 0]),
      u16(num(m, 'status_flags') ?? 0),
      u16(caps >>> 16),
      Buffer.from([scramble.length]),
      Buffer.alloc(10),
      scramble.subarray(8),
      Buffer.from(name + '\0', 'utf8'),
    ]);
  }
  return undefined;
}

/** `parameterCount`: a COM_STMT_EXECUTE's, from its statement's COM_STMT_PREPARE_OK when that was seen; `values`: the exchange's (decode.ts). */
function packetEntry(p: MysqlPacket, type: string, parameterCount?: number, values?: ValueBudget): YamlMap {
  const header: YamlMap = { header: { payload_length: p.payload.length, sequence_id: p.seq }, packet_type: type };
  const code = QUERY_COMMANDS[type];
  if (code !== undefined && p.payload[0] === code) {
    const query = text(p.payload.subarray(1));
    if (query !== undefined) return { header, message: { command: code, query } };
  }
  if (type === 'RequestPublicKey' && p.payload.length === 1 && p.payload[0] === 0x02) return { header, message: 'request_public_key' };
  const structured = type === 'COM_STMT_EXECUTE' ? executeMessage(p, parameterCount, values) : type.startsWith('COM_') ? commandMessage(type, p) : authMessage(type, p);
  if (structured) return { header, message: structured };
  // Modelled only when the fields give back exactly these bytes.
  const message = decodeMessage(type, p.payload);
  if (message && encodeMessage(type, message)?.equals(p.payload)) return { header, message };
  return { header, message: p.payload.toString('base64') };
}

export interface MysqlExchange {
  request: Buffer;
  response: Buffer;
}

/**
 * An exchange of more packets than this stays a Generic mock (its bytes as base64), read as MySQL
 * on replay all the same. Each packet is a few objects built on the loop while recording, and
 * several lines of YAML written (a row of one column, about 150 bytes): 3 answers of 100,000 rows
 * held the loop 1.4 s and the set was never written, its thread past 768 MB (attack 18t K4).
 */
export const MAX_STRUCTURED_PACKETS = 4096;

/**
 * A connection's prepared statements: statement id to parameter count, as COM_STMT_PREPARE_OK
 * said, for reading COM_STMT_EXECUTE (its count is not in the packet). At most
 * MAX_STATEMENTS; past it a statement's executions are read by guessing (decode.ts).
 */
export type MysqlStatements = Map<number, number>;
/** MySQL's own ceiling on prepared statements (max_prepared_stmt_count is at most 4,194,304) is far above what one connection needs to be read well. */
const MAX_STATEMENTS = 65536;

/**
 * What this exchange tells of the connection's statements (prepared, closed, all reset). A
 * prepare's parameter count is taken only when its answer holds that many parameter definitions:
 * a bare COM_STMT_PREPARE_OK saying 65,535 had each later execute built as 65,535 parameters
 * (attack 18u P3).
 */
function noteStatements(statements: MysqlStatements, command: string | undefined, request: MysqlPacket | undefined, response: readonly MysqlPacket[]): void {
  const id = request && request.payload.length >= 5 ? request.payload.readUInt32LE(1) : undefined;
  const ok = response[0]?.payload;
  if (command === 'COM_STMT_PREPARE' && ok && ok[0] === 0x00 && ok.length >= 9) {
    const prepared = ok.readUInt32LE(1);
    const params = preparedParameters(ok, response);
    if (params === undefined) statements.delete(prepared);
    else if (statements.size < MAX_STATEMENTS || statements.has(prepared)) statements.set(prepared, params);
  } else if (command === 'COM_STMT_CLOSE' && id !== undefined) statements.delete(id);
  else if (command === 'COM_RESET_CONNECTION' || command === 'COM_CHANGE_USER') statements.clear();
}

/**
 * A COM_STMT_PREPARE_OK's parameter count, when the packets after it are that many whole column
 * definitions (then an EOF, the column definitions, or the end). Packets were counted (attack 18v
 * Q3: 65,535 one-byte packets passed), then only their opening "def" (attack 18x U3: 61,000
 * 13-byte packets `03 'def'` and zeros passed, and each execute was built with 61,000 parameters).
 * The count is at most what one exchange may build as values (MAX_STRUCTURED_VALUES): an
 * execute's parameters draw on that budget anyway.
 */
function preparedParameters(ok: Buffer, response: readonly MysqlPacket[]): number | undefined {
  const [columns, params] = [ok.readUInt16LE(5), ok.readUInt16LE(7)];
  if (params > MAX_STRUCTURED_VALUES) return undefined;
  let definitions = 0;
  while (definitions <= params + columns && 1 + definitions < response.length && isColumnDefinition(response[1 + definitions]!.payload)) definitions++;
  // The parameters' definitions end at an EOF or the answer's end; without EOFs (CLIENT_DEPRECATE_EOF) the columns' follow at once.
  const next = response[1 + definitions]?.payload;
  const ends = next === undefined || (next[0] === 0xfe && next.length < 9);
  return (definitions === params && ends) || (columns > 0 && definitions === params + columns) ? params : undefined;
}

/**
 * Whether a payload is a whole column definition (Protocol::ColumnDefinition41) as a prepare's
 * answer holds it: the catalog "def", then schema, table, org_table, name and org_name as
 * length-encoded strings (MariaDB may add its extended type info as one more), then the length
 * of the fixed fields, 0x0c, and those 12 bytes (character set, length, type, flags, decimals,
 * filler), which end the packet.
 */
function isColumnDefinition(payload: Buffer): boolean {
  if (payload[0] !== 0x03 || payload[1] !== 0x64 || payload[2] !== 0x65 || payload[3] !== 0x66) return false;
  let pos = 4;
  const string = () => {
    const n = lenencAt(payload, pos);
    if (!n || n[1] + n[0] > payload.length) return false;
    pos = n[1] + n[0];
    return true;
  };
  for (let i = 0; i < 5; i++) if (!string()) return false;
  const fixedFieldsEnd = () => payload[pos] === 0x0c && pos + 13 === payload.length;
  return fixedFieldsEnd() || (string() && fixedFieldsEnd());
}

/**
 * Values (result-set values and execute parameters) one recording may build as objects in all,
 * over its connections: each is an object on the loop and a few lines of YAML, and a set of
 * 5 x 65,535 could not be written in the mock-set thread's 768 MB (attack 18u P3). Past it an
 * exchange stays a Generic mock (its bytes), replayed the same.
 */
export const MAX_RECORDING_VALUES = 2 * MAX_STRUCTURED_VALUES;

/**
 * The Generic mock of a MySQL exchange as a Keploy MySQL mock, or undefined when its bytes are
 * not whole packets, or its values are more than MAX_STRUCTURED_VALUES or what is left of
 * `recording` (then the Generic mock is kept). `created` is the response time.
 * `statements`: the connection's prepared statements so far (updated with this exchange's).
 */
export function toMysqlMock(g: GenericMock, statements?: MysqlStatements, recording?: ValueBudget): PassThroughMock | undefined {
  const meta = g.spec.metadata ?? {};
  if (meta['truncated'] === 'true') return undefined;
  const request = payloadBytes(g.spec.genericrequests ?? []);
  const response = payloadBytes(g.spec.genericresponses ?? []);
  const reqPackets = splitPackets(request);
  const resPackets = splitPackets(response);
  if (!reqPackets || !resPackets) return undefined;
  const greeting = reqPackets.length === 0;
  const reqTypes = requestTypes(reqPackets, greeting);
  const command = reqPackets.length > 0 && reqPackets[0]!.seq === 0 ? reqTypes[0] : undefined;
  const executed = command === 'COM_STMT_EXECUTE' && reqPackets[0]!.payload.length >= 5 ? statements?.get(reqPackets[0]!.payload.readUInt32LE(1)) : undefined;
  if (statements) noteStatements(statements, command, reqPackets[0], resPackets);
  if (reqPackets.length + resPackets.length > MAX_STRUCTURED_PACKETS) return undefined;
  if (recording && recording.left <= 0) return undefined;
  const values = { left: Math.min(MAX_STRUCTURED_VALUES, recording?.left ?? MAX_STRUCTURED_VALUES) };
  const budgeted = values.left;
  const resTypes = responseTypes(resPackets, command);
  const single = (p: MysqlPacket) => packetEntry(p, p.payload[0] === 0x00 ? 'OK' : p.payload[0] === 0xff ? 'ERR' : p.payload.length < 9 ? 'EOF' : 'OK');
  const responses = structuredAnswer(command, resPackets, single, values) ?? resPackets.map((p, i) => packetEntry(p, resTypes[i]!));
  const typeOf = (entry: YamlMap | undefined) => ((entry?.['header'] as YamlMap | undefined)?.['packet_type'] as string | undefined) ?? '';
  // As Keploy labels them: the connection phase (its config mock, the greeting first) by the
  // greeting and the login's last answer; a command by itself and its answer's first packet.
  const login = command === undefined;
  const metadata: Record<string, string> = {
    connID: g.connectionId ?? '0',
    requestOperation: greeting || (login && typeOf(responses[0]) === 'HandshakeV10') ? 'HandshakeV10' : (reqTypes[0] ?? ''),
    responseOperation: typeOf(login ? responses[responses.length - 1] : responses[0]),
    type: login ? 'config' : 'mocks',
  };
  if (meta[META_HOST]) metadata[META_HOST] = meta[META_HOST];
  if (meta[META_SERVER_CLOSED]) metadata[META_SERVER_CLOSED] = meta[META_SERVER_CLOSED];
  const sorted: YamlMap = {};
  for (const k of Object.keys(metadata).sort(compareKeys)) sorted[k] = metadata[k]!;
  const created = Math.floor(Date.parse(g.spec.restimestampmock) / 1000);
  const spec: YamlMap = {
    metadata: sorted,
    requests: reqPackets.map((p, i) => packetEntry(p, reqTypes[i]!, i === 0 ? executed : undefined, values)),
    responses,
    ...(Number.isFinite(created) && created > 0 ? { created } : {}),
    reqtimestampmock: g.spec.reqtimestampmock,
    restimestampmock: g.spec.restimestampmock,
  };
  // An execute's parameters past what was left: the whole exchange as its bytes.
  if (values.left < 0) return undefined;
  if (recording) recording.left -= budgeted - values.left;
  const mock: PassThroughMock = { version: KEPLOY_MOCK_VERSION, kind: 'MySQL', name: g.name, spec };
  if (g.connectionId) mock.connectionId = g.connectionId;
  return mock;
}

/** One packet entry of a MySQL mock: its sequence id, packet type and bytes (whole packets), or a reason it has none. */
interface EntryBytes {
  seq: number;
  type: string;
  bytes: Buffer;
}

function entryBytes(entry: YamlValue | undefined, where: string, maxBytes: number): EntryBytes | string {
  if (!isMap(entry)) return `${where}: not a mapping`;
  const header = isMap(entry['header']) ? entry['header'] : undefined;
  const inner = header && isMap(header['header']) ? header['header'] : undefined;
  const seq = inner?.['sequence_id'];
  if (typeof seq !== 'number' || !Number.isInteger(seq) || seq < 0 || seq > 255) return `${where}: header.header.sequence_id is not 0-255`;
  const type = typeof header?.['packet_type'] === 'string' ? header['packet_type'] : '';
  const message = entry['message'];
  const whole = (payload: Buffer): EntryBytes => {
    const header4 = Buffer.alloc(4);
    header4.writeUIntLE(payload.length, 0, 3);
    header4[3] = seq;
    return { seq, type, bytes: Buffer.concat([header4, payload]) };
  };
  // Keploy writes caching_sha2_password's public key request as this word.
  if (type === 'RequestPublicKey' && message === 'request_public_key') return whole(Buffer.from([0x02]));
  if (typeof message === 'string') return whole(Buffer.from(message, 'base64'));
  if (message instanceof Uint8Array) return whole(Buffer.from(message));
  if (!isMap(message)) return `${where}: a ${type || 'packet'} message that is neither a mapping nor base64 text`;
  const modelled = encodeMessage(type, message);
  if (modelled) return whole(modelled);
  const structured = structuredPackets(type, seq, message, maxBytes);
  if (typeof structured === 'string') return `${where}: ${structured}`;
  if (structured && type === 'COM_QUERY' && message['parameter_count'] === 0 && inner?.['payload_length'] === structured.length - 4 + 2) {
    // Keploy 3 writes a query sent with CLIENT_QUERY_ATTRIBUTES as {parameter_count: 0, ..., query}
    // without the empty attributes prefix (00 01) the packet had: its recorded length tells.
    return { seq, type, bytes: packetOf(seq, Buffer.concat([structured.subarray(4, 5), Buffer.from([0, 1]), structured.subarray(5)])) };
  }
  if (structured) return { seq, type, bytes: structured };
  return `${where}: a structured ${type || 'packet'} message of a type debugkit does not know (known: ${KNOWN_TYPES})`;
}

const KNOWN_TYPES =
  'HandshakeV10, HandshakeResponse41, SSLRequest, AuthSwitchRequest, AuthSwitchResponse, AuthMoreData, OK, ERR, EOF, COM_* commands, COM_STMT_PREPARE_OK, TextResultSet, BinaryProtocolResultSet; any packet as base64';

/**
 * What a whole set's MySQL mocks may turn into for replay, packets counted: a mock is bounded to
 * what a recording keeps of one exchange (MAX_MOCK_EXCHANGE_BYTES), but a set of 500 mocks of
 * 13 KB of YAML each stood for 1 MiB each, about 900 MB held at load (attack 18t M2). Twice the
 * largest set parsed (keploy/scan.ts PARSE_MAX_BYTES): packets recorded take no more bytes than
 * their YAML, or about 4/3 of them as base64.
 */
export const MAX_MYSQL_SET_BYTES = 64 * 1024 * 1024;

/** A set whose MySQL mocks come to more than MAX_MYSQL_SET_BYTES: the whole set is refused, not a mock of it left out. */
export class MysqlSetTooLarge extends Error {}

/** What is left of a set's MySQL bytes (`mysqlAsGenerics` takes from it). */
export const mysqlSetBudget = (): { left: number } => ({ left: MAX_MYSQL_SET_BYTES });

/**
 * The bytes of a list of entries, taken from `budget` (what is left of the mock's): a mock's
 * structured entries stand for more bytes than their text (a row entry of a few bytes for a NULL
 * per column), so what one mock becomes is bounded as it is built, by what a recording keeps of one
 * exchange (attack 18r K3). `set`: what is left of the whole set's, taken from too.
 */
function listBytes(list: YamlValue | undefined, where: string, budget: { left: number }, set?: { left: number }): EntryBytes[] | string {
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) return `${where}: not a list`;
  const out: EntryBytes[] = [];
  for (let i = 0; i < list.length; i++) {
    const b = entryBytes(list[i], `${where}[${i}]`, budget.left);
    if (typeof b === 'string') return b;
    if ((budget.left -= b.bytes.length) < 0) return `${where}[${i}]: the mock's packets come to more than ${MAX_MOCK_EXCHANGE_BYTES} bytes`;
    if (set && (set.left -= b.bytes.length) < 0) {
      throw new MysqlSetTooLarge(
        `the set's MySQL mocks stand for more than ${MAX_MYSQL_SET_BYTES / 1024 / 1024} MiB of packets (reached at ${where}[${i}]); a set may stand for at most that much: record fewer or smaller results, or split the set`,
      );
    }
    out.push(b);
  }
  return out;
}

/**
 * A MySQL mock as the Generic mocks of the same exchanges (for replay), or why it cannot be.
 *
 * Keploy writes the whole connection phase as one mock (the greeting, the client's
 * HandshakeResponse41 and every authentication step, with the server's answers); debugkit
 * replays the connection phase step by step: the greeting becomes a mock of its own (sent on
 * connect) and each client packet of the authentication is answered by the server packets that
 * follow it in sequence-id order. A command mock stays one exchange. `set`: what is left of the
 * whole set's bytes (mysqlSetBudget); past it MysqlSetTooLarge is thrown.
 */
export function mysqlAsGenerics(m: Mock, set?: { left: number }): GenericMock[] | string {
  if (m.kind !== 'MySQL') return `mock ${m.name} is not a MySQL mock`;
  const spec = m.spec as YamlMap;
  const budget = { left: MAX_MOCK_EXCHANGE_BYTES };
  const requests = listBytes(spec['requests'], `MySQL mock ${m.name}: requests`, budget, set);
  if (typeof requests === 'string') return requests;
  const responses = listBytes(spec['responses'], `MySQL mock ${m.name}: responses`, budget, set);
  if (typeof responses === 'string') return responses;
  const meta = isMap(spec['metadata']) ? spec['metadata'] : {};
  const metadata: Record<string, string> = { type: 'config' };
  for (const key of [META_HOST, META_SERVER_CLOSED]) if (typeof meta[key] === 'string') metadata[key] = meta[key] as string;
  const time = (k: string) => (typeof spec[k] === 'string' ? (spec[k] as string) : '0001-01-01T00:00:00Z');
  const generic = (request: Buffer, response: Buffer, last: boolean): GenericMock => {
    const md = { ...metadata };
    if (!last) delete md[META_SERVER_CLOSED];
    const g: GenericMock = {
      version: m.version,
      kind: 'Generic',
      name: m.name,
      spec: {
        metadata: md,
        genericrequests: request.length > 0 ? [{ origin: 'client', message: [messageOf(request)] }] : [],
        genericresponses: response.length > 0 ? [{ origin: 'server', message: [messageOf(response)] }] : [],
        reqtimestampmock: time('reqtimestampmock'),
        restimestampmock: time('restimestampmock'),
      },
    };
    if (m.connectionId) g.connectionId = m.connectionId;
    return g;
  };
  const joined = (list: EntryBytes[]) => Buffer.concat(list.map((e) => e.bytes));
  const greetingFirst = responses.length > 0 && responses[0]!.seq === 0 && isMysqlGreeting(responses[0]!.bytes);
  // A connection phase without its greeting (sets debugkit wrote earlier: the greeting a mock of its own,
  // then the SSLRequest and the HandshakeResponse41 sent inside TLS in one mock) is split too.
  if (requests.length === 0 || requests[0]!.seq === 0 || (!greetingFirst && requests.length === 1)) return [generic(joined(requests), joined(responses), true)];
  // The connection phase, step by step.
  const out = greetingFirst ? [generic(Buffer.alloc(0), responses[0]!.bytes, false)] : [];
  const rest = greetingFirst ? responses.slice(1) : responses;
  requests.forEach((req, i) => {
    const next = requests[i + 1]?.seq ?? 256;
    const answer = rest.filter((r) => r.seq > req.seq && r.seq < next);
    out.push(generic(req.bytes, joined(answer), i === requests.length - 1));
  });
  return out;
}

/** The MySQL mock of a recorded exchange, or the Generic one itself when its bytes are not whole packets (or were truncated). */
export function mysqlMockOf(g: GenericMock): Mock {
  return toMysqlMock(g) ?? g;
}

/** Each recording's values left (MAX_RECORDING_VALUES), by the object that stands for the recording. */
const recordingValues = new WeakMap<object, ValueBudget>();

/**
 * `mysqlMockOf` for one connection's exchanges in order: a COM_STMT_EXECUTE is read with the
 * parameter count its prepare gave. `recording`: an object the recording's connections share
 * (its options), whose MAX_RECORDING_VALUES they take from together.
 */
export function mysqlConnectionMocks(recording: object = {}): (g: GenericMock) => Mock {
  const statements: MysqlStatements = new Map();
  let values = recordingValues.get(recording);
  if (!values) recordingValues.set(recording, (values = { left: MAX_RECORDING_VALUES }));
  const left = values;
  return (g) => toMysqlMock(g, statements, left) ?? g;
}
