/**
 * JSON bodies compared by structure: object key order never matters, array order does, and keys
 * named in `ignore` (volatile fields such as `timestamp`) are skipped at any depth, as are the
 * given paths and (optionally) two times under a time-like key.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const MAX_JSON_BYTES = 4 * 1024 * 1024;

/** The parsed body when it is a JSON object or array (scalars are compared as bytes), else undefined. */
export function parseJsonBody(bytes: Uint8Array): Json | undefined {
  if (bytes.length === 0 || bytes.length > MAX_JSON_BYTES) return undefined;
  let i = 0;
  while (i < bytes.length && (bytes[i] === 0x20 || bytes[i] === 0x0a || bytes[i] === 0x0d || bytes[i] === 0x09)) i++;
  if (bytes[i] !== 0x7b && bytes[i] !== 0x5b) return undefined; // '{' or '['
  try {
    return JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')) as Json;
  } catch {
    return undefined;
  }
}

/**
 * What a JSON comparison skips: keys by name at any depth (case-insensitive), paths (`$.a.b`,
 * `$.items[*].id`, `$..ts` for a key at any depth), and, with `timeLike`, values that are both
 * times (epoch seconds or milliseconds, ISO 8601) under a time-like key such as `ts` or `createdAt`.
 */
export interface JsonIgnore {
  keys: ReadonlySet<string>;
  paths?: readonly (string | RegExp)[];
  timeLike?: boolean;
}

/**
 * Where two JSON values differ, as `$.a.b[2]: recorded 1, got 2` lines (at most `limit`); an empty
 * list means equal.
 */
export function jsonDifferences(recorded: Json, got: Json, ignore: ReadonlySet<string> | JsonIgnore, limit = 5): string[] {
  const out: string[] = [];
  const rules = ignore instanceof Set ? { keys: ignore as ReadonlySet<string> } : (ignore as JsonIgnore);
  const paths = (rules.paths ?? []).map((p) => (typeof p === 'string' ? compilePath(p) : p));
  walk(recorded, got, '$', { keys: rules.keys, paths, timeLike: rules.timeLike === true }, out, limit);
  return out;
}

interface Rules {
  keys: ReadonlySet<string>;
  paths: RegExp[];
  timeLike: boolean;
}

/** A JSON path (`$.a.b`, `a.b`, `body.a.b`, `items[*].id`, `$..ts`) as a pattern over walk's paths. */
export function compilePath(spec: string): RegExp {
  let p = spec.trim().replace(/^body\./, '');
  if (!p.startsWith('$')) p = `$.${p}`;
  const parts = p
    .slice(1)
    .split(/(\.\.|\.|\[[^\]]*\])/)
    .filter((s) => s !== '');
  let re = '^\\$';
  for (const part of parts) {
    if (part === '.') continue;
    if (part === '..') re += '(?:\\.[^.\\[]+|\\[\\d+\\])*';
    else if (part === '[*]' || part === '[]') re += '\\[\\d+\\]';
    else if (/^\[\d+\]$/.test(part)) re += part.replace(/[[\]]/g, '\\$&');
    else if (part === '*') re += '\\.[^.\\[]+';
    else re += `\\.${part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`;
  }
  return new RegExp(`${re}$`, 'i');
}

const TIME_KEY = /^(ts|t|time|timestamp|date|datetime|now|iat|exp|nbf|epoch|expires|expiry)$|(^|[_-])(ts|time|timestamp|date|at)([_-]?ms)?$|[a-z](At|Time|Ts|Date|Timestamp)(Ms)?$/;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/;

/** Epoch seconds or milliseconds between 2001 and 2100, or an ISO 8601 date-time. */
export function isTimeValue(v: Json): boolean {
  if (typeof v === 'number' || (typeof v === 'string' && /^\d{10}(\.\d+)?$|^\d{13}$/.test(v))) {
    const n = Number(v);
    return (n >= 1e9 && n < 4.2e9) || (n >= 1e12 && n < 4.2e12);
  }
  return typeof v === 'string' && ISO_TIME.test(v);
}

function walk(a: Json, b: Json, path: string, rules: Rules, out: string[], limit: number): void {
  if (out.length >= limit) return;
  if (rules.paths.length > 0 && rules.paths.some((re) => re.test(path))) return;
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) out.push(`${path}: recorded ${a.length} items, got ${b.length}`);
    for (let i = 0; i < Math.min(a.length, b.length); i++) walk(a[i]!, b[i]!, `${path}[${i}]`, rules, out, limit);
    return;
  }
  if (isObject(a) && isObject(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const key of keys) {
      if (rules.keys.has(key.toLowerCase())) continue;
      const sub = `${path}.${key}`;
      if (!(key in b)) out.push(`${sub}: recorded ${preview(a[key]!)}, got nothing`);
      else if (!(key in a)) out.push(`${sub}: not recorded, got ${preview(b[key]!)}`);
      else if (rules.timeLike && a[key] !== b[key] && TIME_KEY.test(key) && isTimeValue(a[key]!) && isTimeValue(b[key]!)) continue;
      else walk(a[key]!, b[key]!, sub, rules, out, limit);
      if (out.length >= limit) return;
    }
    return;
  }
  if (a !== b) out.push(`${path}: recorded ${preview(a)}, got ${preview(b)}`);
}

function isObject(v: Json): v is { [key: string]: Json } {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function preview(v: Json): string {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}
