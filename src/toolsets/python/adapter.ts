import type { DebugProtocol } from '@vscode/debugprotocol';
import { DapConnection } from '../../core/dap/connection.js';
import { DebugkitError } from '../../core/errors.js';
import { killProcessGroup, spawnChild, terminate, type OwnedChild } from '../../core/process.js';
import { OutputRing } from '../../core/ring.js';
import { boundPromise, waitBounded } from '../../core/wait.js';
import type { Interpreter } from './interpreter.js';

/** The entry script, checked and opened inside the root (core/paths openContainedHandle). */
export interface EntryFile {
  /** Its real path: what the program, breakpoints and tracebacks know it by. */
  real: string;
  /** /proc/<pid>/fd/N: the opened file, what debugpy is given to run. */
  path: string;
  close(): void;
}

export interface LaunchSpec {
  interpreter: Interpreter;
  program: EntryFile;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** Runs between `initialized` and `configurationDone`: breakpoints go in here. */
  configure(dap: DapConnection): Promise<void>;
  timeoutMs: number;
  /** The adapter's pid, as soon as it runs (before the program is launched). */
  onAdapter?(pid: number): void;
}

const DAP_TIMEOUT_MS = 30_000;

/** A breakpoint condition that raised when evaluated: the condition and the exception line (`NameError: name 'x' is not defined`). */
export interface ConditionFailure {
  condition: string;
  error: string;
}

const CONDITION_FAILED = 'pydevd: Error while evaluating expression in conditional breakpoint: ';

/** pydevd's "important" output for a condition that raised: its first line names the condition, its traceback ends in the exception line. */
export function conditionFailure(output: string): ConditionFailure | undefined {
  if (!output.startsWith(CONDITION_FAILED)) return undefined;
  const [first = '', ...rest] = output.slice(CONDITION_FAILED.length).split('\n');
  const error = rest.map((l) => l.trimEnd()).filter((l) => l !== '' && !/^\s/.test(l) && !l.startsWith('Traceback (most recent call last):'));
  return { condition: first.trim(), error: error.at(-1) ?? 'the condition raised an exception' };
}

/**
 * One debugpy adapter process, the DAP channel to it, and what it reports about the debuggee:
 * its pid, its output (kept in rings) and its end. Knows the launch handshake, not sessions.
 */
export class DebugpyAdapter {
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

  private constructor(
    private readonly proc: OwnedChild,
    readonly dap: DapConnection,
  ) {
    this.ended = new Promise((resolve) => (this.markEnded = resolve));
    dap.onEvent('output', (e) => {
      const { category, output } = e.body;
      if (category === 'stdout') this.stdout.append(output);
      else if (category === 'stderr') this.stderr.append(output);
      else if (category === 'important') {
        const failure = conditionFailure(output);
        if (failure) this.conditionFailures.push(failure);
      }
    });
    dap.onEvent('process', (e) => (this.debuggeePid = e.body.systemProcessId));
    dap.onEvent('exited', (e) => (this.exitCode = e.body.exitCode));
    dap.onEvent('stopped', (e) => {
      this.stops.push(e);
      this.notify();
    });
    dap.onEvent('terminated', () => this.end());
    void proc.exited.then((exit) => {
      if (!this.disposed) this.adapterExit = exit;
      this.end();
    });
    // The channel closes a moment before the process is reaped: wait (bounded) for how it ended.
    void dap.closed.then(async () => {
      await boundPromise(proc.exited, { timeoutMs: 1000 });
      this.end();
    });
  }

  /** Forgets stops nobody took (call before resuming). */
  clearStops(): void {
    this.stops = [];
    this.conditionFailures = [];
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

  static async launch(spec: LaunchSpec): Promise<DebugpyAdapter> {
    const { interpreter } = spec;
    const env = { ...process.env, PYTHONPATH: interpreter.pythonPath };
    const proc = await spawnChild(interpreter.python, ['-m', 'debugpy.adapter'], { stdio: ['pipe', 'pipe', 'pipe'], env });
    if (proc.child.pid !== undefined) spec.onAdapter?.(proc.child.pid);
    proc.child.stderr!.resume();
    const dap = new DapConnection(proc.child.stdout!, proc.child.stdin!, { name: 'debugpy', timeoutMs: DAP_TIMEOUT_MS });
    const adapter = new DebugpyAdapter(proc, dap);
    try {
      await adapter.handshake(spec);
    } catch (err) {
      const died = await boundPromise(proc.exited, { timeoutMs: 200 });
      await adapter.dispose();
      if (died.kind === 'value' && died.value.signal) {
        throw new DebugkitError('ENGINE_FAILED', `the debugpy adapter died (killed by signal ${died.value.signal}) while launching the program`, { cause: err });
      }
      throw err instanceof DebugkitError ? err : new DebugkitError('ENGINE_FAILED', `debugpy failed to launch the program: ${String(err)}`, { cause: err });
    }
    return adapter;
  }

  /**
   * debugpy answers `launch` only after `configurationDone`, and sends `initialized` in between:
   * so launch is sent without waiting, breakpoints are set on `initialized`, then both finish.
   */
  private async handshake(spec: LaunchSpec): Promise<void> {
    const { dap } = this;
    await dap.request('initialize', {
      clientID: 'debugkit',
      clientName: 'debugkit',
      adapterID: 'debugpy',
      linesStartAt1: true,
      columnsStartAt1: true,
      pathFormat: 'path',
      supportsVariableType: true,
      supportsRunInTerminalRequest: false,
    });
    const initialized = dap.waitForEvent('initialized', { timeoutMs: spec.timeoutMs });
    // debugpy runs the opened entry (its descriptor path), never the workspace path, which a
    // writer could have swapped for a link by then; boot/sitecustomize.py runs it under its real
    // name (DEBUGKIT_ENTRY), so __file__, sys.path[0], breakpoints and tracebacks are as before.
    const { program } = spec;
    const launched = dap.request(
      'launch',
      {
        program: program.path,
        args: spec.args,
        cwd: spec.cwd,
        env: {
          ...spec.env,
          PYTHONPATH: [spec.interpreter.pythonPath, spec.env.PYTHONPATH].filter(Boolean).join(':'),
          DEBUGKIT_ENTRY: program.real,
          DEBUGKIT_ENTRY_FD: program.path,
        },
        python: [spec.interpreter.python],
        console: 'internalConsole',
        justMyCode: true,
        redirectOutput: true,
        // With subProcess on, debugpy injects itself into child Pythons, which then wait for a
        // client to attach them (a debugpyAttach event); without one they hang. Children run
        // undebugged instead.
        subProcess: false,
        showReturnValue: false,
      },
      { timeoutMs: spec.timeoutMs },
    );
    launched.catch(() => undefined);
    await Promise.race([initialized, launched.then(() => initialized)]);
    await spec.configure(dap);
    await dap.request('configurationDone');
    await launched;
  }

  /** Ends the debuggee (its own process group), the adapter, and the channel. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    if (!this.dap.isClosed) {
      await this.dap.request('disconnect', { terminateDebuggee: true }, { timeoutMs: 2000 }).catch(() => undefined);
    }
    // debugpy starts the debuggee in a process group of its own: end it by pid, not via ours.
    if (this.debuggeePid !== undefined) killProcessGroup(this.debuggeePid);
    this.dap.close(new DebugkitError('SESSION_CLOSED', 'the python session ended'));
    await terminate(this.proc, { graceMs: 1000 });
    this.end();
  }

  get adapterPid(): number | undefined {
    return this.proc.child.pid;
  }
}
