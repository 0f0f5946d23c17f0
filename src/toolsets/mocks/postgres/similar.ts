/**
 * "Closest recorded request" diagnostics for a replay miss, so the message says what to fix:
 * which mock was nearest and how it differs (the query text, or which parameter).
 *
 * The work of one miss is bounded whatever the set holds (a miss must not scan every recorded
 * query: 19,000 of them took 200 ms per miss, and a burst of misses held the event loop): the
 * candidates are the recorded queries that share the longest start or the longest end with the
 * missed one (its neighbours in two sorted lists, found by binary search), and each pair is
 * compared on what lies between their common start and end, cut to MAX_COMPARED characters.
 */

export interface Closest {
  mock: string;
  difference: string;
}

/** The differing middles of two queries are compared on this many characters at most (edit distance is quadratic). */
export const MAX_COMPARED = 160;
/** Recorded queries taken on each side of the missed one, in each sorted list. */
export const NEIGHBORS = 8;
/** A query's end, reversed, is sorted on this many characters. */
const TAIL = 256;
const SNIPPET = 24;

interface Entry {
  query: string;
  mock: string;
  /** Recorded order: the first of equally close queries wins. */
  order: number;
}

const byString = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Compares the ends of two queries: their last TAIL characters, read backwards (no reversed copies: building 19,000 took 100 ms). */
function byTail(a: string, b: string): number {
  const n = Math.min(a.length, b.length, TAIL);
  for (let k = 1; k <= n; k++) {
    const d = a.charCodeAt(a.length - k) - b.charCodeAt(b.length - k);
    if (d !== 0) return d;
  }
  return Math.min(a.length, TAIL) - Math.min(b.length, TAIL);
}

/** The recorded queries (normalized text → first mock), sorted from their start and from their end. */
export class QueryNeighbors {
  private forward: Entry[] = [];
  private backward: Entry[] = [];
  private built = -1;

  constructor(private readonly recorded: ReadonlyMap<string, string>) {}

  /** The recorded query with the smallest edit distance to `query` among its neighbours. */
  closest(query: string): Closest | undefined {
    this.build();
    const seen = new Set<Entry>();
    for (const [list, compare] of [
      [this.forward, byString],
      [this.backward, byTail],
    ] as const) {
      const at = lowerBound(list, (e) => compare(e.query, query) < 0);
      for (let i = Math.max(0, at - NEIGHBORS); i < Math.min(list.length, at + NEIGHBORS); i++) seen.add(list[i]!);
    }
    const candidates = [...seen].sort((a, b) => a.order - b.order);
    let best: { entry: Entry; distance: number } | undefined;
    for (const entry of candidates) {
      const distance = boundedDistance(query, entry.query, best?.distance);
      if (!best || distance < best.distance) best = { entry, distance };
    }
    if (!best) return undefined;
    return { mock: best.entry.mock, difference: describeTextDifference(query, best.entry.query) };
  }

  /** Sorts the recorded queries once, and again only after more were recorded. */
  private build(): void {
    if (this.built === this.recorded.size) return;
    let order = 0;
    const entries: Entry[] = [];
    for (const [query, mock] of this.recorded) entries.push({ query, mock, order: order++ });
    this.forward = [...entries].sort((a, b) => byString(a.query, b.query));
    this.backward = entries.sort((a, b) => byTail(a.query, b.query));
    this.built = this.recorded.size;
  }
}

/** The first index of `list` whose entry is not `before` the one looked for (`before` holds on a prefix). */
function lowerBound(list: readonly Entry[], before: (e: Entry) => boolean): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (before(list[mid]!)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The recorded query (normalized text → first mock) nearest to `query` (see QueryNeighbors; build one to ask more than once). */
export function closestQuery(query: string, recorded: ReadonlyMap<string, string>): Closest | undefined {
  return new QueryNeighbors(recorded).closest(query);
}

/**
 * Edit distance of the parts of `a` and `b` between their common start and end (which the
 * distance does not depend on), each cut to MAX_COMPARED characters: exact for queries that
 * differ in fewer than MAX_COMPARED characters, an estimate (plus the length difference) beyond.
 */
export function boundedDistance(a: string, b: string, limit = Infinity): number {
  let start = 0;
  const short = Math.min(a.length, b.length);
  while (start < short && a.charCodeAt(start) === b.charCodeAt(start)) start++;
  let end = 0;
  while (end < short - start && a.charCodeAt(a.length - 1 - end) === b.charCodeAt(b.length - 1 - end)) end++;
  const x = a.slice(start, a.length - end);
  const y = b.slice(start, b.length - end);
  if (x.length <= MAX_COMPARED && y.length <= MAX_COMPARED) return editDistance(x, y, limit);
  // Past the cut, only the difference in length is counted (it is a lower bound of their distance).
  const rest = Math.abs(Math.max(0, x.length - MAX_COMPARED) - Math.max(0, y.length - MAX_COMPARED));
  return editDistance(x.slice(0, MAX_COMPARED), y.slice(0, MAX_COMPARED), limit) + rest;
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

/** Parameter cells (recordings x parameters) compared at most for one miss, and recordings at most. */
export const MAX_PARAMETER_CELLS = 100_000;
export const MAX_PARAMETER_RECORDINGS = 4096;

/**
 * Among recordings of the same query, the one whose parameters differ least, and the first
 * difference; the first MAX_PARAMETER_CELLS / parameters recordings are looked at (at least 16,
 * at most MAX_PARAMETER_RECORDINGS).
 */
export function parameterDifference(keys: readonly string[], candidates: ReadonlyArray<{ mock: string; keys: readonly string[] }>): Closest | undefined {
  let best: { mock: string; keys: readonly string[]; diffs: number } | undefined;
  const most = Math.min(MAX_PARAMETER_RECORDINGS, Math.max(16, Math.floor(MAX_PARAMETER_CELLS / Math.max(1, keys.length))));
  for (let k = 0; k < Math.min(most, candidates.length); k++) {
    const c = candidates[k]!;
    const n = Math.max(keys.length, c.keys.length);
    let diffs = 0;
    for (let i = 0; i < n; i++) if (keys[i] !== c.keys[i]) diffs++;
    if (!best || diffs < best.diffs) best = { ...c, diffs };
    if (diffs === 0) break;
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
  let prev = new Uint32Array(b.length + 1);
  let row = new Uint32Array(b.length + 1);
  for (let j = 0; j <= b.length; j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    row[0] = i;
    let rowMin = i;
    const c = a.charCodeAt(i - 1);
    for (let j = 1; j <= b.length; j++) {
      const v = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (c === b.charCodeAt(j - 1) ? 0 : 1));
      row[j] = v;
      if (v < rowMin) rowMin = v;
    }
    if (rowMin >= limit) return rowMin;
    [prev, row] = [row, prev];
  }
  return prev[b.length]!;
}
