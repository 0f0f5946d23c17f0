import type { SpawnOptions } from 'node:child_process';
import { spawnChild, terminate, type ChildExit } from './process.js';
import { OutputRing } from './ring.js';
import { boundPromise } from './wait.js';

/** One bounded run of a program: argv (never a shell), its own process tree, time and output bounds. */
export interface BoundedRun {
  command: string;
  args: readonly string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Text written to stdin, then closed; without it stdin reads EOF. */
  input?: string;
  /** An open descriptor the program reads as its stdin instead (a file checked and opened by debugkit). */
  stdinFd?: number;
  /** The run is ended (with every process it started) after this long. */
  timeoutMs: number;
  /** Ends the run early (a cancelled tool call). */
  signal?: AbortSignal;
  /** Most characters kept of each stream (default 64 KiB). */
  maxOutputChars?: number;
  /** Which part of a longer output is kept: the start (listings) or the end (logs, where failures are). */
  keep?: 'head' | 'tail';
  /** How long a terminated run gets between SIGTERM and SIGKILL (default 500 ms). */
  graceMs?: number;
}

export interface BoundedResult {
  /** The exit code, or null when a signal ended the run. */
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  cancelled: boolean;
  stdout: string;
  stderr: string;
  /** True when a stream had more than `maxOutputChars` and was cut. */
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  durationMs: number;
}

/** Keeps the first `max` characters, and notes whether there were more. */
class Head {
  text = '';
  cut = false;
  constructor(private readonly max: number) {}
  append(chunk: string): void {
    const room = this.max - this.text.length;
    if (chunk.length > room) this.cut = true;
    if (room > 0) this.text += chunk.slice(0, room);
  }
}

/** Keeps the last `max` characters. */
class Tail {
  private readonly ring: OutputRing;
  private total = 0;
  constructor(private readonly max: number) {
    this.ring = new OutputRing(max);
  }
  append(chunk: string): void {
    this.total += chunk.length;
    this.ring.append(chunk);
  }
  get text(): string {
    return this.ring.read(0).text;
  }
  get cut(): boolean {
    return this.total > this.max;
  }
}

/**
 * Runs a program to its end, bounded: the timeout and the AbortSignal end it (SIGTERM, then
 * SIGKILL); whatever it started (a background job, a daemon) ends when it does, so nothing outlives
 * the run. Output beyond the bound is cut, keeping its head or its tail. Never rejects for what the
 * program does; only for failing to start it (ENGINE_MISSING).
 */
export async function runBounded(run: BoundedRun): Promise<BoundedResult> {
  const max = run.maxOutputChars ?? 64 * 1024;
  const started = Date.now();
  const options: SpawnOptions = { cwd: run.cwd, env: run.env ?? process.env, stdio: [run.stdinFd ?? (run.input === undefined ? 'ignore' : 'pipe'), 'pipe', 'pipe'] };
  const proc = await spawnChild(run.command, run.args, options);
  const make = () => (run.keep === 'tail' ? new Tail(max) : new Head(max));
  const out = make();
  const err = make();
  proc.child.stdout!.setEncoding('utf8').on('data', (t: string) => out.append(t));
  proc.child.stderr!.setEncoding('utf8').on('data', (t: string) => err.append(t));
  if (run.input !== undefined) {
    proc.child.stdin!.on('error', () => undefined); // a program that exits without reading
    proc.child.stdin!.end(run.input);
  }
  const outcome = await boundPromise(proc.exited, { timeoutMs: run.timeoutMs, signal: run.signal });
  // Ended or not, the run's tree ends with it: a background job, a daemon it forked.
  const exit: ChildExit = await terminate(proc, { graceMs: run.graceMs ?? 500 });
  // Output still in the pipes is read before the streams end.
  await Promise.all([proc.child.stdout, proc.child.stderr].map((s) => (s && !s.readableEnded ? boundPromise(new Promise((r) => s.once('close', r)), { timeoutMs: 1000 }) : undefined)));
  return {
    code: exit.code,
    signal: exit.signal,
    timedOut: outcome.kind === 'timeout',
    cancelled: outcome.kind === 'aborted',
    stdout: out.text,
    stderr: err.text,
    stdoutTruncated: out.cut,
    stderrTruncated: err.cut,
    durationMs: Date.now() - started,
  };
}
