import { z } from 'zod';
import { withText } from '../../../mcp/tools.js';
import { DebuggerRpcError } from '../errors.js';
import { findSession, sessionId, type DebuggerTool, defineTool } from './common.js';
import { refuseRunning } from './list-breakpoints.js';

export const deleteBreakpointTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_delete_breakpoint',
    title: 'Delete breakpoint',
    description: "Delete one of this session's breakpoints by number.",
    input: { number: z.number().int().min(1), session_id: sessionId },
    output: { number: z.number(), deleted: z.boolean() },
    async run({ number, session_id }, call) {
      const session = findSession(ctx, call, session_id, true);
      return session.engine.serial(async () => {
        refuseRunning(session, { number });
        if (!session.breakpoints.has(number)) {
          const own = [...session.breakpoints.keys()];
          throw new DebuggerRpcError(
            'BREAKPOINT_FAILED',
            `session "${session_id}" has no breakpoint ${number}: its breakpoints are ${own.length > 0 ? own.join(', ') : 'none'} (debugger_list_breakpoints)`,
            { number },
          );
        }
        try {
          await session.engine.mi_(`-break-delete ${number}`);
        } catch (err) {
          throw new DebuggerRpcError('BREAKPOINT_FAILED', `gdb could not delete breakpoint ${number}: ${(err as Error).message}`, { number });
        }
        session.breakpoints.delete(number);
        return withText({ number, deleted: true }, `Breakpoint ${number} deleted`);
      });
    },
  });
