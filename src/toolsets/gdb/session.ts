import type { Readable } from 'node:stream';
import { DebugkitError } from '../../core/errors.js';
import { spawnChild, terminate, type OwnedChild } from '../../core/process.js';
import { OutputRing } from '../../core/ring.js';
import type { SessionResource } from '../../core/sessions.js';
import { MiConnection, quoteMiString, type ResultRecord } from './mi/connection.js';
import type { MiRecord, MiTuple } from './mi/parser.js';
import { toMiCommand } from './command.js';
import { CallCollector } from './collector.js';

export type TargetState = 'not started' | 'running' | 'stopped' | 'exited';

export interface GdbSessionOptions {
  gdbPath: string;
  cwd: string;
  /** Script gdb runs debuggees through (see exec-wrapper.sh). */
  execWrapper: string;
  /** Bound on gdb's answer to one command. */
  replyTimeoutMs: number;
  /** Called once if gdb exits while the session is still open. */
  onEngineExit?: (message: string) => void;
}

export interface CallOptions {
  /** How long to wait for a resumed target to stop before answering "running". */
  waitMs: number;
  signal?: AbortSignal;
}

export interface ProgramOutput {
  stdout: string;
  stderr: string;
  truncated: boolean;
}

export interface CallOutcome {
  result: { class: string } & MiTuple;
  output: string;
  state: TargetState;
  stopped?: MiTuple;
  program_output?: ProgramOutput;
  truncated?: boolean;
}

const STARTUP_COMMANDS = [
  '-gdb-set mi-async on',
  '-gdb-set pagination off',
  '-gdb-set confirm off',
  '-gdb-set width 0',
  '-gdb-set height 0',
  '-enable-pretty-printing',
];
const PROGRAM_OUTPUT_PER_CALL = 4096;

/** One gdb process in MI mode, its debuggee's output, and the commands sent to it, one at a time. */
export class GdbSession implements SessionResource {
  state: TargetState = 'not started';
  /** How many times the target has stopped (or exited) so far. */
  private stops = 0;
  private queue: Promise<unknown> = Promise.resolve();
  private collector = new CallCollector();
  private stopWaiters: Array<() => void> = [];
  private readonly programStdout = new OutputRing();
  private readonly programStderr = new OutputRing();
  private delivered = { stdout: 0, stderr: 0 };
  private disposed = false;
  private exitMessage: string | undefined;

  private constructor(
    private readonly proc: OwnedChild,
    private readonly mi: MiConnection,
    private readonly options: GdbSessionOptions,
  ) {
    mi.on('record', (record) => this.onRecord(record));
    mi.on('close', (err) => this.onEngineGone(err.message));
    for (const [fd, ring] of [[3, this.programStdout], [4, this.programStderr]] as const) {
      const stream = proc.child.stdio[fd] as Readable;
      stream.setEncoding('utf8');
      stream.on('data', (text: string) => ring.append(text));
    }
    proc.child.stderr?.setEncoding('utf8');
    proc.child.stderr?.on('data', (text: string) => this.collector.addOutput(text));
    void proc.exited.then(({ code, signal }) => {
      this.onEngineGone(`gdb exited unexpectedly (${signal ? `signal ${signal}` : `exit code ${code}`})`);
    });
  }

  static async start(options: GdbSessionOptions): Promise<GdbSession> {
    // A UTF-8 locale makes gdb print non-ASCII text as text rather than octal escapes; the
    // debuggee gets the caller's own LC_ALL back (see ENV_RESTORE).
    const proc = await spawnChild(options.gdbPath, ['--interpreter=mi3', '-q', '-nx'], {
      cwd: options.cwd,
      env: { ...process.env, LC_ALL: 'C.UTF-8' },
      stdio: ['pipe', 'pipe', 'pipe', 'pipe', 'pipe'],
    });
    const mi = new MiConnection(proc.child.stdin!, proc.child.stdout!);
    const session = new GdbSession(proc, mi, options);
    try {
      const wrapper = `'${options.execWrapper.replace(/'/g, `'\\''`)}'`;
      const lcAll = process.env.LC_ALL;
      const restoreLocale = lcAll === undefined ? 'unset environment LC_ALL' : `set environment LC_ALL=${lcAll}`;
      const setup = [...STARTUP_COMMANDS, `-gdb-set exec-wrapper ${wrapper}`, `-interpreter-exec console ${quoteMiString(restoreLocale)}`];
      for (const command of setup) {
        const reply = await mi.send(command, options.replyTimeoutMs);
        if (reply.resultClass === 'error') throw new DebugkitError('ENGINE_FAILED', `gdb refused "${command}": ${String(reply.results.msg)}`);
      }
      session.collector = new CallCollector();
    } catch (err) {
      await session.dispose('gdb failed to start');
      throw err instanceof DebugkitError ? err : new DebugkitError('ENGINE_FAILED', `gdb failed to start: ${String(err)}`, { cause: err });
    }
    return session;
  }

  get pid(): number | undefined {
    return this.proc.child.pid;
  }

  /** Runs one CLI or MI command; calls on one session never overlap. */
  call(command: string, options: CallOptions): Promise<CallOutcome> {
    const run = this.queue.then(() => this.runCall(command, options));
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Waits (bounded) for a running target to stop and reports what happened meanwhile. */
  wait(options: CallOptions): Promise<CallOutcome> {
    const run = this.queue.then(async () => {
      this.assertAlive();
      if (this.state === 'running') await this.waitForStop(this.stops, options);
      return this.finish({ class: 'done' });
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  readProgramOutput(stream: 'stdout' | 'stderr', cursor: number, maxChars: number) {
    return (stream === 'stdout' ? this.programStdout : this.programStderr).read(cursor, maxChars);
  }

  async dispose(reason: string): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.exitMessage ??= `the session was closed (${reason})`;
    this.mi.close(new DebugkitError('SESSION_CLOSED', `the gdb session ended: ${reason}`));
    this.releaseStopWaiters();
    await terminate(this.proc, { graceMs: 1000 });
  }

  private async runCall(command: string, options: CallOptions): Promise<CallOutcome> {
    this.assertAlive();
    const { mi, interrupt } = toMiCommand(command);
    const wasRunning = this.state === 'running';
    // Stops are counted, not just flagged: "^running" and "*stopped" can arrive in one chunk, so
    // the stop may be handled before this call even sees the reply.
    const stopsBefore = this.stops;
    const reply = await this.send(mi, options.signal);
    if (reply.resultClass === 'error') {
      const msg = String(reply.results.msg ?? 'gdb reported an error');
      const hint = this.state === 'running'
        ? ' (the target is running: send "-exec-interrupt" to stop it, or gdb_wait to wait for it to stop)'
        : '';
      this.collector = new CallCollector();
      throw new DebugkitError('INVALID_ARGUMENT', msg + hint);
    }
    if (reply.resultClass === 'exit') {
      return this.finish({ class: 'exit' });
    }
    if (reply.resultClass === 'running' || (interrupt && wasRunning)) {
      if (this.stops === stopsBefore) {
        this.state = 'running';
        await this.waitForStop(stopsBefore, options);
      }
      // What the program wrote before stopping is already in its pipe; let one poll phase read it.
      await new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
    }
    return this.finish({ class: reply.resultClass, ...reply.results });
  }

  private async send(command: string, signal?: AbortSignal): Promise<ResultRecord> {
    const reply = this.mi.send(command, this.options.replyTimeoutMs);
    if (!signal) return reply;
    return abortable(reply, signal);
  }

  /** Waits until a stop newer than `stopsBefore` arrives, the bound passes, or the call is cancelled. */
  private async waitForStop(stopsBefore: number, { waitMs, signal }: CallOptions): Promise<void> {
    if (this.stops !== stopsBefore || this.state !== 'running' || waitMs <= 0 || signal?.aborted) return;
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

  private finish(result: CallOutcome['result']): CallOutcome {
    const collected = this.collector.take();
    this.collector = new CallCollector();
    const outcome: CallOutcome = { result, output: collected.output, state: this.state };
    if (collected.truncated) outcome.truncated = true;
    if (collected.stopped) outcome.stopped = collected.stopped;
    const programOutput = this.takeProgramOutput();
    if (programOutput) outcome.program_output = programOutput;
    return outcome;
  }

  private takeProgramOutput(): ProgramOutput | undefined {
    const out = this.programStdout.read(this.delivered.stdout, PROGRAM_OUTPUT_PER_CALL);
    const err = this.programStderr.read(this.delivered.stderr, PROGRAM_OUTPUT_PER_CALL);
    const truncated = out.dropped || err.dropped || out.cursor < this.programStdout.end || err.cursor < this.programStderr.end;
    // Whatever did not fit stays readable through gdb_program_output; the next call starts after it.
    this.delivered = { stdout: this.programStdout.end, stderr: this.programStderr.end };
    if (!out.text && !err.text) return undefined;
    return { stdout: out.text, stderr: err.text, truncated };
  }

  private onRecord(record: MiRecord): void {
    switch (record.kind) {
      case 'console':
      case 'target':
      case 'log':
        this.collector.addOutput(record.text);
        return;
      case 'exec':
        if (record.asyncClass === 'running') this.state = 'running';
        if (record.asyncClass === 'stopped') {
          const reason = String(record.results.reason ?? '');
          this.state = reason.startsWith('exited') ? 'exited' : 'stopped';
          this.stops++;
          this.collector.setStopped(record.results);
          this.releaseStopWaiters();
        }
        return;
      case 'notify':
        if (record.asyncClass === 'thread-group-exited' && this.state !== 'running') this.state = 'exited';
        return;
      case 'unknown':
        // Not MI: something wrote to gdb's terminal directly (a debuggee started outside the wrapper).
        this.collector.addOutput(`${record.text}\n`);
        return;
      default:
        return;
    }
  }

  private onEngineGone(message: string): void {
    if (this.exitMessage) return;
    this.exitMessage = message;
    this.mi.close(new DebugkitError('ENGINE_FAILED', `${message}; this session is closed, open a new one`));
    this.releaseStopWaiters();
    if (!this.disposed) this.options.onEngineExit?.(message);
  }

  private releaseStopWaiters(): void {
    const waiters = this.stopWaiters;
    this.stopWaiters = [];
    for (const w of waiters) w();
  }

  private assertAlive(): void {
    if (this.exitMessage || this.mi.isClosed) {
      throw new DebugkitError('ENGINE_FAILED', `${this.exitMessage ?? 'gdb is no longer running'}; this session is closed, open a new one`);
    }
  }
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new DebugkitError('CANCELLED', 'the call was cancelled'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new DebugkitError('CANCELLED', 'the call was cancelled; gdb may still finish the command'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
