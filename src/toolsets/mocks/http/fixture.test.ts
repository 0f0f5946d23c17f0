import fs from 'node:fs';
import http from 'node:http';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyBytes } from './keploy.js';
import { parseMockSet } from '../keploy/parse.js';
import { ES_FILE } from '../keploy/testkit.js';
import type { HttpMock } from '../keploy/types.js';
import { HttpMatcher } from './matcher.js';
import { HttpReplayer, type ReplayEvent } from './replayer.js';
import { interceptingListener, type Closable } from './test-support.js';

/**
 * Keploy's own recording (mux-elasticsearch: a Go app on go-elasticsearch, 3 calls to
 * Elasticsearch) replayed to node:http. Keploy stored the gzip responses decoded while keeping
 * `Content-Encoding: gzip`: replay gzips them again for a client that accepts gzip, and sends them
 * plain, without the header, to one that does not.
 */

const mocks = parseMockSet(fs.readFileSync(ES_FILE, 'utf8'), ES_FILE) as HttpMock[];

interface Got {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

function send(port: number, req: { method: string; path: string; headers: Record<string, string>; body: string }): Promise<Got> {
  return new Promise((resolve, reject) => {
    const r = http.request({ host: '127.0.0.1', port, method: req.method, path: req.path, headers: { Host: 'localhost:9200', ...req.headers }, agent: false });
    r.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    r.on('error', reject);
    r.end(req.body);
  });
}

/** The fixture's request, as the Go client sent it. */
function requestOf(mock: HttpMock, without: string[] = []) {
  const headers = Object.fromEntries(Object.entries(mock.spec.req.header).filter(([name]) => !without.includes(name)));
  return { method: mock.spec.req.method, path: mock.spec.req.url, headers, body: Buffer.from(bodyBytes(mock.spec.req.body)).toString('utf8') };
}

describe('replaying the Keploy mux-elasticsearch fixture to node:http', () => {
  const events: ReplayEvent[] = [];
  let server: Closable;

  beforeAll(async () => {
    const replayer = new HttpReplayer({ matcher: new HttpMatcher(mocks), onEvent: (e) => events.push(e) });
    server = await interceptingListener({ host: 'localhost', port: 9200 }, (conn) => replayer.serve(conn, { scheme: 'http' }));
  });
  afterAll(async () => {
    await server?.close();
  });

  it('holds the three recorded calls', () => {
    expect(mocks.map((m) => `${m.name} ${m.spec.req.method} ${m.spec.req.url} -> ${m.spec.resp.status_code}`)).toEqual([
      'mock-0 GET /documents/_doc/075IJ5EBIPW7ZBPs5-8y -> 200',
      'mock-1 POST /documents/_doc -> 201',
      'mock-2 POST /documents/_update/075IJ5EBIPW7ZBPs5-8y -> 200',
    ]);
    expect(mocks.every((m) => m.spec.resp.header['Content-Encoding'] === 'gzip')).toBe(true);
  });

  it.each(mocks.map((m) => [m.name, m] as const))('answers %s with the recorded status and body, gzipped as the client accepts gzip', async (name, mock) => {
    const got = await send(server.port, requestOf(mock));
    expect(got.status).toBe(mock.spec.resp.status_code);
    expect(got.headers['content-encoding']).toBe('gzip');
    expect(Number(got.headers['content-length'])).toBe(got.body.length);
    expect(zlib.gunzipSync(got.body).toString('utf8')).toBe(mock.spec.resp.body);
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.headers['x-elastic-product']).toBe('Elasticsearch');
    if (mock.spec.resp.header.Location) expect(got.headers.location).toBe(mock.spec.resp.header.Location);
    expect(events.at(-1)).toMatchObject({ kind: 'replayed', mock: name, how: 'exact', method: mock.spec.req.method, url: mock.spec.req.url });
  });

  it('sends the recorded body plain, without Content-Encoding, to a client that does not accept gzip', async () => {
    const mock = mocks[0]!;
    const got = await send(server.port, requestOf(mock, ['Accept-Encoding']));
    expect(got.status).toBe(200);
    expect(got.headers['content-encoding']).toBeUndefined();
    expect(got.body.toString('utf8')).toBe(mock.spec.resp.body);
    expect(got.headers['content-length']).toBe(String(Buffer.byteLength(mock.spec.resp.body as string)));
  });

  it('answers a changed request 502, naming the closest mock and how it differs', async () => {
    const req = requestOf(mocks[1]!);
    const body = req.body.replace('somethingTitle', 'anotherTitle');
    const got = await send(server.port, { ...req, headers: { ...req.headers, 'Content-Length': String(Buffer.byteLength(body)) }, body });
    expect(got.status).toBe(502);
    expect(got.headers['x-debugkit-mock']).toBe('miss');
    const answer = JSON.parse(got.body.toString('utf8'));
    expect(answer).toMatchObject({ error: 'debugkit: no recorded mock matches this request', closest: { name: 'mock-1' }, request: { method: 'POST', url: '/documents/_doc' } });
    expect(answer.closest.differences).toEqual(['body $.title: recorded "somethingTitle", got "anotherTitle"']);
    expect(events.at(-1)).toMatchObject({ kind: 'missed', mock: 'mock-1', method: 'POST', url: '/documents/_doc' });
  });
});
