// The python toolset against debugpy driven directly: (1) session start to the first breakpoint
// hit, debugkit vs a minimal DAP client of the bench's own; (2) the slowdown of a CPU-bound
// program run to completion under debugkit (a breakpoint that is never hit) vs plain python;
// (3) the latency of one step over, debugkit vs the minimal DAP client.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  drain,
  envInt,
  fullEnv,
  isAlive,
  killPid,
  ms,
  percentile,
  processesInDir,
  releaseTempDir,
  sleep,
  summarize,
  track,
  trackTempDir,
  untrack,
  waitExit,
  withTimeout,
  type BenchModule,
  type BenchResult,
  type Table,
} from './util.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CLI = path.join(ROOT, 'dist/cli.js');

/** The interpreter both sides run (adapter, launcher, debuggee; and the plain runs). Absolute. */
const PYTHON = process.env.BENCH_PYTHON || '/usr/bin/python3';
/** Where Debian's debugpy lives: a shim of links to it serves interpreters that lack debugpy, as debugkit does. */
const SYSTEM_PYTHON = '/usr/bin/python3';

const STARTS = envInt('BENCH_PY_STARTS', 10);
const CPU_RUNS = envInt('BENCH_PY_CPU_RUNS', 3);
const STEPS = envInt('BENCH_PY_STEPS', 100);
const STEP_WARMUP = 5;
/** Steps one way takes before the next way takes over; the order rotates each round. */
const STEP_ROUND = 10;
/** Iterations of the CPU-bound loop: fixed, so runs compare across time (1 to 2 s of plain python here). */
const CPU_N = envInt('BENCH_PY_CPU_N', 20_000_000);

/** Bound on one DAP request or one MCP call that does not run the program. */
const REQUEST_TIMEOUT_MS = 20_000;
/** Bound on a start to the first stop. */
const START_TIMEOUT_MS = 30_000;
/** Bound on a run of the CPU-bound program (plain or debugged). */
const CPU_TIMEOUT_MS = 60_000;
/** Bound on the debuggee and its adapter being gone after a session ends. */
const SETTLE_MS = 5_000;

const START_GOAL = 1.15;
const CPU_GOAL = 1.5;

// ---------------------------------------------------------------- the programs

/** (1) A small script: the breakpoint is in a function called a few times. */
const START_SCRIPT = `import os
import sys


def greet(name):
    message = "hello, " + name
    return message


def main():
    for name in ["ada", "grace", "linus"]:
        print(greet(name))


main()
`;
const START_LINE = 7;

/** (2) A pure-Python loop; the breakpoint sits on a branch the loop never takes. */
const CPU_SCRIPT = `import sys


def work(n):
    total = 0
    for i in range(n):
        total += i * i % 7
        if total < 0:
            print("never", i)
    return total


def report(total):
    print("never called", total)


if __name__ == "__main__":
    print(work(int(sys.argv[1])))
`;
/** In the hot loop's body (debugpy traces every line of work()) ... */
const CPU_LINE_IN_LOOP = 9;
/** ... or in a function that never runs (debugpy skips tracing work()'s lines). */
const CPU_LINE_ELSEWHERE = 14;
/** With the breakpoint in the loop the loop runs this many times less work (it is tens of times slower then). */
const IN_LOOP_SHARE = 40;

/** (3) A loop of simple lines to step over. */
const STEP_SCRIPT = `def main():
    total = 0
    for i in range(10_000_000):
        a = i + 1
        b = a * 2
        total += b
    print(total)


main()
`;
const STEP_LINE = 4;
const STEP_LINES = new Set([3, 4, 5, 6]);

// ---------------------------------------------------------------- interpreter

interface Python {
  /** The interpreter, as given. */
  python: string;
  /** PYTHONPATH that makes debugpy importable (a shim of links), when the interpreter lacks it. */
  pythonPath?: string;
  version: string;
  debugpy: string;
  /** Whether pydevd's Cython tracer imports for this interpreter. */
  cython: boolean;
}

function pyRun(python: string, code: string, env: Record<string, string> = {}): string | undefined {
  try {
    return execFileSync(python, ['-c', code], { encoding: 'utf8', timeout: 20_000, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } }).trim();
  } catch {
    return undefined;
  }
}

/**
 * Finds how `PYTHON` imports debugpy: directly, or through a directory of links to the system's
 * debugpy and bytecode packages on PYTHONPATH (what debugkit does for pyenv's and venvs' pythons).
 */
function resolvePython(root: string): Python {
  if (!path.isAbsolute(PYTHON)) throw new Error(`BENCH_PYTHON must be an absolute path (debugkit's pythonPath is), not ${PYTHON}`);
  const probe = 'import debugpy, sys; print(debugpy.__version__); print(sys.version.split()[0])';
  let pythonPath: string | undefined;
  let out = pyRun(PYTHON, probe);
  if (out === undefined) {
    const site = pyRun(SYSTEM_PYTHON, 'import debugpy, os; print(os.path.dirname(os.path.dirname(debugpy.__file__)))');
    if (site === undefined) throw new Error(`${PYTHON} cannot import debugpy, nor can ${SYSTEM_PYTHON}: apt-get install -y python3-debugpy`);
    const shim = path.join(root, '.python-shim');
    mkdirSync(shim);
    for (const pkg of ['debugpy', 'bytecode']) symlinkSync(path.join(site, pkg), path.join(shim, pkg));
    pythonPath = [shim, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter);
    out = pyRun(PYTHON, probe, { PYTHONPATH: pythonPath });
    if (out === undefined) throw new Error(`${PYTHON} cannot import debugpy, even through a shim of ${site}`);
  }
  const [debugpy, version] = out.split('\n');
  const cythonProbe = 'import os, sys, debugpy; sys.path.insert(0, os.path.join(os.path.dirname(debugpy.__file__), "_vendored", "pydevd")); ' + 'from _pydevd_bundle import pydevd_cython; print("ok")';
  const cython = pyRun(PYTHON, cythonProbe, pythonPath ? { PYTHONPATH: pythonPath } : {}) === 'ok';
  return { python: PYTHON, pythonPath, version: version ?? '?', debugpy: debugpy ?? '?', cython };
}

/** Evaluated in a paused debuggee: which of pydevd's compiled speed-ups are loaded there. */
const SPEEDUPS_EXPRESSION = "' '.join(sorted(m for m in __import__('sys').modules if m.startswith(('_pydevd_bundle.pydevd_cython', '_pydevd_frame_eval.pydevd_frame_evaluator')))) or 'none'";

// ---------------------------------------------------------------- the minimal DAP client

interface DapMessage {
  seq: number;
  type: 'request' | 'response' | 'event';
  command?: string;
  event?: string;
  request_seq?: number;
  success?: boolean;
  message?: string;
  body?: any;
}

interface EventWaiter {
  name: string;
  resolve(event: DapMessage): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

/**
 * The baseline: `python -m debugpy.adapter` over stdio with Content-Length framing, requests
 * matched to responses by seq, events queued until taken. Nothing else (no types, no validation).
 */
class MiniDap {
  private buffer: Buffer = Buffer.alloc(0);
  private seq = 0;
  private readonly pending = new Map<number, { command: string; resolve(body: any): void; reject(err: Error): void; timer: NodeJS.Timeout }>();
  private readonly queued: DapMessage[] = [];
  private readonly waiters = new Set<EventWaiter>();
  private closedBecause: Error | undefined;
  private readonly log = { text: '' };
  debuggeePid: number | undefined;

  private constructor(private readonly child: ChildProcess) {
    child.stdout!.on('data', (chunk: Buffer) => this.onData(chunk));
    drain(child.stderr, this.log);
    child.once('exit', (code, signal) => this.fail(new Error(`debugpy adapter exited (${signal ?? code}): ${this.log.text.slice(-2000)}`)));
  }

  static async spawn(py: Python, cwd: string): Promise<MiniDap> {
    const child = spawn(py.python, ['-m', 'debugpy.adapter'], {
      cwd,
      env: { ...process.env, ...(py.pythonPath ? { PYTHONPATH: py.pythonPath } : {}) },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    track(child.pid, 'debugpy adapter (direct)', true);
    await withTimeout(
      new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', reject);
      }),
      REQUEST_TIMEOUT_MS,
      'starting the debugpy adapter',
    );
    return new MiniDap(child);
  }

  request(command: string, args?: unknown, timeoutMs = REQUEST_TIMEOUT_MS): Promise<any> {
    if (this.closedBecause) return Promise.reject(this.closedBecause);
    const seq = ++this.seq;
    const json = JSON.stringify({ seq, type: 'request', command, arguments: args });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(seq);
        reject(new Error(`debugpy direct: no answer to ${command} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(seq, { command, resolve, reject, timer });
      this.child.stdin!.write(`Content-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`);
    });
  }

  /** The oldest event `name` not yet taken, or the next one to come. */
  waitEvent(name: string, timeoutMs: number): Promise<DapMessage> {
    const i = this.queued.findIndex((e) => e.event === name);
    if (i >= 0) return Promise.resolve(this.queued.splice(i, 1)[0]!);
    if (this.closedBecause) return Promise.reject(this.closedBecause);
    return new Promise((resolve, reject) => {
      const waiter: EventWaiter = {
        name,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters.delete(waiter);
          reject(new Error(`debugpy direct: no ${name} event within ${timeoutMs} ms`));
        }, timeoutMs),
      };
      this.waiters.add(waiter);
    });
  }

  /** Drops queued events (before resuming, so an old stop is never taken for the next). */
  discard(name: string): void {
    for (let i = this.queued.length - 1; i >= 0; i--) if (this.queued[i]!.event === name) this.queued.splice(i, 1);
  }

  /** Disconnects (ending the debuggee), then makes sure the adapter and the debuggee are gone. */
  async close(): Promise<void> {
    if (!this.closedBecause) await this.request('disconnect', { terminateDebuggee: true }, 3000).catch(() => undefined);
    const { child } = this;
    child.stdin!.end();
    if (!(await waitExit(child, 2000))) {
      killPid(child.pid!, true);
      await waitExit(child, 2000);
    }
    // debugpy runs the debuggee in a process group of its own.
    if (this.debuggeePid !== undefined && isAlive(this.debuggeePid)) killPid(this.debuggeePid, true);
    untrack(child.pid);
    this.fail(new Error('debugpy direct: closed'));
  }

  private onData(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    for (;;) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = /Content-Length:\s*(\d+)/i.exec(this.buffer.subarray(0, end).toString('ascii'));
      const start = end + 4;
      const stop = start + Number(length?.[1]);
      if (length && this.buffer.length < stop) return;
      let message: DapMessage;
      try {
        if (!length) throw new Error(`bad header ${JSON.stringify(this.buffer.subarray(0, end).toString())}`);
        message = JSON.parse(this.buffer.subarray(start, stop).toString('utf8')) as DapMessage;
      } catch (err) {
        // Nothing more can be read reliably: end every wait now rather than at its timeout.
        this.child.stdout!.destroy();
        this.fail(new Error(`debugpy direct: unreadable message from the adapter: ${(err as Error).message}`));
        return;
      }
      this.buffer = this.buffer.subarray(stop);
      this.onMessage(message);
    }
  }

  private onMessage(m: DapMessage): void {
    if (m.type === 'response') {
      const p = this.pending.get(m.request_seq!);
      if (!p) return;
      this.pending.delete(m.request_seq!);
      clearTimeout(p.timer);
      if (m.success) p.resolve(m.body ?? {});
      else p.reject(new Error(`debugpy direct: ${p.command} failed: ${m.message ?? ''} ${JSON.stringify(m.body ?? {})}`));
    } else if (m.type === 'event') {
      if (m.event === 'process') this.debuggeePid = m.body?.systemProcessId;
      if (m.event === 'output') return; // the program's output: not needed here
      for (const w of this.waiters) {
        if (w.name !== m.event) continue;
        this.waiters.delete(w);
        clearTimeout(w.timer);
        w.resolve(m);
        return;
      }
      this.queued.push(m);
    }
  }

  private fail(err: Error): void {
    this.closedBecause ??= err;
    for (const [seq, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(err);
      this.pending.delete(seq);
    }
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      this.waiters.delete(w);
      // A program that ends closes the adapter: that is the end being waited for.
      if (w.name === 'terminated') w.resolve({ seq: 0, type: 'event', event: 'terminated' });
      else w.reject(err);
    }
  }
}

interface DirectLaunch {
  dap: MiniDap;
  /** ms from spawning the adapter to the `stopped` event (or the program's end). */
  stoppedMs: number;
  stop: DapMessage;
}

/**
 * Spawn, initialize, launch (not awaited) -> on `initialized`: setExceptionBreakpoints,
 * setBreakpoints, configurationDone -> the first `stopped` (or `terminated` when `untilEnd`).
 * The same arguments debugkit sends (src/toolsets/python/adapter.ts), so debugpy does the same work.
 */
async function directLaunch(py: Python, root: string, program: string, args: string[], line: number, untilEnd: boolean, timeoutMs: number): Promise<DirectLaunch> {
  const started = performance.now();
  const dap = await MiniDap.spawn(py, root);
  try {
    await dap.request('initialize', {
      clientID: 'bench',
      adapterID: 'debugpy',
      linesStartAt1: true,
      columnsStartAt1: true,
      pathFormat: 'path',
      supportsVariableType: true,
      supportsRunInTerminalRequest: false,
    });
    const initialized = dap.waitEvent('initialized', timeoutMs);
    const launched = dap.request(
      'launch',
      {
        program: path.join(root, program),
        args,
        cwd: root,
        env: py.pythonPath ? { PYTHONPATH: py.pythonPath } : {},
        python: [py.python],
        console: 'internalConsole',
        justMyCode: true,
        redirectOutput: true,
        showReturnValue: false,
      },
      timeoutMs,
    );
    launched.catch(() => undefined);
    initialized.catch(() => undefined);
    await Promise.race([initialized, launched.then(() => initialized)]);
    await dap.request('setExceptionBreakpoints', { filters: ['uncaught'] });
    await dap.request('setBreakpoints', { source: { path: path.join(root, program) }, breakpoints: [{ line }] });
    await dap.request('configurationDone');
    const stop = await dap.waitEvent(untilEnd ? 'terminated' : 'stopped', timeoutMs);
    const stoppedMs = performance.now() - started;
    await launched;
    return { dap, stoppedMs, stop };
  } catch (err) {
    await dap.close();
    throw err;
  }
}

/** What debugkit reads at every stop (src/toolsets/python/snapshot.ts), minus the source lines. */
async function directSnapshot(dap: MiniDap, threadId: number): Promise<{ line: number; frames: number }> {
  const { stackFrames } = await dap.request('stackTrace', { threadId, startFrame: 0, levels: 20 });
  const { scopes } = await dap.request('scopes', { frameId: stackFrames[0].id });
  const scope = scopes.find((s: any) => s.presentationHint === 'locals') ?? scopes[0];
  await dap.request('variables', { variablesReference: scope.variablesReference });
  return { line: stackFrames[0].line, frames: stackFrames.length };
}

// ---------------------------------------------------------------- debugkit over MCP (stdio)

interface ToolReply {
  isError?: boolean;
  structuredContent?: any;
  content?: Array<{ text?: string }>;
}

class Debugkit {
  private constructor(
    private readonly client: Client,
    readonly pid: number | undefined,
    private readonly log: { text: string },
  ) {}

  static async start(root: string, env: Record<string, string> = {}): Promise<Debugkit> {
    const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, '--root', root], cwd: root, env: { ...fullEnv(), ...env }, stderr: 'pipe' });
    const log = { text: '' };
    drain(transport.stderr as Readable | null, log);
    const client = new Client({ name: 'debugkit-bench-python', version: '1.0.0' });
    try {
      await withTimeout(client.connect(transport), REQUEST_TIMEOUT_MS, 'connecting to debugkit over stdio');
    } catch (err) {
      const pid = transport.pid ?? undefined;
      await withTimeout(client.close(), 5000, 'closing the client').catch(() => undefined);
      if (pid !== undefined && isAlive(pid)) killPid(pid, false);
      throw new Error(`${String(err)}\n${log.text}`, { cause: err });
    }
    track(transport.pid ?? undefined, 'debugkit (stdio)', false);
    return new Debugkit(client, transport.pid ?? undefined, log);
  }

  /** Calls a tool; its structured answer, or an error naming the tool and debugkit's message. */
  async call(name: string, args: Record<string, unknown>, timeoutMs = REQUEST_TIMEOUT_MS): Promise<any> {
    const r = (await this.client.callTool({ name, arguments: args }, undefined, { timeout: timeoutMs })) as ToolReply;
    if (r.isError || r.structuredContent === undefined) {
      const text = (r.content ?? [])
        .map((c) => c.text ?? '')
        .join('')
        .slice(0, 2000);
      throw new Error(`debugkit ${name} failed: ${text}\n${this.log.text.slice(-2000)}`);
    }
    return r.structuredContent;
  }

  async close(): Promise<void> {
    await withTimeout(this.client.close(), 8000, 'closing the stdio client').catch(() => undefined);
    if (this.pid !== undefined && isAlive(this.pid)) killPid(this.pid, false);
    untrack(this.pid);
  }
}

function startArgs(py: Python, entry: string, args: string[] = []): Record<string, unknown> {
  // pythonPath is passed even for the default, so both sides are sure to run the same interpreter.
  return { entry, args, pythonPath: py.python };
}

// ---------------------------------------------------------------- bookkeeping

/**
 * Waits until nothing but `keep` runs in `root` (a debuggee takes a moment to go after its
 * session ends); SIGKILLs what is left after SETTLE_MS and returns it.
 */
async function settle(root: string, keep: ReadonlySet<number>): Promise<string[]> {
  const deadline = Date.now() + SETTLE_MS;
  for (;;) {
    const left = processesInDir(root).filter((p) => !keep.has(p.pid));
    if (left.length === 0) return [];
    if (Date.now() > deadline) {
      for (const p of left) killPid(p.pid, false);
      return left.map((p) => `${p.name} (pid ${p.pid})`);
    }
    await sleep(10);
  }
}

function spread(samples: number[]): { n: number; median: number; p90: number; min: number; max: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  return { n: sorted.length, median: percentile(sorted, 50), p90: percentile(sorted, 90), min: sorted[0] ?? NaN, max: sorted.at(-1) ?? NaN };
}

const ratio = (a: number, b: number) => (Number.isFinite(a / b) ? `${(a / b).toFixed(2)}x` : 'n/a');
const sec = (msecs: number) => (msecs / 1000).toFixed(2);

// ---------------------------------------------------------------- variants

/**
 * pydevd writes each message as two `sendall`s (header, then body) on a TCP socket without
 * TCP_NODELAY: Nagle holds the body until the header is ACKed, and the adapter delays that ACK
 * (up to 40 ms on Linux). The `nodelay` variant runs the same debugpy with this sitecustomize on
 * PYTHONPATH, which sets TCP_NODELAY on every TCP connection debugpy's processes open (what
 * microsoft/debugpy#2054 asks for), to show how much of each figure that stall is.
 */
const NODELAY_SITECUSTOMIZE = `# debugkit bench: TCP_NODELAY on every TCP connection (see bench/python.ts). Shadows any other sitecustomize.
import socket

_connect = socket.socket.connect


def connect(self, *args, **kwargs):
    result = _connect(self, *args, **kwargs)
    try:
        if self.type == socket.SOCK_STREAM and self.family in (socket.AF_INET, socket.AF_INET6):
            self.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        pass
    return result


socket.socket.connect = connect
`;

type VariantKey = 'stock' | 'nodelay';

/** One way of running debugpy, driven both directly and through debugkit. */
interface Variant {
  key: VariantKey;
  label: string;
  /** For the minimal DAP client. */
  py: Python;
  /** A debugkit server of its own. */
  dk: Debugkit;
}

function nodelayPython(py: Python, dir: string): Python {
  return { ...py, pythonPath: [dir, py.pythonPath ?? process.env.PYTHONPATH].filter(Boolean).join(path.delimiter) };
}

// ---------------------------------------------------------------- (1) start to the first hit

interface StartSamples {
  /** Minimal DAP client: spawn to `stopped`. */
  stopped: number[];
  /** ... and then stackTrace, scopes, variables. */
  snapshot: number[];
  debugkit: number[];
}

async function directStartOnce(py: Python, root: string): Promise<{ stopped: number; snapshot: number }> {
  const started = performance.now();
  const { dap, stoppedMs, stop } = await directLaunch(py, root, 'start.py', [], START_LINE, false, START_TIMEOUT_MS);
  try {
    if (stop.body?.reason !== 'breakpoint') throw new Error(`debugpy direct stopped for ${stop.body?.reason}, not the breakpoint`);
    const snap = await directSnapshot(dap, stop.body.threadId);
    const snapshot = performance.now() - started;
    if (snap.line !== START_LINE) throw new Error(`debugpy direct stopped at line ${snap.line}, not ${START_LINE}`);
    return { stopped: stoppedMs, snapshot };
  } finally {
    await dap.close();
  }
}

async function debugkitStartOnce(dk: Debugkit, py: Python): Promise<number> {
  const started = performance.now();
  const { sessionId } = await dk.call('python_start_session', startArgs(py, 'start.py'));
  try {
    const r = await dk.call('python_run_to_breakpoint', { sessionId, file: 'start.py', line: START_LINE, timeout: START_TIMEOUT_MS / 1000 }, START_TIMEOUT_MS + 5000);
    const elapsed = performance.now() - started;
    if (!r.hit || r.frameInfo?.line !== START_LINE) throw new Error(`debugkit did not stop at start.py:${START_LINE}: ${JSON.stringify(r).slice(0, 500)}`);
    return elapsed;
  } finally {
    await dk.call('python_end_session', { sessionId }).catch(() => undefined);
  }
}

async function measureStart(variants: Variant[], root: string, settled: () => Promise<void>): Promise<Record<VariantKey, StartSamples>> {
  const data = Object.fromEntries(variants.map((v) => [v.key, { stopped: [], snapshot: [], debugkit: [] } as StartSamples])) as Record<VariantKey, StartSamples>;
  const ways: Array<(record: boolean) => Promise<void>> = variants.flatMap((v) => [
    async (record: boolean) => {
      const t = await directStartOnce(v.py, root);
      if (record) {
        data[v.key].stopped.push(t.stopped);
        data[v.key].snapshot.push(t.snapshot);
      }
    },
    async (record: boolean) => {
      const t = await debugkitStartOnce(v.dk, v.py);
      if (record) data[v.key].debugkit.push(t);
    },
  ]);
  // One untimed start each: the page cache, .pyc files and debugkit's interpreter probe are warm after it.
  for (const way of ways) {
    await way(false);
    await settled();
  }
  for (let i = 0; i < STARTS; i++) {
    // Rotate the order, so drift hits every way alike; each session is gone before the next starts.
    for (let k = 0; k < ways.length; k++) {
      await ways[(i + k) % ways.length]!(true);
      await settled();
    }
  }
  return data;
}

// ---------------------------------------------------------------- (2) CPU-bound run to completion

/** One program size and breakpoint placement, run by every way. */
type CpuWay = 'plain' | 'traced' | 'direct' | 'debugkit';

interface CpuScenario {
  key: 'fixed' | 'elsewhere' | 'inLoop';
  /** The ways that run this one (plain always does). */
  ways: CpuWay[];
  label: string;
  n: number;
  line: number;
  plain: number[];
  /** Plain python with a no-op global trace function: the floor for any sys.settrace debugger. */
  traced: number[];
  direct: number[];
  debugkit: number[];
  /** What plain python printed: every debugged run must print the same. */
  output?: string;
}

/**
 * Runs cpu.py under a trace function that does nothing (returns None, so no frame is traced line
 * by line). On CPython 3.11, any global trace function turns off the specializing interpreter.
 */
const NOOP_TRACE = "import runpy, sys; sys.argv = sys.argv[1:]; sys.settrace(lambda *a: None); runpy.run_path(sys.argv[0], run_name='__main__')";

function plainRun(py: Python, root: string, n: number, traced = false): Promise<{ ms: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(py.python, [...(traced ? ['-c', NOOP_TRACE] : []), 'cpu.py', String(n)], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
    track(child.pid, 'python (plain)', false);
    const out = { text: '' };
    const err = { text: '' };
    drain(child.stdout, out);
    drain(child.stderr, err);
    const timer = setTimeout(() => child.kill('SIGKILL'), CPU_TIMEOUT_MS);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      const elapsed = performance.now() - started;
      clearTimeout(timer);
      untrack(child.pid);
      if (code === 0) resolve({ ms: elapsed, stdout: out.text.trim() });
      else reject(new Error(`plain python exited (${signal ?? code}): ${err.text}`));
    });
  });
}

async function directCpuOnce(py: Python, root: string, n: number, line: number): Promise<number> {
  const { dap, stoppedMs, stop } = await directLaunch(py, root, 'cpu.py', [String(n)], line, true, CPU_TIMEOUT_MS);
  await dap.close();
  if (stop.event !== 'terminated') throw new Error(`debugpy direct: the CPU-bound run did not end: ${JSON.stringify(stop)}`);
  return stoppedMs;
}

async function debugkitCpuOnce(dk: Debugkit, py: Python, n: number, line: number, expected?: string): Promise<number> {
  const started = performance.now();
  const { sessionId } = await dk.call('python_start_session', startArgs(py, 'cpu.py', [String(n)]));
  try {
    const r = await dk.call('python_run_to_breakpoint', { sessionId, file: 'cpu.py', line, timeout: CPU_TIMEOUT_MS / 1000 }, CPU_TIMEOUT_MS + 10_000);
    const elapsed = performance.now() - started;
    if (!r.completed || r.hit || r.exitCode !== 0) throw new Error(`debugkit: the CPU-bound run did not complete cleanly: ${JSON.stringify(r).slice(0, 500)}`);
    if (expected !== undefined) {
      const printed = (await dk.call('python_get_output', { sessionId, stream: 'stdout' })).text.trim();
      if (printed !== expected) throw new Error(`debugkit's run of cpu.py ${n} printed "${printed}", plain python printed "${expected}"`);
    }
    return elapsed;
  } finally {
    await dk.call('python_end_session', { sessionId }).catch(() => undefined);
  }
}

async function measureCpu(py: Python, root: string, dk: Debugkit, settled: () => Promise<void>): Promise<CpuScenario[]> {
  const n = CPU_N;
  const all: CpuWay[] = ['plain', 'traced', 'direct', 'debugkit'];
  const scenario = (key: CpuScenario['key'], ways: CpuWay[], label: string, size: number, line: number): CpuScenario => ({
    key,
    ways,
    label,
    n: size,
    line,
    plain: [],
    traced: [],
    direct: [],
    debugkit: [],
  });
  const scenarios = [
    scenario('fixed', all, 'no loop: the fixed cost', 0, CPU_LINE_ELSEWHERE),
    scenario('elsewhere', all, 'breakpoint in a function never called', n, CPU_LINE_ELSEWHERE),
    // debugpy direct is left out here to keep the run short (the case above compares it with debugkit),
    // and the no-op trace, which traces no lines, so it costs what it does above.
    scenario('inLoop', ['plain', 'debugkit'], 'breakpoint in the hot loop, on a branch never taken', Math.round(n / IN_LOOP_SHARE), CPU_LINE_IN_LOOP),
  ];
  for (let i = 0; i < CPU_RUNS; i++) {
    for (const sc of scenarios) {
      const run: Record<CpuWay, () => Promise<void>> = {
        plain: async () => {
          const r = await plainRun(py, root, sc.n);
          if (sc.output === undefined) sc.output = r.stdout;
          else if (r.stdout !== sc.output) throw new Error(`plain python printed "${r.stdout}", then "${sc.output}"`);
          sc.plain.push(r.ms);
        },
        traced: async () => {
          const r = await plainRun(py, root, sc.n, true);
          if (r.stdout !== sc.output) throw new Error(`python with a no-op trace printed "${r.stdout}", plain python "${sc.output}"`);
          sc.traced.push(r.ms);
        },
        direct: async () => void sc.direct.push(await directCpuOnce(py, root, sc.n, sc.line)),
        debugkit: async () => void sc.debugkit.push(await debugkitCpuOnce(dk, py, sc.n, sc.line, sc.output)),
      };
      const ways = sc.ways.map((w) => run[w]);
      // Rotate the order of the ways each run (plain goes first in the first, so the output is known).
      for (let k = 0; k < ways.length; k++) {
        await ways[(i + k) % ways.length]!();
        await settled();
      }
    }
  }
  return scenarios;
}

// ---------------------------------------------------------------- (3) step over

interface StepSamples {
  /** Minimal DAP client: `next` to `stopped`. */
  stopped: number[];
  /** ... and then stackTrace, scopes, variables. */
  snapshot: number[];
  debugkit: number[];
}

interface Stepper {
  step(record: boolean): Promise<void>;
  evaluate(expression: string): Promise<string>;
  close(): Promise<void>;
}

async function directStepper(py: Python, root: string, into: StepSamples): Promise<Stepper> {
  const { dap, stop } = await directLaunch(py, root, 'step.py', [], STEP_LINE, false, START_TIMEOUT_MS);
  const threadId: number = stop.body.threadId;
  return {
    async step(record) {
      dap.discard('stopped');
      const started = performance.now();
      await dap.request('next', { threadId });
      const stopped = await dap.waitEvent('stopped', REQUEST_TIMEOUT_MS);
      const stoppedMs = performance.now() - started;
      const snap = await directSnapshot(dap, threadId);
      const snapshotMs = performance.now() - started;
      if (stopped.body?.reason === 'exception' || !STEP_LINES.has(snap.line)) throw new Error(`debugpy direct stepped out of the loop, to line ${snap.line}`);
      if (record) {
        into.stopped.push(stoppedMs);
        into.snapshot.push(snapshotMs);
      }
    },
    async evaluate(expression) {
      const { stackFrames } = await dap.request('stackTrace', { threadId, startFrame: 0, levels: 1 });
      return (await dap.request('evaluate', { expression, frameId: stackFrames[0].id, context: 'repl' })).result;
    },
    close: () => dap.close(),
  };
}

async function debugkitStepper(dk: Debugkit, py: Python, into: StepSamples): Promise<Stepper> {
  const { sessionId } = await dk.call('python_start_session', startArgs(py, 'step.py'));
  try {
    const r = await dk.call('python_run_to_breakpoint', { sessionId, file: 'step.py', line: STEP_LINE, timeout: START_TIMEOUT_MS / 1000 }, START_TIMEOUT_MS + 5000);
    if (!r.hit) throw new Error(`debugkit did not stop at step.py:${STEP_LINE}: ${JSON.stringify(r).slice(0, 500)}`);
  } catch (err) {
    await dk.call('python_end_session', { sessionId }).catch(() => undefined);
    throw err;
  }
  return {
    async step(record) {
      const started = performance.now();
      const r = await dk.call('python_step', { sessionId, kind: 'over' });
      const elapsed = performance.now() - started;
      if (r.status !== 'paused' || !STEP_LINES.has(r.frameInfo?.line)) throw new Error(`debugkit stepped out of the loop: ${JSON.stringify(r).slice(0, 500)}`);
      if (record) into.debugkit.push(elapsed);
    },
    async evaluate(expression) {
      return (await dk.call('python_evaluate', { sessionId, expression })).repr;
    },
    async close() {
      await dk.call('python_end_session', { sessionId }).catch(() => undefined);
    },
  };
}

async function measureSteps(variants: Variant[], root: string, settled: () => Promise<void>): Promise<{ data: Record<VariantKey, StepSamples>; speedups: string }> {
  const data = Object.fromEntries(variants.map((v) => [v.key, { stopped: [], snapshot: [], debugkit: [] } as StepSamples])) as Record<VariantKey, StepSamples>;
  const steppers: Stepper[] = [];
  try {
    // All paused at once, each in its own debuggee; steps interleave in rounds, the order rotating.
    for (const v of variants) {
      steppers.push(await directStepper(v.py, root, data[v.key]));
      steppers.push(await debugkitStepper(v.dk, v.py, data[v.key]));
    }
    // The answer is a repr: the module names in quotes.
    const seen = new Set((await Promise.all(steppers.map((s) => s.evaluate(SPEEDUPS_EXPRESSION)))).map((r) => r.replace(/^['"]|['"]$/g, '')));
    for (const s of steppers) for (let i = 0; i < STEP_WARMUP; i++) await s.step(false);
    for (let done = 0, round = 0; done < STEPS; round++) {
      const count = Math.min(STEP_ROUND, STEPS - done);
      for (let k = 0; k < steppers.length; k++) {
        const s = steppers[(round + k) % steppers.length]!;
        for (let i = 0; i < count; i++) await s.step(true);
      }
      done += count;
    }
    return { data, speedups: [...seen].join(' / ') };
  } finally {
    for (const s of steppers) await withTimeout(s.close(), 15_000, 'ending a step session').catch(() => undefined);
    await settled();
  }
}

// ---------------------------------------------------------------- the run

async function run(): Promise<BenchResult> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
  const loadBefore = os.loadavg()[0]!;
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'debugkit-bench-python-')));
  trackTempDir(root);
  const servers: Debugkit[] = [];
  const leftovers: string[] = [];
  try {
    writeFileSync(path.join(root, 'start.py'), START_SCRIPT);
    writeFileSync(path.join(root, 'cpu.py'), CPU_SCRIPT);
    writeFileSync(path.join(root, 'step.py'), STEP_SCRIPT);
    const nodelayDir = path.join(root, '.nodelay');
    mkdirSync(nodelayDir);
    writeFileSync(path.join(nodelayDir, 'sitecustomize.py'), NODELAY_SITECUSTOMIZE);
    const py = resolvePython(root);

    const stockServer = await Debugkit.start(root);
    servers.push(stockServer);
    const nodelayServer = await Debugkit.start(root, { PYTHONPATH: [nodelayDir, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter) });
    servers.push(nodelayServer);
    const variants: Variant[] = [
      { key: 'stock', label: 'debugpy as it is', py, dk: stockServer },
      { key: 'nodelay', label: 'debugpy with TCP_NODELAY', py: nodelayPython(py, nodelayDir), dk: nodelayServer },
    ];
    const keep = new Set(servers.map((s) => s.pid).filter((p): p is number => p !== undefined));
    const settled = async () => void leftovers.push(...(await settle(root, keep)));

    const phase = (what: string) => process.stdout.write(`python: ${what}\n`);
    phase(`${py.python} (${py.version}), debugpy ${py.debugpy}${py.pythonPath ? ' through a PYTHONPATH shim' : ''}; ` + `pydevd's Cython module ${py.cython ? 'imports' : 'does NOT import'}`);
    let t = performance.now();
    phase(`(1) start to the first hit: 1 + ${STARTS} starts per way`);
    const start = await measureStart(variants, root, settled);
    const startSeconds = (performance.now() - t) / 1000;
    t = performance.now();
    phase(`(2) CPU-bound runs to completion: ${CPU_RUNS} per way and program`);
    const cpu = await measureCpu(py, root, stockServer, settled);
    const cpuSeconds = (performance.now() - t) / 1000;
    t = performance.now();
    phase(`(3) step over: ${STEP_WARMUP} + ${STEPS} steps per way`);
    const steps = await measureSteps(variants, root, settled);
    const stepSeconds = (performance.now() - t) / 1000;
    phase(`pydevd speed-ups loaded in the paused debuggees: ${steps.speedups || 'none'}`);

    for (const server of servers.splice(0)) await server.close();
    leftovers.push(...(await settle(root, new Set())));
    return report({ py, variants, start, cpu, steps: steps.data, speedups: steps.speedups, seconds: [startSeconds, cpuSeconds, stepSeconds], leftovers, load: [loadBefore, os.loadavg()[0]!] });
  } finally {
    for (const server of servers) await server.close();
    const killed = releaseTempDir(root);
    if (killed.length > 0) process.stderr.write(`bench: killed leftover processes: ${killed.join(', ')}\n`);
  }
}

interface RunData {
  py: Python;
  variants: Variant[];
  start: Record<VariantKey, StartSamples>;
  cpu: CpuScenario[];
  steps: Record<VariantKey, StepSamples>;
  speedups: string;
  seconds: [number, number, number];
  leftovers: string[];
  load: [number, number];
}

function report({ py, variants, start, cpu, steps, speedups, seconds, leftovers, load }: RunData): BenchResult {
  const tag = (v: Variant) => (v.key === 'stock' ? '' : ', TCP_NODELAY');

  // (1)
  const startTable: Table = {
    title: 'Session start to the first breakpoint hit, ms',
    columns: ['way', 'n', 'median', 'p90', 'min', 'max', 'median vs direct'],
    rows: variants.flatMap((v) => {
      const { stopped, snapshot, debugkit } = start[v.key];
      const base = spread(stopped).median;
      return (
        [
          [`minimal DAP client${tag(v)}: spawn to \`stopped\``, stopped],
          [`minimal DAP client${tag(v)}: spawn to \`stopped\`, then stackTrace, scopes, variables`, snapshot],
          [`**debugkit**${tag(v)}: \`python_start_session\` to \`python_run_to_breakpoint\` hit`, debugkit],
        ] as const
      ).map(([label, samples]) => {
        const x = spread(samples);
        return [label, String(x.n), ms(x.median), ms(x.p90), ms(x.min), ms(x.max), ratio(x.median, base)];
      });
    }),
    note: "TCP_NODELAY rows: the same debugpy with TCP_NODELAY set on its sockets by a sitecustomize (see Method). debugkit sets it itself on debugpy's own sockets, so its plain rows already include the fix; compare them with the direct TCP_NODELAY rows.",
  };

  // (2)
  const fixed = cpu.find((c) => c.key === 'fixed')!;
  const elsewhere = cpu.find((c) => c.key === 'elsewhere')!;
  const inLoop = cpu.find((c) => c.key === 'inLoop')!;
  const median = (samples: number[]) => spread(samples).median;
  const WAYS: Record<CpuWay, string> = {
    plain: 'plain python',
    traced: 'python + no-op `sys.settrace`',
    direct: 'debugpy, minimal DAP client',
    debugkit: '**debugkit**',
  };
  /**
   * Slowdown of the work itself: the fixed cost (the same way's n = 0 run) taken off. The plain
   * loop's time comes from the big run, scaled to n: the small run's is too short to measure well.
   */
  const plainLoop = median(elsewhere.plain) - median(fixed.plain);
  const workRatio = (sc: CpuScenario, way: CpuWay) => (median(sc[way]) - median(fixed[way])) / ((plainLoop * sc.n) / elsewhere.n);
  const cpuTable: Table = {
    title: 'CPU-bound program run to completion, breakpoint never hit, s',
    columns: ['program, breakpoint', 'way', 'runs', 'median', 'min', 'max', 'vs plain', 'vs plain, fixed cost off'],
    rows: cpu.flatMap((sc) =>
      sc.ways.map((way) => {
        const label = WAYS[way];
        const x = spread(sc[way]);
        const what = `\`cpu.py ${sc.n}\`, ${sc.label}`;
        const loopOnly = sc === fixed || (way === 'plain' && sc !== elsewhere) ? '—' : `${workRatio(sc, way).toFixed(2)}x`;
        return [what, label, String(x.n), sec(x.median), sec(x.min), sec(x.max), ratio(x.median, median(sc.plain)), loopOnly];
      }),
    ),
    note:
      'The debugged runs include starting and ending the session. "fixed cost off": the way\'s median minus its own n = 0 median, over plain python\'s ' +
      `loop time (its n = ${elsewhere.n} median minus its n = 0 median, scaled to the row's n): the slowdown of the loop itself.`,
  };

  // (3)
  const stepTable: Table = {
    title: 'One step over, ms',
    columns: ['way', 'n', 'p50', 'p99', 'mean', 'p50 vs direct'],
    rows: variants.flatMap((v) => {
      const { stopped, snapshot, debugkit } = steps[v.key];
      const base = summarize(stopped).p50;
      return (
        [
          [`minimal DAP client${tag(v)}: \`next\` to \`stopped\``, stopped],
          [`minimal DAP client${tag(v)}: \`next\` to \`stopped\`, then stackTrace, scopes, variables`, snapshot],
          [`**debugkit**${tag(v)}: \`python_step {kind: over}\``, debugkit],
        ] as const
      ).map(([label, samples]) => {
        const x = summarize(samples);
        return [label, String(x.n), ms(x.p50), ms(x.p99), ms(x.mean), samples === stopped ? '—' : ms(x.p50 - base, true)];
      });
    }),
    note: '"p50 vs direct" is a difference of the two distributions\' medians, not a median of per-step differences.',
  };

  const sd = spread(start.stock.stopped);
  const ss = spread(start.stock.snapshot);
  const sk = spread(start.stock.debugkit);
  const nd = spread(start.nodelay.stopped);
  const ns = spread(start.nodelay.snapshot);
  const nk = spread(start.nodelay.debugkit);
  startTable.note =
    `debugkit takes ${ms(sk.median - sd.median, true)} ms (median) over spawn-to-\`stopped\`; the three requests of its snapshot take ` +
    `${ms(ss.median - sd.median, true)} ms of that when the minimal client makes them. With TCP_NODELAY: snapshot ${ms(ns.median - nd.median, true)} ms, ` +
    `debugkit ${ms(nk.median - nd.median, true)} ms, ${ratio(nk.median, nd.median)}. ${startTable.note}`;
  const startRatio = sk.median / sd.median;
  const cpuRatio = median(elsewhere.debugkit) / median(elsewhere.plain);
  const cpuInfo = os.cpus();
  return {
    name: 'python',
    date: new Date(),
    machine: [
      ['CPU', `${cpuInfo[0]?.model.trim() ?? 'unknown'}, ${cpuInfo.length} cores`],
      ['OS', `${os.type()} ${os.release()} ${os.arch()}`],
      ['Node', process.version],
      ['Python', `${py.python} (${py.version})${py.pythonPath ? ", debugpy through a PYTHONPATH shim of the system's" : ''}`],
      ['debugpy', py.debugpy],
      ["pydevd's Cython speed-ups", `${py.cython ? 'importable' : 'NOT importable'} by this interpreter; loaded in the paused debuggees: ${speedups || 'none'}`],
      ['load average (1 min) before/after', `${load[0].toFixed(2)} / ${load[1].toFixed(2)}`],
    ],
    summary:
      "debugkit's python toolset against debugpy driven directly by a minimal DAP client of the bench's own: the time from " +
      'session start to the first breakpoint hit, the slowdown of a CPU-bound program run to completion with a breakpoint that ' +
      'is never hit (against plain python), and the latency of one step over. Same interpreter, same debugpy, same launch ' +
      'arguments on both sides.',
    method: [
      `Interpreter: \`${py.python}\` for everything (debugpy's adapter, launcher and debuggee; the plain runs); debugkit gets it as \`pythonPath\`` +
        (py.pythonPath
          ? ', and the minimal client the same kind of PYTHONPATH shim debugkit builds.'
          : ". `BENCH_PYTHON=<absolute path>` picks another (debugpy then comes through a PYTHONPATH shim of links to the system's, as in debugkit)."),
      "**minimal DAP client** (the baseline): self-contained in bench/python.ts, not debugkit's `DapConnection`: spawns `python -m debugpy.adapter`, " +
        'Content-Length framing, requests matched by seq, events queued. It sends what debugkit sends (src/toolsets/python/adapter.ts): ' +
        '`initialize`; `launch` (console internalConsole, justMyCode, redirectOutput; not awaited); on `initialized`: `setExceptionBreakpoints {uncaught}`, ' +
        '`setBreakpoints`, `configurationDone`; then waits for `stopped` (or `terminated`). Its "then stackTrace, scopes, variables" rows add the three ' +
        'requests debugkit makes at every stop (src/toolsets/python/snapshot.ts; debugkit also reads a few source lines).',
      '**debugkit**: MCP SDK `Client` + `StdioClientTransport` running `node dist/cli.js --root <tmp>`, started before the measurements (its start-up is not counted); ' +
        'the debugkit figures include the MCP client side, since an agent pays it too.',
      '**TCP_NODELAY** rows: pydevd sends every message as two `sendall`s (header, body) on a TCP socket without TCP_NODELAY, so Nagle holds the body ' +
        'until the adapter ACKs the header, which Linux delays up to 40 ms (microsoft/debugpy#2054). These rows run the same debugpy with a ' +
        '`sitecustomize.py` on PYTHONPATH that sets TCP_NODELAY on every TCP connection its processes open: a second minimal client and a second debugkit ' +
        "server (PYTHONPATH in its environment), measured interleaved with the others. debugkit applies the same fix itself to debugpy's own sockets " +
        '(src/toolsets/python/boot/sitecustomize.py), so its two rows measure the same thing, and the fair baseline for it is the direct TCP_NODELAY row.',
      `(1) \`start.py\` (a 15-line script), breakpoint on line ${START_LINE} inside a function. Direct: from spawning the adapter to the \`stopped\` event. ` +
        'debugkit: from calling `python_start_session` to `python_run_to_breakpoint` answering `hit: true` at that line. ' +
        `One untimed start per way first, then ${STARTS} per way, the order rotating; every session is ended, its debuggee and adapter gone, before the next starts. ` +
        `Took ${seconds[0].toFixed(1)} s.`,
      `(2) \`cpu.py n\`: a pure-Python loop (\`total += i * i % 7\` and an untaken \`if\`) in \`work()\`, n = ${CPU_N} (\`BENCH_PY_CPU_N\`). ` +
        `The never-hit breakpoint either in a function that is never called (line ${CPU_LINE_ELSEWHERE}: pydevd finds no breakpoint in \`work()\`'s lines and ` +
        `does not trace them) or in the loop body, on the untaken branch (line ${CPU_LINE_IN_LOOP}: pydevd traces every line of the loop; 1/${IN_LOOP_SHARE} of the work, ` +
        'since that is tens of times slower; only plain python and debugkit run it); and n = 0, what a run costs besides the loop. ' +
        'Ways: plain `python cpu.py n`, spawn to exit; the same under a no-op global trace function (`sys.settrace(lambda *a: None)`, via runpy), ' +
        'the least any `sys.settrace` debugger costs (on CPython 3.11, while a trace function is set, every instruction takes the tracing path in its ' +
        'unspecialized form); debugpy driven by the minimal DAP client, adapter spawn to `terminated`; debugkit, `python_start_session` to `python_run_to_breakpoint` answering `completed: true` ' +
        `with exit code 0. Every run's output is checked against plain python's. ${CPU_RUNS} runs of each, the order of the ways rotating. ` +
        `Took ${seconds[1].toFixed(1)} s.`,
      `(3) \`step.py\`: a loop of three simple lines in a function; each way runs to the breakpoint on line ${STEP_LINE} (untimed), then steps over ` +
        `${STEP_WARMUP} times untimed and ${STEPS} times timed, in rounds of ${STEP_ROUND} with the order rotating; all four debuggees paused side by side. ` +
        'Direct: `next` request to the `stopped` event, and to the end of stackTrace/scopes/variables after it. debugkit: one `python_step {kind: over}` call, ' +
        `which answers with that snapshot and the source around the stop. Every stop is checked to be inside the loop. Took ${seconds[2].toFixed(1)} s.`,
      'Median/p90/p50/p99: nearest rank.' +
        (leftovers.length > 0 ? ` Processes still there ${SETTLE_MS / 1000} s after a session ended, then killed: ${leftovers.join(', ')}.` : ' No process outlived its session.'),
    ],
    tables: [startTable, cpuTable, stepTable],
    verdicts: [
      {
        goal: `session start to the first hit within ${START_GOAL}x of debugpy driven directly (median)`,
        met: startRatio <= START_GOAL,
        detail:
          `${startRatio.toFixed(2)}x: ${ms(sk.median)} vs ${ms(sd.median)} ms (p90 ${ratio(sk.p90, sd.p90)}); ${ratio(sk.median, ss.median)} of the minimal client ` +
          `making the same snapshot requests; with TCP_NODELAY in debugpy ${ratio(nk.median, nd.median)}`,
      },
      {
        goal: `CPU-bound program under debugkit, breakpoint never hit, under ${CPU_GOAL}x plain python (median, start-up included)`,
        met: cpuRatio < CPU_GOAL,
        detail:
          `${cpuRatio.toFixed(2)}x with the breakpoint outside the hot function (${sec(median(elsewhere.debugkit))} vs ${sec(median(elsewhere.plain))} s); ` +
          `on the loop alone ${workRatio(elsewhere, 'debugkit').toFixed(2)}x, debugpy direct ${workRatio(elsewhere, 'direct').toFixed(2)}x, a no-op ` +
          `\`sys.settrace\` ${workRatio(elsewhere, 'traced').toFixed(2)}x; with the breakpoint inside the hot loop ${workRatio(inLoop, 'debugkit').toFixed(2)}x on the loop ` +
          '(debugpy traces each of its lines)',
      },
    ],
  };
}

export const pythonBench: BenchModule = { name: 'python', run };
