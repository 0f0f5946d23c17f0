import { serialize } from 'pg-protocol';
import type { KeptBytes } from '../kept.js';
import { decodeRowValue, encodeRowValue } from '../keploy/postgres.js';
import type { Extra, PgMessage, PostgresRequestPacket, PostgresResponsePacket, YamlMap, YamlValue } from '../keploy/types.js';
import { decodePasswordBody, decodeTyped, parseFrontendBytes, PgProtocolError, type FrontendMessage } from './frontend.js';
import { authCodeOf, backend, codeOf, dataRowValues, decodeBackend, errorFields, rowFields, splitBackendBytes, Writer, type ErrorFields } from './wire.js';
import { Auth, Backend, Frontend, Target, TxStatus, type TargetCode } from './protocol.js';

/**
 * Keploy's Postgres packets (`models.Backend` for what the client sent, `models.Frontend` for the
 * server's answer) built from wire messages, and wire messages read back out of them (below).
 *
 * Built the way Keploy's recorder fills them (see the mux-sql fixture): `payload` is the base64 of
 * the raw bytes, `header` the message letters, the typed fields pgproto3's structs with their
 * yaml names (`parse`, `bind`, `row_description`, `data_row`, ...), `msg_type` the last letter's
 * code and `length` the connection's startup packet length (Keploy writes that constant there).
 * Two Keploy habits are kept so the files look like Keploy's: the Sync ending a request group is
 * not in its `header` (Keploy's parser loop never reaches a trailing 5-byte message), and empty
 * messages (AuthenticationOk, Sync, NoData) have no typed field. Unlike Keploy, response packets
 * always carry `payload`: replay sends those exact bytes.
 *
 */

/** Keploy's ErrorResponse/NoticeResponse yaml keys and their wire field codes. */
export const ERROR_KEYS: ReadonlyArray<readonly [string, string]> = [
  ['severity', 'S'],
  ['severity_unlocalized', 'V'],
  ['code', 'C'],
  ['message', 'M'],
  ['detail', 'D'],
  ['hint', 'H'],
  ['position', 'P'],
  ['internal_position', 'p'],
  ['internal_query', 'q'],
  ['where', 'W'],
  ['schema_name', 's'],
  ['table_name', 't'],
  ['column_name', 'c'],
  ['data_type_name', 'd'],
  ['constraint_name', 'n'],
  ['file', 'F'],
  ['line', 'L'],
  ['routine', 'R'],
];
export const NUMERIC_ERROR_KEYS = new Set(['position', 'internal_position', 'line']);

const bytesList = (b: Buffer): number[] => Array.from(b);
const base64 = (parts: readonly Buffer[]) => Buffer.concat(parts).toString('base64');

export interface PacketContext {
  /** Written as `length` (Keploy: the startup packet's length). */
  length: number;
  /** The last AuthenticationRequest code the server sent: says what a `p` message is. */
  authCode?: number;
  /** The recording's budget of structured values (kept.ts): past it a packet is kept as its bytes only. */
  budget?: Pick<KeptBytes, 'valuesLeft' | 'takeValues'>;
}

/**
 * A packet of more values than this (a message, a row's cell, a byte of a Bind parameter or of SASL
 * data: each an object or a YAML line) is kept as its bytes only, `payload`, without `header` or
 * typed fields; replay reads the payload either way, so it sends the same bytes. Every DataRow was an
 * object built on the loop and a YAML entry: ten psql answers of 90,000 rows held the loop 3.7 s and
 * the set was never written, its thread past 20 s (attack 18u P9, MySQL's K4).
 */
export const MAX_STRUCTURED_VALUES = 65536;

/** A packet with no typed fields: what `responseMessages`/`requestMessages` read from its payload alone. */
function bytesOnly<P extends PostgresRequestPacket | PostgresResponsePacket>(identifier: string, payload: string, lastCode: number | undefined, ctx: PacketContext): P {
  const packet = { identifier, length: ctx.length, payload, auth_type: 0 } as P;
  if (lastCode !== undefined) packet.msg_type = lastCode;
  return packet;
}

/** Whether a packet of `values` values is structured: within the bound, and the recording's budget. */
const structured = (values: number, ctx: PacketContext) => values <= MAX_STRUCTURED_VALUES && (ctx.budget?.takeValues(values) ?? true);

/** The values a client message adds to its packet: 1, and the bytes and items its typed field lists. */
function requestValues(m: FrontendMessage): number {
  switch (m.type) {
    case Frontend.Bind:
      return 1 + m.paramFormats.length + m.resultFormats.length + m.params.reduce((n, p) => n + 1 + (p?.length ?? 0), 0);
    case Frontend.Parse:
      return 1 + m.paramTypes.length;
    case Frontend.Password:
      return 1 + m.raw.length;
    default:
      return 1;
  }
}

/** The values a server message adds to its packet, read from its counts without decoding it. */
function responseValues(raw: Buffer): number {
  const count = () => (raw.length >= 7 ? Math.max(0, raw.readInt16BE(5)) : 0);
  switch (codeOf(raw)) {
    case Backend.DataRow:
    case Backend.ParameterDescription:
      return 1 + count();
    case Backend.RowDescription:
      return 1 + 7 * count();
    case Backend.Authentication:
      return 1 + raw.length;
    case Backend.ErrorResponse:
    case Backend.NoticeResponse:
      return 1 + ERROR_KEYS.length + raw.length;
    default:
      return 1;
  }
}

// ---------------------------------------------------------------- building

export function buildRequestPacket(messages: readonly FrontendMessage[], ctx: PacketContext): PostgresRequestPacket {
  const payload = base64(messages.map((m) => m.raw));
  const first = messages[0];
  if (
    first?.type !== 'startup' &&
    !structured(
      messages.reduce((n, m) => n + requestValues(m), 0),
      ctx,
    )
  ) {
    const last = messages[messages.length - 1];
    return bytesOnly('ClientRequest', payload, last ? last.type.charCodeAt(0) : undefined, ctx);
  }
  if (first?.type === 'startup') {
    return {
      identifier: 'StartupRequest',
      length: ctx.length,
      payload,
      startup_message: { protocolversion: first.protocolVersion, parameters: { ...first.parameters } },
      auth_type: 0,
    };
  }
  const letters = messages.map((m) => m.type);
  if (letters.length > 1 && letters[letters.length - 1] === Frontend.Sync) letters.pop();
  const packet: PostgresRequestPacket = { header: letters, identifier: 'ClientRequest', length: ctx.length, payload, auth_type: 0 };
  const extra: Extra = {};
  for (const m of messages) addRequestFields(packet, extra, m, ctx);
  if (letters.length > 0) packet.msg_type = letters[letters.length - 1]!.charCodeAt(0);
  if (Object.keys(extra).length > 0) packet.extra = extra;
  return packet;
}

function addRequestFields(packet: PostgresRequestPacket, extra: Extra, m: FrontendMessage, ctx: PacketContext): void {
  switch (m.type) {
    case Frontend.Parse:
      (packet.parse ??= []).push({ name: m.name, query: m.query, parameter_oids: [...m.paramTypes] });
      break;
    case Frontend.Bind: {
      const bind: PgMessage = {};
      if (m.portal) bind.destination_portal = m.portal;
      if (m.statement) bind.prepared_statement = m.statement;
      if (m.paramFormats.length) bind.parameter_format_codes = [...m.paramFormats];
      if (m.params.length) bind.parameters = m.params.map((p) => (p === null ? null : bytesList(p)));
      if (m.resultFormats.length) bind.result_format_codes = [...m.resultFormats];
      (packet.bind ??= []).push(bind);
      break;
    }
    case Frontend.Describe:
      packet.describe = { object_type: m.target.charCodeAt(0), name: m.name };
      break;
    case Frontend.Execute: {
      const execute: PgMessage = {};
      if (m.portal) execute.portal = m.portal;
      if (m.maxRows) execute.max_rows = m.maxRows;
      (packet.execute ??= []).push(execute);
      break;
    }
    case Frontend.Close:
      extra.close = { object_type: m.target.charCodeAt(0), name: m.name };
      break;
    case Frontend.Query:
      packet.query = { string: m.query };
      break;
    case Frontend.Password:
      addPasswordFields(packet, extra, m.body, ctx.authCode ?? 5);
      break;
  }
}

function addPasswordFields(packet: PostgresRequestPacket, extra: Extra, body: Buffer, authCode: number): void {
  const p = decodePasswordBody(body, authCode);
  if (p.kind === 'password') packet.password_message = { password: p.password };
  else if (p.kind === 'sasl-initial') extra.sasl_initial_response = { auth_mechanism: p.mechanism, data: p.data ? bytesList(p.data) : [] };
  else if (p.kind === 'sasl') extra.sasl_response = { data: bytesList(p.data) };
}

export function buildResponsePacket(messages: readonly Buffer[], ctx: PacketContext): PostgresResponsePacket {
  const builder = new ResponseBuilder(ctx);
  for (const raw of messages) builder.add(raw);
  return builder.finish(messages);
}

/**
 * A response packet's typed fields, built from its messages in slices (`run`), so that a big
 * answer's rows are not all read in one turn of the loop when it ends. Past MAX_STRUCTURED_VALUES
 * (or what the recording's budget has left) the fields built so far are let go and nothing more is
 * read: the packet is kept as its bytes. So is one whose messages cannot be read (replay sends the
 * bytes as they came).
 */
export class ResponseBuilder {
  private packet: PostgresResponsePacket | undefined;
  private readonly extra: Extra = {};
  private values = 0;
  private readonly pending: Buffer[] = [];
  private next = 0;

  constructor(private readonly ctx: PacketContext) {
    this.packet = { header: [], identifier: 'ServerResponse', length: ctx.length, payload: '', auth_type: 0 };
  }

  /** A message to read (by `run`). */
  add(raw: Buffer): void {
    if (this.packet) this.pending.push(raw);
  }

  /** Reads the messages added, asking `late()` before each; true once all are. */
  run(late: () => boolean = () => false): boolean {
    while (this.packet && this.next < this.pending.length) {
      if (late()) return false;
      this.read(this.pending[this.next++]!);
    }
    this.pending.length = 0;
    this.next = 0;
    return true;
  }

  /** Nothing more is read: the packet will be its bytes only. */
  abandon(): void {
    this.packet = undefined;
    this.pending.length = 0;
    this.next = 0;
  }

  private read(raw: Buffer): void {
    this.values += responseValues(raw);
    if (this.values > Math.min(MAX_STRUCTURED_VALUES, this.ctx.budget?.valuesLeft ?? Infinity)) return this.abandon();
    try {
      addResponseFields(this.packet!, this.extra, raw);
      this.packet!.header!.push(codeOf(raw));
    } catch {
      this.abandon();
    }
  }

  /** The packet of all the messages added (given again: the builder does not keep them once read). */
  finish(messages: readonly Buffer[]): PostgresResponsePacket {
    this.run();
    const payload = base64(messages);
    const last = messages[messages.length - 1]?.[0];
    const packet = this.packet;
    if (!packet || !(this.ctx.budget?.takeValues(this.values) ?? true)) return bytesOnly('ServerResponse', payload, last, this.ctx);
    packet.payload = payload;
    if (last !== undefined) packet.msg_type = last;
    if (Object.keys(this.extra).length > 0) packet.extra = this.extra;
    return packet;
  }
}

/** Messages whose typed field needs pg-protocol's view; the others are read directly (a DataRow's view was most of a row's cost). */
const DECODED: ReadonlySet<string> = new Set([Backend.ParameterStatus, Backend.ParameterDescription, Backend.CommandComplete]);

function addResponseFields(packet: PostgresResponsePacket, extra: Extra, raw: Buffer): void {
  const msg = DECODED.has(codeOf(raw)) ? decodeBackend(raw) : undefined;
  switch (codeOf(raw)) {
    case Backend.Authentication:
      addAuthFields(packet, extra, raw);
      break;
    case Backend.ParameterStatus:
      (packet.parameter_status ??= []).push({ name: String(msg?.parameterName ?? ''), value: String(msg?.parameterValue ?? '') });
      break;
    case Backend.BackendKeyData:
      packet.backend_key_data = { process_id: raw.readInt32BE(5), secret_key: raw.readInt32BE(9) };
      break;
    case Backend.ReadyForQuery:
      packet.ready_for_query = { txstatus: raw[5]! };
      break;
    case Backend.RowDescription:
      packet.row_description = { fields: rowFields(raw).map(keployField) };
      break;
    case Backend.ParameterDescription:
      packet.parameter_description = { parameteroids: [...((msg?.dataTypeIDs as number[]) ?? [])] };
      break;
    case Backend.DataRow:
      (packet.data_row ??= []).push({ row_values: dataRowValues(raw).map(encodeRowValue) });
      break;
    case Backend.CommandComplete:
      (packet.command_complete ??= []).push({ command_tag_type: String(msg?.text ?? '') });
      break;
    case Backend.ErrorResponse:
      packet.error_response = keployError(errorFields(raw));
      break;
    case Backend.NoticeResponse:
      extra.notice_response = keployError(errorFields(raw));
      break;
    case Backend.ParseComplete:
    case Backend.BindComplete:
      ((extra[codeOf(raw) === Backend.ParseComplete ? 'parse_complete' : 'bind_complete'] ??= []) as YamlValue[]).push({});
      break;
  }
}

function addAuthFields(packet: PostgresResponsePacket, extra: Extra, raw: Buffer): void {
  const authCode = authCodeOf(raw);
  packet.auth_type = authCode;
  const data = raw.subarray(9);
  if (authCode === Auth.MD5Password) packet.authentication_md5_password = { salt: bytesList(data) };
  if (authCode === Auth.SASL) extra.authentication_sasl = { auth_mechanisms: data.toString('utf8').split('\0').filter(Boolean) };
  if (authCode === Auth.SASLContinue) extra.authentication_sasl_continue = { data: bytesList(data) };
  if (authCode === Auth.SASLFinal) extra.authentication_sasl_final = { data: bytesList(data) };
}

function keployField(f: ReturnType<typeof rowFields>[number]): PgMessage {
  return {
    field_name: f.name,
    table_oid: f.tableOid,
    table_attribute_number: f.column,
    data_type_oid: f.typeOid,
    data_type_size: f.typeSize,
    type_modifier: f.typeModifier,
    format: f.format,
  };
}

/** Keploy writes every key of pgproto3.ErrorResponse, empty or not. */
function keployError(fields: ErrorFields): YamlMap {
  const out: YamlMap = {};
  for (const [key, letter] of ERROR_KEYS) out[key] = NUMERIC_ERROR_KEYS.has(key) ? Number(fields[letter] ?? 0) : (fields[letter] ?? '');
  const known = new Set(ERROR_KEYS.map(([, l]) => l));
  const unknown = Object.entries(fields).filter(([l]) => !known.has(l));
  // Go's map[byte]string: yaml.v3 writes the byte as an integer key, and an empty map as {}.
  out.unknown_fields = Object.fromEntries(unknown.map(([l, v]) => [String(l.charCodeAt(0)), v]));
  return out;
}

/**
 * Wire messages read back out of Keploy Postgres packets: the `payload` when there is one (the
 * exact bytes), else rebuilt from the typed fields in `header` order, which is all Keploy keeps
 * for most packets (the fixture's responses have no payload, its password message neither).
 */

/** A typed field wherever parsing put it: on the packet (modeled keys) or in `extra`. */
function field(packet: PostgresRequestPacket | PostgresResponsePacket, key: string): unknown {
  return (packet as unknown as Record<string, unknown>)[key] ?? packet.extra?.[key];
}
const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const bytesOf = (v: unknown): Buffer | null => (v === null || v === undefined ? null : Buffer.from(list(v).map(Number)));

/** The client messages of a request packet. */
export function requestMessages(packet: PostgresRequestPacket): FrontendMessage[] {
  const startup = packet.identifier === 'StartupRequest';
  if (packet.payload) return parseFrontendBytes(Buffer.from(packet.payload, 'base64'), { startup });
  if (startup) return [];
  const counters = new Map<string, number>();
  const next = (key: string) => {
    const i = counters.get(key) ?? 0;
    counters.set(key, i + 1);
    return obj(list(field(packet, key))[i]);
  };
  return (packet.header ?? []).map((letter) => decodeTyped(requestBytes(letter, packet, next)));
}

function requestBytes(letter: string, packet: PostgresRequestPacket, next: (key: string) => Record<string, unknown>): Buffer {
  const describeLike = (v: unknown) => ({ type: String.fromCharCode(Number(obj(v).object_type ?? Target.Statement.charCodeAt(0))) as TargetCode, name: String(obj(v).name ?? '') });
  switch (letter) {
    case Frontend.Parse: {
      const p = next('parse');
      return serialize.parse({ name: String(p.name ?? ''), text: String(p.query ?? ''), types: list(p.parameter_oids).map(Number) });
    }
    case Frontend.Bind:
      return bindBytes(next('bind'));
    case Frontend.Describe:
      return serialize.describe(describeLike(field(packet, 'describe')));
    case Frontend.Close:
      return serialize.close(describeLike(field(packet, 'close')));
    case Frontend.Execute: {
      const e = next('execute');
      return serialize.execute({ portal: String(e.portal ?? ''), rows: Number(e.max_rows ?? 0) });
    }
    case Frontend.Query:
      return serialize.query(String(obj(field(packet, 'query')).string ?? ''));
    case Frontend.Sync:
      return serialize.sync();
    case Frontend.Flush:
      return serialize.flush();
    case Frontend.Terminate:
      return serialize.end();
    case Frontend.Password:
      return passwordBytes(packet);
    default:
      throw new PgProtocolError(`cannot rebuild a '${letter}' request from Keploy's typed fields (no payload)`);
  }
}

function passwordBytes(packet: PostgresRequestPacket): Buffer {
  const initial = obj(field(packet, 'sasl_initial_response'));
  if (initial.auth_mechanism !== undefined) {
    const data = bytesOf(initial.data) ?? Buffer.alloc(0);
    return new Writer().addCString(String(initial.auth_mechanism)).addInt32(data.length).add(data).flush('p'.charCodeAt(0));
  }
  const sasl = bytesOf(obj(field(packet, 'sasl_response')).data);
  if (sasl) return new Writer().add(sasl).flush('p'.charCodeAt(0));
  return serialize.password(String(obj(field(packet, 'password_message')).password ?? ''));
}

/** pg-protocol's bind() decides formats by value type and has one result format; Keploy's are explicit. */
function bindBytes(b: Record<string, unknown>): Buffer {
  const params = list(b.parameters).map(bytesOf);
  const w = new Writer().addCString(String(b.destination_portal ?? '')).addCString(String(b.prepared_statement ?? ''));
  const formats = list(b.parameter_format_codes).map(Number);
  w.addInt16(formats.length);
  for (const f of formats) w.addInt16(f);
  w.addInt16(params.length);
  for (const p of params) {
    if (p === null) w.addInt32(-1);
    else w.addInt32(p.length).add(p);
  }
  const results = list(b.result_format_codes).map(Number);
  w.addInt16(results.length);
  for (const f of results) w.addInt16(f);
  return w.flush('B'.charCodeAt(0));
}

/** The server messages of a response packet, as raw bytes. */
export function responseMessages(packet: PostgresResponsePacket): Buffer[] {
  if (packet.payload) return splitBackendBytes(Buffer.from(packet.payload, 'base64'));
  const counters = new Map<string, number>();
  const next = (key: string) => {
    const i = counters.get(key) ?? 0;
    counters.set(key, i + 1);
    return obj(list(field(packet, key))[i]);
  };
  return (packet.header ?? []).map((letter) => responseBytes(letter, packet, next));
}

function responseBytes(letter: string, packet: PostgresResponsePacket, next: (key: string) => Record<string, unknown>): Buffer {
  const one = (key: string) => obj(field(packet, key));
  switch (letter) {
    case Backend.Authentication:
      return authBytes(packet);
    case Backend.ParameterStatus: {
      const s = next('parameter_status');
      return backend.parameterStatus(String(s.name ?? ''), String(s.value ?? ''));
    }
    case Backend.BackendKeyData:
      return backend.backendKeyData(Number(one('backend_key_data').process_id ?? 0), Number(one('backend_key_data').secret_key ?? 0));
    case Backend.ReadyForQuery:
      return backend.readyForQuery(String.fromCharCode(Number(one('ready_for_query').txstatus ?? TxStatus.Idle.charCodeAt(0))));
    case Backend.RowDescription:
      return backend.rowDescription(list(one('row_description').fields).map((f) => fieldSpec(obj(f))));
    case Backend.ParameterDescription:
      return backend.parameterDescription(list(one('parameter_description').parameteroids).map(Number));
    case Backend.DataRow:
      return backend.dataRow(list(next('data_row').row_values).map(rowValueBytes));
    case Backend.CommandComplete:
      return backend.commandComplete(String(next('command_complete').command_tag_type ?? ''));
    case Backend.ErrorResponse:
      return backend.error(wireError(one('error_response')));
    case Backend.NoticeResponse:
      return backend.notice(wireError(one('notice_response')));
    case Backend.ParseComplete:
      return backend.parseComplete();
    case Backend.BindComplete:
      return backend.bindComplete();
    case Backend.CloseComplete:
      return backend.closeComplete();
    case Backend.NoData:
      return backend.noData();
    case Backend.EmptyQuery:
      return backend.emptyQuery();
    case Backend.PortalSuspended:
      return backend.portalSuspended();
    default:
      throw new PgProtocolError(`cannot rebuild a '${letter}' response from Keploy's typed fields (no payload)`);
  }
}

function authBytes(packet: PostgresResponsePacket): Buffer {
  const code = packet.auth_type ?? 0;
  if (code === Auth.MD5Password) return backend.authentication(Auth.MD5Password, bytesOf(obj(field(packet, 'authentication_md5_password')).salt) ?? Buffer.alloc(4));
  if (code === Auth.SASL) {
    const names = list(obj(field(packet, 'authentication_sasl')).auth_mechanisms).map(String);
    return backend.authentication(Auth.SASL, Buffer.from(names.map((n) => `${n}\0`).join('') + '\0'));
  }
  if (code === Auth.SASLContinue || code === Auth.SASLFinal) {
    const key = code === Auth.SASLContinue ? 'authentication_sasl_continue' : 'authentication_sasl_final';
    return backend.authentication(code, bytesOf(obj(field(packet, key)).data) ?? Buffer.alloc(0));
  }
  return backend.authentication(code);
}

function fieldSpec(f: Record<string, unknown>) {
  return {
    name: String(f.field_name ?? ''),
    tableOid: Number(f.table_oid ?? 0),
    column: Number(f.table_attribute_number ?? 0),
    typeOid: Number(f.data_type_oid ?? 0),
    typeSize: Number(f.data_type_size ?? 0),
    typeModifier: Number(f.type_modifier ?? -1),
    format: Number(f.format ?? 0),
  };
}

function rowValueBytes(v: unknown): Buffer | null {
  const decoded = decodeRowValue(v === null || v === undefined ? null : String(v));
  if (decoded === null) return null;
  return typeof decoded === 'string' ? Buffer.from(decoded, 'utf8') : Buffer.from(decoded);
}

function wireError(e: Record<string, unknown>): ErrorFields {
  const out: ErrorFields = {};
  for (const [key, letter] of ERROR_KEYS) {
    const v = e[key];
    if (v === undefined || v === null || v === '' || (NUMERIC_ERROR_KEYS.has(key) && Number(v) === 0)) continue;
    out[letter] = String(v);
  }
  for (const [code, v] of Object.entries(obj(e.unknown_fields))) out[String.fromCharCode(Number(code))] = String(v);
  return out;
}
