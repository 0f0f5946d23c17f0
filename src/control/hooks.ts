import type { IncomingMessage } from 'node:http';
import type { Denial, Principal, ServerHooks } from '../server/createServer.js';
import { debugSessionOf } from './audit.js';
import { forwardRequest } from './forward.js';
import { FORWARDED_HEADER, HttpGate } from './http.js';
import type { KeyContext } from './keys.js';
import { LOCAL_KEY, type ControlPlane, type Refusal } from './plane.js';

/** The principal the control plane hands the server: the key id, and the key itself. */
export interface KeyPrincipal extends Principal {
  key: KeyContext;
}

/** The key a principal acts as (the local stdio user, with every scope, when none was set). */
export function keyOf(principal: Principal): KeyContext {
  const key = (principal as Partial<KeyPrincipal>).key;
  return key ?? LOCAL_KEY;
}

function principalFor(key: KeyContext): KeyPrincipal {
  return { id: key.id, key };
}

function denial(refusal: Refusal): Denial {
  return { code: refusal.code, message: refusal.message, ...(refusal.data ? { data: refusal.data } : {}), status: refusal.status, ...(refusal.headers ? { headers: refusal.headers } : {}) };
}

function headerOf(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Tools whose answer names a new debug session (its id is recorded with this node for forwarding). */
const CLOSES_SESSION = /(^|_)(close|close_session|stop|stop_session|terminate)$/;
const OPENS_SESSION = /(^|_)(open|start|start_session|initialize|create|launch|attach)(_|$)/;

/**
 * The control plane on the server's seams: keys (authenticate), scopes (authorize, and per call
 * with its arguments at the HTTP edge), rate limits and quotas with their header fields on every
 * /mcp answer (admitRequest, message by message), the audit entry written before each call,
 * which refuses the call when it cannot be written (beforeToolCall), REST routes, and sessions held by other nodes.
 */
export function controlHooks(plane: ControlPlane): ServerHooks {
  const gate = new HttpGate(plane);
  return {
    async authenticate(req) {
      const result = await plane.authenticate(headerOf(req, 'authorization'));
      if ('key' in result) return principalFor(result.key);
      throw denial(result.refusal);
    },
    authorize(principal, tool) {
      const key = keyOf(principal);
      if (plane.visibleTools(key, [tool]).length > 0) return true;
      return denial(plane.authorizeTool(key, tool) ?? { code: -32003, message: `Permission denied: ${tool}`, status: 403 });
    },
    async authorizeCall(principal, call, scopes) {
      const key = keyOf(principal);
      const refusal = plane.authorizeScopes(key, call.tool, scopes);
      if (!refusal) return true;
      const info = { tool: call.tool, args: call.args, client: call.client, transport: call.transport, session: call.owner, ...(call.traceparent ? { traceparent: call.traceparent } : {}) };
      await plane.recordDenied(key, info, refusal).catch(() => undefined);
      return denial(refusal);
    },
    catalog(tools) {
      plane.setCatalog(tools);
    },
    async admitRequest(principal, req, res, body, session) {
      const verdicts = await gate.admit(keyOf(principal), req, res, body, session);
      return verdicts.map((refusal) => (refusal ? denial(refusal) : undefined));
    },
    async admitRoute(principal, req, res, route, params) {
      const result = await gate.admitRoute(keyOf(principal), req, res, route.toolset, route.path, params);
      return 'refusal' in result ? denial(result.refusal) : result.finish;
    },
    async beforeToolCall(start, principal) {
      try {
        return await plane.beginCall(keyOf(principal), {
          tool: start.tool,
          args: start.args,
          client: start.client,
          transport: start.transport,
          session: start.owner,
          ...(start.traceparent ? { traceparent: start.traceparent } : {}),
        });
      } catch (err) {
        throw new Error(`the audit log cannot be written (${err instanceof Error ? err.message : String(err)})`, { cause: err });
      }
    },
    async onToolCall(event, principal) {
      // A debug session opened over HTTP by a stateless request (2026-07-28, plain JSON-RPC) has no
      // MCP session to follow: record its id with this node so the other nodes forward calls for it.
      if (event.isError || !event.owner.startsWith('http:')) return;
      if (CLOSES_SESSION.test(event.tool)) {
        const id = debugSessionOf(event.args);
        if (id) await plane.releaseSession(`debug:${id}`);
        return;
      }
      if (!OPENS_SESSION.test(event.tool)) return;
      const id = debugSessionOf(event.result) ?? debugSessionOf((event.result as { content?: unknown } | undefined)?.content);
      if (id) await plane.claimSession(`debug:${id}`, keyOf(principal));
    },
    sessions: {
      claim: (id, principal) => plane.claimSession(id, keyOf(principal)),
      async locate(id, principal) {
        const where = await plane.locateSession(id);
        return where && where.key_id === keyOf(principal).id ? { node: where.node, url: where.url } : undefined;
      },
      release: (id) => plane.releaseSession(id),
      isForwarded: (req) => plane.isForwarded(headerOf(req, FORWARDED_HEADER)),
      async forward(target, req, res, body) {
        await forwardRequest(target, req, res, body, await plane.forwardToken(), plane.node.id);
      },
    },
    listening(url) {
      if (!plane.node.url) plane.node.url = url;
    },
    close: () => plane.close(),
  };
}
