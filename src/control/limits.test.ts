import { describe, expect, it } from 'vitest';
import { parseLimit, windowAt } from './limits.js';
import { rateHeaders } from './plane.js';

describe('limits', () => {
  it('parses COUNT/UNIT', () => {
    expect(parseLimit('60/min', '--rate')).toEqual({ limit: 60, unit: 'minute' });
    expect(parseLimit('10000/month', '--quota')).toEqual({ limit: 10000, unit: 'month' });
    expect(() => parseLimit('60 per minute', '--rate')).toThrow(/--rate "60 per minute" is not valid: write COUNT\/UNIT/);
    expect(() => parseLimit('0/min', '--rate')).toThrow(/COUNT >= 1/);
    expect(() => parseLimit('5/fortnight', '--rate')).toThrow(/UNIT one of/);
  });

  it('windows: fixed minutes, calendar months (UTC)', () => {
    const now = Date.UTC(2026, 10, 23, 17, 30, 15);
    expect(windowAt('minute', now)).toMatchObject({ start: Date.UTC(2026, 10, 23, 17, 30), end: Date.UTC(2026, 10, 23, 17, 31) });
    expect(windowAt('month', now)).toMatchObject({ start: Date.UTC(2026, 10, 1), end: Date.UTC(2026, 11, 1) });
    expect(windowAt('month', Date.UTC(2026, 11, 31))).toMatchObject({ end: Date.UTC(2027, 0, 1) });
    expect(new Date(windowAt('week', now).start).getUTCDay()).toBe(1);
  });

  it('headers: the kindly-debugger contract fields and the IETF fields', () => {
    const now = Date.UTC(2026, 10, 23, 17, 30, 15);
    const h = rateHeaders(
      [
        { kind: 'rate', limit: 60, used: 10, start: Date.UTC(2026, 10, 23, 17, 30), end: Date.UTC(2026, 10, 23, 17, 31) },
        { kind: 'quota', limit: 1000, used: 1000, start: Date.UTC(2026, 10, 1), end: Date.UTC(2026, 11, 1) },
      ],
      now,
    );
    expect(h['X-RateLimit-Limit']).toBe('60');
    expect(h['X-RateLimit-Remaining']).toBe('50');
    expect(h['X-RateLimit-Reset']).toBe(String(Date.UTC(2026, 10, 23, 17, 31) / 1000));
    expect(h['RateLimit-Policy']).toBe('"rate";q=60;w=60, "quota";q=1000;w=2592000');
    expect(h.RateLimit).toMatch(/^"rate";r=50;t=45, "quota";r=0;t=\d+$/);
  });
});
