import fs from 'node:fs';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { DebugkitError } from '../../../core/errors.js';
import { bodyBytes, buildHttpMock, canonicalHeaderKey, httpBody, keployHeaders, urlParams, type HttpExchange } from './keploy.js';
import { keployTime } from '../keploy/time.js';
import { parseMockSet } from '../keploy/parse.js';
import { numberMocks, serializeMockSet } from '../keploy/serialize.js';
import { ES_FILE, quotedLengths } from '../keploy/testkit.js';
import { QUOTED_STRING_MAX } from '../keploy/emit.js';
import type { HttpMock } from '../keploy/types.js';

const RESPONSE = '{"_index":"documents","_id":"1L5WJ5EBIPW7ZBPsPO8T","_version":1,"result":"created","_shards":{"total":2,"successful":1,"failed":0},"_seq_no":6,"_primary_term":1}';

/** The elasticsearch fixture's mock-1 as Node would have seen it on the wire. */
function esExchange(): HttpExchange {
  const gz = gzipSync(RESPONSE);
  return {
    method: 'POST',
    url: '/documents/_doc',
    httpVersion: '1.1',
    requestHeaders: [
      'Host',
      'localhost:9200',
      'User-Agent',
      'go-elasticsearch/8.14.0 (linux amd64; Go 1.22.5)',
      'Content-Length',
      '50',
      'content-type',
      'application/json',
      'x-elastic-client-meta',
      'es=8.14.0,go=1.22.5,t=8.6.0,hc=1.22.5',
      'Accept-Encoding',
      'gzip',
    ],
    requestBody: '{"title":"somethingTitle","content":"something22"}',
    statusCode: 201,
    responseHeaders: {
      'content-encoding': 'gzip',
      'content-length': String(gz.byteLength),
      'content-type': 'application/json',
      location: '/documents/_doc/1L5WJ5EBIPW7ZBPsPO8T',
      'x-elastic-product': 'Elasticsearch',
    },
    responseBody: gz,
    requestTime: '2024-08-06T16:27:28.815334036+05:30',
    responseTime: '2024-08-06T16:27:28.815334036+05:30',
  };
}

describe('buildHttpMock builds what Keploy recorded', () => {
  it("reproduces the elasticsearch fixture's mock-1 (decoded gzip body, Content-Length rewritten, no Host header)", () => {
    const fixture = (parseMockSet(fs.readFileSync(ES_FILE, 'utf8'), ES_FILE) as HttpMock[])[1]!;
    const mock = buildHttpMock(esExchange());
    expect(mock.name).toBe('mocks');
    expect(mock.spec.metadata).toEqual({ ...fixture.spec.metadata, host: 'localhost:9200' });
    expect({ ...mock, name: fixture.name, spec: { ...mock.spec, metadata: fixture.spec.metadata } }).toEqual(fixture);
  });

  it("serializes to the fixture's document, plus the host line", () => {
    const fixtureDoc = fs.readFileSync(ES_FILE, 'utf8').split('---\n')[1]!;
    const [numbered] = numberMocks([buildHttpMock(esExchange())]);
    const text = serializeMockSet([{ ...numbered!, name: 'mock-1' }]);
    expect(text).toBe(fixtureDoc.replace('        name: Http\n', '        host: localhost:9200\n        name: Http\n'));
  });

  it('drops Transfer-Encoding (Go consumes it) and states the body length', () => {
    const mock = buildHttpMock({
      ...esExchange(),
      requestHeaders: { host: 'api.example.com', 'transfer-encoding': 'chunked', accept: ['a/b', 'c/d'] },
      responseHeaders: { 'Transfer-Encoding': 'chunked', 'Content-Type': 'text/plain' },
      responseBody: 'hello',
      host: 'api.example.com:443',
      connectionId: '12',
    });
    expect(mock.spec.req.header).toEqual({ Accept: 'a/b,c/d' });
    expect(mock.spec.resp.header).toEqual({ 'Content-Type': 'text/plain', 'Content-Length': '5' });
    expect(mock.spec.metadata.host).toBe('api.example.com:443');
    expect(mock.connectionId).toBe('12');
  });

  it('decodes deflate and br bodies; keeps an undecodable body and its headers as they were', () => {
    for (const [encoding, data] of [
      ['deflate', deflateSync(RESPONSE)],
      ['br', brotliCompressSync(RESPONSE)],
      ['x-gzip', gzipSync(RESPONSE)],
    ] as const) {
      const mock = buildHttpMock({ ...esExchange(), responseHeaders: { 'Content-Encoding': encoding }, responseBody: data });
      expect(mock.spec.resp.body).toBe(RESPONSE);
      expect(mock.spec.resp.header['Content-Length']).toBe(String(RESPONSE.length));
    }
    const broken = new Uint8Array([0x1f, 0x8b, 0x08, 0x00, 0xff]);
    const mock = buildHttpMock({ ...esExchange(), responseHeaders: { 'Content-Encoding': 'gzip', 'Content-Length': '5' }, responseBody: broken });
    expect(mock.spec.resp.body).toEqual(broken);
    expect(mock.spec.resp.header).toEqual({ 'Content-Encoding': 'gzip', 'Content-Length': '5' });
    const kept = buildHttpMock({ ...esExchange() }, { decodeContentEncoding: false });
    expect(kept.spec.resp.body).toBeInstanceOf(Uint8Array);
  });

  it('keeps a binary body as bytes, written as !!binary and read back identical', () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52, 0xff, 0xd8]);
    const mock = buildHttpMock({ ...esExchange(), responseHeaders: { 'Content-Type': 'image/png' }, responseBody: png, requestBody: new Uint8Array([0xc3, 0xa9]) });
    expect(mock.spec.resp.body).toEqual(png);
    expect(mock.spec.req.body).toBe('é');
    const [back] = parseMockSet(serializeMockSet([mock]), 'f') as HttpMock[];
    expect(back).toEqual(mock);
    expect(bodyBytes(back!.spec.resp.body)).toEqual(png);
    expect(bodyBytes('é')).toEqual(new Uint8Array([0xc3, 0xa9]));
  });

  it('writes text bodies with \\r\\n (CSV, multipart, Windows text) within the double-quote bounds, read back the same (attack 18t M3)', () => {
    const lines = Buffer.from('abcdefg\r\n'.repeat(113_777));
    const form = Buffer.from(`--b\r\nContent-Disposition: form-data; name="f"\r\n\r\n${'x'.repeat(500)}\r\n--b--\r\n`);
    const mock = buildHttpMock({
      ...esExchange(),
      method: 'POST',
      requestHeaders: { 'Content-Type': 'multipart/form-data; boundary=b' },
      requestBody: form,
      responseHeaders: { 'Content-Type': 'text/csv' },
      responseBody: lines,
    });
    // Stored as text, as Keploy stores it (`string(body)`): the emitter decides how it is written.
    expect(mock.spec.resp.body).toBe(lines.toString());
    const text = serializeMockSet([mock]);
    expect(text).toContain(`        body: !!binary ${lines.toString('base64')}\n`);
    expect(Math.max(0, ...quotedLengths(text))).toBeLessThanOrEqual(QUOTED_STRING_MAX);
    const [back] = parseMockSet(text, 'f') as HttpMock[];
    expect(back).toEqual(mock);
    expect(Buffer.from(bodyBytes(back!.spec.resp.body)).equals(lines)).toBe(true);
    expect(Buffer.from(bodyBytes(back!.spec.req.body)).equals(form)).toBe(true);
  });

  it('records the query as url_params and the HTTP version as proto numbers', () => {
    const mock = buildHttpMock({ ...esExchange(), method: 'GET', url: '/search?q=a+b&tag=x&tag=y', httpVersion: 'HTTP/1.0' });
    expect(mock.spec.req.url_params).toEqual({ q: 'a b', tag: 'x, y' });
    expect([mock.spec.req.proto_major, mock.spec.req.proto_minor]).toEqual([1, 0]);
    expect(mock.spec.metadata.operation).toBe('GET');
    expect(buildHttpMock({ ...esExchange(), httpVersion: '2' }).spec.req.proto_major).toBe(2);
    expect(buildHttpMock(esExchange()).spec.req.url_params).toBeUndefined();
  });

  it('takes Date times, in the zone asked for, and refuses nonsense', () => {
    const t = new Date(Date.UTC(2024, 0, 2, 0, 0, 0, 500));
    const mock = buildHttpMock({ ...esExchange(), requestTime: t, responseTime: new Date(t.getTime() + 1500) }, { utcOffsetMinutes: 330 });
    expect(mock.spec.reqTimestampMock).toBe('2024-01-02T05:30:00.5+05:30');
    expect(mock.spec.resTimestampMock).toBe('2024-01-02T05:30:02+05:30');
    expect(mock.spec.created).toBe(1704153602);
    expect(() => buildHttpMock({ ...esExchange(), method: 'GE T' })).toThrow(DebugkitError);
    expect(() => buildHttpMock({ ...esExchange(), statusCode: 99 })).toThrow(/Invalid HTTP status code 99/);
    expect(() => buildHttpMock({ ...esExchange(), httpVersion: 'one' })).toThrow(/Invalid HTTP version/);
    expect(() => buildHttpMock({ ...esExchange(), requestTime: 'now' })).toThrow(/Invalid timestamp "now"/);
  });
});

describe('the Keploy encodings of headers, queries, bodies and times', () => {
  it('canonicalizes header names like Go', () => {
    expect(['content-type', 'X-REQUEST-ID', 'www-authenticate', 'x', 'a--b', 'bad header', 'ümlaut'].map(canonicalHeaderKey)).toEqual([
      'Content-Type',
      'X-Request-Id',
      'Www-Authenticate',
      'X',
      'A--B',
      'bad header',
      'ümlaut',
    ]);
  });

  it('joins repeated headers with "," in arrival order, whatever the input shape', () => {
    expect(
      keployHeaders([
        ['set-cookie', 'a=1'],
        ['Set-Cookie', 'b=2; Path=/'],
        ['accept', '*/*'],
      ]),
    ).toEqual({ 'Set-Cookie': 'a=1,b=2; Path=/', Accept: '*/*' });
    expect(keployHeaders(['X-A', '1', 'x-a', '2'])).toEqual({ 'X-A': '1,2' });
    expect(keployHeaders({ 'x-n': 5, skipped: undefined, 'x-l': ['p', 'q'] })).toEqual({ 'X-N': '5', 'X-L': 'p,q' });
    expect(() => keployHeaders(['a'])).toThrow(DebugkitError);
    const polluted = keployHeaders([['__proto__', 'x']]);
    expect(Object.getOwnPropertyNames(polluted)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(polluted)).toBe(Object.prototype);
  });

  it('reads url_params the way Go reads a query', () => {
    expect(urlParams('/a?x=1&x=2&y=a+b&z&e=%41#frag')).toEqual({ x: '1, 2', y: 'a b', z: '', e: 'A' });
    expect(urlParams('/a')).toEqual({});
    expect(urlParams('http://h/a?k=v')).toEqual({ k: 'v' });
  });

  it('stores UTF-8 bodies as text and anything else as bytes', () => {
    expect(httpBody(new TextEncoder().encode('{"a":"é"}'))).toBe('{"a":"é"}');
    expect(httpBody(new Uint8Array([0xff]))).toEqual(new Uint8Array([0xff]));
    expect(httpBody(new Uint8Array([0xef, 0xbb, 0xbf, 0x41]))).toBe('\ufeffA');
  });

  it('writes times like Go: fraction without trailing zeros, Z for UTC', () => {
    const t = new Date(Date.UTC(2024, 5, 5, 11, 23, 56, 840));
    expect(keployTime(t, 0)).toBe('2024-06-05T11:23:56.84Z');
    expect(keployTime(t, 330)).toBe('2024-06-05T16:53:56.84+05:30');
    expect(keployTime(t, -420)).toBe('2024-06-05T04:23:56.84-07:00');
    expect(keployTime(new Date(Date.UTC(2024, 0, 1)), 0)).toBe('2024-01-01T00:00:00Z');
    expect(keployTime('2024-06-05T16:53:56.841481379+05:30')).toBe('2024-06-05T16:53:56.841481379+05:30');
    expect(() => keployTime(new Date(NaN))).toThrow(DebugkitError);
  });
});
