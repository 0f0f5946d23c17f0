import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import type { Transferable } from 'node:worker_threads';

/**
 * The worker side of core/workers.ts: what a worker module calls once to serve its pool's jobs,
 * one at a time. `handle` gets each job and a context: `progress()` to report that the work moves
 * (cheap: one atomic add; the pool ends a job that reports none for its stallMs), and
 * `request(...)` to ask the main thread for something it owns (a child process).
 */
export interface JobContext {
  progress(): void;
  request(request: unknown): Promise<unknown>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each worker module reads its own job shape
export type JobHandler = (job: any, ctx: JobContext) => Promise<{ value: unknown; transfer?: Transferable[] }>;

export function serveJobs(handle: JobHandler): void {
  const port = parentPort;
  if (!port) throw new Error('serveJobs runs in a worker thread');
  const tid = lowerPriority();
  const counter = (workerData as { progress: Int32Array }).progress;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let nextRid = 1;
  const ctx: JobContext = {
    progress: () => void Atomics.add(counter, 0, 1),
    request: (request) =>
      new Promise((resolve, reject) => {
        const rid = nextRid++;
        pending.set(rid, { resolve, reject });
        port.postMessage({ type: 'request', rid, request });
      }),
  };
  port.on('message', (msg: { type: 'job'; job: unknown } | { type: 'reply'; rid: number; value?: unknown; error?: string }) => {
    if (msg.type === 'reply') {
      const p = pending.get(msg.rid);
      if (!p) return;
      pending.delete(msg.rid);
      if (msg.error !== undefined) p.reject(new Error(msg.error));
      else p.resolve(msg.value);
      return;
    }
    port.postMessage({ type: 'started', tid });
    handle(msg.job, ctx).then(
      ({ value, transfer }) => port.postMessage({ type: 'done', value }, transfer ?? []),
      (err: unknown) => port.postMessage({ type: 'failed', error: describe(err) }),
    );
  });
}

/** An error as plain data: name, message and its own enumerable fields that clone (e.g. a code). */
function describe(err: unknown): { name: string; message: string; fields: Record<string, unknown> } {
  if (!(err instanceof Error)) return { name: 'Error', message: String(err), fields: {} };
  const fields: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(err)) if (v === null || ['string', 'number', 'boolean'].includes(typeof v)) fields[k] = v;
  return { name: err.name, message: err.message, fields };
}

/** Nice value of a worker thread: on a busy machine the event loop (nice 0) gets the CPU first. */
const WORKER_NICE = 10;

/**
 * Lowers this thread's CPU priority (Linux: a thread's own nice value, set through its kernel
 * thread id), so a job burning a core (a regex backtracking until its bound) slows the server's
 * event loop as little as the machine allows. Best effort: elsewhere the thread keeps its priority.
 * Its kernel thread id, which the pool reads the job's CPU time by; undefined without /proc.
 */
function lowerPriority(): number | undefined {
  let tid: number | undefined;
  try {
    tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(tid) || tid <= 0) return undefined;
    setPriority(tid, WORKER_NICE);
  } catch {
    // no /proc/thread-self, or not allowed: the thread runs at the process's priority
  }
  return tid;
}
