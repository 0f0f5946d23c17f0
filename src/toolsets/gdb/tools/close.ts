import type { ToolSpec } from '../../../mcp/tools.js';
import type { GdbContext } from './index.js';
import { sessionId } from './schemas.js';

const input = { id: sessionId };
const output = {};

export function closeTool(ctx: GdbContext): ToolSpec<typeof input, typeof output> {
  return {
    name: 'close',
    title: 'Close a GDB session',
    description: 'Ends a GDB session: gdb and the program it runs are terminated and the id becomes invalid.',
    input,
    output,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    async run(args, call) {
      await ctx.registry.close(call.client.owner, args.id);
      return {};
    },
  };
}
