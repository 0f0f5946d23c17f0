import { z } from 'zod';
import type { MiTuple } from '../../../core/mi/parser.js';
import { withText } from '../../../mcp/tools.js';
import { DebuggerRpcError } from '../errors.js';
import type { DebugSession } from '../session.js';
import { toFrame } from '../stop.js';
import { str } from '../../../core/mi/parser.js';
import { findSession, sessionId, type DebuggerTool, defineTool } from './common.js';

const breakpointShape = z.object({
  number: z.number(),
  location: z.string(),
  function: z.string().optional(),
  file: z.string().optional(),
  line: z.number().optional(),
  condition: z.string().optional(),
  hits: z.number(),
  enabled: z.boolean(),
});
type Breakpoint = z.infer<typeof breakpointShape>;

/** Refuses a breakpoint call while the target runs (gdb would change its breakpoints only at the next stop). */
export function refuseRunning(session: DebugSession, data: Record<string, unknown> = {}): void {
  if (session.engine.running) throw new DebuggerRpcError('BREAKPOINT_FAILED', 'the target is running: call debugger_interrupt first', data);
}

/** The session's own breakpoints as gdb has them now (internal ones, such as a watch of debugger_last_change, left out). */
export async function sessionBreakpoints(session: DebugSession): Promise<Breakpoint[]> {
  const table = (await session.engine.mi_('-break-list')).BreakpointTable as MiTuple | undefined;
  const out: Breakpoint[] = [];
  for (const b of Array.isArray(table?.body) ? (table.body as MiTuple[]) : []) {
    const number = Number(str(b.number));
    if (!session.breakpoints.has(number)) continue;
    const first = Array.isArray(b.locations) ? ((b.locations[0] as MiTuple | undefined) ?? b) : b;
    const { function: func, file, line } = toFrame(first);
    const cond = str(b.cond);
    out.push({
      number,
      location: (str(b['original-location']) ?? str(b.addr) ?? '?').replace(/^\*/, ''),
      ...(func !== '??' ? { function: func } : {}),
      ...(file ? { file, line } : {}),
      ...(cond ? { condition: cond } : {}),
      hits: Number(str(b.times) ?? 0),
      enabled: str(b.enabled) !== 'n',
    });
  }
  return out;
}

/** One line a breakpoint: `#2 prog.c:26 (main prog.c:26) if x == 30: hit 1 time`. */
function line(b: Breakpoint): string {
  const where = b.file ? `${b.function ?? ''} ${b.file}:${b.line}`.trim() : (b.function ?? b.location);
  return `#${b.number} ${b.location}${where !== b.location ? ` (${where})` : ''}${b.condition ? ` if ${b.condition}` : ''}: hit ${b.hits} time${b.hits === 1 ? '' : 's'}${b.enabled ? '' : ', disabled'}`;
}

/** Lists the session's breakpoints, deleting some first: one tool for both (tools/list is read on every turn). */
export const breakpointsTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_breakpoints',
    title: 'List or delete breakpoints',
    description: "This session's breakpoints (number, location, condition, hits, enabled); delete: numbers to delete first.",
    input: { delete: z.array(z.number().int().min(1)).max(100).optional(), session_id: sessionId },
    output: { breakpoints: z.array(breakpointShape), deleted: z.array(z.number()).optional() },
    async run({ delete: numbers = [], session_id }, call) {
      const session = findSession(ctx, call, session_id, true);
      return session.engine.serial(async () => {
        refuseRunning(session, numbers.length > 0 ? { delete: numbers } : {});
        // All or none: a number that is not this session's refuses the call before anything is deleted.
        const unknown = numbers.filter((n) => !session.breakpoints.has(n));
        if (unknown.length > 0) {
          const own = [...session.breakpoints.keys()];
          throw new DebuggerRpcError('BREAKPOINT_FAILED', `session "${session_id}" has no breakpoint ${unknown.join(', ')}: its breakpoints are ${own.length > 0 ? own.join(', ') : 'none'}`, {
            delete: numbers,
          });
        }
        for (const number of new Set(numbers)) {
          try {
            await session.engine.mi_(`-break-delete ${number}`);
          } catch (err) {
            throw new DebuggerRpcError('BREAKPOINT_FAILED', `gdb could not delete breakpoint ${number}: ${(err as Error).message}`, { delete: numbers });
          }
          session.breakpoints.delete(number);
        }
        const breakpoints = await sessionBreakpoints(session);
        const deleted = [...new Set(numbers)];
        const text = [...deleted.map((n) => `deleted #${n}`), ...breakpoints.map(line)].join('\n');
        return withText({ breakpoints, ...(deleted.length > 0 ? { deleted } : {}) }, text || 'no breakpoints');
      });
    },
  });
