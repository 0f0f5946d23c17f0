import { DebugkitError } from '../../../core/errors.js';
import { defineKey, KEPLOY_MOCK_VERSION, ZERO_TIME, type HttpBody, type HttpMock } from '../keploy/types.js';
import { exactUtf8 } from '../keploy/utf8.js';
import { keployTime } from '../keploy/time.js';
import { codingsOf, decodeBody, MAX_DECODED_BYTES } from './encoding.js';

/**
 * Building Http mocks the way Keploy's HTTP recorder builds them (keploy `pkg/core/proxy/
 * integrations/http`): Go parses the exchange with net/http, so
 * - header names are canonical (`content-type` → `Content-Type`), several values of one name
 *   are joined with "," (`pkg.ToYamlHTTPHeader`), `Host` is not a header (Go moves it to
 *   `req.Host`) and `Transfer-Encoding` is gone (Go consumes it while reading the body);
 * - `url` is the request target as sent (`req.URL.String()`: `/path?query` for a direct call);
 * - `url_params` holds the query, several values joined with ", " (`pkg.URLParams`);
 * - a gzip/deflate/br response body is stored decoded, `Content-Encoding` kept and
 *   `Content-Length` set to the decoded length (the elasticsearch fixture: `gzip`, "164", plain JSON);
 *   one that would decode past encoding.ts's bounds is stored as received, still encoded, with
 *   `resp.extra.body_encoded` saying why (replay sends it unchanged);
 * - `metadata` is `{name: Http, operation: <method>, type: HTTP_CLIENT}`; `status_message`,
 *   the response's proto version and both `timestamp`s stay at Go's zero values; `created` is
 *   Unix seconds; `reqTimestampMock`/`resTimestampMock` carry the times.
 * Two additions: `metadata.host` records where the request went (Keploy's metadata is a free
 * string map, so Keploy ignores it), needed to tell upstreams apart on replay; and the
 * `connectionId` when given.
 *
 * Bodies: Keploy stores `string(bytes)`. A body that is valid UTF-8 is stored as that text; any
 * other body is kept as bytes, which the serializer writes as `!!binary` base64, exactly what
 * yaml.v3 writes for such a Go string (and reads back into the same bytes). Long text that YAML
 * would double-quote (`\r\n` lines, control characters) is written as `!!binary` too, and read
 * back as that text (keploy/emit.ts QUOTED_STRING_MAX).
 */

/** Header input: an object (Node's `IncomingMessage.headers`), `[name, value]` pairs, or Node's flat `rawHeaders`. */
export type HeaderInput = Readonly<Record<string, string | number | readonly string[] | undefined>> | ReadonlyArray<readonly [string, string]> | readonly string[];

export interface HttpExchange {
  method: string;
  /** The request target as sent: `/path?query`, or an absolute URL when sent to a proxy. */
  url: string;
  /** Where the request went (`api.stripe.com`, `localhost:9200`); defaults to the Host header. */
  host?: string;
  /** The request's HTTP version: `1.1` (default), `1.0`, `2`. */
  httpVersion?: string;
  requestHeaders: HeaderInput;
  requestBody?: Uint8Array | string;
  statusCode: number;
  responseHeaders: HeaderInput;
  /** As received on the wire (still compressed if Content-Encoding says so). */
  responseBody?: Uint8Array | string;
  /** When the request was sent / the response received: a Date, or a Keploy timestamp string (to keep nanoseconds). */
  requestTime: Date | string;
  responseTime: Date | string;
  connectionId?: string;
}

export interface BuildHttpMockOptions {
  /** Default `mocks`, the name Keploy's recorder gives before a set's mocks are numbered (see `numberMocks`). */
  name?: string;
  /** Store compressed response bodies decoded, as Keploy does (default true). */
  decodeContentEncoding?: boolean;
  /** Zone of the written times, minutes east of UTC (default: this process's zone, as Go's `time.Now()`). */
  utcOffsetMinutes?: number;
}

export function buildHttpMock(ex: HttpExchange, options: BuildHttpMockOptions = {}): HttpMock {
  if (typeof ex.method !== 'string' || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(ex.method)) {
    throw new DebugkitError('INVALID_ARGUMENT', `Invalid HTTP method ${JSON.stringify(ex.method)}`);
  }
  if (!Number.isInteger(ex.statusCode) || ex.statusCode < 100 || ex.statusCode > 999) {
    throw new DebugkitError('INVALID_ARGUMENT', `Invalid HTTP status code ${ex.statusCode}`);
  }
  const [major, minor] = protoVersion(ex.httpVersion);

  // Host and Transfer-Encoding are left out as the headers are collected (one object each, no copy).
  const requestOmitted = omits(['Host', 'Transfer-Encoding']);
  const requestHeader = keployHeaders(ex.requestHeaders, requestOmitted);
  const host = ex.host ?? requestOmitted.seen.Host;
  const responseOmitted = omits(['Transfer-Encoding']);
  const responseHeader = keployHeaders(ex.responseHeaders, responseOmitted);
  const chunked = responseOmitted.seen['Transfer-Encoding'] !== undefined;
  let responseBytes = toBytes(ex.responseBody);
  let decoded = false;
  let over = false;
  if (options.decodeContentEncoding !== false && responseHeader['Content-Encoding']) {
    const out = decodeBody(responseBytes, codingsOf(responseHeader['Content-Encoding']));
    if (out instanceof Uint8Array) {
      responseBytes = new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
      decoded = true;
    }
    over = out === 'over';
  }
  if (decoded || chunked) responseHeader['Content-Length'] = String(responseBytes.byteLength);

  const requestTime = keployTime(ex.requestTime, options.utcOffsetMinutes);
  const responseTime = keployTime(ex.responseTime, options.utcOffsetMinutes);
  const metadata: Record<string, string> = { name: 'Http', operation: ex.method, type: 'HTTP_CLIENT' };
  if (host) metadata.host = host;

  const params = ex.url.includes('?') ? urlParams(ex.url) : undefined;
  const requestBody = httpBody(toBytes(ex.requestBody));
  // Two literals rather than a spread: the same keys in the same order (the YAML follows it).
  const req: HttpMock['spec']['req'] =
    params === undefined || Object.keys(params).length === 0
      ? { method: ex.method, proto_major: major, proto_minor: minor, url: ex.url, header: requestHeader, body: requestBody, timestamp: ZERO_TIME }
      : { method: ex.method, proto_major: major, proto_minor: minor, url: ex.url, url_params: params, header: requestHeader, body: requestBody, timestamp: ZERO_TIME };
  const mock: HttpMock = {
    version: KEPLOY_MOCK_VERSION,
    kind: 'Http',
    name: options.name ?? 'mocks',
    spec: {
      metadata,
      req,
      resp: {
        status_code: ex.statusCode,
        header: responseHeader,
        body: httpBody(responseBytes),
        status_message: '',
        proto_major: 0,
        proto_minor: 0,
        timestamp: ZERO_TIME,
      },
      objects: [],
      created: Math.floor((timeMsOf(ex.responseTime) ?? Date.now()) / 1000),
      reqTimestampMock: requestTime,
      resTimestampMock: responseTime,
    },
  };
  if (over) mock.spec.resp.extra = { body_encoded: `as received: it decodes to more than ${MAX_DECODED_BYTES} bytes` };
  if (ex.connectionId) mock.connectionId = ex.connectionId;
  return mock;
}

/** `[major, minor]` of an HTTP version string. */
function protoVersion(v: string | undefined): [number, number] {
  if (v === undefined) return [1, 1];
  const m = /^(?:HTTP\/)?(\d+)(?:\.(\d+))?$/i.exec(v.trim());
  if (!m) throw new DebugkitError('INVALID_ARGUMENT', `Invalid HTTP version ${JSON.stringify(v)}`);
  return [Number(m[1]), Number(m[2] ?? 0)];
}

/**
 * Headers as Keploy stores them: canonical names, values of one name joined with "," in the
 * order they came (lossy for `Set-Cookie`, exactly as in Keploy).
 */
export function keployHeaders(input: HeaderInput, omit?: HeaderOmits): Record<string, string> {
  // One pass straight into the result (this runs twice per recorded request): a value joins the
  // ones before it under the same canonical name, in the order they came.
  const out: Record<string, string> = {};
  if (Array.isArray(input)) {
    if (input.length > 0 && typeof input[0] === 'string') {
      const flat = input as readonly string[];
      if (flat.length % 2 !== 0) throw new DebugkitError('INVALID_ARGUMENT', 'Raw headers must come in name/value pairs');
      for (let i = 0; i < flat.length; i += 2) addHeader(out, flat[i]!, flat[i + 1]!, omit);
    } else {
      const pairs = input as ReadonlyArray<readonly [string, string]>;
      for (let i = 0; i < pairs.length; i++) addHeader(out, pairs[i]![0], pairs[i]![1], omit);
    }
  } else {
    for (const [name, value] of Object.entries(input as Record<string, string | number | readonly string[] | undefined>)) {
      if (value === undefined) continue;
      if (Array.isArray(value)) for (const v of value) addHeader(out, name, String(v), omit);
      else addHeader(out, name, String(value), omit);
    }
  }
  return out;
}

/** Canonical names keployHeaders leaves out of its result; their joined values land in `seen`. */
interface HeaderOmits {
  readonly names: readonly string[];
  readonly seen: Record<string, string | undefined>;
}

/** Go moves `Host` to `req.Host` and consumes `Transfer-Encoding`: neither is a stored header. */
const omits = (names: readonly string[]): HeaderOmits => ({ names, seen: {} });

function addHeader(out: Record<string, string>, name: string, value: string, omit: HeaderOmits | undefined): void {
  const key = canonicalHeaderKey(name);
  if (omit && omit.names.includes(key)) {
    const prev = omit.seen[key];
    omit.seen[key] = prev === undefined ? value : `${prev},${value}`;
  } else if (Object.hasOwn(out, key)) {
    out[key] = `${out[key]},${value}`;
  } else {
    defineKey(out, key, value); // `__proto__` is a header like any other
  }
}

const TOKEN_CHAR = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Go's `textproto.CanonicalMIMEHeaderKey`: `x-request-id` → `X-Request-Id`; names with invalid bytes unchanged. */
export function canonicalHeaderKey(name: string): string {
  // The same few names come with every request: remember them (a bounded cache).
  const known = CANONICAL.get(name);
  if (known !== undefined) return known;
  let out = name;
  if (TOKEN_CHAR.test(name)) {
    out = '';
    let start = 0;
    for (let dash = name.indexOf('-'); ; dash = name.indexOf('-', start)) {
      const end = dash < 0 ? name.length : dash;
      if (end > start) out += name[start]!.toUpperCase() + name.slice(start + 1, end).toLowerCase();
      if (dash < 0) break;
      out += '-';
      start = dash + 1;
    }
  }
  if (CANONICAL.size >= 4096) CANONICAL.clear();
  CANONICAL.set(name, out);
  return out;
}

const CANONICAL = new Map<string, string>();

/** The query of a request target as Keploy's `url_params`: each name once, values joined with ", ". */
export function urlParams(url: string): Record<string, string> {
  const q = url.indexOf('?');
  if (q < 0) return {};
  const end = url.indexOf('#', q);
  const params = new URLSearchParams(url.slice(q + 1, end < 0 ? undefined : end));
  const out: Record<string, string> = {};
  for (const key of new Set(params.keys())) {
    Object.defineProperty(out, key, { value: params.getAll(key).join(', '), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** A body as Keploy stores it: the text when the bytes are UTF-8, the bytes otherwise. */
export function httpBody(bytes: Uint8Array): HttpBody {
  return exactUtf8(bytes) ?? new Uint8Array(bytes);
}

/** The bytes of a stored body (for replay). */
export function bodyBytes(body: HttpBody): Uint8Array {
  return typeof body === 'string' ? new TextEncoder().encode(body) : body;
}

function toBytes(body: Uint8Array | string | undefined): Uint8Array {
  if (body === undefined) return new Uint8Array(0);
  return typeof body === 'string' ? new TextEncoder().encode(body) : body;
}

function timeMsOf(t: Date | string): number | undefined {
  if (t instanceof Date) return t.getTime();
  const ms = Date.parse(t.replace(/(\.\d{3})\d+/, '$1'));
  return Number.isNaN(ms) ? undefined : ms;
}
