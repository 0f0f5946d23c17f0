import { z } from 'zod';
import { withText } from '../../../mcp/tools.js';
import { DebuggerRpcError } from '../errors.js';
import { expressionRefusal, findSession, sessionId, type DebuggerTool, defineTool } from './common.js';

/** A location gdb accepts: hex address, function name, or file:line (no spaces, quotes or options). */
const LOCATION = /^(0x[0-9a-fA-F]{1,16}|[A-Za-z_~][A-Za-z0-9_:<>~.]{0,200}|[A-Za-z0-9_./+-]{1,400}:\d{1,7})$/;

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
      const refused = condition === undefined ? undefined : expressionRefusal(condition);
      if (refused) throw new DebuggerRpcError('BREAKPOINT_FAILED', `the condition must be a plain C comparison (e.g. "i == 5 && p != 0"): ${refused}`, { condition });
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
