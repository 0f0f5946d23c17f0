import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { pathToFileURL } from 'node:url';
import { Worker, type ResourceLimits, type Transferable } from 'node:worker_threads';
import { waitBounded } from './wait.js';

/**
 * Work on client input that may take unbounded CPU (a client's backtracking regex, parsing a
 * file a client put in the workspace) runs here, on worker threads, never on the event loop: the
 * server keeps answering everyone else, and a job that runs out of time is ended by terminating
 * its thread (which stops even a regex in the middle of backtracking).
 *
 * A pool of up to `size` threads per kind of work, started on demand and reused across jobs (one
 * job at a time each; more jobs wait their turn: a free thread goes to a waiting job of the owner
 * with the fewest jobs running, then the one served least recently, so one key's queue of slow jobs
 * never starves another key's). Two bounds per job:
 * `stallMs`, no progress for this long (the worker reports progress through a shared counter, e.g.
 * once per regex run or per file), and `timeoutMs`, the whole job. A thread that is ended, or
 * dies (its `resourceLimits` exceeded), is replaced by a fresh one for the next job.
 *
 * The worker side is `serveJobs` (workers-side.ts).
 */

export interface WorkerPoolOptions {
  /** Names the pool in errors. */
  name: string;
  /** The worker module, `new URL('./x-worker.js', import.meta.url)`; its `.ts` sibling when running from source (see workerEntry). */
  entry: URL;
  /** Most threads at once (default: the number of CPUs, at most 2). */
  size?: number;
  resourceLimits?: ResourceLimits;
}

export interface JobOptions {
  /** No progress reported for this long: the thread is ended and the job fails with WorkerStalledError. */
  stallMs?: number;
  /** The whole job (from the moment a thread takes it): past it, WorkerStalledError too. */
  timeoutMs?: number;
  /** Buffers moved (not copied) to the worker with the job. */
  transfer?: Transferable[];
  /** Requests the worker makes of this thread while it works (e.g. run a child process, which the main thread owns). The job's clocks stop meanwhile. */
  onRequest?: (request: unknown, signal: AbortSignal) => Promise<{ value: unknown; transfer?: Transferable[] }>;
  /** Cancels the job (its thread is ended). */
  signal?: AbortSignal;
  /** Whose job (an API key's id): a free thread goes to the waiting job whose owner has the fewest running. */
  owner?: string;
  /**
   * Work that may wait (the audit of a refused call): such jobs hold at most all threads but one
   * at once, whoever owns them, so one thread is always free for the rest.
   */
  mayWait?: boolean;
}

/** How long a thread may take to load before its first job (not counted against the job's bounds). */
const STARTUP_MS = 30_000;

/** A job ended for running out of time (stallMs or timeoutMs). */
export class WorkerStalledError extends Error {
  override name = 'WorkerStalledError';
  constructor(
    message: string,
    /** Which bound: 'stall' (no progress) or 'timeout' (the whole job). */
    readonly bound: 'stall' | 'timeout',
    readonly limitMs: number,
  ) {
    super(message);
  }
}

/** A job whose thread died (out of memory under its resourceLimits, a crash). */
export class WorkerDiedError extends Error {
  override name = 'WorkerDiedError';
}

/** An error the worker's handler threw, as it was sent back: its name, message and own fields. */
export class WorkerJobError extends Error {
  constructor(
    override readonly name: string,
    message: string,
    readonly fields: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** tsx's ESM registration API (a development dependency: only for running from source). */
function tsxApi(): string {
  const cjs = createRequire(import.meta.url).resolve('tsx/esm/api');
  return pathToFileURL(cjs.replace(/\.cjs$/, '.mjs')).href;
}

/** The worker module `name` beside the calling module: `name.js` in dist, `name.ts` (loaded through tsx) when running from source (tests, the bench). */
export function workerEntry(callerUrl: string, name: string): URL {
  return new URL(`./${name}${callerUrl.endsWith('.ts') ? '.ts' : '.js'}`, callerUrl);
}

interface Slot {
  worker: Worker;
  progress: Int32Array;
  busy: boolean;
}

interface Queued {
  job: unknown;
  options: JobOptions;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

type FromWorker =
  | { type: 'started'; tid?: number }
  | { type: 'done'; value: unknown }
  | { type: 'failed'; error: { name: string; message: string; fields: Record<string, unknown> } }
  | { type: 'request'; rid: number; request: unknown };

/**
 * CPU time (ms) thread `tid` of this process has used (Linux /proc; clock ticks of 10 ms);
 * undefined when it cannot be read (no /proc, the thread is gone).
 */
function threadCpuMs(tid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/** A job running this long wall time is past its bound whatever its CPU time says (a thread held off the CPU for good). */
const WALL_FACTOR = 4;

/**
 * Whether a job has run out of `timeoutMs`: of its thread's own CPU time where it can be read
 * (a busy machine, where the niced thread waits for the CPU, does not make a set "too slow to
 * load"), else of wall time (`wall`: the job's running time, requests to this thread left out);
 * and at WALL_FACTOR times the bound of wall time in any case.
 */
function jobTimeSpent(wall: number, tid: number | undefined, cpuAtStart: number | undefined, timeoutMs: number): boolean {
  if (wall >= WALL_FACTOR * timeoutMs) return true;
  const cpu = tid === undefined || cpuAtStart === undefined ? undefined : threadCpuMs(tid);
  return (cpu === undefined ? wall : cpu - cpuAtStart!) >= timeoutMs;
}

/**
 * Ends a worker thread. One still loading its modules (`loaded` false) is ended once it has
 * loaded them (it says 'started' as it takes its job, or it exits), at most STARTUP_MS later: a
 * thread ended while its module loader reads files leaves those descriptors open for good (Node
 * closes what the thread's own code opened, not its loader's reads in flight).
 */
function endThreadOnceLoaded(worker: Worker, loaded: boolean): void {
  if (loaded) return void worker.terminate().catch(() => undefined);
  worker.unref();
  const started = waitBounded<'started' | 'exited'>(
    (settle) => {
      const onMessage = (msg: FromWorker) => {
        if (msg.type === 'started') settle('started');
      };
      const onExit = () => settle('exited');
      worker.on('message', onMessage);
      worker.once('exit', onExit);
      return () => {
        worker.off('message', onMessage);
        worker.off('exit', onExit);
      };
    },
    { timeoutMs: STARTUP_MS },
  );
  void started.then((outcome) => {
    if (outcome.kind !== 'value' || outcome.value === 'started') void worker.terminate().catch(() => undefined);
  });
}

export class WorkerPool {
  private readonly slots: Slot[] = [];
  /** Every thread not yet exited (a thread ended for good leaves `slots` at once, this at its exit). */
  private readonly alive = new Set<Worker>();
  private readonly queue: Queued[] = [];
  /** Jobs running per owner. */
  private readonly running = new Map<string, number>();
  /** When each owner's last job started (a count of jobs started). */
  private readonly lastServed = new Map<string, number>();
  private started = 0;
  /** Jobs running that may wait (JobOptions.mayWait). */
  private mayWaitRunning = 0;
  private readonly size: number;
  /** Most threads one owner's jobs hold at once: one is always left for the other owners (with 2 threads, 1 each). */
  private readonly perOwner: number;
  private closed = false;

  constructor(private readonly options: WorkerPoolOptions) {
    this.size = Math.max(1, options.size ?? Math.min(2, availableParallelism()));
    this.perOwner = Math.max(1, this.size - 1);
  }

  /** Runs `job` on a thread of the pool; resolves with what the worker's handler returned. */
  run<T>(job: unknown, options: JobOptions = {}): Promise<T> {
    if (this.closed) return Promise.reject(new Error(`${this.options.name}: the worker pool is closed`));
    if (options.signal?.aborted) return Promise.reject(options.signal.reason ?? new Error('cancelled'));
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ job, options, resolve: resolve as (v: unknown) => void, reject });
      this.pump();
    });
  }

  /** Jobs of `owner` waiting for a thread (not those running). */
  waiting(owner: string): number {
    let n = 0;
    for (const q of this.queue) if ((q.options.owner ?? '') === owner) n++;
    return n;
  }

  /** Threads alive now, those still being ended included (never more than the pool's size). */
  get threads(): number {
    return this.alive.size;
  }

  /** Ends every thread; queued jobs fail. */
  async close(): Promise<void> {
    this.closed = true;
    for (const q of this.queue.splice(0)) q.reject(new Error(`${this.options.name}: the worker pool is closed`));
    await Promise.all(this.slots.splice(0).map((s) => s.worker.terminate().catch(() => undefined)));
  }

  private pump(): void {
    while (this.queue.length > 0) {
      let slot = this.slots.find((s) => !s.busy);
      if (!slot) {
        if (this.slots.length >= this.size) return;
        slot = this.spawn();
      }
      const fairest = this.fairest();
      // Every waiting owner already holds its share of threads: the free one waits for another owner.
      if (fairest === -1) return;
      const next = this.queue.splice(fairest, 1)[0]!;
      if (next.options.signal?.aborted) {
        next.reject(next.options.signal.reason ?? new Error('cancelled'));
        continue;
      }
      this.start(slot, next);
    }
  }

  /**
   * The next job to run: its owner has the fewest jobs running, then was served least recently;
   * then the oldest. -1 when every waiting job's owner already holds `perOwner` threads (or every
   * waiting job may wait and such jobs already hold all threads but one).
   */
  private fairest(): number {
    let best = 0;
    let bestRunning = Infinity;
    let bestServed = Infinity;
    const waitersFull = this.mayWaitRunning >= Math.max(1, this.size - 1);
    for (let i = 0; i < this.queue.length; i++) {
      if (waitersFull && this.queue[i]!.options.mayWait) continue;
      const owner = this.queue[i]!.options.owner ?? '';
      const running = this.running.get(owner) ?? 0;
      const served = this.lastServed.get(owner) ?? -1;
      if (running < bestRunning || (running === bestRunning && served < bestServed)) {
        best = i;
        bestRunning = running;
        bestServed = served;
      }
    }
    return bestRunning < this.perOwner ? best : -1;
  }

  private spawn(): Slot {
    const progress = new Int32Array(new SharedArrayBuffer(4));
    const fromSource = this.options.entry.pathname.endsWith('.ts');
    const options = {
      workerData: { progress },
      ...(this.options.resourceLimits ? { resourceLimits: this.options.resourceLimits } : {}),
      stdout: false,
      stderr: false,
    };
    // From source (tests, the bench), the worker's TypeScript is loaded through tsx, registered in the thread first.
    const worker = fromSource
      ? new Worker(`import(${JSON.stringify(tsxApi())}).then((tsx) => { tsx.register(); return import(${JSON.stringify(this.options.entry.href)}); })`, { ...options, eval: true })
      : new Worker(this.options.entry, options);
    worker.unref();
    const slot: Slot = { worker, progress, busy: false };
    this.slots.push(slot);
    // A thread that dies while idle is simply dropped; one that dies mid-job fails that job (start()).
    worker.on('error', () => undefined);
    this.alive.add(worker);
    worker.once('exit', () => {
      this.alive.delete(worker);
      this.drop(slot);
      this.pump();
    });
    return slot;
  }

  private drop(slot: Slot): void {
    const i = this.slots.indexOf(slot);
    if (i !== -1) this.slots.splice(i, 1);
  }

  private start(slot: Slot, q: Queued): void {
    const { worker, progress } = slot;
    const { stallMs, timeoutMs, onRequest, signal } = q.options;
    slot.busy = true;
    worker.ref();
    const owner = q.options.owner ?? '';
    this.running.set(owner, (this.running.get(owner) ?? 0) + 1);
    this.lastServed.set(owner, ++this.started);
    if (q.options.mayWait) this.mayWaitRunning++;
    const requests = new AbortController();
    let outstanding = 0;
    let settled = false;
    let lastSeen = Atomics.load(progress, 0);
    let lastChange = performance.now();
    let ran = 0; // ms of the job's own running time before the last request
    let runningSince = performance.now();
    // The clocks start when the thread has the job (a new thread loads its modules first).
    const posted = performance.now();
    let begun = false;
    /** The thread's kernel id and its CPU time (ms) when it took the job: the job's time is the thread's own CPU time. */
    let tid: number | undefined;
    let cpuAtStart: number | undefined;
    /** The thread did not load within STARTUP_MS: it is ended as it is. */
    let loadFailed = false;

    const finish = (err: unknown, value?: unknown, endThread = false) => {
      if (settled) return;
      settled = true;
      clearInterval(watch);
      signal?.removeEventListener('abort', onAbort);
      worker.off('message', onMessage);
      worker.off('exit', onExit);
      worker.off('error', onError);
      requests.abort();
      if (q.options.mayWait) this.mayWaitRunning--;
      const left = (this.running.get(owner) ?? 1) - 1;
      if (left > 0) this.running.set(owner, left);
      else this.running.delete(owner);
      // Owners with nothing running or waiting are forgotten (the map stays as small as the queue).
      if (left <= 0 && !this.queue.some((j) => (j.options.owner ?? '') === owner)) this.lastServed.delete(owner);
      if (endThread) {
        // A thread still loading its modules keeps its place (busy) until it has loaded and ended
        // (spawn's exit handler frees it), so cancels at start-up never pile up threads.
        if (begun || loadFailed) this.drop(slot);
        endThreadOnceLoaded(worker, begun || loadFailed);
      } else {
        slot.busy = false;
        worker.unref();
      }
      if (err === undefined) q.resolve(value);
      else q.reject(err);
      this.pump();
    };
    const onAbort = () => finish(signal?.reason ?? new Error('cancelled'), undefined, true);
    const onExit = (code: number) => finish(new WorkerDiedError(`${this.options.name}: the worker thread ended (exit code ${code})`), undefined, true);
    const onError = (err: Error) => {
      const oom = (err as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY';
      finish(new WorkerDiedError(oom ? `${this.options.name}: the work ran out of its memory bound` : `${this.options.name}: the worker thread failed: ${err.message}`), undefined, true);
    };
    const onMessage = (msg: FromWorker) => {
      if (msg.type === 'started') {
        begun = true;
        tid = msg.tid;
        cpuAtStart = tid === undefined ? undefined : threadCpuMs(tid);
        lastSeen = Atomics.load(progress, 0);
        lastChange = runningSince = performance.now();
        return;
      }
      if (msg.type === 'done') return finish(undefined, msg.value);
      if (msg.type === 'failed') return finish(new WorkerJobError(msg.error.name, msg.error.message, msg.error.fields));
      if (msg.type === 'request') {
        if (!onRequest) return worker.postMessage({ type: 'reply', rid: msg.rid, error: 'this job takes no requests' });
        // The clocks stop while this thread works for the worker.
        if (outstanding++ === 0) ran += performance.now() - runningSince;
        onRequest(msg.request, requests.signal)
          .then(
            (answer) => {
              if (!settled) worker.postMessage({ type: 'reply', rid: msg.rid, value: answer.value }, answer.transfer ?? []);
            },
            (err: unknown) => {
              if (!settled) worker.postMessage({ type: 'reply', rid: msg.rid, error: err instanceof Error ? err.message : String(err) });
            },
          )
          .finally(() => {
            if (--outstanding === 0) {
              runningSince = performance.now();
              lastChange = runningSince;
            }
          });
      }
    };
    const check = () => {
      const now = performance.now();
      if (!begun) {
        if (now - posted >= STARTUP_MS) {
          loadFailed = true;
          finish(new WorkerDiedError(`${this.options.name}: the worker thread did not start within ${STARTUP_MS} ms`), undefined, true);
        }
        return;
      }
      if (outstanding > 0) return;
      const seen = Atomics.load(progress, 0);
      if (seen !== lastSeen) {
        lastSeen = seen;
        lastChange = now;
      }
      if (stallMs !== undefined && now - lastChange >= stallMs) {
        finish(new WorkerStalledError(`${this.options.name}: no progress for ${stallMs} ms`, 'stall', stallMs), undefined, true);
      } else if (timeoutMs !== undefined && jobTimeSpent(ran + (now - runningSince), tid, cpuAtStart, timeoutMs)) {
        finish(new WorkerStalledError(`${this.options.name}: still running after ${timeoutMs} ms`, 'timeout', timeoutMs), undefined, true);
      }
    };
    const bound = Math.min(stallMs ?? Infinity, timeoutMs ?? Infinity);
    const watch = setInterval(check, Number.isFinite(bound) ? Math.max(20, Math.min(250, bound / 8)) : 1000);
    watch.unref();
    worker.on('message', onMessage);
    worker.once('exit', onExit);
    worker.on('error', onError);
    signal?.addEventListener('abort', onAbort, { once: true });
    worker.postMessage({ type: 'job', job: q.job }, q.options.transfer ?? []);
  }
}
