import type { EventEmitter } from 'node:events';

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
      // Listeners go at once, inside the event that settled: whoever reads an emitter next must be
      // the only one listening. (Settled inside `subscribe`: its cleanup runs when it returns.)
      cleanup?.();
      resolve(outcome);
    };
    const onAbort = () => finish({ kind: 'aborted' });
    if (signal?.aborted) return finish({ kind: 'aborted' });
    signal?.addEventListener('abort', onAbort, { once: true });
    cleanup = subscribe((value) => finish({ kind: 'value', value }));
    if (done) return void cleanup?.();
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

/** How an event waited for with `onceBounded` ended, beside its value, a timeout or an abort. */
export type EventOutcome = WaitOutcome<void> | { kind: 'error'; error: Error } | { kind: 'closed' };

/**
 * Waits for `event` on `emitter` (a socket's `connect`, a TLS `secure`), bounded: `value` when it
 * came, `error` when the emitter raised one first, `closed` when it closed first, or a timeout or
 * abort. Its listeners are removed whichever way it ends: the caller adds its own for what follows.
 */
export async function onceBounded(emitter: EventEmitter, event: string, options: BoundOptions): Promise<EventOutcome> {
  const outcome = await waitBounded<EventOutcome>((settle) => {
    const onEvent = () => settle({ kind: 'value', value: undefined });
    const onError = (error: Error) => settle({ kind: 'error', error });
    const onClose = () => settle({ kind: 'closed' });
    emitter.once(event, onEvent);
    emitter.once('error', onError);
    emitter.once('close', onClose);
    return () => {
      emitter.off(event, onEvent);
      emitter.off('error', onError);
      emitter.off('close', onClose);
    };
  }, options);
  return outcome.kind === 'value' ? outcome.value : outcome;
}

/** Sleeps `ms` (unref'd: never keeps the process alive, unless `keepAlive`), or less if `signal` aborts. */
export async function sleep(ms: number, signal?: AbortSignal, { keepAlive = false }: { keepAlive?: boolean } = {}): Promise<void> {
  await waitBounded(() => undefined, { timeoutMs: ms, signal, keepAlive });
}

/**
 * The one poll loop: checks `done` (which may fetch what it checks) every `intervalMs` until it holds (true) or `timeoutMs` has
 * passed (false; `done` is checked at least once). Its pauses keep the process alive: what is
 * polled for this way (a process tree to be gone) must be seen through even at exit.
 */
export async function pollUntil(done: () => boolean | Promise<boolean>, { timeoutMs, intervalMs }: { timeoutMs: number; intervalMs: number }): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
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
 * The main thread's time for long work done in steps (TimeSlice), shared by all of it: together
 * the slices run at most TURN_MS per turn of the event loop, then I/O (other clients' requests)
 * goes first. A slice that has to wait gets the next share in turn: those the turn's budget cut
 * short go first, then those that used their own time, each in the order they came (round robin).
 * So a hundred busy connections cost others one share per turn, not a hundred.
 */
export const TURN_MS = 10;

/** When the open turn's budget is spent (performance.now()); undefined when no turn is open. */
let turnEnds: number | undefined;
/** Work waiting for its share: cut short by the turn first, then the rest. */
const cutShort: Array<() => void> = [];
const usedOwn: Array<() => void> = [];
let turnScheduled = false;

/** The open turn's end, opening a turn (and its end, in this turn's check phase) when none is. */
function turnEnd(): number {
  if (turnEnds === undefined) {
    turnEnds = performance.now() + TURN_MS;
    scheduleTurnEnd();
  }
  return turnEnds;
}

function scheduleTurnEnd(): void {
  if (turnScheduled) return;
  turnScheduled = true;
  setImmediate(endTurn);
}

/** Closes the turn (I/O ran before it): the first waiting work gets the new one. */
function endTurn(): void {
  turnScheduled = false;
  turnEnds = undefined;
  wakeNext();
}

/** Wakes the first waiting work (the turn's budget goes to it, then on from it, TimeSlice.next); the rest wait for theirs. */
function wakeNext(): void {
  const wake = cutShort.shift() ?? usedOwn.shift();
  if (cutShort.length + usedOwn.length > 0) scheduleTurnEnd();
  wake?.();
}

/** Resolves when this work's share of the loop comes (`cutShort`: the turn's budget stopped it before its own). */
export function nextShare(cutShortByTurn = false): Promise<void> {
  return new Promise((resolve) => {
    (cutShortByTurn ? cutShort : usedOwn).push(resolve);
    scheduleTurnEnd();
  });
}

/**
 * A budget of main-thread time for long synchronous work done in steps: `over()` once `ms` has
 * been spent since the slice began, or the turn's shared budget (TURN_MS, above) is; `pause()`
 * waits for the next share when it is (and begins the next slice); `next()` only waits. Work that
 * can take long per call keeps the server answering everyone else this way. Work is woken one at
 * a time: what is left of a turn when one stops goes to the next in line, so no work is woken
 * only to find the turn spent by the others woken with it.
 */
export class TimeSlice {
  private began = performance.now();
  constructor(private readonly ms: number) {}

  over(): boolean {
    const now = performance.now();
    return now - this.began >= this.ms || now >= turnEnd();
  }

  /** Begins a new slice now. */
  restart(): void {
    this.began = performance.now();
  }

  /**
   * Waits for this work's next share of the loop if this slice is spent, then begins the next
   * slice (waiting again while the turn is spent: what was woken with others gets no work in
   * before its turn).
   */
  async pause(): Promise<void> {
    while (this.over()) {
      await this.next();
      this.restart();
    }
  }

  /**
   * Waits for this work's next share of the loop: first in line when the turn, not its own time,
   * stopped it. What is left of the turn goes to the next in line (this work itself, when none).
   */
  next(): Promise<void> {
    const now = performance.now();
    const share = nextShare(now - this.began < this.ms);
    if (turnEnds !== undefined && now < turnEnds) wakeNext();
    return share;
  }
}

/**
 * Runs `work` after every earlier call with the same `key` in `queue` has settled (each in turn,
 * one at a time per key; a failure does not stop the next), and forgets the key once the last ends.
 */
export async function oneAtATime<T>(queue: Map<string, Promise<unknown>>, key: string, work: () => Promise<T>): Promise<T> {
  const mine = (queue.get(key) ?? Promise.resolve()).catch(() => undefined).then(work);
  const tail = mine.catch(() => undefined);
  queue.set(key, tail);
  try {
    return await mine;
  } finally {
    if (queue.get(key) === tail) queue.delete(key);
  }
}
