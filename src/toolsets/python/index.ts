import type { McpServer } from '../../mcp/toolset.js';
import { plainFormat } from '../../mcp/result-formats.js';
import { registerTool, type ToolSpec } from '../../mcp/tools.js';
import type { ClientContext, RestRoute, Toolset, ToolsetEnv, ToolsetFactory } from '../../mcp/toolset.js';
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

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const TOOLS: Array<(service: PythonService) => ToolSpec<any, any>> = [
  startSessionTool,
  runToBreakpointTool,
  continueTool,
  getSessionTool,
  endSessionTool,
  stepTool,
  evaluateTool,
  inspectTool,
  setBreakpointsTool,
  setFunctionBreakpointsTool,
  getOutputTool,
];

class PythonToolset implements Toolset {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tools of different argument and result types
  private specs: ToolSpec<any, any>[] | undefined;
  readonly name = 'python';
  /**
   * The service (sessions, the DAP adapter, debugpy's launch) loads with the first call or REST
   * request, not at start. The tools and routes are given `view`, which stands for it: every call
   * awaits `load()` before it runs, so the view is only used once the service is there.
   */
  private service: PythonService | undefined;
  private loading: Promise<PythonService> | undefined;
  private readonly view: PythonService;

  constructor(private readonly env: ToolsetEnv) {
    this.view = new Proxy({} as PythonService, {
      get: (_target, key) => {
        if (!this.service) throw new Error('the python service is used before it was loaded');
        const value: unknown = Reflect.get(this.service, key);
        return typeof value === 'function' ? value.bind(this.service) : value;
      },
    });
  }

  private load(): Promise<PythonService> {
    this.loading ??= import('./service.js').then(({ PythonService }) => {
      this.service = new PythonService(this.env.config, this.env.log, this.env.sessionExpired?.bind(this.env));
      return this.service;
    });
    return this.loading;
  }

  register(server: McpServer, client: ClientContext): void {
    // Specs (and their zod schemas) are built once: a stateless 2026-07-28 request registers them anew.
    this.specs ??= TOOLS.map((tool) => {
      const spec = tool(this.view);
      const run = spec.run;
      spec.run = async (args, call) => {
        await this.load();
        return run(args, call);
      };
      return spec;
    });
    for (const spec of this.specs) registerTool(server, client, plainFormat, spec);
  }

  routes(): RestRoute[] {
    return pythonRoutes(this.view).map((route) => ({
      ...route,
      handle: async (...args: Parameters<RestRoute['handle']>) => {
        await this.load();
        return route.handle(...args);
      },
    }));
  }

  async releaseClient(owner: string): Promise<void> {
    await this.service?.registry.closeOwnedBy(owner, 'the client disconnected');
  }

  async dispose(): Promise<void> {
    await this.service?.registry.closeAll('the server is shutting down');
  }
}

export const pythonToolset: ToolsetFactory = {
  name: 'python',
  summary: 'Python debugging through debugpy (DAP): run to breakpoints, locals, stepping, evaluate; also as a REST API',
  create: (env) => new PythonToolset(env),
};
