import { execFileSync } from 'node:child_process';

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
export async function waitFor(check: () => boolean, timeoutMs = 10_000, everyMs = 100, refresh?: () => Promise<void>): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await refresh?.();
    if (check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
