import { afterEach, describe, expect, it, vi } from 'vitest';
import { TimeoutError } from './errors.js';
import { PendingTable } from './pending.js';

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/** Settles to a tagged result so a test can inspect a promise without an unhandled rejection. */
function settle<T>(promise: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  return promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

describe('PendingTable add/resolve/reject', () => {
  it('starts empty', () => {
    const table = new PendingTable<number, string>();
    expect(table.size).toBe(0);
    expect(table.has(1)).toBe(false);
  });

  it('resolve settles the promise with the value and removes the entry', async () => {
    const table = new PendingTable<number, string>();
    const p = table.add(1, 0, 'req 1');
    expect(table.size).toBe(1);
    expect(table.has(1)).toBe(true);
    expect(table.resolve(1, 'reply')).toBe(true);
    await expect(p).resolves.toBe('reply');
    expect(table.size).toBe(0);
    expect(table.has(1)).toBe(false);
  });

  it('reject settles the promise with the given error and removes the entry', async () => {
    const table = new PendingTable<string, number>();
    const p = table.add('tok', 0, 'req');
    const err = new Error('engine said no');
    expect(table.reject('tok', err)).toBe(true);
    await expect(p).rejects.toBe(err);
    expect(table.has('tok')).toBe(false);
  });

  it('passes non-Error rejection values through unchanged', async () => {
    const table = new PendingTable<number, number>();
    const p = table.add(7, 0, 'req');
    table.reject(7, { message: 'plain object' });
    await expect(p).rejects.toEqual({ message: 'plain object' });
  });

  it('matches each key to its own promise', async () => {
    const table = new PendingTable<number, string>();
    const a = table.add(1, 0, 'a');
    const b = table.add(2, 0, 'b');
    const c = table.add(3, 0, 'c');
    expect(table.size).toBe(3);
    table.resolve(2, 'two');
    table.resolve(3, 'three');
    table.resolve(1, 'one');
    await expect(Promise.all([a, b, c])).resolves.toEqual(['one', 'two', 'three']);
    expect(table.size).toBe(0);
  });

  it('returns false for an unknown key (unsolicited reply) and leaves others alone', async () => {
    const table = new PendingTable<number, string>();
    const p = table.add(1, 0, 'a');
    expect(table.resolve(99, 'x')).toBe(false);
    expect(table.reject(99, new Error('x'))).toBe(false);
    expect(table.size).toBe(1);
    table.resolve(1, 'ok');
    await expect(p).resolves.toBe('ok');
  });

  it('returns false on a second resolve or reject of the same key', async () => {
    const table = new PendingTable<number, string>();
    const p = table.add(1, 0, 'a');
    expect(table.resolve(1, 'first')).toBe(true);
    expect(table.resolve(1, 'second')).toBe(false);
    expect(table.reject(1, new Error('late'))).toBe(false);
    await expect(p).resolves.toBe('first');
  });

  it('allows a key to be reused once its entry settled', async () => {
    const table = new PendingTable<number, string>();
    const first = table.add(1, 0, 'a');
    table.resolve(1, 'one');
    await expect(first).resolves.toBe('one');
    const second = table.add(1, 0, 'a again');
    table.resolve(1, 'uno');
    await expect(second).resolves.toBe('uno');
  });
});

describe('PendingTable duplicate keys', () => {
  it('rejects a second add with the same key and keeps the first entry waiting', async () => {
    const table = new PendingTable<number, string>();
    const first = table.add(5, 0, 'first');
    const dup = table.add(5, 0, 'second');
    await expect(dup).rejects.toThrow(new Error('duplicate pending request key 5'));
    expect(table.size).toBe(1);
    expect(table.resolve(5, 'for the first')).toBe(true);
    await expect(first).resolves.toBe('for the first');
  });

  it('names string keys in the duplicate message', async () => {
    const table = new PendingTable<string, string>();
    void settle(table.add('abc', 0, 'x'));
    await expect(table.add('abc', 0, 'y')).rejects.toThrow('duplicate pending request key abc');
    table.rejectAll(new Error('cleanup'));
  });

  it('does not let a duplicate add start a second timer that could expire the first entry', async () => {
    vi.useFakeTimers();
    const table = new PendingTable<number, string>();
    const first = settle(table.add(1, 0, 'no bound'));
    await settle(table.add(1, 10, 'dup with bound'));
    vi.advanceTimersByTime(1000);
    expect(table.has(1)).toBe(true);
    table.resolve(1, 'still here');
    await expect(first).resolves.toEqual({ ok: true, value: 'still here' });
  });
});

describe('PendingTable timeouts', () => {
  it('rejects with TimeoutError naming the label and bound, and removes the entry', async () => {
    vi.useFakeTimers();
    const table = new PendingTable<number, string>();
    const p = settle(table.add(1, 500, '-break-insert main'));
    vi.advanceTimersByTime(499);
    expect(table.has(1)).toBe(true);
    vi.advanceTimersByTime(1);
    expect(table.has(1)).toBe(false);
    expect(table.size).toBe(0);
    const result = await p;
    expect(result.ok).toBe(false);
    const err = (result as { error: unknown }).error;
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as TimeoutError).code).toBe('TIMEOUT');
    expect((err as TimeoutError).message).toBe('-break-insert main got no reply within 500 ms');
  });

  it('a late resolve after the timeout returns false and does not change the outcome', async () => {
    vi.useFakeTimers();
    const table = new PendingTable<number, string>();
    const p = settle(table.add(1, 100, 'req'));
    vi.advanceTimersByTime(100);
    expect(table.resolve(1, 'too late')).toBe(false);
    expect(table.reject(1, new Error('too late'))).toBe(false);
    const result = await p;
    expect(result.ok).toBe(false);
    expect((result as { error: unknown }).error).toBeInstanceOf(TimeoutError);
  });

  it('resolving in time cancels the timer', async () => {
    vi.useFakeTimers();
    const table = new PendingTable<number, string>();
    const p = table.add(1, 100, 'req');
    expect(vi.getTimerCount()).toBe(1);
    table.resolve(1, 'in time');
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(1000);
    await expect(p).resolves.toBe('in time');
  });

  it('rejecting in time cancels the timer', async () => {
    vi.useFakeTimers();
    const table = new PendingTable<number, string>();
    const p = settle(table.add(1, 100, 'req'));
    table.reject(1, new Error('nope'));
    expect(vi.getTimerCount()).toBe(0);
    expect(await p).toEqual({ ok: false, error: new Error('nope') });
  });

  it('times entries out independently', async () => {
    vi.useFakeTimers();
    const table = new PendingTable<number, string>();
    const short = settle(table.add(1, 100, 'short'));
    const long = settle(table.add(2, 300, 'long'));
    vi.advanceTimersByTime(100);
    expect(table.has(1)).toBe(false);
    expect(table.has(2)).toBe(true);
    table.resolve(2, 'made it');
    expect((await short).ok).toBe(false);
    expect(await long).toEqual({ ok: true, value: 'made it' });
  });

  it.each([0, -1])('timeoutMs %d means no bound: no timer, the entry waits', async (timeoutMs) => {
    vi.useFakeTimers();
    const table = new PendingTable<number, string>();
    const p = table.add(1, timeoutMs, 'unbounded');
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(24 * 3600 * 1000);
    expect(table.has(1)).toBe(true);
    table.resolve(1, 'eventually');
    await expect(p).resolves.toBe('eventually');
  });

  it('the key can be reused after a timeout', async () => {
    vi.useFakeTimers();
    const table = new PendingTable<number, string>();
    const first = settle(table.add(1, 10, 'first'));
    vi.advanceTimersByTime(10);
    expect((await first).ok).toBe(false);
    const second = table.add(1, 10, 'second');
    table.resolve(1, 'second answer');
    await expect(second).resolves.toBe('second answer');
  });

  it('does not keep the process alive: the timeout timer is unref()ed', async () => {
    const timers: NodeJS.Timeout[] = [];
    const real = globalThis.setTimeout;
    vi.spyOn(globalThis, 'setTimeout').mockImplementation(((fn: () => void, ms?: number) => {
      const t = real(fn, ms);
      timers.push(t);
      return t;
    }) as typeof setTimeout);
    const table = new PendingTable<number, string>();
    const p = table.add(1, 60_000, 'req');
    expect(timers).toHaveLength(1);
    expect(timers[0]!.hasRef()).toBe(false);
    table.resolve(1, 'done');
    await expect(p).resolves.toBe('done');
  });
});

describe('PendingTable rejectAll', () => {
  it('rejects every waiting entry with the same error and empties the table', async () => {
    const table = new PendingTable<number, string>();
    const ps = [1, 2, 3].map((k) => settle(table.add(k, 0, `r${k}`)));
    const err = new Error('gdb exited');
    table.rejectAll(err);
    expect(table.size).toBe(0);
    for (const result of await Promise.all(ps)) expect(result).toEqual({ ok: false, error: err });
    const errors = (await Promise.all(ps)).map((r) => (r as { error: unknown }).error);
    expect(errors.every((e) => e === err)).toBe(true);
  });

  it('clears the timers of the entries it rejects', async () => {
    vi.useFakeTimers();
    const table = new PendingTable<number, string>();
    const ps = [settle(table.add(1, 100, 'a')), settle(table.add(2, 200, 'b'))];
    expect(vi.getTimerCount()).toBe(2);
    table.rejectAll(new Error('bye'));
    expect(vi.getTimerCount()).toBe(0);
    for (const result of await Promise.all(ps)) expect(result).toEqual({ ok: false, error: new Error('bye') });
  });

  it('is a no-op on an empty table', () => {
    const table = new PendingTable<number, string>();
    expect(() => table.rejectAll(new Error('nothing'))).not.toThrow();
    expect(table.size).toBe(0);
  });

  it('without close, later adds still work', async () => {
    const table = new PendingTable<number, string>();
    const old = settle(table.add(1, 0, 'old'));
    table.rejectAll(new Error('reset'));
    expect((await old).ok).toBe(false);
    const fresh = table.add(1, 0, 'fresh');
    expect(table.resolve(1, 'works')).toBe(true);
    await expect(fresh).resolves.toBe('works');
  });

  it('with close, later adds fail at once with the same error and register nothing', async () => {
    vi.useFakeTimers();
    const table = new PendingTable<number, string>();
    const err = new Error('session closed');
    const old = settle(table.add(1, 0, 'old'));
    table.rejectAll(err, true);
    expect(await old).toEqual({ ok: false, error: err });
    const later = settle(table.add(2, 100, 'later'));
    expect(table.size).toBe(0);
    expect(table.has(2)).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
    const result = await later;
    expect(result.ok).toBe(false);
    expect((result as { error: unknown }).error).toBe(err);
    expect(table.resolve(2, 'x')).toBe(false);
  });

  it('with close, even a key that was never used fails (before any duplicate check)', async () => {
    const table = new PendingTable<number, string>();
    const err = new Error('closed');
    table.rejectAll(err, true);
    await expect(table.add(1, 0, 'a')).rejects.toBe(err);
    await expect(table.add(1, 0, 'a')).rejects.toBe(err);
  });

  it('settled promises are not changed by a later rejectAll', async () => {
    const table = new PendingTable<number, string>();
    const p = table.add(1, 0, 'a');
    table.resolve(1, 'kept');
    table.rejectAll(new Error('later'), true);
    await expect(p).resolves.toBe('kept');
  });
});
