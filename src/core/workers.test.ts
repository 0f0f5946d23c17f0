import { afterAll, describe, expect, it } from 'vitest';
import { workerEntry, WorkerPool, WorkerStalledError } from './workers.js';

const pool = new WorkerPool({ name: 'test', size: 1, entry: workerEntry(new URL('./workers.ts', import.meta.url).href, 'testing') });
afterAll(() => pool.close());

describe("WorkerPool: a job is bounded by its thread's own CPU time", () => {
  it('a job that waits without using the CPU is not "out of time" (a busy machine, where the thread waits for the CPU, is no slow job)', async () => {
    expect(await pool.run({ op: 'sleep', ms: 900 }, { timeoutMs: 300 })).toBe('slept');
  });

  it('a job that burns its CPU time past the bound is ended, saying so', async () => {
    const err = await pool.run({ op: 'spin', ms: 20_000 }, { timeoutMs: 300 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkerStalledError);
    expect((err as WorkerStalledError).bound).toBe('timeout');
  });

  it('and one that waits past four times the bound is ended all the same', async () => {
    const err = await pool.run({ op: 'sleep', ms: 20_000 }, { timeoutMs: 200 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkerStalledError);
  });
});

describe('WorkerPool: work that may wait leaves a thread free for the rest', () => {
  const two = new WorkerPool({ name: 'test-two', size: 2, entry: workerEntry(new URL('./workers.ts', import.meta.url).href, 'testing') });
  afterAll(() => two.close());

  it('jobs marked mayWait, of two owners, hold one thread of two: a third owner is served at once, and waiting() counts what waits', async () => {
    const order: string[] = [];
    const slow = ['a', 'b', 'a', 'b'].map((owner, i) => two.run({ op: 'sleep', ms: 3_000 }, { owner, mayWait: true }).then(() => order.push(`${owner}${i}`)));
    expect(two.waiting('a') + two.waiting('b')).toBe(3);
    await two.run({ op: 'sleep', ms: 1 }, { owner: 'c' }).then(() => order.push('c'));
    // Before: owners a and b held a thread each, and c waited for one of their jobs to end.
    expect(order).toEqual(['c']);
    await Promise.all(slow);
    expect(two.waiting('a')).toBe(0);
  }, 30_000);
});
