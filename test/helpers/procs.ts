import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync } from 'node:fs';
import path from 'node:path';
import { pollUntil } from '../../src/core/wait.js';

export interface Proc {
  pid: number;
  ppid: number;
  args: string;
}

/** The process table, read with ps. */
export function processTable(): Proc[] {
  const out = execFileSync('ps', ['-eo', 'pid=,ppid=,args='], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => {
      const m = /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(l)!;
      return { pid: Number(m[1]), ppid: Number(m[2]), args: m[3]! };
    });
}

/** Every process below `pid` in the tree. */
export function descendants(pid: number): Proc[] {
  const table = processTable();
  const found: Proc[] = [];
  let frontier = [pid];
  while (frontier.length > 0) {
    const children = table.filter((p) => frontier.includes(p.ppid));
    found.push(...children);
    frontier = children.map((c) => c.pid);
  }
  return found;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Polls `check` until it returns true or `timeoutMs` passes; returns the last answer. `refresh`
 * runs before each check, for state that must be fetched.
 */
export function waitFor(check: () => boolean, timeoutMs = 10_000, everyMs = 100, refresh?: () => Promise<void>): Promise<boolean> {
  return pollUntil(
    async () => {
      await refresh?.();
      return check();
    },
    { timeoutMs, intervalMs: everyMs },
  );
}

/**
 * Whether `pid` still runs code: it exists, is not a zombie, and still has its memory (a process
 * that is exiting has released it). A process whose parent died stays a zombie for good when the
 * machine's init does not reap (a container's): kill(pid, 0) would call that alive.
 */
export function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (state === 'Z' || state === 'X' || state === 'x') return false;
    return readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[0] !== '0';
  } catch {
    return false;
  }
}

/** The one-letter state of `pid` in /proc (R running, S sleeping, t stopped by a tracer, ...); '' when it is gone. */
export function procState(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.charAt(stat.lastIndexOf(')') + 2);
  } catch {
    return '';
  }
}

/** CPU time `pid` has used (user + system, in clock ticks); -1 when it is gone. */
export function cpuTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return -1;
  }
}

/** Whether `pid` (a program that keeps the CPU busy) runs code again within `timeoutMs`: its CPU time grows from now. */
export async function runsAgain(pid: number, timeoutMs = 10_000): Promise<boolean> {
  const from = cpuTicks(pid);
  return from >= 0 && waitFor(() => cpuTicks(pid) > from, timeoutMs, 20);
}

/** The pid a test program wrote to `file` (test/programs/escape.c), once the file is there. */
export async function pidFrom(file: string, timeoutMs = 15_000): Promise<number> {
  // The file exists before the pid is in it (created, then written in one write): wait for the digits.
  const read = () => (existsSync(file) ? /^\s*(\d+)\s*$/.exec(readFileSync(file, 'utf8'))?.[1] : undefined);
  if (!(await waitFor(() => read() !== undefined, timeoutMs, 25))) {
    throw new Error(`no pid was written to ${file} in ${timeoutMs} ms${existsSync(file) ? ` (it holds ${JSON.stringify(readFileSync(file, 'utf8').slice(0, 40))})` : ''}`);
  }
  const pid = Number(read());
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`${file} holds no pid`);
  return pid;
}

/** The cgroup v2 path `pid` is in ("/debugkit-.../3"), or undefined. */
export function cgroupOf(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cgroup`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('0::'))
      ?.slice(3);
  } catch {
    return undefined;
  }
}

/** This process's cgroup v2 directory (its path in /proc/self/cgroup under the cgroup2 mount point). */
export function ownCgroupDir(): string | undefined {
  const own = cgroupOf(process.pid);
  const mount = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .find((l) => / - cgroup2 /.test(l) && l.split(' ')[3] === '/');
  return own !== undefined && mount ? path.join(mount.split(' ')[4]!, own) : undefined;
}

/** Whether this process may create cgroup v2 groups below its own (what debugkit's cgroup tracking needs). */
export function cgroupsWritable(): boolean {
  const own = ownCgroupDir();
  if (!own) return false;
  const probe = path.join(own, `debugkit-test-probe-${process.pid}`);
  try {
    mkdirSync(probe);
    rmdirSync(probe);
    return true;
  } catch {
    return false;
  }
}
