import { describe, expect, it } from 'vitest';
import { jsonSliced } from './json-sliced.js';

/** A slice always spent: the encoder waits a turn of the loop at every look at the clock. */
const spent = () => ({ over: () => true, pause: () => new Promise<void>((resolve) => setImmediate(resolve)) });

describe('jsonSliced: JSON.stringify in slices of the loop', () => {
  it('writes what JSON.stringify writes, for values as JSON.parse makes them and the odd ones code makes', async () => {
    const parsed = JSON.parse('{"__proto__":{"a":1},"b":[1,"x",null,true,{"c":[]}],"\\ud800":"\\udfff","n":-0.5e-7,"e":{}}') as unknown;
    const values: unknown[] = [
      parsed,
      [],
      {},
      'text',
      42,
      null,
      [undefined, () => 1, Symbol('s'), Number.NaN, Infinity],
      { gone: undefined, f: () => 1, kept: 1, d: new Date(0), nested: { toJSON: () => 'mine' } },
      Object.assign(Object.create(null) as object, { z: 1, a: [2] }),
      { 2: 'b', 1: 'a', x: 'c' },
    ];
    for (const v of values) expect(await jsonSliced(v, spent())).toBe(JSON.stringify(v));
  });

  it('walks nesting deeper than the stack (JSON.parse reads it) and throws on a cycle or a BigInt as JSON.stringify does', async () => {
    const depth = 200_000;
    const deep = JSON.parse(`${'['.repeat(depth)}1${']'.repeat(depth)}`) as unknown;
    expect(() => JSON.stringify(deep)).toThrow(RangeError);
    const text = await jsonSliced(deep, spent());
    expect(text).toBe(`${'['.repeat(depth)}1${']'.repeat(depth)}`);
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = { back: cycle };
    await expect(jsonSliced(cycle, spent())).rejects.toThrow(/circular/);
    await expect(jsonSliced({ n: 1n }, spent())).rejects.toThrow(TypeError);
    // The same object twice, not inside itself, is no cycle.
    const shared = { s: 1 };
    expect(await jsonSliced([shared, shared], spent())).toBe('[{"s":1},{"s":1}]');
  });

  it('gives the loop turns while it writes a large value: one every 512 values when its slice is spent', async () => {
    const big = Array.from({ length: 40 }, (_, o) => Object.fromEntries(Array.from({ length: 2_000 }, (_, k) => [`k${k}`, `v${o}-${k}`])));
    let turns = 0;
    let writing = true;
    const other = (): void => {
      if (!writing) return;
      turns++;
      setImmediate(other);
    };
    setImmediate(other);
    const text = await jsonSliced(big, spent());
    writing = false;
    expect(text).toBe(JSON.stringify(big));
    // 80,040 values written: JSON.stringify (and a structured clone to a worker) take them in one turn.
    expect(turns).toBeGreaterThanOrEqual(Math.floor(80_040 / 512) - 1);
  });
});
