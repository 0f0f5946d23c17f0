import type { StdioOptions } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { DebugkitError } from '../errors.js';
import { spawnChild, terminate, type OwnedChild } from '../process.js';
import { boundPromise, waitBounded } from '../wait.js';
import { MiConnection, type ResultRecord } from './connection.js';
import type { MiRecord, MiTuple } from './parser.js';

export type TargetState = 'not started' | 'running' | 'stopped' | 'exited';

/** What every gdb debugkit drives is told first: asynchronous execution, no pager, no questions, no line wrapping. */
export const MI_SETUP = ['-gdb-set mi-async on', '-gdb-set pagination off', '-gdb-set confirm off', '-gdb-set width 0', '-gdb-set height 0'];

export interface MiEngineOptions {
  gdbPath: string;
  /** gdb's arguments after `--interpreter=mi3 -q -nx` (`--args program ...`). */
  args?: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** stdin, stdout and stderr are pipes; more pipes may follow (the debuggee's own output). */
  stdio?: StdioOptions;
  /** Commands gdb runs, in order, before the engine is handed over; gdb must accept each. */
  setup: string[];
  /** Bound on gdb's answer to one command. */
  replyTimeoutMs: number;
}

/** How long to wait for a stop, and the call's cancellation. */
export interface StopBound {
  waitMs: number;
  signal?: AbortSignal;
}

/**
 * One gdb in MI mode, for the gdb and debugger toolsets alike: started with its setup commands,
 * commands run one at a time (`serial`), the target's stops counted and waited for (bounded).
 * Records are emitted after the stop accounting; what a toolset makes of them (output collected
 * per call, inferiors, history) is the toolset's, and so is what gdb's end means to its session.
 */
export class MiEngine extends EventEmitter<{ record: [MiRecord]; close: [Error] }> {
  state: TargetState = 'not started';
  /** How many times the target has stopped (or exited) so far. */
  private stops = 0;
  private lastStop: MiTuple | undefined;
  private stopWaiters: Array<() => void> = [];
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  private constructor(
    readonly proc: OwnedChild,
    private readonly mi: MiConnection,
    private readonly replyTimeoutMs: number,
  ) {
    super();
    mi.on('record', (record) => this.onRecord(record));
    mi.on('close', (reason) => this.emit('close', reason));
  }

  /**
   * Starts gdb and hands it to `own` (which listens to it before its first command), then runs the
   * setup commands. When one fails, `abandon` ends the owner (and with it gdb) and the error is thrown.
   */
  static async start<T>(options: MiEngineOptions, own: (engine: MiEngine) => T, abandon: (owner: T) => Promise<void>): Promise<T> {
    const proc = await spawnChild(options.gdbPath, ['--interpreter=mi3', '-q', '-nx', ...(options.args ?? [])], {
      cwd: options.cwd,
      env: options.env,
      stdio: options.stdio ?? ['pipe', 'pipe', 'pipe'],
    });
    const engine = new MiEngine(proc, new MiConnection(proc.child.stdin!, proc.child.stdout!), options.replyTimeoutMs);
    const owner = own(engine);
    try {
      for (const command of options.setup) {
        const reply = await engine.send(command);
        if (reply.resultClass === 'error') throw new DebugkitError('ENGINE_FAILED', `gdb refused "${command}": ${String(reply.results.msg)}`);
      }
    } catch (err) {
      await abandon(owner);
      throw err instanceof DebugkitError ? err : new DebugkitError('ENGINE_FAILED', `gdb failed to start: ${String(err)}`, { cause: err });
    }
    return owner;
  }

  get pid(): number | undefined {
    return this.proc.child.pid;
  }

  get isClosed(): boolean {
    return this.mi.isClosed;
  }

  get stopCount(): number {
    return this.stops;
  }

  /** The results of the latest `*stopped`. */
  get latestStop(): MiTuple | undefined {
    return this.lastStop;
  }

  /** Runs `fn` after every earlier command on this engine has finished; calls never overlap. */
  serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Sends one MI command and resolves with its result record, bounded by the reply timeout (or
   * `timeoutMs`). A cancelled `signal` stops waiting (CANCELLED); gdb may still finish the command.
   */
  async send(command: string, { signal, timeoutMs = this.replyTimeoutMs }: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<ResultRecord> {
    const reply = this.mi.send(command, timeoutMs);
    if (!signal) return reply;
    const outcome = await boundPromise(reply, { timeoutMs: timeoutMs + 1000, signal });
    if (outcome.kind === 'value') return outcome.value;
    if (outcome.kind === 'aborted') throw new DebugkitError('CANCELLED', 'the call was cancelled; gdb may still finish the command');
    return reply;
  }

  /**
   * After a command sent at stop count `before` resumed the target: unless its stop already came
   * (counted, not flagged: "^running" and "*stopped" can arrive in one chunk), the target is
   * running and its stop is waited for. An attach is waited for though gdb does not say "running".
   */
  async awaitResumed(before: number, bound: StopBound, attach = false): Promise<void> {
    if (this.stops !== before) return;
    if (!attach) this.state = 'running';
    await this.waitForStop(before, bound, attach);
  }

  /** Waits until a stop newer than `before` arrives, the bound passes, the call is cancelled or gdb is gone. */
  async waitForStop(before: number, { waitMs, signal }: StopBound, force = false): Promise<void> {
    if (this.stops !== before || (!force && this.state !== 'running') || this.closed || waitMs <= 0) return;
    await waitBounded<void>(
      (settle) => {
        const waiter = () => settle();
        this.stopWaiters.push(waiter);
        return () => (this.stopWaiters = this.stopWaiters.filter((w) => w !== waiter));
      },
      { timeoutMs: waitMs, signal },
    );
  }

  /** Ends the channel (every waiting command fails with `reason`) and every wait for a stop. */
  close(reason: Error): void {
    this.closed = true;
    this.mi.close(reason);
    this.releaseStopWaiters();
  }

  /** Closes the channel with `reason` and ends gdb (SIGTERM, then SIGKILL after `graceMs`). */
  async end(reason: Error, graceMs: number): Promise<void> {
    this.close(reason);
    await terminate(this.proc, { graceMs });
  }

  private onRecord(record: MiRecord): void {
    if (record.kind === 'exec') {
      if (record.asyncClass === 'running') this.state = 'running';
      if (record.asyncClass === 'stopped') {
        const reason = String(record.results.reason ?? '');
        this.state = reason.startsWith('exited') ? 'exited' : 'stopped';
        this.stops++;
        this.lastStop = record.results;
        this.releaseStopWaiters();
      }
    }
    this.emit('record', record);
  }

  private releaseStopWaiters(): void {
    const waiters = this.stopWaiters;
    this.stopWaiters = [];
    for (const w of waiters) w();
  }
}
