import { z } from 'zod';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { PythonContext } from '../context.js';
import { frameIndex, runOutput, sessionId } from '../schemas.js';
import { renderRun } from '../answer.js';

const input = {
  sessionId,
  frame: frameIndex,
  maxReprLength: z.number().int().min(10).max(100_000).optional(),
  maxLocals: z.number().int().min(1).max(1000).optional(),
};

export function inspectTool({ service }: PythonContext): ToolSpec<typeof input, typeof runOutput> {
  return {
    name: 'python_inspect',
    title: 'Inspect a stack frame',
    description: 'Shows the current stop from another frame (its locals and source) or with more of each value; the program stays paused.',
    input,
    output: runOutput,
    render: renderRun,
    annotations: { readOnlyHint: true, openWorldHint: false },
    run: (args, call) =>
      service.use(call.client.owner, args.sessionId, async (s) => {
        const limits = { ...(args.maxReprLength ? { maxReprLength: args.maxReprLength } : {}), ...(args.maxLocals ? { maxLocals: args.maxLocals } : {}) };
        return service.relativize(await s.inspect(args.frame, limits));
      }),
  };
}
