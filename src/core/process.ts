import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { readFileSync } from 'node:fs';
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

/**
 * Variables of debugkit's own environment that hold its secrets (the full-scope `--api-key`, the
 * store's connection string with its password): never handed to a child. A debuggee, gdb (`show
 * environment`) or a recorded command runs code of the key holder's choosing and would read them.
 */
const SECRET_ENV = new Set(['DEBUGKIT_API_KEY', 'DEBUGKIT_STORE']);

/**
 * Marks another variable of debugkit's environment as its secret: e.g. PGPASSWORD when the store's
 * connection string leaves its password to libpq's variable.
 */
export function keepFromChildren(name: string): void {
  SECRET_ENV.add(name);
}

/** The environment a child gets: `env` (default: debugkit's own) without debugkit's secrets. */
export function childEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out = { ...env };
  for (const name of SECRET_ENV) delete out[name];
  return out;
}

export function spawnChild(command: string, args: readonly string[], options: SpawnOptions = {}): Promise<OwnedChild> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, env: childEnv(options.env), detached: true, shell: false });
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

/**
 * The fields of /proc/PID/stat after the command name (state is [0], ppid [1], ..., starttime
 * [19]), or undefined when the process is gone. The name is skipped by its last ")": it may hold
 * spaces and parentheses.
 */
export function procStat(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/**
 * When process `pid` started (clock ticks since boot), or undefined when there is none: with the
 * pid, it names one process, never another that later reuses the pid.
 */
export function processStartTime(pid: number): string | undefined {
  return procStat(pid)?.[19];
}
