import type { TimeSlice } from '../../../core/wait.js';
import { keployTime } from '../keploy/http.js';
import { protoscopeBytes, protoscopeText } from './protoscope.js';
import { KEPLOY_MOCK_VERSION, type Mock, type PassThroughMock, type YamlMap, type YamlValue } from '../keploy/types.js';

/**
 * gRPC as Keploy stores it (`models.GrpcSpec`, kind `gRPC`): `grpcReq` and `grpcResp`, each with
 * `headers.pseudo_headers`/`headers.ordinary_headers`, one length-prefixed message as `body`
 * (`compression_flag`, `message_length`, `decoded_data`), the response's `trailers`, and
 * `reqTimestampMock`/`resTimestampMock`.
 *
 * Keploy writes `decoded_data` as protoscope text (see protoscope.ts), which reads back to the
 * exact bytes; debugkit writes the same text (as Keploy, also for a compressed message; one whose
 * text would not read back stays bytes, written `!!binary`). Keploy's model
 * (keploy/keploy pkg/models/grpc.go) has one `body` a direction; a stream of several messages
 * keeps the first in `body` and the rest in `additional_messages` (omitted for one message), and
 * a response message of a stream that came before the client's end notes
 * `debugkit_after_requests` (see GrpcMessage). A direction with no message at all (a trailers-only error) has a zeroed `body`, which
 * Keploy reads as one empty message: debugkit adds `debugkit_no_messages: true` (a key Keploy
 * ignores) to replay it as none.
 */

export interface GrpcMessage {
  compressed: boolean;
  data: Uint8Array;
  /**
   * A response message of a stream: how many request messages had arrived when it came, so a
   * replay answers it as soon as those have arrived (a bidirectional ping-pong works); undefined
   * when it came after the client ended its side (then it waits for that end).
   */
  afterRequests?: number;
}

export type HeaderMap = Record<string, string>;

export interface GrpcExchange {
  requestHeaders: HeaderMap;
  requestMessages: GrpcMessage[];
  responseHeaders: HeaderMap;
  responseMessages: GrpcMessage[];
  trailers: HeaderMap;
  /** The server ended the call after this many request messages, before the client ended its side. */
  trailersAfterRequests?: number;
  requestTime: Date;
  responseTime: Date;
}

export function isGrpc(headers: Record<string, unknown>): boolean {
  const type = headers['content-type'];
  return typeof type === 'string' && /^application\/grpc(\+|;|$)/i.test(type);
}

/** Splits a gRPC body into its length-prefixed messages; a truncated tail is kept as a last, partial message. */
export function splitMessages(body: Uint8Array): GrpcMessage[] {
  const buf = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const out: GrpcMessage[] = [];
  let at = 0;
  while (at + 5 <= buf.length) {
    const len = buf.readUInt32BE(at + 1);
    const end = Math.min(buf.length, at + 5 + len);
    out.push({ compressed: buf[at] === 1, data: new Uint8Array(buf.subarray(at + 5, end)) });
    at = end;
  }
  return out;
}

/**
 * Splits a gRPC body into messages as it arrives, chunk by chunk. Chunks are joined only once the
 * message at the front is whole (no copy of a growing buffer per DATA frame).
 */
export class MessageReader {
  private chunks: Buffer[] = [];
  private total = 0;

  /** The messages the chunk completes. */
  push(chunk: Uint8Array): GrpcMessage[] {
    if (chunk.byteLength > 0) {
      this.chunks.push(Buffer.from(chunk)); // a copy: the caller may reuse its buffer
      this.total += chunk.byteLength;
    }
    const out: GrpcMessage[] = [];
    while (this.total >= 5) {
      const end = 5 + this.front(5).readUInt32BE(1);
      if (this.total < end) break;
      const buf = this.front(end);
      out.push({ compressed: buf[0] === 1, data: new Uint8Array(buf.subarray(5, end)) });
      if (buf.length === end) this.chunks.shift();
      else this.chunks[0] = buf.subarray(end);
      this.total -= end;
    }
    return out;
  }

  /** The first chunk, holding at least n bytes (the chunks are joined when it is shorter). */
  private front(n: number): Buffer {
    if (this.chunks[0]!.length < n) this.chunks = [Buffer.concat(this.chunks, this.total)];
    return this.chunks[0]!;
  }

  /** Bytes of a message not complete yet. */
  get pending(): number {
    return this.total;
  }
}

export function frameMessages(messages: readonly GrpcMessage[]): Buffer {
  return Buffer.concat(
    messages.map((m) => {
      const head = Buffer.alloc(5);
      head[0] = m.compressed ? 1 : 0;
      head.writeUInt32BE(m.data.byteLength, 1);
      return Buffer.concat([head, Buffer.from(m.data)]);
    }),
  );
}

function splitHeaders(headers: HeaderMap): YamlMap {
  const pseudo: YamlMap = {};
  const ordinary: YamlMap = {};
  for (const [k, v] of Object.entries(headers)) (k.startsWith(':') ? pseudo : ordinary)[k] = v;
  return { pseudo_headers: pseudo, ordinary_headers: ordinary };
}

/** Over this, a message is kept as bytes: its text costs about 0.3 s a MiB on the event loop. */
const TEXT_LIMIT = 1 << 20;

/** Keploy's decoded text when it reads back to the same bytes (it always should), else the bytes. */
function decodedData(m: GrpcMessage): string | Uint8Array {
  if (m.data.byteLength > TEXT_LIMIT) return m.data;
  const text = protoscopeText(m.data);
  try {
    if (Buffer.compare(protoscopeBytes(text), m.data) === 0) return text;
  } catch {
    // fall through to the bytes
  }
  return m.data;
}

function messageYaml(m: GrpcMessage | undefined): YamlMap {
  const y: YamlMap = { compression_flag: m?.compressed ? 1 : 0, message_length: m?.data.byteLength ?? 0, decoded_data: m ? decodedData(m) : '' };
  if (m?.afterRequests !== undefined) y.debugkit_after_requests = m.afterRequests;
  return y;
}

function bodyYaml(messages: readonly GrpcMessage[]): YamlMap {
  const body: YamlMap = { body: messageYaml(messages[0]) };
  if (messages.length > 1) body.additional_messages = messages.slice(1).map(messageYaml);
  if (messages.length === 0) body.debugkit_no_messages = true;
  return body;
}

export function buildGrpcMock(ex: GrpcExchange): PassThroughMock {
  const { body: reqBody, ...reqMore } = bodyYaml(ex.requestMessages);
  const { body: respBody, ...respMore } = bodyYaml(ex.responseMessages);
  return {
    version: KEPLOY_MOCK_VERSION,
    kind: 'gRPC',
    name: 'mocks',
    spec: {
      grpcReq: { headers: splitHeaders(ex.requestHeaders), body: reqBody!, ...reqMore },
      grpcResp: {
        headers: splitHeaders(ex.responseHeaders),
        body: respBody!,
        trailers: splitHeaders(ex.trailers),
        ...respMore,
        ...(ex.trailersAfterRequests !== undefined ? { debugkit_trailers_after_requests: ex.trailersAfterRequests } : {}),
      },
      reqTimestampMock: keployTime(ex.requestTime),
      resTimestampMock: keployTime(ex.responseTime),
    },
  };
}

// ------------------------------------------------------------------ reading a mock back

export interface GrpcCall {
  name: string;
  path: string;
  authority: string;
  requestMessages: GrpcMessage[];
  responseHeaders: HeaderMap;
  responseMessages: GrpcMessage[];
  trailers: HeaderMap;
  /** The server ended the call once this many request messages had come (the client still sending). */
  trailersAfterRequests?: number;
}

const asMap = (v: YamlValue | undefined): YamlMap => (v && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Uint8Array) ? (v as YamlMap) : {});

function stringMap(v: YamlValue | undefined): HeaderMap {
  const out: HeaderMap = {};
  for (const [k, x] of Object.entries(asMap(v))) if (x !== null && typeof x !== 'object') out[k] = String(x);
  return out;
}

/** Protoscope text (what Keploy writes) as bytes; text that is not protoscope stays its UTF-8 bytes. */
function textBytes(text: string): Uint8Array {
  try {
    return protoscopeBytes(text);
  } catch {
    return Buffer.from(text, 'utf8');
  }
}

function readMessage(v: YamlValue | undefined): GrpcMessage | undefined {
  const m = asMap(v);
  const data = m.decoded_data;
  const len = Number(m.message_length ?? 0);
  const after = m.debugkit_after_requests;
  const extra = typeof after === 'number' && Number.isInteger(after) && after >= 0 ? { afterRequests: after } : {};
  if (data instanceof Uint8Array) return { compressed: Number(m.compression_flag) === 1, data, ...extra };
  if (typeof data === 'string' && (data.length > 0 || len === 0)) return { compressed: Number(m.compression_flag) === 1, data: textBytes(data), ...extra };
  return undefined;
}

function readMessages(side: YamlMap): GrpcMessage[] {
  if (side.debugkit_no_messages === true) return [];
  const first = readMessage(side.body) ?? { compressed: false, data: new Uint8Array(0) };
  const rest = Array.isArray(side.additional_messages) ? side.additional_messages.map(readMessage) : [];
  return [first, ...rest.filter((m): m is GrpcMessage => m !== undefined)];
}

function joined(headers: YamlMap): HeaderMap {
  return { ...stringMap(headers.pseudo_headers), ...stringMap(headers.ordinary_headers) };
}

/** A `gRPC` mock as a call to answer; undefined when it lacks a path. */
export function readGrpcMock(mock: Mock): GrpcCall | undefined {
  if (mock.kind !== 'gRPC') return undefined;
  const spec = asMap(mock.spec as YamlValue);
  const req = asMap(spec.grpcReq);
  const resp = asMap(spec.grpcResp);
  const reqHeaders = joined(asMap(req.headers));
  const path = reqHeaders[':path'];
  if (!path) return undefined;
  return {
    name: mock.name,
    path,
    authority: reqHeaders[':authority'] ?? '',
    requestMessages: readMessages(req),
    responseHeaders: joined(asMap(resp.headers)),
    responseMessages: readMessages(resp),
    trailers: joined(asMap(resp.trailers)),
    ...(typeof resp.debugkit_trailers_after_requests === 'number' && resp.debugkit_trailers_after_requests >= 0 ? { trailersAfterRequests: resp.debugkit_trailers_after_requests } : {}),
  };
}

/** grpc-message is percent-encoded: everything outside printable ASCII, and `%`. */
export function encodeGrpcMessage(text: string): string {
  return Array.from(Buffer.from(text, 'utf8'))
    .map((b) => (b >= 0x20 && b <= 0x7e && b !== 0x25 ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`))
    .join('');
}

export const GrpcStatus = { UNIMPLEMENTED: 12, UNAVAILABLE: 14 } as const;

/** Bytes that differ between two requests, counting a length difference as that many bytes. */
export function byteDistance(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  let d = Math.abs(a.length - b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) d++;
  return d;
}

const sameMessage = (a: GrpcMessage, b: GrpcMessage) => a.compressed === b.compressed && Buffer.compare(a.data, b.data) === 0;

/** The set's gRPC calls by path, in recorded order; a call in progress is matched by `open`. */
export class GrpcIndex {
  private readonly byPath = new Map<string, GrpcCall[]>();
  private readonly used = new Set<GrpcCall>();
  private first: GrpcCall | undefined;
  private count = 0;

  constructor(mocks: readonly Mock[] = []) {
    for (const m of mocks) this.read(m);
  }

  /** The index of a large set, built in slices that leave the event loop to others' work (each mock's messages are decoded). */
  static async build(mocks: readonly Mock[], slice: TimeSlice): Promise<GrpcIndex> {
    const index = new GrpcIndex();
    for (const m of mocks) {
      await slice.pause();
      index.read(m);
    }
    return index;
  }

  private read(m: Mock): void {
    const call = readGrpcMock(m);
    if (call) this.push(call);
  }

  private push(call: GrpcCall): void {
    const list = this.byPath.get(call.path) ?? [];
    list.push(call);
    this.byPath.set(call.path, list);
    this.first ??= call;
    this.count++;
  }

  get size(): number {
    return this.count;
  }

  /** A call recorded during replay (`onMiss: record`): it answers later calls, as used. */
  add(call: GrpcCall): void {
    this.push(call);
    this.used.add(call);
  }

  /** Starts matching a call to `path`; a method the set does not know is a miss at once. */
  open(path: string): GrpcCallMatch | { miss: string; knownPath: false } {
    const same = this.byPath.get(path);
    if (same) return new GrpcCallMatch(path, same, this.used);
    const other = this.first;
    return { knownPath: false, miss: `gRPC ${path}: no mock for this method${other ? `; closest ${other.name} (${other.path})` : ' (the set has no gRPC mocks)'}` };
  }

  /** A whole call at once (its request messages, then the client's end): the call, or the miss. */
  match(path: string, requestMessages: readonly GrpcMessage[]): { call: GrpcCall } | { miss: string; knownPath: boolean } {
    const m = this.open(path);
    if (!(m instanceof GrpcCallMatch)) return m;
    for (const msg of requestMessages) {
      const r = m.push(msg);
      if ('miss' in r) return { miss: r.miss, knownPath: true };
    }
    const r = m.end();
    return 'miss' in r ? { miss: r.miss, knownPath: true } : { call: r.call };
  }
}

/**
 * One call being answered: the request messages are matched in order against the recorded
 * calls of the method (Keploy keeps one call per mock; a stream's messages in order), and each
 * recorded response message is released as soon as the request messages recorded before it
 * have arrived. Among calls that still fit, an unused one is preferred, in recorded order; once a
 * response has been sent the call is fixed.
 */
export class GrpcCallMatch {
  private candidates: GrpcCall[];
  private received = 0;
  private sent = 0;
  private fixed: GrpcCall | undefined;

  constructor(
    private readonly path: string,
    calls: readonly GrpcCall[],
    private readonly used: Set<GrpcCall>,
  ) {
    this.candidates = [...calls];
  }

  /** The call that answers now: the fixed one, else the first unused candidate, else the last. */
  private pick(among: readonly GrpcCall[]): GrpcCall | undefined {
    return this.fixed ?? among.find((c) => !this.used.has(c)) ?? among.at(-1);
  }

  /** The response messages of `call` that may go out once `received` request messages are in. */
  private release(call: GrpcCall, ended: boolean): GrpcMessage[] {
    const out: GrpcMessage[] = [];
    while (this.sent < call.responseMessages.length) {
      const m = call.responseMessages[this.sent]!;
      if (!ended && (m.afterRequests === undefined || m.afterRequests > this.received)) break;
      out.push(m);
      this.sent++;
    }
    if (out.length > 0) this.fixed = call;
    return out;
  }

  /**
   * The next request message: the response messages to send now (with `end` when the recorded
   * server ended the call here, before the client's end: the trailers go now), or the miss.
   */
  push(msg: GrpcMessage): { send: GrpcMessage[]; call: GrpcCall; end?: true } | { miss: string } {
    const i = this.received;
    const fit = this.candidates.filter((c) => c.requestMessages.length > i && sameMessage(c.requestMessages[i]!, msg));
    if (fit.length === 0) return { miss: this.missAt(i, msg) };
    this.candidates = fit;
    this.received++;
    const call = this.pick(fit)!;
    const send = this.release(call, false);
    if (call.trailersAfterRequests !== undefined && this.received >= call.trailersAfterRequests) {
      this.used.add(call);
      return { send: [...send, ...this.release(call, true)], call, end: true };
    }
    return { send, call };
  }

  /** The client ended its side: the call (marked used) and the rest of its responses, or the miss. */
  end(): { send: GrpcMessage[]; call: GrpcCall } | { miss: string } {
    const done = this.candidates.filter((c) => c.requestMessages.length === this.received);
    const call = this.fixed ? done.find((c) => c === this.fixed) : this.pick(done);
    if (!call) {
      const near = this.fixed ?? this.pick(this.candidates)!;
      return {
        miss: `gRPC ${this.path}: the client ended after ${this.received} request message${this.received === 1 ? '' : 's'}; closest ${near.name} (same method, same first ${this.received}, ${near.requestMessages.length} request messages)`,
      };
    }
    this.used.add(call);
    return { send: this.release(call, true), call };
  }

  private missAt(i: number, msg: GrpcMessage): string {
    const what = i === 0 ? `request ${msg.data.byteLength} bytes` : `request message ${i + 1}, ${msg.data.byteLength} bytes`;
    const longer = this.candidates.filter((c) => c.requestMessages.length > i);
    if (longer.length === 0) {
      const near = this.fixed ?? this.pick(this.candidates)!;
      return `gRPC ${this.path} (${what}): no mock has this request; closest ${near.name} (same method, same first ${i}, no more request messages)`;
    }
    let best = longer[0]!;
    let bestD = byteDistance(best.requestMessages[i]!.data, msg.data);
    for (const c of longer.slice(1)) {
      const d = byteDistance(c.requestMessages[i]!.data, msg.data);
      if (d < bestD) {
        best = c;
        bestD = d;
      }
    }
    const theirs = best.requestMessages[i]!.data.byteLength;
    const mine = i > 0 ? `same first ${i}, its message ${i + 1}: ${theirs} bytes` : `request ${theirs} bytes`;
    return `gRPC ${this.path} (${what}): no mock has this request; closest ${best.name} (same method, ${mine}, ${bestD} bytes differ)`;
  }
}
