import { serialize } from 'pg-protocol';
import { decodeRowValue } from '../keploy/postgres.js';
import type { PostgresRequestPacket, PostgresResponsePacket } from '../keploy/types.js';
import { decodeTyped, parseFrontendBytes, PgProtocolError, type FrontendMessage } from './frontend.js';
import { ERROR_KEYS, NUMERIC_ERROR_KEYS } from './packets.js';
import { backend, splitBackendBytes, Writer, type ErrorFields } from './wire.js';
import { Auth, Backend, Frontend, Target, TxStatus, type TargetCode } from './protocol.js';

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
