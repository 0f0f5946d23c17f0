import { z } from 'zod';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { PythonContext } from '../context.js';
import { breakpointFields, breakpointReports, line, projectFile, sessionId } from '../schemas.js';

const input = {
  sessionId,
  file: projectFile,
  breakpoints: z.array(z.object({ line, ...breakpointFields })).describe('All breakpoints of this file (replaces its previous ones; [] clears)'),
};

export function setBreakpointsTool({ service }: PythonContext): ToolSpec<typeof input, typeof breakpointReports> {
  return {
    name: 'python_set_breakpoints',
    title: 'Set the breakpoints of a file',
    description: 'Replaces the breakpoints of one file: plain, conditional, hit-count or logpoints. Reports each one moved or not verified. ' + 'Does not run the program.',
    input,
    output: breakpointReports,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    run: async (args, call) => {
      const file = await service.breakpointTarget(
        args.file,
        args.breakpoints.map((b) => b.line),
        call.signal,
      );
      const reports = await service.use(call.client.owner, args.sessionId, (s) => s.setBreakpoints(file, args.breakpoints));
      return { breakpoints: reports.map((r) => ({ ...r, file: args.file })) };
    },
  };
}
