import { z } from 'zod';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { GdbContext } from './index.js';

const input = {};
const output = {
  sessions: z.array(
    z.object({
      id: z.string(),
      created: z.string().describe('ISO 8601 time the session was opened'),
      last_used: z.string().describe('ISO 8601 time of the last call'),
      state: z.string().describe('The target program: not started, running, stopped or exited'),
    }),
  ),
};

export function listSessionsTool(ctx: GdbContext): ToolSpec<typeof input, typeof output> {
  return {
    name: 'list_sessions',
    title: 'List GDB sessions',
    description: 'Lists the open GDB sessions of this client with their creation time and program state.',
    input,
    output,
    annotations: { readOnlyHint: true, openWorldHint: false },
    async run(_args, call) {
      const owner = call.client.owner;
      const sessions = ctx.registry.list(owner).map((info) => ({
        id: info.id,
        created: info.created.toISOString(),
        last_used: info.lastUsed.toISOString(),
        state: ctx.registry.get(owner, info.id).state,
      }));
      return { sessions };
    },
  };
}
