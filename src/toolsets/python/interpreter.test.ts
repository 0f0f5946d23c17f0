import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../../core/wait.js';
import { resolveInterpreter } from './interpreter.js';

const dir = mkdtempSync(path.join(tmpdir(), 'debugkit-interp-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Processes whose command line holds `marker`. */
function running(marker: string): number {
  const out = execFileSync('ps', ['-eo', 'args='], { encoding: 'utf8' });
  return out.split('\n').filter((l) => l.includes(marker) && !l.includes('ps -eo')).length;
}

/** An "interpreter" that hangs: a shell script that sleeps, with a marker in its sleep's command line. */
function hangingInterpreter(name: string, marker: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, `#!/bin/sh\nexec sleep ${marker}\n`);
  chmodSync(file, 0o755);
  return file;
}

describe('resolveInterpreter and the calls that wait for it (attack 18an a2-4)', () => {
  it('stops the probe once every call waiting for it is cancelled; spellings of one path share one probe', async () => {
    const marker = '987.654';
    const python = hangingInterpreter('slowpy.sh', marker);
    const first = new AbortController();
    const second = new AbortController();
    const a = resolveInterpreter(python, first.signal).catch((err: unknown) => err);
    const b = resolveInterpreter(path.join(dir, '.', '', 'slowpy.sh'), second.signal).catch((err: unknown) => err);
    expect(await pollUntil(() => running(marker) === 1, { timeoutMs: 10_000, intervalMs: 20 })).toBe(true);
    first.abort();
    expect(await a).toMatchObject({ message: expect.stringMatching(/cancelled while the Python interpreter was being checked/) });
    // The other call still waits: the probe goes on.
    expect(running(marker)).toBe(1);
    second.abort();
    expect(await b).toMatchObject({ code: 'SESSION_CLOSED' });
    expect(await pollUntil(() => running(marker) === 0, { timeoutMs: 10_000, intervalMs: 20 })).toBe(true);
  });
});
