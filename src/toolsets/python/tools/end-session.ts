import { z } from 'zod';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { PythonContext } from '../context.js';
import { sessionId } from '../schemas.js';

const input = { sessionId };
const output = { ended: z.boolean() };

export function endSessionTool({ service }: PythonContext): ToolSpec<typeof input, typeof output> {
  return {
    name: 'python_end_session',
    title: 'End the session',
    description: 'Ends the session: the program, its debugger and all they started end (an attached one runs on).',
    input,
    output,
    annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: false },
    run: (args, call) => service.end(call.client.owner, args.sessionId),
  };
}
