import http2 from 'node:http2';
import { Duplex } from 'node:stream';
import { onceBounded } from '../../../core/wait.js';
import type { Verdict } from '../protocol.js';
import type { HeaderMap } from './grpc.js';

/**
 * HTTP/2 between the program and debugkit: node:http2's server side on the intercepted (and, for
 * TLS, decrypted) connection, its client side to the real server when recording or on a miss.
 * node:http2 does the framing; this is how debugkit holds it: serving the program's connection,
 * one lazily opened session upstream, the headers each side may be sent.
 */

export const MAX_BODY = 16 * 1024 * 1024;
const CONNECT_TIMEOUT_MS = 10_000;
/** Connection-specific headers HTTP/2 forbids. */
export const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'http2-settings', 'host']);
export const END_STREAM = http2.constants.NGHTTP2_FLAG_END_STREAM;

export interface H2Connection {
  id: string;
  target: { host: string; port: number };
  client: Duplex;
}

/** Opens the socket to the real server (plain for h2c, TLS with ALPN h2 for https). */
export type H2Dial = () => Promise<Duplex>;

export function flat(headers: http2.IncomingHttpHeaders | http2.OutgoingHttpHeaders): HeaderMap {
  const out: HeaderMap = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined || HOP.has(k)) continue;
    out[k] = Array.isArray(v) ? v.join(', ') : String(v);
  }
  return out;
}

/** Runs a stream operation from an event handler: a failure resets that stream, never the server. */
export function guard(stream: http2.Http2Stream, op: () => void): void {
  try {
    op();
  } catch {
    if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
  }
}

export function forwardable(headers: HeaderMap): HeaderMap {
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
export function serveClient(conn: H2Connection, onStream: (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void): Promise<void> {
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

/** One lazily opened client session to the real server. */
export function upstreamOf(dial: H2Dial, scheme: 'http' | 'https', target: { host: string; port: number }) {
  let session: Promise<http2.ClientHttp2Session> | undefined;
  return {
    get: () =>
      (session ??= dial().then(async (socket) => {
        const s = http2.connect(`${scheme}://${target.host}:${target.port}`, { createConnection: () => jsDuplex(socket) });
        s.on('error', () => {}); // errors after the start reach each stream
        // A server that never sends its SETTINGS (not HTTP/2 after all) must not hang the call.
        const started = await onceBounded(s, 'connect', { timeoutMs: CONNECT_TIMEOUT_MS, keepAlive: true });
        if (started.kind === 'value') return s;
        s.destroy();
        if (started.kind === 'error') throw started.error;
        throw new Error(`HTTP/2 to ${target.host}:${target.port}: ${started.kind === 'closed' ? 'closed before its SETTINGS' : `no SETTINGS within ${CONNECT_TIMEOUT_MS} ms`}`);
      })),
    close: () => void session?.then((s) => s.close()).catch(() => {}),
  };
}

/** The HTTP/2 client connection preface (RFC 9113 3.4). */
export const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** h2c: HTTP/2 in clear with prior knowledge, recognized by its connection preface. */
export function detect(buf: Buffer): Verdict {
  const n = Math.min(buf.length, H2_PREFACE.length);
  if (buf.compare(H2_PREFACE, 0, n, 0, n) !== 0) return 'no';
  return n === H2_PREFACE.length ? { protocol: 'h2' } : 'maybe';
}
