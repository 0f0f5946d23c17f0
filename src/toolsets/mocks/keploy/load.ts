import { serialize } from 'node:v8';
import type { JobContext } from '../../../core/workers-side.js';
import { DebugkitError } from '../../../core/errors.js';
import { cachedMocks, cacheMocks } from './cache.js';
import { parseMockSet } from './parse.js';
import { pastBounds, readBounded } from './scan.js';
import { serializeMockSet } from './serialize.js';
import { MAX_MOCKSET_BYTES } from './store.js';
import type { Mock } from './types.js';

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
 * The text of set `file` with `mocks` added at its end, named on from its count (`mock-N`): the
 * file's text kept byte for byte, the whole checked to read back and to stay within the bounds
 * (a set past them could not be replayed again). The parsed result goes into the cache.
 */
export async function appendSetText(job: AppendJob, ctx: JobContext): Promise<{ text: string; total: number } | PastBounds> {
  const shown = job.shown ?? job.file;
  const set = readBounded(job.file, MAX_MOCKSET_BYTES, ctx.progress, undefined, shown);
  if ('error' in set) throw new Error(set.error);
  if ('past' in set) return { past: set.past };
  const old = set.text;
  const before = ((await cachedMocks(old, job.cacheDir)) ?? parseMockSet(old, shown)).length;
  const added = job.mocks.map((mock, i) => ({ ...mock, name: `mock-${before + i}` }));
  const text = `${old}${old === '' || old.endsWith('\n') ? '' : '\n'}${old === '' ? '' : '---\n'}${serializeMockSet(added)}`;
  const past = pastBounds(Buffer.byteLength(text), set.scan.documents + added.length);
  if (past !== undefined) return { past };
  const parsed = parseMockSet(text, shown);
  const total = parsed.length;
  if (total !== before + added.length) throw new DebugkitError('INVALID_ARGUMENT', `Mock set '${job.name}' not extended: ${total} mocks would read back, expected ${before + added.length}`);
  await cacheMocks(text, parsed, job.cacheDir);
  return { text, total };
}
