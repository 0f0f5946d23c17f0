import { httpBody } from '../http/keploy.js';
import { keployTime } from '../keploy/time.js';
import { KEPLOY_MOCK_VERSION, ZERO_TIME, type HttpBody, type HttpMock, type Mock, type PassThroughMock, type YamlMap, type YamlValue } from '../keploy/types.js';
import { flagByte, type GrpcMessage, type HeaderMap } from './grpc.js';
import { TimeSlice } from '../../../core/wait.js';
import { MAX_MOCK_EXCHANGE_BYTES } from '../protocol.js';
import { protoscopeBytes, protoscopeBytesSliced, protoscopeTextSliced } from './protoscope.js';

/**
 * A plain (non-gRPC) HTTP/2 exchange as Keploy's `Http2` kind (`models.HTTP2Schema`):
 * `metadata`, `req` {method, url, authority, scheme, headers, body, timestamp}, `resp`
 * {status_code, headers, body, trailers, timestamp}, `created`, `reqTimestampMock`,
 * `resTimestampMock`. Headers are lower-case without pseudo-headers; bodies as received (text,
 * or `!!binary` when not UTF-8). For matching, such a mock is seen as an `Http` mock
 * (`http2AsHttp`), so HTTP/2 requests are matched exactly like HTTP/1 ones.
 */

export interface Http2Exchange {
  requestHeaders: HeaderMap;
  requestBody: Uint8Array;
  responseHeaders: HeaderMap;
  responseBody: Uint8Array;
  trailers: HeaderMap;
  requestTime: Date;
  responseTime: Date;
  /** Where it went when there is no :authority. */
  fallbackAuthority: string;
}

const ordinary = (h: HeaderMap): YamlMap => Object.fromEntries(Object.entries(h).filter(([k]) => !k.startsWith(':')));

export function buildHttp2Mock(ex: Http2Exchange): PassThroughMock {
  const method = ex.requestHeaders[':method'] ?? 'GET';
  const authority = ex.requestHeaders[':authority'] ?? ex.fallbackAuthority;
  const resp: YamlMap = {
    status_code: Number(ex.responseHeaders[':status'] ?? 0),
    headers: ordinary(ex.responseHeaders),
    body: httpBody(ex.responseBody),
    timestamp: keployTime(ex.responseTime),
  };
  if (Object.keys(ex.trailers).length > 0) resp.trailers = ordinary(ex.trailers);
  return {
    version: KEPLOY_MOCK_VERSION,
    kind: 'Http2',
    name: 'mocks',
    spec: {
      metadata: { name: 'Http2', operation: method, type: 'HTTP2_CLIENT', host: authority },
      req: {
        method,
        url: ex.requestHeaders[':path'] ?? '/',
        authority,
        scheme: ex.requestHeaders[':scheme'] ?? 'http',
        headers: ordinary(ex.requestHeaders),
        body: httpBody(ex.requestBody),
        timestamp: keployTime(ex.requestTime),
      },
      resp,
      created: Math.floor(ex.requestTime.getTime() / 1000),
      reqTimestampMock: keployTime(ex.requestTime),
      resTimestampMock: keployTime(ex.responseTime),
    },
  };
}

const asMap = (v: YamlValue | undefined): YamlMap => (v && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Uint8Array) ? (v as YamlMap) : {});

function strings(v: YamlValue | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(asMap(v))) if (x !== null && typeof x !== 'object') out[k] = String(x);
  return out;
}

const body = (v: YamlValue | undefined): HttpBody => (v instanceof Uint8Array ? v : typeof v === 'string' ? v : '');

/** An `Http2` mock as the `Http` mock the matcher and the HTTP/2 replayer use; undefined if it has no request. */
export function http2AsHttp(mock: Mock): HttpMock | undefined {
  if (mock.kind !== 'Http2') return undefined;
  const spec = asMap(mock.spec as YamlValue);
  const req = asMap(spec.req);
  const resp = asMap(spec.resp);
  if (typeof req.method !== 'string' || typeof req.url !== 'string') return undefined;
  const authority = typeof req.authority === 'string' ? req.authority : undefined;
  return {
    version: mock.version,
    kind: 'Http',
    name: mock.name,
    spec: {
      metadata: { name: 'Http2', ...(authority ? { host: authority } : {}) },
      req: { method: req.method, proto_major: 2, proto_minor: 0, url: req.url, header: strings(req.headers), body: body(req.body), timestamp: ZERO_TIME },
      resp: {
        status_code: Number(resp.status_code ?? 0),
        header: strings(resp.headers),
        body: body(resp.body),
        status_message: '',
        proto_major: 2,
        proto_minor: 0,
        timestamp: ZERO_TIME,
      },
      objects: [],
    },
  };
}

// ------------------------------------------------------------------ gRPC

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
 *
 * A message is written as it was sent: `compression_flag` is its flag byte (a byte other than 0
 * or 1 too, which a server rejects), `message_length` the length its prefix says. The bytes of a
 * message the stream ended inside are kept as a last message, `decoded_data` the bytes that came
 * after its prefix and `debugkit_truncated` how many bytes of it came, the prefix's 5 included
 * (a key Keploy ignores): a replay sends those bytes again, cut where they were.
 */

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

function splitHeaders(headers: HeaderMap): YamlMap {
  const pseudo: YamlMap = {};
  const ordinary: YamlMap = {};
  for (const [k, v] of Object.entries(headers)) (k.startsWith(':') ? pseudo : ordinary)[k] = v;
  return { pseudo_headers: pseudo, ordinary_headers: ordinary };
}

/**
 * The most bytes of one mock's messages written as text; the rest are kept as bytes. Text is
 * written and read back on the event loop, at 0.3 s a MiB for common messages and up to 3 s a MiB
 * for dense small fields (attack 18k): a budget per mock, not per message, bounds a call's turn
 * however its bytes are split.
 */
export const TEXT_BUDGET = 256 * 1024;

/**
 * The most protoscope text (`decoded_data`, in characters) one mock may hold, read or written: a
 * set's text sizes the work of reading it back (a 30 MiB `{}{}...` crashed the server, attack 18u
 * P4). The writer keeps a mock's text under it too (the rest as bytes), so what it writes reads.
 */
export const MAX_DECODED_TEXT = 16 * TEXT_BUDGET;

/**
 * The most fields (nested ones counted) of one mock's messages written as text; past it they are
 * kept as bytes. The work both ways (writing the text, reading it back to check) is per field,
 * not per byte: 256 KiB of nested empty messages is 131,072 fields and 2.8 MB of text, and held
 * the loop 0.3-0.6 s a call (attack 18u P8), also as the set was replayed. A string or hex
 * field counts as a field per 64 bytes of it, written 16 KiB a step (one 256 KiB string was one
 * 180 ms block, attack 18x U2): 256 KiB of literals is 4,096 fields.
 */
export const TEXT_FIELDS = 20_000;

/** Main-thread time the text of a call's messages is written in before others' work goes first. */
export const TEXT_SLICE_MS = 10;

interface TextBudget {
  /** Message bytes still to be written as text. */
  left: number;
  /** Characters of text still to be written. */
  chars: number;
  /** Fields still to be written as text. */
  fields: number;
}

/** Keploy's decoded text when it reads back to the same bytes (it always should), else the bytes. */
async function decodedData(m: GrpcMessage, budget: TextBudget, slice: TimeSlice): Promise<string | Uint8Array> {
  if (m.data.byteLength > budget.left) return m.data;
  budget.left -= m.data.byteLength;
  const written = await protoscopeTextSliced(m.data, slice, budget.fields);
  // Past the fields left: the work spent on it was all they allowed, so the mock's other messages are bytes too.
  budget.fields = written ? budget.fields - written.fields : 0;
  if (!written || written.text.length > budget.chars) return m.data;
  budget.chars -= written.text.length;
  try {
    if (Buffer.compare(await protoscopeBytesSliced(written.text, slice), m.data) === 0) return written.text;
  } catch {
    // fall through to the bytes
  }
  return m.data;
}

/** A message's YAML, its data as bytes until its text is written (RecordedGrpcMock). */
function messageYaml(m: GrpcMessage | undefined, texts: Array<[YamlMap, GrpcMessage]>): YamlMap {
  const y: YamlMap = { compression_flag: m ? flagByte(m) : 0, message_length: m ? (m.truncated?.length ?? m.data.byteLength) : 0, decoded_data: m ? m.data : '' };
  if (m?.truncated) y.debugkit_truncated = m.truncated.came;
  if (m?.afterRequests !== undefined) y.debugkit_after_requests = m.afterRequests;
  if (m) texts.push([y, m]);
  return y;
}

function bodyYaml(messages: readonly GrpcMessage[], texts: Array<[YamlMap, GrpcMessage]>): YamlMap {
  const body: YamlMap = { body: messageYaml(messages[0], texts) };
  if (messages.length > 1) body.additional_messages = messages.slice(1).map((m) => messageYaml(m, texts));
  if (messages.length === 0) body.debugkit_no_messages = true;
  return body;
}

/**
 * A recorded call's mock, kept at once (its place in the set is when the call ended), its
 * messages' `decoded_data` bytes (`!!binary`, which reads back the same) until `writeTexts` turns
 * them into Keploy's protoscope text, in slices of the event loop and within the budgets of a
 * mock (TEXT_BUDGET, MAX_DECODED_TEXT, TEXT_FIELDS).
 */
export interface RecordedGrpcMock {
  mock: PassThroughMock;
  writeTexts(slice: TimeSlice): Promise<void>;
}

export function recordGrpcMock(ex: GrpcExchange): RecordedGrpcMock {
  const texts: Array<[YamlMap, GrpcMessage]> = [];
  const { body: reqBody, ...reqMore } = bodyYaml(ex.requestMessages, texts);
  const { body: respBody, ...respMore } = bodyYaml(ex.responseMessages, texts);
  const mock: PassThroughMock = {
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
  const writeTexts = async (slice: TimeSlice) => {
    const budget = { left: TEXT_BUDGET, chars: MAX_DECODED_TEXT, fields: TEXT_FIELDS };
    for (const [y, m] of texts) y.decoded_data = await decodedData(m, budget, slice);
  };
  return { mock, writeTexts };
}

/** The mock of a gRPC exchange with its messages' text written (recordGrpcMock). */
export async function buildGrpcMock(ex: GrpcExchange, slice = new TimeSlice(TEXT_SLICE_MS)): Promise<PassThroughMock> {
  const recorded = recordGrpcMock(ex);
  await recorded.writeTexts(slice);
  return recorded.mock;
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

function stringMap(v: YamlValue | undefined): HeaderMap {
  const out: HeaderMap = {};
  for (const [k, x] of Object.entries(asMap(v))) if (x !== null && typeof x !== 'object') out[k] = String(x);
  return out;
}

/** Protoscope text (a `decoded_data`) as the message's bytes. */
type TextBytes = (text: string) => Uint8Array;

/** A `compression_flag`: 0 or 1, or the byte as sent when it was another (GrpcMessage.flag). */
function readFlag(v: YamlValue | undefined): Pick<GrpcMessage, 'compressed' | 'flag'> {
  const n = Number(v);
  return Number.isInteger(n) && n > 1 && n <= 0xff ? { compressed: false, flag: n } : { compressed: n === 1 };
}

/**
 * `debugkit_truncated`: the message as far as it came, when the note fits it (a count of bytes
 * short of the whole message, that many of them after the prefix); else the message is read whole.
 */
function readTruncated(m: YamlMap, data: Uint8Array): Pick<GrpcMessage, 'truncated'> {
  const came = m.debugkit_truncated;
  const length = Number(m.message_length);
  if (typeof came !== 'number' || !Number.isInteger(came) || came < 1 || !Number.isInteger(length) || length < 0 || length > 0xffffffff) return {};
  const fits = came < 5 ? data.byteLength === 0 : came - 5 === data.byteLength && data.byteLength < length;
  return fits ? { truncated: { length, came } } : {};
}

function readMessage(v: YamlValue | undefined, textBytes: TextBytes): GrpcMessage | undefined {
  const m = asMap(v);
  const data = m.decoded_data;
  const len = Number(m.message_length ?? 0);
  const after = m.debugkit_after_requests;
  const extra = typeof after === 'number' && Number.isInteger(after) && after >= 0 ? { afterRequests: after } : {};
  const bytes = data instanceof Uint8Array ? data : typeof data === 'string' && (data.length > 0 || len === 0 || m.debugkit_truncated !== undefined) ? textBytes(data) : undefined;
  return bytes ? { ...readFlag(m.compression_flag), data: bytes, ...readTruncated(m, bytes), ...extra } : undefined;
}

function readMessages(side: YamlMap, textBytes: TextBytes): GrpcMessage[] {
  if (side.debugkit_no_messages === true) return [];
  const first = readMessage(side.body, textBytes) ?? { compressed: false, data: new Uint8Array(0) };
  const rest = Array.isArray(side.additional_messages) ? side.additional_messages.map((m) => readMessage(m, textBytes)) : [];
  return [first, ...rest.filter((m): m is GrpcMessage => m !== undefined)];
}

function joined(headers: YamlMap): HeaderMap {
  return { ...stringMap(headers.pseudo_headers), ...stringMap(headers.ordinary_headers) };
}

/** A `gRPC` mock as a call to answer, its texts read by `textBytes`; undefined when it lacks a path. */
function grpcCall(mock: Mock, textBytes: TextBytes): GrpcCall | undefined {
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
    requestMessages: readMessages(req, textBytes),
    responseHeaders: joined(asMap(resp.headers)),
    responseMessages: readMessages(resp, textBytes),
    trailers: joined(asMap(resp.trailers)),
    ...(typeof resp.debugkit_trailers_after_requests === 'number' && resp.debugkit_trailers_after_requests >= 0 ? { trailersAfterRequests: resp.debugkit_trailers_after_requests } : {}),
  };
}

/** A mock whose messages cannot be read: it is not replayed, and why is said. */
export interface RefusedGrpcMock {
  path: string | undefined;
  refused: string;
}

const NO_BYTES = new Uint8Array(0);

/** The protoscope texts of a mock's messages (read without assembling them). */
function decodedTexts(mock: Mock): { texts: string[]; path: string | undefined } {
  const texts: string[] = [];
  const call = grpcCall(mock, (text) => {
    texts.push(text);
    return NO_BYTES;
  });
  return { texts, path: call?.path };
}

/**
 * The mock read with `textBytes` (given each text and the bytes the mock's messages may still
 * take), or why it is refused: more text than MAX_DECODED_TEXT, text that is not protoscope or
 * whose bytes are more than MAX_MOCK_EXCHANGE_BYTES. Such text is never replayed as if it were
 * the message's bytes (an untrue answer).
 */
function readChecked(mock: Mock, texts: readonly string[], path: string | undefined, textBytes: (text: string, left: number) => Uint8Array): GrpcCall | RefusedGrpcMock | undefined {
  const chars = texts.reduce((n, t) => n + t.length, 0);
  if (chars > MAX_DECODED_TEXT) {
    return {
      path,
      refused: `gRPC mock ${mock.name}: its decoded_data is ${chars} characters of protoscope text, more than the ${MAX_DECODED_TEXT} one mock may hold (a larger message is written as !!binary bytes); not replayed`,
    };
  }
  let left = MAX_MOCK_EXCHANGE_BYTES;
  try {
    return grpcCall(mock, (text) => {
      const bytes = textBytes(text, left);
      left -= bytes.byteLength;
      return bytes;
    });
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    return { path, refused: `gRPC mock ${mock.name}: its decoded_data cannot be read as protoscope (${why}); not replayed` };
  }
}

/** What a mock's text may still assemble to, when its messages so far took all but `left` bytes of MAX_MOCK_EXCHANGE_BYTES. */
const assemblyBound = (left: number) => ({ maxBytes: left, bound: `the ${MAX_MOCK_EXCHANGE_BYTES} bytes one mock's messages may have (an exchange debugkit records)` });

/** A `gRPC` mock as a call to answer; undefined when it lacks a path or its messages cannot be read (readGrpcMockSliced says why). */
export function readGrpcMock(mock: Mock): GrpcCall | undefined {
  if (mock.kind !== 'gRPC') return undefined;
  const { texts, path } = decodedTexts(mock);
  const call = readChecked(mock, texts, path, (text, left) => protoscopeBytes(text, assemblyBound(left)));
  return call && 'refused' in call ? undefined : call;
}

/**
 * readGrpcMock for a mock from a set, its texts assembled in slices of the event loop: a set's
 * text is up to MAX_DECODED_TEXT a mock, seconds of work at worst. A mock that cannot be read is
 * refused, and why is said.
 */
export async function readGrpcMockSliced(mock: Mock, slice: TimeSlice): Promise<GrpcCall | RefusedGrpcMock | undefined> {
  if (mock.kind !== 'gRPC') return undefined;
  const { texts, path } = decodedTexts(mock);
  const assembled = new Map<string, Uint8Array | Error>();
  if (texts.reduce((n, t) => n + t.length, 0) <= MAX_DECODED_TEXT) {
    let left = MAX_MOCK_EXCHANGE_BYTES;
    for (const text of texts) {
      if (assembled.has(text)) continue;
      try {
        const bytes = await protoscopeBytesSliced(text, slice, assemblyBound(left));
        left -= bytes.byteLength;
        assembled.set(text, bytes);
      } catch (err) {
        assembled.set(text, err instanceof Error ? err : new Error(String(err)));
        break;
      }
    }
  }
  return readChecked(mock, texts, path, (text) => {
    const bytes = assembled.get(text);
    if (bytes instanceof Uint8Array) return bytes;
    throw bytes ?? new Error('not assembled');
  });
}
