import { DebugkitError } from '../../../core/errors.js';
import type { BindMessage, FrontendMessage, OpaqueMessage, TypedMessage, UntypedMessage } from './messages.js';
import { Auth, CANCEL_REQUEST_CODE, Frontend, GSSENC_REQUEST_CODE, MAX_STARTUP_BYTES, SSL_REQUEST_CODE, Target } from './protocol.js';

/**
 * Incremental parser of what a PostgreSQL client sends (protocol v3, "Message Formats" in the
 * PostgreSQL docs). pg-protocol parses the server's side; the client's side is ours.
 *
 * A connection opens with untyped messages (int32 length, int32 code): SSLRequest and
 * GSSENCRequest (each answered by one byte, after which another untyped message follows),
 * CancelRequest (alone on its connection), then the StartupMessage. Everything after the
 * StartupMessage is typed: one type byte, int32 length (counting itself), body.
 * The message shapes are in messages.ts.
 */

/** Longest typed message accepted; PostgreSQL itself caps a field at 1 GB, clients rarely exceed this. */
export const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
export { CANCEL_REQUEST_CODE, GSSENC_REQUEST_CODE, MAX_STARTUP_BYTES, PROTOCOL_3_0, SSL_REQUEST_CODE } from './protocol.js';

export class PgProtocolError extends DebugkitError {
  override name = 'PgProtocolError';
  constructor(message: string) {
    super('INVALID_ARGUMENT', `PostgreSQL protocol error: ${message}`);
  }
}

export type * from './messages.js';

const TYPED = new Set<string>(Object.values(Frontend));
/** `'X'` for each message type, as errors name it (made once, not per message). */
const QUOTED = new Map<string, string>([...TYPED].map((t) => [t, `'${t}'`]));

/** Reads a message body; every overrun is a protocol error rather than a RangeError. */
class Reader {
  constructor(
    private readonly buf: Buffer,
    private pos: number,
    private readonly what: string,
  ) {}
  private need(n: number): void {
    if (this.pos + n > this.buf.length) throw new PgProtocolError(`${this.what} message is truncated`);
  }
  int16(): number {
    this.need(2);
    const b = this.buf;
    const at = (this.pos += 2) - 2;
    // readInt16BE's value, read from the bytes (the bounds are checked above).
    return (((b[at]! << 8) | b[at + 1]!) << 16) >> 16;
  }
  /** An int16 count of items that follow; negative is malformed. */
  count(): number {
    const n = this.int16();
    if (n < 0) throw new PgProtocolError(`${this.what} message has a negative count`);
    return n;
  }
  int32(): number {
    this.need(4);
    const b = this.buf;
    const at = (this.pos += 4) - 4;
    return (b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!;
  }
  uint32(): number {
    return this.int32() >>> 0;
  }
  bytes(n: number): Buffer {
    if (n < 0) throw new PgProtocolError(`${this.what} message has a negative length`);
    this.need(n);
    return this.buf.subarray(this.pos, (this.pos += n));
  }
  cstring(): string {
    const end = this.buf.indexOf(0, this.pos);
    if (end < 0) throw new PgProtocolError(`${this.what} message has an unterminated string`);
    const s = this.buf.toString('utf8', this.pos, end);
    this.pos = end + 1;
    return s;
  }
  remaining(): number {
    return this.buf.length - this.pos;
  }
  end(): void {
    if (this.pos !== this.buf.length) throw new PgProtocolError(`${this.what} message has ${this.buf.length - this.pos} extra bytes`);
  }
}

/**
 * Feed it the client's bytes in any chunking; it returns each complete message once. A malformed
 * stream throws `PgProtocolError` and the parser must not be used further.
 */
export class FrontendParser {
  private chunks: Buffer[] = [];
  /** Where the first chunk's bytes not taken yet begin (the chunk is not re-sliced per message). */
  private offset = 0;
  /** Bytes received and not taken yet (from `offset` on). */
  private total = 0;
  private untyped: boolean;

  /** `startup: false` parses typed messages from the first byte (a recorded query payload). */
  constructor({ startup = true }: { startup?: boolean } = {}) {
    this.untyped = startup;
  }

  /** Bytes received but not yet part of a complete message. */
  get buffered(): number {
    return this.total;
  }

  push(chunk: Buffer): FrontendMessage[] {
    if (chunk.length > 0) {
      this.chunks.push(chunk);
      this.total += chunk.length;
    }
    const out: FrontendMessage[] = [];
    for (let m = this.take(); m; m = this.take()) out.push(m);
    return out;
  }

  private take(): FrontendMessage | undefined {
    const headBytes = this.untyped ? 4 : 5;
    if (this.total < headBytes) return undefined;
    // The first chunk holds the head (chunks are joined only when it is too short).
    if (this.chunks[0]!.length - this.offset < headBytes) this.join();
    const first = this.chunks[0]!;
    const size = this.untyped ? untypedLength(first, this.offset) : typedLength(first, this.offset);
    if (size === undefined || this.total < size) return undefined;
    const raw = this.consume(size);
    if (!this.untyped) return decodeTyped(raw);
    const msg = decodeUntyped(raw);
    // SSL/GSS requests are followed by another untyped message; a cancel ends the connection.
    if (msg.type === 'startup') this.untyped = false;
    return msg;
  }

  /** One chunk of every byte not taken yet. */
  private join(): void {
    this.chunks = [Buffer.concat([this.chunks[0]!.subarray(this.offset), ...this.chunks.slice(1)], this.total)];
    this.offset = 0;
  }

  private consume(n: number): Buffer {
    // Joins only once a whole message is there: no quadratic copying of a large message.
    if (this.chunks[0]!.length - this.offset < n) this.join();
    const first = this.chunks[0]!;
    const raw = first.subarray(this.offset, this.offset + n);
    this.offset += n;
    if (this.offset === first.length) {
      this.chunks.shift();
      this.offset = 0;
    }
    this.total -= n;
    return raw;
  }
}

/** Total size of the untyped message `head` starts at `at` (undefined: need 4 bytes); `head` may run on past it. */
export function untypedLength(head: Buffer | undefined, at = 0): number | undefined {
  if (!head || head.length - at < 4) return undefined;
  const len = head.readUInt32BE(at);
  if (len < 8 || len > MAX_STARTUP_BYTES) throw new PgProtocolError(`startup packet length ${len} is outside 8..${MAX_STARTUP_BYTES}`);
  return len;
}

function typedLength(head: Buffer, at: number): number | undefined {
  if (head.length - at < 5) return undefined;
  const type = String.fromCharCode(head[at]!);
  if (!TYPED.has(type)) throw new PgProtocolError(`unknown frontend message type 0x${head[at]!.toString(16).padStart(2, '0')}`);
  const len = head.readUInt32BE(at + 1);
  if (len < 4 || len > MAX_MESSAGE_BYTES) throw new PgProtocolError(`'${type}' message length ${len} is outside 4..${MAX_MESSAGE_BYTES}`);
  return len + 1;
}

export function decodeUntyped(raw: Buffer): UntypedMessage {
  const r = new Reader(raw, 4, 'startup');
  const code = r.uint32();
  if (code === SSL_REQUEST_CODE || code === GSSENC_REQUEST_CODE) {
    r.end();
    return { type: code === SSL_REQUEST_CODE ? 'ssl' : 'gssenc', raw };
  }
  if (code === CANCEL_REQUEST_CODE) {
    const processId = r.int32();
    return { type: 'cancel', processId, secretKey: r.bytes(r.remaining()), raw };
  }
  if (code >>> 16 !== 3) throw new PgProtocolError(`unsupported protocol version ${code >>> 16}.${code & 0xffff}`);
  const parameters: Record<string, string> = {};
  for (;;) {
    const name = r.cstring();
    if (name === '') break;
    Object.defineProperty(parameters, name, { value: r.cstring(), enumerable: true, writable: true, configurable: true });
  }
  r.end();
  return { type: 'startup', protocolVersion: code, parameters, raw };
}

export function decodeTyped(raw: Buffer): TypedMessage {
  const type = String.fromCharCode(raw[0]!);
  const r = new Reader(raw, 5, QUOTED.get(type) ?? `'${type}'`);
  let msg: TypedMessage;
  switch (type) {
    case Frontend.Query:
      msg = { type, query: r.cstring(), raw };
      break;
    case Frontend.Parse: {
      const name = r.cstring();
      const query = r.cstring();
      const paramTypes = new Array<number>(r.count());
      for (let i = 0; i < paramTypes.length; i++) paramTypes[i] = r.uint32();
      msg = { type, name, query, paramTypes, raw };
      break;
    }
    case Frontend.Bind:
      msg = decodeBind(r, raw);
      break;
    case Frontend.Describe:
    case Frontend.Close: {
      const target = String.fromCharCode(r.bytes(1)[0]!);
      if (target !== Target.Statement && target !== Target.Portal) throw new PgProtocolError(`'${type}' message targets '${target}', not S or P`);
      msg = { type, target, name: r.cstring(), raw };
      break;
    }
    case Frontend.Execute:
      msg = { type, portal: r.cstring(), maxRows: r.int32(), raw };
      break;
    case Frontend.Sync:
    case Frontend.Flush:
    case Frontend.Terminate:
    case Frontend.CopyDone:
      msg = { type, raw };
      break;
    default:
      return { type: type as OpaqueMessage['type'], body: raw.subarray(5), raw };
  }
  r.end();
  return msg;
}

function decodeBind(r: Reader, raw: Buffer): BindMessage {
  const portal = r.cstring();
  const statement = r.cstring();
  const paramFormats = int16s(r);
  const params = new Array<Buffer | null>(r.count());
  for (let i = 0; i < params.length; i++) {
    const len = r.int32();
    params[i] = len === -1 ? null : r.bytes(len);
  }
  const resultFormats = int16s(r);
  return { type: Frontend.Bind, portal, statement, paramFormats, params, resultFormats, raw };
}

/** An int16 count, then that many int16s (Bind's format codes). */
function int16s(r: Reader): number[] {
  const out = new Array<number>(r.count());
  for (let i = 0; i < out.length; i++) out[i] = r.int16();
  return out;
}

/** All messages of a complete byte string (a recorded payload); a partial message is an error. */
export function parseFrontendBytes(bytes: Buffer, { startup = false }: { startup?: boolean } = {}): FrontendMessage[] {
  const parser = new FrontendParser({ startup });
  const out = parser.push(bytes);
  if (parser.buffered > 0) throw new PgProtocolError(`${parser.buffered} trailing bytes do not form a whole message`);
  return out;
}

/** Which message a `p` answers: the authentication request code the server sent before it. */
export type PasswordBody = { kind: 'password'; password: string } | { kind: 'sasl-initial'; mechanism: string; data: Buffer | null } | { kind: 'sasl'; data: Buffer } | { kind: 'gss'; data: Buffer };

/** Decodes a `p` body given the server's last AuthenticationRequest code (3/5 password, 10 SASL, 11 SASL continue). */
export function decodePasswordBody(body: Buffer, authCode: number): PasswordBody {
  const r = new Reader(body, 0, "'p'");
  if (authCode === Auth.SASL) {
    const mechanism = r.cstring();
    const len = r.int32();
    return { kind: 'sasl-initial', mechanism, data: len === -1 ? null : r.bytes(len) };
  }
  if (authCode === Auth.SASLContinue || authCode === Auth.SASLFinal) return { kind: 'sasl', data: body };
  if (authCode === Auth.GSS || authCode === Auth.GSSContinue || authCode === Auth.SSPI) return { kind: 'gss', data: body };
  return { kind: 'password', password: r.cstring() };
}

/** Normalizes Bind-style format codes to one per item ([] = text, [f] = all f). */
export function formatsFor(codes: readonly number[], count: number): number[] {
  if (codes.length === 0) return new Array<number>(count).fill(0);
  if (codes.length === 1) return new Array<number>(count).fill(codes[0]!);
  return Array.from({ length: count }, (_, i) => codes[i] ?? 0);
}
