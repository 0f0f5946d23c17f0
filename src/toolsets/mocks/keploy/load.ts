import { serialize } from 'node:v8';
import type { JobContext } from '../../../core/workers-side.js';
import { DebugkitError } from '../../../core/errors.js';
import { cachedMocks, cacheMocks } from './cache.js';
import { parseMockSet } from './parse.js';
import { PARSE_BOUNDS, pastBounds, readBounded } from './scan.js';
import { serializeMockSet } from './serialize.js';
import { restyle } from './style.js';
import { MAX_MOCKSET_BYTES } from './store.js';
import type { Mock } from './types.js';
import { isStartup, narrowSet, type SetNarrowing } from './narrow.js';

/**
 * Replay's side of the mock-set worker threads (describe.ts runs these jobs): loading a set for
 * keploy_mock_test (MockStore.load) and extending one with the calls recorded on a miss
 * (MockStore.append). A set is parsed only within the bounds listing parses to (scan.ts
 * PARSE_BOUNDS); past them the job answers which bound, and nothing is parsed.
 */

/** Load `file` for replay: its mocks go to the main thread in batches (`MockBatch` requests), then the count. */
export interface LoadJob {
  op: 'load';
  /** What is opened: `/proc/self/fd/N/mocks.yaml`, N the set's directory opened and checked by the main thread (setdir.ts). */
  file: string;
  /** The file's name in messages (default `file`). */
  shown?: string;
  /** The cache of parsed sets (cache.ts) the store uses. */
  cacheDir: string;
}

/** Extend set `name` (its `file`) with `mocks`: the new text, checked to read back, for the main thread to write. */
export interface AppendJob {
  op: 'append';
  name: string;
  /** As LoadJob's. */
  file: string;
  shown?: string;
  cacheDir: string;
  mocks: Mock[];
  /** The mocks' collection styles (style.ts stylesOf): the clone sent here lost them. */
  styles: Uint8Array;
  /** Re-recording one test: the set's mocks of that test (narrow.ts narrowSet; its start-up mocks stay) are dropped first, `mocks` take their place. */
  replace?: SetNarrowing;
}

/**
 * A new set of `mocks` (MockStore.write): its text, checked to read back and to be within the
 * bounds. `fit`: past them, the longest run of the first mocks within them is written instead (a
 * recording keeps what a set may hold; `written` says how many), else the set is refused.
 */
export interface WriteJob {
  op: 'write';
  name: string;
  /** The set's file in messages. */
  shown: string;
  cacheDir: string;
  mocks: Mock[];
  /** The mocks' collection styles (style.ts stylesOf): the clone sent here lost them. */
  styles: Uint8Array;
  fit: boolean;
}

/** A set past the parse bounds: which, as "200000 documents, over the 20000" (scan.ts pastBounds). */
export interface PastBounds {
  past: string;
}

/** Mocks handed to the main thread: an array of them, v8-serialized (node:v8), deserialized there in one go. */
export interface MockBatch {
  bytes: Uint8Array;
}

/**
 * A batch aims at about BATCH_BYTES serialized and holds at most BATCH_MOCKS mocks: deserializing
 * it holds the main thread's event loop a few ms at most (about a µs per small mock, plus the
 * bytes), however big the set. One mock bigger than BATCH_BYTES goes alone.
 */
const BATCH_BYTES = 512 * 1024;
const BATCH_MOCKS = 2000;

export async function loadSetFile(job: LoadJob, ctx: JobContext): Promise<{ mocks: number } | PastBounds> {
  const shown = job.shown ?? job.file;
  const set = readBounded(job.file, MAX_MOCKSET_BYTES, ctx.progress, undefined, shown);
  if ('error' in set) throw new Error(set.error);
  if ('past' in set) return { past: set.past };
  let mocks = await cachedMocks(set.text, job.cacheDir);
  if (!mocks) {
    mocks = parseMockSet(set.text, shown);
    await cacheMocks(set.text, mocks, job.cacheDir);
  }
  await handOver(mocks, ctx);
  return { mocks: mocks.length };
}

/**
 * Sends `mocks` to the main thread in batches, one at a time (each taken before the next is
 * sent): each batch's size is picked from the bytes per mock of the one before, to come near
 * BATCH_BYTES without passing BATCH_MOCKS.
 */
async function handOver(mocks: readonly Mock[], ctx: JobContext): Promise<void> {
  let take = 64;
  for (let at = 0; at < mocks.length;) {
    const batch = mocks.slice(at, at + take);
    const bytes = serialize(batch);
    await ctx.request({ bytes } satisfies MockBatch);
    ctx.progress();
    at += batch.length;
    take = Math.max(1, Math.min(BATCH_MOCKS, Math.floor((BATCH_BYTES * batch.length) / bytes.length)));
  }
}

/**
 * The text of set `file` with `mocks` added at its end, named on from its count (`mock-N`, none the set has): the
 * file's text kept byte for byte, the whole checked to read back and to stay within the bounds
 * (a set past them could not be replayed again). The parsed result goes into the cache.
 */
export async function appendSetText(job: AppendJob, ctx: JobContext): Promise<{ text: string; total: number; replaced: number } | PastBounds> {
  const shown = job.shown ?? job.file;
  const set = readBounded(job.file, MAX_MOCKSET_BYTES, ctx.progress, undefined, shown);
  if ('error' in set) throw new Error(set.error);
  if ('past' in set) return { past: set.past };
  const old = set.text;
  const all = (await cachedMocks(old, job.cacheDir)) ?? parseMockSet(old, shown);
  let existing = all;
  let kept = old;
  let replaced = 0;
  if (job.replace) {
    // The test's mocks go, their documents cut out of the text; every other document is kept byte for byte.
    const dropped = new Set(narrowSet(all, job.replace).filter((m) => !isStartup(m)));
    const documents = documentsOf(old);
    if (documents.length !== all.length) {
      throw new DebugkitError('INVALID_ARGUMENT', `Mock set '${job.name}' not re-recorded: its ${documents.length} documents are not its ${all.length} mocks one for one`);
    }
    kept = documents.filter((_, i) => !dropped.has(all[i]!)).join('---\n');
    existing = all.filter((m) => !dropped.has(m));
    replaced = dropped.size;
  }
  const before = existing.length;
  restyle(job.mocks, job.styles);
  // Named on from the count, past any name the set has (a set with mock-1 removed holds mock-2 among 2 mocks): two mocks of
  // one name could not be told apart by the usage a replay reports (attack 18y W7).
  const taken = new Set(existing.map((m) => m.name));
  let next = before;
  const added = job.mocks.map((mock) => {
    while (taken.has(`mock-${next}`)) next++;
    const name = `mock-${next++}`;
    taken.add(name);
    return { ...mock, name };
  });
  const text = `${kept}${kept === '' || kept.endsWith('\n') ? '' : '\n'}${kept === '' ? '' : '---\n'}${serializeMockSet(added)}`;
  const past = pastBounds(Buffer.byteLength(text), set.scan.documents + added.length);
  if (past !== undefined) return { past };
  const parsed = parseMockSet(text, shown);
  const total = parsed.length;
  if (total !== before + added.length) throw new DebugkitError('INVALID_ARGUMENT', `Mock set '${job.name}' not extended: ${total} mocks would read back, expected ${before + added.length}`);
  await cacheMocks(text, parsed, job.cacheDir);
  return { text, total, replaced };
}

/**
 * The documents of a set's text, each with its lines (the `---` lines between them left out): only
 * those holding anything but blank lines and comments, as scan.ts counts them, in order.
 */
function documentsOf(text: string): string[] {
  const documents: string[] = [];
  let lines: string[] = [];
  const end = () => {
    if (lines.some((l) => l.trim() !== '' && !l.trimStart().startsWith('#') && l !== '...')) documents.push(lines.map((l) => `${l}\n`).join(''));
    lines = [];
  };
  const all = text.split('\n');
  if (all.at(-1) === '') all.pop();
  for (const line of all) {
    if (/^---(?:[ \t]|\r?$)/.test(line)) end();
    else lines.push(line);
  }
  end();
  return documents;
}

/**
 * The text of a new set of `job.mocks`, worked out here rather than on the event loop (a 32 MB set
 * took 3.4 s to serialize and 17.4 s to parse back there): serialized, within the bounds (a set
 * past them could not be replayed: keploy_mock_test refuses it), and checked to read back. The
 * parsed result goes into the cache, as a replay would parse it.
 */
export async function newSetText(job: WriteJob, ctx: JobContext): Promise<{ text: string; written: number } | PastBounds> {
  restyle(job.mocks, job.styles);
  let text = serializeMockSet(job.mocks);
  let written = job.mocks.length;
  ctx.progress();
  const past = pastBounds(Buffer.byteLength(text), written);
  if (past !== undefined) {
    // Not even the first mock fits (one Postgres group may be 64 MiB): no set, the bound is said.
    const fit = job.fit ? fitted(job.mocks) : undefined;
    if (!fit || fit.written === 0) return { past };
    ({ text, written } = fit);
  }
  const parsed = parseMockSet(text, job.shown);
  ctx.progress();
  // The caller says which set was not written (MockStore.write).
  if (parsed.length !== written) throw new Error(`the mocks do not read back: ${written} mocks written, ${parsed.length} read back`);
  await cacheMocks(text, parsed, job.cacheDir);
  return { text, written };
}

/** The first of `mocks` that fit the parse bounds, as a set's text (each document as serializeMockSet writes it, joined as it joins them). */
function fitted(mocks: readonly Mock[]): { text: string; written: number } {
  const docs: string[] = [];
  let bytes = 0;
  for (const mock of mocks.slice(0, PARSE_BOUNDS.documents)) {
    const doc = serializeMockSet([mock]);
    const more = Buffer.byteLength(doc) + (docs.length > 0 ? SEPARATOR.length : 0);
    if (bytes + more > PARSE_BOUNDS.bytes) break;
    bytes += more;
    docs.push(doc);
  }
  return { text: docs.join(SEPARATOR), written: docs.length };
}

/** What serializeMockSet puts between documents. */
const SEPARATOR = '---\n';
