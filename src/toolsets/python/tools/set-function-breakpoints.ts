import { z } from 'zod';
import type { ToolSpec } from '../../../server/tools.js';
import type { PythonService } from '../service.js';
import { sessionId } from '../schemas.js';

const input = {
  sessionId,
  names: z.array(z.string().min(1)).describe('Function names to stop in, e.g. "parse" or "Calculator.divide" ([] clears)'),
};
const output = { breakpoints: z.array(z.object({ name: z.string(), verified: z.boolean(), message: z.string().optional() })) };

export function setFunctionBreakpointsTool(service: PythonService): ToolSpec<typeof input, typeof output> {
  return {
    name: 'python_set_function_breakpoints',
    title: 'Break when functions are called',
    description: 'Replaces the function breakpoints: the program stops on entry to any function with one of these names.',
    input,
    output,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    run: async (args, call) => {
      const result = await service.use(call.client.owner, args.sessionId, (s) => s.setFunctionBreakpoints(args.names));
      return {
        breakpoints: args.names.map((name, i) => {
          const bp = result?.[i];
          if (!bp) return { name, verified: false, message: 'set when the program starts' };
          return { name, verified: bp.verified, ...(bp.message ? { message: bp.message } : {}) };
        }),
      };
    },
  };
}
