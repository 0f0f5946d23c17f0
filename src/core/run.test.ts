import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { runBounded } from './run.js';
import { pollUntil } from './wait.js';

describe('runBounded (real processes)', () => {
  it('runs argv without a shell and returns code and output', async () => {
    const r = await runBounded({ command: 'printf', args: ['%s|', 'a b', '$(id)'], timeoutMs: 10_000 });
    expect(r).toMatchObject({ code: 0, signal: null, timedOut: false, cancelled: false, stdout: 'a b|$(id)|', stdoutTruncated: false });
  });

  it('feeds stdin and reports a non-zero exit', async () => {
    const r = await runBounded({ command: 'sh', args: ['-c', 'cat; echo err >&2; exit 3'], input: 'hello', timeoutMs: 10_000 });
    expect(r).toMatchObject({ code: 3, stdout: 'hello', stderr: 'err\n' });
  });

  it('ends the whole process group at the timeout', async () => {
    const r = await runBounded({ command: 'sh', args: ['-c', 'sleep 30 & echo $!; wait'], timeoutMs: 300, graceMs: 100 });
    expect(r.timedOut).toBe(true);
    const grandchild = Number(r.stdout.trim());
    expect(grandchild).toBeGreaterThan(0);
    await pollUntil(() => !isRunning(grandchild), { timeoutMs: 5000, intervalMs: 10 });
    expect(isRunning(grandchild)).toBe(false);
  });

  it('ends the run when the signal aborts', async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    const r = await runBounded({ command: 'sleep', args: ['30'], timeoutMs: 30_000, signal: ac.signal, graceMs: 100 });
    expect(r).toMatchObject({ cancelled: true, timedOut: false, code: null, signal: 'SIGTERM' });
  });

  it('keeps the head or the tail of a long output, and says it cut', async () => {
    const args = ['-c', 'for i in $(seq 1 2000); do echo line$i; done'];
    const head = await runBounded({ command: 'sh', args, timeoutMs: 10_000, maxOutputChars: 20 });
    expect(head.stdout).toBe('line1\nline2\nline3\nli');
    expect(head.stdoutTruncated).toBe(true);
    const tail = await runBounded({ command: 'sh', args, timeoutMs: 10_000, maxOutputChars: 10, keep: 'tail' });
    expect(tail.stdout).toBe('\nline2000\n');
    expect(tail.stdoutTruncated).toBe(true);
  });

  it('rejects with ENGINE_MISSING when the program does not exist', async () => {
    await expect(runBounded({ command: '/no/such/program', args: [], timeoutMs: 1000 })).rejects.toMatchObject({ code: 'ENGINE_MISSING' });
  });
});

/** Alive and not a zombie waiting for a parent that may never reap it. */
function isRunning(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}
