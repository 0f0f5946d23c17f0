import { DebugkitError } from '../../../core/errors.js';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { PythonContext } from '../context.js';
import { line, projectFile, runLimits, runOptions, runOutput, sessionId } from '../schemas.js';
import { renderRun } from '../answer.js';

const input = {
  sessionId,
  file: projectFile.optional().describe('Project-relative file of one more breakpoint to set before continuing'),
  line: line.optional().describe('Line of that breakpoint'),
  ...runLimits,
};

export function continueTool({ service }: PythonContext): ToolSpec<typeof input, typeof runOutput> {
  return {
    name: 'python_continue',
    title: 'Continue to the next breakpoint',
    description:
      'Continues a paused program until the next breakpoint, its end, an uncaught exception or `timeout`. With ' +
      'file and line, sets that breakpoint first. Same answer as python_run_to_breakpoint.',
    input,
    output: runOutput,
    render: renderRun,
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    run: async (args, call) => {
      const options = runOptions(args, call.signal);
      if ((args.file === undefined) !== (args.line === undefined)) {
        throw new DebugkitError('INVALID_ARGUMENT', 'give both file and line, or neither');
      }
      if (args.file !== undefined) return service.runTo(call.client.owner, args.sessionId, args.file, { line: args.line! }, options);
      return service.use(call.client.owner, args.sessionId, async (s) => service.relativize(await s.continue(options)));
    },
  };
}
