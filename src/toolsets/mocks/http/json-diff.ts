/**
 * JSON bodies compared by structure: object key order never matters, array order does, and keys
 * named in `ignore` (volatile fields such as `timestamp`) are skipped at any depth, as are the
 * given paths and (optionally) two times under a time-like key.
 *
 * The comparison is a walk with its own stack (a value nested 100,000 deep is compared like any
 * other: the call stack does not grow with it; a body is parsed only up to MAX_JSON_NESTING
 * levels deep and MAX_JSON_BODY_VALUES values), done in steps of STEP_NODES nodes: a caller
 * on the event loop gives it a turn between steps (`jsonDifferenceSteps`), since two values given
 * as such (not parsed from a body) may hold millions of values, or an object of 400,000 keys. Two objects are compared key by key in
 * the same steps: `a`'s keys, then `b`'s (a membership test in the other object each), with no
 * list of both built first. A value's path is written out only for a difference it reports;
 * ignored paths are followed segment by segment as the walk goes down (a set of positions in the
 * rules, shared by the values that reach it the same way), not matched as text at every value.
 */

import { jsonShape } from '../../../core/json-shape.js';
import { exactUtf8 } from '../keploy/utf8.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const MAX_JSON_BYTES = 4 * 1024 * 1024;

/**
 * The deepest nesting of a body compared as JSON; a deeper one is compared as bytes. JSON.parse of
 * nested arrays costs far more than of flat ones (1 MiB of `[[[...]]]` took ~400 ms, 4 MiB ~2 s,
 * attack f1-4); 512 levels is deeper than any API's body.
 */
export const MAX_JSON_NESTING = 512;

/**
 * The most values a body compared as JSON may hold (every value and every object key counted, as
 * core/json-shape.ts counts them); one with more is compared as bytes. JSON.parse of a body is one
 * step on the event loop: one object of 419,799 keys with `{}` values (4 MiB) held it 0.8-1.2 s
 * (attack h1-1). At 100,000, one object of 50,000 distinct keys with `{}` values parses in ~55-90
 * ms, 33,333 objects of one distinct key each in ~40-65 ms, flat arrays and numbers in ~10 ms.
 */
export const MAX_JSON_BODY_VALUES = 100_000;

/**
 * Bodies parseJsonBody left to be compared as bytes, and what to say of them: past MAX_JSON_NESTING
 * or MAX_JSON_BODY_VALUES, or holding a number JavaScript cannot hold exactly or a key twice in one
 * object (JSON.parse would make them equal to other bodies: 9007199254740993 and ...992 are the
 * same double, and of `{"role":"admin","role":"user"}` it keeps the last; attack j1-2).
 */
const refused = new WeakMap<Uint8Array, string>();

/**
 * The parsed body when it is a JSON object or array (scalars are compared as bytes), else
 * undefined. A body nested deeper than MAX_JSON_NESTING, holding more than MAX_JSON_BODY_VALUES
 * values, a number JavaScript cannot hold exactly (core/json-shape.ts `exactNumber`) or a key
 * twice in one object, is not parsed (`jsonRefusal` says why).
 */
export function parseJsonBody(bytes: Uint8Array): Json | undefined {
  if (bytes.length === 0 || bytes.length > MAX_JSON_BYTES) return undefined;
  let i = 0;
  while (i < bytes.length && (bytes[i] === 0x20 || bytes[i] === 0x0a || bytes[i] === 0x0d || bytes[i] === 0x09)) i++;
  if (bytes[i] !== 0x7b && bytes[i] !== 0x5b) return undefined; // '{' or '['
  // Strictly: Buffer's toString('utf8') turns every invalid byte into U+FFFD, which made
  // {"a":"\xff"}, {"a":"\xfe"} and {"a":"\uFFFD"} the same JSON (attack l1-1).
  const text = exactUtf8(bytes);
  if (text === undefined) {
    refused.set(bytes, `JSON text that is not valid UTF-8 (${invalidUtf8At(bytes)})`);
    return undefined;
  }
  const shape = jsonShape(text, { depth: MAX_JSON_NESTING, values: MAX_JSON_BODY_VALUES, inexactNumbers: true, duplicateKeys: true });
  const problem = !shape.ok
    ? shape.problem
    : shape.inexact !== undefined
      ? `JSON holding a number JavaScript cannot hold exactly (${cut(shape.inexact)})`
      : shape.duplicateKey !== undefined
        ? `JSON with the key ${JSON.stringify(cut(shape.duplicateKey))} twice in one object`
        : undefined;
  if (problem !== undefined) {
    refused.set(bytes, problem);
    return undefined;
  }
  try {
    return JSON.parse(text) as Json;
  } catch {
    return undefined;
  }
}

/** Where `bytes` (not valid UTF-8) first stops being UTF-8: `byte 0xFF at offset 12`. */
function invalidUtf8At(bytes: Uint8Array): string {
  const at = Math.min(firstInvalidUtf8(bytes), bytes.length - 1);
  return `byte 0x${bytes[at]!.toString(16).toUpperCase().padStart(2, '0')} at offset ${at}`;
}

/**
 * The offset of the first byte of the first sequence that is not UTF-8 (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF), or `bytes.length` when all of it is.
 */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    // The number of continuation bytes, and the range the first of them must be in.
    let n: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) n = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      n = 2;
      if (b === 0xe0) lo = 0xa0;
      if (b === 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      n = 3;
      if (b === 0xf0) lo = 0x90;
      if (b === 0xf4) hi = 0x8f;
    } else return i;
    if (i + n >= bytes.length) return i;
    const c = bytes[i + 1]!;
    if (c < lo || c > hi) return i;
    for (let k = 2; k <= n; k++) if ((bytes[i + k]! & 0xc0) !== 0x80) return i;
    i += n + 1;
  }
  return i;
}

/** `text` as it is up to 40 characters, else its first 40 and "...". */
function cut(text: string): string {
  return text.length <= 40 ? text : `${text.slice(0, 40)}...`;
}

/** Why parseJsonBody left a body that looks like JSON to be compared as bytes, or undefined. */
export function jsonRefusal(bytes: Uint8Array): string | undefined {
  return refused.get(bytes);
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
 * ends the step it is taken in, and positions of ignored paths gone through count as work too.
 */
export function* jsonDifferenceSteps(recorded: Json, got: Json, ignore: ReadonlySet<string> | JsonIgnore, limit = 5, meter?: StepMeter): Generator<void, string[]> {
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
      const frame: Frame = { a, b, states, parent, segment, ...placeOf(parent, segment), side: undefined, keys: undefined, next: 0, end: Math.min(a.length, b.length) };
      if (a.length !== b.length) out.push(`${pathOf(frame)}: recorded ${a.length} items, got ${b.length}`);
      stack.push(frame);
      return;
    }
    if (isObject(a) && isObject(b)) {
      // The keys of `a` are gone through, then those of `b` (listed when `a`'s are done).
      const list = keysOf(a);
      stack.push({ a, b, states, parent, segment, ...placeOf(parent, segment), side: 'a', keys: list, next: 0, end: list.length });
      return;
    }
    if (a !== b) out.push(`${pathAt(parent, segment)}: recorded ${preview(a)}, got ${preview(b)}`);
  };

  work += paths.takeWork();
  visit(recorded, got, paths.root, undefined, undefined);
  while (stack.length > 0 && out.length < limit) {
    if (++work > STEP_NODES) {
      meter?.step(work - 1);
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
      const states = paths.index(frame.states, i);
      work += paths.takeWork();
      visit(a[i]!, b[i]!, states, frame, i);
      continue;
    }
    const key = frame.keys![i]!;
    const a = frame.a as { [key: string]: Json };
    const b = frame.b as { [key: string]: Json };
    // A key of `b` that `a` has was compared with `a`'s keys.
    if (frame.side === 'b' && Object.hasOwn(a, key)) continue;
    if (keys.has(key.toLowerCase())) continue;
    const states = paths.key(frame.states, key);
    work += paths.takeWork();
    if (states.accept) continue;
    if (frame.side === 'b') out.push(`${pathAt(frame, key)}: not recorded, got ${preview(b[key]!)}`);
    else if (!Object.hasOwn(b, key)) out.push(`${pathAt(frame, key)}: recorded ${preview(a[key]!)}, got nothing`);
    else if (timeLike && a[key] !== b[key] && TIME_KEY.test(key) && isTimeValue(a[key]!) && isTimeValue(b[key]!)) continue;
    else visit(a[key]!, b[key]!, states, frame, key);
  }
  meter?.step(work);
  return out.slice(0, limit);
}

/** Told the work of each step of `jsonDifferenceSteps` (values compared, keys gone through or listed, positions of ignored paths gone through). */
export interface StepMeter {
  step(work: number): void;
}

/** Two arrays (`side` undefined) or two objects being compared, and where they are. */
interface Frame {
  a: Json;
  b: Json;
  states: States;
  parent: Frame | undefined;
  /** Where the pair is in its parent: a key or an index (undefined at the top). */
  segment: string | number | undefined;
  /** How deep the pair is (0 at the top), and the first PATH_ENDS segments of its path. */
  depth: number;
  head: ReadonlyArray<string | number>;
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

/**
 * `$.a.b[2]`; a deep path shows its first and last PATH_ENDS segments and how many are left out
 * between. Written from the frames' depth and first segments (`head`) and the last PATH_ENDS
 * frames: a difference a million levels deep costs no more than one 40 levels deep.
 */
function pathAt(parent: Frame | undefined, segment: string | number | undefined): string {
  const text = (s: string | number) => (typeof s === 'number' ? `[${s}]` : `.${s}`);
  const depth = (parent?.depth ?? 0) + (segment === undefined ? 0 : 1);
  // The last segments, up to PATH_ENDS of them (all of them when the path is not cut).
  const last = depth <= 2 * PATH_ENDS ? depth : PATH_ENDS;
  const tail: Array<string | number> = segment === undefined ? [] : [segment];
  for (let f = parent; tail.length < last && f !== undefined && f.segment !== undefined; f = f.parent) tail.push(f.segment);
  tail.reverse();
  if (depth <= 2 * PATH_ENDS) return `$${tail.map(text).join('')}`;
  const head = parent!.head;
  return `$${head.map(text).join('')}...(${depth - 2 * PATH_ENDS} levels)...${tail.map(text).join('')}`;
}

/** The depth of a frame (0 at the top) and its path's first PATH_ENDS segments, from its parent's. */
function placeOf(parent: Frame | undefined, segment: string | number | undefined): { depth: number; head: ReadonlyArray<string | number> } {
  if (parent === undefined || segment === undefined) return { depth: 0, head: [] };
  const depth = parent.depth + 1;
  return { depth, head: depth <= PATH_ENDS ? [...parent.head, segment] : parent.head };
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

/** A path by its segments: two paths with the same are one. */
function pathId(p: CompiledPath): string {
  return JSON.stringify(p.steps);
}

/**
 * The most segments the ignored paths with `..` may have in all. A `..` starts its path again at
 * every level, so such a path holds up to one position per segment at once, and the walk moves
 * every position at each level: 99 paths of 97 segments held ~9,600 (attack f1-1).
 */
export const MAX_DESCENDING_SEGMENTS = 1000;

/** What is wrong with these ignored paths together (their `..` paths too long in all), or undefined. */
export function ignoredPathsProblem(paths: readonly CompiledPath[]): string | undefined {
  const seen = new Set<string>();
  let segments = 0;
  for (const p of paths) {
    const id = pathId(p);
    if (seen.has(id) || !p.steps.some((s) => 'descend' in s)) continue;
    seen.add(id);
    segments += p.steps.length;
  }
  if (segments <= MAX_DESCENDING_SEGMENTS) return undefined;
  return (
    `the JSON paths with '..' have ${segments} segments in all (each '..', name, '*' and '[n]' counts one; a path given twice, once), ` +
    `at most ${MAX_DESCENDING_SEGMENTS} can be followed: give fewer or shorter paths with '..'`
  );
}

/**
 * Where the walk is in the ignored paths: the positions reached (sorted, `..` positions followed by
 * those after them), whether one is a path's end (the value is ignored), the keys and indexes the
 * positions name, and the sets one segment on, worked out once per set and segment. Every key no
 * position names leads to the same set (each position on `*` or `..` moves, the others drop out),
 * worked out once for them all, and so does every index no position names: an object of 100,000
 * keys under rules naming none of them costs one set, not one per key.
 */
interface States {
  positions: number[];
  accept: boolean;
  /** The keys (lower case) and indexes named by a position: the next set depends on which of them. */
  keys: ReadonlySet<string>;
  indexes: ReadonlySet<number>;
  /** The sets after a named key (`.key`) or index (`#2`), up to MAX_NEXT of them. */
  next: Map<string, States>;
  /** The sets after any key, or index, that no position names (worked out when first needed). */
  otherKey: States | undefined;
  otherIndex: States | undefined;
}

/**
 * Sets kept (by their positions, so that one reached again is the same set), and next sets kept per
 * set after a named key or index; past these they are worked out each time they are needed: what a
 * matcher keeps between comparisons stays small.
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
  private readonly none: States = { positions: [], accept: false, keys: new Set(), indexes: new Set(), next: new Map(), otherKey: undefined, otherIndex: undefined };
  private readonly sets = new Map<string, States>();
  /**
   * Positions gone through in working out sets since `takeWork` last read it: the walk counts them
   * in its steps, as a set of thousands of positions (100 paths `..a.*.*...` on a chain of 90
   * objects) costs as much as thousands of values compared.
   */
  private work = 0;

  constructor(paths: readonly CompiledPath[]) {
    const starts: number[] = [];
    // A path given twice (99 copies of one `..` path, attack f1-1) is followed once.
    const seen = new Set<string>();
    for (const p of paths) {
      const id = pathId(p);
      if (seen.has(id)) continue;
      seen.add(id);
      starts.push(this.steps.length);
      this.steps.push(...p.steps, undefined);
    }
    this.root = this.states(starts);
  }

  /** The work done on sets since the last call. */
  takeWork(): number {
    const work = this.work;
    this.work = 0;
    return work;
  }

  index(from: States, i: number): States {
    if (from.positions.length === 0) return this.none;
    if (!from.indexes.has(i)) return (from.otherIndex ??= this.after(from, (s) => ('anyIndex' in s ? 1 : 'descend' in s ? 0 : -1)));
    return this.named(from, `#${i}`, (s) => ('anyIndex' in s || ('index' in s && s.index === i) ? 1 : 'descend' in s ? 0 : -1));
  }

  key(from: States, key: string): States {
    if (from.positions.length === 0) return this.none;
    const lower = from.keys.size === 0 ? '' : key.toLowerCase();
    if (!from.keys.has(lower)) return (from.otherKey ??= this.after(from, (s) => ('anyKey' in s ? 1 : 'descend' in s ? 0 : -1)));
    return this.named(from, `.${lower}`, (s) => ('anyKey' in s || ('key' in s && s.key === lower) ? 1 : 'descend' in s ? 0 : -1));
  }

  /** The set after a key or index a position names (`id`), kept in `from.next` while it has room. */
  private named(from: States, id: string, move: (step: PathStep) => number): States {
    const known = from.next.get(id);
    if (known) return known;
    const next = this.after(from, move);
    if (from.next.size < MAX_NEXT) from.next.set(id, next);
    return next;
  }

  /**
   * The set one segment on: each position moves by `move(step)` (1 past the step, 0 stays on a `..`,
   * -1 drops out). Positions are sorted and each moves by 0 or 1, so those reached come sorted too.
   */
  private after(from: States, move: (step: PathStep) => number): States {
    this.work += from.positions.length;
    const reached: number[] = [];
    for (const p of from.positions) {
      const step = this.steps[p];
      if (step === undefined) continue;
      const by = move(step);
      if (by >= 0) reached.push(p + by);
    }
    return this.states(reached);
  }

  /** The set of these positions (sorted, repeats allowed) and those a `..` among them may skip to. */
  private states(reached: number[]): States {
    if (reached.length === 0) return this.none;
    // Each position, then those after it while it is on a `..`: sorted, and a position at or
    // before the last one kept is a repeat.
    const positions: number[] = [];
    for (let p of reached) {
      for (;;) {
        this.work++;
        if (positions.length === 0 || p > positions[positions.length - 1]!) positions.push(p);
        const step = this.steps[p];
        if (step === undefined || !('descend' in step)) break;
        p++;
      }
    }
    const id = positions.join(',');
    this.work += positions.length;
    const known = this.sets.get(id);
    if (known) return known;
    const keys = new Set<string>();
    const indexes = new Set<number>();
    let accept = false;
    for (const p of positions) {
      const step = this.steps[p];
      if (step === undefined) accept = true;
      else if ('key' in step) keys.add(step.key);
      else if ('index' in step) indexes.add(step.index);
    }
    const set: States = { positions, accept, keys, indexes, next: new Map(), otherKey: undefined, otherIndex: undefined };
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
