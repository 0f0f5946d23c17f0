import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkUrl, guardedGet, isPrivateAddress } from './fetch.js';

describe('isPrivateAddress', () => {
  it.each([
    '127.0.0.1',
    '127.9.9.9',
    '10.0.0.1',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '198.18.0.1',
    '::1',
    '::',
    'fe80::1',
    'fd00::1',
    'fc00::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:169.254.169.254',
    '::ffff:7f00:1',
    '0:0:0:0:0:ffff:a00:1',
    '64:ff9b::a00:1',
    '2002:7f00:1::',
    'fe80::1%eth0',
    'not-an-ip',
  ])('%s is private', (a) => expect(isPrivateAddress(a)).toBe(true));
  it.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '192.169.0.1', '100.128.0.1', '2606:4700::1111', '2a00:1450:4001::'])('%s is public', (a) => expect(isPrivateAddress(a)).toBe(false));
});

describe('checkUrl', () => {
  const policy = { hosts: ['replicated.com', '127.0.0.1:8080'] };
  it('allows listed hosts and their subdomains; exactly listed ones are explicit', () => {
    expect(checkUrl(new URL('https://vendor.replicated.com/x'), policy)).toEqual({ explicit: false });
    expect(checkUrl(new URL('https://replicated.com/x'), policy)).toEqual({ explicit: true });
    expect(checkUrl(new URL('http://127.0.0.1:8080/x'), policy)).toEqual({ explicit: true });
  });
  it.each([
    'https://evilreplicated.com/x',
    'https://replicated.com.evil.net/x',
    'http://127.0.0.1:8081/x',
    'http://127.0.0.1/x',
    'http://localhost:8080/x',
    'file:///etc/passwd',
    'https://user:pw@replicated.com/x',
    'http://[::1]:8080/x',
  ])('refuses %s', (u) => {
    expect(() => checkUrl(new URL(u), policy)).toThrow(expect.objectContaining({ name: 'SecurityError' }));
  });
});

describe('guardedGet', () => {
  let server: http.Server;
  let origin: string;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      if (req.url === '/to-elsewhere') return void res.writeHead(302, { Location: 'http://169.254.169.254/latest/meta-data/' }).end();
      if (req.url === '/to-self') return void res.writeHead(301, { Location: '/ok' }).end();
      if (req.url === '/loop') return void res.writeHead(302, { Location: '/loop' }).end();
      res.writeHead(200).end(`ok ${req.headers.authorization ?? ''}`);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const body = async (res: http.IncomingMessage) => {
    let t = '';
    for await (const c of res) t += c;
    return t;
  };

  it('refuses loopback unless that exact host is listed', async () => {
    const port = new URL(origin).port;
    await expect(guardedGet(new URL(`${origin}/ok`), { hosts: ['example.com'] })).rejects.toMatchObject({
      name: 'SecurityError',
      message: expect.stringMatching(/not allowed: bundle URLs may come from example\.com/),
    });
    (await guardedGet(new URL(`http://localhost:${port}/ok`), { hosts: ['localhost'] })).res.resume();
    // Allowed but not listed exactly: the name's addresses are checked when connecting.
    await expect(guardedGet(new URL(`http://localhost:${port}/ok`), { hosts: [], implicitHosts: [`localhost:${port}`] })).rejects.toMatchObject({
      name: 'SecurityError',
      message: expect.stringMatching(/resolves to (127\.0\.0\.1|::1), a loopback, link-local or private address/),
    });
    const { res } = await guardedGet(new URL(`${origin}/ok`), { hosts: [`127.0.0.1:${port}`] });
    expect(await body(res)).toBe('ok ');
  });

  it('follows redirects by hand, checking each, and keeps credentials on the first host', async () => {
    const policy = { hosts: ['127.0.0.1'] };
    const { res, url } = await guardedGet(new URL(`${origin}/to-self`), policy, { headers: { Authorization: 'Bearer t' } });
    expect(url.pathname).toBe('/ok');
    expect(await body(res)).toBe('ok Bearer t');
    await expect(guardedGet(new URL(`${origin}/to-elsewhere`), policy)).rejects.toMatchObject({ name: 'SecurityError', message: expect.stringMatching(/169\.254\.169\.254/) });
    await expect(guardedGet(new URL(`${origin}/to-elsewhere`), { hosts: ['127.0.0.1'], implicitHosts: ['169.254.169.254'] })).rejects.toMatchObject({
      name: 'SecurityError',
      message: expect.stringMatching(/it resolves to 169\.254\.169\.254, a loopback, link-local or private address/),
    });
    await expect(guardedGet(new URL(`${origin}/loop`), policy)).rejects.toMatchObject({ name: 'ApiError', message: expect.stringMatching(/more than 5 redirects/) });
  });
});
