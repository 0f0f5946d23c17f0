import { plainFormat } from '../../mcp/result-formats.js';
import { defineToolset } from '../../mcp/define.js';
import type { RestRoute } from '../../mcp/toolset.js';
import { pythonContext, type PythonContext } from './context.js';
import { pythonRoutes } from './rest.js';
import { continueTool } from './tools/continue.js';
import { endSessionTool } from './tools/end-session.js';
import { evaluateTool } from './tools/evaluate.js';
import { getOutputTool } from './tools/get-output.js';
import { getSessionTool } from './tools/get-session.js';
import { inspectTool } from './tools/inspect.js';
import { runToBreakpointTool } from './tools/run-to-breakpoint.js';
import { setBreakpointsTool } from './tools/set-breakpoints.js';
import { setFunctionBreakpointsTool } from './tools/set-function-breakpoints.js';
import { startSessionTool } from './tools/start-session.js';
import { stepTool } from './tools/step.js';

export const pythonToolset = defineToolset<PythonContext>({
  name: 'python',
  capabilities: ['python:attach'],
  summary: 'Python debugging through debugpy (DAP): run to breakpoints, locals, stepping, evaluate; also as a REST API',
  instructions:
    'python: python_start_session on a script (with breakpoints), then python_run_to_breakpoint / python_continue / python_step; ' +
    'each stop shows the frame and locals; python_evaluate runs an expression in a frame; python_get_output reads the program output.',
  context: pythonContext,
  tools: [startSessionTool, runToBreakpointTool, continueTool, getSessionTool, endSessionTool, stepTool, evaluateTool, inspectTool, setBreakpointsTool, setFunctionBreakpointsTool, getOutputTool],
  format: plainFormat,
  sessionArg: 'sessionId',
  around: (ctx, _spec, run) => async (args, call) => {
    await ctx.load();
    return run(args, call);
  },
  routes: (ctx) =>
    pythonRoutes(ctx.service).map((route) => ({
      ...route,
      handle: async (...args: Parameters<RestRoute['handle']>) => {
        await ctx.load();
        return route.handle(...args);
      },
    })),
  sessions: (ctx) => ctx.loaded()?.registry.all() ?? [],
  releaseClient: async (ctx, owner) => {
    await ctx.loaded()?.registry.closeOwnedBy(owner, 'the client disconnected');
  },
  dispose: async (ctx) => {
    await ctx.loaded()?.registry.closeAll('the server is shutting down');
  },
});
