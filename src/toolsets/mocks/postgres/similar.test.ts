// Attack 18d: a replay miss compared the missed query with every recorded one (edit distance,
// up to 2,000 x 2,000 characters a pair), so a burst of misses against 19,000 recorded queries
// held the event loop for minutes. Now a miss costs the same whatever the set holds: these tests
// time it (CPU time, src/core/cputime.ts) against sets of n and 16n queries, and check that the
// closest mock named is still the one that differs least.
import { describe, expect, it } from 'vitest';
import { cpuTimes } from '../../../core/cputime.js';
import { boundedDistance, closestQuery, editDistance, MAX_COMPARED, MAX_PARAMETER_CELLS, parameterDifference, QueryNeighbors } from './similar.js';

/** Recorded queries `SELECT name FROM items WHERE id = <i>` (mock-<i>), and a few others. */
function recorded(n: number): Map<string, string> {
  const out = new Map<string, string>([
    ['BEGIN', 'mock-begin'],
    ['INSERT INTO items(name) VALUES($1) RETURNING id', 'mock-insert'],
  ]);
  for (let i = 0; i < n; i++) out.set(`SELECT name FROM items WHERE id = ${i}`, `mock-${i}`);
  return out;
}

describe('closestQuery: the nearest recorded query, at a cost that does not grow with the set', () => {
  it('names the query that differs least, whether it differs at the start, the middle or the end', () => {
    const set = recorded(19_000);
    const near = new QueryNeighbors(set);
    expect(near.closest('SELECT name FROM things WHERE id = 5')).toEqual({
      mock: 'mock-5',
      difference: 'query text differs at character 18: "me FROM things WHERE " here, "me FROM items WHERE " recorded',
    });
    expect(near.closest('SELECT name FROM items WHERE id = 123456')?.mock).toBe('mock-12345');
    expect(near.closest('SELECT  title FROM items WHERE id = 77')?.mock).toBe('mock-77');
    expect(near.closest('INSERT INTO items(name, price) VALUES($1, $2) RETURNING id')?.mock).toBe('mock-insert');
    expect(near.closest('BEGIN READ ONLY')?.mock).toBe('mock-begin');
    expect(closestQuery('x', new Map())).toBeUndefined();
  });

  it('the first recorded of equally close queries wins, as before', () => {
    const set = new Map([
      ['SELECT b', 'mock-0'],
      ['SELECT a', 'mock-1'],
    ]);
    expect(closestQuery('SELECT c', set)?.mock).toBe('mock-0');
  });

  it('learns queries recorded after it was first asked (onMiss: record)', () => {
    const set = recorded(100);
    const near = new QueryNeighbors(set);
    expect(near.closest('DELETE FROM items WHERE id = 1')?.mock).not.toBe('mock-delete');
    set.set('DELETE FROM items WHERE id = $1', 'mock-delete');
    expect(near.closest('DELETE FROM items WHERE id = 1')?.mock).toBe('mock-delete');
  });

  it('a miss against 16,000 recorded queries costs about what it costs against 1,000 (F1)', () => {
    const small = new QueryNeighbors(recorded(1_000));
    const big = new QueryNeighbors(recorded(16_000));
    const misses = Array.from({ length: 200 }, (_, i) => `SELECT name FROM things WHERE id = ${i}`);
    const ask = (near: QueryNeighbors) => () => misses.forEach((q) => near.closest(q));
    ask(small)();
    ask(big)(); // sorted once, on the first miss
    const t = cpuTimes(ask(small), ask(big));
    // A scan of every query takes 16x; neighbours found by binary search, ~1x.
    expect(t.big, `200 misses: ${t.small.toFixed(2)} ms CPU against 1,000 queries, ${t.big.toFixed(2)} ms against 16,000`).toBeLessThan(Math.max(4 * t.small, 20));
  });

  it('a miss of 2,000 characters against 20 recorded as long costs at most linearly more than one of 125, not quadratically (F1)', () => {
    const set = (n: number) => new QueryNeighbors(new Map(Array.from({ length: 20 }, (_, i) => [`SELECT '${String.fromCharCode(97 + i).repeat(n)}'`, `mock-${i}`])));
    const miss = (n: number) => `SELECT '${'z'.repeat(n)}'`;
    const small = set(125);
    const big = set(2_000);
    small.closest(miss(125));
    big.closest(miss(2_000));
    const t = cpuTimes(
      () => small.closest(miss(125)),
      () => big.closest(miss(2_000)),
    );
    // 16x the length: linear ~16x, quadratic ~256x.
    expect(t.big, `${t.small.toFixed(2)} ms CPU at 125 characters, ${t.big.toFixed(2)} ms at 2,000`).toBeLessThan(Math.max(64 * t.small, 20));
  });
});

describe('boundedDistance', () => {
  it('equals the edit distance when the differing middles fit MAX_COMPARED', () => {
    let seed = 18;
    const random = (k: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % k;
    };
    const word = () => Array.from({ length: random(40) }, () => 'abc '[random(4)]).join('');
    for (let i = 0; i < 2_000; i++) {
      const [a, b] = [word(), word()];
      expect(boundedDistance(a, b), `${a} / ${b}`).toBe(editDistance(a, b));
    }
    const long = 'x'.repeat(10_000);
    expect(boundedDistance(`${long}a${long}`, `${long}b${long}`)).toBe(1);
  });

  it('past MAX_COMPARED, counts the compared part and the difference in length', () => {
    expect(boundedDistance('a'.repeat(MAX_COMPARED + 500), 'b'.repeat(MAX_COMPARED + 100))).toBe(MAX_COMPARED + 400);
  });
});

describe('parameterDifference', () => {
  it('looks at a bounded number of recordings, and stops at one that differs in nothing', () => {
    const keys = Array.from({ length: 1000 }, (_, i) => `'${i}'`);
    const candidates = Array.from({ length: 10_000 }, (_, i) => ({ mock: `mock-${i}`, keys: keys.map((k, j) => (j === i % 1000 ? "'x'" : k)) }));
    const most = MAX_PARAMETER_CELLS / keys.length;
    // The one differing in one parameter beyond the first `most` recordings is not looked at.
    const far = [...candidates.slice(0, most).map((c) => ({ ...c, keys: c.keys.map(() => "'y'") })), candidates[most]!];
    expect(parameterDifference(keys, far)?.mock).toBe('mock-0');
    expect(parameterDifference(keys, candidates)).toEqual({ mock: 'mock-0', difference: "parameter $1 is '0' here, 'x' recorded" });
  });
});
