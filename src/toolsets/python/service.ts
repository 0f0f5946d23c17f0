import { closeSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../../config.js';
import { DebugkitError } from '../../core/errors.js';
import { openContained, openContainedHandle, type HandedOpen } from '../../core/paths.js';
import { COUNT_READ_BYTES, countLines } from '../../core/source-lines.js';
import { SessionRegistry } from '../../core/sessions.js';
import type { Logger } from '../../mcp/log.js';
import type { BreakpointSpec } from './breakpoints.js';
import type { Engine } from './engine.js';
import { DebugpyEngine } from './engines/debugpy.js';
import { DelveEngine } from './engines/delve.js';
import { NodeEngine } from './engines/node.js';
import { resolveInterpreter } from './interpreter.js';
import { PythonSession, type RunOptions, type RunOutcome } from './session.js';
import type { DebugReplay } from '../mocks/under.js';
import type { MocksOption } from '../mocks/option.js';

export interface StartRequest {
  entry: string;
  args?: string[];
  env?: Record<string, string>;
  pythonPath?: string;
  stopOnRaisedExceptions?: boolean;
  idleTimeout?: number;
  /** Run the program under this mock set (issue 22: debug under replayed dependencies). */
  mocks?: MocksOption;
  /** Attach to the `node --inspect` listening on this loopback port rather than start the entry (see NodeEngine.attachTo). */
  attach?: number;
}

const DEFAULT_IDLE_MS = 30 * 60 * 1000;

/** What the MCP tools and the REST routes share: validation, sessions, and path handling. */
export class PythonService {
  readonly registry: SessionRegistry<PythonSession>;

  /** `expired`: told of each session that ended idle (see ToolsetEnv.sessionExpired). */
  constructor(
    readonly config: Config,
    private readonly log: Logger,
    expired?: (owner: string, id: string) => void,
  ) {
    this.registry = new SessionRegistry<PythonSession>({
      kind: 'python session',
      maxSessions: config.maxSessions,
      maxSessionsTotal: config.maxSessionsTotal,
      maxSessionsPerKey: config.maxSessionsPerKey,
      onExpire: (info) => {
        log.info(`python session ${info.id} closed after ${info.timeoutMs / 1000} s idle`);
        expired?.(info.owner, info.id);
      },
    });
  }

  /** Starts a session for `owner`, counted against the per-key cap of `key` (see core/sessions clientKey). */
  async start(owner: string, req: StartRequest, key?: string, signal?: AbortSignal): Promise<{ sessionId: string }> {
    const language = languageOf(req.entry);
    if (req.pythonPath !== undefined && language !== 'python') {
      const what = language === 'go' ? 'a Go program (built with go, run under Delve)' : "a Node.js program (run by debugkit's node under its inspector)";
      throw new DebugkitError('INVALID_ARGUMENT', `pythonPath is for Python entries: ${req.entry} is ${what}`);
    }
    if (req.pythonPath !== undefined && !path.isAbsolute(req.pythonPath)) {
      throw new DebugkitError('INVALID_ARGUMENT', `pythonPath must be an absolute path to a Python interpreter, not ${req.pythonPath}`);
    }
    if (req.attach !== undefined) {
      if (language !== 'node') throw new DebugkitError('INVALID_ARGUMENT', `attach is for JavaScript and TypeScript programs (a node --inspect port): ${req.entry} is not one`);
      const given = (['args', 'env', 'pythonPath', 'mocks'] as const).filter((name) => req[name] !== undefined);
      if (given.length > 0) throw new DebugkitError('INVALID_ARGUMENT', `${given.join(', ')} ${given.length > 1 ? 'are' : 'is'} for programs debugkit starts, not for one it attaches to`);
      await NodeEngine.attachable(req.attach, this.config.debugger.allowAttach);
    }
    const timeoutMs = req.idleTimeout !== undefined ? req.idleTimeout * 1000 : DEFAULT_IDLE_MS;
    // The entry is opened here and stays open with the session: a Python program runs the opened
    // file (see the entry hook in boot/sitecustomize.py), never what the path names when it starts.
    const program = this.openEntry(req.entry);
    let session: PythonSession | undefined;
    let replay: DebugReplay | undefined;
    let engine: Engine | undefined;
    try {
      if (language === 'python') engine = new DebugpyEngine(await resolveInterpreter(req.pythonPath, signal));
      else if (language === 'node') engine = new NodeEngine(this.root(), req.attach !== undefined ? { port: req.attach, rule: this.config.debugger.allowAttach } : undefined);
      if (req.mocks) {
        // The replay engine loads with the first session that asks for it.
        const { DebugReplay } = await import('../mocks/under.js');
        replay = await DebugReplay.start({
          root: this.root(),
          option: req.mocks,
          ...(key !== undefined ? { owner: key } : {}),
          ownPorts: [this.config.http.port],
          // debugpy's adapter listens on loopback for the program it runs: those connections are the debugger's own.
          debuggerPids: () => (session?.debuggerPid !== undefined ? [session.debuggerPid] : []),
          warn: (message) => this.log.warn(`python session under mock set '${req.mocks!.set}': ${message}`),
        });
      }
      const info = await this.registry.create(
        owner,
        timeoutMs,
        async () => {
          // A Go package is built once the session's slot is reserved: the key's and the server's session caps bound builds (attack 18ap i2-1).
          engine ??= await DelveEngine.build(this.root(), program, signal);
          session = new PythonSession({
            root: this.root(),
            program,
            args: req.args ?? [],
            env: req.env ?? {},
            engine: engine!,
            stopOnRaised: req.stopOnRaisedExceptions ?? false,
            ...(replay ? { replay } : {}),
          });
          return session;
        },
        { key, ...(signal ? { signal } : {}) },
      );
      return { sessionId: info.id };
    } finally {
      // A session that was made owns the entry (and the replay) and closes them when it ends.
      if (!session) {
        program.close();
        await replay?.close();
        await engine?.dispose?.();
      }
    }
  }

  /** Validates file and line (inside the root, a file, a line that exists) and runs to it. */
  runTo(owner: string, id: string, file: string, bp: BreakpointSpec, options: RunOptions): Promise<RunOutcome> {
    return this.registry.use(owner, id, async (session) => {
      const absolute = await this.breakpointTarget(file, [bp.line], options.signal);
      return this.relativize(await session.runToBreakpoint(absolute, bp, options));
    });
  }

  use<T>(owner: string, id: string, fn: (session: PythonSession) => Promise<T>): Promise<T> {
    return this.registry.use(owner, id, fn);
  }

  async end(owner: string, id: string): Promise<{ ended: true }> {
    await this.registry.close(owner, id, 'ended by the client');
    return { ended: true };
  }

  /**
   * Resolves a breakpoint file (contained, a file) and checks each line exists; returns its absolute path. The lines are
   * counted in the file that was checked (read through its descriptor), a chunk at a time, only as far as the last line
   * asked for and over at most COUNT_READ_BYTES, until the call ends (`signal`): read and split whole, a 16 MiB file of
   * newlines held the loop 3.4 s a call (attack 18ao b2-1); a sparse 1 TiB file was read on for an hour (18ao d2-3).
   */
  async breakpointTarget(file: string, lines: number[], signal?: AbortSignal): Promise<string> {
    const opened = openContained(this.root(), file, { what: 'file' });
    try {
      if (!opened.stats.isFile()) throw notAFile('file', file);
      const furthest = Math.max(0, ...lines);
      const count = await countLines(opened.fd, opened.stats.size, furthest, signal ? { signal } : {});
      if (count.bounded) {
        throw new DebugkitError(
          'INVALID_ARGUMENT',
          `line ${furthest} is past the first ${COUNT_READ_BYTES / 1024 / 1024} MiB of ${file}, which hold ${count.lines} lines: debugkit reads no further into a source file`,
        );
      }
      if (count.lines < furthest) throw new DebugkitError('INVALID_ARGUMENT', `line ${furthest} is past the end of ${file}, which has ${count.lines} lines`);
    } finally {
      closeSync(opened.fd);
    }
    return opened.real;
  }

  /** Stack paths inside the workspace are shown relative to it: shorter, and what the agent passed. */
  relativize(outcome: RunOutcome): RunOutcome {
    if (outcome.stack) outcome.stack = outcome.stack.map((f) => ({ ...f, file: this.shortPath(f.file) }));
    return outcome;
  }

  private shortPath(file: string): string {
    const rel = path.relative(this.root(), file);
    return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : file;
  }

  /** The entry script, checked and opened inside the root, named for debugpy by its descriptor. */
  private openEntry(userPath: string): HandedOpen {
    const entry = openContainedHandle(this.root(), userPath, { what: 'entry' });
    if (entry.stats.isFile()) return entry;
    entry.close();
    throw notAFile('entry', userPath);
  }

  private root(): string {
    return this.config.root;
  }
}

/** The language of an entry, by its extension: Go for `.go`, Node.js for JavaScript and TypeScript, Python for anything else (scripts without one too). */
export function languageOf(entry: string): 'go' | 'node' | 'python' {
  const lower = entry.toLowerCase();
  if (lower.endsWith('.go')) return 'go';
  return /\.(?:[cm]?[jt]s|[jt]sx)$/.test(lower) ? 'node' : 'python';
}

function notAFile(what: string, userPath: string): DebugkitError {
  return new DebugkitError('INVALID_ARGUMENT', `${what} ${userPath} is not a file`);
}
