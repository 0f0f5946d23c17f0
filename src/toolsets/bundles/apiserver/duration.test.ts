import { describe, expect, it } from 'vitest';
import { humanDuration, since } from './duration.js';

const s = 1000;
const m = 60 * s;
const h = 60 * m;
const d = 24 * h;

describe('humanDuration (kubectl AGE format)', () => {
  it.each([
    [-5 * s, '<invalid>'],
    [-1500, '0s'],
    [0, '0s'],
    [45 * s, '45s'],
    [119 * s, '119s'],
    [2 * m, '2m'],
    [3 * m + 7 * s, '3m7s'],
    [10 * m + 59 * s, '10m'],
    [2 * h + 59 * m, '179m'],
    [3 * h, '3h'],
    [3 * h + 12 * m, '3h12m'],
    [8 * h + 30 * m, '8h'],
    [47 * h, '47h'],
    [5 * d, '5d'],
    [5 * d + 3 * h, '5d3h'],
    [8 * d + 3 * h, '8d'],
    [89 * d, '89d'],
    [729 * d, '729d'],
    [2 * 365 * d + 10 * d, '2y10d'],
    [3 * 365 * d, '3y'],
    [9 * 365 * d + 100 * d, '9y'],
  ])('%d ms -> %s', (ms, want) => {
    expect(humanDuration(ms)).toBe(want);
  });
});

describe('since', () => {
  const now = new Date('2025-04-11T19:06:18Z');
  it('measures from the reference time, not the wall clock', () => {
    expect(since('2025-04-11T18:17:17Z', now)).toBe('49m');
    expect(since('2025-04-06T19:06:18Z', now)).toBe('5d');
  });
  it('says <unknown> for absent or invalid timestamps', () => {
    expect(since(undefined, now)).toBe('<unknown>');
    expect(since(null, now)).toBe('<unknown>');
    expect(since('yesterday', now)).toBe('<unknown>');
  });
});
