import { z } from 'zod';
import { withText } from '../../../mcp/tools.js';
import { findSession, sessionId, type DebuggerTool, defineTool } from './common.js';

export const detachTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_detach',
    title: 'Detach (attached) or end (launched)',
    description: 'End a session: an attached process is detached and runs on; a launched one is killed.',
    input: { session_id: sessionId },
    output: { session_id: z.string(), pid: z.number(), action: z.enum(['detached', 'killed']) },
    async run({ session_id }, call) {
      const session = findSession(ctx, call, session_id, true);
      await ctx.sessions.close(call.client.owner, session_id, 'detached by the client');
      const action: 'detached' | 'killed' = session.kind === 'attached' ? 'detached' : 'killed';
      return withText({ session_id, pid: session.pid, action }, `${action === 'detached' ? 'Detached from' : 'Ended'} process ${session.pid}`);
    },
  });
