import { DebugkitError } from '../../core/errors.js';
import { MiConnection, quoteMiString, type ResultRecord } from '../../core/mi/connection.js';
import type { MiRecord, MiTuple } from '../../core/mi/parser.js';
import { spawnChild, terminate, type OwnedChild } from '../../core/process.js';

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
  '-gdb-set mi-async on',
  '-gdb-set pagination off',
  '-gdb-set confirm off',
  '-gdb-set width 0',
  '-gdb-set height 0',
  // Client arguments must never meet a shell.
  '-gdb-set startup-with-shell off',
  // Software watchpoints fire in reverse; hardware ones do not (DESIGN.md).
  '-gdb-set can-use-hw-watchpoints 0',
  '-gdb-set print elements 64',
  '-gdb-set print repeats 16',
];
const MAX_OUTPUT = 64 * 1024;

/**
 * One gdb in MI mode for the debugger toolset: commands one at a time, stream text collected per
 * command, exec commands waited for (bounded) until their `*stopped`.
 */
export class Engine {
  running = false;
  exited = false;
  private output: string[] = [];
  private outputSize = 0;
  private lastStop: MiTuple | undefined;
  private stops = 0;
  private stopWaiters: Array<() => void> = [];
  private queue: Promise<unknown> = Promise.resolve();
  private gone: string | undefined;

  private constructor(
    private readonly proc: OwnedChild,
    private readonly mi: MiConnection,
    private readonly options: EngineOptions,
  ) {
    mi.on('record', (r) => this.onRecord(r));
    mi.on('close', (err) => this.onGone(err.message));
    proc.child.stderr?.on('data', () => undefined);
    void proc.exited.then(({ code, signal }) => this.onGone(`gdb exited (${signal ?? `code ${code}`})`));
  }

  static async start(options: EngineOptions): Promise<Engine> {
    const proc = await spawnChild(options.gdbPath, ['--interpreter=mi3', '-q', '-nx', ...(options.args.length ? ['--args', ...options.args] : [])], {
      cwd: options.cwd,
      env: options.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const engine = new Engine(proc, new MiConnection(proc.child.stdin!, proc.child.stdout!), options);
    try {
      for (const command of SETUP) await engine.mi_(command);
    } catch (err) {
      await engine.dispose();
      throw err;
    }
    return engine;
  }

  get pid(): number | undefined {
    return this.proc.child.pid;
  }

  /** Settles once gdb itself has exited (what a checked program handed to it waits for before it is closed). */
  get ended(): Promise<unknown> {
    return this.proc.exited;
  }

  /** Runs `fn` after every earlier command on this engine has finished. */
  serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** One MI command; gdb's `^error` becomes a DebugkitError carrying gdb's message. */
  async mi_(command: string): Promise<MiTuple> {
    const reply = await this.send(command);
    if (reply.resultClass === 'error') throw new DebugkitError('INVALID_ARGUMENT', String(reply.results.msg ?? 'gdb reported an error'));
    return reply.results;
  }

  /** One CLI command through MI; answers what it printed. */
  async cli(command: string): Promise<string> {
    this.takeOutput();
    await this.mi_(`-interpreter-exec console ${quoteMiString(command)}`);
    return this.takeOutput();
  }

  /**
   * Sends an exec command and waits up to `waitMs` for the target to stop. Answers without
   * `stopped` when it is still running; `waitForStop` can be called again later.
   */
  async exec(command: string, waitMs: number, signal?: AbortSignal): Promise<ExecOutcome> {
    this.takeOutput();
    const before = this.stops;
    const reply = await this.send(command);
    if (reply.resultClass === 'error') {
      throw new DebugkitError('INVALID_ARGUMENT', String(reply.results.msg ?? 'gdb reported an error'));
    }
    if (reply.resultClass === 'running' && this.stops === before) {
      this.running = true;
      await this.waitForStop(before, waitMs, signal);
    }
    return { stopped: this.stops !== before ? this.lastStop : undefined, output: this.takeOutput() };
  }

  /** Waits (bounded) for the running target's next stop. */
  async waitForStop(before: number, waitMs: number, signal?: AbortSignal): Promise<void> {
    if (this.stops !== before || !this.running || this.gone) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.stopWaiters = this.stopWaiters.filter((w) => w !== done);
        resolve();
      };
      const timer = setTimeout(done, waitMs);
      signal?.addEventListener('abort', done, { once: true });
      this.stopWaiters.push(done);
    });
  }

  get stopCount(): number {
    return this.stops;
  }

  get latestStop(): MiTuple | undefined {
    return this.lastStop;
  }

  /** Interrupts a running target; resolves once it stopped (or after `waitMs`). */
  async interrupt(waitMs: number): Promise<void> {
    if (!this.running) return;
    const before = this.stops;
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
    await terminate(this.proc, { graceMs: 500 });
  }

  private send(command: string): Promise<ResultRecord> {
    if (this.gone) return Promise.reject(new DebugkitError('SESSION_CLOSED', `gdb is gone: ${this.gone}`));
    return this.mi.send(command, this.options.replyTimeoutMs);
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
        if (record.asyncClass === 'running') this.running = true;
        if (record.asyncClass === 'stopped') {
          this.running = false;
          this.lastStop = record.results;
          if (String(record.results.reason ?? '').startsWith('exited')) this.exited = true;
          this.stops++;
          this.release();
        }
        return;
      default:
        return;
    }
  }

  private onGone(message: string): void {
    if (this.gone) return;
    this.gone = message;
    this.mi.close(new DebugkitError('SESSION_CLOSED', message));
    this.release();
  }

  private release(): void {
    const waiters = this.stopWaiters;
    this.stopWaiters = [];
    for (const w of waiters) w();
  }
}
