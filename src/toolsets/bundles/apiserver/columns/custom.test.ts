import { describe, expect, it } from 'vitest';
import { boundedJson } from './custom.js';

describe('boundedJson: a printer-column cell of a JSON value', () => {
  it('is JSON.stringify for values that fit', () => {
    for (const v of [null, 1, 'a"b', true, [], {}, [1, 'x', null, { a: [true] }], { 'k"': { n: 2.5, s: 'é' }, skip: undefined }]) {
      expect(boundedJson(v, 1000)).toBe(JSON.stringify(v));
    }
    const exact = JSON.stringify({ a: [1, 2] });
    expect(boundedJson({ a: [1, 2] }, exact.length)).toBe(exact);
  });

  it('stops at the bound, marked, without writing the rest (attack 18n: a whole 100 MB value per column and row)', () => {
    const big = Array.from({ length: 1_000_000 }, (_, i) => ({ i, text: 'x'.repeat(20) }));
    const cut = boundedJson(big, 1000);
    expect(cut).toHaveLength(1001);
    expect(cut.endsWith('…')).toBe(true);
    expect(JSON.stringify(big).startsWith(cut.slice(0, -1))).toBe(true);
    expect(boundedJson('y'.repeat(10_000_000), 100)).toHaveLength(101);
  });

  it('does not recurse past 64 levels (a deeply nested value cannot overflow the stack)', () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const text = boundedJson(deep, 10_000);
    expect(text).toContain('…');
    expect(text.startsWith('['.repeat(64))).toBe(true);
  });
});
