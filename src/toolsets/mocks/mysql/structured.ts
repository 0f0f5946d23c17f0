import { packetOf } from './wire.js';
import { exactUtf8 } from '../keploy/utf8.js';
import type { YamlMap, YamlValue } from '../keploy/types.js';
import { MAX_MOCK_EXCHANGE_BYTES } from '../protocol.js';

/**
 * The bytes of MySQL packets Keploy writes field by field (Keploy `models/mysql`), for replay:
 * the connection phase (HandshakeResponse41, SSLRequest, AuthSwitchRequest, AuthSwitchResponse,
 * AuthMoreData, the caching_sha2_password steps), commands (`{command, query}` and the other
 * COM_* packets, COM_STMT_EXECUTE with its parameters) and answers (COM_STMT_PREPARE_OK with its
 * definitions, TextResultSet and BinaryProtocolResultSet with columns, rows and final packet).
 *
 * Field names, as Keploy writes them:
 * - result sets: `columnCount`, `columns` (ColumnDefinition41: `header {payload_length,
 *   sequence_id}`, `catalog`, `schema`, `table`, `org_table`, `name`, `org_name`,
 *   `fixed_length`, `character_set`, `column_length`, `type`, `flags`, `decimals`, `filler`,
 *   `defaultValue`; debugkit adds `extended_metadata` after `org_name` for MariaDB's extended type
 *   info, only when the server sent it), `eofAfterColumns` (the whole EOF packet, header included, as a byte list),
 *   `rows` (`header`, `values: [{type, name, value, unsigned}]`; binary rows add `okAfterRow`,
 *   `rowNullBuffer`), `FinalResponse: {data, type}` (the whole last packet);
 * - COM_STMT_PREPARE_OK: `status, statement_id, num_columns, num_params, filler,
 *   warning_available, warning_count, meta_follows_available, meta_follows, param_definitions,
 *   eofAfterParamDefs, column_definitions, eofAfterColumnDefs`;
 * - COM_STMT_EXECUTE: `status, statement_id, flags, iteration_count, parameter_count,
 *   null_bitmap, new_params_bind_flag, parameters: [{type, unsigned, name, value}]`;
 * - AuthMoreData `{status_tag, data}` where data `FastAuthSuccess` / `PerformFullAuthentication`
 *   stand for the bytes 3 / 4; AuthSwitchRequest `{status_tag, plugin_name, plugin_data}`
 *   (plugin_data base64 without padding); AuthSwitchResponse `{data}`.
 *
 * A message these functions cannot turn into bytes gives a reason (a string) instead.
 */

export const isMap = (v: YamlValue | undefined): v is YamlMap => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);

export function writeLenenc(v: number | bigint): Buffer {
  const n = BigInt(v);
  if (n < 0xfbn) return Buffer.from([Number(n)]);
  if (n < 0x10000n) return Buffer.from([0xfc, Number(n & 0xffn), Number(n >> 8n)]);
  if (n < 0x1000000n) return Buffer.from([0xfd, Number(n & 0xffn), Number((n >> 8n) & 0xffn), Number(n >> 16n)]);
  const b = Buffer.alloc(9);
  b[0] = 0xfe;
  b.writeBigUInt64LE(n, 1);
  return b;
}

const lenencBytes = (b: Buffer) => Buffer.concat([writeLenenc(b.length), b]);
const lenencString = (s: string) => lenencBytes(Buffer.from(s, 'utf8'));

class Bad extends Error {}
const bad = (why: string): never => {
  throw new Bad(why);
};

/** An unsigned integer field (absent: 0). */
function uint(m: YamlMap, key: string, max = Number.MAX_SAFE_INTEGER): number {
  const v = m[key];
  if (v === undefined || v === null) return 0;
  if (typeof v === 'boolean') return v ? 1 : 0;
  const n = typeof v === 'bigint' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > max) bad(`${key} is not an integer 0-${max}`);
  return n as number;
}

function text(m: YamlMap, key: string): string {
  const v = m[key];
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  // Long text that YAML would double-quote is written as `!!binary` of its UTF-8 (keploy/emit.ts QUOTED_STRING_MAX).
  const utf8 = v instanceof Uint8Array ? exactUtf8(v) : undefined;
  if (utf8 !== undefined) return utf8;
  return bad(`${key} is not text`);
}

/** A byte list (`[0, 0]`), !!binary data, or null (empty). */
function bytes(m: YamlMap, key: string): Buffer {
  const v = m[key];
  if (v === undefined || v === null) return Buffer.alloc(0);
  if (v instanceof Uint8Array) return Buffer.from(v);
  if (typeof v === 'string') return Buffer.from(v, 'base64');
  if (Array.isArray(v) && v.every((x) => typeof x === 'number' && Number.isInteger(x) && x >= 0 && x < 256)) return Buffer.from(v as number[]);
  return bad(`${key} is not a list of bytes`);
}

const u16 = (v: number) => {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(v & 0xffff);
  return b;
};
const u32 = (v: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v >>> 0);
  return b;
};

function headerOf(m: YamlMap, where: string): number {
  const h = m['header'];
  if (!isMap(h)) return bad(`${where}: no header {payload_length, sequence_id}`);
  return uint(h, 'sequence_id', 255);
}

/**
 * A ColumnDefinition41 packet, header included. Its name is required (Keploy always writes it,
 * empty for an unnamed expression): a definition of `{header: {}}` alone is a few bytes of YAML
 * standing for a column whose every row then holds a value (attack 18t M2).
 */
function column(m: YamlValue, where: string): Buffer {
  if (!isMap(m)) return bad(`${where}: not a mapping`);
  // Present (text() then says when it is not text: a long one may be `!!binary` of its UTF-8).
  if (m['name'] === undefined || m['name'] === null) bad(`${where}: no name (a column definition needs its name, as Keploy writes it)`);
  const filler = bytes(m, 'filler');
  const payload = Buffer.concat([
    lenencString(text(m, 'catalog')),
    lenencString(text(m, 'schema')),
    lenencString(text(m, 'table')),
    lenencString(text(m, 'org_table')),
    lenencString(text(m, 'name')),
    lenencString(text(m, 'org_name')),
    // MariaDB's extended type info (debugkit's addition; Keploy has no field for it).
    typeof m['extended_metadata'] === 'string' ? lenencString(m['extended_metadata']) : Buffer.alloc(0),
    Buffer.from([m['fixed_length'] === undefined ? 0x0c : uint(m, 'fixed_length', 255)]),
    u16(uint(m, 'character_set', 0xffff)),
    u32(uint(m, 'column_length', 0xffffffff)),
    Buffer.from([uint(m, 'type', 255), ...u16(uint(m, 'flags', 0xffff)), uint(m, 'decimals', 255)]),
    filler.length === 2 ? filler : Buffer.alloc(2),
    text(m, 'defaultValue') !== '' ? lenencString(text(m, 'defaultValue')) : Buffer.alloc(0),
  ]);
  return packetOf(headerOf(m, where), payload);
}

function list(m: YamlMap, key: string): YamlValue[] {
  const v = m[key];
  if (v === undefined || v === null) return [];
  return Array.isArray(v) ? v : bad(`${key} is not a list`);
}

/** A text row's NULL. One for all: rows are copied out by Buffer.concat, and a row of 4096 NULLs is 4096 of them. */
const NULL_VALUE = Buffer.from([0xfb]);

/** A text row's value: null is NULL (0xfb), anything else a length-encoded string. */
function textValue(v: YamlValue | undefined): Buffer {
  if (v === null || v === undefined) return NULL_VALUE;
  if (v instanceof Uint8Array) return lenencBytes(Buffer.from(v));
  if (typeof v === 'string') return lenencString(v);
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return lenencString(String(v));
  return bad('a row value is not a scalar');
}

const INT_SIZES: Record<number, number> = { 1: 1, 2: 2, 13: 2, 3: 4, 9: 4, 8: 8 };

function intValue(v: YamlValue | undefined, size: number, unsigned: boolean): Buffer {
  let n: bigint;
  if (typeof v === 'bigint') n = v;
  else if (typeof v === 'number' && Number.isInteger(v)) n = BigInt(v);
  else if (typeof v === 'string' && /^-?\d+$/.test(v)) n = BigInt(v);
  else return bad(`integer value ${JSON.stringify(v)} is not a whole number`);
  const b = Buffer.alloc(size);
  const bits = BigInt(size * 8);
  const wrapped = unsigned ? BigInt.asUintN(size * 8, n) : BigInt.asUintN(size * 8, BigInt.asIntN(size * 8, n));
  for (let i = 0n; i < bits / 8n; i++) b[Number(i)] = Number((wrapped >> (i * 8n)) & 0xffn);
  return b;
}

function floatValue(v: YamlValue | undefined, size: 4 | 8): Buffer {
  const f = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : typeof v === 'bigint' ? Number(v) : NaN;
  if (Number.isNaN(f) && v !== 'NaN') bad(`float value ${JSON.stringify(v)} is not a number`);
  const b = Buffer.alloc(size);
  if (size === 4) b.writeFloatLE(f);
  else b.writeDoubleLE(f);
  return b;
}

/** `YYYY-MM-DD[ HH:MM:SS[.ffffff]]` as MySQL's binary DATE/DATETIME/TIMESTAMP. */
function dateValue(v: YamlValue | undefined): Buffer {
  if (v === '' || v === null || v === undefined) return Buffer.from([0]);
  const m = typeof v === 'string' ? /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?)?$/.exec(v) : null;
  if (!m) return bad(`date value ${JSON.stringify(v)} is not YYYY-MM-DD[ HH:MM:SS[.ffffff]]`);
  const [y, mo, d, h, mi, s] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i] ?? 0)) as [number, number, number, number, number, number];
  const usec = m[7] ? Number(m[7].padEnd(6, '0')) : 0;
  if (y === 0 && mo === 0 && d === 0 && h === 0 && mi === 0 && s === 0 && usec === 0) return Buffer.from([0]);
  const date = Buffer.from([...u16(y), mo, d]);
  if (usec) return Buffer.concat([Buffer.from([11]), date, Buffer.from([h, mi, s]), u32(usec)]);
  if (h || mi || s) return Buffer.concat([Buffer.from([7]), date, Buffer.from([h, mi, s])]);
  return Buffer.concat([Buffer.from([4]), date]);
}

/** `[-][D ]HH:MM:SS[.ffffff]` as MySQL's binary TIME. */
function timeValue(v: YamlValue | undefined): Buffer {
  const m = typeof v === 'string' ? /^(-)?(?:(\d+) )?(\d+):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$/.exec(v) : null;
  if (!m) return bad(`time value ${JSON.stringify(v)} is not [-][D ]HH:MM:SS[.ffffff]`);
  let hours = Number(m[3]);
  const days = Number(m[2] ?? 0) + Math.floor(hours / 24);
  hours %= 24;
  const usec = m[6] ? Number(m[6].padEnd(6, '0')) : 0;
  if (!days && !hours && !Number(m[4]) && !Number(m[5]) && !usec) return Buffer.from([0]);
  const body = Buffer.concat([Buffer.from([m[1] ? 1 : 0]), u32(days), Buffer.from([hours, Number(m[4]), Number(m[5])])]);
  return usec ? Buffer.concat([Buffer.from([12]), body, u32(usec)]) : Buffer.concat([Buffer.from([8]), body]);
}

/** One value in MySQL's binary protocol (rows and COM_STMT_EXECUTE parameters). */
export function binaryValue(type: number, v: YamlValue | undefined, unsigned: boolean): Buffer {
  if (INT_SIZES[type] !== undefined) return intValue(v, INT_SIZES[type]!, unsigned);
  if (type === 4) return floatValue(v, 4);
  if (type === 5) return floatValue(v, 8);
  if (type === 7 || type === 10 || type === 12 || type === 14) return dateValue(v);
  if (type === 11) return timeValue(v);
  if (type === 6) return Buffer.alloc(0);
  if (v instanceof Uint8Array) return lenencBytes(Buffer.from(v));
  if (typeof v === 'string') return lenencString(v);
  if (typeof v === 'number' || typeof v === 'bigint') return lenencString(String(v));
  return bad(`a value of type ${type} is not text`);
}

/** Whether column `i` of a binary row is NULL (the bitmap starts at bit 2). */
const rowNull = (bitmap: Buffer, i: number) => ((bitmap[(i + 2) >> 3] ?? 0) >> ((i + 2) & 7)) & 1;

function row(r: YamlValue, binary: boolean, columns: number, where: string): Buffer {
  if (!isMap(r)) return bad(`${where}: not a mapping`);
  const values = list(r, 'values').map((v, i) => (isMap(v) ? v : bad(`${where}.values[${i}]: not a mapping`)));
  if (!binary) {
    const n = Math.max(columns, values.length);
    return packetOf(headerOf(r, where), Buffer.concat(Array.from({ length: n }, (_, i) => textValue(values[i]?.['value']))));
  }
  let bitmap = bytes(r, 'rowNullBuffer');
  const want = (columns + 9) >> 3;
  if (bitmap.length < want) {
    // Not recorded: made from the values that are null.
    bitmap = Buffer.alloc(want);
    values.forEach((v, i) => {
      if (v['value'] === null || v['value'] === undefined) bitmap[(i + 2) >> 3]! |= 1 << ((i + 2) & 7);
    });
  }
  const parts: Buffer[] = [Buffer.from([0]), bitmap];
  for (let i = 0; i < columns; i++) {
    if (rowNull(bitmap, i)) continue;
    const v = values[i] ?? bad(`${where}: no value for column ${i}`);
    parts.push(binaryValue(uint(v, 'type', 255), v['value'], v['unsigned'] === true));
  }
  return packetOf(headerOf(r, where), Buffer.concat(parts));
}

const SERVER_STATUS_AUTOCOMMIT = 2;

/** MySQL's own limit on a table's (and a result's) columns. */
export const MAX_COLUMNS = 4096;

/**
 * TextResultSet / BinaryProtocolResultSet: every packet of the answer, at most `maxBytes` of them.
 * A row is as wide as the columns, not as its values (missing ones are NULL), so `columnCount` must
 * be the columns listed: a set of 646 bytes saying 60,000,000 held the loop 126 s building rows of
 * NULLs and then exhausted the heap (attack 18r K3). The bytes are counted row by row for the same
 * reason: a short row entry still stands for up to 4096 bytes.
 */
function resultSet(seq: number, m: YamlMap, binary: boolean, maxBytes: number): Buffer {
  const columns = list(m, 'columns');
  if (columns.length > MAX_COLUMNS) bad(`${columns.length} columns, over MySQL's ${MAX_COLUMNS}`);
  const count = m['columnCount'] === undefined ? columns.length : uint(m, 'columnCount', MAX_COLUMNS);
  if (count !== columns.length) bad(`columnCount ${count} is not the ${columns.length} column(s) listed`);
  const parts: Buffer[] = [packetOf(seq, writeLenenc(count))];
  columns.forEach((c, i) => parts.push(column(c, `columns[${i}]`)));
  const eof = bytes(m, 'eofAfterColumns');
  parts.push(eof);
  let size = parts.reduce((n, p) => n + p.length, 0);
  const rows = list(m, 'rows');
  rows.forEach((r, i) => {
    const p = row(r, binary, count, `rows[${i}]`);
    if ((size += p.length) > maxBytes) bad(`rows[${i}] makes it more than the ${maxBytes} bytes it may have`);
    parts.push(p);
  });
  const final = isMap(m['FinalResponse']) ? m['FinalResponse'] : undefined;
  const data = final ? bytes(final, 'data') : Buffer.alloc(0);
  if (data.length > 0) parts.push(data);
  else {
    // Keploy 2.x wrote `FinalResponse: {data: null, type: EOF}`: the closing packet was not kept.
    // It is rebuilt: an EOF when an EOF followed the columns, else the OK that replaces it
    // (CLIENT_DEPRECATE_EOF), with the sequence id after the last packet and status AUTOCOMMIT.
    const last = parts.filter((p) => p.length >= 4).at(-1)!;
    const next = (last[3]! + 1) & 0xff;
    const status = u16(SERVER_STATUS_AUTOCOMMIT);
    parts.push(packetOf(next, eof.length > 0 ? Buffer.from([0xfe, 0, 0, ...status]) : Buffer.from([0xfe, 0, 0, ...status, 0, 0])));
  }
  return Buffer.concat(parts);
}

function prepareOk(seq: number, m: YamlMap): Buffer {
  const head = [
    Buffer.from([uint(m, 'status', 255)]),
    u32(uint(m, 'statement_id', 0xffffffff)),
    u16(uint(m, 'num_columns', 0xffff)),
    u16(uint(m, 'num_params', 0xffff)),
    Buffer.from([uint(m, 'filler', 255)]),
  ];
  if (m['warning_available'] === true) head.push(u16(uint(m, 'warning_count', 0xffff)));
  if (m['meta_follows_available'] === true) head.push(Buffer.from([uint(m, 'meta_follows', 255)]));
  const parts: Buffer[] = [packetOf(seq, Buffer.concat(head))];
  list(m, 'param_definitions').forEach((c, i) => parts.push(column(c, `param_definitions[${i}]`)));
  if (uint(m, 'num_params', 0xffff) > 0) parts.push(bytes(m, 'eofAfterParamDefs'));
  list(m, 'column_definitions').forEach((c, i) => parts.push(column(c, `column_definitions[${i}]`)));
  if (uint(m, 'num_columns', 0xffff) > 0) parts.push(bytes(m, 'eofAfterColumnDefs'));
  return Buffer.concat(parts);
}

function execute(m: YamlMap): Buffer {
  const parts: Buffer[] = [Buffer.from([uint(m, 'status', 255) || 0x17]), u32(uint(m, 'statement_id', 0xffffffff)), Buffer.from([uint(m, 'flags', 255)]), u32(uint(m, 'iteration_count', 0xffffffff))];
  const params = list(m, 'parameters').map((p, i) => (isMap(p) ? p : bad(`parameters[${i}]: not a mapping`)));
  // A statement has at most 65535 parameters (COM_STMT_PREPARE_OK's num_params is 2 bytes): the NULL bitmap is sized by the count.
  const count = Math.max(uint(m, 'parameter_count', 0xffff), params.length);
  if (count > 0) {
    let bitmap = bytes(m, 'null_bitmap');
    if (bitmap.length < (count + 7) >> 3) {
      bitmap = Buffer.alloc((count + 7) >> 3);
      params.forEach((p, i) => {
        if (p['value'] === null || p['value'] === undefined) bitmap[i >> 3]! |= 1 << (i & 7);
      });
    }
    const bind = uint(m, 'new_params_bind_flag', 255);
    parts.push(bitmap, Buffer.from([bind]));
    if (bind) for (const p of params) parts.push(u16((uint(p, 'type', 0xffff) & 0x7fff) | (p['unsigned'] === true ? 0x8000 : 0)));
    params.forEach((p, i) => {
      if ((bitmap[i >> 3]! >> (i & 7)) & 1) return;
      parts.push(binaryValue(uint(p, 'type', 0xffff) & 0xff, p['value'], p['unsigned'] === true));
    });
  }
  return Buffer.concat(parts);
}

const COMMAND_CODES: Record<string, number> = {
  COM_QUIT: 0x01,
  COM_INIT_DB: 0x02,
  COM_QUERY: 0x03,
  COM_STATISTICS: 0x09,
  COM_DEBUG: 0x0d,
  COM_PING: 0x0e,
  COM_CHANGE_USER: 0x11,
  COM_STMT_PREPARE: 0x16,
  COM_STMT_EXECUTE: 0x17,
  COM_STMT_SEND_LONG_DATA: 0x18,
  COM_STMT_CLOSE: 0x19,
  COM_STMT_RESET: 0x1a,
  COM_SET_OPTION: 0x1b,
  COM_STMT_FETCH: 0x1c,
  COM_RESET_CONNECTION: 0x1f,
};

/** HandshakeResponse41 or SSLRequest. */
function handshakeResponse(m: YamlMap, ssl: boolean): Buffer {
  const caps = uint(m, 'capability_flags', 0xffffffff);
  const filler = bytes(m, 'filler');
  const head = Buffer.concat([u32(caps), u32(uint(m, 'max_packet_size', 0xffffffff)), Buffer.from([uint(m, 'character_set', 255)]), filler.length === 23 ? filler : Buffer.alloc(23)]);
  if (ssl) return head;
  const auth = bytes(m, 'auth_response');
  const parts: Buffer[] = [head, Buffer.from(text(m, 'username') + '\0', 'utf8')];
  if (caps & 0x00200000) parts.push(lenencBytes(auth));
  else if (caps & 0x8000) parts.push(Buffer.from([auth.length]), auth);
  else parts.push(auth, Buffer.from([0]));
  if (caps & 0x08) parts.push(Buffer.from(text(m, 'database') + '\0', 'utf8'));
  if (caps & 0x00080000) parts.push(Buffer.from(text(m, 'auth_plugin_name') + '\0', 'utf8'));
  if (caps & 0x00100000) {
    const attrs = isMap(m['connection_attributes']) ? m['connection_attributes'] : {};
    const kv = Buffer.concat(Object.entries(attrs).flatMap(([k, v]) => [lenencString(k), lenencString(typeof v === 'string' ? v : String(v))]));
    parts.push(lenencBytes(kv));
  }
  if (caps & 0x04000000) parts.push(Buffer.from([uint(m, 'zstdcompressionlevel', 255)]));
  return Buffer.concat(parts);
}

const CACHING_SHA2: Record<string, number> = { FastAuthSuccess: 3, PerformFullAuthentication: 4, RequestPublicKey: 2 };

/**
 * The payload of one structured message of type `type` (packet_type), or undefined when this
 * type is not one of Keploy's structured ones. Result sets and COM_STMT_PREPARE_OK answer with
 * several packets: for those see `structuredPackets`.
 */
function structuredPayload(type: string, m: YamlMap): Buffer | undefined {
  switch (type) {
    case 'HandshakeResponse41':
      return handshakeResponse(m, false);
    case 'SSLRequest':
      return handshakeResponse(m, true);
    case 'AuthMoreData': {
      const data = m['data'] instanceof Uint8Array ? Buffer.from(m['data']) : text(m, 'data');
      const code = typeof data === 'string' ? CACHING_SHA2[data] : undefined;
      const rest = code !== undefined ? Buffer.from([code]) : typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
      return Buffer.concat([Buffer.from([m['status_tag'] === undefined ? 1 : uint(m, 'status_tag', 255)]), rest]);
    }
    case 'AuthSwitchRequest':
    case 'AuthNextFactor': {
      const tag = type === 'AuthSwitchRequest' ? uint(m, 'status_tag', 255) || 0xfe : uint(m, 'packet_type', 255) || 0x02;
      return Buffer.concat([Buffer.from([tag]), Buffer.from(text(m, 'plugin_name') + '\0', 'utf8'), Buffer.from(text(m, 'plugin_data'), 'base64')]);
    }
    case 'AuthSwitchResponse':
      return Buffer.from(text(m, 'data'), 'base64');
    case 'COM_STMT_EXECUTE':
      return execute(m);
    case 'COM_STMT_CLOSE':
    case 'COM_STMT_RESET':
      return Buffer.concat([Buffer.from([uint(m, 'status', 255) || COMMAND_CODES[type]!]), u32(uint(m, 'statement_id', 0xffffffff))]);
    case 'COM_STMT_FETCH':
      return Buffer.concat([Buffer.from([uint(m, 'status', 255) || 0x1c]), u32(uint(m, 'statement_id', 0xffffffff)), u32(uint(m, 'num_rows', 0xffffffff))]);
    case 'COM_STMT_SEND_LONG_DATA':
      return Buffer.concat([Buffer.from([uint(m, 'status', 255) || 0x18]), u32(uint(m, 'statement_id', 0xffffffff)), u16(uint(m, 'parameter_id', 0xffff)), bytes(m, 'data')]);
    case 'COM_SET_OPTION':
      return Buffer.concat([Buffer.from([uint(m, 'status', 255) || 0x1b]), u16(uint(m, 'option', 0xffff))]);
    case 'COM_INIT_DB':
      return Buffer.concat([Buffer.from([0x02]), Buffer.from(text(m, 'schema'), 'utf8')]);
  }
  const code = COMMAND_CODES[type];
  if (code !== undefined) {
    // {command, query} (COM_QUERY, COM_STMT_PREPARE) or {command} alone.
    const query = m['query'];
    const queryBytes = typeof query === 'string' ? Buffer.from(query, 'utf8') : query instanceof Uint8Array ? Buffer.from(query) : Buffer.alloc(0);
    return Buffer.concat([Buffer.from([m['command'] === undefined ? code : uint(m, 'command', 255)]), queryBytes]);
  }
  return undefined;
}

/**
 * The whole packets (headers included) of one structured entry, or a reason it has none;
 * undefined when `type` is not one of the types modelled here. A result set over `maxBytes` is
 * refused as it is built (what a recording keeps of one exchange by default).
 */
export function structuredPackets(type: string, seq: number, message: YamlMap, maxBytes = MAX_MOCK_EXCHANGE_BYTES): Buffer | string | undefined {
  try {
    if (type === 'TextResultSet' || type === 'BinaryProtocolResultSet') return resultSet(seq, message, type === 'BinaryProtocolResultSet', maxBytes);
    if (type === 'COM_STMT_PREPARE_OK') return prepareOk(seq, message);
    const payload = structuredPayload(type, message);
    return payload && packetOf(seq, payload);
  } catch (err) {
    if (err instanceof Bad) return `a ${type} message: ${err.message}`;
    throw err;
  }
}
