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
function jsDuplex(socket: Duplex, onChunk?: (chunk: Buffer) => void): Duplex {
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
    onChunk?.(c);
    if (!d.push(c)) socket.pause();
  });
  socket.on('end', () => d.push(null));
  socket.on('close', () => d.destroy());
  socket.on('error', () => d.destroy());
  return d;
}

/**
 * The streams one connection of the program may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS).
 * node:http2's default is 2^32-1: one connection's burst of 100,000 HEADERS frames held the event
 * loop 2-7 s and took the server to 450 MB (attack f2-1). Over this nghttp2 refuses a stream
 * (RST_STREAM REFUSED_STREAM), and node:http2 closes a connection that goes on past its own limit
 * of refused streams. Clients queue their requests under the limit a server advertises (grpc-go,
 * Go's net/http and nghttp2 clients do); real servers advertise 100 (nghttp2) to 250 (Go).
 */
export const MAX_CONCURRENT_STREAMS = 256;

/** What serveClient saw of the program's connection, once it closed. */
export interface ServedH2 {
  /** Streams the program opened: HEADERS frames with a new stream id. */
  opened: number;
  /** Streams handed to `onStream` (the others were refused, malformed, or their header block never ended). */
  served: number;
  /** The connection closed inside a header block (HEADERS or CONTINUATION without END_HEADERS, never ended). */
  headerBlockOpen: boolean;
  /** Why node:http2 ended the session, when it did (a protocol error, too many refused streams or invalid frames). */
  error?: Error;
}

/**
 * The streams of a connection that never reached the replayer or recorder (`served` < `opened`):
 * how many, and why, in one line; undefined when every stream did.
 */
export function unservedStreams(seen: ServedH2): { count: number; why: string } | undefined {
  const count = seen.opened - seen.served;
  if (count <= 0) return undefined;
  const why = seen.headerBlockOpen
    ? 'the last header block was never ended (HEADERS or CONTINUATION frames without END_HEADERS until the connection closed)'
    : `nghttp2 refused them (REFUSED_STREAM past the ${MAX_CONCURRENT_STREAMS} streams a connection may have open at once, or a malformed request)`;
  return { count, why: `${why}${seen.error ? `; node:http2 closed the connection: ${seen.error.message}` : ''}` };
}

const FRAME_HEADERS = 0x1;
const FRAME_CONTINUATION = 0x9;
const FLAG_END_HEADERS = 0x4;

/**
 * Reads the frame headers of the program's side of a connection, as it reaches node:http2, to
 * count the streams it opens: node:http2 says nothing of those nghttp2 refused or whose header
 * block never ended. Payloads are skipped, never copied.
 */
class OpenedStreams {
  opened = 0;
  headerBlockOpen = false;
  private highest = 0;
  /** Bytes still to skip: the connection preface, then each frame's payload. */
  private skip = H2_PREFACE.length;
  private readonly head = Buffer.alloc(9);
  private have = 0;

  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, chunk.length - at);
        this.skip -= n;
        at += n;
        continue;
      }
      const n = Math.min(9 - this.have, chunk.length - at);
      chunk.copy(this.head, this.have, at, at + n);
      this.have += n;
      at += n;
      if (this.have < 9) return;
      this.have = 0;
      this.skip = this.head.readUIntBE(0, 3);
      const [type, flags] = [this.head[3]!, this.head[4]!];
      const id = this.head.readUInt32BE(5) & 0x7fffffff;
      if (type === FRAME_HEADERS) {
        this.headerBlockOpen = (flags & FLAG_END_HEADERS) === 0;
        // A client opens streams with odd ids, each above the last; a HEADERS frame on an older one is trailers.
        if (id % 2 === 1 && id > this.highest) {
          this.highest = id;
          this.opened++;
        }
      } else if (type === FRAME_CONTINUATION) this.headerBlockOpen = (flags & FLAG_END_HEADERS) === 0;
    }
  }
}

/** Serves the program's HTTP/2 connection, each stream to `onStream`; resolves when it closes, with what it saw. */
export function serveClient(conn: H2Connection, onStream: (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void): Promise<ServedH2> {
  return new Promise((resolve) => {
    const frames = new OpenedStreams();
    let served = 0;
    let error: Error | undefined;
    const done = () => resolve({ opened: frames.opened, served, headerBlockOpen: frames.headerBlockOpen, ...(error ? { error } : {}) });
    const server = http2.createServer({ settings: { maxConcurrentStreams: MAX_CONCURRENT_STREAMS } });
    server.on('stream', (stream, headers) => {
      served++;
      stream.on('error', () => {});
      onStream(stream, headers);
    });
    server.on('session', (session) => {
      session.on('error', (err: Error) => (error ??= err));
      session.once('close', done);
    });
    conn.client.once('close', done);
    server.emit(
      'connection',
      jsDuplex(conn.client, (c) => frames.push(c)),
    );
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
