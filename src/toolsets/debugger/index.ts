import type { McpServer } from '@modelcontextprotocol/server';
import { registerToolAlias } from '../../mcp/rpc-hooks.js';
import { registerTool, type ToolSpec } from '../../mcp/tools.js';
import type { ClientContext, Toolset, ToolsetEnv, ToolsetFactory } from '../../mcp/toolset.js';
import { localControl, type DebuggerControl } from './control.js';
import { SessionRegistry } from '../../core/sessions.js';
import type { DebugSession } from './session.js';
import { debuggerFormat, findSession, sessionTaken, type DebuggerContext } from './tools/common.js';
import { debuggerTools } from './tools/index.js';

export class DebuggerToolset implements Toolset {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tools of different argument and result types
  private specs: Array<ToolSpec<any, any> & { contractName?: string }> | undefined;
  readonly name = 'debugger';
  private readonly ctx: DebuggerContext;

  /** `control` is the control plane's implementation; without one, the local single-key defaults. */
  constructor(env: ToolsetEnv, control?: DebuggerControl) {
    this.ctx = {
      // The one registry: caps per client, per key and per server, idle expiry, atomic creation.
      sessions: new SessionRegistry<DebugSession>({
        kind: 'debugger session',
        maxSessions: env.config.maxSessions,
        maxSessionsTotal: env.config.maxSessionsTotal,
        maxSessionsPerKey: env.config.maxSessionsPerKey,
        onExpire: (info) => {
          env.log.info(`debugger session "${info.id}" of ${info.owner} ended after ${info.timeoutMs / 1000} s idle`);
          env.sessionExpired?.(info.owner, info.id);
        },
        describeTaken: sessionTaken,
      }),
      config: env.config,
      control: control ?? localControl(env.config.debugger.dataDir),
      log: env.log,
    };
  }

  register(server: McpServer, client: ClientContext): void {
    // Specs (and their zod schemas) are built once: a stateless 2026-07-28 request registers them anew.
    this.specs ??= debuggerTools.map((make) => {
      const spec = make(this.ctx);
      const run = spec.run;
      // The control plane may refuse any call (quota, expired key) before it runs.
      spec.run = async (args, call) => {
        await this.ctx.control.check(call.client, spec.name);
        // A call naming one of the caller's sessions holds it: it cannot expire while the call
        // runs (a long continue), and its idle time starts again when the call ends.
        const id = (args as { session_id?: unknown }).session_id;
        if (typeof id === 'string' && findSession(this.ctx, call, id)) return this.ctx.sessions.use(call.client.owner, id, () => run(args, call));
        return run(args, call);
      };
      return spec;
    });
    for (const spec of this.specs) {
      registerTool(server, client, debuggerFormat, spec);
      if (spec.contractName) registerToolAlias(server, spec.contractName, spec.name);
    }
  }

  releaseClient(owner: string): Promise<void> {
    return this.ctx.sessions.closeOwnedBy(owner, 'the client disconnected');
  }

  dispose(): Promise<void> {
    return this.ctx.sessions.closeAll('the server is shutting down');
  }
}

const SUMMARY = "kindly-debugger's process debugger on GDB/MI: attach or launch, breakpoints, real reverse execution (record full), last change, trace export, similar bugs";

export const debuggerToolset: ToolsetFactory = {
  name: 'debugger',
  summary: SUMMARY,
  create: (env) => new DebuggerToolset(env),
};

/** The debugger toolset answering quota, license, audit and signatures from `control` (the composition root's choice). */
export function debuggerToolsetWith(control: DebuggerControl): ToolsetFactory {
  return { name: 'debugger', summary: SUMMARY, create: (env) => new DebuggerToolset(env, control) };
}
