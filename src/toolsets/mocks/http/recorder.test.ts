import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../../../core/wait.js';
import type { HttpMock } from '../keploy/types.js';
import { DebugkitCa } from '../tls/ca.js';
import { recordIntercepted } from './intercept.js';
import type { RecordHttpResult } from './recorder.js';
import { closeServer, curl, fetchVia, interceptingListener, listen, pattern, rawExchange, sha256, startOrigins, type Closable, type Origin } from './test-support.js';

let ca: DebugkitCa;
let originCa: DebugkitCa;
let plain: Origin;
let secure: Origin;
let plainL: Closable;
let secureL: Closable;
let bundle: string;
const mocks: HttpMock[] = [];
const results: Array<Promise<RecordHttpResult>> = [];
let origins: Awaited<ReturnType<typeof startOrigins>>;

beforeAll(async () => {
  origins = await startOrigins();
  ({ ca, originCa, bundle, plain, secure } = origins);
  const record = (conn: Parameters<typeof recordIntercepted>[0]) => {
    const p = recordIntercepted(conn, { ca, upstreamCa: originCa.certPem, onMock: (m) => mocks.push(m) });
    results.push(p);
    return p;
  };
  plainL = await interceptingListener({ host: '127.0.0.1', port: plain.port }, record);
  secureL = await interceptingListener({ host: '127.0.0.1', port: secure.port }, record);
});
afterAll(async () => {
  await Promise.all([plainL.close(), secureL.close()]);
  await origins.close();
});

/** Mocks recorded from now on (recording is asynchronous to the client: wait for them). */
async function mocksAfter(start: number, count: number): Promise<HttpMock[]> {
  await pollUntil(() => mocks.length >= start + count, { timeoutMs: 2000, intervalMs: 10 });
  return mocks.slice(start);
}

describe('recordHttp over plain HTTP', () => {
  it('passes responses through byte for byte', async () => {
    for (const req of ['GET /hello HTTP/1.1', 'GET /gzip HTTP/1.1', 'GET /nothing HTTP/1.1', 'GET /slow HTTP/1.1', 'GET /missing HTTP/1.0']) {
      const raw = `${req}\r\nHost: localhost:${plain.port}\r\nConnection: close\r\n\r\n`;
      const direct = await rawExchange(plain.port, raw, { halfClose: false });
      const through = await rawExchange(plainL.port, raw, { halfClose: false });
      expect(through.equals(direct), req).toBe(true);
    }
  });

  it('records one mock per exchange on a keep-alive connection', async () => {
    const start = mocks.length;
    const connections = plain.connections;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const host = `localhost:${plain.port}`;
    await fetchVia({ port: plainL.port, host, agent, path: '/hello?x=1&x=2&y=%20z' });
    const echoed = await fetchVia({ port: plainL.port, host, agent, path: '/echo', method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"a":1}' });
    await fetchVia({ port: plainL.port, host, agent, path: '/binary' });
    agent.destroy();
    expect(JSON.parse(echoed.body.toString())).toEqual({ method: 'POST', received: '{"a":1}', length: 7 });
    expect(plain.connections - connections).toBe(1);
    const [hello, echo, binary] = await mocksAfter(start, 3);
    expect(mocks.length - start).toBe(3);
    expect(hello!.spec.req).toMatchObject({ method: 'GET', url: `http://${host}/hello?x=1&x=2&y=%20z`, url_params: { x: '1, 2', y: ' z' } });
    expect(hello!.spec.resp).toMatchObject({ status_code: 200, body: 'hello world\n' });
    expect(hello!.spec.resp.header).toMatchObject({ 'X-Multi': 'a,b', 'Content-Type': 'text/plain; charset=utf-8', Date: 'Tue, 01 Jul 2025 00:00:00 GMT' });
    expect(hello!.spec.metadata).toMatchObject({ name: 'Http', operation: 'GET', type: 'HTTP_CLIENT', host });
    expect(hello!.connectionId).toMatch(/^conn-\d+$/);
    expect(typeof hello!.spec.created).toBe('number');
    expect(echo!.spec.req).toMatchObject({ method: 'POST', body: '{"a":1}', header: { 'Content-Type': 'application/json', 'Content-Length': '7' } });
    expect(echo!.spec.resp.body).toBe('{"method":"POST","received":"{\\"a\\":1}","length":7}');
    expect(binary!.spec.resp.body).toEqual(new Uint8Array([0xff, 0x00, 0xfe, 0x80, 0x41]));
  });

  it('knows HEAD responses have no body and keeps parsing the connection', async () => {
    const start = mocks.length;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const host = `localhost:${plain.port}`;
    const head = await fetchVia({ port: plainL.port, host, agent, path: '/hello', method: 'HEAD' });
    const get = await fetchVia({ port: plainL.port, host, agent, path: '/hello' });
    agent.destroy();
    expect(head.body.length).toBe(0);
    expect(get.body.toString()).toBe('hello world\n');
    const [h, g] = await mocksAfter(start, 2);
    expect([h!.spec.req.method, h!.spec.resp.body, g!.spec.resp.body]).toEqual(['HEAD', '', 'hello world\n']);
  });

  it('pairs pipelined requests in order and skips 100 Continue', async () => {
    const start = mocks.length;
    const host = `localhost:${plain.port}`;
    const pipelined = `GET /hello?n=1 HTTP/1.1\r\nHost: ${host}\r\n\r\nPOST /echo HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 2\r\n\r\nhiGET /nothing HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`;
    const answer = (await rawExchange(plainL.port, pipelined, { halfClose: false })).toString();
    expect(answer.match(/HTTP\/1.1 \d+/g)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200', 'HTTP/1.1 204']);
    const continued = await fetchVia({ port: plainL.port, host, path: '/echo', method: 'POST', headers: { Expect: '100-continue' }, body: 'after continue' });
    expect(JSON.parse(continued.body.toString()).received).toBe('after continue');
    const recorded = await mocksAfter(start, 4);
    expect(recorded.map((m) => `${m.spec.req.method} ${m.spec.req.url.replace(`http://${host}`, '')} ${m.spec.resp.status_code} ${String(m.spec.req.body)}`)).toEqual([
      'GET /hello?n=1 200 ',
      'POST /echo 200 hi',
      'GET /nothing 204 ',
      'POST /echo 200 after continue',
    ]);
  });

  it('streams a slow chunked response as it comes', async () => {
    const r = await fetchVia({ port: plainL.port, host: `localhost:${plain.port}`, path: '/slow' });
    expect(r.body.toString()).toBe('tick 0\ntick 1\ntick 2\ntick 3\ntick 4\n');
    expect(r.chunkTimes.length).toBeGreaterThanOrEqual(4);
    expect(r.chunkTimes[0]!).toBeLessThan(400);
    expect(r.chunkTimes.at(-1)! - r.chunkTimes[0]!).toBeGreaterThanOrEqual(400);
  });

  it('passes 20 MB each way intact and keeps the mocks small', async () => {
    const size = 20 * 1024 * 1024;
    const start = mocks.length;
    const down = await fetchVia({ port: plainL.port, host: `localhost:${plain.port}`, path: `/big?bytes=${size}` });
    expect(down.body.length).toBe(size);
    expect(sha256(down.body)).toBe(sha256(pattern(0, size)));
    const upload = pattern(7, size);
    const up = await fetchVia({ port: plainL.port, host: `localhost:${plain.port}`, path: '/upload', method: 'POST', body: upload });
    expect(JSON.parse(up.body.toString())).toEqual({ bytes: size, sha256: sha256(upload) });
    const [big, posted] = await mocksAfter(start, 2);
    expect(big!.spec.resp).toMatchObject({ body: '', extra: { body_skipped: true, body_size: size }, header: { 'Content-Length': String(size) } });
    expect(posted!.spec.req).toMatchObject({ body: '', extra: { body_skipped: true, body_size: size } });
    expect(JSON.stringify(big).length + JSON.stringify(posted).length).toBeLessThan(10_000);
  });

  it('keeps forwarding when the traffic stops looking like HTTP', async () => {
    const before = results.length;
    const answer = await new Promise<string>((resolve, reject) => {
      const s = net.connect({ host: '127.0.0.1', port: plainL.port });
      let text = '';
      s.on('data', (d: Buffer) => {
        text += d.toString('latin1');
        if (text.endsWith('hello world\n')) s.write('\x00\x01 not http\r\n\r\n');
      });
      s.on('end', () => resolve(text));
      s.on('error', reject);
      s.write('GET /hello HTTP/1.1\r\nHost: h\r\n\r\n');
    });
    expect(answer).toContain('hello world');
    expect(answer).toContain('HTTP/1.1 400 Bad Request');
    const result = await results[before]!;
    expect(result.notHttp).toBe('not HTTP: starts with byte 0x00');
    expect(result.mocks).toBe(1);
  });
});

describe('recordHttp: half-close, close-delimited bodies, upgrades', () => {
  it('forwards a half-close and records a response that ends with the connection', async () => {
    // An origin that answers only after the client's EOF, with no length: until close.
    const origin = net.createServer({ allowHalfOpen: true }, (s) => {
      let got = 0;
      s.on('data', (d: Buffer) => void (got += d.length));
      s.on('end', () => s.end(`HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nreceived ${got} bytes`));
    });
    const port = await listen(origin);
    const start = mocks.length;
    const l = await interceptingListener({ host: '127.0.0.1', port }, (conn) => recordIntercepted(conn, { ca, onMock: (m) => mocks.push(m) }));
    const request = 'POST /x HTTP/1.0\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello';
    const answer = await rawExchange(l.port, request);
    expect(answer.toString()).toBe(`HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nreceived ${request.length} bytes`);
    const [m] = await mocksAfter(start, 1);
    expect(m!.spec).toMatchObject({ req: { url: 'http://h/x', body: 'hello' }, resp: { body: `received ${request.length} bytes` } });
    await l.close();
    await closeServer(origin);
  });

  it('lets a protocol switch through without recording it', async () => {
    const before = results.length;
    const answer = await new Promise<string>((resolve, reject) => {
      const s = net.connect({ host: '127.0.0.1', port: plainL.port });
      let text = '';
      s.on('data', (d: Buffer) => {
        text += d.toString();
        if (text.includes('\r\n\r\n') && !text.includes('ping')) s.write('ping after upgrade');
        if (text.includes('ping after upgrade')) {
          s.destroy();
          resolve(text);
        }
      });
      s.on('error', reject);
      s.write('GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n');
    });
    expect(answer).toMatch(/^HTTP\/1.1 101 Switching Protocols\r\n[\s\S]*ping after upgrade$/);
    const result = await results[before]!;
    expect(result).toMatchObject({ upgraded: true, mocks: 0 });
  });
});

describe('recordHttp over HTTPS', () => {
  it('records through TLS with the Node client trusting the debugkit CA', async () => {
    const start = mocks.length;
    const host = `localhost:${secure.port}`;
    const r = await fetchVia({ port: secureL.port, host, ca: ca.certPem, path: '/gzip', headers: { 'Accept-Encoding': 'gzip' } });
    const direct = await fetchVia({ port: secure.port, host, ca: originCa.certPem, path: '/gzip', headers: { 'Accept-Encoding': 'gzip' } });
    expect(r.status).toBe(200);
    expect(r.body.equals(direct.body)).toBe(true);
    expect(r.headers).toEqual(direct.headers);
    const [m] = await mocksAfter(start, 1);
    expect(m!.spec.req.url).toBe(`https://${host}/gzip`);
    // Stored decoded, as Keploy does.
    expect(m!.spec.resp.body).toBe('{"compressed":true,"items":[1,2,3]}');
  });

  it('records curl calls made with the debugkit bundle', async () => {
    const start = mocks.length;
    const url = `https://localhost:${secure.port}/echo`;
    const r = await curl(['-sS', '-i', '--cacert', bundle, '--connect-to', `localhost:${secure.port}:127.0.0.1:${secureL.port}`, '-H', 'Content-Type: application/json', '-d', '{"from":"curl"}', url]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^HTTP\/1.1 200 OK\r\n/);
    expect(r.stdout).toContain('"received":"{\\"from\\":\\"curl\\"}"');
    const [m] = await mocksAfter(start, 1);
    expect(m!.spec.req).toMatchObject({ method: 'POST', url, body: '{"from":"curl"}' });
    expect(m!.spec.req.header['User-Agent']).toMatch(/^curl\//);
  });

  it('does not record through a server whose certificate does not verify', async () => {
    const before = results.length;
    const l = await interceptingListener({ host: '127.0.0.1', port: secure.port }, (conn) => {
      const p = recordIntercepted(conn, { ca, onMock: (m) => mocks.push(m) });
      results.push(p);
      return p;
    });
    await expect(fetchVia({ port: l.port, host: `localhost:${secure.port}`, ca: ca.certPem, path: '/hello' })).rejects.toThrow();
    expect((await results[before]!).error?.message).toMatch(/certificate/i);
    await l.close();
  });
});
