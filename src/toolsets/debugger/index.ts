import { defineToolset } from '../../mcp/define.js';
import type { ToolsetFactory } from '../../mcp/toolset.js';
import { localControl, type DebuggerControl } from './control.js';
import { SessionRegistry } from '../../core/sessions.js';
import type { DebugSession } from './session.js';
import { debuggerFormat, findSession, sessionTaken, type DebuggerContext } from './tools/common.js';
import { debuggerTools } from './tools/index.js';

const SUMMARY = "kindly-debugger's process debugger on GDB/MI: attach or launch, breakpoints, real reverse execution (record full), last change, trace export, similar bugs";

/** The debugger toolset answering quota, license, audit and signatures from `control` (the control plane's); without one, the local single-key defaults. */
export function debuggerToolsetWith(control?: DebuggerControl): ToolsetFactory {
  return defineToolset<DebuggerContext>({
    name: 'debugger',
    capabilities: ['debugger:attach'],
    summary: SUMMARY,
    context: (env) => ({
      // The one registry: caps per client, per key and per server, idle expiry, atomic creation.
      sessions: new SessionRegistry<DebugSession>({
        kind: 'debugger session',
        maxSessions: env.config.maxSessions,
        maxSessionsTotal: env.config.maxSessionsTotal,
        maxSessionsPerKey: env.config.maxSessionsPerKey,
        onExpire: (info, reason) => {
          env.log.info(`debugger session "${info.id}" of ${info.owner} ended: ${reason}`);
          env.sessionExpired?.(info.owner, info.id);
        },
        describeTaken: sessionTaken,
      }),
      config: env.config,
      control: control ?? localControl(env.config.debugger.dataDir),
      log: env.log,
    }),
    tools: debuggerTools,
    format: debuggerFormat,
    sessionArg: 'session_id',
    // A call naming one of the caller's sessions holds it: it cannot expire while the call runs
    // (a long continue), and its idle time starts again when the call ends. (Refusals: rate,
    // quota, expiry and scope are the control plane's, before a call reaches the toolset.)
    around: (ctx, spec, run) => async (args, call) => {
      const id = spec.sessionArg === undefined ? undefined : (args as Record<string, unknown>)[spec.sessionArg];
      if (typeof id === 'string' && findSession(ctx, call, id)) return ctx.sessions.use(call.client.owner, id, () => run(args, call));
      return run(args, call);
    },
    sessions: (ctx) => ctx.sessions.all(),
    releaseClient: (ctx, owner) => ctx.sessions.closeOwnedBy(owner, 'the client disconnected'),
    dispose: (ctx) => ctx.sessions.closeAll('the server is shutting down'),
  });
}

export const debuggerToolset = debuggerToolsetWith();
