import { DebugkitError } from '../../../core/errors.js';
import { TIMESTAMP } from './types.js';

/**
 * A time as Go's yaml.v3 writes a `time.Time` (RFC 3339, nanosecond digits without trailing
 * zeros, `Z` in UTC else the offset): `2024-08-06T16:26:50.741516528+05:30`. A string is checked
 * and kept as given (so a caller with nanoseconds keeps them).
 */
export function keployTime(t: Date | string, utcOffsetMinutes?: number): string {
  if (typeof t === 'string') {
    if (!TIMESTAMP.test(t)) throw new DebugkitError('INVALID_ARGUMENT', `Invalid timestamp ${JSON.stringify(t)}`);
    return t;
  }
  if (!(t instanceof Date) || Number.isNaN(t.getTime())) throw new DebugkitError('INVALID_ARGUMENT', 'Invalid Date');
  const offset = utcOffsetMinutes ?? -t.getTimezoneOffset();
  // Whole milliseconds, as toISOString shows them (a fractional offset must not leak digits).
  const local = Math.trunc(t.getTime() + offset * 60_000);
  // Recording writes two times per request, mostly within the same second: the text up to the
  // second is made once per second (and the zone once per offset) instead of for every time.
  if (local < YEAR_0 || local >= YEAR_10000) return slowKeployTime(local, offset);
  const second = Math.floor(local / 1000);
  if (second !== lastSecond.second) lastSecond = { second, text: new Date(second * 1000).toISOString().slice(0, 19) };
  let millis = local - second * 1000;
  let digits = 3;
  if (millis === 0) return lastSecond.text + zoneText(offset);
  while (millis % 10 === 0) {
    millis /= 10;
    digits--;
  }
  return `${lastSecond.text}.${String(millis).padStart(digits, '0')}${zoneText(offset)}`;
}

/** Where toISOString leaves its 4-digit years (the shortcut above relies on their fixed width). */
const YEAR_0 = -62_167_219_200_000; // 0000-01-01T00:00:00Z
const YEAR_10000 = 253_402_300_800_000; // 10000-01-01T00:00:00Z
let lastSecond = { second: NaN, text: '' };
let lastZone = { offset: NaN, text: '' };

/** `Z`, or `+05:30` / `-04:00`. */
function zoneText(offset: number): string {
  if (offset !== lastZone.offset) {
    const text = offset === 0 ? 'Z' : `${offset > 0 ? '+' : '-'}${String(Math.floor(Math.abs(offset) / 60)).padStart(2, '0')}:${String(Math.abs(offset) % 60).padStart(2, '0')}`;
    lastZone = { offset, text };
  }
  return lastZone.text;
}

/** keployTime's general path: the ISO text of the shifted time, milliseconds without trailing zeros. */
function slowKeployTime(local: number, offset: number): string {
  const iso = new Date(local).toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ, shifted into the zone
  let msEnd = 23;
  while (msEnd > 20 && iso.charCodeAt(msEnd - 1) === 48 /* 0 */) msEnd--;
  return `${iso.slice(0, 19)}${msEnd > 20 ? `.${iso.slice(20, msEnd)}` : ''}${zoneText(offset)}`;
}
