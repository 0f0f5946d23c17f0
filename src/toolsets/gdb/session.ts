import type { ReplayAtStop } from '../mocks/option.js';
import type { DebugReplay } from '../mocks/under.js';
import type { Readable } from 'node:stream';
import { DebugkitError } from '../../core/errors.js';
import { endMarkedProcesses, killProcessGroup, processStartTime, procStat } from '../../core/process.js';
import { OutputRing, readPage, readTail, type RingPage } from '../../core/ring.js';
import type { SessionResource } from '../../core/sessions.js';
import { quoteMiString, type ResultRecord } from '../../core/mi/connection.js';
import { MI_SETUP, MiEngine, type TargetState } from '../../core/mi/engine.js';
import type { MiRecord, MiTuple } from '../../core/mi/parser.js';
import { boundPromise } from '../../core/wait.js';
import { GDB_SHELL_LINE } from '../../core/secrets.js';
import { toMiCommand } from './command.js';
import { CallCollector, PROGRAM_OUTPUT_PER_CALL } from './collector.js';
import type { CheckedProgram } from '../../core/paths.js';
import { firstUserFrame, type UserFrameChoice } from '../../core/mi/user-frame.js';
import { compactStopped, mergeCalls, type CallStep } from './answer.js';
import {
  CommandRefusedError,
  capabilityScopes,
  isAttachCommand,
  isDetachCommand,
  isStartCommand,
  judgeProgramCopy,
  prepareCommand,
  refuseOutsideLibraries,
  type FileSlot,
  type GdbPolicy,
  type PreparedCommand,
} from './policy.js';

export type { TargetState };

export interface GdbSessionOptions {
  gdbPath: string;
  cwd: string;
  /** Where gdb is started when not at `cwd` itself: a checked directory's descriptor path (core/paths openContainedDirectory), which names `cwd`. */
  startIn?: string;
  /** Script gdb runs debuggees through (see exec-wrapper.sh). */
  execWrapper: string;
  /** Bound on gdb's answer to one command. */
  replyTimeoutMs: number;
  /** Called once if gdb exits while the session is still open. */
  onEngineExit?: (message: string) => void;
  /** What commands may reach beyond the debugger; omitted: everything (internal use). */
  policy?: Omit<GdbPolicy, 'cwd' | 'ownPids'>;
}

export interface CallOptions {
  /** How long to wait for a resumed target to stop before answering "running". */
  waitMs: number;
  signal?: AbortSignal;
  /** debugkit's own commands (loading the program from open): not checked against the policy. */
  trusted?: boolean;
  /**
   * The capability scopes the caller's key was checked for (capabilityScopes, before the call ran):
   * a command that needs more by the time it is sent (a file swapped meanwhile) is refused.
   */
  checkedScopes?: readonly string[];
  /** Answer MI's *stopped record as gdb sent it (machine fields, `@entry` twins), not compacted. */
  raw?: boolean;
}

export interface ProgramOutput {
  stdout: string;
  stderr: string;
  truncated: boolean;
  hint?: string;
}

export interface CallOutcome {
  result: { class: string } & MiTuple;
  output: string;
  state: TargetState;
  stopped?: MiTuple;
  program_output?: ProgramOutput;
  truncated?: boolean;
  /** Under a mock set: what replay did since the last answer (mocks/under.ts ReplayAtStop). */
  mocks?: ReplayAtStop;
}

/** One gdb process in MI mode, its debuggee's output, and the commands sent to it, one at a time. */
export class GdbSession implements SessionResource {
  private collector = new CallCollector();
  private readonly programStdout = new OutputRing();
  private readonly programStderr = new OutputRing();
  private delivered = { stdout: 0, stderr: 0 };
  private disposed = false;
  private exitMessage: string | undefined;
  /** Inferior pids by thread group ("i1"), and which of them were attached rather than started. */
  private readonly inferiors = new Map<string, { pid: number; attached: boolean }>();
  /** Every pid this session started (attaching back to one is not "another process"). */
  /** The programs this session started: pid -> its start time, so a pid reused by another process is not taken for ours. */
  private readonly ownPids = new OwnProcesses();
  private attaching = false;
  private notes: string[] = [];
  /** The command of the call in flight, for hints when its output is cut. */
  private command = '';
  /** Private copies gdb reads instead of workspace files (policy prepareCommand), by the file of gdb's each is. */
  private readonly copies = new Map<FileSlot, CheckedProgram>();
  /** The first command of the session that may have changed what gdb's commands mean (PreparedCommand.mayRedefine). */
  private redefinedBy: string | undefined;

  private constructor(
    private readonly engine: MiEngine,
    private readonly options: GdbSessionOptions,
  ) {
    const proc = engine.proc;
    engine.on('record', (record) => this.onRecord(record));
    // gdb's output closing and gdb exiting come close together: the exit says how it died.
    engine.on('close', () => {
      void boundPromise(proc.exited, { timeoutMs: 1000 }).then((o) => {
        this.onEngineGone(o.kind === 'value' ? describeExit(o.value) : 'gdb closed its output');
      });
    });
    for (const [fd, ring] of [
      [3, this.programStdout],
      [4, this.programStderr],
    ] as const) {
      const stream = proc.child.stdio[fd] as Readable;
      stream.setEncoding('utf8');
      stream.on('data', (text: string) => ring.append(text));
    }
    proc.child.stderr?.setEncoding('utf8');
    proc.child.stderr?.on('data', (text: string) => this.collector.addOutput(text));
    void proc.exited.then((exit) => {
      this.onEngineGone(describeExit(exit));
      for (const copy of this.copies.values()) copy.close();
      void this.replay?.close();
    });
  }

  static async start(options: GdbSessionOptions): Promise<GdbSession> {
    const wrapper = `'${options.execWrapper.replace(/'/g, `'\\''`)}'`;
    const lcAll = process.env.LC_ALL;
    const restoreLocale = lcAll === undefined ? 'unset environment LC_ALL' : `set environment LC_ALL=${lcAll}`;
    // A UTF-8 locale makes gdb print non-ASCII text as text rather than octal escapes; the
    // debuggee gets the caller's own LC_ALL back (see ENV_RESTORE).
    const session = await MiEngine.start(
      {
        gdbPath: options.gdbPath,
        cwd: options.startIn ?? options.cwd,
        env: { ...process.env, LC_ALL: 'C.UTF-8' },
        stdio: ['pipe', 'pipe', 'pipe', 'pipe', 'pipe'],
        setup: [...MI_SETUP, '-enable-pretty-printing', `-gdb-set exec-wrapper ${wrapper}`, `-interpreter-exec console ${quoteMiString(restoreLocale)}`],
        replyTimeoutMs: options.replyTimeoutMs,
      },
      (engine) => new GdbSession(engine, options),
      (session) => session.dispose('gdb failed to start'),
    );
    session.collector = new CallCollector();
    return session;
  }

  get pid(): number | undefined {
    return this.engine.pid;
  }

  get state(): TargetState {
    return this.engine.state;
  }

  /** Settles once gdb has exited (what the checked program handed to it waits for before it is closed). */
  get exited(): Promise<unknown> {
    return this.engine.proc.exited;
  }

  /** The mock set the program's calls are answered from (open's `mocks`), closed with the session. */
  private replay: DebugReplay | undefined;
  /** A miss's interrupt (stopOnMiss) under way. */
  private missInterrupt: Promise<void> | undefined;

  /**
   * Runs the program under `replay` from its next start: the replay's variables (proxychains'
   * preload and config, the proxy URLs, the CA) in the inferior's environment, not gdb's own; the
   * answers say what replay did; with stopOnMiss a miss interrupts the program, and the miss's
   * answer waits for the stop, so the thread that asked is stopped in its read of the answer.
   */
  async underMocks(replay: DebugReplay): Promise<void> {
    this.replay = replay;
    for (const [name, value] of Object.entries(replay.env)) {
      await this.engine.send(`-interpreter-exec console ${quoteMiString(`set environment ${name}=${value}`)}`, { timeoutMs: 10_000 });
    }
    if (replay.stopOnMiss) replay.onMiss(() => this.interruptForMiss());
  }

  private interruptForMiss(): Promise<void> {
    if (this.engine.state !== 'running' || this.engine.isClosed) return Promise.resolve();
    this.missInterrupt ??= (async () => {
      const before = this.engine.stopCount;
      await this.engine.send('-exec-interrupt', { timeoutMs: 2000 }).catch(() => undefined);
      await this.engine.waitForStop(before, { waitMs: 2000 });
    })().finally(() => (this.missInterrupt = undefined));
    return this.missInterrupt;
  }

  /** Under a mock set: what replay did since the last answer, on this one. */
  private withReplay(outcome: CallOutcome): CallOutcome {
    const replayed = this.replay?.sinceLastStop();
    if (replayed) outcome.mocks = replayed;
    return outcome;
  }

  /** Runs one CLI or MI command; calls on one session never overlap. */
  call(command: string, options: CallOptions): Promise<CallOutcome> {
    return this.engine.serial(async () => this.withReplay(await this.runCall(command, options)));
  }

  /**
   * Runs `commands` in order as one call (no other call of the session in between) and answers
   * them together (answer.ts mergeCalls). It stops at a command gdb refuses (the error says which,
   * after what the ones before it printed) or that leaves the program running.
   */
  callAll(commands: readonly string[], options: CallOptions): Promise<CallOutcome> {
    return this.engine.serial(async () => {
      const done: CallStep[] = [];
      for (const [i, command] of commands.entries()) {
        try {
          done.push({ command, outcome: await this.runCall(command, options) });
        } catch (err) {
          if (!(err instanceof DebugkitError) || err.code !== 'INVALID_ARGUMENT') throw err;
          const before = done.map((d) => `(gdb) ${d.command}\n${d.outcome.output}`).join('');
          const after = commands.length - i - 1;
          throw new DebugkitError(
            'INVALID_ARGUMENT',
            `${before}(gdb) ${command}\n${err.message}\n[debugkit: command ${i + 1} of ${commands.length} failed${after > 0 ? `; the ${after} after it were not sent` : ''}]`,
          );
        }
        if (this.engine.state === 'running') break;
      }
      return this.withReplay(mergeCalls(done, commands.length - done.length));
    });
  }

  /** Waits (bounded) for a running target to stop and reports what happened meanwhile. */
  wait(options: CallOptions): Promise<CallOutcome> {
    return this.engine.serial(async () => {
      this.assertAlive();
      if (this.engine.state === 'running') await this.engine.waitForStop(this.engine.stopCount, options);
      this.assertAlive();
      return this.withReplay(await this.finish({ class: 'done' }, options, await this.ownFrameOfStop()));
    });
  }

  /** A page of the program's output; a negative cursor counts back from the end. */
  readProgramOutput(stream: 'stdout' | 'stderr', cursor: number, maxChars: number): RingPage {
    return readPage(stream === 'stdout' ? this.programStdout : this.programStderr, cursor, maxChars);
  }

  async dispose(reason: string): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    // An attached process is left as it was found: running, without gdb.
    if (!this.exitMessage && !this.engine.isClosed && [...this.inferiors.values()].some((i) => i.attached)) {
      // Detaching needs a stopped target: gdb takes its breakpoints out of the process on the way.
      if (this.engine.state === 'running') {
        const stopsBefore = this.engine.stopCount;
        await this.engine.send('-exec-interrupt', { timeoutMs: 2000 }).catch(() => undefined);
        await this.engine.waitForStop(stopsBefore, { waitMs: 2000 });
      }
      await this.engine.send('-target-detach', { timeoutMs: 5000 }).catch(() => undefined);
    }
    this.exitMessage ??= `the session was closed (${reason})`;
    await this.engine.end(new DebugkitError('SESSION_CLOSED', `the gdb session ended: ${reason}`), 1000);
    await this.replay?.close();
  }

  /** The key scopes `command` needs in this session (what it reaches beyond the debugger). */
  capabilityScopes(command: string): string[] {
    return capabilityScopes(command, { root: this.options.policy?.root ?? this.options.cwd, cwd: this.options.cwd, ownPids: this.ownPids });
  }

  private commandPolicy(): GdbPolicy {
    return { ...this.options.policy!, cwd: this.options.cwd, ownPids: this.ownPids };
  }

  private async runCall(command: string, options: CallOptions): Promise<CallOutcome> {
    this.assertAlive();
    let prepared: PreparedCommand = { command };
    // The operator's flags, and a file it reads that other users could swap read from a checked private copy.
    if (this.options.policy && !options.trusted) {
      if (this.redefinedBy && GDB_SHELL_LINE.test(command)) throw shellMayBeRedefined(this.redefinedBy);
      prepared = await prepareCommand(command, this.commandPolicy(), options.checkedScopes);
      // Before it is sent: whatever it does (even failing), `shell` may not be gdb's from here on.
      if (prepared.mayRedefine) this.redefinedBy ??= command.trim().slice(0, 80);
    }
    if (this.copies.has('exec') && isStartCommand(command)) await this.reloadIfChanged(options.checkedScopes);
    try {
      const outcome = await this.sendCall(prepared.command, command, options);
      // While a core is loaded, any command may make gdb read its link map again (`file` of the
      // program loaded after the core, `sharedlibrary`): the libraries are checked after each.
      const core = prepared.copy?.slots.includes('core') || this.copies.has('core');
      if (core && this.options.policy && !options.trusted) await this.checkCoreLibraries(options);
      return outcome;
    } finally {
      if (prepared.copy) this.keepCopy(prepared.copy);
    }
  }

  /**
   * While a core is loaded (its notes were checked before): the shared libraries gdb found for it
   * through the link map in its memory. One outside what the key may read unloads them and the
   * core and refuses the command; what it answered is not shown. Within the call, so no other
   * command of the session runs in between.
   */
  private async checkCoreLibraries(options: CallOptions): Promise<void> {
    const listed = (await this.send('-file-list-shared-libraries')).results['shared-libraries'];
    const files = (Array.isArray(listed) ? listed : []).flatMap((l) => {
      const name = typeof l === 'object' && l !== null ? (l as MiTuple)['host-name'] : undefined;
      return typeof name === 'string' && name !== '' ? [name] : [];
    });
    try {
      await refuseOutsideLibraries(files, this.commandPolicy(), options.checkedScopes);
    } catch (err) {
      // The libraries' symbols go too (they stay after the core goes), then the core.
      await this.send('-interpreter-exec console "nosharedlibrary"').catch(() => undefined);
      await this.send('-interpreter-exec console "core-file"').catch(() => undefined);
      throw err;
    }
  }

  /** The program `open` loaded (its private copy): gdb's program file and symbols, kept and removed as a copy a command named. */
  adoptProgram(program: CheckedProgram): void {
    this.keepCopy({ program, slots: ['exec', 'symbols'] });
  }

  /**
   * Before a run: when the file gdb's program was copied from has changed since (rebuilt), gdb
   * loads a fresh copy first, as it re-reads a changed program file it runs by name; otherwise
   * every run would start the build that was loaded, silently. Only while gdb's program is still
   * that copy (a `file` since may have named another).
   */
  private async reloadIfChanged(checkedScopes: readonly string[] | undefined): Promise<void> {
    const copy = this.copies.get('exec')!;
    // gdb re-reads a program it runs by its own name itself.
    if (!copy.copied || !copy.changed()) return;
    const groups = (await this.send('-list-thread-groups')).results.groups;
    const loaded = Array.isArray(groups) && groups.some((g) => typeof g === 'object' && g !== null && (g as MiTuple).executable === copy.path);
    if (!loaded) return;
    let fresh: CheckedProgram;
    try {
      fresh = await copy.reopen();
      // The new build's debug links as well: judged on its copy, its debug files brought beside it.
      if (this.options.policy) await judgeProgramCopy(fresh, `program ${copy.real}`, this.commandPolicy(), checkedScopes);
    } catch (err) {
      this.notes.push(`[debugkit: ${copy.real} changed since it was loaded, but it cannot be loaded again (${(err as Error).message}): running the build loaded before]`);
      return;
    }
    const reply = await this.send(`-file-exec-and-symbols ${quoteMiString(fresh.path)}`);
    if (reply.resultClass === 'error') {
      fresh.close();
      this.notes.push(`[debugkit: ${copy.real} changed since it was loaded, but gdb could not load it again (${String(reply.results.msg ?? 'an error')}): running the build loaded before]`);
      return;
    }
    const slots = [...this.copies].filter(([, c]) => c === copy).map(([slot]) => slot);
    this.keepCopy({ program: fresh, slots });
    this.notes.push(`[debugkit: ${copy.real} changed since it was loaded (rebuilt?): this run starts the new build, its symbols re-read]`);
  }

  /**
   * A copy gdb was sent stays while it is one of gdb's files (`slots`) and goes with gdb; the copy
   * it replaced there goes at once, so a session holds at most three. So does it when gdb refused
   * the command, which may have been half done (a `file` whose symbols failed): a file gdb kept
   * may then be gone when gdb next reads it (an error), never another file in its place.
   */
  private keepCopy({ program, slots }: NonNullable<PreparedCommand['copy']>): void {
    if (this.exitMessage) return program.close();
    for (const slot of slots) {
      const old = this.copies.get(slot);
      this.copies.set(slot, program);
      if (old && ![...this.copies.values()].includes(old)) old.close();
    }
  }

  private async sendCall(command: string, asked: string, options: CallOptions): Promise<CallOutcome> {
    const { mi, interrupt } = toMiCommand(command);
    this.command = asked;
    const wasRunning = this.engine.state === 'running';
    const attach = isAttachCommand(command);
    const detach = isDetachCommand(command);
    // Only a program this session really started is ended at detach (never a pid gdb was told of, e.g. by a core file).
    const launchedBefore = [...this.inferiors.values()].filter((i) => !i.attached && this.ownPids.has(i.pid)).map((i) => i.pid);
    // Stops are counted, not just flagged: "^running" and "*stopped" can arrive in one chunk, so
    // the stop may be handled before this call even sees the reply.
    const stopsBefore = this.engine.stopCount;
    this.attaching = attach;
    let reply: ResultRecord;
    try {
      reply = await this.send(mi, options.signal);
    } finally {
      this.attaching = false;
    }
    if (reply.resultClass === 'error') {
      const msg = String(reply.results.msg ?? 'gdb reported an error');
      const hint = this.engine.state === 'running' ? ' (the target is running: send "-exec-interrupt" to stop it, or gdb_wait to wait for it to stop)' : '';
      // What gdb printed before it failed (a partial listing, a warning) belongs to the error.
      // gdb echoes the message on its log stream too: keep what came before it.
      let printed = this.collector.take().output.trimEnd();
      this.collector = new CallCollector();
      if (printed.endsWith(msg)) printed = printed.slice(0, -msg.length).trimEnd();
      throw new DebugkitError('INVALID_ARGUMENT', (printed ? `${printed}\n` : '') + msg + hint);
    }
    if (reply.resultClass === 'exit') {
      return this.finish({ class: 'exit' }, options);
    }
    if (reply.resultClass === 'running' || (interrupt && wasRunning) || attach) {
      await this.engine.awaitResumed(stopsBefore, options, attach);
      this.assertAlive();
      // What the program wrote before stopping is already in its pipe; let one poll phase read it.
      await new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
    }
    if (detach) await this.afterDetach(launchedBefore);
    return this.finish({ class: reply.resultClass, ...reply.results }, options, await this.ownFrameOfStop());
  }

  /** A signal stop outside the program's code (libc's strlen): the first frame of its own, from the stack. */
  private async ownFrameOfStop(): Promise<UserFrameChoice | undefined> {
    const stop = this.collector.lastStop;
    if (stop?.reason !== 'signal-received' || this.engine.state !== 'stopped') return undefined;
    const stack = await this.send('-stack-list-frames 0 63').catch(() => undefined);
    const frames = stack?.resultClass === 'done' ? stack.results.stack : undefined;
    return Array.isArray(frames) ? firstUserFrame(frames, this.options.policy?.root ?? this.options.cwd) : undefined;
  }

  /**
   * A program gdb started does not outlive its detach (nobody would own it), nor does anything it
   * started (forks, daemons: marked by the exec-wrapper with its pid); an attached one does.
   */
  private async afterDetach(launchedBefore: number[]): Promise<void> {
    for (const pid of launchedBefore) {
      if ([...this.inferiors.values()].some((i) => i.pid === pid)) continue;
      killProcessGroup(pid);
      const ended = await endMarkedProcesses(this.engine.proc, 'DEBUGKIT_INFERIOR', String(pid));
      this.notes.push(
        ended
          ? `[debugkit: process ${pid} was started by this session, so it was ended at detach rather than left running without an owner]`
          : `[debugkit: process ${pid} was started by this session and was ended at detach, but processes it started were still being found after 5 s of ending them: some may still run]`,
      );
    }
  }

  private async send(command: string, signal?: AbortSignal): Promise<ResultRecord> {
    try {
      return await this.engine.send(command, { signal });
    } catch (err) {
      // The channel closing first says only "closed": how gdb ended comes with its exit.
      if (this.engine.isClosed) {
        await boundPromise(this.engine.proc.exited, { timeoutMs: 2000 });
        this.assertAlive();
      }
      throw err;
    }
  }

  private finish(result: CallOutcome['result'], options: Pick<CallOptions, 'raw'>, own?: UserFrameChoice): CallOutcome {
    const collected = this.collector.take(this.command);
    this.command = '';
    this.collector = new CallCollector();
    const notes = this.notes
      .splice(0)
      .map((n) => `${n}\n`)
      .join('');
    const outcome: CallOutcome = { result, output: collected.output + notes, state: this.engine.state };
    if (collected.truncated) outcome.truncated = true;
    if (collected.stopped) outcome.stopped = options.raw ? collected.stopped : compactStopped(collected.stopped, own);
    const programOutput = this.takeProgramOutput();
    if (programOutput) outcome.program_output = programOutput;
    return outcome;
  }

  private takeProgramOutput(): ProgramOutput | undefined {
    // When there is more than fits, the end is kept: that is where a failure shows.
    const out = readTail(this.programStdout, this.delivered.stdout, PROGRAM_OUTPUT_PER_CALL);
    const err = readTail(this.programStderr, this.delivered.stderr, PROGRAM_OUTPUT_PER_CALL);
    const from = { stdout: this.delivered.stdout, stderr: this.delivered.stderr };
    this.delivered = { stdout: out.end, stderr: err.end };
    if (!out.text && !err.text) return undefined;
    const truncated = out.skipped > 0 || err.skipped > 0;
    const result: ProgramOutput = { stdout: out.text, stderr: err.text, truncated };
    if (truncated) {
      const cut = [out.skipped > 0 ? `stdout (${out.skipped} characters, cursor ${from.stdout})` : '', err.skipped > 0 ? `stderr (${err.skipped} characters, cursor ${from.stderr})` : '']
        .filter(Boolean)
        .join(' and ');
      result.hint = `only the last ${PROGRAM_OUTPUT_PER_CALL} characters of each stream are shown; the start of ${cut} is readable with gdb_program_output {"cursor": N}`;
    }
    return result;
  }

  private onRecord(record: MiRecord): void {
    switch (record.kind) {
      case 'console':
      case 'target':
      case 'log':
        this.collector.addOutput(record.text);
        return;
      case 'exec':
        // The engine has counted the stop (and set the state) already.
        if (record.asyncClass === 'stopped') this.collector.setStopped(record.results);
        return;
      case 'notify':
        this.onNotify(record.asyncClass, record.results);
        return;
      case 'unknown':
        // Not MI: something wrote to gdb's terminal directly (a debuggee started outside the wrapper).
        this.collector.addOutput(`${record.text}\n`);
        return;
      default:
        return;
    }
  }

  private onNotify(asyncClass: string, results: MiTuple): void {
    const group = String(results.id ?? '');
    if (asyncClass === 'thread-group-started') {
      const pid = Number(results.pid);
      this.inferiors.set(group, { pid, attached: this.attaching });
      // A program gdb started is gdb's child (or a fork of one of ours); a pid gdb reports for a
      // core file or an attach is not, and never becomes "ours" to attach to or kill.
      if (!this.attaching) this.ownPids.addIfChildOf(pid, [this.engine.pid!]);
    }
    if (asyncClass === 'thread-group-exited') {
      const inferior = this.inferiors.get(group);
      this.inferiors.delete(group);
      if (inferior?.attached) {
        this.notes.push(`[debugkit: process ${inferior.pid} was attached, not started by this session: it is left running as it was found]`);
      }
      if (this.engine.state !== 'running') this.engine.state = 'exited';
    }
  }

  private onEngineGone(message: string): void {
    if (this.exitMessage) return;
    this.exitMessage = message;
    // A program gdb started does not die with gdb (a tracee outlives its tracer and runs on):
    // nobody would own it, so it ends here. Attached processes are left as they were found.
    for (const inferior of this.inferiors.values()) if (!inferior.attached && this.ownPids.has(inferior.pid)) killProcessGroup(inferior.pid);
    this.engine.close(new DebugkitError('ENGINE_FAILED', `${message}; this session is closed, open a new one`));
    if (!this.disposed) this.options.onEngineExit?.(message);
  }

  private assertAlive(): void {
    if (this.exitMessage || this.engine.isClosed) {
      throw new DebugkitError('ENGINE_FAILED', `${this.exitMessage ?? 'gdb is no longer running'}; this session is closed, open a new one`);
    }
  }
}

function describeExit({ code, signal }: { code: number | null; signal: NodeJS.Signals | null }): string {
  return `gdb exited unexpectedly (${signal ? `signal ${signal}` : `exit code ${code}`})`;
}

/**
 * Processes a session started, each known by its pid and start time: once the process is gone and
 * its pid reused by another, `has` is false for it (a pid alone would make the stranger ours).
 */
class OwnProcesses {
  private readonly started = new Map<number, string | undefined>();

  /** Records `pid` as ours when its parent is one of `parents` or a process already ours. */
  addIfChildOf(pid: number, parents: number[]): void {
    const ppid = Number(procStat(pid)?.[1]);
    if (parents.includes(ppid) || this.has(ppid)) this.started.set(pid, processStartTime(pid));
  }

  has(pid: number): boolean {
    if (!this.started.has(pid)) return false;
    const when = this.started.get(pid);
    return when !== undefined && processStartTime(pid) === when;
  }
}

/**
 * A `shell`/`!` line in a session where `shell` may have been redefined (`define shell`, a Python
 * command of that name): the audit reads such a line as a command line and hides its passwords,
 * which a redefined `shell` would turn into code that ran unseen.
 */
function shellMayBeRedefined(by: string): CommandRefusedError {
  return new CommandRefusedError(
    `refused: this session ran "${by}", which may have redefined gdb's shell command (define, alias, python, source...), ` +
      'and the audit reads a "shell"/"!" line as a host command line. Run host commands in a session before such commands (open a new one), ' +
      'or from Python (python import subprocess; subprocess.run([...])), which the audit keeps as sent',
  );
}
