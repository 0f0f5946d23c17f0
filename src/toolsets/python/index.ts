import { plainFormat } from '../../mcp/result-formats.js';
import { defineToolset } from '../../mcp/define.js';
import type { RestRoute, ToolsetEnv } from '../../mcp/toolset.js';
import { pythonRoutes } from './rest.js';
import type { PythonService } from './service.js';
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

/**
 * What the python tools share. The service (sessions, the DAP adapter, debugpy's launch) loads
 * with the first call or REST request, not at start. The tools and routes are given `view`, which
 * stands for it: every call awaits `load()` before it runs, so the view is only used once the
 * service is there.
 */
interface PythonContext {
  view: PythonService;
  load(): Promise<PythonService>;
  /** The service once loaded. */
  loaded(): PythonService | undefined;
}

function pythonContext(env: ToolsetEnv): PythonContext {
  let service: PythonService | undefined;
  let loading: Promise<PythonService> | undefined;
  const view = new Proxy({} as PythonService, {
    get: (_target, key) => {
      if (!service) throw new Error('the python service is used before it was loaded');
      const value: unknown = Reflect.get(service, key);
      return typeof value === 'function' ? value.bind(service) : value;
    },
  });
  return {
    view,
    load: () =>
      (loading ??= import('./service.js').then(({ PythonService }) => {
        service = new PythonService(env.config, env.log, env.sessionExpired?.bind(env));
        return service;
      })),
    loaded: () => service,
  };
}

export const pythonToolset = defineToolset<PythonContext>({
  name: 'python',
  summary: 'Python debugging through debugpy (DAP): run to breakpoints, locals, stepping, evaluate; also as a REST API',
  instructions:
    'python: python_start_session on a script (with breakpoints), then python_run_to_breakpoint / python_continue / python_step; ' +
    'each stop shows the frame and locals; python_evaluate runs an expression in a frame; python_get_output reads the program output.',
  context: pythonContext,
  tools: [startSessionTool, runToBreakpointTool, continueTool, getSessionTool, endSessionTool, stepTool, evaluateTool, inspectTool, setBreakpointsTool, setFunctionBreakpointsTool, getOutputTool].map(
    (tool) => (ctx: PythonContext) => tool(ctx.view),
  ),
  format: plainFormat,
  sessionArg: 'sessionId',
  around: (ctx, _spec, run) => async (args, call) => {
    await ctx.load();
    return run(args, call);
  },
  routes: (ctx) =>
    pythonRoutes(ctx.view).map((route) => ({
      ...route,
      handle: async (...args: Parameters<RestRoute['handle']>) => {
        await ctx.load();
        return route.handle(...args);
      },
    })),
  releaseClient: async (ctx, owner) => {
    await ctx.loaded()?.registry.closeOwnedBy(owner, 'the client disconnected');
  },
  dispose: async (ctx) => {
    await ctx.loaded()?.registry.closeAll('the server is shutting down');
  },
});
