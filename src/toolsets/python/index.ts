import type { McpServer } from '../../mcp/toolset.js';
import { plainFormat, registerTool, type ToolSpec } from '../../mcp/tools.js';
import type { ClientContext, RestRoute, Toolset, ToolsetEnv, ToolsetFactory } from '../../mcp/toolset.js';
import { pythonRoutes } from './rest.js';
import { PythonService } from './service.js';
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
  private specs: ToolSpec<any, any>[] | undefined;
  readonly name = 'python';
  private readonly service: PythonService;

  constructor(env: ToolsetEnv) {
    this.service = new PythonService(env.config, env.log, env.sessionExpired?.bind(env));
  }

  register(server: McpServer, client: ClientContext): void {
    // Specs (and their zod schemas) are built once: a stateless 2026-07-28 request registers them anew.
    this.specs ??= TOOLS.map((tool) => tool(this.service));
    for (const spec of this.specs) registerTool(server, client, plainFormat, spec);
  }

  routes(): RestRoute[] {
    return pythonRoutes(this.service);
  }

  releaseClient(owner: string): Promise<void> {
    return this.service.registry.closeOwnedBy(owner, 'the client disconnected');
  }

  dispose(): Promise<void> {
    return this.service.registry.closeAll('the server is shutting down');
  }
}

export const pythonToolset: ToolsetFactory = {
  name: 'python',
  summary: 'Python debugging through debugpy (DAP): run to breakpoints, locals, stepping, evaluate; also as a REST API',
  create: (env) => new PythonToolset(env),
};
