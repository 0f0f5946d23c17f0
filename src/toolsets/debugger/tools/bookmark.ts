import { z } from 'zod';
import { withText } from '../../../mcp/tools.js';
import { DebuggerRpcError } from '../errors.js';
import { findSession, sessionId, type DebuggerTool, defineTool } from './common.js';

export const bookmarkTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_bookmark',
    title: 'Name the current position',
    description: 'Give the current position a name usable wherever a position id is (step_backward to, export_trace).',
    input: { name: z.string().regex(/^[A-Za-z][A-Za-z0-9_-]{0,40}$/), session_id: sessionId },
    output: { name: z.string(), position: z.string() },
    async run({ name, session_id }, call) {
      const session = findSession(ctx, call, session_id, true);
      const current = session.current;
      if (!current) throw new DebuggerRpcError('HISTORY_UNAVAILABLE', 'no position yet', { session_id });
      for (const p of session.positions) if (p.bookmark === name) delete p.bookmark;
      current.bookmark = name;
      return withText({ name, position: current.id }, `Bookmark ${name} = ${current.id}`);
    },
  });
