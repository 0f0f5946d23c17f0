import { closeSync, fstatSync, readSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import { constants } from 'node:os';
import { PassThrough } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';
import vm from 'node:vm';
import { CdpConnection } from '../../../core/cdp.js';
import { DapConnection } from '../../../core/dap/connection.js';
import { DebugkitError } from '../../../core/errors.js';
import { openContained } from '../../../core/paths.js';
import { awaitAnnouncement, runsForDebugkit, spawnChild, terminate, type OwnedChild } from '../../../core/process.js';
import { connectionPeers, loopbackListeners } from '../../../core/sockets.js';
import { waitBounded } from '../../../core/wait.js';
import { attachRefusal, type AttachRule } from '../../../core/attach.js';
import { MAX_MAP_BYTES } from '../../../core/sourcemap.js';
import { cutMessage, MAX_TYPE_CHARS, TRACEBACK_MESSAGE_CHARS } from '../ends.js';
import type { ConditionFailure, Engine, EngineLaunch, ErrorInfo, StartedEngine, TracebackFrames } from '../engine.js';
import { CONDITION_FAILED, NodeBridge } from './node-bridge.js';

const DAP_TIMEOUT_MS = 30_000;
/** How long node may take to say where its inspector listens (tsx's loader starts first). */
const LISTEN_TIMEOUT_MS = 15_000;
/** Of an error's stack, what an answer shows. */
const SHOWN_CHARS = 4000;
/** Entries node runs through tsx (TypeScript, JSX): their breakpoints and stops are by their own lines, through tsx's source maps. */
const TRANSFORMED = /\.(?:[cm]?tsx?|jsx)$/i;
/** What node's inspector prints on the program's stderr about itself: not the program's output. */
const INSPECTOR_LINES =
  /^(?:Debugger listening on ws:\/\/.*|For help, see: https:\/\/nodejs\.org\/en\/docs\/inspector|Debugger attached\.|Waiting for the debugger to disconnect\.\.\.|Debugger ending on ws:\/\/\S+)\r?$/;

/**
 * The inspector's lines node may write at the end of one the program left without a newline: also
 * "Debugger ending on ws://...", which node writes when the program ends while the debugger is
 * still connected (a loaded machine: CI saw it glued to the program's last line).
 */
const INSPECTOR_TAIL = /(?:Debugger attached\.|Waiting for the debugger to disconnect\.\.\.|Debugger ending on ws:\/\/[\w.:[\]/-]+)\r?$/;

/** boot/node-hook.cjs: stops before a CommonJS module with a source map is compiled (see it for why). */
const HOOK = fileURLToPath(new URL('../boot/node-hook.cjs', import.meta.url));

/** tsx's loader, which debugkit depends on: TypeScript entries run through it. */
function tsxLoader(): string {
  try {
    return pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  } catch {
    throw new DebugkitError('ENGINE_MISSING', 'running a TypeScript program needs tsx, a dependency of debugkit: run "npm install" in debugkit\'s directory');
  }
}

/**
 * JavaScript and TypeScript through the V8 inspector that node ships: the program runs under
 * `node --inspect-brk=127.0.0.1:0` (the node that runs debugkit), TypeScript through tsx, and
 * debugkit's own adapter (node-bridge.ts) speaks DAP to the session and CDP to node.
 */
export class NodeEngine implements Engine {
  readonly name = 'Node.js';
  readonly language = 'JavaScript';
  readonly exitDecidesError = true;

  /** `attach`: the program is not started but attached to, through its inspector on this loopback port (see attachTo). */
  constructor(
    private readonly root: string,
    private readonly attach?: { port: number; rule: AttachRule },
  ) {}

  async start(spec: EngineLaunch): Promise<StartedEngine> {
    if (this.attach) return this.attachTo(this.attach.port, this.attach.rule);
    const { program } = spec;
    const transformed = TRANSFORMED.test(program.real);
    // node runs the opened entry (its descriptor's path), never the workspace path a writer could have swapped since it was
    // checked; node takes the main module's real path from it, so __filename, imports and stops name the real file.
    // The inspector's address (and the secret id in it) is said only on the program's stderr, which debugkit reads:
    // not on its HTTP /json/list, where any local process could read it and take the program over.
    const args = ['--inspect-brk=127.0.0.1:0', '--inspect-publish-uid=stderr', '--require', HOOK, ...(transformed ? ['--import', tsxLoader()] : []), program.path, ...spec.args];
    const proc = await spawnChild(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: spec.cwd, env: { ...process.env, ...spec.env } });
    try {
      const stderr = new PassThrough();
      const url = await inspectorUrl(proc, stderr);
      const cdp = await CdpConnection.connect(url, LISTEN_TIMEOUT_MS);
      const bridge = new NodeBridge({ cdp, pid: proc.child.pid!, exited: proc.exited, root: this.root, hookUrl: pathToFileURL(HOOK).href, readMapFile: (file) => this.readMapFile(file) });
      await bridge.prepare();
      const dap = new DapConnection(bridge.toClient, bridge.fromClient, { name: 'Node.js', timeoutMs: DAP_TIMEOUT_MS });
      return {
        proc,
        dap,
        launch: {},
        programOutput: { stdout: proc.child.stdout!, stderr },
        // The adapter lives in debugkit: the program's end is no adapter's death.
        adapterExited: new Promise(() => undefined),
        closeChannel: () => cdp.close(),
      };
    } catch (err) {
      await terminate(proc, { graceMs: 0 });
      throw err;
    }
  }

  /**
   * The process a session may attach to on 127.0.0.1:PORT, and its inspector's URL; or why not (checked when the session
   * is started, so the agent hears at once, and again when it attaches).
   */
  static async attachable(port: number, rule: AttachRule): Promise<{ pid: number; url: string }> {
    const pid = NodeEngine.allowed(port, await loopbackListeners(port), rule, 'listens on');
    notAttached(pid);
    return { pid, url: await inspectorTarget(port) };
  }

  /**
   * The one process `holders` names, if a session may attach to it: not another user's (unless the rule says any), not
   * debugkit, not one debugkit runs for a session; and one, seen (another user's socket hides its holder).
   */
  private static allowed(port: number, holders: { pids: number[]; unseen: number }, rule: AttachRule, what: string): number {
    const [pid, ...more] = holders.pids;
    if (pid === undefined && holders.unseen === 0) throw new DebugkitError('INVALID_ARGUMENT', `nothing ${what} 127.0.0.1:${port}: start the program with node --inspect=127.0.0.1:${port}`);
    if (pid === undefined || more.length > 0 || holders.unseen > 0) {
      const who = holders.unseen > 0 ? "a process debugkit cannot see (another user's)" : `processes ${holders.pids.join(', ')}`;
      throw new DebugkitError('INVALID_ARGUMENT', `${who} ${what} 127.0.0.1:${port}: debugkit attaches only to one process of its own user it can see`);
    }
    const refused = attachRefusal(pid, rule, 'start the program through python_start_session without attach instead');
    if (refused) throw new DebugkitError(refused.reason === 'not-found' ? 'NOT_FOUND' : 'INVALID_ARGUMENT', refused.message);
    if (runsForDebugkit(pid)) throw new DebugkitError('INVALID_ARGUMENT', `process ${pid} on port ${port} runs for a debugkit session: it can be debugged only through that session`);
    return pid;
  }

  /**
   * Attaches to a running `node --inspect` (operators allow it with --allow-attach; keys need
   * python:attach): the process listening on 127.0.0.1:PORT, if the attach rule allows it and it is
   * no process debugkit runs for a session (another key's program is never reached this way), then
   * the inspector target it publishes on /json/list. Ending the session detaches; the program runs on.
   */
  private async attachTo(port: number, rule: AttachRule): Promise<StartedEngine> {
    const { pid, url } = await NodeEngine.attachable(port, rule);
    const cdp = await CdpConnection.connect(url, LISTEN_TIMEOUT_MS);
    // What the connection reached is what is checked, and must be what was checked: a process listening where 127.0.0.1 is
    // not reached (::1) stood in for another user's or another key's inspector on 127.0.0.1 (attack m2-1).
    try {
      const peer = NodeEngine.allowed(port, await connectionPeers(cdp.localPort, port), rule, 'answers on');
      if (peer !== pid) throw new DebugkitError('INVALID_ARGUMENT', `process ${peer} answers on 127.0.0.1:${port}, not process ${pid} that was checked: start again`);
      notAttached(pid);
    } catch (err) {
      cdp.close();
      throw err;
    }
    ATTACHED.add(pid);
    void cdp.closed.then(() => ATTACHED.delete(pid));
    const bridge = new NodeBridge({ cdp, pid, root: this.root, hookUrl: pathToFileURL(HOOK).href, readMapFile: (file) => this.readMapFile(file) });
    try {
      await bridge.prepare();
    } catch (err) {
      cdp.close();
      throw err;
    }
    const dap = new DapConnection(bridge.toClient, bridge.fromClient, { name: 'Node.js', timeoutMs: DAP_TIMEOUT_MS });
    return { dap, launch: {}, attached: true, adapterExited: new Promise(() => undefined), closeChannel: () => cdp.close() };
  }

  async configure(dap: DapConnection, spec: EngineLaunch): Promise<void> {
    await dap.request('setExceptionBreakpoints', { filters: spec.stopOnRaised ? ['all'] : ['uncaught'] });
  }

  /** A source map file a program's script names: read only inside the workspace, as a file, at most MAX_MAP_BYTES. */
  private readMapFile(file: string): string | undefined {
    let fd: number | undefined;
    try {
      const opened = openContained(this.root, file, { what: 'source map', type: 'file' });
      fd = opened.fd;
      const size = fstatSync(fd).size;
      if (size > MAX_MAP_BYTES) return undefined;
      const buffer = Buffer.alloc(size);
      let read = 0;
      while (read < size) {
        const got = readSync(fd, buffer, read, size - read, read);
        if (got === 0) break;
        read += got;
      }
      return buffer.subarray(0, read).toString('utf8');
    } catch {
      return undefined;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }

  readOutput(category: string, output: string): { conditionFailure?: ConditionFailure } {
    if (category !== 'important' || !output.startsWith(CONDITION_FAILED)) return {};
    try {
      return { conditionFailure: JSON.parse(output.slice(CONDITION_FAILED.length)) as ConditionFailure };
    } catch {
      return {};
    }
  }

  /** Conditions that do not parse as JavaScript expressions (parsed here, never run). */
  async conditionErrors(conditions: string[]): Promise<Map<string, string>> {
    const errors = new Map<string, string>();
    for (const condition of conditions) {
      try {
        new vm.Script(`(${condition}\n)`, { filename: 'condition' });
      } catch (err) {
        errors.set(condition, err instanceof Error ? `${err.name}: ${err.message}` : String(err));
      }
    }
    return errors;
  }

  async threadName(dap: DapConnection, threadId: number): Promise<string | undefined> {
    if (threadId === 1) return undefined;
    return (await dap.request('threads')).threads.find((t) => t.id === threadId)?.name;
  }

  async exceptionError(dap: DapConnection, threadId: number, _stop: unknown, stack: TracebackFrames): Promise<ErrorInfo> {
    const info = await dap.request('exceptionInfo', { threadId }).catch(() => undefined);
    const type = cutMessage(info?.details?.typeName ?? info?.exceptionId ?? 'Error', MAX_TYPE_CHARS);
    const message = info?.details?.message ?? info?.description ?? '';
    return { type, message: cutMessage(message), traceback: jsTraceback(type, cutMessage(message, TRACEBACK_MESSAGE_CHARS), stack) };
  }

  /** node prints an uncaught error it did not stop at (or a second one) as `Type: message` then its `at` lines. */
  endError(exitCode: number, stderrTail: string): ErrorInfo | null {
    const lines = stderrTail.split('\n');
    for (let i = lines.length - 1; i >= 0; i--) {
      if (!/^\s+at /.test(lines[i + 1] ?? '')) continue;
      const head = /^(\w*(?:Error|Exception)|Uncaught \w+|\w+): (.*)$/.exec(lines[i]!);
      if (!head) continue;
      let end = i + 1;
      while (end < lines.length && /^\s+at /.test(lines[end]!)) end++;
      const report = lines.slice(i, end).join('\n');
      return { type: head[1]!, message: cutMessage(head[2]!), traceback: report.length > SHOWN_CHARS ? `${report.slice(0, SHOWN_CHARS)}\n[... cut: ${report.length} characters in all]` : report };
    }
    // Any other uncaught value (a string thrown, a message on several lines): node prints the throwing line, a caret, a blank
    // line, then the value, and its version last (attack 18aq k2-4).
    const trailer = stderrTail.lastIndexOf('\nNode.js v');
    let caretEnd = -1;
    for (const m of stderrTail.slice(0, trailer < 0 ? undefined : trailer).matchAll(/\n *\^+\n\n?/g)) caretEnd = m.index + m[0].length;
    if (exitCode === 1 && trailer >= 0 && caretEnd >= 0) {
      const report = stderrTail.slice(caretEnd, trailer).trim();
      const at = report.search(/\n\s+at /);
      const head = (at < 0 ? report : report.slice(0, at)).replace(/\n\(Use `node --trace-uncaught[^\n]*\)$/, '');
      const named = /^([\w$.-]+(?: [\w$.-]+)?): ([^]*)$/.exec(head);
      return {
        type: cutMessage(named?.[1] ?? 'Uncaught', MAX_TYPE_CHARS),
        message: cutMessage(named?.[2] ?? head),
        traceback: report.length > SHOWN_CHARS ? `${report.slice(0, SHOWN_CHARS)}\n[... cut: ${report.length} characters in all]` : report,
      };
    }
    // The bridge reports a program killed by signal N as exit status 128 + N, as a shell does.
    const signal = Object.entries(constants.signals).find(([, n]) => n === exitCode - 128)?.[0];
    return signal ? { type: 'ProgramKilled', message: `the program was killed by ${signal} (exit status ${exitCode})`, traceback: null } : null;
  }
}

/** A JavaScript stack as node prints one: `Type: message`, then `at name (file:line)` innermost first, async callers marked. */
function jsTraceback(type: string, message: string, stack: TracebackFrames): string {
  const parts = [message ? `${type}: ${message}` : type];
  for (const frame of stack.frames) parts.push(`    at ${frame.name} (${frame.source?.path ?? '<unknown>'}:${frame.line})`);
  if (stack.depth > stack.frames.length) parts.push(`    [... ${stack.depth - stack.frames.length} outer frames not shown: python_inspect with frame ${stack.frames.length} or more shows them ...]`);
  const text = parts.join('\n');
  return text.length <= SHOWN_CHARS ? text : `${text.slice(0, SHOWN_CHARS)}\n[... cut: ${text.length} characters in all]`;
}

/** The starts of the inspector's own lines on stderr (the first goes on with its address, under 200 characters). */
const INSPECTOR_STARTS = [
  'Debugger listening on ws://',
  'For help, see: https://nodejs.org/en/docs/inspector',
  'Debugger attached.',
  'Waiting for the debugger to disconnect...',
  'Debugger ending on ws://',
];

/** Whether an unfinished stderr line can still turn out to be one of the inspector's. */
export function mayBeInspectorLine(partial: string): boolean {
  return partial.length < 200 && INSPECTOR_STARTS.some((start) => start.startsWith(partial) || partial.startsWith(start));
}

/**
 * node's stderr with the inspector's own lines left out: each chunk in, what is the program's out. A
 * line still open is kept back only while it can still become one of the inspector's.
 */
export function inspectorFilter(): { push(chunk: string): string; end(): string } {
  let partial = '';
  return {
    push(chunk: string): string {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      let out = '';
      for (const line of lines) {
        if (INSPECTOR_LINES.test(line)) continue;
        // node writes its line where the program's output stands, so after a line the program left open it is that line's end.
        const glued = INSPECTOR_TAIL.exec(line);
        out += glued ? line.slice(0, glued.index) : `${line}\n`;
      }
      // A line still open that cannot become one of the inspector's goes on now (a prompt, or 20 MB without a newline: kept
      // back and split again with each chunk, that held the loop 38 s, attack 18aq j2-5).
      if (partial && !mayBeInspectorLine(partial)) {
        out += partial;
        partial = '';
      }
      return out;
    },
    end(): string {
      const left = partial;
      partial = '';
      return left;
    },
  };
}

/**
 * Reads node's stderr up to "Debugger listening on ws://..." and returns that URL; from then on the
 * program's stderr goes to `rest`, without the inspector's own lines.
 */
async function inspectorUrl(proc: OwnedChild, rest: PassThrough): Promise<string> {
  const stderr = proc.child.stderr!;
  const filter = inspectorFilter();
  const forward = (chunk: string) => {
    const out = filter.push(chunk);
    if (out) rest.write(out);
  };
  const found = await awaitAnnouncement(proc, stderr, /Debugger listening on (ws:\/\/\S+)\r?\n/, "node's inspector", LISTEN_TIMEOUT_MS, (_, after) => {
    forward(after);
    stderr.on('data', (more: Buffer) => forward(more.toString()));
    stderr.on('end', () => {
      const left = filter.end();
      if (left) rest.write(left);
      rest.end();
    });
  });
  return found[1]!;
}

/** The processes sessions of this server are attached to (one session each). */
const ATTACHED = new Set<number>();

/** Refuses a second session on a process one already debugs (it took the first's pauses for its own, attack o2-2). */
function notAttached(pid: number): void {
  if (ATTACHED.has(pid)) throw new DebugkitError('SESSION_BUSY', `process ${pid} is being debugged by another debugkit session: end that one first`);
}

/** The most of /json/list read from a port being attached to. */
const MAX_LIST_BYTES = 64 * 1024;

/**
 * The WebSocket URL of the inspector target a `node --inspect` publishes on 127.0.0.1:PORT's
 * /json/list (bounded in time and size). The URL is made here from the target's id, on the same
 * address and port: a listener cannot send debugkit to another inspector.
 */
async function inspectorTarget(port: number): Promise<string> {
  const notInspector = (why: string) =>
    new DebugkitError('INVALID_ARGUMENT', `127.0.0.1:${port} is not a Node.js inspector debugkit can attach to (${why}): start the program with node --inspect=127.0.0.1:${port}`);
  const body = await waitBounded<string | Error>(
    (settle) => {
      const request = http.get({ host: '127.0.0.1', port, path: '/json/list', headers: { host: `127.0.0.1:${port}` } }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          text += chunk;
          if (text.length > MAX_LIST_BYTES) {
            response.destroy();
            settle(new Error(`its /json/list is over ${MAX_LIST_BYTES / 1024} KiB`));
          }
        });
        response.on('end', () => settle(response.statusCode === 200 ? text : new Error(`its /json/list answered HTTP ${response.statusCode}`)));
        response.on('error', (err) => settle(err));
      });
      request.on('error', (err) => settle(err));
      return () => request.destroy();
    },
    { timeoutMs: LISTEN_TIMEOUT_MS },
  );
  if (body.kind !== 'value') throw notInspector(`no answer to /json/list within ${LISTEN_TIMEOUT_MS / 1000} s`);
  if (body.value instanceof Error) throw notInspector(body.value.message);
  let targets: unknown;
  try {
    targets = JSON.parse(body.value);
  } catch {
    throw notInspector('its /json/list is not JSON');
  }
  const target = Array.isArray(targets) ? (targets as Array<{ id?: unknown; type?: unknown }>).find((t) => t.type === 'node' && typeof t.id === 'string' && /^[0-9a-f-]{36}$/.test(t.id)) : undefined;
  if (!target) throw notInspector('it publishes no node target: a program debugkit runs publishes none, and one run with --inspect-publish-uid=stderr neither');
  return `ws://127.0.0.1:${port}/${target.id as string}`;
}
