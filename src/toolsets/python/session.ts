import type { ReplayAtStop } from '../mocks/option.js';
import type { DebugReplay } from '../mocks/under.js';
import path from 'node:path';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { DebugkitError } from '../../core/errors.js';
import { procStat } from '../../core/process.js';
import type { SessionResource } from '../../core/sessions.js';
import { boundPromise } from '../../core/wait.js';
import { readTail } from '../../core/ring.js';
import { newerSourceNote } from '../../core/source-lines.js';
import { DebugAdapter } from './adapter.js';
import { describeExit, evaluationError } from './ends.js';
import { BreakpointBook, type BreakpointReport, type BreakpointSpec } from './breakpoints.js';
import type { Engine, EntryFile, ErrorInfo } from './engine.js';
import { stackWindow, takeSnapshot, type FrameView, type Snapshot } from './snapshot.js';
import { DEFAULT_LIMITS, expandMembers, newBudget, TREE_BUDGET_CHARS, view, type Limits, type TreeView, type ValueView } from './values.js';

export type Status = 'idle' | 'running' | 'paused' | 'completed' | 'error';

export interface SessionSpec {
  root: string;
  /** The entry, checked and opened (core/paths openContainedHandle): the session closes it when it ends. */
  program: EntryFile;
  args: string[];
  env: Record<string, string>;
  /** The language's engine (engines/: debugpy, Delve); the session ends it. */
  engine: Engine;
  stopOnRaised: boolean;
  /** The mock set the program's calls are answered from (closed with the session). */
  replay?: DebugReplay;
}

export interface RunOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  limits?: Partial<Limits>;
}

export type { ErrorInfo } from './engine.js';

/** The contract's answer to a run, plus what an agent reads at a stop. */
export interface RunOutcome {
  hit: boolean;
  completed: boolean;
  frameInfo: { file: string; line: number } | null;
  locals: Record<string, ValueView> | null;
  error: ErrorInfo | null;
  status: Status;
  reason?: string;
  function?: string;
  source?: string;
  stack?: FrameView[];
  /** How many frames the stack has (`stack` shows a few, from two above the frame looked at). */
  stackDepth?: number;
  localsOmitted?: number;
  /** The thread that stopped, when the engine names it and it is not the program's main thread (a Node.js worker). */
  thread?: string;
  exitCode?: number;
  breakpointWarnings?: BreakpointReport[];
  /** The stop's breakpoint condition raised: it stopped there, as VS Code does, rather than take it as false. */
  conditionError?: { condition: string; error: string; message: string };
  /** Under a mock set: what replay did since the last stop. */
  mocks?: ReplayAtStop;
}

export type EvaluateView = TreeView & { expandable: boolean; membersTruncated?: boolean; hint?: string };

export interface SessionState {
  status: Status;
  lastBreakpoint: { file: string; line: number; hitCount: number } | null;
  timings: { lastRunMs: number | null; totalCpuTimeMs: number | null } | null;
  mocks?: ReplayAtStop & { fellBack: number };
}

/** Linux reports process CPU time in USER_HZ ticks, fixed at 100 on the architectures Node runs on. */
const TICKS_PER_SECOND = 100;

/**
 * One program under its language's engine (debugpy for Python, Delve for Go): idle until the
 * first run, then paused at stops until it completes. Runs are serialized; state can be read at
 * any time.
 */
export class PythonSession implements SessionResource {
  status: Status = 'idle';
  private adapter: DebugAdapter | undefined;
  private threadId: number | undefined;
  private snapshot: Snapshot | undefined;
  private readonly book = new BreakpointBook();
  private readonly hits = new Map<string, number>();
  private lastBreakpoint: SessionState['lastBreakpoint'] = null;
  private lastRunMs: number | null = null;
  private cpuMs: number | null = null;
  private busy = false;
  private disposed = false;
  private exceptionSeen = false;
  /** Why the engine went away, once it has. */
  private engineGone: string | undefined;

  /** The engine's adapter's pid from the moment it runs (`adapter` is set once the program is launched). */
  private adapterPid: number | undefined;
  /** When the program was launched (its sources were read from then on). */
  private launchedMs: number | undefined;
  /** The miss a pause was asked for (stopOnMiss), until the stop it caused is described. */
  private missPause: string | undefined;

  constructor(private readonly spec: SessionSpec) {
    if (spec.replay?.stopOnMiss) spec.replay.onMiss((message) => this.pauseOnMiss(message));
  }

  state(): SessionState {
    this.sampleCpu();
    const timings = this.lastRunMs === null ? null : { lastRunMs: this.lastRunMs, totalCpuTimeMs: this.cpuMs };
    const mocks = this.spec.replay?.totals();
    return { status: this.status, lastBreakpoint: this.lastBreakpoint, timings, ...(mocks ? { mocks } : {}) };
  }

  /**
   * stopOnMiss: a call missed, so the program is paused where it is running, which is the thread
   * that asked once its request comes back with the miss (debugpy pauses a thread at its next line
   * of Python; one blocked in a socket read pauses when the read returns). The stop says why.
   */
  private async pauseOnMiss(message: string): Promise<void> {
    const adapter = this.adapter;
    if (this.status !== 'running' || !adapter || this.missPause !== undefined) return;
    this.missPause = message;
    const threadId = this.threadId ?? (await adapter.dap.request('threads').catch(() => undefined))?.threads[0]?.id;
    if (threadId !== undefined) await adapter.dap.request('pause', { threadId }).catch(() => undefined);
  }

  get output() {
    return this.adapter ? { stdout: this.adapter.stdout, stderr: this.adapter.stderr } : undefined;
  }

  /** The debugger's own process (the engine's adapter), once started: its ports on loopback are the debugger's, not the program's dependencies. */
  get debuggerPid(): number | undefined {
    return this.adapterPid;
  }

  get pids(): number[] {
    return [this.adapter?.adapterPid, this.adapter?.debuggeePid].filter((p): p is number => p !== undefined);
  }

  /** Adds a breakpoint at file:line and runs (launching first if idle) until the next stop. */
  runToBreakpoint(file: string, bp: BreakpointSpec, options: RunOptions): Promise<RunOutcome> {
    return this.exclusive(async () => {
      await this.checkConditions([bp]);
      const bad = this.book.conditionError(bp.condition);
      if (bad) throw new DebugkitError('INVALID_ARGUMENT', `${bad}: fix the condition (a ${this.spec.engine.language} expression) and run again`);
      this.book.add(file, bp);
      if (this.status === 'idle') return this.launch(options);
      this.assertStopped('run to a breakpoint');
      await this.book.apply(this.adapter!.dap, file);
      return this.resume(() => this.adapter!.dap.request('continue', { threadId: this.threadId! }), options);
    });
  }

  /** Continues a paused program to its next stop without adding a breakpoint. */
  continue(options: RunOptions): Promise<RunOutcome> {
    return this.exclusive(async () => {
      if (this.status === 'idle') return this.launch(options);
      this.assertStopped('continue');
      return this.resume(() => this.adapter!.dap.request('continue', { threadId: this.threadId! }), options);
    });
  }

  step(kind: 'over' | 'into' | 'out', options: RunOptions): Promise<RunOutcome> {
    return this.exclusive(async () => {
      this.assertStopped(`step ${kind}`);
      const command = kind === 'over' ? 'next' : kind === 'into' ? 'stepIn' : 'stepOut';
      return this.resume(() => this.adapter!.dap.request(command, { threadId: this.threadId! }), options);
    });
  }

  setBreakpoints(file: string, specs: BreakpointSpec[]): Promise<BreakpointReport[]> {
    return this.exclusive(async () => {
      await this.checkConditions(specs);
      this.book.replace(file, specs);
      if (!this.adapter || this.status === 'completed') {
        return specs.map((s) => ({ file, line: s.line, verified: false, message: this.book.conditionError(s.condition) ?? 'set when the program starts' }));
      }
      return this.book.apply(this.adapter.dap, file);
    });
  }

  /** Function breakpoints, each with whether it can ever stop (a function of that name in the workspace). */
  setFunctionBreakpoints(names: string[]): Promise<Array<{ name: string; verified: boolean; message?: string }>> {
    return this.exclusive(async () => {
      this.book.setFunctions(names);
      const nowhere = (await this.spec.engine.functionsNowhere?.(this.spec.root, names)) ?? new Map<string, string>();
      const set = !this.adapter || this.status === 'completed' ? undefined : await this.book.applyFunctions(this.adapter.dap);
      return names.map((name, i) => {
        const why = nowhere.get(name);
        if (why !== undefined) return { name, verified: false, message: why };
        const bp = set?.[i];
        if (!bp) return { name, verified: false, message: 'set when the program starts' };
        return { name, verified: bp.verified, ...(bp.message ? { message: bp.message } : {}) };
      });
    });
  }

  private async checkConditions(specs: BreakpointSpec[]): Promise<void> {
    const conditions = specs.map((s) => s.condition).filter((c): c is string => typeof c === 'string');
    const check = this.spec.engine.conditionErrors?.bind(this.spec.engine);
    if (conditions.length > 0 && check) this.book.noteConditionErrors(await check(conditions));
  }

  /** Evaluates an expression in a frame of the current stop (0 = innermost). */
  evaluate(expression: string, frameIndex: number, maxReprLength: number, depth = 0): Promise<EvaluateView> {
    return this.exclusive(async () => {
      this.assertStopped('evaluate');
      const dap = this.adapter!.dap;
      const snap = this.snapshot;
      const frame = snap?.frames[frameIndex] ?? (snap && frameIndex < snap.depth ? (await stackWindow(dap, this.threadId!, frameIndex, 1))[0] : undefined);
      if (!frame) throw new DebugkitError('INVALID_ARGUMENT', `no frame ${frameIndex}: the stack has ${snap?.depth ?? 0} frames (0 is the innermost)`);
      const body = await dap.request('evaluate', { expression, frameId: frame.id, context: 'repl' }).catch((err: unknown) => {
        throw evaluationError(expression, err);
      });
      const fetch = async (ref: number) => (await dap.request('variables', { variablesReference: ref })).variables;
      const budget = newBudget();
      const top = view(body.type, body.result, Math.min(maxReprLength, TREE_BUDGET_CHARS));
      budget.left -= top.repr.length;
      const members = await expandMembers(fetch, body.variablesReference, depth, maxReprLength, budget);
      const result: EvaluateView = { ...top, expandable: body.variablesReference > 0, ...members };
      // The repr itself was cut by the budget rather than by the maxReprLength asked for.
      const reprCut = body.result.length > TREE_BUDGET_CHARS && maxReprLength > TREE_BUDGET_CHARS;
      if (budget.exhausted) result.membersTruncated = true;
      if (reprCut) {
        result.hint = `the repr was cut at ${TREE_BUDGET_CHARS} characters, the most one answer shows: evaluate a part, e.g. ${JSON.stringify(`${expression}[${TREE_BUDGET_CHARS}:${2 * TREE_BUDGET_CHARS}]`)}`;
      } else if (budget.exhausted) {
        result.hint = `the answer was cut at about ${TREE_BUDGET_CHARS} characters: ask for less (a smaller depth, or an expression for one member such as ${JSON.stringify(`${expression}[KEY]`)})`;
      }
      return result;
    });
  }

  /** The current stop seen from another frame, or with other limits. */
  inspect(frameIndex: number, limits: Partial<Limits>): Promise<RunOutcome> {
    return this.exclusive(async () => {
      this.assertStopped('inspect the stack');
      const depth = this.snapshot?.depth;
      if (depth !== undefined && frameIndex >= depth) throw new DebugkitError('INVALID_ARGUMENT', `no frame ${frameIndex}: the stack has ${depth} frames (0 is the innermost)`);
      return this.describeStop({ reason: 'inspect', threadId: this.threadId! }, { timeoutMs: 0, limits }, frameIndex);
    });
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    try {
      await this.adapter?.dispose();
    } finally {
      this.spec.program.close();
      await this.spec.engine.dispose?.();
      await this.spec.replay?.close();
    }
  }

  private async launch(options: RunOptions): Promise<RunOutcome> {
    const { spec } = this;
    this.status = 'running';
    const started = Date.now();
    this.launchedMs = started;
    try {
      this.adapter = await DebugAdapter.launch(spec.engine, {
        program: spec.program,
        args: spec.args,
        // The replay's variables last: they route the program through the mock set's proxy.
        env: { ...spec.env, ...spec.replay?.env },
        cwd: spec.root,
        timeoutMs: Math.max(options.timeoutMs, 20_000),
        stopOnRaised: spec.stopOnRaised,
        onAdapter: (pid) => (this.adapterPid = pid),
        configure: async (dap) => {
          await this.book.applyAll(dap);
        },
      });
    } catch (err) {
      this.status = 'error';
      throw err;
    }
    return this.awaitStop(started, options);
  }

  private async resume(start: () => Promise<unknown>, options: RunOptions): Promise<RunOutcome> {
    const adapter = this.adapter!;
    adapter.clearStops();
    this.snapshot = undefined;
    this.status = 'running';
    const started = Date.now();
    try {
      await start();
    } catch (err) {
      // The adapter died before it answered (the program may have resumed): once its end is known
      // (bounded), the answer says how it ended, as when it dies while the program runs.
      if ((await boundPromise(adapter.ended, { timeoutMs: 2000 })).kind !== 'value' || (adapter.exitCode === undefined && !adapter.adapterExit)) throw err;
      return this.describeEnd();
    }
    return this.awaitStop(started, options);
  }

  private async awaitStop(started: number, options: RunOptions): Promise<RunOutcome> {
    const adapter = this.adapter!;
    const cpuTimer = setInterval(() => this.sampleCpu(), 250);
    cpuTimer.unref();
    try {
      let stop = await adapter.nextStop(options.timeoutMs, options.signal);
      let timedOut = false;
      if (stop === 'timeout' || stop === 'cancelled') {
        timedOut = stop === 'timeout';
        // Leave the program paused where it is, so the agent can look, continue or end it.
        await adapter.dap.request('pause', { threadId: this.threadId ?? 1 }).catch(() => undefined);
        stop = await adapter.nextStop(5000);
        if (stop === 'cancelled' || stop === 'timeout') throw new DebugkitError('TIMEOUT', 'the program did not pause; end the session');
      }
      this.sampleCpu();
      this.lastRunMs = Date.now() - started;
      if (stop === 'ended') return this.describeEnd();
      // The program is stopped: one the engine cannot describe (Delve's stack request fails after runtime.Goexit in main) stays
      // paused, so it can be continued or ended, never "running" for good (attack 18ap i2-6).
      const outcome = await this.describeStop(stop.body, options).catch((err: unknown) => {
        this.status = 'paused';
        throw err;
      });
      if (timedOut) {
        outcome.hit = false;
        outcome.error = {
          type: 'TimeoutError',
          message: `no breakpoint was hit within ${options.timeoutMs / 1000} s; the program is paused at ${outcome.frameInfo?.file}:${outcome.frameInfo?.line} (continue to go on, or end the session)`,
          traceback: null,
        };
      }
      return outcome;
    } finally {
      clearInterval(cpuTimer);
    }
  }

  private async describeStop(stop: DebugProtocol.StoppedEvent['body'], options: RunOptions, frameIndex = 0): Promise<RunOutcome> {
    const adapter = this.adapter!;
    this.threadId = stop.threadId ?? this.threadId ?? 1;
    const limits = { ...DEFAULT_LIMITS, ...options.limits };
    // At an exception stop, the engine says which frame is the program's own (Go: past the runtime's panic frames).
    const pick = stop.reason === 'exception' ? this.spec.engine.exceptionFrame?.bind(this.spec.engine) : undefined;
    const snap = await takeSnapshot(adapter.dap, this.threadId, limits, pick ?? frameIndex);
    this.snapshot = snap;
    const outcome: RunOutcome = {
      hit: false,
      completed: false,
      frameInfo: snap.frameInfo,
      locals: snap.locals,
      error: null,
      status: 'paused',
      reason: stop.reason,
      function: snap.selected?.name,
      source: snap.source,
      stack: snap.stack,
      stackDepth: snap.depth,
    };
    if (snap.localsOmitted > 0) outcome.localsOmitted = snap.localsOmitted;
    const thread = await this.spec.engine.threadName?.(adapter.dap, this.threadId).catch(() => undefined);
    if (thread) outcome.thread = thread;
    // As gdb warns, a stop says when its source is newer than the program that runs (attack 18ap i2-7).
    const builtMs = this.spec.engine.builtMs;
    const newer = newerSourceNote(
      snap.sourceModifiedMs === undefined ? undefined : { modifiedMs: snap.sourceModifiedMs },
      builtMs ?? this.launchedMs,
      builtMs !== undefined ? 'built' : 'started',
      'start a new session to run the new code',
    );
    if (newer && outcome.source) outcome.source = `${outcome.source}\n(${newer})`;
    this.addReplay(outcome);
    if (stop.reason === 'pause' && this.missPause !== undefined) outcome.reason = 'mock miss';
    this.missPause = undefined;
    if (stop.reason === 'exception' && this.spec.engine.conditionFailureAt) {
      // An engine that stops as for an exception where a breakpoint's condition failed (Delve): a breakpoint stop with its
      // condition's error, as debugpy's is; never the program's error (attack 18ap i2-2).
      const error = await this.spec.engine.conditionFailureAt(adapter.dap, this.threadId, stop);
      if (error !== undefined) {
        const at = snap.frameInfo;
        adapter.noteConditionFailure({ condition: (at && this.book.conditionAt(at.file, at.line)) ?? '', error });
        stop = { ...stop, reason: 'breakpoint' };
        outcome.reason = 'breakpoint';
      }
    }
    if (stop.reason === 'exception') {
      outcome.error = await this.spec.engine.exceptionError(adapter.dap, this.threadId, stop, { frames: snap.frames, depth: snap.depth });
      outcome.frameInfo = null;
      outcome.locals = null;
      outcome.status = 'error';
      this.exceptionSeen = true;
    } else if (stop.reason === 'breakpoint' || stop.reason === 'function breakpoint') {
      outcome.hit = true;
      this.countHit(snap.frameInfo);
      const failed = adapter.takeConditionFailures().at(-1);
      if (failed) {
        const where = snap.frameInfo ? `${snap.frameInfo.file}:${snap.frameInfo.line}` : 'this breakpoint';
        outcome.conditionError = {
          ...failed,
          message: `the condition ${JSON.stringify(failed.condition)} of the breakpoint at ${where} raised ${failed.error}: the program stopped here instead of taking it as false; fix the condition (python_set_breakpoints) and continue`,
        };
      }
    }
    this.status = outcome.status;
    const warnings = this.book.problems();
    if (warnings.length > 0) outcome.breakpointWarnings = warnings;
    return outcome;
  }

  private async describeEnd(): Promise<RunOutcome> {
    const adapter = this.adapter!;
    if (adapter.exitCode === undefined && !adapter.adapterExit) await this.spec.engine.settleEnd?.(adapter.dap);
    if (adapter.exitCode === undefined && adapter.adapterExit) {
      // The adapter went away without reporting the program's end: that is no completion.
      this.status = 'error';
      this.engineGone = `the ${this.spec.engine.name} adapter died (${describeExit(adapter.adapterExit)}) while the program ran`;
      // Nobody can debug the program any more: it does not run on unowned.
      await adapter.dispose();
      throw new DebugkitError('ENGINE_FAILED', `${this.engineGone}; this session has ended: start a new session to run the program again`);
    }
    // An uncaught exception was reported at its stop; the program ending afterwards keeps that verdict, unless the engine
    // reads it from the exit status and the program exited 0 (it handled the exception after all).
    const handled = this.exceptionSeen && this.spec.engine.exitDecidesError === true && adapter.exitCode === 0;
    this.status = this.exceptionSeen && !handled ? 'error' : 'completed';
    const outcome: RunOutcome = { hit: false, completed: true, frameInfo: null, locals: null, error: null, status: this.status };
    this.addReplay(outcome);
    // A breakpoint that could never stop is said at the end too: the run ended without it (attack 18ap i2-3).
    const warnings = this.book.problems();
    if (warnings.length > 0) outcome.breakpointWarnings = warnings;
    if (adapter.exitCode !== undefined) outcome.exitCode = adapter.exitCode;
    if (!this.exceptionSeen && adapter.exitCode !== undefined && adapter.exitCode !== 0) {
      const error = this.spec.engine.endError(adapter.exitCode, readTail(adapter.stderr, 0, 64 * 1024).text);
      if (error) {
        outcome.error = error;
        outcome.status = this.status = 'error';
      }
    }
    return outcome;
  }

  /** Under a mock set: what replay did since the last stop, on this one. */
  private addReplay(outcome: RunOutcome): void {
    const replay = this.spec.replay?.sinceLastStop();
    if (replay) outcome.mocks = replay;
  }

  private countHit(frame: { file: string; line: number } | null): void {
    if (!frame) return;
    const key = `${frame.file}:${frame.line}`;
    const hitCount = (this.hits.get(key) ?? 0) + 1;
    this.hits.set(key, hitCount);
    this.lastBreakpoint = { file: path.relative(this.spec.root, frame.file) || frame.file, line: frame.line, hitCount };
  }

  private sampleCpu(): void {
    const pid = this.adapter?.debuggeePid;
    if (pid === undefined) return;
    // Fields after the parenthesised command name: utime and stime are the 12th and 13th.
    const fields = procStat(pid);
    if (fields) this.cpuMs = ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
    // (none: the process has ended; the last sample stands)
  }

  private assertStopped(what: string): void {
    if (this.status === 'paused' || (this.status === 'error' && this.adapter && this.snapshot)) return;
    const why: Record<Status, string> = {
      idle: 'the program has not started: run to a breakpoint first',
      running: 'the program is running',
      paused: '',
      completed: 'the program has completed: start a new session to run it again',
      error: `${this.engineGone ?? 'the program has ended with an error'}: start a new session to run it again`,
    };
    throw new DebugkitError('INVALID_ARGUMENT', `cannot ${what}: ${why[this.status]}`);
  }

  private async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    if (this.disposed) throw new DebugkitError('SESSION_CLOSED', 'the session has ended');
    if (this.busy) throw new DebugkitError('SESSION_BUSY', 'the session is busy with another run: wait for it to answer');
    this.busy = true;
    try {
      return await fn();
    } finally {
      this.busy = false;
    }
  }
}
