import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BudgetShares, DescriptorBudget } from '../../../core/fd-budget.js';
import { pollUntil } from '../../../core/wait.js';
import { redactText } from '../../../core/secrets.js';
import { PendingHandshakes } from './auth.js';
import {
  describeRefusals,
  describeUnauthenticated,
  PROXY_MAX_CONNECTIONS_ENV,
  proxiesMaxConnections,
  startCaptureProxy,
  UNAUTHENTICATED,
  type CaptureProxy,
  type InterceptedConnection,
} from './proxy.js';
import { findProxychains, proxiedCommand, writeProxychainsConfig } from './proxychains.js';
import { encodeReply } from './socks5.js';
import {
  connectLocal,
  patternBytes,
  readAll,
  readBytes,
  readHttpResponse,
  requireCommand,
  runProgram,
  startEchoServer,
  startFirstBytesServer,
  startGreetingServer,
  startHttpServer,
  type FirstBytesServer,
  type TestHttpServer,
} from './testing.js';
import { tunnel } from './tunnel.js';

/**
 * End to end: real programs (curl, python3, node, psql) run under the real proxychains4, their
 * connections captured by the proxy and tunnelled to local servers.
 */

type Seen = Omit<InterceptedConnection, 'client'>;
const seen: Seen[] = [];
/** A name that resolves nowhere: with proxy_dns the proxy gets the name and we route it locally. */
const FAKE_HOST = 'api.example.test';

let proxychains: string;
let web: TestHttpServer;
let other: TestHttpServer;
let echo: { port: number; close(): Promise<void> };
let greeter: { port: number; close(): Promise<void> };
let pg: FirstBytesServer;
let proxy: CaptureProxy;
let dir: string;
let configPath: string;

beforeAll(async () => {
  // Missing tools fail the suite here, naming the package to install; they are never skipped.
  proxychains = findProxychains();
  requireCommand('curl');
  requireCommand('python3');
  [web, other, echo, greeter, pg] = await Promise.all([
    startHttpServer(),
    startHttpServer(),
    startEchoServer(),
    startGreetingServer('220 greeter ready\r\n'),
    startFirstBytesServer({ reply: Buffer.from('N') }),
  ]);
  proxy = await startCaptureProxy({
    onConnection: async (conn) => {
      const { client: _client, ...rest } = conn;
      seen.push(rest);
      if (conn.target.host !== FAKE_HOST) return void (await tunnel(conn));
      if (conn.protocol === 'tls') return void conn.client.destroy(); // no TLS server to route to
      await tunnel(conn, { to: { host: '127.0.0.1', port: web.port } });
    },
    exclude: (_host, port) => port === other.port,
  });
  dir = mkdtempSync(path.join(os.tmpdir(), 'debugkit-proxy-'));
  configPath = writeProxychainsConfig(dir, proxy.socksPort, { httpPort: proxy.httpPort, credential: proxy.credential! });
});

afterAll(async () => {
  await proxy?.close();
  await Promise.all([web?.close(), other?.close(), echo?.close(), greeter?.close(), pg?.close()]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** This environment without any proxy variables: only proxychains routes the program. */
function envWithoutProxies(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(http|https|all|no)_proxy$/i.test(k)));
}

/** Runs argv under proxychains4 only, returning its result and the connections it produced. */
async function chained(argv: string[]) {
  const before = seen.length;
  const result = await runProgram(proxychains, ['-q', '-f', configPath, ...argv], { env: envWithoutProxies() });
  return { ...result, conns: seen.slice(before) };
}

/** Runs argv the way the toolset will: proxychains4 plus the proxy variables. */
async function proxied(argv: string[]) {
  const before = seen.length;
  const cmd = proxiedCommand(argv, { socksPort: proxy.socksPort, httpPort: proxy.httpPort, configPath, env: envWithoutProxies(), credential: proxy.credential! });
  const result = await runProgram(cmd.command, cmd.args, { env: cmd.env });
  return { ...result, conns: seen.slice(before) };
}

const url = (p: string, port = web.port, host = '127.0.0.1') => `http://${host}:${port}${p}`;
const userinfo = () => `${proxy.credential!.user}:${proxy.credential!.password}@`;
/** The header line a plain-proxy request shows the credential in. */
const authLine = () => `Proxy-Authorization: Basic ${Buffer.from(`${proxy.credential!.user}:${proxy.credential!.password}`).toString('base64')}\r\n`;
const lastRequest = () => web.requests.at(-1);
const pyGet = (u: string) => `import urllib.request; print(urllib.request.urlopen(${JSON.stringify(u)}, timeout=10).read().decode(), end="")`;

describe('curl', () => {
  it('under proxychains: captured via SOCKS5 as HTTP to 127.0.0.1 (loopback is not bypassed)', async () => {
    const r = await chained(['curl', '-sS', url('/curl')]);
    expect(r.stdout).toBe('hello GET /curl\n');
    expect(lastRequest()).toMatchObject({ method: 'GET', url: '/curl' });
    expect(r.conns).toMatchObject([{ via: 'socks5', protocol: 'http', target: { host: '127.0.0.1', port: web.port } }]);
  });

  it('with the proxy variables too: uses the HTTP proxy, and the server gets origin form', async () => {
    const r = await proxied(['curl', '-sS', url('/curl-env?q=1')]);
    expect(r.stdout).toBe('hello GET /curl-env?q=1\n');
    expect(lastRequest()?.url).toBe('/curl-env?q=1');
    expect(r.conns).toMatchObject([{ via: 'http-proxy', protocol: 'http', target: { host: '127.0.0.1', port: web.port } }]);
  });

  it('proxy_dns: a name that resolves nowhere reaches the proxy as a name', async () => {
    const r = await chained(['curl', '-sS', url('/named', web.port, FAKE_HOST)]);
    expect(r.stdout).toBe('hello GET /named\n');
    expect(r.conns).toMatchObject([{ via: 'socks5', target: { host: FAKE_HOST, port: web.port, addressType: 'domain' } }]);
  });

  it('TLS under proxychains: the ClientHello is sniffed with its SNI', async () => {
    const r = await chained(['curl', '-sk', '--max-time', '5', `https://${FAKE_HOST}/`]);
    expect(r.code).not.toBe(0); // the handler closed it: nothing to talk TLS with
    expect(r.conns).toMatchObject([{ via: 'socks5', protocol: 'tls', sni: FAKE_HOST, target: { host: FAKE_HOST, port: 443 } }]);
  });

  it('TLS with HTTPS_PROXY: a CONNECT tunnel, sniffed the same way', async () => {
    const r = await proxied(['curl', '-sk', '--max-time', '5', `https://${FAKE_HOST}:8443/`]);
    expect(r.code).not.toBe(0);
    expect(r.conns).toMatchObject([{ via: 'http-connect', protocol: 'tls', sni: FAKE_HOST, target: { host: FAKE_HOST, port: 8443 } }]);
  });

  it('curl as its own SOCKS5 client (socks5h, as ALL_PROXY says): one capture, the name as a name', async () => {
    // Under proxychains too: our ports are a localnet, so this is not a SOCKS hop to ourselves.
    const r = await proxied(['curl', '-sS', '-x', `socks5h://${userinfo()}127.0.0.1:${proxy.socksPort}`, url('/socks5h', web.port, FAKE_HOST)]);
    expect(r.stdout).toBe('hello GET /socks5h\n');
    expect(r.conns).toMatchObject([{ via: 'socks5', protocol: 'http', target: { host: FAKE_HOST } }]);
  });

  it('a 20 MB streamed download arrives byte-exact through the tunnel', async () => {
    const size = 20 * 1024 * 1024;
    const out = path.join(dir, 'big.bin');
    const r = await chained(['curl', '-sS', '-o', out, url(`/big?bytes=${size}`)]);
    expect(r.stderr).toBe('');
    const got = readFileSync(out);
    expect(got.length).toBe(size);
    expect(got.equals(patternBytes(0, size))).toBe(true);
  });

  it('keep-alive: three requests share one captured connection (SOCKS5 and HTTP proxy)', async () => {
    for (const run of [chained, proxied]) {
      const firstRequest = web.requests.length;
      const r = await run(['curl', '-sS', url('/k1'), url('/k2'), url('/k3')]);
      expect(r.stdout).toBe('hello GET /k1\nhello GET /k2\nhello GET /k3\n');
      expect(r.conns).toHaveLength(1);
      const requests = web.requests.slice(firstRequest);
      expect(requests.map((q) => q.url)).toEqual(['/k1', '/k2', '/k3']);
      expect(new Set(requests.map((q) => q.connection)).size).toBe(1);
    }
  });

  it('uploads pass the HTTP proxy byte-exact, with Content-Length and chunked framing', async () => {
    const body = patternBytes(7, 3 * 1024 * 1024 + 5);
    const file = path.join(dir, 'upload.bin');
    writeFileSync(file, body);
    const expected = `${body.length} ${createHash('sha256').update(body).digest('hex')}\n`;
    const upload = ['-sS', '--data-binary', `@${file}`, '-H', 'Content-Type: application/octet-stream'];
    // Two uploads and a GET on one keep-alive connection: framing must find each next request.
    const r = await proxied(['curl', ...upload, url('/up1'), '--next', ...upload, '-H', 'Transfer-Encoding: chunked', url('/up2'), '--next', '-sS', url('/after')]);
    expect(r.stdout).toBe(`${expected}${expected}hello GET /after\n`);
    expect(r.conns).toMatchObject([{ via: 'http-proxy', protocol: 'http' }]);
  });

  it('an excluded target is tunnelled without reaching onConnection', async () => {
    const r = await chained(['curl', '-sS', url('/excluded', other.port)]);
    expect(r.stdout).toBe('hello GET /excluded\n');
    expect(r.conns).toEqual([]);
  });
});

describe('python3 urllib', () => {
  it.each(['python3', '/usr/bin/python3'])('%s under proxychains: captured via SOCKS5', async (python) => {
    const r = await chained([python, '-c', pyGet(url('/py'))]);
    expect(r.stdout).toBe('hello GET /py\n');
    expect(r.conns).toMatchObject([{ via: 'socks5', protocol: 'http', target: { host: '127.0.0.1', port: web.port } }]);
  });

  it('with the proxy variables: urllib uses the HTTP proxy', async () => {
    const r = await proxied(['python3', '-c', pyGet(url('/py-env'))]);
    expect(r.stdout).toBe('hello GET /py-env\n');
    expect(r.conns).toMatchObject([{ via: 'http-proxy', protocol: 'http' }]);
  });

  it('requests with the proxy variables: the credential from HTTP_PROXY is sent, and never reaches the server', async () => {
    const r = await proxied(['python3', '-c', `import requests; print(requests.get(${JSON.stringify(url('/py-requests'))}, timeout=10).text, end="")`]);
    expect(r.stdout).toBe('hello GET /py-requests\n');
    expect(r.conns).toMatchObject([{ via: 'http-proxy', protocol: 'http' }]);
    expect(JSON.stringify(lastRequest())).not.toContain(proxy.credential!.password);
  });

  it('proxy_dns: an unresolvable name works and reaches the proxy as a name', async () => {
    const r = await chained(['python3', '-c', pyGet(url('/py-named', web.port, FAKE_HOST))]);
    expect(r.stdout).toBe('hello GET /py-named\n');
    expect(r.conns).toMatchObject([{ target: { host: FAKE_HOST, addressType: 'domain' } }]);
  });

  it('half-close through the tunnel: the echo of a shut-down write side still arrives', async () => {
    const script = `import socket; s = socket.create_connection(("127.0.0.1", ${echo.port})); s.sendall(b"ping pong"); s.shutdown(socket.SHUT_WR)
data = b""
while True:
    b = s.recv(65536)
    if not b: break
    data += b
print(data.decode(), end="")`;
    const r = await chained(['python3', '-c', script]);
    expect(r.stdout).toBe('ping pong');
    expect(r.conns).toMatchObject([{ protocol: 'generic', target: { port: echo.port } }]);
  });

  it('a server-speaks-first protocol is generic and its greeting gets through', async () => {
    const script = `import socket; s = socket.create_connection(("127.0.0.1", ${greeter.port})); g = s.recv(100); s.sendall(b"QUIT\\r\\n"); print(g.decode() + s.recv(100).decode(), end="")`;
    const r = await chained(['python3', '-c', script]);
    expect(r.stdout).toBe('220 greeter ready\r\nQUIT\r\n');
    expect(r.conns).toMatchObject([{ protocol: 'generic', target: { port: greeter.port } }]);
  });
});

describe('node', () => {
  it('fetch is caught by proxychains (libuv calls libc connect); it ignores HTTP_PROXY on Node 20', async () => {
    const r = await proxied(['node', '-e', `fetch(${JSON.stringify(url('/fetch'))}).then((r) => r.text()).then((t) => process.stdout.write(t))`]);
    expect(r.stdout).toBe('hello GET /fetch\n');
    expect(r.conns).toMatchObject([{ via: 'socks5', protocol: 'http', target: { host: '127.0.0.1', port: web.port } }]);
  });

  it('fetch with proxy_dns: an unresolvable name reaches the proxy as a name', async () => {
    const r = await chained(['node', '-e', `fetch(${JSON.stringify(url('/fetch-named', web.port, FAKE_HOST))}).then((r) => r.text()).then((t) => process.stdout.write(t))`]);
    expect(r.stdout).toBe('hello GET /fetch-named\n');
    expect(r.conns).toMatchObject([{ via: 'socks5', target: { host: FAKE_HOST, addressType: 'domain' } }]);
  });

  it('http.get to localhost is captured (as 127.0.0.1: /etc/hosts names are resolved locally)', async () => {
    const r = await proxied(['node', '-e', `require('http').get(${JSON.stringify(url('/nodehttp', web.port, 'localhost'))}, (res) => res.pipe(process.stdout))`]);
    expect(r.stdout).toBe('hello GET /nodehttp\n');
    expect(r.conns).toMatchObject([{ via: 'socks5', protocol: 'http', target: { port: web.port } }]);
    expect(['127.0.0.1', '::1']).toContain(r.conns[0]!.target.host);
  });
});

describe('psql (libpq)', () => {
  it('is captured as postgres with its StartupMessage intact', async () => {
    requireCommand('psql', 'postgresql-client');
    const run = chained(['psql', '-w', '-c', 'select 1', `host=127.0.0.1 port=${pg.port} user=u dbname=d sslmode=disable gssencmode=disable connect_timeout=5`]);
    const first = await pg.next();
    const r = await run;
    expect(first.readUInt32BE(4)).toBe(196608);
    expect(first.includes(Buffer.from('user\0u\0'))).toBe(true);
    expect(r.conns).toMatchObject([{ via: 'socks5', protocol: 'postgres', target: { host: '127.0.0.1', port: pg.port } }]);
  });
});

describe('HTTP proxy requests on a raw connection', () => {
  it('a malformed first request is answered 400 and none of it is forwarded', async () => {
    const before = seen.length;
    const client = await connectLocal(proxy.httpPort);
    client.write(`POST ${url('/bad')} HTTP/1.1\r\nHost: x\r\n${authLine()}Content-Length: 1\r\nContent-Length: 2\r\n\r\nab`);
    const res = await readHttpResponse(client);
    expect(res.head).toMatch(/^HTTP\/1.1 400 /);
    expect(res.body).toMatch(/conflicting Content-Length/);
    client.destroy();
    // The handler got the connection (its target was known from the request line), but no bytes.
    expect(web.requests.some((q) => q.url === '/bad')).toBe(false);
    expect(seen.slice(before)).toMatchObject([{ via: 'http-proxy', target: { port: web.port } }]);
  });

  it('a second origin on the same proxy connection becomes a second captured connection', async () => {
    const before = seen.length;
    const client = await connectLocal(proxy.httpPort);
    const ask = async (host: string, p: string) => {
      client.write(`GET ${url(p, web.port, host)} HTTP/1.1\r\nHost: ${host}:${web.port}\r\n${authLine()}\r\n`);
      expect((await readHttpResponse(client)).body).toBe(`hello GET ${p}\n`);
    };
    await ask('127.0.0.1', '/origin-a');
    await ask('localhost', '/origin-b');
    client.destroy();
    expect(seen.slice(before)).toMatchObject([
      { via: 'http-proxy', target: { host: '127.0.0.1', port: web.port } },
      { via: 'http-proxy', target: { host: 'localhost', port: web.port } },
    ]);
  });
});

/** The peer closed: 'end' (our sockets allow half-open, so no 'close' until we end too) or 'close'. */
const ended = (s: { once(e: string, f: () => void): unknown }) =>
  new Promise<void>((resolve) => {
    s.once('end', resolve);
    s.once('close', resolve);
  });

describe('proxy lifecycle', () => {
  it('close() ends every live connection, and a failing handler closes only its connection', async () => {
    const errors: unknown[] = [];
    const own = await startCaptureProxy({
      onConnection: (conn) => (conn.target.port === 1 ? Promise.reject(new Error('handler broke')) : tunnel(conn).then(() => {})),
      onError: (err) => errors.push(err),
      credential: 'none',
    });
    const open = async (port: number) => {
      const s = await connectLocal(own.socksPort);
      s.on('error', () => {});
      s.write(Buffer.from([5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, port >> 8, port & 255]));
      expect([...(await readBytes(s, 12))]).toEqual([5, 0, ...encodeReply(0)]);
      return s;
    };
    const broken = await open(1);
    broken.write('x');
    await ended(broken);
    expect(String(errors[0])).toMatch(/handler broke/);

    const live = await open(echo.port);
    live.write('still here');
    expect((await readBytes(live, 10)).toString()).toBe('still here');
    const closed = ended(live);
    await own.close();
    await closed;
    await expect(connectLocal(own.socksPort)).rejects.toThrow();
  });
});

describe("the call's credential (attack 18u P6: any local process could send requests through another call's proxy)", () => {
  /** A SOCKS5 CONNECT to the echo server; `auth` (user, password) when given. Resolves to what came back before the proxy closed, or the socket once through. */
  const socksTo = async (port: number, auth?: [string, string]): Promise<{ through: Socket } | { closed: Buffer }> => {
    const s = await connectLocal(port);
    s.on('error', () => {});
    const got: Buffer[] = [];
    s.on('data', (d: Buffer) => got.push(d));
    const closed = ended(s).then(() => ({ closed: Buffer.concat(got) }));
    const connect = Buffer.from([5, 1, 0, 1, 127, 0, 0, 1, echo.port >> 8, echo.port & 255]);
    if (!auth) s.write(Buffer.concat([Buffer.from([5, 1, 0]), connect]));
    else s.write(Buffer.concat([Buffer.from([5, 1, 2, 1, auth[0].length]), Buffer.from(auth[0]), Buffer.from([auth[1].length]), Buffer.from(auth[1]), connect]));
    const through = readBytes(s, 2 + (auth ? 2 : 0) + 10).then(() => ({ through: s }));
    return Promise.race([through, closed]);
  };

  it('a connection without it is closed before any cap counts it or onConnection sees it, and counted apart', async () => {
    const shares = new BudgetShares(new DescriptorBudget(100));
    const reached: string[] = [];
    const whys: string[] = [];
    const own = await startCaptureProxy({ maxConnections: 2, shares, owner: 'k1', onConnection: (conn) => (reached.push(conn.id), tunnel(conn).then(() => {})), onRefused: (why) => whys.push(why) });
    try {
      const { user, password } = own.credential!;
      const strangers = [await socksTo(own.socksPort), await socksTo(own.socksPort, [user, `${password}x`]), await socksTo(own.socksPort, ['other', password])];
      expect(strangers.map((r) => ('closed' in r ? [...r.closed] : 'through'))).toEqual([
        [5, 0xff],
        [5, 2, 1, 1],
        [5, 2, 1, 1],
      ]);
      const plain = await connectLocal(own.httpPort);
      const answer = readAll(plain);
      plain.write(`GET http://127.0.0.1:${web.port}/injected HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      expect((await answer).toString()).toMatch(/^HTTP\/1.1 407 /);
      await pollUntil(() => own.unauthenticated === 4, { timeoutMs: 5000, intervalMs: 10 });
      expect([reached, own.refused, shares.whole.held, whys]).toEqual([[], [], 0, [UNAUTHENTICATED]]);
      expect(web.requests.some((q) => q.url === '/injected')).toBe(false);

      // Its cap of 2 is the program's whole: the strangers took none of it.
      const mine = [await socksTo(own.socksPort, [user, password]), await socksTo(own.socksPort, [user, password])];
      for (const r of mine) {
        if (!('through' in r)) throw new Error(`the program's own connection was refused: ${[...r.closed].join(',')}`);
        r.through.write('mine');
        expect((await readBytes(r.through, 4)).toString()).toBe('mine');
        r.through.destroy();
      }
      expect([reached.length, own.unauthenticated]).toEqual([2, 4]);
    } finally {
      await own.close();
    }
    await pollUntil(() => shares.whole.held === 0, { timeoutMs: 5000, intervalMs: 10 });
  });

  it('connections still in their handshake are bounded across proxies: past the bound the oldest is closed, and a real client still gets through', async () => {
    const handshakes = new PendingHandshakes(4);
    const own = await startCaptureProxy({ shares: new BudgetShares(new DescriptorBudget(100)), handshakes, onConnection: (conn) => tunnel(conn).then(() => {}) });
    try {
      const silent = await Promise.all(Array.from({ length: 10 }, () => connectLocal(own.socksPort)));
      for (const s of silent) s.on('error', () => {});
      await pollUntil(() => own.unauthenticated === 6, { timeoutMs: 5000, intervalMs: 10 });
      expect(handshakes.size).toBe(4);
      const { user, password } = own.credential!;
      const real = await socksTo(own.socksPort, [user, password]);
      expect('through' in real).toBe(true);
      if ('through' in real) real.through.destroy();
      await pollUntil(() => own.unauthenticated === 7, { timeoutMs: 5000, intervalMs: 10 });
      expect(handshakes.size).toBe(3);
      for (const s of silent) s.destroy();
    } finally {
      await own.close();
    }
    await pollUntil(() => handshakes.size === 0, { timeoutMs: 5000, intervalMs: 10 });
  });

  it("messages about refusals pass the answers' secret redaction unchanged", () => {
    const shares = new BudgetShares(new DescriptorBudget(8));
    for (const text of [describeUnauthenticated(3), describeRefusals([{ why: UNAUTHENTICATED, count: 1 }]), `more than ${shares.perKey} held by this API key`]) expect(redactText(text)).toBe(text);
  });
});

describe('connection caps (attack 18t M1: 21,000 silent connections took every descriptor the server had)', () => {
  const GREET_AND_CONNECT = (port: number) => Buffer.from([5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, port >> 8, port & 255]);

  /** A SOCKS5 connection to the echo server through `port`: the socket once answered, or 'refused' when closed with nothing sent back. */
  const openThrough = async (port: number): Promise<Socket | 'refused'> => {
    const s = await connectLocal(port);
    s.on('error', () => {});
    let got = 0;
    s.on('data', (d: Buffer) => (got += d.length));
    s.write(GREET_AND_CONNECT(echo.port));
    const answered = await Promise.race([readBytes(s, 12).then(() => true), ended(s).then(() => false)]).catch(() => false);
    if (answered) return s;
    // Caps count only connections past their handshake: the method choice may have come back, never the CONNECT's reply.
    expect(got).toBeLessThanOrEqual(2);
    s.destroy();
    return 'refused';
  };

  it("one call's proxy closes connections past its cap before reading their request; those it holds still work, and a closed one frees its place", async () => {
    const whys: string[] = [];
    const shares = new BudgetShares(new DescriptorBudget(100));
    const shared = shares.whole;
    const own = await startCaptureProxy({ maxConnections: 3, shares, credential: 'none', onConnection: (conn) => tunnel(conn).then(() => {}), onRefused: (why) => whys.push(why) });
    try {
      const held: Array<Socket | 'refused'> = [];
      for (let i = 0; i < 3; i++) held.push(await openThrough(own.socksPort));
      expect(held.every((s) => s !== 'refused')).toBe(true);
      const extra: Array<Socket | 'refused'> = [];
      for (let i = 0; i < 3; i++) extra.push(await openThrough(own.socksPort));
      expect(extra).toEqual(['refused', 'refused', 'refused']);
      // A CONNECT past the cap: closed without its 200.
      const tunnelled = await connectLocal(own.httpPort);
      const answer = readAll(tunnelled);
      tunnelled.write(`CONNECT 127.0.0.1:${echo.port} HTTP/1.1\r\n\r\n`);
      expect((await answer).length).toBe(0);
      expect(own.refused).toEqual([{ why: expect.stringMatching(/more than 3 open at once through one call's proxy/), count: 4 }]);
      expect(whys).toHaveLength(1); // told once; the rest counted
      expect(describeRefusals(own.refused)).toMatch(/^4 connections were refused by the capture proxy: more than 3 open/);
      expect(shared.held).toBe(3);

      const first = held[0] as Socket;
      first.write('still here');
      expect((await readBytes(first, 10)).toString()).toBe('still here');
      first.destroy();
      await pollUntil(() => shared.held === 2, { timeoutMs: 5000, intervalMs: 10 });
      const again = await openThrough(own.socksPort);
      expect(again).not.toBe('refused');
      (again as Socket).destroy();
      for (const s of held) if (s !== 'refused') s.destroy();
    } finally {
      await own.close();
    }
    await pollUntil(() => shared.held === 0, { timeoutMs: 5000, intervalMs: 10 });
    expect(shared.held).toBe(0);
  });

  it('all proxies together stop at the shared budget, each under its own cap', async () => {
    const shares = new BudgetShares(new DescriptorBudget(4));
    const shared = shares.whole;
    const [a, b] = await Promise.all([0, 1].map(() => startCaptureProxy({ maxConnections: 10, shares, credential: 'none', onConnection: (conn) => tunnel(conn).then(() => {}) })));
    try {
      const onA = [await openThrough(a!.socksPort), await openThrough(a!.socksPort), await openThrough(a!.socksPort)];
      const onB = [await openThrough(b!.socksPort), await openThrough(b!.socksPort)];
      expect(onA.filter((s) => s === 'refused')).toHaveLength(0);
      expect(onB.map((s) => s === 'refused')).toEqual([false, true]);
      expect(a!.refused).toEqual([]);
      expect(b!.refused).toEqual([{ why: expect.stringMatching(/capture proxies of all calls hold 4 connections, the most the server allows them/), count: 1 }]);
      expect(shared.held).toBe(4);
    } finally {
      await Promise.all([a!.close(), b!.close()]);
    }
    await pollUntil(() => shared.held === 0, { timeoutMs: 5000, intervalMs: 10 });
    expect(shared.held).toBe(0);
  });

  it(`${PROXY_MAX_CONNECTIONS_ENV} sets one call's cap; a value that is not a count is refused, naming it`, async () => {
    const before = process.env[PROXY_MAX_CONNECTIONS_ENV];
    try {
      process.env[PROXY_MAX_CONNECTIONS_ENV] = 'many';
      await expect(startCaptureProxy({ onConnection: () => {} })).rejects.toThrow(`${PROXY_MAX_CONNECTIONS_ENV} is 'many': it must be a whole number of connections, 1 or more`);
      process.env[PROXY_MAX_CONNECTIONS_ENV] = '2';
      const own = await startCaptureProxy({ shares: new BudgetShares(new DescriptorBudget(100)), credential: 'none', onConnection: (conn) => tunnel(conn).then(() => {}) });
      try {
        const opened = [await openThrough(own.socksPort), await openThrough(own.socksPort), await openThrough(own.socksPort)];
        expect(opened.map((o) => o === 'refused')).toEqual([false, false, true]);
        for (const o of opened) if (o !== 'refused') o.destroy();
      } finally {
        await own.close();
      }
    } finally {
      if (before === undefined) delete process.env[PROXY_MAX_CONNECTIONS_ENV];
      else process.env[PROXY_MAX_CONNECTIONS_ENV] = before;
    }
  });

  it("one key's calls together hold at most its share (attack 18u P1); another key and the local user still find the rest", async () => {
    const shares = new BudgetShares(new DescriptorBudget(6));
    const whys: string[] = [];
    const start = (owner: string) =>
      startCaptureProxy({ maxConnections: 10, shares, owner, credential: 'none', onConnection: (conn) => tunnel(conn).then(() => {}), onRefused: (why) => whys.push(why) });
    const [a1, a2, b, local] = await Promise.all([start('k1'), start('k1'), start('k2'), start('local')]);
    try {
      const onA = [await openThrough(a1!.socksPort), await openThrough(a2!.socksPort), await openThrough(a1!.socksPort), await openThrough(a2!.socksPort)];
      expect(onA.map((s) => s === 'refused')).toEqual([false, false, false, true]);
      expect(a2!.refused).toEqual([
        {
          why: "the calls of this API key hold 3 connections through their capture proxies, its share of the 6 the server allows all calls; open fewer at a time, or wait for this key's other calls to end",
          count: 1,
        },
      ]);
      const onB = [await openThrough(b!.socksPort), await openThrough(b!.socksPort)];
      expect(onB.map((s) => s === 'refused')).toEqual([false, false]);
      const onLocal = [await openThrough(local!.socksPort), await openThrough(local!.socksPort)];
      expect(onLocal.map((s) => s === 'refused')).toEqual([false, true]);
      expect(local!.refused).toEqual([{ why: expect.stringMatching(/^the capture proxies of all calls hold 6 connections, the most the server allows them/), count: 1 }]);
      expect([shares.held('k1'), shares.held('k2'), shares.whole.held]).toEqual([3, 2, 6]);
      for (const s of [...onA, ...onB, ...onLocal]) if (s !== 'refused') s.destroy();
    } finally {
      await Promise.all([a1!.close(), a2!.close(), b!.close(), local!.close()]);
    }
    await pollUntil(() => shares.whole.held === 0, { timeoutMs: 5000, intervalMs: 10 });
    expect(whys).toHaveLength(2);
  });

  it('the shared budget is an eighth of the descriptor limit (two per connection: a quarter), 64 to 4,096', () => {
    expect(proxiesMaxConnections(20_000)).toBe(2500);
    expect(proxiesMaxConnections(1024)).toBe(128);
    expect(proxiesMaxConnections(100)).toBe(64);
    expect(proxiesMaxConnections(1_048_576)).toBe(4096);
  });
});
