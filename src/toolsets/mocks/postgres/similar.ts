/**
 * "Closest recorded request" diagnostics for a replay miss, so the message says what to fix:
 * which mock was nearest and how it differs (the query text, or which parameter).
 */

export interface Closest {
  mock: string;
  difference: string;
}

/** Queries longer than this are compared on their first part only (edit distance is quadratic). */
const MAX_COMPARED = 2000;
const SNIPPET = 24;

/** The recorded query (normalized text → first mock) with the smallest edit distance to `query`. */
export function closestQuery(query: string, recorded: ReadonlyMap<string, string>): Closest | undefined {
  let best: { query: string; mock: string; distance: number } | undefined;
  for (const [candidate, mock] of recorded) {
    const distance = editDistance(query.slice(0, MAX_COMPARED), candidate.slice(0, MAX_COMPARED), best?.distance);
    if (!best || distance < best.distance) best = { query: candidate, mock, distance };
  }
  if (!best) return undefined;
  return { mock: best.mock, difference: describeTextDifference(query, best.query) };
}

/** `query text differs at character 31: "id > $1" here, "id = $1" recorded`. */
export function describeTextDifference(actual: string, recorded: string): string {
  let i = 0;
  while (i < actual.length && i < recorded.length && actual[i] === recorded[i]) i++;
  let a = actual.length;
  let r = recorded.length;
  while (a > i && r > i && actual[a - 1] === recorded[r - 1]) {
    a--;
    r--;
  }
  const from = Math.max(0, i - 8);
  const cut = (s: string, end: number) => s.slice(from, Math.min(end + 8, from + SNIPPET + 16));
  return `query text differs at character ${i + 1}: ${JSON.stringify(cut(actual, a))} here, ${JSON.stringify(cut(recorded, r))} recorded`;
}

/** Among recordings of the same query, the one whose parameters differ least, and the first difference. */
export function parameterDifference(keys: readonly string[], candidates: ReadonlyArray<{ mock: string; keys: readonly string[] }>): Closest | undefined {
  let best: { mock: string; keys: readonly string[]; diffs: number } | undefined;
  for (const c of candidates) {
    const n = Math.max(keys.length, c.keys.length);
    let diffs = 0;
    for (let i = 0; i < n; i++) if (keys[i] !== c.keys[i]) diffs++;
    if (!best || diffs < best.diffs) best = { ...c, diffs };
  }
  if (!best) return undefined;
  if (keys.length !== best.keys.length) {
    return { mock: best.mock, difference: `${keys.length} parameters here, ${best.keys.length} recorded` };
  }
  const i = keys.findIndex((k, j) => k !== best!.keys[j]);
  const more = best.diffs > 1 ? ` (and ${best.diffs - 1} more)` : '';
  return { mock: best.mock, difference: `parameter $${i + 1} is ${short(keys[i]!)} here, ${short(best.keys[i]!)} recorded${more}` };
}

function short(key: string): string {
  return key.length > 60 ? `${key.slice(0, 57)}...` : key;
}

/** Levenshtein distance with one row of memory; stops early once it cannot beat `limit`. */
export function editDistance(a: string, b: string, limit = Infinity): number {
  if (a === b) return 0;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const v = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      row.push(v);
      if (v < rowMin) rowMin = v;
    }
    if (rowMin >= limit) return rowMin;
    prev = row;
  }
  return prev[b.length]!;
}
