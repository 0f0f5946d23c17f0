import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buildHttpMock } from './keploy.js';
import type { HttpMock } from '../keploy/types.js';
import { HttpMatcher, type MatchRequest, type MatchResult } from './matcher.js';

let n = 0;
function mock(method: string, url: string, opts: { headers?: Array<[string, string]>; body?: string; answer?: string; host?: string } = {}): HttpMock {
  const m = buildHttpMock(
    {
      method,
      url,
      ...(opts.host ? { host: opts.host } : {}),
      requestHeaders: opts.headers ?? [],
      requestBody: opts.body ?? '',
      statusCode: 200,
      responseHeaders: [['Content-Type', 'text/plain']],
      responseBody: opts.answer ?? 'ok',
      requestTime: new Date(0),
      responseTime: new Date(0),
    },
    { name: `mock-${n++}` },
  );
  return m;
}

function request(method: string, url: string, opts: { headers?: Array<[string, string]>; body?: string; host?: string; scheme?: 'http' | 'https' } = {}): MatchRequest {
  return { method, url, scheme: opts.scheme ?? 'https', host: opts.host ?? 'api.test', headers: opts.headers ?? [], body: Buffer.from(opts.body ?? '') };
}

const answer = (r: MatchResult) => (r.miss ? 'MISS' : String(r.mock.spec.resp.body));

describe('HttpMatcher', () => {
  it('matches method, host, path, query in any order, and the body exactly', () => {
    const m = new HttpMatcher([mock('GET', 'https://api.test/items?a=1&b=2', { answer: 'items' }), mock('POST', 'https://api.test/items', { body: 'x=1', answer: 'created' })]);
    const hit = m.match(request('GET', '/items?b=2&a=1'));
    expect(hit).toMatchObject({ miss: false, how: 'exact', reused: false, index: 0 });
    expect(answer(m.match(request('POST', '/items', { body: 'x=1' })))).toBe('created');
    expect(m.match(request('GET', '/items?a=1&b=3')).miss).toBe(true);
    expect(m.match(request('GET', '/items?a=1&b=2', { host: 'other.test' })).miss).toBe(true);
    expect(m.match(request('GET', '/items?a=1&b=2', { host: 'api.test:443' })).miss).toBe(false);
    expect(m.match(request('GET', '/items?a=1&b=2', { host: 'api.test', scheme: 'http' })).miss).toBe(true); // port 80 vs 443
  });

  it('ignores volatile headers but not the others', () => {
    const headers: Array<[string, string]> = [
      ['Accept', 'application/json'],
      ['User-Agent', 'lib/1.0'],
      ['traceparent', '00-aaa-bbb-01'],
      ['X-Api-Version', '2'],
    ];
    const m = new HttpMatcher([mock('GET', 'https://api.test/v', { headers })]);
    const same = request('GET', '/v', {
      headers: [
        ['accept', 'application/json'],
        ['user-agent', 'lib/2.0'],
        ['traceparent', '00-ccc-ddd-01'],
        ['x-api-version', '2'],
        ['Date', 'now'],
      ],
    });
    expect(m.match(same).miss).toBe(false);
    const other = m.match(
      request('GET', '/v', {
        headers: [
          ['Accept', 'application/json'],
          ['X-Api-Version', '3'],
        ],
      }),
    );
    expect(other).toEqual({ miss: true, closest: { name: expect.any(String), index: 0, differences: ['header x-api-version: recorded "2", got "3"'] } });
    expect(new HttpMatcher([mock('GET', 'https://api.test/v', { headers })], { ignoreHeaders: ['x-api-*'] }).match(request('GET', '/v', { headers: [['Accept', 'application/json']] })).miss).toBe(
      false,
    );
  });

  it('treats repeated headers as Keploy joins them and normalizes AWS signatures', () => {
    const auth = (date: string, sig: string) => `AWS4-HMAC-SHA256 Credential=AKID/${date}/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=${sig}`;
    const m = new HttpMatcher([
      mock('GET', 'https://api.test/s3', {
        headers: [
          ['Accept', 'a'],
          ['Accept', 'b'],
          ['Authorization', auth('20240101', 'abc123')],
        ],
      }),
    ]);
    expect(
      m.match(
        request('GET', '/s3', {
          headers: [
            ['accept', 'a, b'],
            ['authorization', auth('20250202', 'def456')],
            ['x-amz-date', '20250202T000000Z'],
          ],
        }),
      ).miss,
    ).toBe(false);
  });

  it('compares JSON bodies by structure, skipping volatile fields', () => {
    const m = new HttpMatcher([mock('POST', 'https://api.test/q', { body: '{"user":{"id":7,"name":"ada"},"timestamp":"2024-01-01T00:00:00Z","tags":["a","b"]}' })]);
    const reordered = m.match(request('POST', '/q', { body: '{ "tags": ["a","b"], "timestamp": "2025-05-05T00:00:00Z", "user": {"name":"ada","id":7} }' }));
    expect(reordered).toMatchObject({ miss: false, how: 'json' });
    const changed = m.match(request('POST', '/q', { body: '{"tags":["b","a"],"user":{"name":"bob","id":7}}' }));
    expect(changed.miss && changed.closest?.differences).toEqual(['body $.user.name: recorded "ada", got "bob"', 'body $.tags[0]: recorded "a", got "b"', 'body $.tags[1]: recorded "b", got "a"']);
    const strict = new HttpMatcher(m.mocks, { ignoreJsonFields: [] });
    expect(strict.match(request('POST', '/q', { body: '{"user":{"id":7,"name":"ada"},"timestamp":"x","tags":["a","b"]}' })).miss).toBe(true);
  });

  it('uses each mock once, in order, then reuses the last recorded one', () => {
    const mocks = [mock('GET', 'https://api.test/poll', { answer: 'pending' }), mock('GET', 'https://api.test/poll', { answer: 'done' })];
    const m = new HttpMatcher(mocks);
    const answers = [1, 2, 3, 4].map(() => m.match(request('GET', '/poll')));
    expect(answers.map(answer)).toEqual(['pending', 'done', 'done', 'done']);
    expect(answers.map((a) => !a.miss && a.reused)).toEqual([false, false, true, true]);
    const once = new HttpMatcher(mocks, { reuse: 'none' });
    expect([1, 2, 3].map(() => answer(once.match(request('GET', '/poll'))))).toEqual(['pending', 'done', 'MISS']);
  });

  it('prefers an unused exact match over an unused JSON one', () => {
    const m = new HttpMatcher([mock('POST', 'https://api.test/j', { body: '{"a":1,"b":2}', answer: 'json' }), mock('POST', 'https://api.test/j', { body: '{"b":2,"a":1}', answer: 'exact' })]);
    expect(answer(m.match(request('POST', '/j', { body: '{"b":2,"a":1}' })))).toBe('exact');
    expect(answer(m.match(request('POST', '/j', { body: '{"b":2,"a":1}' })))).toBe('json');
  });

  it('names the closest mock and its differences on a miss, hiding credentials', () => {
    const m = new HttpMatcher([mock('GET', 'https://api.test/users/1', { headers: [['Authorization', 'Bearer secret-one']] }), mock('DELETE', 'https://api.test/users/2')]);
    const miss = m.match(request('GET', '/users/1?verbose=1', { headers: [['Authorization', 'Bearer secret-two']] }));
    expect(miss).toEqual({
      miss: true,
      closest: {
        name: m.mocks[0]!.name,
        index: 0,
        differences: ['query parameter verbose: recorded nothing, got "1"', 'header authorization: differs (value hidden)'],
      },
    });
    expect(JSON.stringify(miss)).not.toContain('secret');
    expect(new HttpMatcher([]).match(request('GET', '/'))).toEqual({ miss: true, closest: undefined });
  });

  it('reads Keploy mocks whose url is only the target, with the host from metadata', () => {
    const keploy = mock('GET', '/search?q=x', { host: 'localhost:9200' });
    const m = new HttpMatcher([keploy]);
    expect(m.match(request('GET', '/search?q=x', { host: 'localhost:9200', scheme: 'http' })).miss).toBe(false);
    expect(m.match(request('GET', '/search?q=x', { host: 'localhost:9300', scheme: 'http' })).miss).toBe(true);
  });

  it('compares only sizes when a body was too large to keep and its digest was not either: a match by size, not exact', () => {
    const big = mock('PUT', 'https://api.test/blob');
    big.spec.req.extra = { body_skipped: true, body_size: 5_000_000 };
    const m = new HttpMatcher([big]);
    expect(m.match({ ...request('PUT', '/blob', { body: 'x'.repeat(100) }), bodyLength: 5_000_000 })).toMatchObject({ miss: false, how: 'size' });
    const other = m.match({ ...request('PUT', '/blob', { body: 'x'.repeat(100) }), bodyLength: 4_000_000 });
    expect(other.miss && other.closest?.differences).toEqual(['body: recorded 5000000 bytes, got 4000000']);
  });

  it('compares a body not kept whole by its SHA-256, on either side (f1-3)', () => {
    const sha = (b: string) => createHash('sha256').update(b).digest('hex');
    const a = 'a'.repeat(3000);
    const b = 'b'.repeat(3000);
    const partial = (body: string): MatchRequest => ({ ...request('PUT', '/blob', { body: body.slice(0, 1000) }), bodyLength: body.length, bodySha256: sha(body) });
    const differs = ['body: 3000 bytes as recorded, but not the same bytes (SHA-256 differs; a body over the size kept is compared by its digest)'];
    // The recording kept the digest: the same body is exact, another of the same length a miss.
    const skipped = mock('PUT', 'https://api.test/blob');
    skipped.spec.req.extra = { body_skipped: true, body_size: 3000, body_sha256: sha(a).toUpperCase() };
    expect(new HttpMatcher([skipped]).match(partial(a))).toMatchObject({ miss: false, how: 'exact' });
    expect(new HttpMatcher([skipped]).match(request('PUT', '/blob', { body: a }))).toMatchObject({ miss: false, how: 'exact' });
    const other = new HttpMatcher([skipped], { reuse: 'none' }).match(partial(b));
    expect(other.miss && other.closest?.differences).toEqual(differs);
    // The recording kept the whole body, the request was read in part (before: sizes only, "exact").
    const whole = mock('PUT', 'https://api.test/blob', { body: a });
    expect(new HttpMatcher([whole]).match(partial(a))).toMatchObject({ miss: false, how: 'exact' });
    const wrong = new HttpMatcher([whole]).match(partial(b));
    expect(wrong.miss && wrong.closest?.differences).toEqual(differs);
    // An exact match is preferred to one by size only, whatever the recorded order.
    const unknown = mock('PUT', 'https://api.test/blob');
    unknown.spec.req.extra = { body_skipped: true, body_size: 3000 };
    expect(new HttpMatcher([unknown, skipped]).match(partial(a))).toMatchObject({ miss: false, how: 'exact', index: 1 });
    expect(new HttpMatcher([unknown, skipped]).match(partial(b))).toMatchObject({ miss: false, how: 'size', index: 0 });
  });

  it('compares binary bodies as bytes', () => {
    const bin = buildHttpMock({
      method: 'POST',
      url: 'https://api.test/b',
      requestHeaders: [],
      requestBody: Buffer.from([0xff, 0x00, 0xfe]),
      statusCode: 200,
      responseHeaders: [],
      requestTime: new Date(0),
      responseTime: new Date(0),
    });
    const m = new HttpMatcher([bin]);
    expect(m.match({ ...request('POST', '/b'), body: Buffer.from([0xff, 0x00, 0xfe]) }).miss).toBe(false);
    const miss = m.match({ ...request('POST', '/b'), body: Buffer.from([0xff, 0x01]) });
    expect(miss.miss && miss.closest?.differences[0]).toMatch(/^body: recorded 3 bytes .*, got 2 bytes/);
  });
});

describe('HttpMatcher: volatile and ignored fields', () => {
  it('treats two times under a time-like key as equal (epoch seconds, milliseconds, ISO 8601)', () => {
    const m = new HttpMatcher([mock('POST', 'https://api.test/ev', { body: '{"ts":1763900000,"sentAt":"2026-11-23T10:00:00Z","at_ms":1763900000123,"n":1}' })]);
    expect(m.match(request('POST', '/ev', { body: '{"ts":1763912345,"sentAt":"2026-11-23T17:22:01.5Z","at_ms":1763900999999,"n":1}' })).miss).toBe(false);
    // Not a time: a changed count, or a time-like key holding something else, still misses.
    const changed = m.match(request('POST', '/ev', { body: '{"ts":1763912345,"sentAt":"2026-11-23T10:00:00Z","at_ms":1763900000123,"n":2}' }));
    expect(changed.miss && changed.closest?.differences).toEqual(['body $.n: recorded 1, got 2']);
    expect(m.match(request('POST', '/ev', { body: '{"ts":"soon","sentAt":"2026-11-23T10:00:00Z","at_ms":1763900000123,"n":1}' })).miss).toBe(true);
    // A number that is not under a time-like key is compared.
    const ids = new HttpMatcher([mock('POST', 'https://api.test/u', { body: '{"userId":1763900000}' })]);
    expect(ids.match(request('POST', '/u', { body: '{"userId":1763900001}' })).miss).toBe(true);
    const strict = new HttpMatcher([mock('POST', 'https://api.test/ev', { body: '{"ts":1763900000}' })], { ignoreTimes: false });
    expect(strict.match(request('POST', '/ev', { body: '{"ts":1763900001}' })).miss).toBe(true);
  });

  it('ignores the JSON paths and headers it is given', () => {
    const mocks = [mock('POST', 'https://api.test/o', { headers: [['X-Nonce', 'a1']], body: '{"order":{"ref":"r-1","qty":2},"items":[{"id":"x","q":1},{"id":"y","q":1}]}' })];
    const body = '{"order":{"ref":"r-9","qty":2},"items":[{"id":"p","q":1},{"id":"q","q":1}]}';
    expect(new HttpMatcher(mocks).match(request('POST', '/o', { headers: [['X-Nonce', 'b2']], body })).miss).toBe(true);
    const loose = new HttpMatcher(mocks, { ignoreJsonPaths: ['$.order.ref', 'items[*].id'], ignoreHeaders: ['x-nonce'] });
    expect(loose.match(request('POST', '/o', { headers: [['X-Nonce', 'b2']], body })).miss).toBe(false);
    const anyDepth = new HttpMatcher(mocks, { ignoreJsonPaths: ['$..ref', '$..id'], ignoreHeaders: ['X-Nonce'] });
    expect(anyDepth.match(request('POST', '/o', { headers: [['X-Nonce', 'b2']], body })).miss).toBe(false);
    const partly = new HttpMatcher(mocks, { ignoreJsonPaths: ['$.order.ref'], ignoreHeaders: ['x-nonce'] });
    const miss = partly.match(request('POST', '/o', { headers: [['X-Nonce', 'b2']], body }));
    expect(miss.miss && miss.closest?.differences).toEqual(['body $.items[0].id: recorded "x", got "p"', 'body $.items[1].id: recorded "y", got "q"']);
  });

  it('answers from an index by method and path, and still names the closest mock on a miss', () => {
    const mocks = Array.from({ length: 500 }, (_, i) => mock('GET', `https://api.test/items/${i}`, { answer: `item ${i}` }));
    const m = new HttpMatcher(mocks);
    expect(answer(m.match(request('GET', '/items/321')))).toBe('item 321');
    const miss = m.match(request('POST', '/items/321'));
    expect(miss.miss && miss.closest).toMatchObject({ index: 321, differences: ['method: recorded GET, got POST'] });
    m.add(mock('POST', 'https://api.test/items/321', { answer: 'added' }));
    expect(answer(m.match(request('POST', '/items/321')))).toBe('added');
  });
});
