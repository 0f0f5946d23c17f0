import { randomBytes } from 'node:crypto';
import { constants } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { DebugProtocol } from '@vscode/debugprotocol';
import * as acorn from 'acorn';
import { CdpError, CdpWorkerSession, type CdpSession } from '../../../core/cdp.js';
import { DapDecoder, encodeMessage } from '../../../core/dap/codec.js';
import { describeError } from '../../../core/errors.js';
import type { ChildExit } from '../../../core/process.js';
import { isInside } from '../../../core/paths.js';
import { loadSourceMap, type SourceMap } from '../../../core/sourcemap.js';
import { boundPromise } from '../../../core/wait.js';

/**
 * A DAP adapter for Node.js, in debugkit's own process: it answers the DAP requests the session
 * sends (the same as debugpy's and Delve's) by driving V8's inspector over CDP. No DAP adapter for
 * Node installs from the package registries here (issue 24), so this is the translation:
 *
 * - line breakpoints are set by URL, so they bind when their script loads; a line of a source
 *   that a source map names (TypeScript through tsx, a compiled `dist` with maps) is set at its
 *   generated position, found when the script that maps it is about to run (boot/node-hook.cjs
 *   pauses before each CommonJS module with a map is compiled; V8's instrumentation breakpoint
 *   before each ES module with one runs), and every stop is reported at the original line;
 * - conditions run in V8, guarded so that one that throws stops there and says why (as debugpy's
 *   do); hit counts and logpoints are counted and printed by the program in the same condition;
 * - stacks include the `async` callers V8 keeps; node's own code and node_modules are skipped by
 *   stepping and exception stops (V8's blackboxing), as debugpy's justMyCode does;
 * - each worker thread is a thread of its own (through node's NodeWorker domain), set up as the
 *   main one before it runs: the same breakpoints and exception filters;
 * - function breakpoints are line breakpoints on each function so named, which acorn finds in the
 *   program's scripts before they run (V8 has none by name);
 * - attached to a program debugkit did not start (no `exited`), its console is its output, its
 *   workers are not set up, and what the session left in it goes at detach.
 */

/** What an `important` output event of the bridge starts with when a breakpoint's condition threw (NodeEngine.readOutput reads it). */
export const CONDITION_FAILED = 'debugkit: a breakpoint condition threw: ';
/**
 * Run in the program on an object (a scope's, or one shown): nothing when no own value is a string
 * longer than `max`; else a copy of its own data properties (getters are not called) with each such
 * string cut to `max + 1` characters, which describe() shows cut.
 */
const CUT_LONG_STRINGS = `function (max) {
  const names = Object.getOwnPropertyNames(this);
  const valueOf = (name) => { try { const d = Object.getOwnPropertyDescriptor(this, name); return d && 'value' in d ? d : undefined; } catch (e) { return undefined; } };
  if (!names.some((name) => { const d = valueOf(name); return d !== undefined && typeof d.value === 'string' && d.value.length > max; })) return undefined;
  const copy = Object.create(null);
  for (const name of names) { const d = valueOf(name); if (d !== undefined) copy[name] = typeof d.value === 'string' && d.value.length > max ? d.value.slice(0, max + 1) : d.value; }
  return copy;
}`;
/** The largest script read for where the program catches (acorn parses it on the event loop). */
const MAX_PARSED_CHARS = 1024 * 1024;
/** Characters of scripts one session parses in all: a program of a thousand large modules would otherwise hold the loop for long. */
const MAX_PARSED_TOTAL = 32 * 1024 * 1024;
/** A frame's function name shown. */
const MAX_NAME_CHARS = 200;
/**
 * Characters of source maps one session reads in all, and segments it keeps decoded (20 bytes each): past them, scripts are
 * debugged by their generated lines (attack 18aq k2-3: 48 maps in bounds each took the server from 88 MB to 3.5 GB).
 */
const MAX_MAP_CHARS = 64 * 1024 * 1024;
const MAX_MAP_SEGMENTS = 4_000_000;
/** Exception sites remembered as caught. */
const MAX_CAUGHT_SITES = 4096;
/** Shown per member list; the rest are counted. */
const MAX_MEMBERS = 1000;
/** A string value's characters shown (as pydevd's SafeRepr bound). */
const MAX_STRING = 2 ** 16;
/** How long an expression an agent evaluates may run in the program before V8 stops it. */
const EVALUATE_TIMEOUT_MS = 10_000;
/** Extensions of sources that run only through a transform (their lines are found through source maps). */
const MAPPED_EXTENSIONS = /\.(?:[cm]?tsx?|jsx)$/i;
/** Worker threads debugged at once; the ones started past them run undebugged. */
const MAX_WORKERS = 64;
/** Steps out of node's own code one step takes at most before it stops there all the same. */
const MAX_INTERNAL_STEPS = 8;
/** How long a request that goes to every thread waits for a thread's answer (see eachIsolate). */
const THREAD_ANSWER_MS = 1000;
/** The main thread's DAP id; each worker thread's is the next free one. */
const MAIN_THREAD = 1;
/** A thread's frames are numbered from its id times this (so one frame id names its thread too). */
const FRAME_IDS = 1_000_000;

type RemoteObject = {
  type: string;
  subtype?: string;
  className?: string;
  value?: unknown;
  unserializableValue?: string;
  description?: string;
  objectId?: string;
  preview?: ObjectPreview;
};
type ObjectPreview = { type: string; subtype?: string; description?: string; overflow: boolean; properties: PropertyPreview[]; entries?: Array<{ key?: ObjectPreview; value: ObjectPreview }> };
type PropertyPreview = { name: string; type: string; value?: string; subtype?: string; valuePreview?: ObjectPreview };
type Location = { scriptId: string; lineNumber: number; columnNumber?: number };
type Scope = { type: string; object: RemoteObject; name?: string };
type CallFrame = { callFrameId: string; functionName: string; location: Location; url: string; scopeChain: Scope[]; this: RemoteObject };
type AsyncFrame = { functionName: string; scriptId: string; url: string; lineNumber: number; columnNumber: number };
type StackTrace = { description?: string; callFrames: AsyncFrame[]; parent?: StackTrace };
type Paused = { callFrames: CallFrame[]; reason: string; data?: Record<string, unknown>; hitBreakpoints?: string[]; asyncStackTrace?: StackTrace };
type PropertyDescriptor = { name: string; value?: RemoteObject; get?: RemoteObject; enumerable?: boolean; isOwn?: boolean };

interface Script {
  url: string;
  /** Its file, for a file: URL or an absolute path. */
  file: string | undefined;
  sourceMapURL: string;
  /** Its map, once read (null: none, or it could not be read). */
  map?: SourceMap | null;
}

interface Breakpoint {
  file: string;
  spec: DebugProtocol.SourceBreakpoint;
  /** Where it is set: by `thread` for one set by its own file's URL, by `thread URL` for one set through a map. */
  placed: Map<string, Placement>;
  hits: number;
  verified: boolean;
  line: number | undefined;
  message?: string;
  /** Its hit counter's name in the program (see condition()), in the session's own counters (`debugkit.hits.NONCE`). */
  key: string;
  counters: string;
  /** A function breakpoint's name (`name`, or `Class.name` / `object.name`): set on the first line of each function so named. */
  function?: string;
}

type Ref = { isolate: Isolate } & ({ kind: 'scope'; objects: string[]; thisObject?: RemoteObject } | { kind: 'object'; object: RemoteObject });

export interface NodeBridgeOptions {
  /** The main thread's inspector session. */
  cdp: CdpSession;
  /** The program's process: its pid, and its end (none when attached: debugkit did not start it, and cannot know its exit status). */
  pid: number;
  exited?: Promise<ChildExit>;
  /** The workspace: original sources a map names are believed only inside it. */
  root: string;
  /** boot/node-hook.cjs's URL: a pause there is a module about to be compiled. */
  hookUrl: string;
  /** Reads a source map file the program names (the session decides which files may be read). */
  readMapFile(file: string): string | undefined;
}

/** Where a breakpoint is set in one thread: the CDP id it got there; a function breakpoint's, the place it was asked at (0-based). */
type Placement = { isolate: Isolate; id: string; at?: { line: number; column: number } };

/** One V8 isolate: the main thread's, or a worker thread's. Scripts, stops and breakpoint ids are each isolate's own. */
class Isolate {
  readonly scripts = new Map<string, Script>();
  /** Every script's URL by id, node's own too (a paused frame names its script by id only). */
  readonly urls = new Map<string, string>();
  /** Every script's length by id. */
  readonly lengths = new Map<string, number>();
  /** Whether an ES module of the program's has been parsed (see setExceptionBreakpoints). */
  moduleSeen = false;
  /** Exception sites (every frame's position) already found caught by the program: a hot loop's throws are read once. */
  readonly caughtSites = new Set<string>();
  /** Scripts not parsed (too big, past the budget, or not parsable), by id. */
  readonly unparsable = new Set<string>();
  /** Modules whose function breakpoints were set at the hook's stop, before they were compiled (not parsed again as they load). */
  readonly hooked = new Set<string>();
  /** This isolate's breakpoints by their CDP ids. */
  readonly byId = new Map<string, Breakpoint>();
  /** Function breakpoints being set in scripts as they load: the start pause waits for them. */
  placing: Promise<void> = Promise.resolve();
  /** Breakpoints being set: a stop at one whose id is not known yet waits for them (a thread blocked in a call answers, then hits). */
  readonly inflight = new Set<Promise<unknown>>();
  /** The instrumentation breakpoint before each script runs, while there are function breakpoints. */
  eachScript: string | undefined;
  paused: Paused | undefined;
  frames: Array<{ call?: CallFrame; async?: AsyncFrame }> = [];
  lastCommand: 'continue' | 'step' | 'pause' = 'continue';
  /** Steps taken on out of node's own code since the last stop (MAX_INTERNAL_STEPS). */
  internalSteps = 0;
  /** A pause asked of every thread was answered by another's stop: this one's, when it comes, is not a stop. */
  pauseCancelled = false;
  exception: { data: RemoteObject; uncaught: boolean } | undefined;
  pauseQueue: Promise<void> = Promise.resolve();

  constructor(
    /** Its DAP thread id: 1 for the main thread. */
    readonly id: number,
    readonly name: string,
    readonly cdp: CdpSession,
  ) {}
}

export class NodeBridge {
  /** What the session's DapConnection reads (the bridge's answers and events). */
  readonly toClient = new PassThrough();
  /** What the session's DapConnection writes (its requests). */
  readonly fromClient = new PassThrough();
  private readonly decoder = new DapDecoder();
  private seq = 1;
  /** The main thread's session: the program's. */
  private readonly cdp: CdpSession;
  /** The threads, by DAP thread id: the main thread's isolate (1), then each worker's as it starts. */
  private readonly isolates = new Map<number, Isolate>();
  private nextThread = 2;
  /** Characters of source maps a session still reads (MAX_MAP_CHARS in all), and segments it still keeps decoded. */
  private mapCharsLeft = MAX_MAP_CHARS;
  /** Characters of scripts a session still parses (for handlers and function breakpoints), MAX_PARSED_TOTAL in all. */
  private parseCharsLeft = MAX_PARSED_TOTAL;
  private segmentsLeft = MAX_MAP_SEGMENTS;
  /** Maps read, by the URL of the script they map (the same module in several threads is read once). */
  private readonly mapsByUrl = new Map<string, SourceMap | null>();
  /** Original sources some script's map names: their breakpoints go through maps. */
  private readonly mappedSources = new Set<string>();
  private readonly breakpoints = new Map<string, Breakpoint[]>();
  /** Function breakpoints, one per name. */
  private functionBreakpoints: Breakpoint[] = [];
  private refs = new Map<number, Ref>();
  private nextRef = 1;
  private ended = false;
  /** The next breakpoint's hit counter name. */
  private nextKey = 1;
  /** The name of the session's hit counters in the program: its own, so that a program attached to again starts at 0 (attack m2-3). */
  private readonly counters = `debugkit.hits.${randomBytes(8).toString('hex')}`;
  /** Only exceptions the program does not catch stop it; caught ones too. */
  private uncaughtOnly = true;
  private allExceptions = false;
  /**
   * The thread whose stop the client was told of, until it resumes. Threads run on their own: one
   * that stops meanwhile stays paused, held, and is told of when the told one resumes (the session
   * describes one stop at a time).
   */
  private told: Isolate | undefined;
  private readonly held: Array<{ isolate: Isolate; body: DebugProtocol.StoppedEvent['body']; by?: Breakpoint[] }> = [];

  constructor(private readonly options: NodeBridgeOptions) {
    this.cdp = options.cdp;
    this.fromClient.on('data', (chunk: Buffer) => {
      let messages: DebugProtocol.ProtocolMessage[];
      try {
        messages = this.decoder.push(chunk);
      } catch {
        return;
      }
      for (const m of messages) if (m.type === 'request') void this.handle(m as DebugProtocol.Request);
    });
    this.listen(this.addIsolate(new Isolate(MAIN_THREAD, 'main', this.cdp)));
    void this.cdp.closed.then(() => this.finish());
  }

  /** Enables the domains before the program runs (it waits, under --inspect-brk, for runIfWaitingForDebugger). */
  async prepare(): Promise<void> {
    await this.prepareIsolate(this.isolates.get(MAIN_THREAD)!);
  }

  private addIsolate(isolate: Isolate): Isolate {
    this.isolates.set(isolate.id, isolate);
    return isolate;
  }

  private listen(isolate: Isolate): void {
    const { cdp } = isolate;
    cdp.on('Debugger.scriptParsed', (p) => this.scriptParsed(isolate, p as unknown as { scriptId: string; url: string; sourceMapURL?: string }));
    cdp.on('Debugger.paused', (p) => {
      // One pause at a time, in order: each may resume the program (a hook's, a logpoint's).
      // One whose handling fails (5,000 nested members overflowed acorn's walks, attack n2-2) lets the thread go on, never held.
      isolate.pauseQueue = isolate.pauseQueue.then(() => this.onPaused(isolate, p as unknown as Paused)).catch(() => this.resumeQuietly(isolate));
    });
    // The program has ended: node waits for the debugger to leave before it exits.
    if (isolate.id === MAIN_THREAD) cdp.on('NodeRuntime.waitingForDisconnect', () => this.cdp.close());
    // Attached, the program's streams are not debugkit's: what it logs through `console` is its output here.
    if (!this.options.exited) cdp.on('Runtime.consoleAPICalled', (p) => this.consoleOutput(p as unknown as { type: string; args: RemoteObject[] }));
    cdp.on('NodeWorker.attachedToWorker', (p) => void this.workerStarted(cdp, p as unknown as { sessionId: string; workerInfo: { workerId: string; url: string } }));
  }

  private async prepareIsolate(isolate: Isolate): Promise<void> {
    const { cdp } = isolate;
    // The Runtime domain's events only when attached, for the program's console output: enabled, V8 sends every
    // console.log's arguments whole, which a launched program's stdout has already (20 MB strings held the loop 2 s, attack l2-3).
    if (!this.options.exited) await cdp.send('Runtime.enable');
    if (isolate.id === MAIN_THREAD) await cdp.send('NodeRuntime.notifyWhenWaitingForDisconnect', { enabled: true });
    await cdp.send('Debugger.enable', { maxScriptsCacheSize: 0 });
    await cdp.send('Debugger.setAsyncCallStackDepth', { maxDepth: 32 });
    // node's own code and libraries: stepping passes over them, exceptions raised and caught there do not stop.
    const hook = escapeRegex(this.options.hookUrl);
    await cdp.send('Debugger.setBlackboxPatterns', { patterns: ['^node:', `^(?!${hook}$).*/node_modules/`] });
    await cdp.send('Debugger.setInstrumentationBreakpoint', { instrumentation: 'beforeScriptWithSourceMapExecution' });
    // Worker threads wait at their start until this bridge has set them up as it set up this one. (node serves the
    // NodeWorker domain on the main thread only: a worker's own workers are not seen.)
    // Attached, a program's workers are not seen: node's worker sessions, set up and left while workers come and go in a
    // program debugkit did not start, failed most runs and three times took the program down (SIGSEGV, attack m2-2).
    if (isolate.id === MAIN_THREAD && this.options.exited) await cdp.send('NodeWorker.enable', { waitForDebuggerOnStart: true });
  }

  /**
   * A worker thread started (waiting for the debugger): a thread of its own, set up as the main one
   * (the same breakpoints and exception filters), then let run.
   */
  private consoleOutput(p: { type: string; args: RemoteObject[] }): void {
    const text = p.args.map((arg) => (arg.type === 'string' ? String(arg.value ?? '') : describe(arg))).join(' ');
    const stderr = p.type === 'error' || p.type === 'warning' || p.type === 'trace' || p.type === 'assert';
    this.event('output', { category: stderr ? 'stderr' : 'stdout', output: `${text.length > MAX_STRING ? `${text.slice(0, MAX_STRING)}...` : text}\n` });
  }

  private async workerStarted(parent: CdpSession, p: { sessionId: string; workerInfo: { workerId: string; title?: string; url: string } }): Promise<void> {
    if (this.isolates.size > MAX_WORKERS) {
      // Past the bound, a worker runs as it would without debugkit (a program that starts workers without end holds none of the server).
      await parent.send('NodeWorker.sendMessageToWorker', { sessionId: p.sessionId, message: JSON.stringify({ id: 1, method: 'Runtime.runIfWaitingForDebugger' }) }).catch(() => undefined);
      await parent.send('NodeWorker.detach', { sessionId: p.sessionId }).catch(() => undefined);
      return;
    }
    const file = fileOf(p.workerInfo.url);
    // Named as the program knows it: node's title is `[worker N]`, N the worker's threadId.
    const number = /^\[worker (\d+)\]$/.exec(p.workerInfo.title ?? '')?.[1] ?? p.workerInfo.workerId;
    const name = `worker ${number}${file ? ` (${path.basename(file)})` : ''}`;
    const isolate = new Isolate(this.nextThread++, name, new CdpWorkerSession(parent, p.sessionId));
    void isolate.cdp.closed.then(() => this.workerEnded(isolate));
    this.listen(isolate);
    try {
      await this.prepareIsolate(isolate);
      // A thread of the session's once its debugger is on: what goes to every thread until then would fail there.
      this.addIsolate(isolate);
      await isolate.cdp.send('Debugger.setPauseOnExceptions', { state: this.exceptionState(isolate) });
      for (const list of this.breakpoints.values()) for (const bp of list) await this.place(bp, isolate);
      if (this.functionBreakpoints.length > 0) await this.stopBeforeEachModule(isolate);
      this.event('thread', { reason: 'started', threadId: isolate.id });
    } catch {
      // A worker that ended while it was set up: nothing to debug in it.
    }
    await isolate.cdp.send('Runtime.runIfWaitingForDebugger').catch(() => undefined);
  }

  private workerEnded(isolate: Isolate): void {
    if (!this.isolates.delete(isolate.id)) return;
    for (const bp of [...[...this.breakpoints.values()].flat(), ...this.functionBreakpoints]) for (const [key, at] of bp.placed) if (at.isolate === isolate) bp.placed.delete(key);
    const held = this.held.findIndex((h) => h.isolate === isolate);
    if (held >= 0) this.held.splice(held, 1);
    if (!this.ended) this.event('thread', { reason: 'exited', threadId: isolate.id });
    if (this.told === isolate) {
      // The thread the client looks at ended under it (the main thread ended the worker): the next held stop is told.
      this.told = undefined;
      this.tellHeld();
    }
  }

  private async finish(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    const { exited } = this.options;
    if (exited) {
      const exit = await exited;
      this.event('exited', { exitCode: exit.code ?? 128 + (signalNumber(exit.signal) ?? 0) });
    }
    this.event('terminated', {});
  }

  // --- DAP plumbing ---

  private send(message: Omit<DebugProtocol.ProtocolMessage, 'seq'> & Record<string, unknown>): void {
    if (this.toClient.writableEnded) return;
    this.toClient.write(encodeMessage({ ...message, seq: this.seq++ } as DebugProtocol.ProtocolMessage));
  }

  private event(event: string, body: unknown): void {
    this.send({ type: 'event', event, body });
  }

  private async handle(request: DebugProtocol.Request): Promise<void> {
    try {
      const body = await this.answer(request.command, (request.arguments ?? {}) as Record<string, unknown>);
      this.send({ type: 'response', request_seq: request.seq, command: request.command, success: true, body: body ?? {} });
      if (request.command === 'launch' || request.command === 'attach') {
        // Once the launch is asked for (the client listens for `initialized` by then), as Delve's adapter does.
        this.event('initialized', {});
        this.event('process', { name: 'node', systemProcessId: this.options.pid, isLocalProcess: true, startMethod: this.options.exited ? 'launch' : 'attach' });
      }
    } catch (err) {
      const message = describeError(err);
      this.send({ type: 'response', request_seq: request.seq, command: request.command, success: false, message, body: { error: { id: 1, format: message } } });
    }
    // A stop held while another thread's was looked at is told once that one has resumed (after its answer).
    if (this.told === undefined) this.tellHeld();
  }

  private async answer(command: string, args: Record<string, unknown>): Promise<unknown> {
    switch (command) {
      case 'initialize':
        return {
          supportsConfigurationDoneRequest: true,
          supportsConditionalBreakpoints: true,
          supportsHitConditionalBreakpoints: true,
          supportsLogPoints: true,
          supportsEvaluateForHovers: true,
          supportsExceptionInfoRequest: true,
          supportsFunctionBreakpoints: true,
          supportsDelayedStackTraceLoading: true,
          exceptionBreakpointFilters: [
            { filter: 'all', label: 'Caught exceptions' },
            { filter: 'uncaught', label: 'Uncaught exceptions', default: true },
          ],
        };
      case 'launch':
      case 'attach':
        return {};
      case 'configurationDone':
        await this.cdp.send('Runtime.runIfWaitingForDebugger');
        return {};
      case 'setExceptionBreakpoints': {
        const filters = (args.filters as string[] | undefined) ?? [];
        this.allExceptions = filters.includes('all') || filters.includes('raised');
        this.uncaughtOnly = !this.allExceptions && filters.includes('uncaught');
        await this.eachIsolate((isolate) => isolate.cdp.send('Debugger.setPauseOnExceptions', { state: this.exceptionState(isolate) }));
        return {};
      }
      case 'setBreakpoints':
        return { breakpoints: await this.setBreakpoints(String((args.source as { path?: string } | undefined)?.path ?? ''), (args.breakpoints as DebugProtocol.SourceBreakpoint[]) ?? []) };
      case 'setFunctionBreakpoints':
        return { breakpoints: await this.setFunctionBreakpoints(((args.breakpoints as Array<{ name?: unknown }>) ?? []).map((b) => String(b.name ?? ''))) };
      case 'threads':
        return { threads: [...this.isolates.values()].map((isolate) => ({ id: isolate.id, name: isolate.name })) };
      case 'continue': {
        const isolate = this.resumeCommand(args.threadId, 'continue');
        await isolate.cdp.send('Debugger.resume');
        return { allThreadsContinued: this.isolates.size === 1 };
      }
      case 'next':
      case 'stepIn':
      case 'stepOut': {
        const isolate = this.resumeCommand(args.threadId, 'step');
        await isolate.cdp.send(command === 'next' ? 'Debugger.stepOver' : command === 'stepIn' ? 'Debugger.stepInto' : 'Debugger.stepOut');
        return {};
      }
      case 'pause': {
        // Whichever thread runs JavaScript stops (one idle in its event loop would not until its next callback): the first
        // to stop is told, and the others' pauses, once one is told, are not stops. Every thread is marked before any is
        // asked (one asked first stopped before the next was marked: its stop was told, and each other's after it, attack
        // l2-1), and no answer is waited for (a thread blocked in a call answers when it returns, attack l2-2).
        const running = [...this.isolates.values()].filter((isolate) => !isolate.paused);
        for (const isolate of running) {
          isolate.lastCommand = 'pause';
          isolate.pauseCancelled = false;
        }
        for (const isolate of running) void isolate.cdp.send('Debugger.pause').catch(() => undefined);
        return {};
      }
      case 'stackTrace':
        return this.stackTrace(this.isolateOf(args.threadId), Number(args.startFrame ?? 0), Number(args.levels ?? 0));
      case 'scopes':
        return { scopes: this.scopes(Number(args.frameId)) };
      case 'variables':
        return { variables: await this.variables(Number(args.variablesReference)) };
      case 'evaluate':
        return this.evaluate(String(args.expression ?? ''), args.frameId as number | undefined);
      case 'exceptionInfo':
        return this.exceptionInfo(this.isolateOf(args.threadId));
      case 'disconnect':
      case 'terminate':
        // A program attached to runs on: what the session left in it goes (its hit counters, the module stop's flag).
        if (!this.options.exited) {
          const left = `delete globalThis[Symbol.for(${JSON.stringify(this.counters)})]; delete globalThis[Symbol.for('debugkit.stopBeforeEachModule')];`;
          await this.cdp.send('Runtime.evaluate', { expression: left, silent: true, disableBreaks: true }, 2000).catch(() => undefined);
        }
        this.cdp.close();
        return {};
      default:
        throw new Error(`${command} is not supported by debugkit's Node.js adapter`);
    }
  }

  /**
   * Does `work` in every thread, at once, waiting for each at most THREAD_ANSWER_MS: a thread
   * blocked in a call (a worker in execFileSync) reads the inspector's requests only when it
   * returns, and a request to it waited 30 s, one thread after another (attack l2-2). What a slow
   * thread was sent is done when it runs JavaScript again, in the order it was sent.
   */
  private async eachIsolate(work: (isolate: Isolate) => Promise<unknown>): Promise<void> {
    const all = [...this.isolates.values()].map((isolate) =>
      work(isolate).catch((err: unknown) => {
        // A thread that ended meanwhile takes what it was sent with it.
        if (!isolate.cdp.isClosed) throw err;
      }),
    );
    await boundPromise(Promise.all(all), { timeoutMs: THREAD_ANSWER_MS });
  }

  /** The thread a request names (the one told of, when it names none). */
  private isolateOf(threadId: unknown): Isolate {
    const isolate = threadId === undefined ? (this.told ?? this.isolates.get(MAIN_THREAD)) : this.isolates.get(Number(threadId));
    if (!isolate) throw new Error(`no thread ${String(threadId)}: it has ended (threads lists those that run)`);
    return isolate;
  }

  private resumeCommand(threadId: unknown, kind: 'continue' | 'step'): Isolate {
    const isolate = this.isolateOf(threadId);
    if (!isolate.paused) throw new Error('the program is not paused');
    isolate.lastCommand = kind;
    isolate.paused = undefined;
    isolate.exception = undefined;
    if (this.told === isolate) this.told = undefined;
    return isolate;
  }

  /** A thread stopped: told now, or held until the thread told of resumes. */
  /** `by`: the breakpoints that made a breakpoint stop (a held one is told only while one of them is still set). */
  private stopped(isolate: Isolate, body: Omit<DebugProtocol.StoppedEvent['body'], 'threadId'>, by?: Breakpoint[]): void {
    const event = { ...body, threadId: isolate.id, allThreadsStopped: this.isolates.size === 1 };
    if (this.told !== undefined && this.told !== isolate) {
      this.held.push({ isolate, body: event, ...(by ? { by } : {}) });
      return;
    }
    this.tell(isolate, event);
  }

  private tell(isolate: Isolate, body: DebugProtocol.StoppedEvent['body']): void {
    this.told = isolate;
    this.refs = new Map();
    // A pause asked of every thread is answered: the others' are not stops.
    for (const other of this.isolates.values()) if (other !== isolate && other.lastCommand === 'pause') other.pauseCancelled = true;
    this.event('stopped', body);
  }

  private tellHeld(): void {
    for (let next = this.held.shift(); next; next = this.held.shift()) {
      // Held at breakpoints cleared since: no stop any more, the thread goes on (attack o2-5).
      if (next.by && !next.by.some((bp) => this.isSet(bp))) {
        next.isolate.lastCommand = 'continue';
        void this.resumeQuietly(next.isolate);
        continue;
      }
      return this.tell(next.isolate, next.body);
    }
  }

  private isSet(bp: Breakpoint): boolean {
    return bp.function !== undefined ? this.functionBreakpoints.includes(bp) : (this.breakpoints.get(bp.file)?.includes(bp) ?? false);
  }

  private exceptionState(isolate: Isolate): 'all' | 'uncaught' | 'none' {
    // V8 takes an exception in an ES module (or awaited from one) as caught by node's module loader, which only rethrows
    // it: so V8 pauses on all of them, and the bridge tells the program's own catches from that one (caughtByProgram).
    // Until the thread loads an ES module, V8's own "uncaught" is right, and caught exceptions cost nothing (attack 18aq j2-7).
    return this.allExceptions || (this.uncaughtOnly && isolate.moduleSeen) ? 'all' : this.uncaughtOnly ? 'uncaught' : 'none';
  }

  // --- scripts and source maps ---

  private scriptParsed(isolate: Isolate, p: { scriptId: string; url: string; sourceMapURL?: string; length?: number; isModule?: boolean }): void {
    isolate.urls.set(p.scriptId, p.url);
    if (p.length !== undefined) isolate.lengths.set(p.scriptId, p.length);
    // The first ES module of the program's own: from now on V8 pauses on every exception, and the bridge reads which the program catches.
    if (p.isModule && this.uncaughtOnly && !isolate.moduleSeen && this.isProgram(p.url)) {
      isolate.moduleSeen = true;
      void isolate.cdp.send('Debugger.setPauseOnExceptions', { state: 'all' }).catch(() => undefined);
    }
    if (!p.url || p.url.startsWith('node:')) return;
    const script: Script = { url: p.url, file: fileOf(p.url), sourceMapURL: p.sourceMapURL ?? '' };
    isolate.scripts.set(p.scriptId, script);
    if (this.functionBreakpoints.length > 0 && this.isProgram(p.url) && !isolate.hooked.has(script.file ?? '')) this.placeFunctionsLater(isolate, p.scriptId, p.url);
    // A script with a map that no stop before it announced (a worker started with its own --require, without debugkit's
    // hook, attack o2-1): its sources' breakpoints are set as it loads, so calls after its first run stop.
    if (script.sourceMapURL && this.isProgram(p.url) && [...this.breakpoints.keys()].some((file) => MAPPED_EXTENSIONS.test(file) || this.mappedSources.has(file))) {
      isolate.placing = isolate.placing
        .then(async () => {
          const map = this.mapOf(script);
          if (map) await this.mappedScriptReady(isolate, script.url, map);
        })
        .catch(() => undefined);
    }
  }

  // --- function breakpoints ---

  /**
   * Function breakpoints: each is set on the first line of every function of that name in the
   * program's scripts (acorn reads them: declarations, functions assigned to a name or property,
   * class and object methods), those loaded now and each as it loads. V8 has no breakpoint by name.
   */
  private async setFunctionBreakpoints(names: string[]): Promise<DebugProtocol.Breakpoint[]> {
    await this.unplace(this.functionBreakpoints);
    this.functionBreakpoints = names.map((name) => ({
      file: '',
      spec: { line: 0 },
      placed: new Map(),
      hits: 0,
      verified: false,
      line: undefined,
      key: `b${this.nextKey++}`,
      counters: this.counters,
      function: name,
    }));
    await this.eachIsolate(async (isolate) => {
      await this.stopBeforeEachModule(isolate);
      for (const [scriptId, script] of isolate.scripts) if (this.isProgram(script.url)) await this.placeFunctions(isolate, scriptId, script.url).catch(() => undefined);
    });
    return this.functionBreakpoints.map((bp) =>
      bp.placed.size > 0
        ? { verified: true }
        : { verified: false, message: `no function named ${bp.function} in the program's scripts loaded so far: it is set in each script that defines one as it loads` },
    );
  }

  private placeFunctionsLater(isolate: Isolate, scriptId: string, url: string): void {
    isolate.placing = isolate.placing.then(() => this.placeFunctions(isolate, scriptId, url)).catch(() => undefined);
  }

  /** Sets the function breakpoints in one script: at the first statement of each function so named. */
  private async placeFunctions(isolate: Isolate, scriptId: string, url: string): Promise<void> {
    const tree = await this.parsedScript(isolate, scriptId);
    if (tree) await this.placeFunctionsIn(isolate, tree, url);
  }

  private async placeFunctionsIn(isolate: Isolate, tree: acorn.Node, url: string): Promise<void> {
    const file = fileOf(url);
    for (const bp of this.functionBreakpoints) {
      let starts: Array<{ line: number; column: number }>;
      try {
        starts = functionsNamed(tree, bp.function!);
      } catch {
        starts = []; // too deep to walk (attack n2-2)
      }
      for (const at of starts) {
        // One key for a module whether it was named by its path or its file: URL (the hook's stop, then its script).
        const key = `${isolate.id} ${file ?? url} ${at.line}:${at.column}`;
        if (bp.placed.has(key)) continue;
        const set = await isolate.cdp
          .send<{ breakpointId: string }>('Debugger.setBreakpointByUrl', {
            urlRegex: scriptUrlRegex(url),
            lineNumber: at.line - 1,
            columnNumber: at.column,
          })
          .catch(() => undefined);
        if (!set) continue;
        bp.placed.set(key, { isolate, id: set.breakpointId, at: { line: at.line - 1, column: at.column } });
        isolate.byId.set(set.breakpointId, bp);
      }
    }
  }

  /**
   * While there are function breakpoints, a thread stops before each of the program's modules runs
   * (boot/node-hook.cjs for CommonJS, V8's instrumentation breakpoint for ES modules and scripts),
   * so that a function the module calls as it loads has its breakpoint already.
   */
  private async stopBeforeEachModule(isolate: Isolate): Promise<void> {
    const on = this.functionBreakpoints.length > 0;
    // Without breaks: this script would stop at the thread's own instrumentation breakpoint, and a main thread paused inside
    // an evaluate while requests to paused workers passed through it stopped answering the inspector for good (o2-5's race).
    await isolate.cdp.send('Runtime.evaluate', { expression: `globalThis[Symbol.for('debugkit.stopBeforeEachModule')] = ${on}`, silent: true, disableBreaks: true }).catch(() => undefined);
    if (on && isolate.eachScript === undefined) {
      isolate.eachScript = (await isolate.cdp.send<{ breakpointId: string }>('Debugger.setInstrumentationBreakpoint', { instrumentation: 'beforeScriptExecution' }).catch(() => undefined))
        ?.breakpointId;
    } else if (!on && isolate.eachScript !== undefined) {
      await isolate.cdp.send('Debugger.removeBreakpoint', { breakpointId: isolate.eachScript }).catch(() => undefined);
      isolate.eachScript = undefined;
    }
  }

  private async unplace(list: Breakpoint[]): Promise<void> {
    const placements = list.flatMap((old) => [...old.placed.values()]);
    for (const { isolate, id } of placements) isolate.byId.delete(id);
    // Sent to each thread at once, before what is set next (a thread reads them in order); answers waited for as eachIsolate does.
    await this.eachIsolate(async (isolate) => {
      for (const at of placements) if (at.isolate === isolate) await isolate.cdp.send('Debugger.removeBreakpoint', { breakpointId: at.id }).catch(() => undefined);
    });
  }

  /** A script's map (a library's is not read). */
  private mapOf(script: Script): SourceMap | null {
    if (script.map !== undefined) return script.map;
    const usable = script.sourceMapURL && !(script.file ?? '').includes('/node_modules/');
    return (script.map = usable ? this.mapAt(script.url, script.sourceMapURL) : (this.mapsByUrl.get(script.url) ?? null));
  }

  /** The map of the script at `url`, read once for all threads, whoever asks first (its sources are then known to be mapped). */
  private mapAt(url: string, sourceMapURL: string): SourceMap | null {
    let map = this.mapsByUrl.get(url);
    if (map !== undefined) return map;
    try {
      map = this.loadMap(sourceMapURL, url) ?? null;
    } catch {
      map = null;
    }
    this.mapsByUrl.set(url, map);
    if (map) for (const source of map.sources) this.mappedSources.add(source);
    return map;
  }

  /**
   * A map, read and decoded (on the event loop) while the session's budget lasts: each map is at most
   * MAX_MAP_BYTES, and a program of a thousand such scripts would otherwise hold the loop for minutes.
   */
  private loadMap(sourceMapURL: string, url: string): SourceMap | undefined {
    if (this.mapCharsLeft <= 0 || this.segmentsLeft <= 0) return undefined;
    let size = sourceMapURL.startsWith('data:') ? sourceMapURL.length : 0;
    try {
      const map = loadSourceMap(sourceMapURL, url, (file) => {
        const text = this.options.readMapFile(file);
        size = text?.length ?? 0;
        return text;
      });
      if (map) this.segmentsLeft -= map.segments;
      return map;
    } finally {
      this.mapCharsLeft -= size;
    }
  }

  /** A script with a map is about to run in a thread: its original sources' breakpoints are set there at their generated lines. */
  private async mappedScriptReady(isolate: Isolate, url: string, map: SourceMap): Promise<void> {
    for (const source of map.sources) this.mappedSources.add(source);
    for (const [file, list] of this.breakpoints) {
      if (!map.has(file)) continue;
      for (const bp of list) await this.setMapped(bp, isolate, url, map);
    }
  }

  private async setMapped(bp: Breakpoint, isolate: Isolate, url: string, map: SourceMap): Promise<void> {
    const key = `${isolate.id} ${url}`;
    if (bp.placed.has(key)) return;
    const at = map.generated(bp.file, bp.spec.line - 1);
    if (!at) {
      bp.message ??= `no code of ${bp.file} maps to line ${bp.spec.line} or the lines after it`;
      return;
    }
    const set = await isolate.cdp.send<{ breakpointId: string }>('Debugger.setBreakpointByUrl', {
      urlRegex: scriptUrlRegex(url),
      lineNumber: at.line,
      columnNumber: at.column,
      ...condition(bp),
    });
    bp.placed.set(key, { isolate, id: set.breakpointId });
    isolate.byId.set(set.breakpointId, bp);
    bp.verified = true;
    bp.line = at.originalLine + 1;
    bp.message = undefined;
  }

  /** Sets a breakpoint in one thread: by its file's URL, or through the maps of the scripts loaded there that name its file. */
  private async place(bp: Breakpoint, isolate: Isolate): Promise<void> {
    if (MAPPED_EXTENSIONS.test(bp.file) || this.mappedSources.has(bp.file)) {
      // Scripts loaded later get it as they load.
      for (const script of isolate.scripts.values()) {
        const map = this.mapOf(script);
        if (map?.has(bp.file)) await this.setMapped(bp, isolate, script.url, map);
      }
      if (bp.placed.size === 0 && !bp.message) bp.verified = true; // bound when a script mapping the file loads
      return;
    }
    // Set by its file's URL, it binds wherever that file loads: verified now, whenever the thread answers (see eachIsolate).
    bp.verified = true;
    if (bp.placed.has(`${isolate.id}`)) return;
    const set = await isolate.cdp
      .send<{ breakpointId: string; locations: Location[] }>('Debugger.setBreakpointByUrl', {
        urlRegex: fileUrlRegex(bp.file),
        lineNumber: bp.spec.line - 1,
        ...condition(bp),
      })
      .catch((err: unknown) => {
        // The same line with the same condition twice: V8 keeps one, which stops for both.
        if (err instanceof CdpError && /already exists/.test(err.message)) return undefined;
        throw err;
      });
    if (!set) return;
    bp.placed.set(`${isolate.id}`, { isolate, id: set.breakpointId });
    isolate.byId.set(set.breakpointId, bp);
    const at = set.locations[0];
    if (at) bp.line = at.lineNumber + 1;
  }

  private async setBreakpoints(file: string, specs: DebugProtocol.SourceBreakpoint[]): Promise<DebugProtocol.Breakpoint[]> {
    await this.unplace(this.breakpoints.get(file) ?? []);
    const list: Breakpoint[] = specs.map((spec) => ({ file, spec, placed: new Map(), hits: 0, verified: false, line: undefined, key: `b${this.nextKey++}`, counters: this.counters }));
    this.breakpoints.set(file, list);
    await this.eachIsolate((isolate) =>
      track(
        isolate,
        (async () => {
          for (const bp of list) await this.place(bp, isolate);
        })(),
      ),
    );
    return list.map((bp) => ({
      verified: bp.verified,
      ...(bp.line !== undefined ? { line: bp.line } : {}),
      ...(bp.message ? { message: bp.message } : {}),
    }));
  }

  // --- pauses ---

  private async onPaused(isolate: Isolate, p: Paused): Promise<void> {
    const top = p.callFrames[0];
    if (p.reason === 'instrumentation') {
      const scriptId = String(p.data?.scriptId ?? '');
      const script = isolate.scripts.get(scriptId);
      const map = script ? this.mapOf(script) : null;
      if (script && map) await this.mappedScriptReady(isolate, script.url, map);
      // Before it runs: its functions' breakpoints are set too.
      await isolate.placing;
      return this.resumeQuietly(isolate);
    }
    if (top && this.urlOf(isolate, top) === this.options.hookUrl) {
      await this.hookPause(isolate, top);
      return this.resumeQuietly(isolate);
    }
    // --inspect-brk's stop before the program's first line (and a worker's before its own): debugkit runs to the first breakpoint instead.
    if (p.reason === 'Break on start') {
      await isolate.placing;
      return this.resumeQuietly(isolate);
    }
    isolate.paused = p;
    isolate.frames = [];
    // A breakpoint whose setting the thread answered just before it hit it: known once that answer is read (attack l2-2's test).
    if ((p.hitBreakpoints ?? []).some((id) => !isolate.byId.has(id)) && isolate.inflight.size > 0) await Promise.allSettled([...isolate.inflight, isolate.placing]);
    const hit = (p.hitBreakpoints ?? []).map((id) => isolate.byId.get(id)).filter((b): b is Breakpoint => b !== undefined);
    // Stopped at breakpoints all cleared since (their removal still on its way to this thread when it hit them): no stop, the
    // thread goes on. Told, it was a stop at no breakpoint, "debugger statement" (the race behind o2-5's rare failure).
    const clearedOnly = hit.length === 0 && (p.hitBreakpoints ?? []).length > 0 && p.reason !== 'exception' && p.reason !== 'promiseRejection';
    if (clearedOnly && isolate.lastCommand !== 'step' && isolate.lastCommand !== 'pause') return this.resumeQuietly(isolate);
    if (hit.length > 0 && top) {
      let stop = false;
      let reason = 'breakpoint';
      for (const bp of hit) {
        if (bp.function !== undefined) {
          // V8 moves a breakpoint in a function it never compiled to the next place it can break, in another function: that
          // is not a stop of this one (attack n2-3).
          const at = [...bp.placed.values()].find((placed) => placed.isolate === isolate && p.hitBreakpoints!.includes(placed.id))?.at;
          if (at && top.location.lineNumber !== at.line) continue;
          bp.hits++;
          stop = true;
          reason = 'function breakpoint';
          continue;
        }
        if (bp.spec.condition) {
          const threw = await this.conditionError(isolate, top, bp.spec.condition);
          if (threw !== undefined) {
            this.event('output', { category: 'important', output: `${CONDITION_FAILED}${JSON.stringify({ condition: bp.spec.condition, error: threw })}\n` });
            stop = true;
            continue;
          }
        }
        bp.hits++;
        // The program counts hits and prints logpoints itself (condition()): a logpoint stops only when its message threw,
        // and is then printed here, with the error, and the program goes on.
        if (bp.spec.logMessage !== undefined) {
          this.event('output', { category: 'stdout', output: `${await this.logMessage(isolate, top, bp.spec.logMessage)}\n` });
          continue;
        }
        stop = true;
      }
      // Only logpoints and unmet hit counts here, and no step under way to end: the program goes on.
      if (!stop && isolate.lastCommand !== 'step') return this.resumeQuietly(isolate);
      return this.stopped(isolate, { reason: stop ? reason : 'step' }, stop && isolate.lastCommand !== 'step' ? hit : undefined);
    }
    if (p.reason === 'exception' || p.reason === 'promiseRejection') {
      if (this.uncaughtOnly && !p.data?.uncaught && (await this.caughtByProgram(isolate, p))) return this.resumeQuietly(isolate);
      isolate.exception = { data: p.data as unknown as RemoteObject, uncaught: Boolean(p.data?.uncaught) };
      const description = (p.data as RemoteObject | undefined)?.description?.split('\n', 1)[0];
      return this.stopped(isolate, { reason: 'exception', ...(description ? { description } : {}) });
    }
    if (isolate.lastCommand === 'pause' && isolate.pauseCancelled) {
      isolate.lastCommand = 'continue';
      isolate.pauseCancelled = false;
      return this.resumeQuietly(isolate);
    }
    // A step that lands in node's own code (a promise hook in async_hooks, on stepping into an awaited call: attack o2-3) goes
    // on out of it, a few times at most, to the program's next line.
    if (isolate.lastCommand === 'step' && top && !this.isProgram(this.urlOf(isolate, top)) && isolate.internalSteps < MAX_INTERNAL_STEPS) {
      isolate.internalSteps++;
      isolate.paused = undefined;
      await isolate.cdp.send('Debugger.stepOut').catch(() => undefined);
      return;
    }
    isolate.internalSteps = 0;
    this.stopped(isolate, { reason: isolate.lastCommand === 'step' ? 'step' : isolate.lastCommand === 'pause' ? 'pause' : 'debugger statement' });
  }

  /**
   * Whether an exception V8 predicts caught is caught by the program. V8 names no handler, and in an
   * ES module (or code awaited from one) the handler it finds is node's module loader, which only
   * rethrows. So: without node's module evaluation among the awaiting frames, V8's word stands;
   * with it, the exception is caught only where one of the program's frames (or a library's) runs
   * inside a `try` with a `catch`, or inside the promise a `.catch(...)` or `.then(_, onRejected)`
   * is called on.
   */
  private async caughtByProgram(isolate: Isolate, p: Paused): Promise<boolean> {
    const frames = [
      ...p.callFrames.map((f) => ({ scriptId: f.location.scriptId, url: this.urlOf(isolate, f), line: f.location.lineNumber, column: f.location.columnNumber ?? 0 })),
      ...asyncFrames(p.asyncStackTrace).map((f) => ({ scriptId: f.scriptId, url: f.url, line: f.lineNumber, column: f.columnNumber })),
    ];
    if (!frames.some((f) => f.url === ESM_EVALUATION)) return true;
    const site = frames.map((f) => `${f.scriptId}:${f.line}:${f.column}`).join(' ');
    if (isolate.caughtSites.has(site)) return true;
    const caught = await this.handledAlong(isolate, frames);
    if (caught && isolate.caughtSites.size < MAX_CAUGHT_SITES) isolate.caughtSites.add(site);
    return caught;
  }

  private async handledAlong(isolate: Isolate, frames: Array<{ scriptId: string; url: string; line: number; column: number }>): Promise<boolean> {
    // The program's frames and its libraries', innermost first: the first with a handler around it catches (a library's too).
    const own = frames.filter((f) => this.isProgram(f.url, true));
    // Thrown and caught in node's own code, never passing through the program's: not the program's exception.
    if (!own.some((f) => this.isProgram(f.url))) return true;
    for (const frame of own) {
      if (await this.insideHandler(isolate, frame.scriptId, frame.line, frame.column)) return true;
    }
    return false;
  }

  /** Whether the position (0-based) is inside a try block with a catch, or the receiver of a `.catch`/`.then(_, h)` call, in its function. */
  private async insideHandler(isolate: Isolate, scriptId: string, line: number, column: number): Promise<boolean> {
    const tree = await this.parsedScript(isolate, scriptId);
    // A script that cannot be read (too big, or beyond acorn, or too deep to walk): V8's own word, caught, stands; an uncaught
    // one is still said at the end.
    if (!tree) return true;
    try {
      return handlerAround(tree, line + 1, column);
    } catch {
      return true;
    }
  }

  /**
   * A script's source as acorn reads it (null: too big to parse on the event loop, past the session's budget, or not
   * parsable, which is remembered). Trees are not kept: at about 100 bytes a character, 40 modules of 1 MB took the server
   * to 2.6 GB (attack n2-1); what they answered is (caughtSites, the breakpoints set).
   */
  private async parsedScript(isolate: Isolate, scriptId: string): Promise<acorn.Node | null> {
    if (isolate.unparsable.has(scriptId)) return null;
    const length = isolate.lengths.get(scriptId) ?? Infinity;
    if (length > MAX_PARSED_CHARS || length > this.parseCharsLeft) {
      // Too big to parse on the event loop (a 17 MB module held it 52 s, attack 18aq j2-4), or past the session's budget.
      isolate.unparsable.add(scriptId);
      return null;
    }
    this.parseCharsLeft -= length;
    const source = (await isolate.cdp.send<{ scriptSource: string }>('Debugger.getScriptSource', { scriptId }).catch(() => ({ scriptSource: '' }))).scriptSource;
    const tree = parseScript(source);
    if (!tree) isolate.unparsable.add(scriptId);
    return tree;
  }

  /** Whether a script is the program's (see isProgramUrl), debugkit's own hook not. */
  private isProgram(url: string, libraries = false): boolean {
    return url !== this.options.hookUrl && isProgramUrl(url, libraries);
  }

  /** A paused frame's script URL (V8 leaves a frame's own `url` empty for CommonJS modules). */
  private urlOf(isolate: Isolate, frame: CallFrame): string {
    return frame.url || (isolate.urls.get(frame.location.scriptId) ?? '');
  }

  private async resumeQuietly(isolate: Isolate): Promise<void> {
    isolate.paused = undefined;
    await isolate.cdp.send('Debugger.resume').catch(() => undefined);
  }

  /** boot/node-hook.cjs stopped before compiling a module with a map: its breakpoints are set by the map before it runs. */
  private async hookPause(isolate: Isolate, frame: CallFrame): Promise<void> {
    const read = async (expression: string) =>
      (await isolate.cdp.send<{ result: RemoteObject }>('Debugger.evaluateOnCallFrame', { callFrameId: frame.callFrameId, expression, returnByValue: true }).catch(() => undefined))?.result.value;
    const filename = await read('filename');
    const mapUrl = await read('sourceMapURL');
    if (typeof filename !== 'string' || typeof mapUrl !== 'string') return;
    const url = pathToFileURL(filename).href;
    if (this.functionBreakpoints.length > 0 && this.isProgram(url)) {
      // The module's own source, as it will be compiled (a CommonJS module's lines are its file's): its functions' breakpoints first.
      const length = await read('content.length');
      if (typeof length === 'number' && length <= MAX_PARSED_CHARS && length <= this.parseCharsLeft) {
        this.parseCharsLeft -= length;
        const content = await read('content');
        const tree = typeof content === 'string' ? parseScript(content) : null;
        if (tree) await this.placeFunctionsIn(isolate, tree, url);
        isolate.hooked.add(filename);
      }
    }
    const map = mapUrl ? this.mapAt(url, mapUrl) : null;
    if (map) await this.mappedScriptReady(isolate, url, map);
  }

  /** The error a breakpoint's condition throws at this stop, if it throws. */
  private async conditionError(isolate: Isolate, frame: CallFrame, expression: string): Promise<string | undefined> {
    const result = await isolate.cdp
      .send<{ exceptionDetails?: ExceptionDetails }>('Debugger.evaluateOnCallFrame', { callFrameId: frame.callFrameId, expression, silent: true, timeout: EVALUATE_TIMEOUT_MS })
      .catch(() => undefined);
    return result?.exceptionDetails ? exceptionText(result.exceptionDetails) : undefined;
  }

  /** A logpoint's message with each `{expression}` replaced by its value in the frame. */
  private async logMessage(isolate: Isolate, frame: CallFrame, message: string): Promise<string> {
    const parts = message.split(/(\{[^{}]*\})/);
    const out: string[] = [];
    for (const part of parts) {
      if (!/^\{[^{}]*\}$/.test(part)) {
        out.push(part);
        continue;
      }
      const result = await isolate.cdp
        .send<{ result: RemoteObject; exceptionDetails?: ExceptionDetails }>('Debugger.evaluateOnCallFrame', {
          callFrameId: frame.callFrameId,
          expression: part.slice(1, -1),
          silent: true,
          generatePreview: true,
          timeout: EVALUATE_TIMEOUT_MS,
        })
        .catch((err: unknown) => ({ result: { type: 'string', value: `<${describeError(err)}>` } as RemoteObject, exceptionDetails: undefined }));
      out.push(result.exceptionDetails ? `<${exceptionText(result.exceptionDetails)}>` : result.result.type === 'string' ? String(result.result.value) : describe(result.result));
    }
    return out.join('');
  }

  // --- what a stop shows ---

  private allFrames(isolate: Isolate): Array<{ call?: CallFrame; async?: AsyncFrame }> {
    if (!isolate.paused) throw new Error(isolate.id === MAIN_THREAD ? 'the program is not paused' : `${isolate.name} is not paused`);
    if (isolate.frames.length === 0) {
      // The program's frames, as debugpy's justMyCode shows them: node's own, node_modules' (tsx's loader in every stack of a
      // TypeScript program, attack o2-6) and code with no URL left out, but the innermost kept.
      isolate.frames = isolate.paused.callFrames.filter((call, i) => i === 0 || this.isProgram(this.urlOf(isolate, call))).map((call) => ({ call }));
      for (const frame of asyncFrames(isolate.paused.asyncStackTrace)) if (this.isProgram(frame.url)) isolate.frames.push({ async: frame });
    }
    return isolate.frames;
  }

  /** A frame by its DAP id (each thread's frames are numbered from its id times FRAME_IDS). */
  private frameOf(frameId: number): { isolate: Isolate; frame: { call?: CallFrame; async?: AsyncFrame } } {
    const isolate = this.isolates.get(Math.floor(frameId / FRAME_IDS));
    const frame = isolate ? this.allFrames(isolate)[(frameId % FRAME_IDS) - 1] : undefined;
    if (!isolate || !frame) throw new Error(`no frame ${frameId} at this stop`);
    return { isolate, frame };
  }

  private stackTrace(isolate: Isolate, start: number, levels: number): DebugProtocol.StackTraceResponse['body'] {
    const frames = this.allFrames(isolate);
    const end = Math.min(frames.length, FRAME_IDS - 1, levels > 0 ? start + levels : frames.length);
    const stackFrames: DebugProtocol.StackFrame[] = [];
    for (let i = start; i < end; i++) {
      const frame = frames[i]!;
      const { scriptId, url, line, column, name } = frame.call
        ? {
            scriptId: frame.call.location.scriptId,
            url: this.urlOf(isolate, frame.call),
            line: frame.call.location.lineNumber,
            column: frame.call.location.columnNumber ?? 0,
            name: frame.call.functionName,
          }
        : { scriptId: frame.async!.scriptId, url: frame.async!.url, line: frame.async!.lineNumber, column: frame.async!.columnNumber, name: frame.async!.functionName };
      const at = this.located(isolate, scriptId, url, line, column);
      // A function's name is the program's to make: cut, as values are (a 60,000-character one filled the answer, attack 18aq k2-8).
      const shown = name ? (name.length > MAX_NAME_CHARS ? `${name.slice(0, MAX_NAME_CHARS)}...` : name) : '<anonymous>';
      stackFrames.push({
        id: isolate.id * FRAME_IDS + i + 1,
        name: frame.async ? `async ${shown}` : shown,
        line: at.line,
        column: at.column,
        source: { path: at.path },
        ...(at.path.startsWith('node:') ? { presentationHint: 'subtle' as const } : {}),
      });
    }
    return { stackFrames, totalFrames: frames.length };
  }

  /** A generated position (0-based) as the agent knows it: the original source and line (1-based) when the script has a map. */
  private located(isolate: Isolate, scriptId: string, url: string, line: number, column: number): { path: string; line: number; column: number } {
    const script = isolate.scripts.get(scriptId);
    const map = script ? this.mapOf(script) : null;
    const original = map?.original({ line, column });
    // A map names any file it likes: a stop is reported at an original source only inside the root (attack 18aq j2-9: /etc/passwd).
    if (original && path.isAbsolute(original.source) && isInside(this.options.root, original.source)) return { path: original.source, line: original.line + 1, column: original.column + 1 };
    return { path: fileOf(url) ?? (url || '<eval>'), line: line + 1, column: column + 1 };
  }

  private scopes(frameId: number): DebugProtocol.Scope[] {
    const { isolate, frame } = this.frameOf(frameId);
    if (!frame.call) return [];
    const chain = frame.call.scopeChain;
    // A `with` object's members are not locals (one of a million keys held every stop, attack 18aq k2-6): it is a scope of its own.
    // Top-level code (an ES module's, a script's) has no function scope: its module's or script's bindings are its locals.
    const topLevel = chain.some((s) => s.type === 'local') ? undefined : chain.find((s) => s.type === 'module' || s.type === 'script');
    const locals = chain.filter((s) => s.type === 'local' || s.type === 'block' || s.type === 'catch' || s === topLevel);
    const scopes: DebugProtocol.Scope[] = [];
    const objects = locals.map((s) => s.object.objectId).filter((id): id is string => id !== undefined);
    const thisObject = frame.call.functionName && frame.call.this.type === 'object' && frame.call.this.subtype !== 'null' ? frame.call.this : undefined;
    scopes.push({ name: 'Locals', presentationHint: 'locals', variablesReference: this.ref({ kind: 'scope', isolate, objects, ...(thisObject ? { thisObject } : {}) }), expensive: false });
    for (const scope of chain) {
      if (locals.includes(scope) || !scope.object.objectId) continue;
      const name = scope.type === 'closure' ? `Closure${scope.name ? ` (${scope.name})` : ''}` : scope.type[0]!.toUpperCase() + scope.type.slice(1);
      scopes.push({ name, variablesReference: this.ref({ kind: 'scope', isolate, objects: [scope.object.objectId] }), expensive: scope.type === 'global' });
    }
    return scopes;
  }

  private ref(target: Ref): number {
    const id = this.nextRef++;
    this.refs.set(id, target);
    return id;
  }

  private async variables(reference: number): Promise<DebugProtocol.Variable[]> {
    const target = this.refs.get(reference);
    if (!target) throw new Error(`no variables with reference ${reference} at this stop`);
    const { isolate } = target;
    if (target.kind === 'scope') {
      const seen = new Set<string>();
      const out: DebugProtocol.Variable[] = [];
      if (target.thisObject) {
        out.push(this.variable(isolate, 'this', target.thisObject));
        seen.add('this');
      }
      for (const objectId of target.objects) {
        for (const p of await this.properties(isolate, objectId)) {
          if (seen.has(p.name) || !p.value) continue;
          seen.add(p.name);
          out.push(this.variable(isolate, p.name, p.value));
        }
      }
      return out;
    }
    const object = target.object;
    if (!object.objectId) return [];
    const big = object.preview?.overflow || /\((\d{4,})\)/.test(object.description ?? '');
    let objectId = object.objectId;
    let more = 0;
    if (big && (object.subtype === 'array' || object.subtype === 'typedarray' || object.subtype === undefined) && object.className !== 'Proxy') {
      // A copy of the first members only: listing a million would fill the channel.
      const copy = await isolate.cdp.send<{ result: RemoteObject }>('Runtime.callFunctionOn', {
        objectId,
        // Data properties only, by their descriptors: a getter is not called (attack 18aq k2-5).
        functionDeclaration: `function (n) { const keys = Object.keys(this); const o = Object.create(null); for (const k of keys.slice(0, n)) { const d = Object.getOwnPropertyDescriptor(this, k); if (d && 'value' in d) o[k] = d.value; } o['(more)'] = keys.length - Math.min(keys.length, n); return o; }`,
        arguments: [{ value: MAX_MEMBERS }],
        generatePreview: false,
      });
      if (copy.result.objectId) objectId = copy.result.objectId;
    }
    const out: DebugProtocol.Variable[] = [];
    const props = await this.properties(isolate, objectId, true, object.subtype === 'proxy' || object.className === 'Proxy');
    for (const p of props) {
      if (!p.value) continue;
      if (p.name === '(more)' && objectId !== object.objectId) {
        more = Number(p.value.value ?? 0);
        continue;
      }
      out.push(this.variable(isolate, p.name, p.value));
      if (out.length >= MAX_MEMBERS) break;
    }
    if (more > 0) out.push({ name: '(more)', value: `${more} more members not listed`, variablesReference: 0, presentationHint: { kind: 'virtual' } });
    return out;
  }

  private async properties(isolate: Isolate, objectId: string, internal = false, proxy = false): Promise<PropertyDescriptor[]> {
    // V8 sends each string value whole: a 40 MB local made a stop take 20 s, 140 MB never came (attack 18aq j2-6). When
    // a value is longer than a stop shows, its properties are read from a copy whose strings are cut in the program.
    // (Never on a Proxy: reading it runs the program's traps, attack 18aq k2-5.)
    const copy = proxy
      ? undefined
      : await isolate.cdp
          .send<{ result: RemoteObject }>('Runtime.callFunctionOn', { objectId, functionDeclaration: CUT_LONG_STRINGS, arguments: [{ value: MAX_STRING }], silent: true })
          .catch(() => undefined);
    const got = await isolate.cdp.send<{ result: PropertyDescriptor[]; internalProperties?: PropertyDescriptor[] }>('Runtime.getProperties', {
      objectId: copy?.result.objectId ?? objectId,
      ownProperties: true,
      generatePreview: true,
    });
    const own = got.result.filter((p) => p.name !== '__proto__' && (p.isOwn ?? true));
    const extra = internal ? (got.internalProperties ?? []).filter((p) => ['[[Entries]]', '[[PrimitiveValue]]', '[[Target]]', '[[Handler]]', '[[BoundThis]]'].includes(p.name)) : [];
    return [...own, ...extra];
  }

  private variable(isolate: Isolate, name: string, value: RemoteObject): DebugProtocol.Variable {
    const expandable = value.objectId !== undefined && value.type === 'object' && value.subtype !== 'null';
    return { name, value: describe(value), type: typeName(value), variablesReference: expandable ? this.ref({ kind: 'object', isolate, object: value }) : 0 };
  }

  private async evaluate(expression: string, frameId: number | undefined): Promise<DebugProtocol.EvaluateResponse['body']> {
    let result: { result: RemoteObject; exceptionDetails?: ExceptionDetails };
    let isolate: Isolate;
    if (frameId !== undefined) {
      const at = this.frameOf(frameId);
      isolate = at.isolate;
      if (!at.frame.call) throw new Error(`frame ${(frameId % FRAME_IDS) - 1} is an async caller, which V8 keeps no variables of: evaluate in a frame above it`);
      result = await isolate.cdp.send('Debugger.evaluateOnCallFrame', {
        callFrameId: at.frame.call.callFrameId,
        expression,
        generatePreview: true,
        timeout: EVALUATE_TIMEOUT_MS,
      });
    } else {
      isolate = this.isolateOf(undefined);
      // A running thread: without breaks (a stop inside the expression, or at the instrumentation breakpoint before each
      // script while there are function breakpoints, would hold the answer until its timeout).
      result = await isolate.cdp.send('Runtime.evaluate', { expression, generatePreview: true, timeout: EVALUATE_TIMEOUT_MS, disableBreaks: true });
    }
    if (result.exceptionDetails) throw new Error(exceptionText(result.exceptionDetails));
    const value = result.result;
    const expandable = value.objectId !== undefined && value.type === 'object' && value.subtype !== 'null';
    return { result: describe(value), type: typeName(value), variablesReference: expandable ? this.ref({ kind: 'object', isolate, object: value }) : 0 };
  }

  private async exceptionInfo(isolate: Isolate): Promise<DebugProtocol.ExceptionInfoResponse['body']> {
    const thrown = isolate.exception;
    if (!thrown) throw new Error('the program is not stopped at an exception');
    const data = thrown.data;
    let name = typeName(data);
    let message = describe(data);
    let stack: string | undefined;
    if (data.objectId && data.type === 'object') {
      const read = await isolate.cdp
        .send<{ result: RemoteObject }>('Runtime.callFunctionOn', {
          objectId: data.objectId,
          functionDeclaration: `function (max) { const cut = (s) => s.length > max ? s.slice(0, max) + '... [cut: ' + s.length + ' characters in all]' : s; let name, message, stack; try { name = String(this.name ?? (this.constructor && this.constructor.name) ?? 'Error'); message = String(this.message ?? ''); stack = this.stack === undefined ? undefined : String(this.stack); } catch (e) { message = '<could not be read: ' + e + '>'; } return { name: cut(name || 'Error'), message: cut(message), stack: stack === undefined ? undefined : cut(stack) }; }`,
          arguments: [{ value: 4000 }],
          returnByValue: true,
        })
        .catch(() => undefined);
      const value = read?.result.value as { name?: string; message?: string; stack?: string } | undefined;
      if (value) {
        name = value.name ?? name;
        message = value.message ?? message;
        stack = value.stack;
      }
    }
    return {
      exceptionId: name,
      description: message,
      breakMode: thrown.uncaught ? 'unhandled' : 'always',
      details: { typeName: name, message, ...(stack ? { stackTrace: stack } : {}) },
    };
  }
}

type ExceptionDetails = { text: string; exception?: RemoteObject };

/** node's ES module evaluation (ModuleJob.run): its catch only rethrows. */
const ESM_EVALUATION = 'node:internal/modules/esm/module_job';

/** The async callers V8 keeps, innermost first. */
function asyncFrames(trace: StackTrace | undefined): AsyncFrame[] {
  const frames: AsyncFrame[] = [];
  for (let at = trace; at; at = at.parent) frames.push(...at.callFrames);
  return frames;
}

/** Whether a script is the program's own: not node's, not unnamed (eval'd), and (unless `libraries`) not in node_modules. */
function isProgramUrl(url: string, libraries = false): boolean {
  if (!url || url.startsWith('node:')) return false;
  return libraries || !url.includes('/node_modules/');
}

/** See insideHandler. `line` is 1-based, `column` 0-based (acorn's). */
export function handlerAround(tree: acorn.Node, line: number, column: number): boolean {
  const contains = (node: acorn.Node) => {
    const { start, end } = node.loc!;
    return (start.line < line || (start.line === line && start.column <= column)) && (end.line > line || (end.line === line && end.column >= column));
  };
  /** A handler that takes a rejection: one argument at least, and not `undefined` or `null` written out. */
  const handles = (arg: unknown) => {
    const a = arg as { type?: string; name?: string; value?: unknown } | undefined;
    return a !== undefined && a.type !== 'SpreadElement' && !(a.type === 'Identifier' && a.name === 'undefined') && !(a.type === 'Literal' && a.value === null);
  };
  // Along the nodes that contain the position, outermost first (attack 18aq k2-1, k2-2):
  let found = false; // a try block with a catch, or a promise handler, around it in its function
  let async = false; // that function is async
  let returned = false; // it is in a `return` not awaited since the handler: an async function's try does not catch what it returns
  const visit = (node: acorn.Node): void => {
    if (!contains(node)) return;
    const n = node as acorn.Node & Record<string, unknown>;
    // A handler outside a function (or a class field's initializer, a static block) does not catch what its body throws later.
    if (/Function/.test(node.type) || node.type === 'PropertyDefinition' || node.type === 'StaticBlock') {
      found = false;
      returned = false;
      async = Boolean(n.async);
    }
    if (node.type === 'TryStatement' && n.handler && contains(n.block as acorn.Node)) {
      found = true;
      returned = false;
    }
    if (node.type === 'ReturnStatement') returned = true;
    if (node.type === 'AwaitExpression') returned = false;
    if (node.type === 'CallExpression') {
      const callee = n.callee as acorn.Node & { property?: { name?: string }; object?: acorn.Node & { name?: string } };
      const name = callee.type === 'MemberExpression' ? callee.property?.name : undefined;
      const args = n.arguments as unknown[];
      const onPromise = callee.object !== undefined && contains(callee.object);
      const settled = name === 'allSettled' && callee.object?.type === 'Identifier' && callee.object.name === 'Promise' && args.some((a) => contains(a as acorn.Node));
      if ((onPromise && ((name === 'catch' && handles(args[0])) || (name === 'then' && handles(args[1])))) || settled) {
        found = true;
        returned = false;
      }
    }
    for (const value of Object.values(n)) {
      if (Array.isArray(value)) {
        for (const child of value) if (child && typeof child === 'object' && typeof (child as acorn.Node).type === 'string') visit(child as acorn.Node);
      } else if (value && typeof value === 'object' && typeof (value as acorn.Node).type === 'string' && (value as acorn.Node).loc) visit(value as acorn.Node);
    }
  };
  visit(tree);
  return found && !(async && returned);
}

/** Keeps `work` (setting breakpoints in a thread) in the thread's inflight set until it is done. */
function track<T>(isolate: Isolate, work: Promise<T>): Promise<T> {
  isolate.inflight.add(work);
  void work.finally(() => isolate.inflight.delete(work)).catch(() => undefined);
  return work;
}

/** A script's source as acorn reads it: as an ES module, else (a CommonJS module's sloppy code) as a script; null when neither parses. */
function parseScript(source: string): acorn.Node | null {
  for (const sourceType of ['module', 'script'] as const) {
    try {
      return acorn.parse(source, { ecmaVersion: 'latest', sourceType, allowHashBang: true, allowReturnOutsideFunction: true, allowAwaitOutsideFunction: true, locations: true });
    } catch {
      // the next way, or none
    }
  }
  return null;
}

/**
 * Where the functions a function breakpoint names start: the first statement of each function
 * named `name` (or its body, when empty or an expression), 1-based line and 0-based column. A
 * plain name matches declarations, functions assigned to a variable or property, and class or
 * object methods and fields; `Owner.name` only those of class `Owner`, of the object literal
 * assigned to `Owner`, or assigned to `Owner.name` / `Owner.prototype.name`.
 */
export function functionsNamed(tree: acorn.Node, name: string): Array<{ line: number; column: number }> {
  const dot = name.lastIndexOf('.');
  const [owner, written] = dot > 0 ? [name.slice(0, dot), name.slice(dot + 1)] : [undefined, name];
  // A private method is written `#name` (as stacks show it); acorn names it without the `#`.
  const own = written.replace(/^#/, '');
  const found: Array<{ line: number; column: number }> = [];
  type N = acorn.Node & Record<string, unknown>;
  const isFunction = (node: unknown): node is N => /^(?:FunctionExpression|ArrowFunctionExpression|FunctionDeclaration)$/.test((node as N | undefined)?.type ?? '');
  const keyName = (key: unknown): string | undefined => {
    const k = key as { type?: string; name?: string; value?: unknown } | undefined;
    return k?.type === 'Identifier' || k?.type === 'PrivateIdentifier' ? k.name : k?.type === 'Literal' && typeof k.value === 'string' ? k.value : undefined;
  };
  const memberName = (node: unknown): string | undefined => {
    const m = node as { type?: string; name?: string; object?: unknown; property?: unknown; computed?: boolean } | undefined;
    if (m?.type === 'Identifier') return m.name;
    if (m?.type !== 'MemberExpression' || m.computed) return undefined;
    const object = memberName(m.object);
    const property = keyName(m.property);
    return object !== undefined && property !== undefined ? `${object}.${property}` : undefined;
  };
  const start = (fn: N) => {
    const body = fn.body as N & { body?: N[] };
    const first = fn.expression || !Array.isArray(body.body) || body.body.length === 0 ? body : body.body[0]!;
    found.push({ line: first.loc!.start.line, column: first.loc!.start.column });
  };
  /** Whether a function called `candidate`, a member of `ownerName` (if it is one), is the one named. */
  const matches = (candidate: string | undefined, ownerName: string | undefined) => candidate === own && (owner === undefined || owner === ownerName || `${owner}.prototype` === ownerName);
  /** The members of a class body or an object literal, owned by `ownerName` (the class's name, or the name the object is assigned to). */
  const members = (list: unknown, ownerName: string | undefined, thunks = true) => {
    for (const member of (list as N[] | undefined) ?? []) {
      const value = member.value as N | undefined;
      // `{ name: () => name }` in a literal passed along is a getter a bundler made (esbuild's __export): not the function.
      if (!thunks && value?.type === 'ArrowFunctionExpression' && (value.body as N).type === 'Identifier') continue;
      if (isFunction(value) && matches(keyName(member.key), ownerName)) start(value);
    }
  };
  const visit = (node: N): void => {
    switch (node.type) {
      case 'FunctionDeclaration':
        if (matches(keyName(node.id), undefined) && owner === undefined) start(node);
        break;
      case 'VariableDeclarator': {
        const init = node.init as N | null;
        if (isFunction(init) && owner === undefined && matches(keyName(node.id), undefined)) start(init);
        if (init?.type === 'ObjectExpression') members(init.properties, keyName(node.id));
        break;
      }
      case 'AssignmentExpression': {
        const target = memberName(node.left);
        const right = node.right as N;
        if (target !== undefined && isFunction(right)) {
          const at = target.lastIndexOf('.');
          if (matches(at < 0 ? target : target.slice(at + 1), at < 0 ? undefined : target.slice(0, at))) start(right);
        }
        if (right.type === 'ObjectExpression') members(right.properties, target);
        break;
      }
      case 'ClassDeclaration':
      case 'ClassExpression':
        members((node.body as N).body, keyName(node.id));
        break;
      case 'ObjectExpression':
        // An object literal no name is assigned to: its methods match plain names only.
        if (owner === undefined) members(node.properties, undefined, false);
        break;
    }
    for (const value of Object.values(node)) {
      if (Array.isArray(value)) {
        for (const child of value) if (child && typeof child === 'object' && typeof (child as N).type === 'string') visit(child as N);
      } else if (value && typeof value === 'object' && typeof (value as N).type === 'string') visit(value as N);
    }
  };
  visit(tree as N);
  return [...new Map(found.map((at) => [`${at.line}:${at.column}`, at])).values()];
}

/** What an evaluation threw, as its first line (`ReferenceError: x is not defined`). */
function exceptionText(details: ExceptionDetails): string {
  const described = details.exception?.description ?? (details.exception ? describe(details.exception) : undefined);
  return (described ?? details.text).split('\n', 1)[0]!;
}

/**
 * The condition V8 evaluates, in the program: the agent's condition, then the hit count (a counter
 * of the breakpoint's own in the program), then a logpoint's message printed with console.log and
 * false, so that neither a hit not counted nor a logpoint pauses the program (a pause each cost
 * 50-140 ms: 3,000 logpoint hits did not end in 120 s, attack 18aq k2-7). Guarded: one that throws
 * stops the program, where the bridge reports the error, rather than being taken as false.
 */
function condition(bp: Breakpoint): { condition?: string } {
  const { spec } = bp;
  const parts: string[] = [];
  if (spec.condition) parts.push(`!!(${spec.condition}\n)`);
  const test = spec.hitCondition ? hitTest(spec.hitCondition) : undefined;
  if (test) {
    const counters = `(globalThis[Symbol.for(${JSON.stringify(bp.counters)})] ??= Object.create(null))`;
    parts.push(`(${counters}[${JSON.stringify(bp.key)}] = (${counters}[${JSON.stringify(bp.key)}] ?? 0) + 1) ${test}`);
  }
  if (spec.logMessage !== undefined) parts.push(`(console.log(${template(spec.logMessage)}), false)`);
  return parts.length > 0 ? { condition: `try { ${parts.join(' && ')} } catch (__debugkitConditionError) { true }` } : {};
}

/** A hit condition as JavaScript after the count: `N` or `== N`, `>= N`, `> N`, `< N`, `<= N`, `% N` (VS Code's forms); none for another. */
export function hitTest(hitCondition: string): string | undefined {
  const m = /^\s*(==|>=|>|<=|<|%)?\s*(\d+)\s*$/.exec(hitCondition);
  if (!m) return undefined;
  const n = Number(m[2]);
  return m[1] === '%' ? `% ${n} === 0` : m[1] === undefined || m[1] === '==' ? `=== ${n}` : `${m[1]} ${n}`;
}

/** A logpoint's message as a template literal: text as written, each `{expression}` its value. */
export function template(message: string): string {
  return `\`${message
    .split(/(\{[^{}]*\})/)
    .map((part) => (/^\{[^{}]*\}$/.test(part) ? `\${(${part.slice(1, -1)})}` : part.replace(/[\\`]/g, '\\$&').replace(/\$\{/g, '\\${')))
    .join('')}\``;
}

function typeName(value: RemoteObject): string {
  if (value.type === 'object') {
    if (value.subtype === 'null') return 'null';
    return value.className ?? 'Object';
  }
  return value.type;
}

/** A value as an agent reads it: strings quoted, objects by a short preview; a cut one ends in "..." (values.ts engineCut). */
export function describe(value: RemoteObject): string {
  switch (value.type) {
    case 'undefined':
      return 'undefined';
    case 'string': {
      const text = String(value.value ?? '');
      return text.length > MAX_STRING ? `${JSON.stringify(text.slice(0, MAX_STRING))}...` : JSON.stringify(text);
    }
    case 'number':
    case 'boolean':
      return value.unserializableValue ?? value.description ?? String(value.value);
    case 'bigint':
      return value.unserializableValue ?? value.description ?? String(value.value);
    case 'symbol':
      return value.description ?? 'Symbol()';
    case 'function': {
      // Its source's head names it: `function name(`, `class Name`, a method's `name(` (an arrow function has none).
      const text = value.description ?? '';
      const head = /^\s*(async\s+)?(function(?![\w$])\s*\*?|class(?![\w$]))\s*([\w$]*)/.exec(text);
      if (head?.[2] === 'class') return `[class ${head[3] || '(anonymous)'}]`;
      const method = head ? undefined : /^\s*(?:async\s+)?(?:[*]\s*)?(?:get\s+|set\s+)?(#?[\w$]+)\s*\(/.exec(text)?.[1];
      return `[Function: ${head?.[3] || method || '(anonymous)'}]`;
    }
    case 'object':
      if (value.subtype === 'null') return 'null';
      return value.preview ? preview(value.preview, value.description) : (value.description ?? 'Object');
    default:
      return value.description ?? String(value.value);
  }
}

function preview(p: ObjectPreview, description?: string): string {
  const more = p.overflow ? ', ...' : '';
  const item = (v: PropertyPreview) =>
    v.type === 'string' ? JSON.stringify(v.value ?? '') : v.type === 'object' && v.subtype !== 'null' ? (v.subtype === 'array' ? '[...]' : '{...}') : (v.value ?? v.type);
  const entry = (v: ObjectPreview | undefined) => (v ? (v.type === 'string' ? JSON.stringify(v.description ?? '') : v.type === 'object' ? '{...}' : (v.description ?? v.type)) : '');
  const text = (() => {
    switch (p.subtype) {
      case 'array':
      case 'typedarray': {
        const prefix = p.subtype === 'typedarray' ? `${description ?? ''} ` : '';
        return `${prefix}[${p.properties.map(item).join(', ')}${p.properties.length > 0 ? more : p.overflow ? '...' : ''}]`;
      }
      case 'map':
        return `${description ?? 'Map'} {${(p.entries ?? []).map((e) => `${entry(e.key)} => ${entry(e.value)}`).join(', ')}${more}}`;
      case 'set':
        return `${description ?? 'Set'} {${(p.entries ?? []).map((e) => entry(e.value)).join(', ')}${more}}`;
      case 'error':
      case 'date':
      case 'regexp':
        return (description ?? p.description ?? '').split('\n', 1)[0]!;
      default: {
        const name = description && description !== 'Object' ? `${description} ` : '';
        return `${name}{${p.properties.map((v) => `${v.name}: ${item(v)}`).join(', ')}${more}}`;
      }
    }
  })();
  // V8 shortens long strings inside previews with an ellipsis: that is a cut as well.
  return text.includes('\u2026') && !text.includes('...') ? `${text} ...` : text;
}

/** The file a script URL names (file: URLs and absolute paths), if any. */
function fileOf(url: string): string | undefined {
  if (url.startsWith('file://')) {
    try {
      return fileURLToPath(url);
    } catch {
      return undefined;
    }
  }
  return url.startsWith('/') ? url : undefined;
}

/** A script by its URL: a file's, in either of the forms node names it (fileUrlRegex); any other, as it is. */
function scriptUrlRegex(url: string): string {
  const file = fileOf(url);
  return file ? fileUrlRegex(file) : `^${escapeRegex(url)}$`;
}

/** A file's script URL, as CommonJS (a path or a file: URL) and ES modules (a file: URL) name it. */
function fileUrlRegex(file: string): string {
  return `^(?:${escapeRegex(pathToFileURL(file).href)}|${escapeRegex(file)})$`;
}

function escapeRegex(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
}

function signalNumber(signal: NodeJS.Signals | null): number | undefined {
  return signal ? constants.signals[signal] : undefined;
}
