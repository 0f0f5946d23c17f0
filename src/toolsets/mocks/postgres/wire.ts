import { EventEmitter } from 'node:events';
import { parse as parseBackend } from 'pg-protocol';
import { PgProtocolError } from './frontend.js';
import type { Verdict } from '../protocol.js';
import { Backend, CANCEL_REQUEST_CODE, GSSENC_REQUEST_CODE, MAX_STARTUP_BYTES, SSL_REQUEST_CODE, TxStatus } from './protocol.js';

/**
 * The server's side of the wire: splitting a byte stream into whole backend messages (kept as
 * their raw bytes, which replay sends back unchanged), typed views of them from pg-protocol's
 * Parser, and a serializer for the messages a replayer has to make up itself.
 */

/** Backend messages larger than this stop the recording of a connection (the traffic still flows). */
export const MAX_BACKEND_MESSAGE_BYTES = 256 * 1024 * 1024;

/** The type letter of a raw message. */
export function codeOf(raw: Buffer): string {
  return String.fromCharCode(raw[0]!);
}

/** Splits a backend byte stream into raw messages, in any chunking. */
export class BackendSplitter {
  private chunks: Buffer[] = [];
  private total = 0;

  push(chunk: Buffer): Buffer[] {
    if (chunk.length > 0) {
      this.chunks.push(chunk);
      this.total += chunk.length;
    }
    const out: Buffer[] = [];
    for (;;) {
      if (this.total < 5) break;
      if (this.chunks[0]!.length < 5) this.join();
      const len = this.chunks[0]!.readUInt32BE(1);
      if (len < 4 || len > MAX_BACKEND_MESSAGE_BYTES) throw new PgProtocolError(`backend message length ${len} is outside 4..${MAX_BACKEND_MESSAGE_BYTES}`);
      if (this.total < len + 1) break;
      if (this.chunks[0]!.length < len + 1) this.join();
      const first = this.chunks[0]!;
      out.push(first.subarray(0, len + 1));
      if (first.length === len + 1) this.chunks.shift();
      else this.chunks[0] = first.subarray(len + 1);
      this.total -= len + 1;
    }
    return out;
  }

  get buffered(): number {
    return this.total;
  }

  private join(): void {
    this.chunks = [Buffer.concat(this.chunks, this.total)];
  }
}

/** All messages of a complete byte string (a recorded response payload). */
export function splitBackendBytes(bytes: Buffer): Buffer[] {
  const splitter = new BackendSplitter();
  const out = splitter.push(bytes);
  if (splitter.buffered > 0) throw new PgProtocolError(`${splitter.buffered} trailing bytes do not form a whole backend message`);
  return out;
}

/** Auth/ParameterStatus/... views pg-protocol gives (`name` and `length`, then fields that vary by message). */
export type TypedBackend = { name: string; length: number } & Record<string, unknown>;

/**
 * pg-protocol's public `parse(stream, callback)` over a stand-in stream: emitting 'data' runs its
 * parser synchronously, so one raw message in gives its view out before `emit` returns.
 */
class SyncParser {
  private readonly input = new EventEmitter();
  private last: TypedBackend | undefined;

  constructor() {
    void parseBackend(this.input as unknown as NodeJS.ReadableStream, (msg) => (this.last = msg as unknown as TypedBackend));
  }

  parse(raw: Buffer, callback: (msg: TypedBackend) => void): void {
    this.last = undefined;
    this.input.emit('data', raw);
    if (this.last) callback(this.last);
  }
}

let parser = new SyncParser();

/**
 * pg-protocol's view of one whole raw message, or undefined for what it cannot parse (GSS/SSPI
 * authentication, unknown types). DataRow values come back as UTF-8 strings there, which breaks
 * binary-format columns: use `dataRowValues` for those.
 */
export function decodeBackend(raw: Buffer): TypedBackend | undefined {
  let out: TypedBackend | undefined;
  try {
    parser.parse(raw, (msg) => (out = msg as TypedBackend));
  } catch {
    // A throw leaves the parser holding the message's bytes: start over with a fresh one.
    parser = new SyncParser();
    return undefined;
  }
  return out;
}

/** The column values of a DataRow as bytes (null = SQL NULL). */
export function dataRowValues(raw: Buffer): Array<Buffer | null> {
  const count = raw.readInt16BE(5);
  const values: Array<Buffer | null> = [];
  let pos = 7;
  for (let i = 0; i < count; i++) {
    const len = raw.readInt32BE(pos);
    pos += 4;
    if (len < 0) values.push(null);
    else {
      if (pos + len > raw.length) throw new PgProtocolError('DataRow is truncated');
      values.push(raw.subarray(pos, (pos += len)));
    }
  }
  return values;
}

/** The authentication request code of an 'R' message (0 ok, 5 MD5, 10 SASL, ...). */
export function authCodeOf(raw: Buffer): number {
  return raw.length >= 9 ? raw.readInt32BE(5) : -1;
}

// ---------------------------------------------------------------- serializer

/** Builds one message: fields appended, then `flush(code)` prefixes the type byte and the length. */
export class Writer {
  private parts: Buffer[] = [];
  private size = 0;

  add(b: Buffer): this {
    this.parts.push(b);
    this.size += b.length;
    return this;
  }
  addInt16(n: number): this {
    const b = Buffer.alloc(2);
    b.writeInt16BE(n);
    return this.add(b);
  }
  /** A count PostgreSQL sends as an unsigned Int16 (a statement has up to 65535 parameters). */
  addUInt16(n: number): this {
    const b = Buffer.alloc(2);
    b.writeUInt16BE(n);
    return this.add(b);
  }
  addInt32(n: number): this {
    const b = Buffer.alloc(4);
    b.writeInt32BE(n);
    return this.add(b);
  }
  addString(s: string): this {
    return this.add(Buffer.from(s, 'utf8'));
  }
  addCString(s: string): this {
    return this.add(Buffer.from(`${s}\0`, 'utf8'));
  }
  /** The message: type byte (when given), int32 length (itself included), the fields. */
  flush(typeCode?: number): Buffer {
    const head = Buffer.alloc(typeCode === undefined ? 4 : 5);
    if (typeCode !== undefined) head[0] = typeCode;
    head.writeInt32BE(this.size + 4, head.length - 4);
    const out = Buffer.concat([head, ...this.parts], head.length + this.size);
    this.parts = [];
    this.size = 0;
    return out;
  }
}

export interface FieldSpec {
  name: string;
  tableOid: number;
  column: number;
  typeOid: number;
  typeSize: number;
  typeModifier: number;
  format: number;
}

/** ErrorResponse/NoticeResponse fields by their one-letter code (S severity, C SQLSTATE, M message, ...). */
export type ErrorFields = Record<string, string>;

const code = (c: string) => c.charCodeAt(0);
const empty = (c: string) => new Writer().flush(code(c));
const readyForQuery = (status: string): Buffer => new Writer().add(Buffer.from(status.slice(0, 1) || TxStatus.Idle, 'latin1')).flush(code(Backend.ReadyForQuery));
const READY: Readonly<Record<string, Buffer>> = Object.freeze({
  [TxStatus.Idle]: readyForQuery(TxStatus.Idle),
  [TxStatus.InTransaction]: readyForQuery(TxStatus.InTransaction),
  [TxStatus.Failed]: readyForQuery(TxStatus.Failed),
});

export const backend = {
  authentication(authCode: number, data?: Buffer): Buffer {
    const w = new Writer().addInt32(authCode);
    if (data) w.add(data);
    return w.flush(code(Backend.Authentication));
  },
  authenticationOk: (): Buffer => backend.authentication(0),
  parameterStatus: (name: string, value: string): Buffer => new Writer().addCString(name).addCString(value).flush(code(Backend.ParameterStatus)),
  backendKeyData: (processId: number, secretKey: number): Buffer => new Writer().addInt32(processId).addInt32(secretKey).flush(code(Backend.BackendKeyData)),
  /** One of three constant messages (I, T, E) for every group a replay answers: callers never change the bytes they send. */
  readyForQuery: (status: string): Buffer => READY[status] ?? readyForQuery(status),
  parseComplete: (): Buffer => empty(Backend.ParseComplete),
  bindComplete: (): Buffer => empty(Backend.BindComplete),
  closeComplete: (): Buffer => empty(Backend.CloseComplete),
  noData: (): Buffer => empty(Backend.NoData),
  emptyQuery: (): Buffer => empty(Backend.EmptyQuery),
  portalSuspended: (): Buffer => empty(Backend.PortalSuspended),
  commandComplete: (tag: string): Buffer => new Writer().addCString(tag).flush(code(Backend.CommandComplete)),
  parameterDescription(oids: readonly number[]): Buffer {
    const w = new Writer().addUInt16(oids.length);
    for (const oid of oids) w.addInt32(oid);
    return w.flush(code(Backend.ParameterDescription));
  },
  rowDescription(fields: readonly FieldSpec[]): Buffer {
    const w = new Writer().addInt16(fields.length);
    for (const f of fields) {
      w.addCString(f.name).addInt32(f.tableOid).addInt16(f.column).addInt32(f.typeOid).addInt16(f.typeSize).addInt32(f.typeModifier).addInt16(f.format);
    }
    return w.flush(code(Backend.RowDescription));
  },
  dataRow(values: ReadonlyArray<Buffer | null>): Buffer {
    const w = new Writer().addInt16(values.length);
    for (const v of values) {
      if (v === null) w.addInt32(-1);
      else w.addInt32(v.length).add(v);
    }
    return w.flush(code(Backend.DataRow));
  },
  error: (fields: ErrorFields): Buffer => noticeLike(Backend.ErrorResponse, fields),
  notice: (fields: ErrorFields): Buffer => noticeLike(Backend.NoticeResponse, fields),
  /** Tells a client asking for a newer 3.x minor version (or `_pq_.` options) what this server speaks. */
  negotiateProtocolVersion(minor: number, unsupported: readonly string[]): Buffer {
    const w = new Writer().addInt32(minor).addInt32(unsupported.length);
    for (const option of unsupported) w.addCString(option);
    return w.flush(code(Backend.NegotiateProtocolVersion));
  },
};

function noticeLike(c: typeof Backend.ErrorResponse | typeof Backend.NoticeResponse, fields: ErrorFields): Buffer {
  const w = new Writer();
  for (const [key, value] of Object.entries(fields)) {
    if (key.length === 1 && value !== '') w.add(Buffer.from(key, 'latin1')).addCString(value);
  }
  w.add(Buffer.from([0]));
  return w.flush(code(c));
}

const fieldsOf = new WeakMap<Buffer, readonly FieldSpec[]>();

/** The fields of a RowDescription, for rewriting its format codes (decoded once per recorded message). */
export function rowFields(raw: Buffer): readonly FieldSpec[] {
  let fields = fieldsOf.get(raw);
  if (!fields) fieldsOf.set(raw, (fields = decodeRowFields(raw)));
  return fields;
}

function decodeRowFields(raw: Buffer): FieldSpec[] {
  const msg = decodeBackend(raw) as (TypedBackend & { fields?: Array<Record<string, unknown>> }) | undefined;
  return (msg?.fields ?? []).map((f) => ({
    name: String(f.name),
    tableOid: Number(f.tableID),
    column: Number(f.columnID),
    typeOid: Number(f.dataTypeID),
    typeSize: Number(f.dataTypeSize),
    typeModifier: Number(f.dataTypeModifier),
    format: f.format === 'binary' ? 1 : 0,
  }));
}

/**
 * The one-letter fields of an ErrorResponse/NoticeResponse, in order. pg-protocol maps them to
 * names but drops some (V, the unlocalized severity) and unknown ones, which Keploy keeps.
 */
export function errorFields(raw: Buffer): ErrorFields {
  const out: ErrorFields = {};
  let pos = 5;
  while (pos < raw.length && raw[pos] !== 0) {
    const key = String.fromCharCode(raw[pos]!);
    const end = raw.indexOf(0, pos + 1);
    if (end < 0) break;
    out[key] = raw.toString('utf8', pos + 1, end);
    pos = end + 1;
  }
  return out;
}

/** Every Postgres first message is int32 length + int32 code; the codes are distinctive. */
export function detect(buf: Buffer): Verdict {
  // The length is below 2^24, so its first byte is 0 (in ASCII protocols it never is).
  if (buf[0] !== 0) return 'no';
  if (buf.length < 8) return 'maybe';
  const len = buf.readUInt32BE(0);
  const code = buf.readUInt32BE(4);
  if (len === 8 && (code === SSL_REQUEST_CODE || code === GSSENC_REQUEST_CODE)) return { protocol: 'postgres' };
  if (len === 16 && code === CANCEL_REQUEST_CODE) return { protocol: 'postgres' };
  // StartupMessage: protocol major version 3 (196608 = 3.0; 3.2 is 196610).
  if (code >>> 16 === 3 && len > 8 && len <= MAX_STARTUP_BYTES) return { protocol: 'postgres' };
  return 'no';
}
