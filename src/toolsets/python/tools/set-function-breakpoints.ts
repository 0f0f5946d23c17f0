import { z } from 'zod';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { PythonContext } from '../context.js';
import { sessionId } from '../schemas.js';

const input = {
  sessionId,
  names: z.array(z.string().min(1)).describe('Function names to stop in, e.g. "parse" or "Calculator.divide" ([] clears)'),
};
const output = { breakpoints: z.array(z.object({ name: z.string(), verified: z.boolean(), message: z.string().optional() })) };

export function setFunctionBreakpointsTool({ service }: PythonContext): ToolSpec<typeof input, typeof output> {
  return {
    name: 'python_set_function_breakpoints',
    title: 'Break when functions are called',
    description: 'Replaces the function breakpoints: the program stops on entry to any function with one of these names. ' + 'A name no source in the workspace defines is verified: false.',
    input,
    output,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    run: async (args, call) => ({
      breakpoints: await service.use(call.client.owner, args.sessionId, (s) => s.setFunctionBreakpoints(args.names)),
    }),
  };
}
