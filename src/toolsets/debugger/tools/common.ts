import type { CallToolResult } from '@modelcontextprotocol/server';
import { z, type ZodRawShape } from 'zod';
import type { Config } from '../../../config.js';
import { DebugkitError, SessionNotFoundError, describeError } from '../../../core/errors.js';
import type { SessionRegistry } from '../../../core/sessions.js';
import type { Logger } from '../../../mcp/log.js';
import { rpcErrorResult } from '../../../mcp/rpc-hooks.js';
import type { ResultFormat } from '../../../mcp/result-formats.js';
import type { CallContext, ToolSpec } from '../../../mcp/tools.js';
import type { DebuggerControl } from '../control.js';
import { DebuggerRpcError, notAttached } from '../errors.js';
import type { DebugSession } from '../session.js';
import type { MiTuple } from '../../../core/mi/parser.js';
import { crashSite, renderStop, type CompactStop } from '../stop.js';
import { str } from '../../../core/mi/parser.js';
import { recordCrash } from '../similar/record.js';

/** How long a debugger session may stay without calls before it ends with its gdb, by default (seconds). */
export const DEFAULT_IDLE_SECONDS = 1800;

/** The refusal of a session_id the client already uses, or is launching or attaching right now. */
export function sessionTaken(id: string, session: DebugSession | undefined): string {
  return session
    ? `session "${id}" already has process ${session.pid}: call debugger_detach {session_id: "${id}"} first, or pass another session_id`
    : `session "${id}" is starting (another debugger_launch or debugger_attach of it is under way): wait for it and call debugger_detach {session_id: "${id}"}, or pass another session_id`;
}

/** The caller's session `id`, or undefined (`required`: -32005, naming why it ended if it did). */
export function findSession(ctx: DebuggerContext, call: CallContext, id: string, required: true): DebugSession;
export function findSession(ctx: DebuggerContext, call: CallContext, id: string, required?: boolean): DebugSession | undefined;
export function findSession(ctx: DebuggerContext, call: CallContext, id: string, required = false): DebugSession | undefined {
  try {
    return ctx.sessions.get(call.client.owner, id);
  } catch (err) {
    if (!(err instanceof SessionNotFoundError)) throw err;
    if (required) throw notAttached(id, err.endedBecause);
    return undefined;
  }
}

export interface DebuggerContext {
  /** The debugger's sessions, in the one registry every toolset uses: keyed by owner and session_id. */
  sessions: SessionRegistry<DebugSession>;
  config: Config;
  control: DebuggerControl;
  log: Logger;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type DebuggerTool = (ctx: DebuggerContext) => ToolSpec<any, any> & { contractName?: string };

type AnySpec = ToolSpec<any, any> & { contractName?: string }; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Infers a tool's argument and result types from its schemas. */
export function defineTool<I extends ZodRawShape, O extends ZodRawShape>(spec: ToolSpec<I, O> & { contractName?: string }): AnySpec {
  return spec as unknown as AnySpec;
}

const SESSION_NAME = /^[A-Za-z0-9._-]{1,64}$/;
const SESSION_RULE = 'session_id: 1 to 64 letters, digits, ".", "_" or "-"';

/**
 * The debuggee a call is about. Told in full once, where a debuggee is named (`newSessionId`, on
 * launch and attach); here by its name and default alone, as 17 tools carry it. Its rule is checked all the same
 * (a refinement, not shown in the schema).
 */
export const sessionId = z
  .string()
  .refine((v) => SESSION_NAME.test(v), SESSION_RULE)
  .default('default');

/** The name a launch or attach gives its debuggee. */
export const newSessionId = z.string().regex(SESSION_NAME, SESSION_RULE).default('default').describe('a name for this debuggee (default "default"); a client may drive several');

/** A frame of the stopped thread, numbered as debugger_get_stack_trace numbers them. */
export const frameNumber = z.number().int().min(0).max(100_000).default(0).describe('0 innermost, as in debugger_get_stack_trace');

/** MI options naming `frame` of the current thread; a frame past the stack is a bad argument naming its depth. */
export async function frameOptions(session: DebugSession, frame: number): Promise<string> {
  if (session.engine.running) throw new DebugkitError('INVALID_ARGUMENT', 'the target is running: call debugger_interrupt first');
  const thread = str((await session.engine.mi_('-thread-info'))['current-thread-id']);
  if (!thread) throw new DebugkitError('INVALID_ARGUMENT', 'the program has no stopped thread: launch it or attach first');
  const depth = Number(str((await session.engine.mi_(`-stack-info-depth --thread ${thread} ${frame + 1}`)).depth) ?? 0);
  if (frame >= depth) throw new DebugkitError('INVALID_ARGUMENT', `frame ${frame} is past the stack: it has ${depth} frame${depth === 1 ? '' : 's'} (0 to ${depth - 1})`);
  return `--thread ${thread} --frame ${frame}`;
}

export const waitSeconds = z.number().min(0).max(300).default(10).describe('seconds to wait for a stop');

const frameShape = z.object({ function: z.string(), file: z.string().optional(), line: z.number().optional(), addr: z.string().optional() });
export const stopShape = {
  state: z.enum(['stopped', 'running', 'exited']),
  position: z.string().optional().describe('stable id of this position, for debugger_step_backward {to} and debugger_export_trace'),
  reason: z.string().optional(),
  function: z.string().optional(),
  file: z.string().optional(),
  line: z.number().optional(),
  source: z.array(z.string()).optional(),
  frames: z.array(frameShape).optional(),
  user_frame: frameShape.extend({ level: z.number(), crashed_in: z.string() }).optional(),
  changed: z.record(z.string(), z.string()).optional().describe('locals whose value changed since the previous stop'),
  truncated: z.string().optional(),
  note: z.string().optional(),
  // Under a mock set: {set, replayed, missed, misses?} since the last stop (mocks/option.ts ReplayAtStop). Loose in the
  // listed schema: seven tools answer a stop, and tools/list carries each output schema whole.
  mocks: z.unknown().optional(),
};

/** Runs an exec command on the session and answers the compact stop (crashes get a signature). */
export async function execToStop(ctx: DebuggerContext, session: DebugSession, command: string, wait: number, call: CallContext, note?: string): Promise<CompactStop> {
  const engine = session.engine;
  if (engine.exited) throw new DebugkitError('INVALID_ARGUMENT', `the program has exited; step back (debugger_step_backward) or start it again with debugger_launch`);
  const deadline = Date.now() + wait * 1000;
  if (!command.includes('--reverse')) {
    const off = await session.stepOffBreakpointWhileReplaying();
    // A step that the step off the breakpoint already completed (a one-instruction line) is done.
    const [funcBefore, lineBefore] = frameLine(off?.before);
    const [funcAfter, lineAfter] = frameLine(off?.stopped);
    if (off?.stopped && /^-exec-(next|step)$/.test(command) && funcAfter === funcBefore && lineAfter !== lineBefore) {
      return finishStop(ctx, session, off.stopped, engine.takeOutput(), note);
    }
  }
  let { stopped, output } = await engine.exec(command, wait * 1000, call.signal);
  const endOfReplay = stopped && (str(stopped.reason) === 'no-history' || stopped.reason === undefined);
  const endPc = str((stopped?.frame as MiTuple | undefined)?.addr);
  if (endOfReplay && command === '-exec-continue' && endPc && session.breakpointsAt(endPc).length > 0) {
    // The recording ends on a breakpoint: that is where a live run would stop too.
    stopped = { ...stopped, reason: 'breakpoint-hit' };
  } else if (endOfReplay && session.mode === 'record' && !command.includes('--reverse')) {
    // Replaying forward reached the end of the recording: go on, recording again from here.
    ({ stopped, output } = await engine.exec(command, Math.max(0, deadline - Date.now()), call.signal));
    if (!stopped) {
      return {
        state: 'running',
        note: 'still running after replay reached the end of the recording and live recording resumed; if debugger_interrupt does not stop it, GDB 13 is stuck resuming there (seen when a breakpoint sits just before the end of the recording): debugger_detach and launch again',
      };
    }
  }
  return finishStop(ctx, session, stopped, output, note);
}

export async function finishStop(ctx: DebuggerContext, session: DebugSession, stopped: Parameters<DebugSession['describeStop']>[0], output: string, note?: string): Promise<CompactStop> {
  const notes = note ? [note] : [];
  const failures = output.match(/Process record does not support[^\n]*|Process record: failed[^\n]*/g) ?? [];
  const recordFailure = failures.find((f) => /instruction 0x/.test(f)) ?? failures[0];
  if (recordFailure && session.mode === 'record') {
    await session.useCheckpoints(`record full cannot record this process past here: ${recordFailure.trim()}`);
    notes.push(`recording stopped here (${recordFailure.trim()}); earlier positions are gone; history now: ${session.mode}`);
  }
  if (stopped && (str(stopped.reason) === 'no-history' || stopped.reason === undefined) && session.mode === 'record') notes.push('reached the start of the recorded history (recording began at main)');
  const stop = await session.describeStop(stopped, notes.join('; ') || undefined, output);
  if (recordFailure && stop.state === 'stopped') {
    // GDB reports the give-up as "signal 0": not a crash of the program.
    stop.reason = 'record-stopped';
    session.lastCrash = undefined;
  }
  if (stop.state === 'stopped' && stop.reason === 'signal-received') {
    const stack = (await session.engine.mi_('-stack-list-frames 0 31').catch(() => undefined))?.stack;
    if (Array.isArray(stack)) await crashSite(stop, stack, ctx.config.root);
  }
  if (stop.state === 'stopped' && stop.reason === 'signal-received' && session.lastCrash) {
    await recordCrash(ctx.control, session).catch((err) => ctx.log.warn(`debugger: cannot store a crash signature: ${describeError(err)}`));
  }
  return stop;
}

export const renderStopValue = (v: CompactStop) => renderStop(v);

/** The blob a result carries as an embedded resource (export_trace binary). */
export const BLOB: unique symbol = Symbol('blob');

/** Results as kindly-debugger shows them; its failures as JSON-RPC errors with its codes. */
export const debuggerFormat: ResultFormat = {
  outputSchema: (shape) => z.object(shape),
  ok: (value, text) => {
    const { [BLOB]: blob, ...plain } = value as { [BLOB]?: { data: Buffer; uri: string } };
    const result: CallToolResult = { structuredContent: plain, content: [{ type: 'text', text: text ?? JSON.stringify(value) }] };
    if (blob) result.content.push({ type: 'resource', resource: { uri: blob.uri, mimeType: 'application/octet-stream', blob: blob.data.toString('base64') } });
    return result;
  },
  error: (err) => {
    if (err instanceof DebuggerRpcError) return rpcErrorResult({ code: err.rpcCode, message: err.contractMessage, data: err.data, visible: visibleText(err) });
    const text = err instanceof DebugkitError ? `${err.name} (${err.code}): ${err.message}` : describeError(err);
    return { isError: true, content: [{ type: 'text', text }] };
  },
};

/**
 * A contract error as the model reads it (a tool called by its MCP name): kindly-debugger's code and
 * message, what failed and what to do (`details`), and the contract's other fields.
 */
function visibleText(err: DebuggerRpcError): string {
  const { details, ...fields } = err.data;
  const extra = Object.entries(fields).map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`);
  return `${err.contractMessage} (code ${err.rpcCode}): ${String(details)}${extra.length > 0 ? ` (${extra.join(', ')})` : ''}`;
}

export const REPLY_TIMEOUT_MS = 30_000;

/** The debugger engine (GDB/MI session, record full, checkpoints) loads on the first attach or launch, not at start. */
export const loadEngine = () => import('../session.js');

export const idleTimeout = z.number().int().min(1).max(86_400).default(DEFAULT_IDLE_SECONDS).describe(`idle seconds before the session ends (default ${DEFAULT_IDLE_SECONDS})`);

/**
 * A function call in an expression (gdb would run it inside the debuggee): a name, `]` or `)`
 * before `(` (so `(*&system)(x)` is one; a cast followed by `(` is refused too), or a template
 * instantiation, `name<args>(...)` (a comparison spelled `a < b > (c)` is refused with it).
 */
export const CALL = /[A-Za-z0-9_\])]\s*\(|<[\w\s:*&,]*>\s*\(/;

/** A register as gdb names it (`$pc`, `$rsp`, `$eflags`); `$_...` convenience functions and `$1` history are not. */
const REGISTER = /\$[a-z][a-z0-9]{0,15}\b/g;
/** Everything else an expression may hold: names, digits, C operators, spaces. */
const ALLOWED = /^[A-Za-z0-9_.[\]()*&+\-/%<>=!~^|?:, ]*$/;

/**
 * Why gdb must not evaluate `expression`, or undefined: it only reads (no calls, assignments, side
 * effects or text outside C operators). The one policy for every expression the debugger toolset
 * hands gdb: debugger_evaluate, debugger_last_change and breakpoint conditions (attack 18p: a
 * condition `secret = 31337`, or `admin--` watched, wrote memory; three assignments in one condition
 * pointed puts@GOT at system and ran a command, no call written).
 */
export function expressionRefusal(expression: string): string | undefined {
  if (/["'`\\;\n\r]/.test(expression)) return 'quotes, backslashes, ";" and newlines are refused';
  if (CALL.test(expression)) return 'function calls are refused (gdb would run them inside the program; sizeof(x) and casts before "(" count too)';
  if (/\+\+|--|(<<|>>|[-+*/%&|^])=/.test(expression) || /=/.test(expression.replace(/==|!=|<=|>=/g, ''))) {
    return 'assignments and side effects (=, +=, ++, --) are refused: evaluating only reads';
  }
  const rest = expression.replace(REGISTER, '');
  if (rest.includes('$')) return '"$" is taken only as a register name ($pc, $rsp): no convenience variables or functions';
  if (!ALLOWED.test(rest)) return 'only names, numbers, spaces and the C operators . -> [ ] ( ) * & + - / % < > = ! ~ ^ | ? : , are taken';
  return undefined;
}

export function historyUnavailable(session: DebugSession, why: string): DebuggerRpcError {
  return new DebuggerRpcError(
    'HISTORY_UNAVAILABLE',
    `${why}: ${session.modeNote || 'this session keeps no history'}. What works: start the program with debugger_launch, which records it with GDB record full from main.`,
    { session_id: session.id, mode: session.mode },
  );
}

/** Runs `command` (count times) as one serialized execution-control call. */
export async function drive(ctx: DebuggerContext, session: DebugSession, commands: string[], wait: number, call: Parameters<ReturnType<DebuggerTool>['run']>[1], note?: string): Promise<CompactStop> {
  return session.engine.serial(async () => {
    const engine = session.engine;
    if (engine.running) {
      // A previous call left it running: keep waiting for that run instead of starting another.
      await engine.waitForStop(engine.stopCount, wait * 1000, call.signal);
      if (engine.running) return finishStop(ctx, session, undefined, '');
      return finishStop(ctx, session, engine.latestStop, engine.takeOutput(), 'the earlier run stopped; nothing new was started');
    }
    let stop: CompactStop | undefined;
    const deadline = Date.now() + wait * 1000;
    for (let i = 0; i < commands.length; i++) {
      if (i > 0) await call.progress(i, commands.length, `${i}/${commands.length} steps`);
      stop = await execToStop(ctx, session, commands[i]!, Math.max(0, (deadline - Date.now()) / 1000), call, note);
      if (stop.state !== 'stopped' || stop.reason === 'breakpoint-hit' || stop.reason === 'signal-received' || stop.note?.includes('start of the recorded')) break;
      if (call.signal.aborted) break;
    }
    return stop!;
  });
}

export const stopTool =
  (
    name: string,
    contractName: string | undefined,
    title: string,
    description: string,
    input: Record<string, z.ZodType>,
    build: (args: Record<string, unknown>, session: DebugSession) => { commands: string[]; note?: string },
  ): DebuggerTool =>
  (ctx) =>
    defineTool({
      name,
      ...(contractName ? { contractName } : {}),
      title,
      description,
      input: { ...input, session_id: sessionId, wait: waitSeconds },
      output: stopShape,
      render: renderStopValue,
      async run(raw, call) {
        const args = raw as Record<string, unknown> & { session_id: string; wait: number };
        const session = findSession(ctx, call, args.session_id, true);
        const { commands, note } = build(args, session);
        return drive(ctx, session, commands, args.wait, call, note);
      },
    });

function frameLine(stop: MiTuple | undefined): [string | undefined, string | undefined] {
  const frame = stop?.frame as MiTuple | undefined;
  return [str(frame?.func), str(frame?.line)];
}
