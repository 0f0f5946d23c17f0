import { encodeRowValue } from '../keploy/postgres.js';
import type { Extra, PgMessage, PostgresRequestPacket, PostgresResponsePacket, YamlMap, YamlValue } from '../keploy/types.js';
import { decodePasswordBody, type FrontendMessage } from './frontend.js';
import { authCodeOf, codeOf, dataRowValues, decodeBackend, errorFields, rowFields, type ErrorFields } from './wire.js';
import { Auth, Backend, Frontend } from './protocol.js';

/**
 * Keploy's Postgres packets (`models.Backend` for what the client sent, `models.Frontend` for the
 * server's answer) built from wire messages; unpack.ts reads wire messages back out of them.
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
}

// ---------------------------------------------------------------- building

export function buildRequestPacket(messages: readonly FrontendMessage[], ctx: PacketContext): PostgresRequestPacket {
  const payload = base64(messages.map((m) => m.raw));
  const first = messages[0];
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
  const header = messages.map(codeOf);
  const packet: PostgresResponsePacket = { header, identifier: 'ServerResponse', length: ctx.length, payload: base64(messages), auth_type: 0 };
  const extra: Extra = {};
  for (const raw of messages) addResponseFields(packet, extra, raw);
  if (header.length > 0) packet.msg_type = header[header.length - 1]!.charCodeAt(0);
  if (Object.keys(extra).length > 0) packet.extra = extra;
  return packet;
}

function addResponseFields(packet: PostgresResponsePacket, extra: Extra, raw: Buffer): void {
  const msg = decodeBackend(raw);
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
