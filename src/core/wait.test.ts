import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { boundPromise, onceBounded, pollUntil, sleep, TimeSlice, TURN_MS, waitBounded } from './wait.js';

describe('waitBounded', () => {
  it('settles with the value and runs the cleanup once', async () => {
    const events = new EventEmitter();
    let cleanups = 0;
    const waiting = waitBounded<number>(
      (settle) => {
        events.on('v', settle);
        return () => {
          cleanups++;
          events.off('v', settle);
        };
      },
      { timeoutMs: 10_000 },
    );
    events.emit('v', 7);
    events.emit('v', 8);
    expect(await waiting).toEqual({ kind: 'value', value: 7 });
    await sleep(0); // a pause, not a wait: a turn for a late cleanup, which must not come
    expect(cleanups).toBe(1);
    expect(events.listenerCount('v')).toBe(0);
  });

  it('settles synchronously inside subscribe and still cleans up', async () => {
    let cleaned = false;
    const outcome = await waitBounded<string>(
      (settle) => {
        settle('now');
        return () => (cleaned = true);
      },
      { timeoutMs: 0 },
    );
    expect(outcome).toEqual({ kind: 'value', value: 'now' });
    await sleep(0); // a pause, not a wait: a turn, then the cleanup has run once
    expect(cleaned).toBe(true);
  });

  it('times out, and a timeout of 0 gives up at once', async () => {
    let cleaned = 0;
    expect(await waitBounded(() => () => cleaned++, { timeoutMs: 20 })).toEqual({ kind: 'timeout' });
    expect(await waitBounded(() => () => cleaned++, { timeoutMs: 0 })).toEqual({ kind: 'timeout' });
    await sleep(0); // a pause, not a wait: a turn, then each cleanup has run once
    expect(cleaned).toBe(2);
  });

  it('answers "aborted" for an aborted signal, before or during the wait, and removes its listener', async () => {
    const before = new AbortController();
    before.abort();
    expect(await waitBounded(() => undefined, { timeoutMs: 10_000, signal: before.signal })).toEqual({ kind: 'aborted' });
    const during = new AbortController();
    const waiting = waitBounded(() => undefined, { timeoutMs: 10_000, signal: during.signal });
    during.abort();
    expect(await waiting).toEqual({ kind: 'aborted' });
  });
});

describe('boundPromise', () => {
  it('gives the value, a timeout, or the rejection', async () => {
    expect(await boundPromise(Promise.resolve(1), { timeoutMs: 100 })).toEqual({ kind: 'value', value: 1 });
    expect(await boundPromise(new Promise(() => undefined), { timeoutMs: 10 })).toEqual({ kind: 'timeout' });
    await expect(boundPromise(Promise.reject(new Error('boom')), { timeoutMs: 100 })).rejects.toThrow('boom');
  });

  it('a late rejection after a timeout is not unhandled', async () => {
    let reject!: (e: Error) => void;
    const late = new Promise((_, r) => (reject = r));
    expect(await boundPromise(late, { timeoutMs: 5 })).toEqual({ kind: 'timeout' });
    reject(new Error('late'));
    await sleep(5); // a pause, not a wait: an unhandled rejection would be reported by now
  });
});

describe('onceBounded', () => {
  it('tells the event, an error, a close or the bound apart, and leaves no listener behind', async () => {
    const cases: [string, (e: EventEmitter) => void, string][] = [
      ['event', (e) => e.emit('connect'), 'value'],
      ['error', (e) => e.emit('error', new Error('refused')), 'error'],
      ['close', (e) => e.emit('close'), 'closed'],
      ['nothing', () => undefined, 'timeout'],
    ];
    for (const [, act, kind] of cases) {
      const e = new EventEmitter();
      const waiting = onceBounded(e, 'connect', { timeoutMs: 30 });
      act(e);
      const outcome = await waiting;
      expect(outcome.kind).toBe(kind);
      if (outcome.kind === 'error') expect(outcome.error.message).toBe('refused');
      await sleep(0); // a pause, not a wait: a turn, then no listener is left
      expect(e.eventNames()).toEqual([]);
    }
  });
});

describe('pollUntil', () => {
  it('polls with a check that fetches what it checks', async () => {
    let n = 0;
    expect(await pollUntil(async () => (await Promise.resolve(++n)) >= 3, { timeoutMs: 5000, intervalMs: 1 })).toBe(true);
    expect(n).toBe(3);
  });

  it('checks until the condition holds, or gives up after the bound (checking at least once)', async () => {
    let checks = 0;
    expect(await pollUntil(() => ++checks >= 3, { timeoutMs: 1000, intervalMs: 1 })).toBe(true);
    expect(checks).toBe(3);
    expect(await pollUntil(() => true, { timeoutMs: 0, intervalMs: 1 })).toBe(true);
    const started = Date.now();
    expect(await pollUntil(() => false, { timeoutMs: 30, intervalMs: 5 })).toBe(false);
    expect(Date.now() - started).toBeGreaterThanOrEqual(30);
  });
});

describe('keepAlive', () => {
  it("a wait's timer is unref'd unless the wait keeps the process alive", async () => {
    const refs: boolean[] = [];
    const real = globalThis.setTimeout;
    const spy = ((fn: () => void, ms: number) => {
      const timer = real(fn, ms);
      const unref = timer.unref.bind(timer);
      refs.push(true);
      timer.unref = () => {
        refs[refs.length - 1] = false;
        return unref();
      };
      return timer;
    }) as unknown as typeof setTimeout;
    globalThis.setTimeout = spy;
    try {
      await sleep(1);
      await sleep(1, undefined, { keepAlive: true });
    } finally {
      globalThis.setTimeout = real;
    }
    expect(refs).toEqual([false, true]);
  });
});

describe('TimeSlice: one share of the loop for all long work', () => {
  /** Spins for `ms` of wall time (a step of synchronous work). */
  const spin = (ms: number) => {
    const end = performance.now() + ms;
    while (performance.now() < end);
  };

  it('many busy workers cost the loop one turn budget between I/O callbacks, not one each, and each gets its turn', async () => {
    const WORKERS = 40;
    const STEP_MS = 1;
    const steps = new Array<number>(WORKERS).fill(0);
    let stop = false;
    // "I/O": a timer callback, which runs in every turn of the loop; how many steps ran since the last one.
    let sinceTick = 0;
    const between: number[] = [];
    const tick = setInterval(() => {
      between.push(sinceTick);
      sinceTick = 0;
    }, 1);
    const worker = async (i: number) => {
      const slice = new TimeSlice(10);
      while (!stop) {
        if (slice.over()) await slice.pause();
        spin(STEP_MS);
        steps[i]!++;
        sinceTick++;
      }
    };
    const running = Array.from({ length: WORKERS }, (_, i) => worker(i));
    await pollUntil(() => between.length >= 30, { timeoutMs: 20_000, intervalMs: 5 });
    stop = true;
    clearInterval(tick);
    await Promise.all(running);
    // Without the shared budget each worker took its own 10 ms per turn: 400 steps between ticks.
    const most = Math.max(...between.slice(1));
    expect(most, `steps between I/O callbacks: ${between.join(' ')}`).toBeLessThanOrEqual(3 * (TURN_MS / STEP_MS) + 2);
    expect(Math.min(...steps), `steps per worker: ${steps.join(' ')}`).toBeGreaterThan(0);
  });
});
