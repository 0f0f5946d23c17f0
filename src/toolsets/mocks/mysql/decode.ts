import { lenencAt, packetOf, type MysqlPacket } from './wire.js';
import { markStyle } from '../keploy/style.js';
import type { YamlMap, YamlValue } from '../keploy/types.js';
import { structuredPackets } from './structured.js';
import { exactUtf8 } from '../keploy/utf8.js';

/**
 * Recording: the packets of an answer in Keploy's structured fields (the names are listed in
 * structured.ts): each result set as one `TextResultSet` / `BinaryProtocolResultSet` entry, a
 * prepare's answer as one `COM_STMT_PREPARE_OK` entry, COM_STMT_EXECUTE with its parameters.
 * Every entry is kept only when structured.ts turns it back into exactly the recorded bytes;
 * otherwise the caller keeps the packets one by one, as base64.
 */

const whole = (p: MysqlPacket) => packetOf(p.seq, p.payload);
const byteList = (b: Buffer): number[] => [...b];
/** Text when the bytes are UTF-8, else the bytes (written as !!binary). */
const textOrBytes = (b: Buffer): string | Uint8Array => exactUtf8(b) ?? new Uint8Array(b);
const headerOf = (p: MysqlPacket): YamlMap => ({ payload_length: p.payload.length, sequence_id: p.seq });

interface Column {
  map: YamlMap;
  type: number;
  flags: number;
  name: string;
}

function lenencString(b: Buffer, pos: number): [Buffer, number] | undefined {
  const n = lenencAt(b, pos);
  if (!n || n[1] + n[0] > b.length) return undefined;
  return [b.subarray(n[1], n[1] + n[0]), n[1] + n[0]];
}

function column(p: MysqlPacket): Column | undefined {
  const b = p.payload;
  const strings: string[] = [];
  let pos = 0;
  for (let i = 0; i < 6; i++) {
    const s = lenencString(b, pos);
    if (!s) return undefined;
    const t = textOrBytes(s[0]);
    if (typeof t !== 'string') return undefined;
    strings.push(t);
    pos = s[1];
  }
  // MariaDB with MARIADB_CLIENT_EXTENDED_METADATA (mysql2 asks for it): a 7th string, the extended
  // type info, before the fixed fields (0x0c). Kept as `extended_metadata`, which Keploy ignores.
  let extended: string | undefined;
  if (b[pos] !== 0x0c) {
    const s = lenencString(b, pos);
    const t = s && b[s[1]] === 0x0c ? textOrBytes(s[0]) : undefined;
    if (typeof t !== 'string') return undefined;
    [extended, pos] = [t, s![1]];
  }
  if (pos + 13 > b.length) return undefined;
  let defaultValue = '';
  if (pos + 13 < b.length) {
    const s = lenencString(b, pos + 13);
    const t = s && s[1] === b.length ? textOrBytes(s[0]) : undefined;
    if (typeof t !== 'string') return undefined;
    defaultValue = t;
  }
  const [catalog, schema, table, orgTable, name, orgName] = strings as [string, string, string, string, string, string];
  const map: YamlMap = {
    header: headerOf(p),
    catalog,
    schema,
    table,
    org_table: orgTable,
    name,
    org_name: orgName,
    ...(extended !== undefined ? { extended_metadata: extended } : {}),
    fixed_length: b[pos]!,
    character_set: b.readUInt16LE(pos + 1),
    column_length: b.readUInt32LE(pos + 3),
    type: b[pos + 7]!,
    flags: b.readUInt16LE(pos + 8),
    decimals: b[pos + 10]!,
    filler: byteList(b.subarray(pos + 11, pos + 13)),
    defaultValue,
  };
  return { map, type: b[pos + 7]!, flags: b.readUInt16LE(pos + 8), name };
}

const INT_SIZES: Record<number, number> = { 1: 1, 2: 2, 13: 2, 3: 4, 9: 4, 8: 8 };
/** The lengths a binary DATE/DATETIME/TIMESTAMP, and a TIME, may have. */
const [DATE_LENGTHS, TIME_LENGTHS] = [
  [0, 4, 7, 11],
  [0, 8, 12],
];
const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** One binary-protocol value at `pos`: [value, position after], or undefined. */
export function binaryValueAt(type: number, unsigned: boolean, b: Buffer, pos: number): [YamlValue, number] | undefined {
  const size = INT_SIZES[type];
  if (size !== undefined) {
    if (pos + size > b.length) return undefined;
    let v = 0n;
    for (let i = size - 1; i >= 0; i--) v = (v << 8n) | BigInt(b[pos + i]!);
    if (!unsigned) v = BigInt.asIntN(size * 8, v);
    return [v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v, pos + size];
  }
  if (type === 4) return pos + 4 <= b.length ? [b.readFloatLE(pos), pos + 4] : undefined;
  if (type === 5) return pos + 8 <= b.length ? [b.readDoubleLE(pos), pos + 8] : undefined;
  if (type === 6) return [null, pos];
  if (type === 7 || type === 10 || type === 12 || type === 14) {
    const n = b[pos];
    if (n === undefined || !DATE_LENGTHS.includes(n) || pos + 1 + n > b.length) return undefined;
    const d = b.subarray(pos + 1, pos + 1 + n);
    const date = n === 0 ? '0000-00-00' : `${pad(d.readUInt16LE(0), 4)}-${pad(d[2]!)}-${pad(d[3]!)}`;
    const time = n >= 7 ? ` ${pad(d[4]!)}:${pad(d[5]!)}:${pad(d[6]!)}` : type === 10 || type === 14 ? '' : ' 00:00:00';
    const usec = n === 11 ? `.${pad(d.readUInt32LE(7), 6)}` : '';
    return [date + time + usec, pos + 1 + n];
  }
  if (type === 11) {
    const n = b[pos];
    if (n === undefined || !TIME_LENGTHS.includes(n) || pos + 1 + n > b.length) return undefined;
    const d = b.subarray(pos + 1, pos + 1 + n);
    if (n === 0) return ['00:00:00', pos + 1];
    // As Keploy writes it: `[-]D HH:MM:SS.ffffff`, days and microseconds always.
    const usec = n === 12 ? d.readUInt32LE(8) : 0;
    return [`${d[0] ? '-' : ''}${d.readUInt32LE(1)} ${pad(d[5]!)}:${pad(d[6]!)}:${pad(d[7]!)}.${pad(usec, 6)}`, pos + 1 + n];
  }
  const s = lenencString(b, pos);
  return s ? [textOrBytes(s[0]), s[1]] : undefined;
}

function textRow(p: MysqlPacket, columns: Column[]): YamlMap | undefined {
  const values: YamlMap[] = [];
  let pos = 0;
  for (const c of columns) {
    let value: YamlValue;
    if (p.payload[pos] === 0xfb) [value, pos] = [null, pos + 1];
    else {
      const s = lenencString(p.payload, pos);
      if (!s) return undefined;
      [value, pos] = [textOrBytes(s[0]), s[1]];
    }
    values.push({ type: c.type, name: c.name, value, unsigned: false });
  }
  return pos === p.payload.length ? { header: headerOf(p), values } : undefined;
}

function binaryRow(p: MysqlPacket, columns: Column[]): YamlMap | undefined {
  const b = p.payload;
  const bitmapLength = (columns.length + 9) >> 3;
  if (b[0] !== 0x00 || b.length < 1 + bitmapLength) return undefined;
  const bitmap = b.subarray(1, 1 + bitmapLength);
  let pos = 1 + bitmapLength;
  const values: YamlMap[] = [];
  for (let i = 0; i < columns.length; i++) {
    const c = columns[i]!;
    const unsigned = (c.flags & 0x20) !== 0;
    if ((bitmap[(i + 2) >> 3]! >> ((i + 2) & 7)) & 1) {
      values.push({ type: c.type, name: c.name, value: null, unsigned });
      continue;
    }
    const v = binaryValueAt(c.type, unsigned, b, pos);
    if (!v) return undefined;
    values.push({ type: c.type, name: c.name, value: v[0], unsigned });
    pos = v[1];
  }
  return pos === b.length ? { header: headerOf(p), values, okAfterRow: false, rowNullBuffer: byteList(bitmap) } : undefined;
}

const isEof = (p: MysqlPacket | undefined) => p !== undefined && p.payload[0] === 0xfe && p.payload.length < 7;

/**
 * A result set of more values than this (rows times columns) is kept packet by packet: each value
 * is an object built on the loop while recording and four lines of YAML written, and a 1 MiB
 * answer may hold a million NULLs (attack 18t K4).
 */
export const MAX_STRUCTURED_VALUES = 65536;

/**
 * Values still to be built as objects for an exchange (result-set values and COM_STMT_EXECUTE
 * parameters together, at most MAX_STRUCTURED_VALUES), taken from as they are built.
 */
export interface ValueBudget {
  left: number;
}

const exchangeValues = (): ValueBudget => ({ left: MAX_STRUCTURED_VALUES });

/** A result set starting at `packets[at]`: its entry and the index after it, or undefined (also past `values`). */
function resultSet(packets: MysqlPacket[], at: number, binary: boolean, values: ValueBudget): [YamlMap, number] | undefined {
  const head = packets[at]!;
  const count = lenencAt(head.payload, 0);
  if (!count || count[1] !== head.payload.length || count[0] === 0) return undefined;
  let i = at + 1;
  const columns: Column[] = [];
  for (let k = 0; k < count[0]; k++) {
    const c = packets[i] && column(packets[i]!);
    if (!c) return undefined;
    columns.push(c);
    i++;
  }
  let eofAfterColumns: number[] = [];
  if (isEof(packets[i])) eofAfterColumns = byteList(whole(packets[i++]!));
  const rows: YamlMap[] = [];
  while (i < packets.length && packets[i]!.payload[0] !== 0xfe && packets[i]!.payload[0] !== 0xff) {
    if ((rows.length + 1) * columns.length > values.left) return undefined;
    const row = binary ? binaryRow(packets[i]!, columns) : textRow(packets[i]!, columns);
    if (!row) return undefined;
    rows.push(row);
    i++;
  }
  const last = packets[i];
  if (!last || last.payload[0] !== 0xfe) return undefined;
  const type = binary ? 'BinaryProtocolResultSet' : 'TextResultSet';
  values.left -= rows.length * columns.length;
  const message: YamlMap = {
    columnCount: count[0],
    columns: columns.map((c) => c.map),
    eofAfterColumns,
    rows,
    FinalResponse: { data: byteList(whole(last)), type: isEof(last) ? 'EOF' : 'OK' },
  };
  return [{ header: { header: headerOf(head), packet_type: type }, message }, i + 1];
}

function prepareOk(packets: MysqlPacket[]): YamlMap | undefined {
  const head = packets[0]!;
  const b = head.payload;
  if (b[0] !== 0x00 || b.length < 9 || b.length > 13) return undefined;
  const [numColumns, numParams] = [b.readUInt16LE(5), b.readUInt16LE(7)];
  let i = 1;
  const block = (n: number): [YamlMap[], number[]] | undefined => {
    const defs: YamlMap[] = [];
    for (let k = 0; k < n; k++) {
      const c = packets[i] && column(packets[i]!);
      if (!c) return undefined;
      defs.push(c.map);
      i++;
    }
    return [defs, n > 0 && isEof(packets[i]) ? byteList(whole(packets[i++]!)) : []];
  };
  const params = block(numParams);
  const cols = params && block(numColumns);
  if (!params || !cols || i !== packets.length) return undefined;
  const message: YamlMap = {
    status: b[0]!,
    statement_id: b.readUInt32LE(1),
    num_columns: numColumns,
    num_params: numParams,
    filler: b[9] ?? 0,
    warning_available: b.length >= 12,
    warning_count: b.length >= 12 ? b.readUInt16LE(10) : 0,
    meta_follows_available: b.length >= 13,
    meta_follows: b[12] ?? 0,
    param_definitions: params[0],
    eofAfterParamDefs: params[1],
    column_definitions: cols[0],
    eofAfterColumnDefs: cols[1],
  };
  return { header: { header: headerOf(head), packet_type: 'COM_STMT_PREPARE_OK' }, message };
}

/** Whether an entry gives back exactly these packets. */
function exact(entry: YamlMap, packets: MysqlPacket[]): boolean {
  const h = entry['header'] as YamlMap;
  const rebuilt = structuredPackets(h['packet_type'] as string, (h['header'] as YamlMap)['sequence_id'] as number, entry['message'] as YamlMap);
  return Buffer.isBuffer(rebuilt) && rebuilt.equals(Buffer.concat(packets.map(whole)));
}

/**
 * The answer to `command` in Keploy's structured entries, with `single` for each packet that
 * stands alone (OK, ERR, EOF); undefined when it has no result set or prepare answer, or when
 * any part would not give back exactly its bytes.
 */
export function structuredAnswer(command: string | undefined, packets: MysqlPacket[], single: (p: MysqlPacket) => YamlMap, values = exchangeValues()): YamlMap[] | undefined {
  if (packets.length < 2) return undefined;
  if (command === 'COM_STMT_PREPARE') {
    const entry = prepareOk(packets);
    return entry && exact(entry, packets) ? [entry] : undefined;
  }
  if (command !== 'COM_QUERY' && command !== 'COM_STMT_EXECUTE') return undefined;
  const out: YamlMap[] = [];
  for (let i = 0; i < packets.length;) {
    const first = packets[i]!.payload[0];
    if (first === 0x00 || first === 0xff || first === 0xfe) {
      out.push(single(packets[i]!));
      i++;
      continue;
    }
    const rs = resultSet(packets, i, command === 'COM_STMT_EXECUTE', values);
    if (!rs || !exact(rs[0], packets.slice(i, rs[1]))) return undefined;
    out.push(rs[0]);
    i = rs[1];
  }
  return out;
}

/** The bytes one binary-protocol value takes at `pos` (its length only, nothing built), or -1 when it does not fit. */
function binaryValueLength(type: number, b: Buffer, pos: number): number {
  const size = INT_SIZES[type] ?? (type === 4 ? 4 : type === 5 ? 8 : type === 6 ? 0 : undefined);
  if (size !== undefined) return pos + size <= b.length ? size : -1;
  if (type === 7 || type === 10 || type === 12 || type === 14 || type === 11) {
    const n = b[pos];
    return n !== undefined && (type === 11 ? TIME_LENGTHS : DATE_LENGTHS).includes(n) && pos + 1 + n <= b.length ? 1 + n : -1;
  }
  const n = lenencAt(b, pos);
  return n && n[1] + n[0] <= b.length ? n[1] - pos + n[0] : -1;
}

/**
 * How many parameter values `findParameterCount` may step over for one packet. Without the
 * prepare's answer every count is a guess, each checked by walking its values: a crafted 9 KB
 * packet whose every guess fills almost exactly cost about 8.4 million steps, and 2 s of the loop
 * building them as objects (attack 18t M5). Within this a statement of about 360 parameters is
 * still found; past it the packet is kept as bytes.
 */
export const MAX_EXECUTE_GUESS_STEPS = 1 << 16;

/** The parameter count `n` fits: a bind flag of 1 after the bitmap, and `n` typed values that end exactly at the packet's end. */
function fits(b: Buffer, n: number, budget: { left: number }): boolean {
  const bitmapLength = (n + 7) >> 3;
  const typesAt = 10 + bitmapLength + 1;
  let pos = typesAt + 2 * n;
  if (b[typesAt - 1] !== 1 || pos > b.length) return false;
  for (let k = 0; k < n; k++) {
    if (--budget.left < 0) return false;
    if ((b[10 + (k >> 3)]! >> (k & 7)) & 1) continue;
    const length = binaryValueLength(b.readUInt16LE(typesAt + 2 * k) & 0xff, b, pos);
    if (length < 0) return false;
    pos += length;
  }
  return pos === b.length;
}

/**
 * The one parameter count the bytes fit, found within MAX_EXECUTE_GUESS_STEPS; undefined when
 * none does, when two do (which one the statement has only its prepare can tell), or when the
 * guesses would take more.
 */
function guessParameterCount(b: Buffer): number | undefined {
  const budget = { left: MAX_EXECUTE_GUESS_STEPS };
  let found: number | undefined;
  for (let n = 1; n <= 0xffff && 10 + ((n + 7) >> 3) + 1 + 2 * n <= b.length; n++) {
    if (fits(b, n, budget)) {
      if (found !== undefined) return undefined;
      found = n;
    }
    if (budget.left < 0) return undefined;
  }
  return found;
}

/**
 * A NULL bitmap as Keploy's list of bytes while short; a long one (a statement of hundreds of
 * parameters) as `!!binary`, one line of YAML and no object a byte (attack 18u P3: 8,192 numbers).
 */
const NULL_BITMAP_LIST_MAX = 32;
const nullBitmap = (bitmap: Buffer) => (bitmap.length <= NULL_BITMAP_LIST_MAX ? byteList(bitmap) : new Uint8Array(bitmap));

/**
 * COM_STMT_EXECUTE in Keploy's fields, or undefined. The parameter count is not in the packet
 * (it came with the statement's COM_STMT_PREPARE_OK): `parameterCount` when the recorder saw that
 * answer on the same connection, else the one count whose values fill the packet exactly. Its
 * parameters are taken from `values` (each is an object built and written); past it, undefined
 * with `values.left` below zero, so the exchange stays bytes (attack 18u P3: 65,535 a packet).
 */
export function executeMessage(p: MysqlPacket, parameterCount?: number, values = exchangeValues()): YamlMap | undefined {
  const b = p.payload;
  if (b[0] !== 0x17 || b.length < 10) return undefined;
  const base: YamlMap = { status: 0x17, statement_id: b.readUInt32LE(1), flags: b[5]!, iteration_count: b.readUInt32LE(6) };
  let message: YamlMap | undefined;
  if (b.length === 10 && !parameterCount) message = { ...base, parameter_count: 0, null_bitmap: [], new_params_bind_flag: 0, parameters: [] };
  else {
    const n = parameterCount ?? guessParameterCount(b);
    if (!n || !fits(b, n, { left: n })) return undefined;
    if (n > values.left) {
      values.left = -1;
      return undefined;
    }
    values.left -= n;
    const bitmap = b.subarray(10, 10 + ((n + 7) >> 3));
    const typesAt = 10 + bitmap.length + 1;
    let pos = typesAt + 2 * n;
    const parameters: YamlMap[] = [];
    for (let k = 0; k < n; k++) {
      const t = b.readUInt16LE(typesAt + 2 * k);
      const [type, unsigned] = [t & 0xff, (t & 0x8000) !== 0];
      if ((bitmap[k >> 3]! >> (k & 7)) & 1) {
        parameters.push({ type, unsigned, value: null });
        continue;
      }
      const v = binaryValueAt(type, unsigned, b, pos);
      if (!v) return undefined;
      parameters.push({ type, unsigned, value: v[0] });
      pos = v[1];
    }
    message = { ...base, parameter_count: n, null_bitmap: nullBitmap(bitmap), new_params_bind_flag: 1, parameters };
  }
  const rebuilt = structuredPackets('COM_STMT_EXECUTE', p.seq, message);
  return Buffer.isBuffer(rebuilt) && rebuilt.equals(whole(p)) ? message : undefined;
}

const CACHING_SHA2_NAMES: Record<number, string> = { 3: 'FastAuthSuccess', 4: 'PerformFullAuthentication' };

function cString(b: Buffer, pos: number): [string, number] | undefined {
  const end = b.indexOf(0, pos);
  if (end < 0) return undefined;
  const t = textOrBytes(b.subarray(pos, end));
  return typeof t === 'string' ? [t, end + 1] : undefined;
}

/** HandshakeResponse41 / SSLRequest in Keploy's fields (connection attributes in the client's order). */
function handshakeResponse(b: Buffer, ssl: boolean): YamlMap | undefined {
  if (b.length < 32) return undefined;
  const caps = b.readUInt32LE(0);
  const head: YamlMap = { capability_flags: caps, max_packet_size: b.readUInt32LE(4), character_set: b[8]!, filler: markStyle(byteList(b.subarray(9, 32)), true) };
  if (ssl) return b.length === 32 ? head : undefined;
  const user = cString(b, 32);
  if (!user) return undefined;
  let pos = user[1];
  let auth: Buffer;
  if (caps & 0x00200000) {
    const s = lenencString(b, pos);
    if (!s) return undefined;
    [auth, pos] = s;
  } else if (caps & 0x8000) {
    const n = b[pos] ?? 0;
    [auth, pos] = [b.subarray(pos + 1, pos + 1 + n), pos + 1 + n];
  } else return undefined;
  const message: YamlMap = { ...head, username: user[0], auth_response: markStyle(byteList(auth), true), database: '', auth_plugin_name: '' };
  if (caps & 0x08) {
    const s = cString(b, pos);
    if (!s) return undefined;
    [message['database'], pos] = s;
  }
  if (caps & 0x00080000) {
    const s = cString(b, pos);
    if (!s) return undefined;
    [message['auth_plugin_name'], pos] = s;
  }
  if (caps & 0x00100000) {
    const all = lenencString(b, pos);
    if (!all) return undefined;
    const attrs: YamlMap = {};
    for (let p = 0; p < all[0].length;) {
      const k = lenencString(all[0], p);
      const v = k && lenencString(all[0], k[1]);
      const [key, value] = [k && textOrBytes(k[0]), v && textOrBytes(v[0])];
      if (!v || typeof key !== 'string' || typeof value !== 'string' || key in attrs) return undefined;
      attrs[key] = value;
      p = v[1];
    }
    message['connection_attributes'] = attrs;
    pos = all[1];
  }
  message['zstdcompressionlevel'] = caps & 0x04000000 ? (b[pos++] ?? 0) : 0;
  return pos === b.length ? message : undefined;
}

/**
 * A connection-phase packet in Keploy's fields (HandshakeResponse41, SSLRequest, AuthMoreData,
 * AuthSwitchRequest, AuthSwitchResponse), when they give back exactly its bytes; else undefined.
 */
export function authMessage(type: string, p: MysqlPacket): YamlMap | undefined {
  const b = p.payload;
  let message: YamlMap | undefined;
  if (type === 'HandshakeResponse41' || type === 'SSLRequest') message = handshakeResponse(b, type === 'SSLRequest');
  else if (type === 'AuthMoreData' && b[0] === 0x01 && b.length > 1) {
    const named = b.length === 2 ? CACHING_SHA2_NAMES[b[1]!] : undefined;
    const data = named ?? textOrBytes(b.subarray(1));
    message = typeof data === 'string' ? { status_tag: 1, data } : undefined;
  } else if (type === 'AuthSwitchRequest' && b[0] === 0xfe) {
    const name = cString(b, 1);
    message = name && { status_tag: 0xfe, plugin_name: name[0], plugin_data: b.subarray(name[1]).toString('base64').replace(/=+$/, '') };
  } else if (type === 'AuthSwitchResponse') message = { data: b.toString('base64') };
  if (!message) return undefined;
  const rebuilt = structuredPackets(type, p.seq, message);
  return Buffer.isBuffer(rebuilt) && rebuilt.equals(whole(p)) ? message : undefined;
}

/** The other commands in Keploy's fields (`{command}`, `{command, schema}`, `{status, statement_id}`), when exact; else undefined. */
export function commandMessage(type: string, p: MysqlPacket): YamlMap | undefined {
  const b = p.payload;
  let message: YamlMap | undefined;
  if (['COM_QUIT', 'COM_PING', 'COM_STATISTICS', 'COM_DEBUG', 'COM_RESET_CONNECTION'].includes(type) && b.length === 1) message = { command: b[0]! };
  else if (type === 'COM_INIT_DB') {
    const schema = textOrBytes(b.subarray(1));
    message = typeof schema === 'string' ? { command: b[0]!, schema } : undefined;
  } else if ((type === 'COM_STMT_CLOSE' || type === 'COM_STMT_RESET') && b.length === 5) message = { status: b[0]!, statement_id: b.readUInt32LE(1) };
  if (!message) return undefined;
  const rebuilt = structuredPackets(type, p.seq, message);
  return Buffer.isBuffer(rebuilt) && rebuilt.equals(whole(p)) ? message : undefined;
}
