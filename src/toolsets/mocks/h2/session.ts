import http2 from 'node:http2';
import { Duplex } from 'node:stream';
import { bodyBytes } from '../keploy/http.js';
import { buildHttp2Mock } from './http2.js';
import type { HttpMock, Mock } from '../keploy/types.js';
import type { HttpMatcher } from '../http/matcher.js';
import type { OnMiss } from '../http/replayer.js';
import { buildGrpcMock, encodeGrpcMessage, readGrpcMock, frameMessages, GrpcStatus, isGrpc, splitMessages, type GrpcIndex, type HeaderMap } from './grpc.js';

/**
 * HTTP/2 between the program and debugkit: node:http2's server side on the intercepted (and, for
 * TLS, decrypted) connection, its client side to the real server when recording or on a miss.
 * Each stream is one exchange: gRPC calls (content-type application/grpc) become `gRPC` mocks,
 * other requests `Http2` mocks (Keploy's HTTP2Schema).
 */

const MAX_BODY = 16 * 1024 * 1024;
const CONNECT_TIMEOUT_MS = 10_000;
/** Connection-specific headers HTTP/2 forbids. */
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'http2-settings', 'host']);
const END_STREAM = http2.constants.NGHTTP2_FLAG_END_STREAM;

export interface H2Connection {
  id: string;
  target: { host: string; port: number };
  client: Duplex;
}

/** Opens the socket to the real server (plain for h2c, TLS with ALPN h2 for https). */
export type H2Dial = () => Promise<Duplex>;

function flat(headers: http2.IncomingHttpHeaders | http2.OutgoingHttpHeaders): HeaderMap {
  const out: HeaderMap = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined || HOP.has(k)) continue;
    out[k] = Array.isArray(v) ? v.join(', ') : String(v);
  }
  return out;
}

/** Runs a stream operation from an event handler: a failure resets that stream, never the server. */
function guard(stream: http2.Http2Stream, op: () => void): void {
  try {
    op();
  } catch {
    if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
  }
}

function forwardable(headers: HeaderMap): HeaderMap {
  const out: HeaderMap = {};
  for (const [k, v] of Object.entries(headers)) if (!HOP.has(k) && k !== 'content-length') out[k] = v;
  return out;
}

/**
 * The socket seen through a plain JS stream. node:http2 reads a socket's native handle directly
 * and would miss bytes already buffered on the JS side (the sniffed preface, or what a TLS socket
 * decrypted during its handshake); through a JS stream it gets every byte.
 */
function jsDuplex(socket: Duplex): Duplex {
  const d = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk: Buffer, _enc, cb) {
      socket.write(chunk, (err) => cb(err ?? null));
    },
    final(cb) {
      socket.end();
      cb();
    },
    destroy(err, cb) {
      socket.destroy();
      cb(err);
    },
  });
  socket.on('data', (c: Buffer) => {
    if (!d.push(c)) socket.pause();
  });
  socket.on('end', () => d.push(null));
  socket.on('close', () => d.destroy());
  socket.on('error', () => d.destroy());
  return d;
}

/** Serves the program's HTTP/2 connection, each stream to `onStream`; resolves when it closes. */
function serveClient(conn: H2Connection, onStream: (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void): Promise<void> {
  return new Promise((resolve) => {
    const server = http2.createServer();
    server.on('stream', (stream, headers) => {
      stream.on('error', () => {});
      onStream(stream, headers);
    });
    server.on('session', (session) => {
      session.on('error', () => {});
      session.once('close', () => resolve());
    });
    conn.client.once('close', () => resolve());
    server.emit('connection', jsDuplex(conn.client));
  });
}

function readAll(stream: http2.ServerHttp2Stream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY) chunks.push(c);
    });
    stream.once('end', () => resolve(Buffer.concat(chunks)));
    stream.once('error', reject);
    stream.once('close', () => resolve(Buffer.concat(chunks)));
  });
}

interface Relayed {
  requestHeaders: HeaderMap;
  requestBody: Buffer;
  responseHeaders: HeaderMap;
  responseBody: Buffer;
  trailers: HeaderMap;
  requestTime: Date;
  responseTime: Date;
}

/**
 * Sends one request upstream and relays the answer to the program as it comes (headers, data,
 * trailers). `body` is the program's stream (recording: forwarded live) or its buffered bytes.
 */
function relay(upstream: http2.ClientHttp2Session, down: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, body: Buffer | http2.ServerHttp2Stream): Promise<Relayed> {
  return new Promise((resolve, reject) => {
    const requestTime = new Date();
    const requestHeaders = flat(headers);
    const reqChunks: Buffer[] = [];
    const respChunks: Buffer[] = [];
    let responseHeaders: HeaderMap = {};
    let trailers: HeaderMap = {};
    let endedWithHeaders = false;
    let responded = false;
    const up = upstream.request(forwardable(requestHeaders), { endStream: false });
    if (Buffer.isBuffer(body)) {
      reqChunks.push(body);
      up.end(body);
    } else {
      // Not pipe(): piping a server stream makes node:http2 send a default response on it.
      body.on('data', (c: Buffer) => {
        reqChunks.push(c);
        if (!up.write(c)) body.pause();
      });
      up.on('drain', () => body.resume());
      body.once('end', () => up.end());
    }
    up.on('response', (h, flags) => {
      responseHeaders = flat(h);
      endedWithHeaders = (flags & END_STREAM) !== 0;
      // Reading starts only now: node:http2 may deliver DATA before emitting 'response'.
      up.on('data', (c: Buffer) => {
        respChunks.push(c);
        if (!down.destroyed) down.write(c);
      });
      if (down.destroyed || responded) return;
      responded = true;
      guard(down, () => down.respond(forwardable(responseHeaders), endedWithHeaders ? { endStream: true } : { waitForTrailers: true }));
    });
    down.on('wantTrailers', () => guard(down, () => down.sendTrailers(forwardable(trailers))));
    up.on('trailers', (t) => (trailers = flat(t)));
    up.on('end', () => {
      if (!endedWithHeaders && !down.destroyed) down.end();
    });
    up.once('close', () => {
      if (!responded && !down.destroyed) {
        responded = true;
        down.respond({ ':status': 502 }, { endStream: true });
      }
      resolve({
        requestHeaders,
        requestBody: Buffer.concat(reqChunks),
        responseHeaders,
        responseBody: Buffer.concat(respChunks),
        trailers,
        requestTime,
        responseTime: new Date(),
      });
    });
    up.once('error', (err) => {
      if (!down.destroyed) down.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      reject(err);
    });
  });
}

function toMock(r: Relayed, target: { host: string; port: number }): Mock {
  if (isGrpc(r.requestHeaders)) {
    return buildGrpcMock({
      requestHeaders: r.requestHeaders,
      requestMessages: splitMessages(r.requestBody),
      responseHeaders: r.responseHeaders,
      responseMessages: splitMessages(r.responseBody),
      trailers: r.trailers,
      requestTime: r.requestTime,
      responseTime: r.responseTime,
    });
  }
  return buildHttp2Mock({
    requestHeaders: r.requestHeaders,
    requestBody: r.requestBody,
    responseHeaders: r.responseHeaders,
    responseBody: r.responseBody,
    trailers: r.trailers,
    requestTime: r.requestTime,
    responseTime: r.responseTime,
    fallbackAuthority: `${target.host}:${target.port}`,
  });
}

/** One lazily opened client session to the real server. */
function upstreamOf(dial: H2Dial, scheme: 'http' | 'https', target: { host: string; port: number }) {
  let session: Promise<http2.ClientHttp2Session> | undefined;
  return {
    get: () =>
      (session ??= dial().then(
        (socket) =>
          new Promise<http2.ClientHttp2Session>((resolve, reject) => {
            const s = http2.connect(`${scheme}://${target.host}:${target.port}`, { createConnection: () => jsDuplex(socket) });
            // A server that never sends its SETTINGS (not HTTP/2 after all) must not hang the call.
            const timer = setTimeout(() => {
              s.destroy();
              reject(new Error(`HTTP/2 to ${target.host}:${target.port}: no SETTINGS within ${CONNECT_TIMEOUT_MS} ms`));
            }, CONNECT_TIMEOUT_MS);
            s.once('connect', () => {
              clearTimeout(timer);
              resolve(s);
            });
            s.once('error', (err) => {
              clearTimeout(timer);
              reject(err);
            });
            s.on('error', () => {});
          }),
      )),
    close: () => void session?.then((s) => s.close()).catch(() => {}),
  };
}

export interface RecordH2Options {
  scheme: 'http' | 'https';
  dial: H2Dial;
  onMock(mock: Mock): void;
  warn?(message: string): void;
}

/** Records every stream of the program's HTTP/2 connection against the real server. */
export async function recordH2(conn: H2Connection, o: RecordH2Options): Promise<void> {
  const upstream = upstreamOf(o.dial, o.scheme, conn.target);
  const pending = new Set<Promise<void>>();
  try {
    await serveClient(conn, (stream, headers) => {
      const work = upstream
        .get()
        .then((session) => relay(session, stream, headers, stream))
        .then((r) => o.onMock(toMock(r, conn.target)))
        .catch((err: unknown) => {
          o.warn?.(`HTTP/2 ${String(headers[':path'])}: ${String(err)}`);
          if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
        });
      pending.add(work);
      void work.finally(() => pending.delete(work));
    });
    await Promise.race([Promise.allSettled([...pending]), new Promise((r) => setTimeout(r, 2000).unref())]);
  } finally {
    upstream.close();
  }
}

export interface ReplayH2Options {
  scheme: 'http' | 'https';
  grpc: GrpcIndex;
  http: HttpMatcher;
  onMiss: OnMiss;
  /** The real server, for misses with `passthrough`/`record`. */
  dial?: H2Dial;
  counts: { replayed: number; missed: number; fellBack: number };
  missed(message: string): void;
  recorded(mock: Mock): void;
}

/** Answers every stream of the program's HTTP/2 connection from the set's mocks. */
export async function replayH2(conn: H2Connection, o: ReplayH2Options): Promise<void> {
  const upstream = o.dial ? upstreamOf(o.dial, o.scheme, conn.target) : undefined;
  try {
    await serveClient(conn, (stream, headers) => {
      void answer(stream, headers).catch(() => {
        if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      });
    });
  } finally {
    upstream?.close();
  }

  async function answer(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) {
    const body = await readAll(stream);
    const path = String(headers[':path'] ?? '/');
    const grpc = isGrpc(headers as Record<string, unknown>);
    let miss: string;
    const status = 502;
    let grpcStatus: number = GrpcStatus.UNIMPLEMENTED;
    if (grpc) {
      const m = o.grpc.match(path, body);
      if ('call' in m) {
        o.counts.replayed++;
        const call = m.call;
        const trailers = forwardable(call.trailers);
        stream.respond(forwardable({ ':status': '200', ...call.responseHeaders }), { waitForTrailers: true });
        stream.on('wantTrailers', () => guard(stream, () => stream.sendTrailers(trailers)));
        stream.end(frameMessages(call.responseMessages));
        return;
      }
      miss = m.miss;
      grpcStatus = m.knownPath ? GrpcStatus.UNAVAILABLE : GrpcStatus.UNIMPLEMENTED;
    } else {
      const method = String(headers[':method'] ?? 'GET');
      const r = o.http.match({
        method,
        url: path,
        scheme: o.scheme,
        host: String(headers[':authority'] ?? `${conn.target.host}:${conn.target.port}`),
        headers: Object.entries(flat(headers)).filter(([k]) => !k.startsWith(':')),
        body,
      });
      if (!r.miss) {
        o.counts.replayed++;
        respondHttp(stream, r.mock);
        return;
      }
      miss = `${method} ${path} (HTTP/2)${r.closest ? `; closest ${r.closest.name}: ${r.closest.differences.slice(0, 3).join('; ')}` : ''}`;
    }
    if (upstream && o.onMiss !== 'fail') {
      let relayed: Relayed;
      try {
        relayed = await relay(await upstream.get(), stream, headers, body);
      } catch (err) {
        // The real server could not answer either: a miss like any other.
        o.counts.missed++;
        o.missed(`${miss}; the real server failed too: ${err instanceof Error ? err.message : String(err)}`);
        if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
        return;
      }
      const mock = toMock(relayed, conn.target);
      if (o.onMiss === 'record') {
        o.recorded(mock);
        const call = readGrpcMock(mock);
        if (call) o.grpc.add(call);
      } else {
        o.counts.fellBack++;
        o.counts.missed++;
      }
      return;
    }
    o.counts.missed++;
    o.missed(miss);
    if (grpc) {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(grpcStatus), 'grpc-message': encodeGrpcMessage(`debugkit mocks: ${miss}`) }, { endStream: true });
    } else {
      stream.respond({ ':status': status, 'content-type': 'text/plain; charset=utf-8' });
      stream.end(`debugkit mocks: no mock matches ${miss}\n`);
    }
  }
}

function respondHttp(stream: http2.ServerHttp2Stream, mock: HttpMock) {
  const headers: Record<string, string | number> = { ':status': mock.spec.resp.status_code };
  for (const [k, v] of Object.entries(mock.spec.resp.header)) {
    const name = k.toLowerCase();
    // Http mocks store bodies decoded (Keploy's HTTP recorder); Http2 ones as received.
    if (HOP.has(name) || name === 'content-length' || (name === 'content-encoding' && mock.spec.req.proto_major !== 2)) continue;
    headers[name] = v;
  }
  stream.respond(headers);
  stream.end(Buffer.from(bodyBytes(mock.spec.resp.body)));
}
