import { closeSync, constants, existsSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import net from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { DapConnection } from '../../../core/dap/connection.js';
import { DebugkitError } from '../../../core/errors.js';
import { awaitAnnouncement, spawnChild, terminate, type OwnedChild } from '../../../core/process.js';
import { privateTempDir } from '../../../core/paths.js';
import { runBounded } from '../../../core/run.js';
import { onceBounded } from '../../../core/wait.js';
import { findOnPath } from '../../../core/which.js';
import type { ConsoleNotes, Engine, EngineLaunch, EntryFile, ErrorInfo, StartedEngine, TracebackFrames } from '../engine.js';
import { sourceLine } from '../snapshot.js';

const DAP_TIMEOUT_MS = 30_000;
/** How long a build may take: a first build compiles the standard library without optimizations (about 15 s here). */
const BUILD_TIMEOUT_MS = 300_000;
/** How long Delve may take to say where it listens. */
const LISTEN_TIMEOUT_MS = 15_000;
/** Of a build's errors, or a panic's text, what an answer shows (their end: the errors and the innermost frames). */
const SHOWN_CHARS = 4000;
export const GO_INSTALL = 'apt-get install -y golang-go delve';

/** The Go toolchain and Delve, on PATH. */
function goTools(): { go: string; dlv: string } {
  const go = findOnPath('go');
  const dlv = findOnPath('dlv');
  if (!go || !dlv) {
    throw new DebugkitError('ENGINE_MISSING', `debugging a Go program needs ${[!go && 'go', !dlv && 'dlv'].filter(Boolean).join(' and ')} on PATH: install them with "${GO_INSTALL}"`);
  }
  return { go, dlv };
}

/** Whether a .go file is left out of every build by its `//go:build ignore` line (before its package clause). */
function ignored(file: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
    const head = Buffer.alloc(4096);
    const text = head.subarray(0, readSync(fd, head, 0, head.length, 0)).toString('utf8');
    const header = text.split(/^package\s/m)[0]!;
    return /^\/\/go:build\s+(?:.*\s)?ignore\b/m.test(header) || /^\/\/ \+build\s+(?:.*\s)?ignore\b/m.test(header);
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The nearest go.mod from `dir` up to `root`, if any: then the entry's package is built as a module's. */
function inModule(root: string, dir: string): boolean {
  for (let at = dir; ; at = path.dirname(at)) {
    if (existsSync(path.join(at, 'go.mod'))) return true;
    if (at === root || !at.startsWith(root) || path.dirname(at) === at) return false;
  }
}

/**
 * Go through Delve's DAP server (`dlv dap`). The entry's package is built first, by debugkit,
 * without optimizations (so every line and local is there), into a directory of the session's own;
 * Delve then runs that binary (`mode: exec`). A build error is the answer to starting the session.
 */
export class DelveEngine implements Engine {
  readonly name = 'Delve';
  readonly language = 'Go';

  private constructor(
    private readonly dlv: string,
    private readonly binary: string,
    /** Delve, started with the build, until the first run takes it. */
    private warm: Promise<Listening> | undefined,
    /** When the binary was last linked (go build leaves an up-to-date one as it is). */
    readonly builtMs: number,
  ) {}

  /**
   * Builds the package of `entry` (a .go file of package main inside `root`): the module's package
   * when a go.mod is found up to the root, else the directory's .go files (not its tests).
   */
  static async build(root: string, entry: EntryFile, signal?: AbortSignal): Promise<DelveEngine> {
    const { go, dlv } = goTools();
    const dir = path.dirname(entry.real);
    const name = path.basename(entry.real);
    if (name.endsWith('_test.go')) {
      throw new DebugkitError('INVALID_ARGUMENT', `${name} is a test file, which go test runs, not a program: name a .go file of the main package (the one with func main)`);
    }
    // The entry is what runs: one left out of its package by `//go:build ignore` (a generator, as `go run gen.go` runs it)
    // is built alone, and such files are left out of the package's own build (attack 18ap i2-3: the package's other main ran).
    const sources = ignored(entry.real)
      ? [name]
      : inModule(root, dir)
        ? ['.']
        : readdirSync(dir).filter((f) => f.endsWith('.go') && !f.endsWith('_test.go') && (f === name || !ignored(path.join(dir, f))));
    const binary = path.join(buildDirOf(dir), 'program');
    // At most one build per core at once, whoever asks: a build can take a core and hundreds of MB (attack 18ap i2-1).
    const release = await buildSlot(signal);
    // Delve starts while the package builds: it is the session's first run's, and ends with the session if it never runs.
    const warm = listen(dlv, root);
    warm.catch(() => undefined);
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, GOFLAGS: '-buildvcs=false' };
      // Without a home, go has no build cache: one beside the builds.
      if (!process.env.GOCACHE && !process.env.HOME) env.GOCACHE = path.join(tmpdir(), 'debugkit-go-cache');
      const built = await runBounded({
        command: go,
        args: ['build', '-gcflags=all=-N -l', '-o', binary, ...sources],
        cwd: dir,
        env,
        timeoutMs: BUILD_TIMEOUT_MS,
        ...(signal ? { signal } : {}),
        keep: 'tail',
        maxOutputChars: SHOWN_CHARS,
      });
      signal?.throwIfAborted();
      if (built.timedOut) throw new DebugkitError('TIMEOUT', `building ${path.relative(root, dir) || '.'} took over ${BUILD_TIMEOUT_MS / 1000} s`);
      if (built.code !== 0 || !existsSync(binary)) {
        const errors = `${built.stdout}${built.stderr}`.trim();
        throw new DebugkitError('INVALID_ARGUMENT', `the Go program does not build (go build ${sources.join(' ')} in ${path.relative(root, dir) || '.'}):\n${errors}`);
      }
      return new DelveEngine(dlv, binary, warm, statSync(binary).mtimeMs);
    } catch (err) {
      void warm.then(
        (w) => terminate(w.proc, { graceMs: 0 }),
        () => undefined,
      );
      throw err;
    } finally {
      release();
    }
  }

  async start(spec: EngineLaunch, onAdapter?: (pid: number) => void): Promise<StartedEngine> {
    const warm = this.warm;
    this.warm = undefined;
    const { proc, port, stdout } = await (warm ?? listen(this.dlv, spec.cwd));
    if (proc.child.pid !== undefined) onAdapter?.(proc.child.pid);
    try {
      const socket = net.connect(port, '127.0.0.1');
      socket.setNoDelay(true);
      const connected = await onceBounded(socket, 'connect', { timeoutMs: LISTEN_TIMEOUT_MS });
      if (connected.kind !== 'value') {
        socket.destroy();
        throw new DebugkitError('ENGINE_FAILED', `Delve did not accept a connection on port ${port} (${connected.kind === 'error' ? connected.error.message : connected.kind})`);
      }
      socket.on('error', () => undefined);
      const dap = new DapConnection(socket, socket, { name: 'Delve', timeoutMs: DAP_TIMEOUT_MS });
      const launch = { mode: 'exec', program: this.binary, args: spec.args, cwd: spec.cwd, env: spec.env, stopOnEntry: false };
      return { proc, dap, launch, programOutput: { stdout, stderr: proc.child.stderr! }, closeChannel: () => socket.destroy() };
    } catch (err) {
      await terminate(proc, { graceMs: 500 });
      throw err;
    }
  }

  /** Ends Delve if no run took it. */
  async dispose(): Promise<void> {
    const warm = this.warm;
    this.warm = undefined;
    if (warm)
      await warm.then(
        (w) => terminate(w.proc, { graceMs: 0 }),
        () => undefined,
      );
  }

  async configure(): Promise<void> {
    // Delve stops on an unrecovered panic and on a fatal error by itself, and has no exception filters.
  }

  /** "Process 1234 has exited with status 2": Delve's word for the program's end. */
  readOutput(category: string, output: string): ConsoleNotes {
    const exited = category === 'console' ? /^Process (\d+) has exited with status (-?\d+)/m.exec(output) : null;
    return exited ? { pid: Number(exited[1]), exitCode: Number(exited[2]) } : {};
  }

  /** Delve says how the program ended ("Process N has exited with status S") only when the client disconnects. */
  async settleEnd(dap: DapConnection): Promise<void> {
    await dap.request('disconnect', { terminateDebuggee: true }, { timeoutMs: 3000 }).catch(() => undefined);
  }

  /** The program's own frame: past the runtime's (runtime.gopanic, runtime.fatalpanic...), which Delve marks subtle. */
  exceptionFrame(frames: ReadonlyArray<{ presentationHint?: string }>): number {
    return Math.max(
      0,
      frames.findIndex((f) => f.presentationHint !== 'subtle'),
    );
  }

  /** Delve stops "as for an exception" where a breakpoint's condition cannot be evaluated: its text says so. */
  async conditionFailureAt(dap: DapConnection, threadId: number, stop: { description?: string; text?: string }): Promise<string | undefined> {
    const said = [stop.text, stop.description].map((t) => unquote(t ?? '')).find((t) => t.startsWith('error evaluating expression'));
    if (said !== undefined) return cut(said);
    const info = await dap.request('exceptionInfo', { threadId }).catch(() => undefined);
    const described = unquote(info?.description ?? '');
    return described.startsWith('error evaluating expression') ? cut(described) : undefined;
  }

  async exceptionError(dap: DapConnection, threadId: number, stop: { description?: string; text?: string }, stack: TracebackFrames): Promise<ErrorInfo> {
    const info = await dap.request('exceptionInfo', { threadId }).catch(() => undefined);
    const type = info?.exceptionId ?? stop.description ?? 'panic';
    const message = cut(unquote(info?.description ?? stop.text ?? ''));
    return { type, message, traceback: await goTraceback(type, message, threadId, stack) };
  }

  endError(exitCode: number, stderrTail: string): ErrorInfo | null {
    // A panic or fatal error Delve did not stop at (one in a program it had detached from) still prints Go's own report.
    const signal = /(?:^|\n)(SIG[A-Z0-9]+): ([^\n]*)/.exec(stderrTail);
    const at = Math.max(stderrTail.lastIndexOf('panic: '), stderrTail.lastIndexOf('fatal error: '), signal ? signal.index + (signal[0].startsWith('\n') ? 1 : 0) : -1);
    if (at >= 0 && (at === 0 || stderrTail[at - 1] === '\n')) {
      const report = stderrTail.slice(at).trimEnd();
      const head = report.split('\n', 1)[0]!;
      const colon = head.indexOf(': ');
      return {
        type: head.slice(0, colon),
        message: cut(head.slice(colon + 2)),
        traceback: report.length > SHOWN_CHARS ? `${report.slice(0, SHOWN_CHARS)}\n[... cut: ${report.length} characters in all; python_get_output shows the rest]` : report,
      };
    }
    return exitCode < 0 ? { type: 'ProgramKilled', message: `the program was killed (Delve reports exit status ${exitCode})`, traceback: null } : null;
  }
}

/** Builds running, and the builds waiting for one to end (in order). */
const BUILDS_AT_ONCE = Math.max(1, availableParallelism());
let building = 0;
const waitingBuilds: Array<() => void> = [];

/** Waits for a build slot (BUILDS_AT_ONCE), or the call's end; returns its release. */
async function buildSlot(signal?: AbortSignal): Promise<() => void> {
  while (building >= BUILDS_AT_ONCE) {
    signal?.throwIfAborted();
    await new Promise<void>((resolve, reject) => {
      const wake = () => {
        signal?.removeEventListener('abort', abort);
        resolve();
      };
      const abort = () => {
        waitingBuilds.splice(waitingBuilds.indexOf(wake), 1);
        reject(new DebugkitError('SESSION_CLOSED', 'the call ended while its Go build waited for another to finish'));
      };
      waitingBuilds.push(wake);
      signal?.addEventListener('abort', abort, { once: true });
    });
  }
  building++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    building--;
    waitingBuilds.shift()?.();
  };
}

/** Build directories by package directory: a package built again to the same file is linked again only when it changed. */
const buildDirs = new Map<string, string>();
const BUILD_DIRS = 256;

/**
 * The private directory (core/paths privateTempDir: it goes when the server exits) a package's
 * binary is built into. One per package, kept across sessions: `go build -o` leaves a binary that is
 * up to date as it is, where a new directory each time linked the program again (some 400 ms of a
 * start). A session runs its binary as it was when it started: a build for another session
 * replaces the file by renaming, never rewriting it in place.
 */
function buildDirOf(packageDir: string): string {
  let dir = buildDirs.get(packageDir);
  if (dir === undefined || !existsSync(dir)) {
    dir = privateTempDir('debugkit-go-');
    buildDirs.set(packageDir, dir);
    if (buildDirs.size > BUILD_DIRS) buildDirs.delete(buildDirs.keys().next().value!);
  }
  return dir;
}

/** Delve's DAP server, listening: its process, its port, and its stdout past the line that said where (the program's). */
interface Listening {
  proc: OwnedChild;
  port: number;
  stdout: PassThrough;
}

/** Starts `dlv dap` on a loopback port of its choosing (in `cwd`), once it says which. */
async function listen(dlv: string, cwd: string): Promise<Listening> {
  const proc = await spawnChild(dlv, ['dap', '--listen=127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'], cwd });
  try {
    const stdout = new PassThrough();
    return { proc, port: await listeningPort(proc, stdout), stdout };
  } catch (err) {
    await terminate(proc, { graceMs: 0 });
    throw err;
  }
}

/** Reads Delve's stdout up to "DAP server listening at: HOST:PORT"; what follows goes to `rest`. */
async function listeningPort(proc: OwnedChild, rest: PassThrough): Promise<number> {
  const stdout = proc.child.stdout!;
  const found = await awaitAnnouncement(proc, stdout, /DAP server listening at: [^\n]*:(\d+)\r?\n/, 'Delve', LISTEN_TIMEOUT_MS, (_, after) => {
    rest.write(after);
    stdout.pipe(rest);
  });
  return Number(found[1]);
}

/**
 * Delve quotes a panic's value as Go would print a string ("\"assignment to entry in nil map\""),
 * and cuts a long one (its string load limit) without the closing quote: said so (attack 18ap i2-4).
 */
function unquote(text: string): string {
  if (!text.startsWith('"')) return text;
  if (/^".*"$/s.test(text)) {
    try {
      return JSON.parse(text) as string;
    } catch {
      return text.slice(1, -1);
    }
  }
  return `${text.slice(1)}... [cut by Delve: the program's stderr (python_get_output) has the whole message once the program ends]`;
}

function cut(message: string): string {
  return message.length <= SHOWN_CHARS ? message : `${message.slice(0, SHOWN_CHARS)}... [cut: ${message.length} characters in all]`;
}

/**
 * The panic as Go reports it: `panic: MESSAGE`, then the goroutine's frames innermost first, each
 * with its file:line and source line; the runtime's own frames above the program's are left out.
 */
async function goTraceback(type: string, message: string, goroutine: number, stack: TracebackFrames): Promise<string> {
  const frames = stack.frames;
  const own = Math.max(
    0,
    frames.findIndex((f) => f.presentationHint !== 'subtle'),
  );
  const parts = [`${type}: ${message}`, '', `goroutine ${goroutine} [running]:`];
  for (const frame of frames.slice(own)) {
    const file = frame.source?.path ?? '<unknown>';
    parts.push(frame.name, `\t${file}:${frame.line}`);
    const code = (await sourceLine(file, frame.line))?.trim();
    if (code) parts.push(`\t\t${code}`);
  }
  if (stack.depth > frames.length) parts.push(`[... ${stack.depth - frames.length} outer frames not shown: python_inspect with frame ${frames.length} or more shows them ...]`);
  const text = parts.join('\n');
  return text.length <= SHOWN_CHARS ? text : `${text.slice(0, SHOWN_CHARS)}\n[... cut: ${text.length} characters in all]`;
}
