/**
 * JSON bodies compared by structure: object key order never matters, array order does, and keys
 * named in `ignore` (volatile fields such as `timestamp`) are skipped at any depth, as are the
 * given paths and (optionally) two times under a time-like key.
 *
 * The comparison is a walk with its own stack (a body nested 100,000 deep is compared like any
 * other: the call stack does not grow with the body), done in steps of STEP_NODES nodes: a caller
 * on the event loop gives it a turn between steps (`jsonDifferenceSteps`), since a body of 4 MiB
 * holds two million values, or an object of 400,000 keys. Two objects are compared key by key in
 * the same steps: `a`'s keys, then `b`'s (a membership test in the other object each), with no
 * list of both built first. A value's path is written out only for a difference it reports;
 * ignored paths are followed segment by segment as the walk goes down (a set of positions in the
 * rules, shared by the values that reach it the same way), not matched as text at every value.
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
 * `$.items[*].id`, `$..ts` for a key at any depth; see `compilePath`), and, with `timeLike`,
 * values that are both times (epoch seconds or milliseconds, ISO 8601) under a time-like key such
 * as `ts` or `createdAt`.
 */
export interface JsonIgnore {
  keys: ReadonlySet<string>;
  paths?: readonly (string | CompiledPath)[];
  timeLike?: boolean;
}

/** Values compared (or object keys gone through) between two steps of `jsonDifferenceSteps`. */
export const STEP_NODES = 1024;

/**
 * Where two JSON values differ, as `$.a.b[2]: recorded 1, got 2` lines (at most `limit`); an empty
 * list means equal. In one go: on the event loop, use `jsonDifferenceSteps`.
 */
export function jsonDifferences(recorded: Json, got: Json, ignore: ReadonlySet<string> | JsonIgnore, limit = 5): string[] {
  const steps = jsonDifferenceSteps(recorded, got, ignore, limit);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * The same comparison, yielding after every STEP_NODES values compared or keys gone through (the
 * caller's chance to give the event loop a turn); an object's key list, taken in one native call,
 * ends the step it is taken in.
 */
export function* jsonDifferenceSteps(recorded: Json, got: Json, ignore: ReadonlySet<string> | JsonIgnore, limit = 5): Generator<void, string[]> {
  const rules = ignore instanceof Set ? { keys: ignore as ReadonlySet<string> } : (ignore as JsonIgnore);
  const paths = pathRulesOf(rules);
  const keys = rules.keys;
  const timeLike = rules.timeLike === true;
  const out: string[] = [];
  const stack: Frame[] = [];

  // Work done since the last yield: a value compared, a key gone through, or a key listed.
  let work = 0;
  // An object's key list, taken in one native call: about 100 ms for 300,000 keys, so a long list
  // ends the step it is taken in.
  const keysOf = (o: { [key: string]: Json }) => {
    const list = Object.keys(o);
    work += list.length;
    return list;
  };

  // Compares two values at `at` (its parent frame and its segment there): a difference is reported,
  // two arrays or two objects are pushed to be compared value by value.
  const visit = (a: Json, b: Json, states: States, parent: Frame | undefined, segment: string | number | undefined) => {
    if (states.accept) return;
    if (Array.isArray(a) && Array.isArray(b)) {
      const frame: Frame = { a, b, states, parent, segment, side: undefined, keys: undefined, next: 0, end: Math.min(a.length, b.length) };
      if (a.length !== b.length) out.push(`${pathOf(frame)}: recorded ${a.length} items, got ${b.length}`);
      stack.push(frame);
      return;
    }
    if (isObject(a) && isObject(b)) {
      // The keys of `a` are gone through, then those of `b` (listed when `a`'s are done).
      const list = keysOf(a);
      stack.push({ a, b, states, parent, segment, side: 'a', keys: list, next: 0, end: list.length });
      return;
    }
    if (a !== b) out.push(`${pathAt(parent, segment)}: recorded ${preview(a)}, got ${preview(b)}`);
  };

  visit(recorded, got, paths.root, undefined, undefined);
  while (stack.length > 0 && out.length < limit) {
    if (++work > STEP_NODES) {
      work = 1;
      yield;
    }
    const frame = stack[stack.length - 1]!;
    if (frame.next >= frame.end) {
      if (frame.side === 'a') {
        frame.side = 'b';
        frame.keys = keysOf(frame.b as { [key: string]: Json });
        frame.next = 0;
        frame.end = frame.keys.length;
      } else stack.pop();
      continue;
    }
    const i = frame.next++;
    if (frame.side === undefined) {
      const a = frame.a as Json[];
      const b = frame.b as Json[];
      visit(a[i]!, b[i]!, paths.index(frame.states, i), frame, i);
      continue;
    }
    const key = frame.keys![i]!;
    const a = frame.a as { [key: string]: Json };
    const b = frame.b as { [key: string]: Json };
    // A key of `b` that `a` has was compared with `a`'s keys.
    if (frame.side === 'b' && Object.hasOwn(a, key)) continue;
    if (keys.has(key.toLowerCase())) continue;
    const states = paths.key(frame.states, key);
    if (states.accept) continue;
    if (frame.side === 'b') out.push(`${pathAt(frame, key)}: not recorded, got ${preview(b[key]!)}`);
    else if (!Object.hasOwn(b, key)) out.push(`${pathAt(frame, key)}: recorded ${preview(a[key]!)}, got nothing`);
    else if (timeLike && a[key] !== b[key] && TIME_KEY.test(key) && isTimeValue(a[key]!) && isTimeValue(b[key]!)) continue;
    else visit(a[key]!, b[key]!, states, frame, key);
  }
  return out.slice(0, limit);
}

/** Two arrays (`side` undefined) or two objects being compared, and where they are. */
interface Frame {
  a: Json;
  b: Json;
  states: States;
  parent: Frame | undefined;
  /** Where the pair is in its parent: a key or an index (undefined at the top). */
  segment: string | number | undefined;
  /**
   * Two objects: whose keys are gone through, `a`'s (each compared, or missing from `b`) and then
   * `b`'s (those `a` lacks are reported, the others were compared). Differences come in that
   * order: `a`'s keys in its order, then `b`'s extra keys in its order.
   */
  side: 'a' | 'b' | undefined;
  /** That object's keys (undefined for two arrays). */
  keys: string[] | undefined;
  /** The next index (into `a` and `b`, or into `keys`) to compare, and where to stop. */
  next: number;
  end: number;
}

/** Segments shown at each end of a path deeper than twice this many. */
const PATH_ENDS = 16;

/** `$.a.b[2]`; a deep path shows its first and last PATH_ENDS segments and how many are left out between. */
function pathAt(parent: Frame | undefined, segment: string | number | undefined): string {
  const segments: Array<string | number> = segment === undefined ? [] : [segment];
  for (let f = parent; f !== undefined && f.segment !== undefined; f = f.parent) segments.push(f.segment);
  segments.reverse();
  const text = (s: string | number) => (typeof s === 'number' ? `[${s}]` : `.${s}`);
  if (segments.length <= 2 * PATH_ENDS) return `$${segments.map(text).join('')}`;
  const left = segments.length - 2 * PATH_ENDS;
  return `$${segments.slice(0, PATH_ENDS).map(text).join('')}...(${left} levels)...${segments.slice(-PATH_ENDS).map(text).join('')}`;
}

function pathOf(frame: Frame): string {
  return pathAt(frame.parent, frame.segment);
}

/** One segment of an ignored path: a key (lower case), any key, an index, any index, or `..` (any segments, none included). */
type PathStep = { key: string } | { anyKey: true } | { index: number } | { anyIndex: true } | { descend: true };

/** A JSON path of `JsonIgnore.paths`, as its segments. */
export interface CompiledPath {
  spec: string;
  steps: PathStep[];
}

/**
 * A JSON path (`$.a.b`, `a.b`, `body.a.b`, `items[*].id`, `$..ts`, `$.a[2]`, `$.*.id`) as its
 * segments. Keys compare case-insensitively; `[*]` (or `[]`) is any index, `*` any key, `..` any
 * run of keys and indexes (none included); `$` alone is the whole body.
 */
export function compilePath(spec: string): CompiledPath {
  let p = spec.trim().replace(/^body\./, '');
  if (!p.startsWith('$')) p = `$.${p}`;
  const parts = p
    .slice(1)
    .split(/(\.\.|\.|\[[^\]]*\])/)
    .filter((s) => s !== '');
  const steps: PathStep[] = [];
  for (const part of parts) {
    if (part === '.') continue;
    if (part === '..') steps.push({ descend: true });
    else if (part === '[*]' || part === '[]') steps.push({ anyIndex: true });
    else if (/^\[\d+\]$/.test(part)) steps.push({ index: Number(part.slice(1, -1)) });
    else if (part === '*') steps.push({ anyKey: true });
    else steps.push({ key: part.toLowerCase() });
  }
  return { spec, steps };
}

/**
 * Where the walk is in the ignored paths: the positions reached (sorted, `..` positions followed by
 * those after them), whether one is a path's end (the value is ignored), and the sets one segment on,
 * worked out once per set and segment (once for all indexes, or all keys, when no position names one).
 */
interface States {
  positions: number[];
  accept: boolean;
  /** Whether a position names an index, or a key: then the next set depends on which. */
  namesIndex: boolean;
  namesKey: boolean;
  next: Map<string, States>;
}

/**
 * Sets kept (by their positions, so that one reached again is the same set), and next sets kept per
 * set; past these they are worked out each time they are needed (an object of 100,000 keys under
 * a rule naming keys): what a matcher keeps between comparisons stays small.
 */
const MAX_SETS = 256;
const MAX_NEXT = 256;

/** The rules of a JsonIgnore, kept with it: what they have worked out serves its next comparisons. */
const compiled = new WeakMap<object, PathRules>();

function pathRulesOf(rules: JsonIgnore): PathRules {
  let r = compiled.get(rules);
  if (!r) compiled.set(rules, (r = new PathRules((rules.paths ?? []).map((p) => (typeof p === 'string' ? compilePath(p) : p)))));
  return r;
}

class PathRules {
  /** Every path's steps one after the other, each path ended by `undefined`. */
  private readonly steps: Array<PathStep | undefined> = [];
  readonly root: States;
  private readonly none: States = { positions: [], accept: false, namesIndex: false, namesKey: false, next: new Map() };
  private readonly sets = new Map<string, States>();

  constructor(paths: readonly CompiledPath[]) {
    const starts: number[] = [];
    for (const p of paths) {
      starts.push(this.steps.length);
      this.steps.push(...p.steps, undefined);
    }
    this.root = this.states(starts);
  }

  index(from: States, i: number): States {
    if (from.positions.length === 0) return this.none;
    return this.after(from, from.namesIndex ? `#${i}` : '#', (s) => ('anyIndex' in s || ('index' in s && s.index === i) ? 1 : 'descend' in s ? 0 : -1));
  }

  key(from: States, key: string): States {
    if (from.positions.length === 0) return this.none;
    const lower = from.namesKey ? key.toLowerCase() : '';
    return this.after(from, from.namesKey ? `.${lower}` : '.', (s) => ('anyKey' in s || ('key' in s && s.key === lower) ? 1 : 'descend' in s ? 0 : -1));
  }

  /** The set one segment on: each position moves by `move(step)` (1 past the step, 0 stays on a `..`, -1 drops out). */
  private after(from: States, id: string, move: (step: PathStep) => number): States {
    const known = from.next.get(id);
    if (known) return known;
    const reached: number[] = [];
    for (const p of from.positions) {
      const step = this.steps[p];
      if (step === undefined) continue;
      const by = move(step);
      if (by >= 0) reached.push(p + by);
    }
    const next = this.states(reached);
    if (from.next.size < MAX_NEXT) from.next.set(id, next);
    return next;
  }

  /** The set of these positions and those a `..` among them may skip to. */
  private states(reached: number[]): States {
    if (reached.length === 0) return this.none;
    const all = new Set<number>();
    for (let p of reached) {
      all.add(p);
      while (this.steps[p] !== undefined && 'descend' in this.steps[p]!) all.add(++p);
    }
    const positions = [...all].sort((x, y) => x - y);
    const id = positions.join(',');
    const known = this.sets.get(id);
    if (known) return known;
    const steps = positions.map((p) => this.steps[p]);
    const set: States = {
      positions,
      accept: steps.some((s) => s === undefined),
      namesIndex: steps.some((s) => s !== undefined && 'index' in s),
      namesKey: steps.some((s) => s !== undefined && 'key' in s),
      next: new Map(),
    };
    if (this.sets.size < MAX_SETS) this.sets.set(id, set);
    return set;
  }
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

function isObject(v: Json): v is { [key: string]: Json } {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const PREVIEW_CHARS = 60;

/**
 * The value as JSON, cut to PREVIEW_CHARS characters (`...` ending a longer one). Only the start
 * is written, without recursion: the value may be 4 MiB, or nested 100,000 deep.
 */
export function preview(v: Json): string {
  let s = '';
  // What is left to write, last first: values, or text (punctuation and keys).
  const todo: Array<{ value: Json } | string> = [{ value: v }];
  while (todo.length > 0 && s.length <= PREVIEW_CHARS) {
    const item = todo.pop()!;
    if (typeof item === 'string') {
      s += item;
      continue;
    }
    const value = item.value;
    if (Array.isArray(value)) {
      s += '[';
      todo.push(']');
      // Only as many items as could still show.
      for (let i = Math.min(value.length, PREVIEW_CHARS) - 1; i >= 0; i--) todo.push({ value: value[i]! }, i > 0 ? ',' : '');
      continue;
    }
    if (isObject(value)) {
      s += '{';
      todo.push('}');
      const keys = Object.keys(value).slice(0, PREVIEW_CHARS);
      for (let i = keys.length - 1; i >= 0; i--) todo.push({ value: value[keys[i]!]! }, `${i > 0 ? ',' : ''}${JSON.stringify(keys[i])}:`);
      continue;
    }
    s += typeof value === 'string' && value.length > PREVIEW_CHARS ? JSON.stringify(value.slice(0, PREVIEW_CHARS + 1)) : (JSON.stringify(value) ?? String(value));
  }
  return s.length > PREVIEW_CHARS || todo.length > 0 ? `${s.slice(0, PREVIEW_CHARS - 3)}...` : s;
}
