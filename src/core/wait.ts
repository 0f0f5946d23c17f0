/**
 * The one bounded wait: for a promise or an event, with a timeout, an optional AbortSignal, and
 * cleanup of the timer and listeners whichever way it ends. It never rejects on timeout or abort;
 * the caller decides what those mean (an error, "still running", a pause).
 */
export type WaitOutcome<T> = { kind: 'value'; value: T } | { kind: 'timeout' } | { kind: 'aborted' };

export interface BoundOptions {
  /** How long to wait; <= 0 gives up at once unless the value is already there. */
  timeoutMs: number;
  signal?: AbortSignal;
  /**
   * Keep the process alive while waiting (a ref'd timer). Default false: a wait never holds the
   * process up; a wait that must finish whatever else is left (ending a process tree) sets it.
   */
  keepAlive?: boolean;
}

/** setTimeout fires at once for larger delays, which would turn a long bound into none. */
export const MAX_TIMEOUT_MS = 2_147_483_647;

/**
 * Waits until `subscribe` calls `settle`, the bound passes, or `signal` aborts. `subscribe` may
 * return a cleanup (remove a listener); it runs exactly once, after the outcome is decided.
 */
export function waitBounded<T>(subscribe: (settle: (value: T) => void) => (() => void) | void, { timeoutMs, signal, keepAlive = false }: BoundOptions): Promise<WaitOutcome<T>> {
  return new Promise((resolve) => {
    let done = false;
    // Both are set after finish() is made, which reads them: let, not const.
    // eslint-disable-next-line prefer-const
    let cleanup: (() => void) | void;
    // eslint-disable-next-line prefer-const
    let timer: NodeJS.Timeout | undefined;
    const finish = (outcome: WaitOutcome<T>) => {
      if (done) return;
      done = true;
      if (timer) clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      // The subscription may settle synchronously, before it returned its cleanup.
      queueMicrotask(() => cleanup?.());
      resolve(outcome);
    };
    const onAbort = () => finish({ kind: 'aborted' });
    if (signal?.aborted) return finish({ kind: 'aborted' });
    signal?.addEventListener('abort', onAbort, { once: true });
    cleanup = subscribe((value) => finish({ kind: 'value', value }));
    if (done) return;
    if (timeoutMs <= 0) return finish({ kind: 'timeout' });
    timer = setTimeout(() => finish({ kind: 'timeout' }), Math.min(timeoutMs, MAX_TIMEOUT_MS));
    if (!keepAlive) timer.unref();
  });
}

/** A promise, bounded: its value, or "timeout", or "aborted". A rejection of `promise` rejects. */
export function boundPromise<T>(promise: Promise<T>, options: BoundOptions): Promise<WaitOutcome<T>> {
  let failed: { err: unknown } | undefined;
  const outcome = waitBounded<T | typeof FAILED>((settle) => {
    promise.then(settle, (err: unknown) => {
      failed = { err };
      settle(FAILED);
    });
  }, options);
  return outcome.then((o) => {
    if (failed) throw failed.err;
    return o as WaitOutcome<T>;
  });
}

const FAILED: unique symbol = Symbol('failed');

/** Sleeps `ms` (unref'd: never keeps the process alive, unless `keepAlive`), or less if `signal` aborts. */
export async function sleep(ms: number, signal?: AbortSignal, { keepAlive = false }: { keepAlive?: boolean } = {}): Promise<void> {
  await waitBounded(() => undefined, { timeoutMs: ms, signal, keepAlive });
}

/**
 * The one poll loop: checks `done` every `intervalMs` until it holds (true) or `timeoutMs` has
 * passed (false; `done` is checked at least once). Its pauses keep the process alive: what is
 * polled for this way (a process tree to be gone) must be seen through even at exit.
 */
export async function pollUntil(done: () => boolean, { timeoutMs, intervalMs }: { timeoutMs: number; intervalMs: number }): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) return false;
    await sleep(intervalMs, undefined, { keepAlive: true });
  }
  return true;
}

/** Lets the event loop run what is waiting (I/O, timers, other clients' calls) before going on. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * A budget of main-thread time for long synchronous work done in steps: `over()` once `ms` has
 * been spent since the slice began, `pause()` hands the loop to others when it has (and begins the
 * next slice). Work that can take long per call keeps the server answering everyone else this way.
 */
export class TimeSlice {
  private began = performance.now();
  constructor(private readonly ms: number) {}

  over(): boolean {
    return performance.now() - this.began >= this.ms;
  }

  /** Begins a new slice now. */
  restart(): void {
    this.began = performance.now();
  }

  /** Yields to the event loop if this slice is spent. */
  async pause(): Promise<void> {
    if (!this.over()) return;
    await nextTurn();
    this.restart();
  }
}
