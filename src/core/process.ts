import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { DebugkitError } from './errors.js';
import { boundPromise } from './wait.js';

/**
 * Every child process debugkit starts goes through `spawnChild`: it runs in its own process group
 * (so its own children go with it) and is tracked until it exits, so server shutdown can end
 * whatever is left, even from a synchronous exit handler.
 */
const live = new Set<ChildProcess>();

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface OwnedChild {
  child: ChildProcess;
  /** Settles once the process has exited (never rejects). */
  exited: Promise<ChildExit>;
}

export function spawnChild(command: string, args: readonly string[], options: SpawnOptions = {}): Promise<OwnedChild> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, detached: true, shell: false });
    const exited = new Promise<ChildExit>((done) => {
      child.once('exit', (code, signal) => {
        live.delete(child);
        done({ code, signal });
      });
    });
    child.once('error', (err: NodeJS.ErrnoException) => {
      live.delete(child);
      const hint = err.code === 'ENOENT' ? ` (is ${command} installed and on PATH?)` : '';
      reject(new DebugkitError('ENGINE_MISSING', `cannot start ${command}: ${err.message}${hint}`, { cause: err }));
    });
    child.once('spawn', () => {
      live.add(child);
      resolve({ child, exited });
    });
  });
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid !== undefined) killProcessGroup(child.pid, signal);
}

/**
 * Signals the process group `pid` leads, or the process alone when it leads none. For
 * processes debugkit did not start itself (a debuggee that debugpy put in a group of its own).
 */
export function killProcessGroup(pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, signal);
      return;
    } catch {
      /* not a group leader, or gone: try the process itself */
    }
  }
}

function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/**
 * Ends a child and its process group: close stdin (polite tools quit on EOF), then SIGTERM, then
 * SIGKILL, each after a grace period. Resolves once the process is gone.
 */
export async function terminate(owned: OwnedChild, { graceMs = 1000 }: { graceMs?: number } = {}): Promise<ChildExit> {
  const { child, exited } = owned;
  const waitExit = async (ms: number) => (await boundPromise(exited, { timeoutMs: ms })).kind === 'value';
  if (!hasExited(child)) {
    child.stdin?.end();
    if (!(await waitExit(Math.min(graceMs, 200)))) {
      signalGroup(child, 'SIGTERM');
      if (!(await waitExit(graceMs))) {
        signalGroup(child, 'SIGKILL');
        await waitExit(5000);
      }
    }
  }
  // The leader may be gone while members of its group live on (a debuggee gdb left behind).
  signalGroup(child, 'SIGKILL');
  return exited;
}

/** Synchronous last resort for process exit: SIGKILL every group still alive. */
export function killAllChildrenSync(): void {
  for (const child of live) signalGroup(child, 'SIGKILL');
  live.clear();
}

export function liveChildCount(): number {
  return live.size;
}
