import { deserialize } from 'node:v8';
import { DebugkitError, describeError, type ErrorCode } from '../../../core/errors.js';
import { workerEntry, WorkerJobError, WorkerPool, WorkerStalledError } from '../../../core/workers.js';
import type { AppendJob, LoadJob, MockBatch, PastBounds, WriteJob } from './load.js';
import { emptyCounts, mb, PARSE_BOUNDS, type SetDescription } from './scan.js';
import { stylesOf } from './style.js';
import type { SetNarrowing } from './narrow.js';
import type { Mock } from './types.js';

/**
 * The mock-set worker threads: a pool of up to two, reused across calls, for all the work on a
 * set's YAML that can take long: MockStore.list's descriptions of sets (scan.ts), replay's
 * loading (MockStore.load) and extending (MockStore.append) of a set, and writing a new one
 * (MockStore.write: serializing it and checking it reads back) (load.ts). Each set is one
 * job, bounded in time (DESCRIBE_TIMEOUT_MS) and memory (DESCRIBE_HEAP_MB); a job that runs out of
 * either fails saying so, and the next job gets a fresh thread. What is parsed at all is bounded
 * too (scan.ts PARSE_BOUNDS): bigger sets are only scanned when listed, and refused for replay.
 */
export const DESCRIBE_TIMEOUT_MS = 20_000;
export const DESCRIBE_HEAP_MB = 768;

let pool: WorkerPool | null = null;

function setPool(): WorkerPool {
  pool ??= new WorkerPool({ name: 'mock sets', entry: workerEntry(import.meta.url, 'describe-worker'), resourceLimits: { maxOldGenerationSizeMb: DESCRIBE_HEAP_MB } });
  return pool;
}

/** Why a job ended that ran out of the pool's time or memory bound ("took longer than 20 s and was stopped"); undefined for other failures. */
function poolBoundHit(err: unknown): string | undefined {
  if (err instanceof WorkerStalledError) return `took longer than ${DESCRIBE_TIMEOUT_MS / 1000} s and was stopped`;
  if (err instanceof Error && err.name === 'WorkerDiedError') return `needed more than the ${DESCRIBE_HEAP_MB} MB a mock-set thread may use and was stopped (${err.message})`;
  return undefined;
}

/**
 * `owner`: whose listing (an API key's id); the threads are shared fairly between owners. `file`:
 * what the worker opens (for a MockStore's set, `/proc/self/fd/N/mocks.yaml`, N the set's
 * directory opened and checked by the caller, who keeps it open until this returns: setdir.ts);
 * `shown`: its name in messages.
 */
export async function describeSet(file: string, maxBytes: number, owner?: string, shown: string = file): Promise<SetDescription> {
  try {
    return await setPool().run<SetDescription>({ op: 'describe', file, shown, maxBytes }, { timeoutMs: DESCRIBE_TIMEOUT_MS, ...(owner !== undefined ? { owner } : {}) });
  } catch (err) {
    const bound = poolBoundHit(err);
    return { mocks: 0, kinds: emptyCounts(), error: `${shown} was not read: ${bound ? `reading it ${bound}` : describeError(err).split(file).join(shown)}` };
  }
}

/**
 * A set refused for replay: past the parse bounds, or past the threads' time or memory. Its
 * message says which bound and what keploy_mock_test takes; tools answer it as an error result.
 */
export class MockSetBoundError extends DebugkitError {
  override name = 'MockSetBoundError';
  constructor(code: ErrorCode, name: string, why: string, what: 'loaded' | 'extended' | 'written' = 'loaded') {
    super(
      code,
      `Mock set '${name}' was not ${what}: ${why}. keploy_mock_test replays sets of at most ${mb(PARSE_BOUNDS.bytes)} and ${PARSE_BOUNDS.documents} documents, ` +
        `loaded within ${DESCRIBE_TIMEOUT_MS / 1000} s and ${DESCRIBE_HEAP_MB} MB: split a bigger set into smaller ones (Keploy's test sets), or leave out the mocks it does not need`,
    );
  }
}

export interface SetJobOptions {
  /** Whose replay (an API key's id); the threads are shared fairly between owners. */
  owner?: string;
  /** Cancels the job (its thread is ended). */
  signal?: AbortSignal;
}

/** Runs a replay job on the pool; a bound hit becomes MockSetBoundError, an error the worker threw the same error here. */
async function runSetJob<T>(name: string, job: LoadJob | AppendJob | WriteJob, options: SetJobOptions, onBatch?: (batch: MockBatch) => void): Promise<Exclude<T, PastBounds>> {
  const done = ({ load: 'loaded', append: 'extended', write: 'written' } as const)[job.op];
  let result: T | PastBounds;
  try {
    result = await setPool().run<T | PastBounds>(job, {
      timeoutMs: DESCRIBE_TIMEOUT_MS,
      ...(options.owner !== undefined ? { owner: options.owner } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(onBatch
        ? {
            onRequest: async (request: unknown) => {
              onBatch(request as MockBatch);
              return { value: null };
            },
          }
        : {}),
    });
  } catch (err) {
    const bound = poolBoundHit(err);
    if (bound !== undefined)
      throw new MockSetBoundError(
        err instanceof WorkerStalledError ? 'TIMEOUT' : 'INVALID_ARGUMENT',
        name,
        `${({ load: 'loading', append: 'extending', write: 'writing' } as const)[job.op]} it ${bound}`,
        done,
      );
    if (err instanceof WorkerJobError) {
      const code = err.fields.code;
      throw new DebugkitError(err.name === 'DebugkitError' && typeof code === 'string' ? (code as ErrorCode) : 'INTERNAL', err.message, { cause: err });
    }
    throw err;
  }
  if (typeof result === 'object' && result !== null && 'past' in result) {
    throw new MockSetBoundError('INVALID_ARGUMENT', name, `${(result as PastBounds).past} a set is parsed to for replay`, done);
  }
  return result as Exclude<T, PastBounds>;
}

/**
 * Set `name` (its `file`) parsed for replay on the pool, or from the cache of parsed sets in
 * `cacheDir`. `file` is what the worker opens (for a MockStore's set, `/proc/self/fd/N/mocks.yaml`,
 * N the set's directory, opened and checked by the caller and kept open until this settles:
 * setdir.ts); `shown` its name in messages. The mocks come back in batches (load.ts), each deserialized as it arrives, so no
 * one step holds the event loop long; they are plain data (Uint8Array bytes, bigint), as parsed.
 */
export async function loadSet(name: string, file: string, cacheDir: string, options: SetJobOptions = {}, shown: string = file): Promise<Mock[]> {
  const mocks: Mock[] = [];
  const { mocks: count } = await runSetJob<{ mocks: number }>(name, { op: 'load', file, shown, cacheDir }, options, ({ bytes }) => {
    for (const mock of deserialize(bytes) as Mock[]) mocks.push(mock);
  });
  if (mocks.length !== count) throw new DebugkitError('INTERNAL', `Mock set '${name}': ${count} mocks parsed, ${mocks.length} received`);
  return mocks;
}

/** The text of set `name` with `mocks` added (load.ts appendSetText), worked out on the pool. `file` and `shown` as for loadSet. */
export function appendedText(
  name: string,
  file: string,
  mocks: readonly Mock[],
  cacheDir: string,
  options: SetJobOptions = {},
  shown: string = file,
  replace?: SetNarrowing,
): Promise<{ text: string; total: number; replaced: number }> {
  return runSetJob<{ text: string; total: number; replaced: number }>(
    name,
    { op: 'append', name, file, shown, cacheDir, mocks: [...mocks], styles: stylesOf(mocks), ...(replace ? { replace } : {}) },
    options,
  );
}

/**
 * The text of a new set `name` of `mocks` (load.ts newSetText), worked out on the pool: serialized,
 * within the bounds and checked to read back. Past the bounds it is refused (MockSetBoundError), or
 * with `fit` the first mocks that fit are written (`written` says how many). `shown`: the set's file in messages.
 */
export function writtenText(name: string, shown: string, mocks: readonly Mock[], cacheDir: string, fit: boolean, options: SetJobOptions = {}): Promise<{ text: string; written: number }> {
  // The styles the recorders marked (Keploy's flow sequences) go along: the clone of the mocks loses them.
  return runSetJob<{ text: string; written: number }>(name, { op: 'write', name, shown, cacheDir, mocks: [...mocks], styles: stylesOf(mocks), fit }, options);
}
