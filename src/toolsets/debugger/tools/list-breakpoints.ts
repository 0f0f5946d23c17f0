import { z } from 'zod';
import type { MiTuple } from '../../../core/mi/parser.js';
import { withText } from '../../../mcp/tools.js';
import { DebuggerRpcError } from '../errors.js';
import type { DebugSession } from '../session.js';
import { str, toFrame } from '../stop.js';
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

export const listBreakpointsTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_list_breakpoints',
    title: 'List breakpoints',
    description: "This session's breakpoints: number, location, condition, hit count, enabled.",
    input: { session_id: sessionId },
    output: { breakpoints: z.array(breakpointShape) },
    annotations: { readOnlyHint: true },
    async run({ session_id }, call) {
      const session = findSession(ctx, call, session_id, true);
      return session.engine.serial(async () => {
        refuseRunning(session);
        const breakpoints = await sessionBreakpoints(session);
        const text = breakpoints
          .map((b) => {
            const where = b.file ? `${b.function ?? ''} ${b.file}:${b.line}`.trim() : (b.function ?? b.location);
            return `#${b.number} ${b.location}${where !== b.location ? ` (${where})` : ''}${b.condition ? ` if ${b.condition}` : ''}: hit ${b.hits} time${b.hits === 1 ? '' : 's'}${b.enabled ? '' : ', disabled'}`;
          })
          .join('\n');
        return withText({ breakpoints }, text || 'no breakpoints');
      });
    },
  });
