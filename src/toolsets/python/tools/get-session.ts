import type { ToolSpec } from '../../../mcp/tools.js';
import type { PythonContext } from '../context.js';
import { sessionId, stateOutput } from '../schemas.js';

const input = { sessionId };

export function getSessionTool({ service }: PythonContext): ToolSpec<typeof input, typeof stateOutput> {
  return {
    name: 'python_get_session',
    title: 'Get the session state',
    description: 'Status (idle, running, paused, completed, error), the last breakpoint hit and its count, and timings.',
    input,
    output: stateOutput,
    annotations: { readOnlyHint: true, openWorldHint: false },
    run: async (args, call) => service.registry.get(call.client.owner, args.sessionId).state(),
  };
}
