import type { ChildProcess } from 'node:child_process';
import { closeSync, openSync, writeSync } from 'node:fs';

/** The liveness tests of issue 18 ("no request can hold the event loop"): what they share. */

/** Resolves when `p` settles; `done()` says whether it has. */
export function track<T>(p: Promise<T>): { promise: Promise<T>; done: () => boolean } {
  let settled = false;
  const promise = p.finally(() => {
    settled = true;
  });
  return { promise, done: () => settled };
}

/**
 * Runs `work` while a lag probe (a timer every `everyMs`) measures the longest the event loop went
 * without a turn, and counts the turns it had while the work was still running: the one in-process
 * measure of "nothing holds the loop" (the server-level tests ping from another client instead).
 */
export async function longestBlock<T>(work: () => Promise<T>, { everyMs = 2 }: { everyMs?: number } = {}): Promise<{ longest: number; turns: number; value: T }> {
  let longest = 0;
  let turns = 0;
  let last = performance.now();
  const run = track(work());
  const probe = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    if (!run.done()) turns++;
  }, everyMs);
  try {
    const value = await run.promise;
    return { longest: Math.max(longest, performance.now() - last), turns, value };
  } finally {
    clearInterval(probe);
  }
}

/**
 * Counts the turns of the event loop in which `mark()` was called. Work done in one go marks one turn however long it runs;
 * work done in slices marks one a slice, and more on a slower host (each slice gets less done), never fewer: a count
 * that a loaded host cannot make fail, unlike a bound on the longest block.
 */
export function turnsMarked(): { mark(): void; count(): number } {
  let count = 0;
  let counted = false;
  return {
    mark() {
      if (counted) return;
      counted = true;
      count++;
      setImmediate(() => {
        counted = false;
      });
    },
    count: () => count,
  };
}

/** SIGTERM, and SIGKILL if the server has not exited 10 s later (one whose event loop is held cannot run its SIGTERM handler). */
export async function stopHard(proc: ChildProcess | undefined): Promise<void> {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** Writes a set of `count` documents, the i-th as `one(i)` gives it (in writes of 1,000). */
export function writeDocuments(file: string, count: number, one: (i: number) => string): void {
  const fd = openSync(file, 'w');
  for (let i = 0; i < count; i += 1000) writeSync(fd, Array.from({ length: Math.min(1000, count - i) }, (_, k) => one(i + k)).join(''));
  closeSync(fd);
}

/** A set of `count` small documents (each a valid mock of `kind`, Generic by default), named `<prefix><i>`. */
export function manyDocuments(file: string, count: number, { kind = 'Generic', prefix = 'mock-' } = {}): void {
  writeDocuments(file, count, (i) => `version: api.keploy.io/v1beta1\nkind: ${kind}\nname: ${prefix}${i}\nspec:\n  metadata: {}\n---\n`);
}

/** A set of one mock whose one scalar is `mb` MiB. */
export function hugeScalar(file: string, mb: number): void {
  const fd = openSync(file, 'w');
  writeSync(fd, 'version: api.keploy.io/v1beta1\nkind: Generic\nname: mock-0\nspec:\n  metadata:\n    note: ');
  const block = Buffer.alloc(1024 * 1024, 'A');
  for (let i = 0; i < mb; i++) writeSync(fd, block);
  writeSync(fd, '\n');
  closeSync(fd);
}
