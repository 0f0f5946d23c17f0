// Shared pieces of `npm run bench`: statistics, bounded waits, child-process bookkeeping, and the
// results object every benchmark module returns (bench/index.ts renders it).
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readlinkSync, rmSync } from 'node:fs';
import os from 'node:os';
import type { Readable } from 'node:stream';

/** A table of a benchmark's results; cells are already formatted. */
export interface Table {
  title: string;
  columns: string[];
  rows: string[][];
  /** Printed under the table. */
  note?: string;
}

/** A goal the benchmark checks, e.g. "under 1 ms added at p50 on stdio". */
export interface Verdict {
  goal: string;
  met: boolean;
  detail: string;
}

/** What one benchmark module produces: becomes one `## <name>` section of BENCHMARKS.md. */
export interface BenchResult {
  /** Section name: the `## name` heading in BENCHMARKS.md. */
  name: string;
  date: Date;
  /** Label -> value: CPU, cores, OS, Node, engine versions. */
  machine: Array<[string, string]>;
  /** What is measured, one paragraph. */
  summary: string;
  /** How it is measured, one bullet each (Markdown). */
  method: string[];
  tables: Table[];
  verdicts: Verdict[];
}

export interface BenchModule {
  name: string;
  run(): Promise<BenchResult>;
}

/** The machine lines a section starts with: CPU and cores, OS, Node. */
export function machineBasics(): Array<[string, string]> {
  const cpu = os.cpus();
  return [
    ['CPU', `${cpu[0]?.model.trim() ?? 'unknown'}, ${cpu.length} cores`],
    ['OS', `${os.type()} ${os.release()} ${os.arch()}`],
    ['Node', process.version],
  ];
}

// ---------------------------------------------------------------- statistics

export interface Summary {
  n: number;
  p50: number;
  p99: number;
  mean: number;
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((s, x) => s + x, 0) / Math.max(1, sorted.length);
  return { n: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), mean };
}

/** Milliseconds with 3 decimals; `signed` adds a + to non-negative numbers. */
export function ms(value: number, signed = false): string {
  if (!Number.isFinite(value)) return 'n/a';
  const text = value.toFixed(3);
  return signed && value >= 0 ? `+${text}` : text;
}

// ---------------------------------------------------------------- bounded waits

export function sleep(msecs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, msecs));
}

/** Rejects when `promise` has not settled within `msecs`. */
export function withTimeout<T>(promise: Promise<T>, msecs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${msecs} ms`)), msecs);
    timer.unref();
  });
  return Promise.race([promise, bound]).finally(() => clearTimeout(timer));
}

// ---------------------------------------------------------------- settings

/** A positive integer from the environment (BENCH_*), or `fallback` when unset. */
export function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, not "${raw}"`);
  return n;
}

/** Node's environment as the string map StdioClientTransport wants (it passes only a few variables by default). */
export function fullEnv(): Record<string, string> {
  return Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined));
}

// ---------------------------------------------------------------- child processes

/** Appends a child's output to a bounded buffer (for error messages) so its pipe never fills. */
export function drain(stream: Readable | null | undefined, sink: { text: string }): void {
  if (!stream) return;
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    sink.text = (sink.text + chunk).slice(-8192);
  });
}

/** Resolves true once `child` has exited, false after `msecs`. */
export function waitExit(child: ChildProcess, msecs: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.off('exit', onExit);
      resolve(false);
    }, msecs);
    const onExit = () => {
      clearTimeout(timer);
      resolve(true);
    };
    child.once('exit', onExit);
  });
}

/** Every process the bench started, by pid, so an abort can still end them (group = leads its own process group). */
const tracked = new Map<number, { what: string; group: boolean }>();

export function track(pid: number | undefined, what: string, group: boolean): void {
  if (pid !== undefined) tracked.set(pid, { what, group });
}

export function untrack(pid: number | undefined): void {
  if (pid !== undefined) tracked.delete(pid);
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** SIGKILLs one tracked process (its group when it leads one). */
export function killPid(pid: number, group: boolean): void {
  try {
    process.kill(group ? -pid : pid, 'SIGKILL');
  } catch {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
}

/** Temporary directories in use: an abort reaps what runs there and removes them. */
const tempDirs = new Set<string>();

export function trackTempDir(dir: string): void {
  tempDirs.add(dir);
}

/** Ends what ran in `dir` (see reapInDir) and removes it; returns the leftovers it killed. */
export function releaseTempDir(dir: string): string[] {
  tempDirs.delete(dir);
  const leftovers = reapInDir(dir);
  rmSync(dir, { recursive: true, force: true });
  return leftovers;
}

/** Last resort (abort, watchdog): SIGKILL whatever the bench started and is still tracked. */
export function killTrackedSync(): string[] {
  const killed: string[] = [];
  for (const [pid, { what, group }] of tracked) {
    if (isAlive(pid)) {
      killPid(pid, group);
      killed.push(`${what} (pid ${pid})`);
    }
  }
  const pids = new Set([...tracked.keys()].map((pid) => `(pid ${pid})`));
  tracked.clear();
  for (const dir of [...tempDirs]) killed.push(...releaseTempDir(dir).filter((p) => !pids.has(p.slice(p.lastIndexOf('(')))));
  return killed;
}

/** The processes (other than this one) whose working directory is `dir`: pid and executable. */
export function processesInDir(dir: string): Array<{ pid: number; name: string }> {
  const found: Array<{ pid: number; name: string }> = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return found;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    try {
      if (readlinkSync(`/proc/${pid}/cwd`) !== dir) continue;
    } catch {
      continue; // not ours, or gone
    }
    let name = '?';
    try {
      name = readlinkSync(`/proc/${pid}/exe`);
    } catch {
      /* gone or not ours to read */
    }
    found.push({ pid, name });
  }
  return found;
}

/**
 * SIGKILLs every process whose working directory is `dir`. The bench runs all its gdbs,
 * debuggees and debugkit servers in a fresh temporary directory of its own, so whatever is still
 * there at the end is a leftover of this run. Returns their pids and names.
 */
export function reapInDir(dir: string): string[] {
  const found: string[] = [];
  for (const { pid, name } of processesInDir(dir)) {
    try {
      process.kill(pid, 'SIGKILL');
      found.push(`${name} (pid ${pid})`);
    } catch {
      /* gone */
    }
  }
  return found;
}
