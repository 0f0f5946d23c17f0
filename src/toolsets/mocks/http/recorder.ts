import type { Duplex } from 'node:stream';
import { buildHttpMock } from './keploy.js';
import type { HttpMock } from '../keploy/types.js';
import type { KeptBytes } from '../kept.js';
import { DEFAULT_MAX_BODY, headerValue, HttpParser, type HttpMessage, type HttpRequestMessage, type HttpResponseMessage } from './wire.js';
import { authorityOf, fullUrl, type Scheme } from './url.js';
import { pipeBoth } from '../proxy/pipe.js';
import { dial } from '../dial.js';

/**
 * Records the HTTP/1.x exchanges of one connection while forwarding it untouched. The bytes go
 * client <-> upstream through `pipe` (backpressure, streaming, keep-alive and half-close as with a
 * plain tunnel); copies of each direction feed a passive parser, and every request paired with its
 * response becomes one Keploy Http mock. Nothing the parser thinks can alter or stall the traffic:
 * a connection that stops looking like HTTP simply stops producing mocks.
 *
 * Mock contents (see keploy.ts for the Keploy conventions): `url` is the full URL
 * `scheme://host[:port]/path?query` (Host header, else the target); `metadata.host` the authority;
 * the connection id as `connectionId`. A body over `maxBodyBytes` is not stored: `body` is empty
 * and the side's `extra` says `body_skipped: true, body_size: <bytes>` (Keploy's own marker for
 * bodies over 1 MB); a request's also `body_sha256: <hex>`, the SHA-256 of the whole body, which
 * replay compares (without it only the size could be). 1xx interim responses are not mocks; an exchange that switched protocols
 * (101, CONNECT) is not either, as it cannot be replayed.
 */

export interface RecordableConnection {
  id?: string;
  target: { host: string; port: number };
  /** The program's side (plaintext: a TLS-terminated socket for HTTPS). */
  client: Duplex;
}

export interface RecordHttpOptions {
  onMock: (mock: HttpMock) => void;
  /** The real server, already connected (e.g. `terminateTls(...).upstream`); else TCP to the target. */
  upstream?: Duplex;
  /** Without `upstream`: connect here instead of the target (the URLs still name the target). */
  connectTo?: { host: string; port: number };
  /** For the recorded URLs; default `http`. */
  scheme?: Scheme;
  /** Default 1 MiB per body. */
  maxBodyBytes?: number;
  /** The recording's budget for bodies not finished yet (kept.ts). */
  kept?: KeptBytes;
  connectTimeoutMs?: number;
  /** Mock building or `onMock` failures (the traffic is not affected). */
  onError?: (err: unknown) => void;
}

export interface RecordHttpResult {
  mocks: number;
  bytesUp: number;
  bytesDown: number;
  /** Set when a direction stopped parsing as HTTP (the bytes still went through). */
  notHttp?: string;
  /** The connection switched protocols (WebSocket, CONNECT). */
  upgraded?: boolean;
  /** The first connection failure; both sides were destroyed then. */
  error?: Error;
}

/** Requests of one connection awaiting their answers (pipelined) that a recording or a replay takes before it reads on. */
export const MAX_PENDING = 64;

interface Exchange {
  head: HttpRequestMessage;
  request?: HttpRequestMessage;
  response?: HttpResponseMessage;
}

/** Forwards and records one connection; resolves once both sides are closed. */
export async function recordHttp(conn: RecordableConnection, options: RecordHttpOptions): Promise<RecordHttpResult> {
  const result: RecordHttpResult = { mocks: 0, bytesUp: 0, bytesDown: 0 };
  let upstream: Duplex;
  try {
    upstream = options.upstream ?? (await dial(options.connectTo ?? conn.target, options.connectTimeoutMs ?? 10_000));
  } catch (err) {
    conn.client.destroy();
    result.error = err as Error;
    return result;
  }
  const piped = pipeBoth(conn.client, upstream, result);
  // After the pipes: each chunk is written on before it is parsed (and a completed response made
  // into a mock), so recording adds no work between a read and its write. The order of listeners
  // within one 'data' event cannot reorder the parsers: a response is read in a later event than
  // the request it answers, so its parser always knows the method (HEAD responses have no body).
  new Pairing(conn, options, result).observe(conn.client, upstream);
  return piped;
}

/** Pairs the parsed requests and responses of one connection, in order, into mocks. */
class Pairing {
  private readonly exchanges = new Map<number, Exchange>();
  private heads = 0;
  private completedRequests = 0;
  private responses = 0;
  readonly requests: HttpParser;
  readonly replies: HttpParser;
  private readonly scheme: Scheme;

  constructor(
    private readonly conn: RecordableConnection,
    private readonly options: RecordHttpOptions,
    private readonly result: RecordHttpResult,
  ) {
    this.scheme = options.scheme ?? 'http';
    const limits = { maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY, ...(options.kept ? { kept: options.kept } : {}) };
    const onStop = (state: string, reason: string) => {
      if (state === 'not-http') result.notHttp ??= reason;
      if (state === 'upgraded') result.upgraded = true;
    };
    // Once responses stop being parsed nothing more can be paired: stop reading requests too and
    // drop those still waiting, so they are not kept for the life of the connection. (When only
    // the requests stop, responses to the requests already read still pair.)
    const onRepliesStop = (state: string, reason: string) => {
      onStop(state, reason);
      if (state === 'ended') return;
      this.requests.stop(state === 'upgraded' ? 'upgraded' : 'not-http', reason);
      this.exchanges.clear();
    };
    this.requests = new HttpParser('request', { onHead: (m) => this.onRequestHead(m), onMessage: (m) => this.onRequest(m), onStop }, limits);
    this.replies = new HttpParser('response', { onMessage: (m) => this.onResponse(m), onStop: onRepliesStop }, { ...limits, requestMethod: (i) => this.exchanges.get(i)?.head.method });
  }

  observe(client: Duplex, upstream: Duplex): void {
    // Registered before the pipes: a request head is parsed before its bytes leave, so the
    // response parser always knows which method it answers (HEAD responses have no body).
    client.on('data', (chunk: Buffer) => this.requests.push(chunk));
    upstream.on('data', (chunk: Buffer) => this.replies.push(chunk));
    client.on('end', () => this.requests.end());
    upstream.on('end', () => this.replies.end());
    // A side that closes without ending (reset, destroyed) ends its parser too: a body it was keeping goes back to the budget.
    client.once('close', () => this.requests.end());
    upstream.once('close', () => this.replies.end());
  }

  private onRequestHead(m: HttpMessage): void {
    this.exchanges.set(this.heads++, { head: m as HttpRequestMessage });
    // A client may pipeline, but not without bound: memory stays bounded whatever it sends.
    if (this.exchanges.size > MAX_PENDING) this.requests.stop('not-http', `over ${MAX_PENDING} requests awaiting responses`);
  }

  private onRequest(m: HttpMessage): void {
    const index = this.completedRequests++;
    const ex = this.exchanges.get(index);
    if (!ex) return;
    ex.request = m as HttpRequestMessage;
    if (ex.response) this.emit(index, ex);
  }

  private onResponse(m: HttpMessage): void {
    const res = m as HttpResponseMessage;
    if (res.status < 200 && res.status !== 101) return; // interim: the final response follows
    const index = this.responses++;
    const ex = this.exchanges.get(index);
    if (!ex) return;
    const switched = res.status === 101 || (ex.head.method === 'CONNECT' && res.status < 300);
    if (this.requests.state === 'held' && index === this.heads - 1) {
      if (switched) this.requests.stop('upgraded', `the server switched protocols (${res.status})`);
      else this.requests.resume();
    }
    if (switched) return void this.exchanges.delete(index);
    ex.response = res;
    if (ex.request) this.emit(index, ex);
  }

  private emit(index: number, ex: Exchange): void {
    this.exchanges.delete(index);
    try {
      const mock = this.toMock(ex.request!, ex.response!);
      this.result.mocks++;
      this.options.onMock(mock);
    } catch (err) {
      this.options.onError?.(err);
    }
  }

  private toMock(req: HttpRequestMessage, res: HttpResponseMessage): HttpMock {
    const authority = headerValue(req.headers, 'host')?.split(',')[0]?.trim() || authorityOf(this.scheme, this.conn.target);
    const mock = buildHttpMock({
      method: req.method,
      url: fullUrl(this.scheme, authority, req.target),
      host: authority,
      httpVersion: req.httpVersion,
      requestHeaders: req.headers,
      requestBody: req.bodyTruncated ? undefined : req.body,
      statusCode: res.status,
      responseHeaders: res.headers,
      responseBody: res.bodyTruncated ? undefined : res.body,
      requestTime: new Date(req.startedAt),
      responseTime: new Date(res.startedAt),
      ...(this.conn.id ? { connectionId: this.conn.id } : {}),
    });
    // The digest lets replay compare the body it did not keep (Keploy ignores the extra field; its own sets have only the size).
    if (req.bodyTruncated) mock.spec.req.extra = { ...mock.spec.req.extra, body_skipped: true, body_size: req.bodyLength, ...(req.bodySha256 ? { body_sha256: req.bodySha256 } : {}) };
    if (res.bodyTruncated) {
      mock.spec.resp.extra = { ...mock.spec.resp.extra, body_skipped: true, body_size: res.bodyLength };
      // buildHttpMock sized Content-Length from the (absent) body; keep the server's, if any.
      const sent = headerValue(res.headers, 'content-length');
      if (sent !== undefined) mock.spec.resp.header['Content-Length'] = sent;
      else delete mock.spec.resp.header['Content-Length'];
    }
    return mock;
  }
}
