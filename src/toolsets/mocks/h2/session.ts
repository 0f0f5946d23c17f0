import http2 from 'node:http2';
import { Duplex } from 'node:stream';
import { bodyBytes } from '../keploy/http.js';
import { buildHttp2Mock } from './http2.js';
import type { HttpMock, Mock } from '../keploy/types.js';
import type { HttpMatcher } from '../http/matcher.js';
import type { OnMiss } from '../http/replayer.js';
import {
  buildGrpcMock,
  encodeGrpcMessage,
  frameMessages,
  GrpcCallMatch,
  GrpcStatus,
  isGrpc,
  MessageReader,
  readGrpcMock,
  splitMessages,
  type GrpcCall,
  type GrpcIndex,
  type GrpcMessage,
  type HeaderMap,
} from './grpc.js';

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
  /** gRPC: the server ended the call after this many request messages, before the program's end. */
  trailersAfterRequests?: number;
  /** gRPC: the response messages, each with the count of request messages sent before it came. */
  responseMessages: GrpcMessage[];
  requestBody: Buffer;
  responseHeaders: HeaderMap;
  responseBody: Buffer;
  trailers: HeaderMap;
  requestTime: Date;
  responseTime: Date;
}

/** The program's request body: bytes already read (`prefix`), then the rest of `live` as it comes. */
type RequestBody = Buffer | { prefix?: Buffer; live: http2.ServerHttp2Stream };

/**
 * Sends one request upstream and relays the answer to the program as it comes (headers, data,
 * trailers). `body` is the program's stream (forwarded live) or its buffered bytes. For gRPC each
 * response message notes how many request messages had gone up before it came (none noted once
 * the program had ended its side), so a replay can answer a bidirectional stream in step.
 */
function relay(upstream: http2.ClientHttp2Session, down: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, body: RequestBody): Promise<Relayed> {
  return new Promise((resolve, reject) => {
    const requestTime = new Date();
    const requestHeaders = flat(headers);
    const reqChunks: Buffer[] = [];
    const respChunks: Buffer[] = [];
    const reqReader = new MessageReader();
    const respReader = new MessageReader();
    const responseMessages: GrpcMessage[] = [];
    let requestsSent = 0;
    let clientEnded = false;
    const sendUp = (c: Buffer) => {
      reqChunks.push(c);
      requestsSent += reqReader.push(c).length;
      return up.write(c);
    };
    let responseHeaders: HeaderMap = {};
    let trailers: HeaderMap = {};
    let endedWithHeaders = false;
    let responded = false;
    const up = upstream.request(forwardable(requestHeaders), { endStream: false });
    const endUp = () => {
      clientEnded = true;
      up.end();
    };
    if (Buffer.isBuffer(body)) {
      sendUp(body);
      endUp();
    } else {
      const live = body.live;
      if (body.prefix && body.prefix.length > 0) sendUp(body.prefix);
      if (live.readableEnded) endUp();
      else {
        // Not pipe(): piping a server stream makes node:http2 send a default response on it.
        live.on('data', (c: Buffer) => {
          if (!sendUp(c)) live.pause();
        });
        up.on('drain', () => live.resume());
        live.once('end', endUp);
        live.resume();
      }
    }
    up.on('response', (h, flags) => {
      responseHeaders = flat(h);
      endedWithHeaders = (flags & END_STREAM) !== 0;
      if (endedWithHeaders && !clientEnded) trailersAfterRequests = requestsSent;
      // Reading starts only now: node:http2 may deliver DATA before emitting 'response'.
      up.on('data', (c: Buffer) => {
        respChunks.push(c);
        for (const m of respReader.push(c)) responseMessages.push(clientEnded ? m : { ...m, afterRequests: requestsSent });
        if (!down.destroyed) down.write(c);
      });
      if (down.destroyed || responded) return;
      responded = true;
      guard(down, () => down.respond(forwardable(responseHeaders), endedWithHeaders ? { endStream: true } : { waitForTrailers: true }));
    });
    down.on('wantTrailers', () => guard(down, () => down.sendTrailers(forwardable(trailers))));
    let trailersAfterRequests: number | undefined;
    up.on('trailers', (t) => {
      trailers = flat(t);
      if (!clientEnded) trailersAfterRequests = requestsSent;
    });
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
        ...(trailersAfterRequests !== undefined ? { trailersAfterRequests } : {}),
        responseMessages,
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
      responseMessages: r.responseMessages,
      ...(r.trailersAfterRequests !== undefined ? { trailersAfterRequests: r.trailersAfterRequests } : {}),
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
        .then((session) => relay(session, stream, headers, { live: stream }))
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
    if (isGrpc(headers as Record<string, unknown>)) return answerGrpc(stream, headers);
    const body = await readAll(stream);
    const path = String(headers[':path'] ?? '/');
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
    const miss = `${method} ${path} (HTTP/2)${r.closest ? `; closest ${r.closest.name}: ${r.closest.differences.slice(0, 3).join('; ')}` : ''}`;
    if (await fallBack(stream, headers, miss, body)) return;
    o.counts.missed++;
    o.missed(miss);
    stream.respond({ ':status': 502, 'content-type': 'text/plain; charset=utf-8' });
    stream.end(`debugkit mocks: no mock matches ${miss}\n`);
  }

  /** A miss with `passthrough`/`record` and the real server known: relays it; false when not. */
  async function fallBack(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, miss: string, body: RequestBody): Promise<boolean> {
    if (!upstream || o.onMiss === 'fail') return false;
    let relayed: Relayed;
    try {
      relayed = await relay(await upstream.get(), stream, headers, body);
    } catch (err) {
      // The real server could not answer either: a miss like any other.
      o.counts.missed++;
      o.missed(`${miss}; the real server failed too: ${err instanceof Error ? err.message : String(err)}`);
      if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      return true;
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
    return true;
  }

  /**
   * A gRPC call, answered as its request messages arrive: each recorded response message goes
   * out once the request messages recorded before it have come (see GrpcCallMatch), the trailers
   * when the client ends its side. A miss before anything was sent can still go to the real
   * server; after, the call ends with UNAVAILABLE naming the closest mock.
   */
  function answerGrpc(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): Promise<void> {
    const path = String(headers[':path'] ?? '/');
    const opened = o.grpc.open(path);
    const raw: Buffer[] = [];
    let size = 0;
    let answering: GrpcCall | undefined;
    let trailers: HeaderMap = {};
    const send = (messages: readonly GrpcMessage[], call: GrpcCall, end = false) => {
      if (!answering) {
        answering = call;
        const head = forwardable({ ':status': '200', ...call.responseHeaders });
        if (end && call.responseMessages.length === 0 && 'grpc-status' in head) {
          // Recorded as a trailers-only answer (the status in the one HEADERS frame): so again.
          stream.respond(head, { endStream: true });
          return;
        }
        // Only now: a miss before this may hand the stream to relay(), which sends its own trailers.
        stream.on('wantTrailers', () => guard(stream, () => stream.sendTrailers(trailers)));
        trailers = forwardable(call.trailers);
        stream.respond(head, { waitForTrailers: true });
      }
      if (messages.length > 0) stream.write(frameMessages(messages));
      if (end) stream.end();
    };
    return new Promise<void>((resolve) => {
      let done = false;
      const finish = () => {
        done = true;
        stream.off('data', onData);
        stream.off('end', onEnd);
        resolve();
      };
      const failed = (miss: string, status: number) => {
        if (done) return;
        finish();
        // Held until relay() (or the miss answer below) reads on: no chunk may slip by unread.
        stream.pause();
        const prefix = Buffer.concat(raw);
        void (async () => {
          if (!answering && (await fallBack(stream, headers, miss, { prefix, live: stream }))) return;
          o.counts.missed++;
          o.missed(miss);
          if (stream.destroyed) return;
          const text = encodeGrpcMessage(`debugkit mocks: ${miss}`);
          if (answering) {
            trailers = { 'grpc-status': String(GrpcStatus.UNAVAILABLE), 'grpc-message': text };
            stream.end();
          } else {
            stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(status), 'grpc-message': text }, { endStream: true });
          }
          stream.resume();
        })().catch(() => {
          if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
        });
      };
      const reader = new MessageReader();
      const onData = (c: Buffer) => {
        if (done || !(opened instanceof GrpcCallMatch)) return;
        // The bytes so far are kept for a relay to the real server, possible until a reply went out.
        if (!answering) {
          raw.push(c);
          size += c.length;
        } else raw.length = 0;
        const parsed = reader.push(c);
        if (reader.pending > MAX_BODY || (!answering && size > MAX_BODY)) return failed(`gRPC ${path}: the request is over ${MAX_BODY} bytes`, GrpcStatus.UNAVAILABLE);
        for (const m of parsed) {
          const r = opened.push(m);
          if ('miss' in r) return failed(r.miss, GrpcStatus.UNAVAILABLE);
          if (r.end) {
            // The recorded server ended the call here: trailers now, the rest of the client's stream unread.
            finish();
            o.counts.replayed++;
            guard(stream, () => send(r.send, r.call, true));
            stream.resume();
            return;
          }
          // Headers go with the first reply (or at the end): until then a miss can still be relayed.
          if (r.send.length > 0) guard(stream, () => send(r.send, r.call));
        }
      };
      const onEnd = () => {
        if (done || !(opened instanceof GrpcCallMatch)) return;
        const r = opened.end();
        if ('miss' in r) return failed(r.miss, GrpcStatus.UNAVAILABLE);
        finish();
        o.counts.replayed++;
        guard(stream, () => send(r.send, r.call, true));
      };
      stream.once('close', () => {
        if (!done) finish();
      });
      if (!(opened instanceof GrpcCallMatch)) return failed(opened.miss, GrpcStatus.UNIMPLEMENTED);
      stream.on('data', onData);
      stream.once('end', onEnd);
    });
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
