// Finding F1 of attack 18b: a mock's (or a request's) text cost the replay index build quadratic
// time on the event loop (queryOf copied a key's list per repeat; `\s*;\s*` on Content-Type and
// `(Credential=[^/]*\/)\d{8}` on an AWS4- Authorization backtracked). Each shape is timed at n and
// 4n characters (CPU time, see ../testing.ts): a linear build takes ~4x, a quadratic one ~16x
// (before the fix: seconds at 4n). Relative, so a loaded machine does not decide it.
import { describe, expect, it } from 'vitest';
import { TimeSlice } from '../../../core/wait.js';
import { buildHttpMock } from './keploy.js';
import type { HttpMock } from '../keploy/types.js';
import { cpuTimes, linearMessage } from '../../../core/cputime.js';
import { HttpMatcher, normalizeValue, type MatchRequest } from './matcher.js';
import { watchTurns } from './test-support.js';

function mock(url: string, headers: Array<[string, string]>): HttpMock {
  return buildHttpMock(
    { method: 'GET', url, requestHeaders: headers, requestBody: '', statusCode: 200, responseHeaders: [], responseBody: 'ok', requestTime: new Date(0), responseTime: new Date(0) },
    { name: 'mock-0' },
  );
}

const request = (url: string, headers: Array<[string, string]>): MatchRequest => ({ method: 'GET', url, scheme: 'http', host: 'h', headers, body: new Uint8Array(0) });

/** Each shape at `n` characters: the mock's URL and request headers. */
const shapes: Record<string, (n: number) => [string, Array<[string, string]>]> = {
  'a query key repeated (a=1&a=1&...)': (n) => [`http://h/x?${'a=1&'.repeat(n / 4)}`, []],
  'a query key repeated without values (a&a&...)': (n) => [`http://h/x?${'a&'.repeat(n / 2)}`, []],
  'distinct query keys': (n) => [`http://h/x?${Array.from({ length: n / 8 }, (_, i) => `k${String(i).padStart(5, '0')}=1`).join('&')}`, []],
  'a Content-Type of inner blanks': (n) => ['http://h/x', [['Content-Type', `a${' '.repeat(n)}b`]]],
  'a Content-Type of inner blanks and a ; at the end': (n) => ['http://h/x', [['Content-Type', `a${' '.repeat(n)}b;`]]],
  'a Content-Type of " ; " repeated': (n) => ['http://h/x', [['Content-Type', `a${' ; '.repeat(n / 3)}b`]]],
  'an AWS4- Authorization of Credential= repeated': (n) => ['http://h/x', [['Authorization', `AWS4-${'Credential='.repeat(n / 11)}`]]],
  'an AWS4- Authorization of Credential=/ repeated (no date)': (n) => ['http://h/x', [['Authorization', `AWS4-${'Credential=/'.repeat(n / 12)}`]]],
  'an AWS4- Authorization of Credential=x then one / far away': (n) => ['http://h/x', [['Authorization', `AWS4-${'Credential=x'.repeat(n / 12)}/1234567`]]],
  'an AWS4- Authorization of Signature= repeated': (n) => ['http://h/x', [['Authorization', `AWS4-${'Signature='.repeat(n / 10)}`]]],
  'a header of blank items (" , , ...")': (n) => ['http://h/x', [['Accept', ' ,'.repeat(n / 2)]]],
  'a long host': (n) => [`http://${'a:1'.repeat(n / 3)}/x`, []],
};

// Sizes n and 8n, bound 32x (linear is 8x, quadratic 64x; seen up to 29x with GC): at n and 4n with a 10x bound, a GC in
// every one of the best-of-5 runs failed a linear shape (20.8 ms against 0.87 ms, stop 40's run). Past the ratio, the big
// run must also take over QUADRATIC_FLOOR_MS: process CPU time counts the GC's threads too, and the fresh-clone run of stop
// 41 failed a linear shape at 8n over the old 60 ms floor; the quadratic code this guards against took seconds at 4n.
const QUADRATIC_FLOOR_MS = 400;
describe('HttpMatcher on adversarial mock and request text (F1: linear)', () => {
  for (const [name, make] of Object.entries(shapes)) {
    it(`the index build over one mock with ${name} is linear`, () => {
      const small = mock(...make(16_000));
      const big = mock(...make(128_000));
      new HttpMatcher([big]).build(); // warm up
      const t = cpuTimes(
        () => new HttpMatcher([small]).build(),
        () => new HttpMatcher([big]).build(),
      );
      expect(t.big, linearMessage(name, t, 8)).toBeLessThan(Math.max(32 * t.small, QUADRATIC_FLOOR_MS));
    });

    it(`matching a request with ${name} is linear`, () => {
      const matcher = new HttpMatcher([mock('http://h/x', [])]);
      const small = request(...make(16_000));
      const big = request(...make(128_000));
      matcher.match(big); // warm up
      const t = cpuTimes(
        () => matcher.match(small),
        () => matcher.match(big),
      );
      expect(t.big, linearMessage(name, t, 8)).toBeLessThan(Math.max(32 * t.small, QUADRATIC_FLOOR_MS));
    });
  }

  it('a repeated query key still matches as a multiset (order free, count counts)', () => {
    const m = new HttpMatcher([mock(`http://h/x?${'a=1&'.repeat(1000)}a=2`, [])]);
    expect(m.match(request(`/x?a=2&${'a=1&'.repeat(1000)}`, [])).miss).toBe(false);
    expect(m.match(request(`/x?${'a=1&'.repeat(999)}a=2`, [])).miss).toBe(true);
  });
});

/** The header normalization before F1, the reference the linear one must equal. */
function normalizeBefore(name: string, value: string): string {
  let v = value
    .split(',')
    .map((s) => s.trim())
    .join(',');
  if (name === 'content-type') v = v.toLowerCase().replace(/\s*;\s*/g, ';');
  if (name === 'authorization' && v.startsWith('AWS4-')) v = v.replace(/(Credential=[^/]*\/)\d{8}/, '$1*').replace(/Signature=[0-9a-f]+/, 'Signature=*');
  return v;
}

describe('normalizeValue equals the regex version it replaced', () => {
  it('on examples', () => {
    const auth = 'AWS4-HMAC-SHA256 Credential=AKID/20240101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc123';
    expect(normalizeValue('authorization', auth)).toBe('AWS4-HMAC-SHA256 Credential=AKID/*/us-east-1/s3/aws4_request,SignedHeaders=host;x-amz-date,Signature=*');
    expect(normalizeValue('content-type', 'Application/JSON ; charset=UTF-8 ;  q=1')).toBe('application/json;charset=utf-8;q=1');
    for (const [name, v] of [
      ['content-type', 'a \t; \u00a0b  c ;;  ; d'],
      ['content-type', ' ; '],
      ['content-type', 'a  b'],
      ['authorization', 'AWS4-x Credential=a/b/12345678 Credential=c/12345678'],
      ['authorization', 'AWS4-x Credential=Credential=/1234567/12345678'],
      ['authorization', 'AWS4-x Credential=a/12345678Credential=b/87654321, Signature=ff Signature=00'],
      ['authorization', 'Bearer Credential=a/12345678'],
    ] as const) {
      expect(normalizeValue(name, v), JSON.stringify(v)).toBe(normalizeBefore(name, v));
    }
  });

  it('on 100,000 random short values of blanks, ;, /, digits and the Credential=/Signature= keys', () => {
    const atoms = [' ', '\t', '\n', '\u00a0', '\u2028', '\u3000', '\ufeff', ';', ',', '/', 'a', 'B', '1', '12345678', '1234567', 'ab', 'Credential=', 'Signature=', '\u0130'];
    let seed = 18;
    const random = (k: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % k;
    };
    const bad: string[] = [];
    for (let i = 0; i < 100_000 && bad.length < 5; i++) {
      let v = random(2) === 0 ? 'AWS4-' : '';
      for (let j = random(12); j > 0; j--) v += atoms[random(atoms.length)];
      for (const name of ['content-type', 'authorization', 'accept']) {
        if (normalizeValue(name, v) !== normalizeBefore(name, v)) bad.push(`${name}: ${JSON.stringify(v)}`);
      }
    }
    expect(bad).toEqual([]);
  });
});

// Attack 18d: a miss scored every recorded mock (130 ms against 19,000), and a burst of pipelined
// misses held the event loop for minutes. Now it scores those of the request's method and path and
// of the nearest method+path pairs: its cost does not grow with the set (CPU time, n against 16n).
describe('HttpMatcher misses against a big set (attack 18d)', () => {
  const set = (n: number) => new HttpMatcher(Array.from({ length: n }, (_, i) => mock(`http://h/item/${i}`, [['Accept', 'application/json']])));
  const misses = Array.from({ length: 50 }, (_, i) => request(`/missing/${i}`, [['Accept', 'application/json']]));

  it('a miss against 16,000 mocks costs about what it costs against 1,000', () => {
    const small = set(1_000);
    const big = set(16_000);
    const ask = (m: HttpMatcher) => () => misses.forEach((r) => m.match(r));
    ask(small)();
    ask(big)(); // the keys are sorted once, on the first miss
    const t = cpuTimes(ask(small), ask(big));
    expect(t.big, `50 misses: ${t.small.toFixed(2)} ms CPU against 1,000 mocks, ${t.big.toFixed(2)} ms against 16,000`).toBeLessThan(Math.max(4 * t.small, 20));
  });

  it('matchSliced prepares a big set in slices, giving the event loop turns meanwhile', async () => {
    const m = set(20_000);
    const watch = watchTurns();
    const hit = await m.matchSliced(request('/item/19999', [['Accept', 'application/json']]), new TimeSlice(5));
    expect(watch.stop().turns, 'turns of the event loop while 20,000 mocks were prepared in slices of 5 ms').toBeGreaterThan(3);
    expect(hit.miss || hit.index).toBe(19_999);
  });

  it('still names the mock that differs least: the same path with another method, a neighbouring path, a differing header', () => {
    const m = set(16_000);
    const post = m.match({ ...request('/item/4321', [['Accept', 'application/json']]), method: 'POST' });
    expect(post.miss && post.closest).toMatchObject({ index: 4321, differences: ['method: recorded GET, got POST'] });
    const header = m.match(request('/item/77', [['Accept', 'text/plain']]));
    expect(header.miss && header.closest).toMatchObject({ index: 77, differences: ['header accept: recorded "application/json", got "text/plain"'] });
    const path = m.match(request('/item/123456', [['Accept', 'application/json']]));
    expect(path.miss && path.closest?.differences).toEqual([expect.stringMatching(/^path: recorded \/item\/\d+, got \/item\/123456$/)]);
    m.add(mock('http://h/other', []));
    const other = m.match(request('/other', [['Accept', 'application/json']]));
    expect(other.miss && other.closest).toMatchObject({ index: 16_000, differences: ['header accept: recorded nothing, got "application/json"'] });
  });
});
