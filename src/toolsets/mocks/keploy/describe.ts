import { describeError } from '../../../core/errors.js';
import { workerEntry, WorkerPool, WorkerStalledError } from '../../../core/workers.js';
import { emptyCounts, type SetDescription } from './scan.js';

/**
 * MockStore.list's descriptions of sets (scan.ts), worked out on worker threads: a pool of up to
 * two, reused across calls. Each set is one job, bounded in time (DESCRIBE_TIMEOUT_MS) and memory
 * (DESCRIBE_HEAP_MB); a set that runs out of either is listed with an error saying so, and the
 * next set gets a fresh thread.
 */
export const DESCRIBE_TIMEOUT_MS = 20_000;
export const DESCRIBE_HEAP_MB = 768;

let pool: WorkerPool | null = null;

function describePool(): WorkerPool {
  pool ??= new WorkerPool({ name: 'mock set listing', entry: workerEntry(import.meta.url, 'describe-worker'), resourceLimits: { maxOldGenerationSizeMb: DESCRIBE_HEAP_MB } });
  return pool;
}

/** `owner`: whose listing (an API key's id); the threads are shared fairly between owners. */
export async function describeSet(file: string, maxBytes: number, owner?: string): Promise<SetDescription> {
  try {
    return await describePool().run<SetDescription>({ file, maxBytes }, { timeoutMs: DESCRIBE_TIMEOUT_MS, ...(owner !== undefined ? { owner } : {}) });
  } catch (err) {
    const why =
      err instanceof WorkerStalledError
        ? `reading it took longer than ${DESCRIBE_TIMEOUT_MS / 1000} s and was stopped`
        : err instanceof Error && err.name === 'WorkerDiedError'
          ? `reading it needed more than the ${DESCRIBE_HEAP_MB} MB a listing may use and was stopped (${err.message})`
          : describeError(err);
    return { mocks: 0, kinds: emptyCounts(), error: `${file} was not read: ${why}` };
  }
}
