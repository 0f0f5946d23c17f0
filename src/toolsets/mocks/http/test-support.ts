import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { sniff } from '../proxy/sniff.js';
import { DebugkitCa } from '../tls/ca.js';
import type { HttpCandidate } from './intercept.js';
import { buildHttpMock } from './keploy.js';
import type { MatchRequest } from './matcher.js';
import type { HttpMock } from '../keploy/types.js';
import { runBounded } from '../../../core/run.js';

/** Test helpers: a local origin server, a listener that plays the capture proxy, a client. */

export const FIXED_DATE = 'Tue, 01 Jul 2025 00:00:00 GMT';

/** A recorded JSON POST of `body` to `path` on host h (answered 200 'ok'). */
export function postMock(path: string, body: string | Buffer, name = 'mock-0'): HttpMock {
  return buildHttpMock(
    {
      method: 'POST',
      url: `http://h${path}`,
      requestHeaders: [['Content-Type', 'application/json']],
      requestBody: body,
      statusCode: 200,
      responseHeaders: [],
      responseBody: 'ok',
      requestTime: new Date(0),
      responseTime: new Date(0),
    },
    { name },
  );
}

/** A JSON POST of `body` to `path` on host h, as the matcher is given one. */
export function postRequest(path: string, body: string | Buffer): MatchRequest {
  return { method: 'POST', url: path, scheme: 'http', host: 'h', headers: [['Content-Type', 'application/json']], body: Buffer.from(body) };
}

export async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'debugkit-mocks-'));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export interface Closable {
  port: number;
  close(): Promise<void>;
}

export interface Origin extends Closable {
  /** TCP connections accepted so far. */
  connections: number;
  requests: string[];
}

/** Byte i of the pattern is (i * 31 + (i >> 12)) & 255. */
export function pattern(offset: number, length: number): Buffer {
  const b = Buffer.allocUnsafe(length);
  for (let i = 0; i < length; i++) b[i] = ((offset + i) * 31 + ((offset + i) >> 12)) & 255;
  return b;
}

export const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/**
 * What the interception tests start: debugkit's CA (`ca`, its trust `bundle`) and an origin CA
 * (`originCa`), an origin in clear (`plain`) and one over TLS with a certificate for localhost
 * (`secure`); `close()` stops both origins and removes the CAs' directories.
 */
export async function startOrigins(): Promise<{ ca: DebugkitCa; originCa: DebugkitCa; bundle: string; plain: Origin; secure: Origin; close(): Promise<void> }> {
  const a = await tempDir();
  const b = await tempDir();
  const ca = await DebugkitCa.load(a.dir);
  const originCa = await DebugkitCa.load(b.dir);
  const bundle = (await ca.caBundle()).bundle;
  const plain = await startOrigin();
  const secure = await startOrigin(originCa.leafFor('localhost'));
  return {
    ca,
    originCa,
    bundle,
    plain,
    secure,
    async close() {
      await Promise.all([plain.close(), secure.close()]);
      await a.cleanup();
      await b.cleanup();
    },
  };
}

/** The origin: fixed Date so responses are byte-for-byte repeatable. */
export async function startOrigin(tls?: { key: string; cert: string }): Promise<Origin> {
  const origin = { connections: 0, requests: [] as string[] };
  let polls = 0;
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    origin.requests.push(`${req.method} ${req.url}`);
    res.setHeader('Date', FIXED_DATE);
    const url = new URL(req.url ?? '/', 'http://x');
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => route(url, req, res, Buffer.concat(chunks), () => ++polls));
  };
  const server = tls ? https.createServer({ key: tls.key, cert: tls.cert }, handler) : http.createServer(handler);
  server.on(tls ? 'secureConnection' : 'connection', () => void origin.connections++);
  server.on('upgrade', (_req: http.IncomingMessage, socket: net.Socket) => {
    socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n');
    socket.pipe(socket);
  });
  const port = await listen(server);
  return Object.assign(origin, { port, close: () => closeServer(server) });
}

function route(url: URL, req: http.IncomingMessage, res: http.ServerResponse, body: Buffer, poll: () => number): void {
  switch (url.pathname) {
    case '/hello':
      res.setHeader('Content-Type', 'text/plain; charset=utf-8');
      res.setHeader('X-Multi', ['a', 'b']);
      res.setHeader('Set-Cookie', ['a=1; Path=/', 'b=2; Expires=Wed, 21 Oct 2037 07:28:00 GMT; HttpOnly']);
      return void res.end('hello world\n');
    case '/echo':
      res.setHeader('Content-Type', 'application/json');
      return void res.end(JSON.stringify({ method: req.method, received: body.toString('utf8'), length: body.length }));
    case '/slow': {
      let n = 0;
      const timer = setInterval(() => {
        res.write(`tick ${n}\n`);
        if (++n === 5) {
          clearInterval(timer);
          res.end();
        }
      }, 150);
      return;
    }
    case '/big':
      return streamPattern(res, Number(url.searchParams.get('bytes')));
    case '/upload':
      res.setHeader('Content-Type', 'application/json');
      return void res.end(JSON.stringify({ bytes: body.length, sha256: sha256(body) }));
    case '/gzip': {
      const data = zlib.gzipSync(JSON.stringify({ compressed: true, items: [1, 2, 3] }));
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', 'Content-Length': data.length });
      return void res.end(data);
    }
    case '/binary':
      res.setHeader('Content-Type', 'application/octet-stream');
      return void res.end(Buffer.from([0xff, 0x00, 0xfe, 0x80, 0x41]));
    case '/poll':
      res.setHeader('Content-Type', 'application/json');
      return void res.end(JSON.stringify({ poll: poll() }));
    case '/nothing':
      res.writeHead(204);
      return void res.end();
    default:
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('not found\n');
  }
}

function streamPattern(res: http.ServerResponse, total: number): void {
  res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': total });
  let sent = 0;
  const pump = () => {
    while (sent < total) {
      const n = Math.min(64 * 1024, total - sent);
      const ok = res.write(pattern(sent, n));
      sent += n;
      if (!ok) return void res.once('drain', pump);
    }
    res.end();
  };
  pump();
}

/** Plays the capture proxy: each connection is sniffed and handed over as intercepted for `target`. */
export async function interceptingListener(target: { host: string; port: number }, handle: (conn: HttpCandidate) => Promise<unknown> | unknown): Promise<Closable> {
  let next = 1;
  const sockets = new Set<net.Socket>();
  const server = net.createServer({ pauseOnConnect: true, allowHalfOpen: true }, (socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.once('close', () => sockets.delete(socket));
    void sniff(socket).then((s) => handle({ id: `conn-${next++}`, target, protocol: s.protocol, ...(s.sni ? { sni: s.sni } : {}), client: socket }));
  });
  const port = await listen(server);
  return {
    port,
    close: async () => {
      for (const s of sockets) s.destroy();
      await closeServer(server);
    },
  };
}

export interface Fetched {
  status: number;
  headers: Array<[string, string]>;
  body: Buffer;
  /** ms since the request was sent, per received body chunk. */
  chunkTimes: number[];
}

export interface FetchOptions {
  port: number;
  path: string;
  method?: string;
  /** Sent as Host (and TLS name when `ca` is given). */
  host: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
  agent?: http.Agent;
  /** HTTPS, trusting this CA. */
  ca?: string;
}

export function fetchVia(o: FetchOptions): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const servername = o.host.replace(/:\d+$/, '');
    const options = { host: '127.0.0.1', port: o.port, path: o.path, method: o.method ?? 'GET', headers: { Host: o.host, ...o.headers }, agent: o.agent };
    const req = o.ca ? https.request({ ...options, ca: o.ca, servername }) : http.request(options);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      const chunkTimes: number[] = [];
      res.on('data', (c: Buffer) => {
        chunks.push(c);
        chunkTimes.push(Date.now() - started);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: pairsOf(res.rawHeaders), body: Buffer.concat(chunks), chunkTimes }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(o.body);
  });
}

export function pairsOf(raw: string[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let i = 0; i + 1 < raw.length; i += 2) out.push([raw[i]!, raw[i + 1]!]);
  return out;
}

const live = new WeakMap<net.Server, Set<net.Socket>>();

/** Listens on 127.0.0.1 (random port), tracking connections so closeServer can end them all. */
export function listen(server: net.Server): Promise<number> {
  const sockets = new Set<net.Socket>();
  live.set(server, sockets);
  server.on('connection', (s: net.Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0 }, () => resolve((server.address() as net.AddressInfo).port));
  });
}

export function closeServer(server: net.Server): Promise<void> {
  for (const s of live.get(server) ?? []) s.destroy();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** Raw bytes exchanged on one TCP connection: send `data`, half-close, read until the peer closes. */
export function rawExchange(port: number, data: string | Buffer, { halfClose = true } = {}): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('end', () => {
      socket.end();
      resolve(Buffer.concat(chunks));
    });
    socket.on('error', reject);
    socket.write(data);
    if (halfClose) socket.end();
  });
}

/** curl, asynchronously: the recorder runs in this process and must keep serving meanwhile. */
export async function curl(args: string[]): Promise<{ stdout: string; stderr: string }> {
  const { stdout, stderr } = await runBounded({ command: 'curl', args, timeoutMs: 20_000, maxOutputChars: 16 * 1024 * 1024 });
  return { stdout, stderr };
}

/**
 * Watches the event loop's turns until `stop()`: how many there were, and the most CPU time (ms)
 * spent between two of them (CPU time: a loaded machine does not stretch it). The replay tests of
 * attack 18d check with it that long work is done in slices.
 */
export function watchTurns(): { stop(): { turns: number; longest: number } } {
  let turns = 0;
  let longest = 0;
  let last = process.cpuUsage();
  let done = false;
  const turn = () => {
    const used = process.cpuUsage(last);
    longest = Math.max(longest, (used.user + used.system) / 1000);
    last = process.cpuUsage();
    turns++;
    if (!done) setImmediate(turn);
  };
  setImmediate(turn);
  return {
    stop: () => {
      done = true;
      return { turns, longest };
    },
  };
}
