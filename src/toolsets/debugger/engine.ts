import { DebugkitError } from '../../core/errors.js';
import { quoteMiString, type ResultRecord } from '../../core/mi/connection.js';
import { MI_SETUP, MiEngine } from '../../core/mi/engine.js';
import type { MiRecord, MiTuple } from '../../core/mi/parser.js';

export interface EngineOptions {
  gdbPath: string;
  cwd: string;
  /** `--args program ...` when launching; empty when attaching later. */
  args: string[];
  env: NodeJS.ProcessEnv;
  replyTimeoutMs: number;
}

/** What one exec command (next, continue, reverse-step...) ended with. */
export interface ExecOutcome {
  /** `*stopped` results, or undefined when the target was still running when the wait ended. */
  stopped?: MiTuple;
  /** Stream text gdb printed while the command ran (console and log). */
  output: string;
}

const SETUP = [
  ...MI_SETUP,
  // Client arguments must never meet a shell.
  '-gdb-set startup-with-shell off',
  // Software watchpoints fire in reverse; hardware ones do not (GDB 13 under record full, measured).
  '-gdb-set can-use-hw-watchpoints 0',
  '-gdb-set print elements 64',
  '-gdb-set print repeats 16',
];
const MAX_OUTPUT = 64 * 1024;

/**
 * The debugger toolset's commands over one gdb (core/mi MiEngine: one command at a time, stops
 * counted and waited for): stream text collected per command, gdb's `^error` as an error, exec
 * commands waited for (bounded) until their `*stopped`.
 */
export class Engine {
  exited = false;
  private output: string[] = [];
  private outputSize = 0;
  private gone: string | undefined;

  private constructor(private readonly gdb: MiEngine) {
    gdb.on('record', (r) => this.onRecord(r));
    gdb.on('close', (err) => this.onGone(err.message));
    gdb.proc.child.stderr?.on('data', () => undefined);
    void gdb.proc.exited.then(({ code, signal }) => this.onGone(`gdb exited (${signal ?? `code ${code}`})`));
  }

  static start(options: EngineOptions): Promise<Engine> {
    return MiEngine.start(
      {
        gdbPath: options.gdbPath,
        args: options.args.length ? ['--args', ...options.args] : [],
        cwd: options.cwd,
        env: options.env,
        setup: SETUP,
        replyTimeoutMs: options.replyTimeoutMs,
      },
      (gdb) => new Engine(gdb),
      (engine) => engine.dispose(),
    );
  }

  get pid(): number | undefined {
    return this.gdb.pid;
  }

  get running(): boolean {
    return this.gdb.state === 'running';
  }

  /** Settles once gdb itself has exited (what a checked program handed to it waits for before it is closed). */
  get ended(): Promise<unknown> {
    return this.gdb.proc.exited;
  }

  /** Runs `fn` after every earlier command on this engine has finished. */
  serial<T>(fn: () => Promise<T>): Promise<T> {
    return this.gdb.serial(fn);
  }

  /**
   * One MI command; gdb's `^error` becomes a DebugkitError carrying gdb's message. `timeoutMs`
   * bounds the wait for the reply (the session's reply timeout when not given).
   */
  async mi_(command: string, timeoutMs?: number): Promise<MiTuple> {
    const reply = await this.send(command, timeoutMs);
    if (reply.resultClass === 'error') throw new DebugkitError('INVALID_ARGUMENT', String(reply.results.msg ?? 'gdb reported an error'));
    return reply.results;
  }

  /** One CLI command through MI; answers what it printed. `timeoutMs` as for mi_. */
  async cli(command: string, timeoutMs?: number): Promise<string> {
    this.takeOutput();
    await this.mi_(`-interpreter-exec console ${quoteMiString(command)}`, timeoutMs);
    return this.takeOutput();
  }

  /**
   * Sends an exec command and waits up to `waitMs` for the target to stop. Answers without
   * `stopped` when it is still running; `waitForStop` can be called again later.
   */
  async exec(command: string, waitMs: number, signal?: AbortSignal): Promise<ExecOutcome> {
    this.takeOutput();
    const before = this.gdb.stopCount;
    const reply = await this.send(command);
    if (reply.resultClass === 'error') {
      throw new DebugkitError('INVALID_ARGUMENT', String(reply.results.msg ?? 'gdb reported an error'));
    }
    if (reply.resultClass === 'running') await this.gdb.awaitResumed(before, { waitMs, signal });
    return { stopped: this.gdb.stopCount !== before ? this.gdb.latestStop : undefined, output: this.takeOutput() };
  }

  /** Waits (bounded) for the running target's next stop. */
  waitForStop(before: number, waitMs: number, signal?: AbortSignal): Promise<void> {
    return this.gdb.waitForStop(before, { waitMs, signal });
  }

  get stopCount(): number {
    return this.gdb.stopCount;
  }

  get latestStop(): MiTuple | undefined {
    return this.gdb.latestStop;
  }

  /** Interrupts a running target; resolves once it stopped (or after `waitMs`). */
  async interrupt(waitMs: number): Promise<void> {
    if (!this.running) return;
    const before = this.gdb.stopCount;
    await this.send('-exec-interrupt');
    await this.waitForStop(before, waitMs);
  }

  takeOutput(): string {
    const text = this.output.join('');
    this.output = [];
    this.outputSize = 0;
    return text;
  }

  async dispose(): Promise<void> {
    this.onGone('the session was closed');
    await this.gdb.end(new DebugkitError('SESSION_CLOSED', this.gone!), 500);
  }

  private send(command: string, timeoutMs?: number): Promise<ResultRecord> {
    if (this.gone) return Promise.reject(new DebugkitError('SESSION_CLOSED', `gdb is gone: ${this.gone}`));
    return this.gdb.send(command, timeoutMs === undefined ? {} : { timeoutMs });
  }

  private onRecord(record: MiRecord): void {
    switch (record.kind) {
      case 'console':
      case 'log':
      case 'target':
      case 'unknown':
        if (this.outputSize < MAX_OUTPUT) {
          this.output.push(record.text);
          this.outputSize += record.text.length;
        }
        return;
      case 'exec':
        // The engine has counted the stop (and cleared "running") already.
        if (record.asyncClass === 'stopped' && String(record.results.reason ?? '').startsWith('exited')) this.exited = true;
        return;
      default:
        return;
    }
  }

  private onGone(message: string): void {
    if (this.gone) return;
    this.gone = message;
    this.gdb.close(new DebugkitError('SESSION_CLOSED', message));
  }
}
