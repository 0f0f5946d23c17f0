import { z } from 'zod';
import { withText } from '../../../mcp/tools.js';
import { DebuggerRpcError } from '../errors.js';
import type { CompactStop } from '../stop.js';
import { execToStop, findSession, finishStop, renderStopValue, sessionId, stopShape, waitSeconds, type DebuggerContext, type DebuggerTool, defineTool } from './common.js';
import type { DebugSession } from '../session.js';

/** A location gdb accepts: hex address, function name, or file:line (no spaces, quotes or options). */
const LOCATION = /^(0x[0-9a-fA-F]{1,16}|[A-Za-z_~][A-Za-z0-9_:<>~.]{0,200}|[A-Za-z0-9_./+-]{1,400}:\d{1,7})$/;

/**
 * A function call in an expression (gdb would run it inside the debuggee): a name, `]` or `)`
 * before `(` (so `(*&system)(x)` is one; a cast followed by `(` is refused too), or a template
 * instantiation, `name<args>(...)` (a comparison spelled `a < b > (c)` is refused with it).
 */
export const CALL = /[A-Za-z0-9_\])]\s*\(|<[\w\s:*&,]*>\s*\(/;

export const setBreakpointTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_set_breakpoint',
    contractName: 'debugger/set_breakpoint',
    title: 'Set a breakpoint',
    description: 'Set a breakpoint at a hex address (0x401136), a function (parse_header) or file:line (main.c:42), with an optional condition (a C expression, e.g. "i == 5").',
    input: {
      address: z.string().min(1).max(400).describe('hex address, function name, or file:line'),
      condition: z.string().max(400).optional().describe('stop only when this expression is true'),
      session_id: sessionId,
    },
    output: { number: z.number(), location: z.string(), function: z.string().optional(), file: z.string().optional(), line: z.number().optional(), condition: z.string().optional() },
    async run({ address, condition, session_id }, call) {
      const session = findSession(ctx, call, session_id, true);
      if (!LOCATION.test(address)) {
        throw new DebuggerRpcError('BREAKPOINT_FAILED', `"${address}" is not a location: give a hex address (0x401136), a function name (main) or file:line (prog.c:12)`, { address });
      }
      if (condition !== undefined && (/[\n\r"'\\$;`]/.test(condition) || CALL.test(condition))) {
        throw new DebuggerRpcError('BREAKPOINT_FAILED', 'the condition must be a plain C comparison (e.g. "i == 5 && p != 0"): no quotes, backslashes, $, ; or function calls', { condition });
      }
      return session.engine.serial(async () => {
        if (session.engine.running) throw new DebuggerRpcError('BREAKPOINT_FAILED', 'the target is running: call debugger_interrupt first', { address });
        const target = address.startsWith('0x') ? `*${address}` : address;
        const cond = condition ? ` -c "${condition}"` : '';
        let bkpt: Record<string, unknown>;
        try {
          const r = await session.engine.mi_(`-break-insert${cond} ${target}`);
          bkpt = (Array.isArray(r.bkpt) ? r.bkpt[0] : r.bkpt) as Record<string, unknown>;
        } catch (err) {
          throw new DebuggerRpcError('BREAKPOINT_FAILED', `gdb could not set a breakpoint at ${address}: ${(err as Error).message}`, { address });
        }
        if (address.startsWith('0x') && !session.engine.exited) {
          // A breakpoint on unmapped memory would fail only when the program resumes.
          const readable = await session.engine.mi_(`-data-read-memory-bytes ${address} 1`).then(
            () => true,
            () => false,
          );
          if (!readable) {
            await session.engine.mi_(`-break-delete ${String(bkpt.number)}`).catch(() => undefined);
            throw new DebuggerRpcError('BREAKPOINT_FAILED', `${address} is not mapped in process ${session.pid}: give an address of its code (debugger_get_stack_trace shows some)`, { address });
          }
        }
        const locations = Array.isArray(bkpt.locations) ? (bkpt.locations as Array<Record<string, unknown>>) : [bkpt];
        const addrs = locations.map((l) => (typeof l.addr === 'string' && /^0x[0-9a-f]+$/i.test(l.addr) ? BigInt(l.addr) : undefined)).filter((a): a is bigint => a !== undefined);
        session.breakpoints.set(Number(bkpt.number), addrs);
        const out: { number: number; location: string; function?: string; file?: string; line?: number; condition?: string } = { number: Number(bkpt.number), location: address };
        if (typeof bkpt.func === 'string') out.function = bkpt.func;
        if (typeof bkpt.file === 'string') out.file = bkpt.file;
        if (typeof bkpt.line === 'string') out.line = Number(bkpt.line);
        if (condition) out.condition = condition;
        const where = out.file ? `${out.function ?? ''} ${out.file}:${out.line}`.trim() : String(bkpt.addr ?? address);
        return withText(out, `Breakpoint ${out.number} set at ${where}${condition ? ` if ${condition}` : ''}`);
      });
    },
  });

/** Runs `command` (count times) as one serialized execution-control call. */
async function drive(ctx: DebuggerContext, session: DebugSession, commands: string[], wait: number, call: Parameters<ReturnType<DebuggerTool>['run']>[1], note?: string): Promise<CompactStop> {
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

const stopTool =
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

export const continueTool = stopTool(
  'debugger_continue',
  'debugger/continue',
  'Continue',
  'Run until a breakpoint, a signal or the end (reverse: true runs backwards to the previous breakpoint).',
  {
    reverse: z.boolean().default(false).describe('run backwards (recorded or checkpointed sessions)'),
  },
  (args, session) => {
    if (args.reverse && session.mode !== 'record') throw historyUnavailable(session, 'reverse continue needs a recorded session');
    return { commands: [args.reverse ? '-exec-continue --reverse' : '-exec-continue'] };
  },
);

export const stepForwardTool = stopTool(
  'debugger_step_forward',
  'debugger/step_forward',
  'Step forward',
  'Execute the next source line(s), stepping over calls (into: true steps into them).',
  {
    count: z.number().int().min(1).max(1000).default(1),
    into: z.boolean().default(false).describe('step into called functions'),
  },
  (args) => ({ commands: new Array<string>(args.count as number).fill(args.into ? '-exec-step' : '-exec-next') }),
);

export function historyUnavailable(session: DebugSession, why: string): DebuggerRpcError {
  return new DebuggerRpcError(
    'HISTORY_UNAVAILABLE',
    `${why}: ${session.modeNote || 'this session keeps no history'}. What works: start the program with debugger_launch, which records it with GDB record full from main.`,
    { session_id: session.id, mode: session.mode },
  );
}

export const stepBackwardTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_step_backward',
    contractName: 'debugger/step_backward',
    title: 'Step backward',
    description: 'Really execute backwards: after it, memory and registers are those of that earlier moment. count source lines back, or to: a position id / bookmark.',
    input: {
      count: z.number().int().min(1).max(1000).default(1),
      to: z.string().max(64).optional().describe('a position id (p3) or bookmark name to go back (or forward) to'),
      into: z.boolean().default(false).describe('step back into called functions'),
      session_id: sessionId,
      wait: waitSeconds,
    },
    output: stopShape,
    render: renderStopValue,
    async run({ count, to, into, session_id, wait }, call) {
      const session = findSession(ctx, call, session_id, true);
      if (session.mode === 'none') throw historyUnavailable(session, 'no history to step back through');
      if (to !== undefined || session.mode === 'checkpoint') {
        return session.engine.serial(async () => {
          if (session.engine.running) throw new DebuggerRpcError('HISTORY_UNAVAILABLE', 'the target is running: call debugger_interrupt first', { session_id });
          let target;
          if (to !== undefined) target = session.position(to);
          else {
            const index = session.positions.length - 1 - count;
            const reachable = session.positions.slice(0, Math.max(0, index + 1)).filter((p) => p.checkpoint !== undefined);
            target = reachable.at(-1);
            if (!target) throw historyUnavailable(session, `no checkpoint ${count} stop(s) back`);
          }
          const stopped = await session.travelTo(target);
          return finishStop(ctx, session, stopped, session.engine.takeOutput(), `back at ${target.id}`);
        });
      }
      const cmd = into ? '-exec-step --reverse' : '-exec-next --reverse';
      return drive(ctx, session, new Array<string>(count).fill(cmd), wait, call);
    },
  });

export const interruptTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_interrupt',
    title: 'Interrupt a running target',
    description: 'Stop a target that a continue or step left running.',
    input: { session_id: sessionId },
    output: stopShape,
    render: renderStopValue,
    async run({ session_id }, call) {
      const session = findSession(ctx, call, session_id, true);
      if (!session.engine.running) return finishStop(ctx, session, session.engine.latestStop, '', 'it was not running');
      await session.engine.interrupt(5000);
      return session.engine.serial(() => finishStop(ctx, session, session.engine.latestStop, session.engine.takeOutput()));
    },
  });
