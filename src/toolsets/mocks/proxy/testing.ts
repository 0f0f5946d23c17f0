import { createHash } from 'node:crypto';
import { accessSync, constants } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { runBounded } from '../../../core/run.js';
import { waitBounded } from '../../../core/wait.js';

/** Test helpers: local servers and real programs run to completion with a bound. */

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export async function runProgram(command: string, args: readonly string[], { env, timeoutMs = 30_000 }: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<RunResult> {
  const { code, signal, stdout, stderr } = await runBounded({ command, args, ...(env ? { env } : {}), timeoutMs, graceMs: 200, maxOutputChars: 16 * 1024 * 1024 });
  return { code, signal, stdout, stderr };
}

/** The path of `name` on PATH, or an error naming the Debian package that provides it. */
export function requireCommand(name: string, pkg = name): string {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      /* keep looking */
    }
  }
  throw new Error(`${name} is not installed; install it with: apt-get install -y ${pkg}`);
}

export interface SeenRequest {
  method: string;
  url: string;
  /** Which TCP connection carried it (1, 2, ... in arrival order). */
  connection: number;
}

export interface TestHttpServer {
  port: number;
  requests: SeenRequest[];
  close(): Promise<void>;
}

/** `/big?bytes=N` streams N deterministic bytes (with backpressure); anything else echoes the URL. */
export async function startHttpServer(): Promise<TestHttpServer> {
  const requests: SeenRequest[] = [];
  const ids = new WeakMap<net.Socket, number>();
  let connections = 0;
  const server = http.createServer((req, res) => {
    const connection = ids.get(req.socket) ?? 0;
    requests.push({ method: req.method ?? '', url: req.url ?? '', connection });
    const big = /^\/big\?bytes=(\d+)$/.exec(req.url ?? '');
    if (big) return void streamPattern(res, Number(big[1]));
    if (req.method === 'POST') return void answerUpload(req, res);
    res.setHeader('content-type', 'text/plain');
    res.end(`hello ${req.method} ${req.url}\n`);
  });
  server.on('connection', (s) => ids.set(s, ++connections));
  const port = await listenLocal(server);
  return { port, requests, close: () => closeAll(server) };
}

/** Byte i of the pattern is (i * 31 + (i >> 12)) & 255: cheap to produce and to check. */
export function patternBytes(offset: number, length: number): Buffer {
  const buf = Buffer.allocUnsafe(length);
  for (let i = 0; i < length; i++) {
    const n = offset + i;
    buf[i] = (n * 31 + (n >> 12)) & 255;
  }
  return buf;
}

/** Answers with the size and SHA-256 of the request body. */
function answerUpload(req: http.IncomingMessage, res: http.ServerResponse): void {
  const hash = createHash('sha256');
  let size = 0;
  req.on('data', (d: Buffer) => {
    hash.update(d);
    size += d.length;
  });
  req.on('end', () => res.end(`${size} ${hash.digest('hex')}\n`));
}

function streamPattern(res: http.ServerResponse, total: number): void {
  res.setHeader('content-type', 'application/octet-stream');
  res.setHeader('content-length', String(total));
  let sent = 0;
  const pump = () => {
    while (sent < total) {
      const n = Math.min(64 * 1024, total - sent);
      const ok = res.write(patternBytes(sent, n));
      sent += n;
      if (!ok) return void res.once('drain', pump);
    }
    res.end();
  };
  pump();
}

/** Echoes every byte and half-closes when the client does. */
export async function startEchoServer(): Promise<{ port: number; close(): Promise<void> }> {
  const server = net.createServer({ allowHalfOpen: true }, (s) => {
    s.on('error', () => {});
    s.pipe(s);
  });
  return { port: await listenLocal(server), close: () => closeAll(server) };
}

/** A server-speaks-first service (like SMTP): greets, then echoes one line and closes. */
export async function startGreetingServer(greeting: string): Promise<{ port: number; close(): Promise<void> }> {
  const server = net.createServer((s) => {
    s.on('error', () => {});
    s.write(greeting);
    s.once('data', (d) => s.end(d));
  });
  return { port: await listenLocal(server), close: () => closeAll(server) };
}

export interface FirstBytesServer {
  port: number;
  /** The bytes of the next connection, once its client has been quiet for `quietMs`. */
  next(): Promise<Buffer>;
  close(): Promise<void>;
}

/** Records what clients send first, answering `reply` (if any) to their first chunk. */
export async function startFirstBytesServer({ quietMs = 150, reply }: { quietMs?: number; reply?: Buffer } = {}): Promise<FirstBytesServer> {
  const waiting: ((b: Buffer) => void)[] = [];
  const ready: Buffer[] = [];
  const server = net.createServer((s) => {
    s.on('error', () => {});
    const chunks: Buffer[] = [];
    let timer: NodeJS.Timeout | undefined;
    const done = () => {
      s.destroy();
      const got = Buffer.concat(chunks);
      const w = waiting.shift();
      if (w) w(got);
      else ready.push(got);
    };
    s.on('data', (d: Buffer) => {
      if (chunks.length === 0 && reply) s.write(reply);
      chunks.push(d);
      clearTimeout(timer);
      timer = setTimeout(done, quietMs);
    });
  });
  const port = await listenLocal(server);
  return {
    port,
    next: () => (ready.length ? Promise.resolve(ready.shift()!) : new Promise((r) => waiting.push(r))),
    close: () => closeAll(server),
  };
}

export function listenLocal(server: net.Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port));
  });
}

function closeAll(server: net.Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    (server as http.Server).closeAllConnections?.();
  });
}

/** Connects to a port and resolves with the socket once connected. */
export function connectLocal(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true }, () => resolve(s));
    s.once('error', reject);
  });
}

/** Everything a socket receives until it ends (or `ms` pass). */
export async function readAll(s: net.Socket, ms = 5000): Promise<Buffer> {
  const chunks: Buffer[] = [];
  await waitBounded<void>(
    (settle) => {
      const onData = (d: Buffer) => chunks.push(d);
      const onEnd = () => settle();
      s.on('data', onData);
      s.once('end', onEnd);
      s.once('close', onEnd);
      return () => {
        s.off('data', onData);
        s.off('end', onEnd);
        s.off('close', onEnd);
      };
    },
    { timeoutMs: ms, keepAlive: true },
  );
  return Buffer.concat(chunks);
}

/** Waits for at least `n` bytes on a socket (or for it to end). */
export async function readBytes(s: net.Socket, n: number, ms = 5000): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  await waitBounded<void>(
    (settle) => {
      const onData = (d: Buffer) => {
        chunks.push(d);
        total += d.length;
        if (total >= n) settle();
      };
      const onClose = () => settle();
      s.on('data', onData);
      s.once('close', onClose);
      return () => {
        s.off('data', onData);
        s.off('close', onClose);
      };
    },
    { timeoutMs: ms, keepAlive: true },
  );
  return Buffer.concat(chunks);
}

/** One HTTP/1.1 response with a Content-Length body, read from a raw socket. */
export async function readHttpResponse(s: net.Socket, ms = 5000): Promise<{ head: string; body: string }> {
  let buf = Buffer.alloc(0);
  const read = await waitBounded<{ head: string; body: string }>(
    (settle) => {
      const onData = (d: Buffer) => {
        buf = Buffer.concat([buf, d]);
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.toString('latin1', 0, end);
        const len = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
        if (buf.length >= end + 4 + len) settle({ head, body: buf.toString('utf8', end + 4, end + 4 + len) });
      };
      s.on('data', onData);
      return () => s.off('data', onData);
    },
    { timeoutMs: ms, keepAlive: true },
  );
  if (read.kind !== 'value') throw new Error(`no complete HTTP response within ${ms} ms`);
  return read.value;
}
