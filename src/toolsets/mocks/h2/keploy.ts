import { httpBody, keployTime } from '../keploy/http.js';
import { KEPLOY_MOCK_VERSION, ZERO_TIME, type HttpBody, type HttpMock, type Mock, type PassThroughMock, type YamlMap, type YamlValue } from '../keploy/types.js';
import type { HeaderMap } from './grpc.js';

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
