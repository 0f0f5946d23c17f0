import { readdirSync, readFileSync } from 'node:fs';
import type { DebugProtocol } from '@vscode/debugprotocol';
import type { DapConnection } from '../../core/dap/connection.js';
import { DebugkitError } from '../../core/errors.js';
import { killProcessGroup, terminate, type OwnedChild } from '../../core/process.js';
import { OutputRing } from '../../core/ring.js';
import { boundPromise, waitBounded } from '../../core/wait.js';
import type { ConditionFailure, Engine, EngineLaunch, StartedEngine } from './engine.js';

export interface LaunchSpec extends EngineLaunch {
  /** Runs between `initialized` and `configurationDone`: breakpoints go in here. */
  configure(dap: DapConnection): Promise<void>;
  /** The adapter's pid, as soon as it runs (before the program is launched). */
  onAdapter?(pid: number): void;
}

/**
 * One engine's adapter process (debugpy's, Delve's), the DAP channel to it, and what it reports
 * about the debuggee: its pid, its output (kept in rings) and its end. Knows the launch handshake,
 * not sessions; what only one engine says is read by its Engine.
 */
export class DebugAdapter {
  readonly stdout = new OutputRing();
  readonly stderr = new OutputRing();
  debuggeePid: number | undefined;
  exitCode: number | undefined;
  /** Set when the adapter process itself ended (it should outlive the debuggee until disconnect). */
  adapterExit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** Settles when the debuggee has ended (terminated or exited), or the adapter has gone. */
  readonly ended: Promise<void>;
  private markEnded: () => void = () => {};
  private disposed = false;
  /** Stops not yet taken: events are not buffered by DAP, and one can come before launch returns. */
  private stops: DebugProtocol.StoppedEvent[] = [];
  private conditionFailures: ConditionFailure[] = [];
  private wake = new Set<() => void>();
  private hasEnded = false;
  private readonly proc: OwnedChild | undefined;
  readonly dap: DapConnection;

  private constructor(
    readonly engine: Engine,
    private readonly started: StartedEngine,
  ) {
    const { proc, dap } = started;
    this.proc = proc;
    this.dap = dap;
    this.ended = new Promise((resolve) => (this.markEnded = resolve));
    dap.onEvent('output', (e) => {
      const { category = 'console', output } = e.body;
      if (category === 'stdout') this.stdout.append(output);
      else if (category === 'stderr') this.stderr.append(output);
      else {
        const notes = engine.readOutput?.(category, output);
        if (notes?.conditionFailure) this.conditionFailures.push(notes.conditionFailure);
        if (notes?.pid !== undefined) this.debuggeePid ??= notes.pid;
        if (notes?.exitCode !== undefined) this.exitCode = notes.exitCode;
      }
    });
    // An engine that leaves the program's output on its own streams (Delve): kept as output events are.
    started.programOutput?.stdout.on('data', (chunk: Buffer) => this.stdout.append(chunk.toString()));
    started.programOutput?.stderr.on('data', (chunk: Buffer) => this.stderr.append(chunk.toString()));
    dap.onEvent('process', (e) => (this.debuggeePid = e.body.systemProcessId));
    dap.onEvent('exited', (e) => (this.exitCode = e.body.exitCode));
    dap.onEvent('stopped', (e) => {
      this.stops.push(e);
      this.notify();
    });
    dap.onEvent('terminated', () => this.end());
    void (started.adapterExited ?? proc?.exited ?? new Promise<never>(() => undefined)).then((exit) => {
      if (!this.disposed) this.adapterExit = exit;
      this.end();
    });
    // The channel closes a moment before the process is reaped: wait (bounded) for how it ended.
    void dap.closed.then(async () => {
      if (proc) await boundPromise(proc.exited, { timeoutMs: 1000 });
      this.end();
    });
  }

  /** Forgets stops nobody took (call before resuming). */
  clearStops(): void {
    this.stops = [];
    this.conditionFailures = [];
  }

  /** A condition failure an engine reported by other means than output (Delve: an exception stop). */
  noteConditionFailure(failure: ConditionFailure): void {
    this.conditionFailures.push(failure);
  }

  /** The breakpoint conditions that raised since the last call (pydevd reports each before the stop it makes there). */
  takeConditionFailures(): ConditionFailure[] {
    const taken = this.conditionFailures;
    this.conditionFailures = [];
    return taken;
  }

  /** The next stop, or "ended" when the program is gone, or "timeout" after `timeoutMs`. */
  async nextStop(timeoutMs: number, signal?: AbortSignal): Promise<DebugProtocol.StoppedEvent | 'ended' | 'timeout' | 'cancelled'> {
    const outcome = await waitBounded<DebugProtocol.StoppedEvent | 'ended'>(
      (settle) => {
        const check = () => {
          const stop = this.stops.shift();
          if (stop) settle(stop);
          else if (this.hasEnded) settle('ended');
        };
        this.wake.add(check);
        check();
        return () => this.wake.delete(check);
      },
      { timeoutMs, signal },
    );
    if (outcome.kind === 'value') return outcome.value;
    return outcome.kind === 'timeout' ? 'timeout' : 'cancelled';
  }

  private notify(): void {
    for (const check of [...this.wake]) check();
  }

  private end(): void {
    this.hasEnded = true;
    this.markEnded();
    this.notify();
  }

  static async launch(engine: Engine, spec: LaunchSpec): Promise<DebugAdapter> {
    const started = await engine.start(spec, spec.onAdapter);
    const adapter = new DebugAdapter(engine, started);
    try {
      await adapter.handshake(spec);
    } catch (err) {
      const died = started.proc ? await boundPromise(started.proc.exited, { timeoutMs: 200 }) : undefined;
      await adapter.dispose();
      if (died?.kind === 'value' && died.value.signal) {
        throw new DebugkitError('ENGINE_FAILED', `the ${engine.name} adapter died (killed by signal ${died.value.signal}) while launching the program`, { cause: err });
      }
      throw err instanceof DebugkitError ? err : new DebugkitError('ENGINE_FAILED', `${engine.name} failed to launch the program: ${String(err)}`, { cause: err });
    }
    // An engine that does not name the program's process (Delve): the adapter's child is the program.
    if (adapter.debuggeePid === undefined && started.proc?.child.pid !== undefined) adapter.debuggeePid = childrenOf(started.proc.child.pid)[0];
    return adapter;
  }

  /**
   * debugpy answers `launch` only after `configurationDone`, and sends `initialized` in between;
   * Delve answers it first: so launch is sent without waiting, breakpoints are set on
   * `initialized`, then both finish.
   */
  private async handshake(spec: LaunchSpec): Promise<void> {
    const { dap } = this;
    await dap.request('initialize', {
      clientID: 'debugkit',
      clientName: 'debugkit',
      adapterID: this.engine.name,
      linesStartAt1: true,
      columnsStartAt1: true,
      pathFormat: 'path',
      supportsVariableType: true,
      supportsRunInTerminalRequest: false,
    });
    const initialized = dap.waitForEvent('initialized', { timeoutMs: spec.timeoutMs });
    const launched = dap.request('launch', this.started.launch, { timeoutMs: spec.timeoutMs });
    launched.catch(() => undefined);
    await Promise.race([initialized, launched.then(() => initialized)]);
    await this.engine.configure(dap, spec);
    await spec.configure(dap);
    await dap.request('configurationDone');
    await launched;
  }

  /** Ends the debuggee (its own process group), the adapter, and the channel; a program attached to is only left. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    const attached = this.started.attached === true;
    if (!this.dap.isClosed) {
      await this.dap.request('disconnect', { terminateDebuggee: !attached }, { timeoutMs: 2000 }).catch(() => undefined);
    }
    // debugpy starts the debuggee in a process group of its own: end it by pid, not via ours.
    if (this.debuggeePid !== undefined && !attached) killProcessGroup(this.debuggeePid);
    this.dap.close(new DebugkitError('SESSION_CLOSED', 'the session ended'));
    if (this.proc) await terminate(this.proc, { graceMs: 1000 });
    this.started.closeChannel?.();
    this.end();
  }

  get adapterPid(): number | undefined {
    return this.proc?.child.pid;
  }
}

/** The processes `pid` started that still run (each of its threads' children). */
function childrenOf(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((task) => readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean).map(Number));
  } catch {
    return [];
  }
}
