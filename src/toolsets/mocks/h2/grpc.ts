import { keployTime } from '../keploy/http.js';
import { KEPLOY_MOCK_VERSION, type Mock, type PassThroughMock, type YamlMap, type YamlValue } from '../keploy/types.js';

/**
 * gRPC as Keploy stores it (`models.GrpcSpec`, kind `gRPC`): `grpcReq` and `grpcResp`, each with
 * `headers.pseudo_headers`/`headers.ordinary_headers`, one length-prefixed message as `body`
 * (`compression_flag`, `message_length`, `decoded_data`), the response's `trailers`, and
 * `reqTimestampMock`/`resTimestampMock`.
 *
 * Keploy writes `decoded_data` as a text rendering of the protobuf; debugkit has no .proto, so
 * it keeps the message bytes themselves (written `!!binary`). A stream of several messages keeps
 * the first in `body` and the rest in `additional_messages`, as Keploy does (omitted for one
 * message). A direction with no message at all (a trailers-only error) has a zeroed `body`, which
 * Keploy reads as one empty message: debugkit adds `debugkit_no_messages: true` (a key Keploy
 * ignores) to replay it as none.
 */

export interface GrpcMessage {
  compressed: boolean;
  data: Uint8Array;
}

export type HeaderMap = Record<string, string>;

export interface GrpcExchange {
  requestHeaders: HeaderMap;
  requestMessages: GrpcMessage[];
  responseHeaders: HeaderMap;
  responseMessages: GrpcMessage[];
  trailers: HeaderMap;
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

function messageYaml(m: GrpcMessage | undefined): YamlMap {
  return { compression_flag: m?.compressed ? 1 : 0, message_length: m?.data.byteLength ?? 0, decoded_data: m ? m.data : '' };
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
      grpcResp: { headers: splitHeaders(ex.responseHeaders), body: respBody!, trailers: splitHeaders(ex.trailers), ...respMore },
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
  request: Buffer;
  responseHeaders: HeaderMap;
  responseMessages: GrpcMessage[];
  trailers: HeaderMap;
}

const asMap = (v: YamlValue | undefined): YamlMap =>
  v && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Uint8Array) ? (v as YamlMap) : {};

function stringMap(v: YamlValue | undefined): HeaderMap {
  const out: HeaderMap = {};
  for (const [k, x] of Object.entries(asMap(v))) if (x !== null && typeof x !== 'object') out[k] = String(x);
  return out;
}

function readMessage(v: YamlValue | undefined): GrpcMessage | undefined {
  const m = asMap(v);
  const data = m.decoded_data;
  const len = Number(m.message_length ?? 0);
  if (data instanceof Uint8Array) return { compressed: Number(m.compression_flag) === 1, data };
  if (typeof data === 'string' && (data.length > 0 || len === 0)) return { compressed: Number(m.compression_flag) === 1, data: Buffer.from(data, 'utf8') };
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
    request: frameMessages(readMessages(req)),
    responseHeaders: joined(asMap(resp.headers)),
    responseMessages: readMessages(resp),
    trailers: joined(asMap(resp.trailers)),
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

/** The set's gRPC calls by path, in recorded order; exact request bytes first, then reuse. */
export class GrpcIndex {
  private readonly calls: GrpcCall[] = [];
  private readonly used = new Set<GrpcCall>();

  constructor(mocks: readonly Mock[]) {
    for (const m of mocks) {
      const call = readGrpcMock(m);
      if (call) this.calls.push(call);
    }
  }

  get size(): number {
    return this.calls.length;
  }

  add(call: GrpcCall): void {
    this.calls.push(call);
    this.used.add(call);
  }

  match(path: string, request: Uint8Array): { call: GrpcCall } | { miss: string; knownPath: boolean } {
    const same = this.calls.filter((c) => c.path === path);
    const exact = same.filter((c) => Buffer.compare(c.request, Buffer.from(request.buffer, request.byteOffset, request.byteLength)) === 0);
    const pick = exact.find((c) => !this.used.has(c)) ?? exact.at(-1);
    if (pick) {
      this.used.add(pick);
      return { call: pick };
    }
    if (same.length > 0) {
      let best = same[0]!;
      let bestD = byteDistance(best.request, request);
      for (const c of same.slice(1)) {
        const d = byteDistance(c.request, request);
        if (d < bestD) (best = c), (bestD = d);
      }
      return {
        knownPath: true,
        miss: `gRPC ${path} (request ${request.length} bytes): no mock has this request; closest ${best.name} (same method, request ${best.request.length} bytes, ${bestD} bytes differ)`,
      };
    }
    const other = this.calls[0];
    return {
      knownPath: false,
      miss: `gRPC ${path}: no mock for this method${other ? `; closest ${other.name} (${other.path})` : ' (the set has no gRPC mocks)'}`,
    };
  }
}
