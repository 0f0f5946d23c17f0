import { describe, expect, it } from 'vitest';
import type { GenericMock } from '../keploy/types.js';
import { buildGenericMock } from './keploy.js';
import { cpuTimes, linearMessage } from '../../../core/cputime.js';
import { commonPrefix, GenericIndex, type GenericMatch, type TargetView } from './matcher.js';

const at = new Date('2024-01-02T00:00:00Z');
let n = 0;
/** A mock as the recorder writes it (`host` null: as Keploy writes it, naming no target). */
function mock(request: string, response: string, host: string | null = 'kv:7000'): GenericMock {
  const m = buildGenericMock({ request: Buffer.from(request, 'latin1'), response: Buffer.from(response, 'latin1'), startedAt: at, endedAt: at, ...(host ? { host } : {}) }, 0);
  return { ...m, name: `mock-${n++}` };
}
const kv = { host: 'kv', port: 7000 };
const answer = (m: GenericMatch) => (m.kind === 'match' ? m.entry.response.toString('latin1') : m.kind);

describe('GenericIndex', () => {
  it('takes the longest recorded request the bytes begin with, waiting while a longer one is possible', () => {
    const view = new GenericIndex([mock('GET x\n', 'A\n'), mock('GET x\nGET y\n', 'AB\n'), mock('GET y\n', 'B\n')]).forTarget(kv)!;
    expect(answer(view.match(Buffer.from('GET x\nGET y\n'), false))).toBe('AB\n');
    const waiting = view.match(Buffer.from('GET x\n'), false);
    expect(waiting.kind).toBe('partial');
    expect(waiting.kind === 'partial' && waiting.complete?.response.toString()).toBe('A\n');
    expect(answer(view.match(Buffer.from('GET x\n'), true))).toBe('A\n');
    // Pipelined beyond any single recording: the first request now, the rest after.
    expect(answer(view.match(Buffer.from('GET y\nGET x\n'), false))).toBe('B\n');
    expect(view.match(Buffer.from('GET'), false)).toEqual({ kind: 'partial' });
  });

  it('misses bytes no recorded request begins, naming the one sharing the longest prefix', () => {
    const view = new GenericIndex([mock('SET a 1\n', 'OK\n'), mock('GET abc\n', 'V\n'), mock('GET ab\n', 'V\n')]).forTarget(kv)!;
    const m = view.match(Buffer.from('GET abd\n'), false);
    expect(m.kind).toBe('miss');
    expect(m.kind === 'miss' && m.closest).toMatchObject({ name: expect.stringMatching(/^mock-/), samePrefix: 6 });
    expect(m.kind === 'miss' && m.closest!.request.toString()).toBe('GET abc\n');
    // An unfinished request that never completes.
    expect(view.match(Buffer.from('GET a'), true)).toMatchObject({ kind: 'miss', closest: { samePrefix: 5 } });
  });

  it('answers a repeated request in recorded order, then repeats the last answer', () => {
    const view = new GenericIndex([mock('NEXT\n', '1\n'), mock('OTHER\n', 'x\n'), mock('NEXT\n', '2\n')]).forTarget(kv)!;
    const took = [1, 2, 3].map(() => view.match(Buffer.from('NEXT\n'), false));
    expect(took.map(answer)).toEqual(['1\n', '2\n', '2\n']);
    expect(took.map((m) => m.kind === 'match' && m.reused)).toEqual([false, false, true]);
  });

  it('sends greetings (recorded with no request) in recorded order', () => {
    const view = new GenericIndex([mock('', '220 one\n'), mock('QUIT\n', 'bye\n'), mock('', '220 two\n')]).forTarget(kv)!;
    expect([1, 2, 3].map(() => view.greeting()!.entry.response.toString())).toEqual(['220 one\n', '220 two\n', '220 two\n']);
    expect(answer(view.match(Buffer.from('QUIT\n'), false))).toBe('bye\n');
  });

  it("answers a target from its own mocks, else from mocks naming no target, never another target's", () => {
    const index = new GenericIndex([mock('PING\n', 'kv\n'), mock('PING\n', 'cache\n', 'Cache:6379'), mock('PING\n', 'keploy\n', null)]);
    expect(index.hosts).toEqual(['kv:7000', 'cache:6379']);
    expect(answer(index.forTarget(kv)!.match(Buffer.from('PING\n'), false))).toBe('kv\n');
    expect(answer(index.forTarget({ host: 'CACHE', port: 6379 })!.match(Buffer.from('PING\n'), false))).toBe('cache\n');
    expect(answer(index.forTarget({ host: 'other', port: 1 })!.match(Buffer.from('PING\n'), false))).toBe('keploy\n');
    expect(new GenericIndex([mock('PING\n', 'kv\n')]).forTarget({ host: 'other', port: 1 })).toBeUndefined();
  });

  it('reads the closing and truncation marks', () => {
    const closing = buildGenericMock({ request: Buffer.from('QUIT\n'), response: Buffer.alloc(0), startedAt: at, endedAt: at, host: 'kv:7000', serverClosed: true });
    const big = buildGenericMock({
      request: Buffer.from('BIG\n'),
      response: Buffer.from('xx'),
      startedAt: at,
      endedAt: at,
      host: 'kv:7000',
      truncated: { requestBytes: 4, responseBytes: 5000 },
    });
    const view = new GenericIndex([closing, big]).forTarget(kv)!;
    expect(view.match(Buffer.from('QUIT\n'), false)).toMatchObject({ kind: 'match', entry: { serverClosed: true, response: Buffer.alloc(0) } });
    expect(view.match(Buffer.from('BIG\n'), false)).toMatchObject({ kind: 'match', entry: { truncated: { requestBytes: 4, responseBytes: 5000 } } });
  });

  it('agrees with a scan of every recorded request on random sets and bytes (its indexes change how it looks, not what it finds)', () => {
    // A small alphabet, so that prefixes are shared, requests begin one another and ties happen.
    let seed = 7;
    const rand = (k: number) => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8) % k;
    const word = (max: number) => Array.from({ length: 1 + rand(max) }, () => 'ab\n'[rand(3)]).join('');
    for (let round = 0; round < 60; round++) {
      const requests = Array.from({ length: 1 + rand(40) }, () => word(8));
      const view = new GenericIndex(requests.map((r, i) => mock(r, `${i}\n`))).forTarget(kv)!;
      for (let q = 0; q < 40; q++) {
        const bytes = Buffer.from(word(12), 'latin1');
        const final = rand(2) === 0;
        // The rules of matcher.ts, over every request in recorded order.
        const starts = requests.filter((r) => bytes.toString('latin1').startsWith(r));
        const longest = starts.reduce<string | undefined>((a, r) => (a === undefined || r.length > a.length ? r : a), undefined);
        const longer = requests.some((r) => r.length > bytes.length && r.startsWith(bytes.toString('latin1')));
        const m = view.match(bytes, final);
        const what = `requests ${JSON.stringify(requests)}, bytes ${JSON.stringify(bytes.toString())}, final ${final}`;
        if (longer && !final) {
          expect(m.kind, what).toBe('partial');
          if (m.kind === 'partial') expect(m.complete?.request.toString('latin1'), what).toBe(longest);
        } else if (longest !== undefined) {
          expect(m.kind === 'match' && m.entry.request.toString('latin1'), what).toBe(longest);
        } else {
          let best: { r: string; prefix: number } | undefined;
          for (const r of requests) {
            const prefix = commonPrefix(bytes, Buffer.from(r, 'latin1'));
            const d = (x: string) => Math.abs(x.length - bytes.length);
            if (!best || prefix > best.prefix || (prefix === best.prefix && d(r) < d(best.r))) best = { r, prefix };
          }
          expect(m.kind, what).toBe('miss');
          if (m.kind === 'miss') expect({ request: m.closest?.request.toString('latin1'), samePrefix: m.closest?.samePrefix }, what).toEqual({ request: best!.r, samePrefix: best!.prefix });
        }
      }
    }
  });
});

describe('GenericIndex at scale', () => {
  const setOf = (n: number) => new GenericIndex(Array.from({ length: n }, (_, i) => mock(`Q${String(i).padStart(6, '0')}\n`, 'A\n'))).forTarget(kv)!;

  it('a match and a miss cost the same in a set 16 times larger (indexed, not a scan of every request)', () => {
    const [small, big] = [setOf(1000), setOf(16_000)];
    const hits = Array.from({ length: 2000 }, (_, i) => Buffer.from(`Q${String(i % 1000).padStart(6, '0')}\nQ000001\n`));
    const misses = Array.from({ length: 2000 }, (_, i) => Buffer.from(`R${i}\n`));
    const ask = (view: TargetView) => () => [...hits, ...misses].map((b) => view.match(b, false));
    const t = cpuTimes(ask(small), ask(big));
    expect(t.big, linearMessage('4,000 matches against 1,000 and 16,000 recorded requests', t, 16)).toBeLessThan(4 * t.small + 5);
    expect(big.match(Buffer.from('Q015999\n'), false)).toMatchObject({ kind: 'match', entry: { request: Buffer.from('Q015999\n') } });
    expect(big.match(Buffer.from('Q01599'), false)).toMatchObject({ kind: 'partial' });
    expect(big.match(Buffer.from('Q0159990\n'), false)).toMatchObject({ kind: 'miss', closest: { samePrefix: 7 } });
  });
});
