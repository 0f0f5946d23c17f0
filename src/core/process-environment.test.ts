import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endMarkedProcesses, OWNER_VAR, processTracking, spawnChild, terminate } from './process.js';
import { boundPromise } from './wait.js';

// Tracking is decided once, at the first spawn of this file's module: the environment marker.
process.env.DEBUGKIT_CGROUP = 'off';

/**
 * Attack f1-2's hopping child: the parent forks a child and exits when its stdin closes; the child
 * calls setsid, then loops: fork, the parent exits at once, the new child sleeps 2 ms and prints
 * "PGID PID". One process lives at any instant, always a new one. It stops itself after 60 s.
 */
const HOP_C = `#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
  int us = argc > 1 ? atoi(argv[1]) : 2000;
  if (fork() == 0) {
    setsid();
    time_t start = time(NULL);
    for (;;) {
      pid_t p = fork();
      if (p < 0) { usleep(us); continue; }
      if (p > 0) _exit(0);
      usleep(us);
      if (time(NULL) - start > 60) _exit(0);
      printf("%d %d\\n", (int)getpgrp(), (int)getpid());
      fflush(stdout);
    }
  }
  char c;
  while (read(0, &c, 1) > 0) {}
  return 0;
}
`;

let dir: string;
let hop: string;
/** Process groups of hoppers started, killed at the end whatever the outcome. */
const hopperGroups = new Set<number>();

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'debugkit-hop-'));
  writeFileSync(path.join(dir, 'hop.c'), HOP_C);
  hop = path.join(dir, 'hop');
  execFileSync('gcc', ['-O2', '-o', hop, path.join(dir, 'hop.c')]);
});

afterAll(() => {
  for (const pgid of hopperGroups) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

/**
 * Follows a hopper's output: resolves `hopping` once `n` different processes of the chain have
 * printed, and `closed` once no process holds the pipe's write end (every hopper is gone).
 */
function follow(stream: NodeJS.ReadableStream, n: number): { hopping: Promise<void>; closed: Promise<void> } {
  const pids = new Set<number>();
  let text = '';
  let started!: () => void;
  const hopping = new Promise<void>((resolve) => (started = resolve));
  const closed = new Promise<void>((resolve) => stream.once('end', resolve));
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    text += chunk;
    const lines = text.split('\n');
    text = lines.pop()!;
    for (const line of lines) {
      const [pgid, pid] = line.split(' ').map(Number);
      hopperGroups.add(pgid!);
      pids.add(pid!);
    }
    if (pids.size >= n) started();
  });
  return { hopping, closed };
}

/** The value of OWNER_VAR in process `pid`'s environment. */
function tokenOf(pid: number): string {
  const entry = readFileSync(`/proc/${pid}/environ`, 'latin1')
    .split('\0')
    .find((e) => e.startsWith(`${OWNER_VAR}=`));
  return entry!.slice(OWNER_VAR.length + 1);
}

/** Processes whose environment holds every one of `entries` (a scan of /proc). */
function marked(...entries: string[]): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        const env = readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0');
        return entries.every((e) => env.includes(e));
      } catch {
        return false;
      }
    });
}

describe('environment tracking: a chain that forks and exits every 2 ms is ended too (attack f1-2)', () => {
  it('runs in the environment mode', async () => {
    expect((await processTracking()).kind).toBe('environment');
  });

  it('the tree of a child that exited (keploy_mock_test, recorded commands)', async () => {
    const child = await spawnChild(hop, ['2000'], { stdio: ['pipe', 'pipe', 'ignore'] });
    const { hopping, closed } = follow(child.child.stdout!, 5);
    await hopping;
    // Read once the child runs its program: where prlimit starts it (attack g1-5), the environment
    // is empty while prlimit execs the program.
    const token = tokenOf(child.child.pid!);
    child.child.stdin!.end();
    expect(await child.ended).toEqual({ code: 0, signal: null });
    // Every hopper holds the pipe: it closes once none is left (before the fix, never: they hopped on).
    expect((await boundPromise(closed, { timeoutMs: 10_000 })).kind).toBe('value');
    expect(marked(`${OWNER_VAR}=${token}`)).toEqual([]);
  });

  it('the processes carrying a mark (debugger_detach: the debuggee and what it started)', async () => {
    // The hopper's parent exits at once (stdin is /dev/null); the shell then becomes a sleep that
    // does not hold the pipe, and stays: it is not marked.
    const script = `DEBUGKIT_INFERIOR=7 "$0" 2000 </dev/null; exec sleep 1000 >/dev/null`;
    const child = await spawnChild('sh', ['-c', script, hop], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const { hopping, closed } = follow(child.child.stdout!, 5);
      await hopping;
      const token = tokenOf(child.child.pid!);
      const ended = await endMarkedProcesses(child, 'DEBUGKIT_INFERIOR', '7');
      expect((await boundPromise(closed, { timeoutMs: 10_000 })).kind).toBe('value');
      expect(ended).toBe(true);
      expect(marked(`${OWNER_VAR}=${token}`, 'DEBUGKIT_INFERIOR=7')).toEqual([]);
      expect(marked(`${OWNER_VAR}=${token}`)).toEqual([child.child.pid]);
      await terminate(child, { graceMs: 100 });
      expect(marked(`${OWNER_VAR}=${token}`)).toEqual([]);
    } finally {
      // Ends the shell's sleep when an expectation failed first (once ended, this returns at once).
      await terminate(child, { graceMs: 100 });
    }
  });
});
