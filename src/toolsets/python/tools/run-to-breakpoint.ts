import type { ToolSpec } from '../../../mcp/tools.js';
import type { PythonContext } from '../context.js';
import { breakpointFields, line, projectFile, runLimits, runOptions, runOutput, sessionId } from '../schemas.js';
import { renderRun } from '../answer.js';

const input = { sessionId, file: projectFile, line, ...breakpointFields, ...runLimits };

export function runToBreakpointTool({ service }: PythonContext): ToolSpec<typeof input, typeof runOutput> {
  return {
    name: 'python_run_to_breakpoint',
    title: 'Run to a breakpoint',
    description:
      'Sets a breakpoint at file:line (conditional, hit count or logpoint) and runs (starting if needed) until a ' +
      'breakpoint, the end, an uncaught exception or panic, or `timeout` (then paused, with a TimeoutError). Returns ' +
      'hit/completed/error, where, locals, source, top of stack.',
    input,
    output: runOutput,
    render: renderRun,
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    run: (args, call) => {
      const { sessionId: id, file, line: at, condition, hitCondition, logMessage } = args;
      return service.runTo(call.client.owner, id, file, { line: at, condition, hitCondition, logMessage }, runOptions(args, call.signal));
    },
  };
}
