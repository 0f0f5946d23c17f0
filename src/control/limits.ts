/** Rate limits ("60/min": a fixed window) and quotas ("10000/month": a calendar period, UTC). */

export interface Limit {
  limit: number;
  /** The unit as written after the slash, normalized: second, minute, hour, day, week, month. */
  unit: Unit;
}

type Unit = 'second' | 'minute' | 'hour' | 'day' | 'week' | 'month';

const UNITS: Record<string, Unit> = {
  s: 'second',
  sec: 'second',
  second: 'second',
  m: 'minute',
  min: 'minute',
  minute: 'minute',
  h: 'hour',
  hr: 'hour',
  hour: 'hour',
  d: 'day',
  day: 'day',
  w: 'week',
  week: 'week',
  mo: 'month',
  month: 'month',
};
const MS: Record<Exclude<Unit, 'month'>, number> = { second: 1000, minute: 60_000, hour: 3_600_000, day: 86_400_000, week: 604_800_000 };

/** Parses "60/min" or "10000/month"; throws an error that shows the valid form. */
export function parseLimit(text: string, what: string): Limit {
  const m = /^\s*(\d{1,12})\s*\/\s*([a-z]+)\s*$/i.exec(text);
  const unit = m ? UNITS[m[2]!.toLowerCase()] : undefined;
  if (!m || !unit || Number(m[1]) < 1) {
    throw new Error(`${what} "${text}" is not valid: write COUNT/UNIT with COUNT >= 1 and UNIT one of s, min, hour, day, week, month (e.g. 60/min)`);
  }
  return { limit: Number(m[1]), unit };
}

export function formatLimit(l: Limit | null | undefined): string {
  return l ? `${l.limit}/${l.unit}` : 'unlimited';
}

/** The window `now` falls in: its id (for the counter), start and end (ms since the epoch). */
export function windowAt(unit: Unit, now: number): { id: string; start: number; end: number } {
  if (unit === 'month') {
    const d = new Date(now);
    const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    const end = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    return { id: `month:${start}`, start, end };
  }
  const size = MS[unit];
  // Weeks start on Monday (the epoch was a Thursday).
  const offset = unit === 'week' ? 3 * 86_400_000 : 0;
  const start = Math.floor((now + offset) / size) * size - offset;
  return { id: `${unit}:${start}`, start, end: start + size };
}

export function windowSeconds(unit: Unit, now: number): number {
  const w = windowAt(unit, now);
  return Math.round((w.end - w.start) / 1000);
}
