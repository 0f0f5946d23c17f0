import { createHash } from 'node:crypto';
import { TimeSlice } from '../../../core/wait.js';
import { bodyBytes } from './keploy.js';
import type { HttpMock } from '../keploy/types.js';
import { exactUtf8 } from '../keploy/utf8.js';
import { compilePath, firstInvalidUtf8, jsonDifferenceSteps, jsonRefusal, parseJsonBody, preview, type Json, type JsonIgnore } from './json-diff.js';
import type { Header } from './wire.js';
import { hostPort, splitUrl, type Scheme } from './url.js';

/**
 * Finds the recorded answer to a request. A mock matches when method, host, path, query (as a
 * multiset: parameter order is free), the non-volatile headers and the body agree:
 * 1. exact: the body bytes are equal;
 * 2. json: both bodies are JSON and equal as structures (key order free, volatile fields skipped);
 * 3. size: a body not kept in full on one side (over the recording's or the replay's limit) is
 *    compared by its SHA-256 (the request's taken as it arrived, the mock's `body_sha256`), which
 *    counts as exact; when the recording kept neither the body nor its digest (Keploy's own sets)
 *    only the sizes can agree, a match of its own kind, last in preference, that the caller reports
 *    as unverified.
 * Anything else is a miss; the closest mock is then named with its differences, to explain the
 * miss (never to answer it): the best scored of those with the request's method and path and of
 * the mocks of the CLOSEST_KEYS method+path pairs nearest to it in sorted order (by method then
 * path, and by path then method), so a miss costs the same against 19,000 mocks as against 20
 * (scoring every mock took 130 ms per miss there).
 *
 * Use: a mock answers once; among several matches the first unused one in recorded order wins
 * (exact before json). When a request repeats more often than it was recorded, the LAST recorded
 * match answers again (`reuse: 'last'`, the default): a poll recorded as "pending, done" replays
 * "pending, done, done, ...". `reuse: 'none'` makes the extra repeats misses.
 */

/** Headers that never decide a match (lower case; `*` ends a prefix). */
export const VOLATILE_HEADERS: readonly string[] = [
  // framing and hop-by-hop (the body is compared itself; Host is compared as the URL's host)
  'host',
  'content-length',
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  // differ between runs or library versions without changing the answer
  'date',
  'user-agent',
  'accept-encoding',
  'x-amz-date',
  'x-amz-user-agent',
  'amz-sdk-invocation-id',
  'amz-sdk-request',
  'x-amz-content-sha256',
  'idempotency-key',
  'x-stainless-*',
  // tracing and correlation ids
  'traceparent',
  'tracestate',
  'baggage',
  'sentry-trace',
  'x-request-id',
  'x-correlation-id',
  'request-id',
  'x-amzn-trace-id',
  'x-cloud-trace-context',
  'uber-trace-id',
  'b3',
  'x-b3-*',
  'x-datadog-*',
  'keploy-test-id',
  'keploy-test-set-id',
];

/** Query parameters of presigned URLs (AWS SigV4) that change with the time of signing. */
export const VOLATILE_QUERY: readonly string[] = ['x-amz-date', 'x-amz-signature', 'x-amz-credential', 'x-amz-security-token'];

/** JSON body fields skipped at any depth (case-insensitive). Deliberately short: ids can matter. */
export const VOLATILE_JSON_FIELDS: readonly string[] = ['timestamp', 'requestId', 'request_id', 'traceId', 'trace_id', 'spanId', 'span_id'];

export interface MatcherOptions {
  /** More headers to ignore (added to VOLATILE_HEADERS). */
  ignoreHeaders?: readonly string[];
  /** More query parameters to ignore (added to VOLATILE_QUERY). */
  ignoreQuery?: readonly string[];
  /** JSON fields to ignore; REPLACES VOLATILE_JSON_FIELDS (pass [] to compare every field). */
  ignoreJsonFields?: readonly string[];
  /** JSON paths to ignore in bodies (`$.data.ts`, `items[*].id`, `$..nonce`). */
  ignoreJsonPaths?: readonly string[];
  /** Two times (epoch s/ms, ISO 8601) under a time-like key (`ts`, `createdAt`) are equal (default true). */
  ignoreTimes?: boolean;
  reuse?: 'last' | 'none';
}

export interface MatchRequest {
  method: string;
  /** The request target (`/path?query`) or a full URL. */
  url: string;
  /** Default `http`. */
  scheme?: Scheme;
  /** The authority the request went to (Host header, else the connection's target). */
  host?: string;
  headers: readonly Header[];
  body: Uint8Array;
  /** The whole body length when `body` holds only part of it. */
  bodyLength?: number;
  /** With `bodyLength`: the SHA-256 of the whole body (hex), so that it can be compared. */
  bodySha256?: string;
}

/** How a mock matched: bytes (or SHA-256 digests) equal, JSON equal, or only the body sizes known equal (not verified). */
export type MatchHow = 'exact' | 'json' | 'size';

export type MatchResult = { miss: false; mock: HttpMock; index: number; how: MatchHow; reused: boolean } | { miss: true; closest?: { name: string; index: number; differences: string[] } };

interface Prepared {
  method: string;
  hostPort?: string;
  path: string;
  query: Map<string, string[]>;
  headers: Map<string, string>;
  body: Uint8Array;
  bodySize: number;
  /** Only the size of the body is known (recorded with `body_skipped`, or received too long). */
  bodyPartial: boolean;
  /** The SHA-256 of the whole body (hex): given for a partial one when known, computed for a whole one when needed. */
  sha256?: string;
  json?: Json | null; // null: not JSON; undefined: not parsed yet
}

interface Comparison {
  differences: string[];
  score: number;
  how?: MatchHow;
}

/** A match (`matchInTurn`) goes on for this long (ms) before it lets the event loop take a turn. */
export const SLICE_MS = 10;

export class HttpMatcher {
  /** The matches asked for with `matchInTurn` so far, run one after the other, and the slice of the event loop they share. */
  private turn: Promise<unknown> = Promise.resolve();
  private readonly slice = new TimeSlice(SLICE_MS);
  /** The mocks prepared so far (all of them once `build` has run; see `buildFor`). */
  private readonly prepared: Prepared[] = [];
  private readonly used: boolean[];
  private readonly ignoreHeader: (name: string) => boolean;
  private readonly ignoreQuery: Set<string>;
  private readonly ignoreJson: JsonIgnore;

  readonly mocks: readonly HttpMock[];
  /** Mock indexes by method and path, in recorded order. */
  private readonly byKey = new Map<string, number[]>();
  /** The keys of byKey sorted by method then path, and by path then method (built on a miss, again after `add`). */
  private sortedKeys: { byMethod: string[]; byPath: Array<[string, string]> } | undefined;

  constructor(
    mocks: readonly HttpMock[],
    private readonly options: MatcherOptions = {},
  ) {
    this.ignoreHeader = headerFilter([...VOLATILE_HEADERS, ...(options.ignoreHeaders ?? [])]);
    this.ignoreQuery = new Set([...VOLATILE_QUERY, ...(options.ignoreQuery ?? [])].map((q) => q.toLowerCase()));
    this.ignoreJson = {
      keys: new Set((options.ignoreJsonFields ?? VOLATILE_JSON_FIELDS).map((f) => f.toLowerCase())),
      paths: (options.ignoreJsonPaths ?? []).map(compilePath),
      timeLike: options.ignoreTimes !== false,
    };
    this.mocks = [...mocks];
    this.used = this.mocks.map(() => false);
  }

  /** Prepares every mock not prepared yet (the first match does it otherwise). */
  build(): void {
    this.buildUntil(() => false);
  }

  /** Prepares mocks until `late()` (19,000 take 200 ms); true once all are. */
  private buildUntil(late: () => boolean): boolean {
    while (this.prepared.length < this.mocks.length) {
      const i = this.prepared.length;
      const p = this.prepareMock(this.mocks[i]!);
      this.prepared.push(p);
      const key = keyOf(p.method, p.path);
      const list = this.byKey.get(key);
      if (list) list.push(i);
      else this.byKey.set(key, [i]);
      if (late()) return this.prepared.length === this.mocks.length;
    }
    return true;
  }

  match(request: MatchRequest): MatchResult {
    this.build();
    const steps = this.steps(request);
    for (;;) {
      const step = steps.next();
      if (step.done) return step.value;
    }
  }

  /**
   * The same match, giving the event loop a turn whenever `slice` is spent:
   * thousands of recorded mocks with the request's method and path (one GraphQL endpoint) take
   * 100 ms and more to compare (and preparing 19,000 mocks, done by the first match, 200 ms), and
   * so does one JSON body of a few MiB (compared in steps of STEP_NODES values).
   * Matches must not overlap: the caller runs one at a time.
   */
  async matchSliced(request: MatchRequest, slice: TimeSlice): Promise<MatchResult> {
    while (!this.buildUntil(() => slice.over())) await slice.pause();
    const steps = this.steps(request);
    for (;;) {
      const step = steps.next();
      if (step.done) return step.value;
      await slice.pause();
    }
  }

  /**
   * `matchSliced` after the matches asked for before it (by every replayer using this matcher: the
   * HTTP/1 one, or each HTTP/2 connection), in slices of SLICE_MS shared by them all: on a later
   * turn of the event loop once the one before has run SLICE_MS.
   */
  matchInTurn(request: MatchRequest): Promise<MatchResult> {
    const result = this.turn.then(async () => {
      await this.slice.pause();
      return this.matchSliced(request, this.slice);
    });
    this.turn = result.catch(() => undefined);
    return result;
  }

  /** The match, a step per mock compared (and per STEP_NODES values of a JSON body, per body parsed). */
  private *steps(request: MatchRequest): Generator<void, MatchResult> {
    const req = this.prepareRequest(request);
    // Only mocks with the request's method and path can match: compare those, in recorded order,
    // and only as far as needed (the first unused exact match wins at once).
    const candidates = this.byKey.get(keyOf(req.method, req.path)) ?? [];
    const results = new Map<number, Comparison>();
    // The first json match, else the first matched by size only (exact ones answer at once).
    let json: number | undefined;
    let size: number | undefined;
    for (const i of candidates) {
      if (this.used[i]) continue;
      const how = (yield* this.compared(results, i, req)).how;
      yield;
      if (how === 'exact') return this.use(i, 'exact', false);
      if (how === 'json') json ??= i;
      if (how === 'size') size ??= i;
    }
    if (json !== undefined) return this.use(json, 'json', false);
    if (size !== undefined) return this.use(size, 'size', false);
    if (this.options.reuse !== 'none') {
      // Repeated more often than recorded: the last recorded match answers again.
      let lastJson: number | undefined;
      let lastSize: number | undefined;
      for (let k = candidates.length - 1; k >= 0; k--) {
        const i = candidates[k]!;
        if (!this.used[i]) continue;
        const how = (yield* this.compared(results, i, req)).how;
        yield;
        if (how === 'exact') return this.use(i, 'exact', true);
        if (how === 'json') lastJson ??= i;
        if (how === 'size') lastSize ??= i;
      }
      if (lastJson !== undefined) return this.use(lastJson, 'json', true);
      if (lastSize !== undefined) return this.use(lastSize, 'size', true);
    }
    // A miss: the nearest mocks are scored, to name the closest one and how it differs.
    for (const i of this.nearby(req)) {
      yield* this.compared(results, i, req);
      yield;
    }
    return { miss: true, closest: this.closest(results) };
  }

  /** Mock `i` compared with the request, once per match (`results` keeps what was). */
  private *compared(results: Map<number, Comparison>, i: number, req: Prepared): Generator<void, Comparison> {
    let r = results.get(i);
    if (!r) results.set(i, (r = yield* this.compare(this.prepared[i]!, req)));
    return r;
  }

  /** The first CLOSEST_PER_KEY mocks of each of the CLOSEST_KEYS keys nearest to the request's, both ways. */
  private nearby(req: Prepared): number[] {
    if (!this.sortedKeys) {
      const keys = [...this.byKey.keys()];
      const byPath = keys.map((k): [string, string] => [pathFirst(k), k]).sort((a, b) => byString(a[0], b[0]));
      this.sortedKeys = { byMethod: keys.sort(byString), byPath };
    }
    const { byMethod, byPath } = this.sortedKeys;
    const near = new Set<string>();
    const around = (at: number, length: number, key: (i: number) => string) => {
      for (let i = Math.max(0, at - CLOSEST_KEYS); i < Math.min(length, at + CLOSEST_KEYS); i++) near.add(key(i));
    };
    const key = keyOf(req.method, req.path);
    around(
      lowerBound(byMethod.length, (i) => byMethod[i]! < key),
      byMethod.length,
      (i) => byMethod[i]!,
    );
    const flipped = pathFirst(key);
    around(
      lowerBound(byPath.length, (i) => byPath[i]![0] < flipped),
      byPath.length,
      (i) => byPath[i]![1],
    );
    return [...near].flatMap((k) => this.byKey.get(k)!.slice(0, CLOSEST_PER_KEY));
  }

  private use(index: number, how: MatchHow, reused: boolean): MatchResult {
    this.used[index] = true;
    return { miss: false, mock: this.mocks[index]!, index, how, reused };
  }

  /** Adds a mock (recorded during replay, `onMiss: record`); it can answer the next requests. */
  add(mock: HttpMock): number {
    this.build();
    const index = this.prepared.length;
    (this.mocks as HttpMock[]).push(mock);
    const prepared = this.prepareMock(mock);
    this.prepared.push(prepared);
    this.used.push(true);
    const key = keyOf(prepared.method, prepared.path);
    const list = this.byKey.get(key);
    if (list) list.push(index);
    else {
      this.byKey.set(key, [index]);
      this.sortedKeys = undefined;
    }
    return index;
  }

  /** How many mocks have answered at least once. */
  get usedCount(): number {
    return this.used.filter(Boolean).length;
  }

  /** The lowest score, the first recorded of equal ones. */
  private closest(results: Map<number, Comparison>): { name: string; index: number; differences: string[] } | undefined {
    let best = -1;
    for (const [i, r] of results) {
      const b = results.get(best);
      if (!b || r.score < b.score || (r.score === b.score && i < best)) best = i;
    }
    if (best < 0) return undefined;
    return { name: this.mocks[best]!.name, index: best, differences: results.get(best)!.differences };
  }

  private *compare(mock: Prepared, req: Prepared): Generator<void, Comparison> {
    const diffs: string[] = [];
    let score = 0;
    const note = (weight: number, text: string) => {
      diffs.push(text);
      score += weight;
    };
    if (mock.method !== req.method) note(100, `method: recorded ${mock.method}, got ${req.method}`);
    if (!sameHost(mock.hostPort, req.hostPort)) note(60, `host: recorded ${mock.hostPort}, got ${req.hostPort}`);
    if (mock.path !== req.path) note(50, `path: recorded ${mock.path}, got ${req.path}`);
    for (const d of mapDifferences(mock.query, req.query, 'query parameter')) note(10, d);
    for (const d of mapDifferences(mapOfOne(mock.headers), mapOfOne(req.headers), 'header')) note(5, d);
    const body = yield* this.compareBodies(mock, req);
    for (const d of body.differences) note(20, d);
    return { differences: diffs, score, how: diffs.length === 0 ? body.how : undefined };
  }

  private *compareBodies(mock: Prepared, req: Prepared): Generator<void, { differences: string[]; how?: MatchHow }> {
    if (mock.bodyPartial || req.bodyPartial) {
      // One side holds only part of its body (or none): sizes, then SHA-256 digests when both are known.
      if (mock.bodySize !== req.bodySize) return { differences: [`body: recorded ${mock.bodySize} bytes, got ${req.bodySize}`] };
      const recorded = sha256Of(mock);
      const got = sha256Of(req);
      yield;
      if (recorded === undefined || got === undefined) return { differences: [], how: 'size' };
      if (recorded === got) return { differences: [], how: 'exact' };
      return { differences: [`body: ${req.bodySize} bytes as recorded, but not the same bytes (SHA-256 differs; a body over the size kept is compared by its digest)`] };
    }
    if (Buffer.compare(mock.body, req.body) === 0) return { differences: [], how: 'exact' };
    // Each body is parsed once (the request's for all the mocks it is compared with), in a step of its own.
    if (mock.json === undefined) {
      this.json(mock);
      yield;
    }
    if (req.json === undefined) {
      this.json(req);
      yield;
    }
    const a = this.json(mock);
    const b = this.json(req);
    if (a !== null && b !== null) {
      const diffs = yield* jsonDifferenceSteps(a, b, this.ignoreJson);
      return diffs.length === 0 ? { differences: [], how: 'json' } : { differences: diffs.map((d) => `body ${d}`) };
    }
    // A body nested too deep to be parsed was compared as bytes: the line says which and why.
    const refused = jsonRefusal(mock.body) !== undefined ? 'the recorded body' : jsonRefusal(req.body) !== undefined ? 'the request body' : undefined;
    const why = refused ? `; compared as bytes, not as JSON: ${refused} is ${jsonRefusal(mock.body) ?? jsonRefusal(req.body)}` : '';
    return { differences: [`body: recorded ${describeBody(mock.body)}, got ${describeBody(req.body)}${why}`] };
  }

  private json(p: Prepared): Json | null {
    if (p.json === undefined) p.json = parseJsonBody(p.body) ?? null;
    return p.json;
  }

  private prepareMock(mock: HttpMock): Prepared {
    const { req, metadata } = mock.spec;
    const url = splitUrl(req.url, metadata.host);
    const body = bodyBytes(req.body);
    const skipped = req.extra?.body_skipped === true;
    const size = skipped && typeof req.extra?.body_size === 'number' ? req.extra.body_size : body.length;
    const digest = req.extra?.body_sha256;
    return {
      method: req.method,
      hostPort: url.hostPort,
      path: url.path,
      query: this.queryOf(url.query),
      headers: this.headersOf(Object.entries(req.header)),
      body,
      bodySize: size,
      bodyPartial: skipped,
      ...(skipped && typeof digest === 'string' && SHA256_HEX.test(digest) ? { sha256: digest.toLowerCase() } : {}),
    };
  }

  private prepareRequest(r: MatchRequest): Prepared {
    const scheme = r.scheme ?? 'http';
    const url = splitUrl(r.url, r.host, scheme);
    const size = r.bodyLength ?? r.body.length;
    return {
      method: r.method,
      hostPort: url.hostPort ?? (r.host ? hostPort(r.host, scheme) : undefined),
      path: url.path,
      query: this.queryOf(url.query),
      headers: this.headersOf(r.headers),
      body: r.body,
      bodySize: size,
      bodyPartial: size > r.body.length,
      ...(size > r.body.length && r.bodySha256 !== undefined ? { sha256: r.bodySha256.toLowerCase() } : {}),
    };
  }

  private queryOf(query: string): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const [k, v] of queryPairs(query)) {
      if (this.ignoreQuery.has(k.toLowerCase())) continue;
      // Appended in place: copying the list for each repeat made `a=1&a=1&...` quadratic.
      const list = out.get(k);
      if (list) list.push(v);
      else out.set(k, [v]);
    }
    for (const list of out.values()) list.sort();
    return out;
  }

  /** Lower-case names, repeated values joined with ",", items trimmed (Keploy's "a,b" equals "a, b"). */
  private headersOf(pairs: Iterable<readonly [string, string]>): Map<string, string> {
    const out = new Map<string, string>();
    for (const [rawName, rawValue] of pairs) {
      const name = rawName.toLowerCase();
      if (this.ignoreHeader(name)) continue;
      const value = normalizeValue(name, rawValue);
      // RFC 9110 12.5.1: no Accept means any media type, so `*/*` (curl's default) equals none.
      if (name === 'accept' && value === '*/*') continue;
      const prev = out.get(name);
      out.set(name, prev === undefined ? value : `${prev},${value}`);
    }
    return out;
  }
}

const SHA256_HEX = /^[0-9a-fA-F]{64}$/;

/** The report's line for a call answered from a mock matched by its request body's size only (`how: 'size'`). */
export function sizeOnlyLine(call: string, mock: string, bodySize: number): string {
  return `${call}: ${mock}: the request body (${bodySize} bytes) matched by its size only: the recording kept neither the body nor its SHA-256 (body_sha256)`;
}

/** The SHA-256 of a body: as given for a partial one (undefined when unknown), computed once for a whole one. */
function sha256Of(p: Prepared): string | undefined {
  if (p.sha256 === undefined && !p.bodyPartial) p.sha256 = createHash('sha256').update(p.body).digest('hex');
  return p.sha256;
}

/** Keys taken on each side of a missed request's, in each sorted list, and mocks taken of each key. */
const CLOSEST_KEYS = 8;
const CLOSEST_PER_KEY = 4;

function keyOf(method: string, path: string): string {
  return `${method} ${path}`;
}

/** `GET /a` as `/a GET` (a method has no blank). */
function pathFirst(key: string): string {
  const blank = key.indexOf(' ');
  return `${key.slice(blank + 1)} ${key.slice(0, blank)}`;
}

const byString = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The first i in [0, length) where `before(i)` is false (it is true on a prefix). */
function lowerBound(length: number, before: (i: number) => boolean): number {
  let lo = 0;
  let hi = length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (before(mid)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function headerFilter(patterns: readonly string[]): (name: string) => boolean {
  const exact = new Set(patterns.filter((p) => !p.endsWith('*')).map((p) => p.toLowerCase()));
  const prefixes = patterns.filter((p) => p.endsWith('*')).map((p) => p.slice(0, -1).toLowerCase());
  return (name) => exact.has(name) || prefixes.some((p) => name.startsWith(p));
}

// A header value as compared: comma-separated items trimmed; Content-Type lower case without
// blanks around `;`; an AWS SigV4 Authorization without its date and signature. Every step is
// linear in the value, a mock's or a request's text (the regexes `\s*;\s*` and
// `(Credential=[^/]*\/)\d{8}` were quadratic on blanks without `;` and on repeated `Credential=`
// without `/`).
export function normalizeValue(name: string, value: string): string {
  let v = value
    .split(',')
    .map((s) => s.trim())
    .join(',');
  if (name === 'content-type') v = blanksAroundSemicolons(v.toLowerCase());
  // AWS SigV4 signs the time: the credential scope date and the signature change on every run.
  if (name === 'authorization' && v.startsWith('AWS4-')) v = credentialDate(v).replace(/Signature=[0-9a-f]+/, 'Signature=*');
  return v;
}

// `v.replace(/\s*;\s*/g, ';')` in one pass: a maximal run of blanks (`\s`) goes when a `;` is
// right before or right after it. (`/\s+/g` only ever matches whole runs: no backtracking.)
function blanksAroundSemicolons(v: string): string {
  if (!v.includes(';')) return v;
  return v.replace(/\s+/g, (run: string, at: number) => (v[at - 1] === ';' || v[at + run.length] === ';' ? '' : run));
}

// `v.replace(/(Credential=[^/]*\/)\d{8}/, '$1*')` by scanning: at an occurrence of `Credential=`
// the regex can only take the first `/` after it, so a match is that `/` followed by 8 digits.
// When it is not, no occurrence before that `/` can match either (they reach the same `/`), and
// none contains a `/`: the search resumes after it. Each character is looked at a bounded number of times.
function credentialDate(v: string): string {
  const key = 'Credential=';
  let from = 0;
  for (;;) {
    const at = v.indexOf(key, from);
    if (at < 0) return v;
    const slash = v.indexOf('/', at + key.length);
    if (slash < 0) return v;
    if (eightDigits(v, slash + 1)) return `${v.slice(0, slash + 1)}*${v.slice(slash + 9)}`;
    from = slash + 1;
  }
}

function eightDigits(v: string, at: number): boolean {
  if (at + 8 > v.length) return false;
  for (let i = at; i < at + 8; i++) {
    const c = v.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

/** Hosts compare with ports when both sides know theirs. */
function sameHost(a: string | undefined, b: string | undefined): boolean {
  if (a === undefined || b === undefined) return true;
  if (a === b) return true;
  const bare = (h: string) => h.replace(/:\d+$/, '');
  const hasPort = (h: string) => /\]:\d+$|^[^\][]*:\d+$/.test(h);
  return !(hasPort(a) && hasPort(b)) && bare(a) === bare(b);
}

function mapOfOne(m: Map<string, string>): Map<string, string[]> {
  return new Map([...m].map(([k, v]) => [k, [v]]));
}

/** Credentials are named in differences but never shown: a miss report goes to the program and the agent. */
const SECRET = /authorization|cookie|token|secret|password|api-?key|signature|credential/i;

function mapDifferences(recorded: Map<string, string[]>, got: Map<string, string[]>, what: string): string[] {
  const out: string[] = [];
  // Only query names and values carry the marks of bytes that are not UTF-8 (see NOT_UTF8).
  const query = what === 'query parameter';
  const shownText = (v: string) => (query ? shownQueryText(v) : v);
  const bytesNote = (a: string[] | undefined, b: string[] | undefined) => (query ? queryBytesNote(a, b) : '');
  const show = (v: string[] | undefined) => (v === undefined ? 'nothing' : preview(v.length === 1 ? shownText(v[0]!) : v.map(shownText)));
  for (const key of new Set([...recorded.keys(), ...got.keys()])) {
    const a = recorded.get(key);
    const b = got.get(key);
    // Value by value: joined with NUL, `a=x%00y` and `a=x&a=y` were the same list.
    if (a !== undefined && b !== undefined && a.length === b.length && a.every((v, i) => v === b[i])) continue;
    const name = shownText(key);
    if (SECRET.test(name) && a && b) out.push(`${what} ${name}: differs (value hidden)${bytesNote(a, b)}`);
    else out.push(`${what} ${name}: recorded ${SECRET.test(name) && a ? '(hidden)' : show(a)}, got ${SECRET.test(name) && b ? '(hidden)' : show(b)}${bytesNote(a, b)}`);
  }
  return out;
}

/**
 * Query names and values are compared as URLSearchParams reads them (`&`-separated, `+` a blank,
 * percent-decoded, then UTF-8), except where that loses bytes: URLSearchParams turns bytes that are
 * not UTF-8 into U+FFFD, so `%FF`, `%FE` and `%EF%BF%BD` were equal (attack l1-1). Such a name or
 * value is kept as its bytes instead, marked NOT_UTF8 and written with every byte that is not
 * printable ASCII (and `%`) as `%XX` (`%ff` and `%FF` are the same byte); text that is not
 * well-formed (a lone surrogate, which has no UTF-8 bytes) is kept as written, marked ILL_FORMED.
 * Decoded text is always well-formed, so it never begins with either mark (lone low surrogates).
 */
const NOT_UTF8 = '\udc00';
const ILL_FORMED = '\udc01';

/** The pairs of a query (without `?`), names and values decoded as `queryText` says. */
function queryPairs(query: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  // URLSearchParams drops one leading `?` (`??a=1` has the name `a`).
  for (const piece of (query.startsWith('?') ? query.slice(1) : query).split('&')) {
    if (piece === '') continue;
    const eq = piece.indexOf('=');
    out.push(eq < 0 ? [queryText(piece), ''] : [queryText(piece.slice(0, eq)), queryText(piece.slice(eq + 1))]);
  }
  return out;
}

/** One name or value of a query decoded: as URLSearchParams does when no bytes are lost, else marked (see NOT_UTF8). */
function queryText(raw: string): string {
  const text = raw.includes('+') ? raw.replaceAll('+', ' ') : raw;
  if (!wellFormed(text)) return ILL_FORMED + text;
  if (!text.includes('%')) return text;
  const src = Buffer.from(text, 'utf8');
  const bytes = Buffer.allocUnsafe(src.length);
  let n = 0;
  for (let i = 0; i < src.length; i++) {
    const hi = src[i] === 0x25 && i + 2 < src.length ? hexValue(src[i + 1]!) : -1;
    const lo = hi >= 0 ? hexValue(src[i + 2]!) : -1;
    if (lo >= 0) {
      bytes[n++] = hi * 16 + lo;
      i += 2;
    } else bytes[n++] = src[i]!;
  }
  const decoded = bytes.subarray(0, n);
  const utf8 = exactUtf8(decoded);
  if (utf8 !== undefined) return utf8;
  let marked = NOT_UTF8;
  for (const b of decoded) marked += b >= 0x21 && b <= 0x7e && b !== 0x25 ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  return marked;
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  return -1;
}

/** No lone surrogate in `s` (String.prototype.isWellFormed, not in this build's ES2023 library). */
function wellFormed(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    if (c > 0xdbff) return false;
    const next = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
    if (next < 0xdc00 || next > 0xdfff) return false;
    i++;
  }
  return true;
}

/** A query name or value as a difference shows it: marked ones as written (`%FF`). */
function shownQueryText(v: string): string {
  return v.startsWith(NOT_UTF8) || v.startsWith(ILL_FORMED) ? v.slice(1) : v;
}

/** What a difference adds when one side's value was compared as bytes. */
function queryBytesNote(a: string[] | undefined, b: string[] | undefined): string {
  const marked = (v: string[] | undefined) => v?.some((x) => x.startsWith(NOT_UTF8) || x.startsWith(ILL_FORMED)) === true;
  return marked(a) || marked(b) ? ' (not UTF-8 once percent-decoded: compared as bytes, not as text)' : '';
}

function describeBody(b: Uint8Array): string {
  if (b.length === 0) return 'no body';
  // Bytes that are not UTF-8 are shown as `\xFF`: as U+FFFD, `\xff` and `\xfe` looked the same.
  const head = Buffer.from(b.buffer, b.byteOffset, Math.min(b.byteLength, 40));
  let text = '';
  for (let i = 0; i < head.length;) {
    const bad = i + firstInvalidUtf8(head.subarray(i));
    text += JSON.stringify(head.toString('utf8', i, bad)).slice(1, -1);
    if (bad < head.length) text += `\\x${head[bad]!.toString(16).toUpperCase().padStart(2, '0')}`;
    i = bad + 1;
  }
  return `${b.length} bytes "${text}"${b.length > 40 ? '...' : ''}`;
}
