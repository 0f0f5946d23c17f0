import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { RequestRewriter } from './http-forward.js';
import type { ProxyCredential } from './auth.js';
import { acceptHttpProxy, connectEstablished, parseAbsoluteHttpUrl, parseAuthority, parseRequestLine, type HttpProxyRequest } from './http-proxy.js';
import { connectLocal, listenLocal, readAll } from './testing.js';

describe('request-target parsing', () => {
  it('splits absolute http URLs into target and origin form, keeping the path bytes', () => {
    expect(parseAbsoluteHttpUrl('http://Example.COM/a%2Fb/../c?q=1&r')).toEqual({
      target: { host: 'example.com', port: 80 },
      originForm: '/a%2Fb/../c?q=1&r',
    });
    expect(parseAbsoluteHttpUrl('http://127.0.0.1:8080')).toEqual({ target: { host: '127.0.0.1', port: 8080 }, originForm: '/' });
    expect(parseAbsoluteHttpUrl('http://[::1]:81?x')).toEqual({ target: { host: '::1', port: 81 }, originForm: '/?x' });
    expect(parseAbsoluteHttpUrl('http://user:pw@h/p#frag')).toEqual({ target: { host: 'h', port: 80 }, originForm: '/p' });
    expect(parseAbsoluteHttpUrl('https://h/p')).toBeUndefined();
    expect(parseAbsoluteHttpUrl('/p')).toBeUndefined();
    expect(parseAbsoluteHttpUrl('http://h:99999/')).toBeUndefined();
  });

  it('parses CONNECT authorities', () => {
    expect(parseAuthority('api.example.test:443')).toEqual({ host: 'api.example.test', port: 443 });
    expect(parseAuthority('[2001:db8::1]:8443')).toEqual({ host: '2001:db8::1', port: 8443 });
    expect(parseAuthority('no-port')).toBeUndefined();
    expect(parseAuthority('h:0')).toBeUndefined();
    expect(parseAuthority('a b:80')).toBeUndefined();
  });

  it('accepts only HTTP/1.x request lines', () => {
    expect(parseRequestLine('GET http://h/ HTTP/1.1')).toEqual({ method: 'GET', target: 'http://h/', version: 'HTTP/1.1' });
    expect(() => parseRequestLine('GET http://h/ HTTP/2.0')).toThrow(/not an HTTP\/1.x request line/);
    expect(() => parseRequestLine('GET  http://h/ HTTP/1.1')).toThrow();
  });
});

/** Feeds `input` split at `cut` and returns all forwarded bytes as text. */
function rewrite(input: string, cut = input.length, target = { host: 'h', port: 80 }) {
  const r = new RequestRewriter(target);
  const a = r.feed(Buffer.from(input.slice(0, cut), 'latin1'));
  const b = a.switchTo || a.error ? { forward: [] } : r.feed(Buffer.from(input.slice(cut), 'latin1'));
  return { text: Buffer.concat([...a.forward, ...b.forward]).toString('latin1'), first: a, second: b };
}

describe('RequestRewriter (absolute form to origin form)', () => {
  it('rewrites the request line and drops proxy-only headers, keeping everything else', () => {
    const { text } = rewrite('GET http://h/x?y HTTP/1.1\r\nHost: h\r\nProxy-Connection: keep-alive\r\nX-A: 1\r\n\r\n');
    expect(text).toBe('GET /x?y HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n\r\n');
  });

  it('adds a Host header when the client sent none', () => {
    expect(rewrite('GET http://h:8080/ HTTP/1.0\r\n\r\n', undefined, { host: 'h', port: 8080 }).text).toBe('GET / HTTP/1.0\r\nHost: h:8080\r\n\r\n');
  });

  const post = 'POST http://h/up HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhello\r\nGET ';
  const next = 'GET http://h/next HTTP/1.1\r\nHost: h\r\n\r\n';
  it('passes a Content-Length body through byte for byte, wherever the reads split it', () => {
    const input = post + next;
    for (let cut = 0; cut <= input.length; cut++) {
      expect(rewrite(input, cut).text).toBe('POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhello\r\nGET GET /next HTTP/1.1\r\nHost: h\r\n\r\n');
    }
  });

  it('frames a chunked body (with extensions and trailers), wherever the reads split it', () => {
    const body = '5;ext=1\r\nhello\r\n10\r\n0123456789abcdef\r\n0\r\nX-Trailer: t\r\n\r\n';
    const input = `POST http://h/c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n${body}${next}`;
    const expected = `POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n${body}GET /next HTTP/1.1\r\nHost: h\r\n\r\n`;
    for (let cut = 0; cut <= input.length; cut++) expect(rewrite(input, cut).text).toBe(expected);
  });

  it('stops at a request for another origin and hands back its bytes', () => {
    const other = 'GET http://other:81/z HTTP/1.1\r\nHost: other:81\r\n\r\n';
    const { text, first } = rewrite(`GET http://h/a HTTP/1.1\r\nHost: h\r\n\r\n${other}`);
    expect(text).toBe('GET /a HTTP/1.1\r\nHost: h\r\n\r\n');
    expect(first.switchTo?.target).toEqual({ host: 'other', port: 81 });
    expect(first.switchTo?.rest.toString()).toBe(other);
  });

  it('passes everything through raw after an Upgrade request', () => {
    const ws = 'GET http://h/ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n';
    expect(rewrite(`${ws}\x81\x05hello GET http://x/ HTTP/1.1\r\n\r\n`).text).toBe(
      'GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n\x81\x05hello GET http://x/ HTTP/1.1\r\n\r\n',
    );
  });

  it('keeps framing after an Upgrade header without Connection: upgrade (nothing switches)', () => {
    const h2c = 'GET http://h/a HTTP/1.1\r\nHost: h\r\nUpgrade: h2c\r\n\r\n';
    const input = h2c + next;
    for (let cut = 0; cut <= input.length; cut++) {
      expect(rewrite(input, cut).text).toBe('GET /a HTTP/1.1\r\nHost: h\r\nUpgrade: h2c\r\n\r\nGET /next HTTP/1.1\r\nHost: h\r\n\r\n');
    }
  });

  it('hands back a split head for another origin whole, and drops folded proxy headers', () => {
    const other = 'POST http://other/z HTTP/1.1\r\nHost: other\r\nContent-Length: 2\r\n\r\nok';
    const input = `GET http://h/a HTTP/1.1\r\nProxy-Authorization: Basic\r\n  abc\r\nX: 1\r\n\r\n${other}`;
    for (let cut = 0; cut <= input.length; cut++) {
      const r = new RequestRewriter({ host: 'h', port: 80 });
      const a = r.feed(Buffer.from(input.slice(0, cut), 'latin1'));
      const b = a.switchTo ? a : r.feed(Buffer.from(input.slice(cut), 'latin1'));
      expect(Buffer.concat([...a.forward, ...(b === a ? [] : b.forward)]).toString('latin1')).toBe('GET /a HTTP/1.1\r\nHost: h\r\nX: 1\r\n\r\n');
      expect(b.switchTo?.target).toEqual({ host: 'other', port: 80 });
      // A switch in the first read hands back that read's rest; the second read is the next handler's.
      expect(b.switchTo!.rest.toString('latin1') + (b === a ? input.slice(cut) : '')).toBe(other);
    }
  });

  it('answers 431 to a head over the limit and 400 to bytes that are not HTTP', () => {
    const long = rewrite(`GET http://h/ HTTP/1.1\r\nX: ${'a'.repeat(20_000)}\r\n\r\n`, 100);
    expect([long.first.error?.status ?? long.second.error?.status]).toEqual([431]);
    const binary = rewrite('\x16\x03\x01\x00');
    expect(binary.first.error?.status).toBe(400);
    expect(binary.text).toBe('');
  });

  it.each([
    ['conflicting lengths', 'Content-Length: 1\r\nContent-Length: 2', /conflicting Content-Length/],
    ['a bad length', 'Content-Length: -1', /invalid Content-Length/],
    ['an unframed transfer coding', 'Transfer-Encoding: gzip', /no determinable length/],
  ])('refuses %s', (_name, header, message) => {
    const { first, text } = rewrite(`POST http://h/ HTTP/1.1\r\n${header}\r\n\r\n`);
    expect(text).toBe(''); // nothing of a refused request is forwarded
    expect(first.error?.message).toMatch(message);
    expect(first.error?.status).toBe(400);
  });
});

describe('acceptHttpProxy over a real socket', () => {
  let server: net.Server | undefined;
  afterEach(() => server?.close());

  async function accept(send: string, timeoutMs = 2000, credential?: ProxyCredential) {
    let result!: Promise<HttpProxyRequest>;
    let serverSide!: net.Socket;
    const accepted = new Promise<void>((resolve) => {
      server = net.createServer({ pauseOnConnect: true, allowHalfOpen: true }, (s) => {
        serverSide = s;
        result = acceptHttpProxy(s, { timeoutMs, ...(credential ? { credential } : {}) });
        result.catch(() => {});
        resolve();
      });
    });
    const client = await connectLocal(await listenLocal(server!));
    client.on('error', () => {});
    client.write(send);
    await accepted;
    return { client, result, serverSide: () => serverSide };
  }

  it('CONNECT: consumes the head, names the version to answer 200 with and leaves the tunnelled bytes', async () => {
    const { result, serverSide } = await accept('CONNECT api.example.test:443 HTTP/1.1\r\nHost: api.example.test:443\r\n\r\n\x16\x03\x01');
    expect(await result).toEqual({ kind: 'connect', target: { host: 'api.example.test', port: 443 }, version: 'HTTP/1.1' });
    expect(connectEstablished('HTTP/1.1')).toBe('HTTP/1.1 200 Connection Established\r\n\r\n');
    const rest = await new Promise<Buffer>((resolve) => serverSide().once('data', resolve));
    expect([...rest]).toEqual([0x16, 0x03, 0x01]);
  });

  it('absolute form: names the target and consumes nothing', async () => {
    const { result, serverSide } = await accept('GET http://127.0.0.1:9/x HTTP/1.1\r\n\r\n');
    expect(await result).toEqual({ kind: 'forward', target: { host: '127.0.0.1', port: 9 } });
    expect(serverSide().readableLength).toBeGreaterThan(0);
  });

  it.each([
    ['an origin-form request', 'GET /x HTTP/1.1\r\n\r\n', 400],
    ['an https:// URL', 'GET https://h/ HTTP/1.1\r\n\r\n', 501],
    ['a CONNECT without port', 'CONNECT h HTTP/1.1\r\n\r\n', 400],
    ['a non-HTTP client', '\x16\x03\x01\x00\x05hello\r\n', 400],
  ])('answers %s with an error response and closes', async (_name, send, status) => {
    const { client, result } = await accept(send);
    const answer = readAll(client);
    await expect(result).rejects.toMatchObject({ status });
    expect((await answer).toString()).toMatch(new RegExp(`^HTTP/1.1 ${status} `));
  });

  it('answers 408 to a client that never finishes its request line', async () => {
    const { client, result } = await accept('GET http://h/', 200);
    const answer = readAll(client);
    await expect(result).rejects.toMatchObject({ status: 408 });
    expect((await answer).toString()).toMatch(/^HTTP\/1.1 408 /);
  });

  describe("with the call's credential (attack 18u P6)", () => {
    const credential = { user: 'debugkit', password: 's3cret-Token_x' };
    const basic = (user: string, password: string) => `Proxy-Authorization: Basic ${Buffer.from(`${user}:${password}`).toString('base64')}\r\n`;

    it('takes a CONNECT and an absolute-form request that show it; the forwarded one keeps its head for the rewriter (which drops the header)', async () => {
      const tunnel = await accept(`CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n${basic('debugkit', 's3cret-Token_x')}\r\n`, 2000, credential);
      expect(await tunnel.result).toEqual({ kind: 'connect', target: { host: 'h', port: 443 }, version: 'HTTP/1.1' });
      server?.close();
      const plain = await accept(`GET http://127.0.0.1:9/x HTTP/1.1\r\nproxy-authorization:   basic ${Buffer.from('debugkit:s3cret-Token_x').toString('base64')}\r\n\r\n`, 2000, credential);
      expect(await plain.result).toEqual({ kind: 'forward', target: { host: '127.0.0.1', port: 9 } });
      expect(plain.serverSide().readableLength).toBeGreaterThan(0);
    });

    it.each([
      ['no Proxy-Authorization', '', /no Proxy-Authorization/],
      ['a wrong password', basic('debugkit', 's3cret-Token_y'), /not the call's/],
      ['another scheme', 'Proxy-Authorization: Bearer s3cret-Token_x\r\n', /no Proxy-Authorization/],
    ])('answers %s with 407 and a Basic challenge, and closes', async (_name, header, message) => {
      const { client, result } = await accept(`GET http://127.0.0.1:9/x HTTP/1.1\r\n${header}\r\n`, 2000, credential);
      const answer = readAll(client);
      await expect(result).rejects.toMatchObject({ name: 'ProxyAuthError', message: expect.stringMatching(message) });
      const text = (await answer).toString();
      expect(text).toMatch(/^HTTP\/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="debugkit capture proxy"\r\n/);
      expect(text).not.toContain('s3cret');
    });
  });
});
