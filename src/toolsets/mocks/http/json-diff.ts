/**
 * JSON bodies compared by structure: object key order never matters, array order does, and keys
 * named in `ignore` (volatile fields such as `timestamp`) are skipped at any depth.
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
 * Where two JSON values differ, as `$.a.b[2]: recorded 1, got 2` lines (at most `limit`); an empty
 * list means equal.
 */
export function jsonDifferences(recorded: Json, got: Json, ignore: ReadonlySet<string>, limit = 5): string[] {
  const out: string[] = [];
  walk(recorded, got, '$', ignore, out, limit);
  return out;
}

function walk(a: Json, b: Json, path: string, ignore: ReadonlySet<string>, out: string[], limit: number): void {
  if (out.length >= limit) return;
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) out.push(`${path}: recorded ${a.length} items, got ${b.length}`);
    for (let i = 0; i < Math.min(a.length, b.length); i++) walk(a[i]!, b[i]!, `${path}[${i}]`, ignore, out, limit);
    return;
  }
  if (isObject(a) && isObject(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const key of keys) {
      if (ignore.has(key.toLowerCase())) continue;
      const sub = `${path}.${key}`;
      if (!(key in b)) out.push(`${sub}: recorded ${preview(a[key]!)}, got nothing`);
      else if (!(key in a)) out.push(`${sub}: not recorded, got ${preview(b[key]!)}`);
      else walk(a[key]!, b[key]!, sub, ignore, out, limit);
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
