import { z } from 'zod';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { PythonContext } from '../context.js';
import { runLimits, runOptions, runOutput, sessionId } from '../schemas.js';
import { renderRun } from '../answer.js';

const input = {
  sessionId,
  kind: z.enum(['over', 'into', 'out']).default('over').describe('over: next line; into: into the call; out: to the caller'),
  ...runLimits,
};

export function stepTool({ service }: PythonContext): ToolSpec<typeof input, typeof runOutput> {
  return {
    name: 'python_step',
    title: 'Step over, into or out',
    description: 'Steps the paused program one line (over), into a call, or out to the caller; returns the new stop.',
    input,
    output: runOutput,
    render: renderRun,
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    run: (args, call) => service.use(call.client.owner, args.sessionId, async (s) => service.relativize(await s.step(args.kind, runOptions(args, call.signal)))),
  };
}
