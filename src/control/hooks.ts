import type { IncomingMessage } from 'node:http';
import type { Denial, Principal, ServerHooks } from '../server/createServer.js';
import { AuditRedactionError, debugSessionOf } from './audit.js';
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

/** Tools that end the debug session their arguments name (gdb close, python_end_session, debugger_detach, ...): its row goes. */
const CLOSES_SESSION = /(^|_)(close|close_session|stop|stop_session|terminate|end|end_session|detach)$/;
/** Tools whose answer names a new debug session (its id is recorded with this node for forwarding). */
const OPENS_SESSION = /(^|_)(open|start|start_session|initialize|create|launch|attach)(_|$)/;

/** How the server names a debug session in `SessionHooks` (forwarding.ts): `debug:<id>`. */
const DEBUG_PREFIX = 'debug:';

/**
 * The store row that routes a key's debug session: per key as well as per id, since the id may be
 * the client's choice (the debugger's "default"): one key's session never takes another's row.
 */
function debugRow(key: KeyContext, id: string): string {
  return `${DEBUG_PREFIX}${key.id}:${id}`;
}

/** A row name as the server gives it: a debug session's is made the key's own; an MCP session's id is kept. */
function rowFor(id: string, key: KeyContext): string {
  return id.startsWith(DEBUG_PREFIX) ? debugRow(key, id.slice(DEBUG_PREFIX.length)) : id;
}

/**
 * The control plane on the server's seams: keys (authenticate), scopes (authorize, and per call
 * with its arguments at the HTTP edge), rate limits and quotas with their header fields on every
 * /mcp answer (admitRequest, message by message), the audit entry written before each call,
 * which refuses the call when it cannot be written (beforeToolCall), REST routes, and sessions held by other nodes.
 */
export function controlHooks(plane: ControlPlane): ServerHooks {
  const gate = new HttpGate(plane);
  // The debug-session rows this node claimed, by the client that owns the session and its id, so a
  // session that ends by itself (idle) drops its row. Bounded: forgetting one only leaves a row
  // that sends the key's calls for that id here, where they are answered "not found".
  const claimed = new Map<string, { row: string; key: KeyContext }>();
  const slot = (owner: string, id: string) => `${owner}\u0000${id}`;
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
    async admitRequest(principal, req, res, body, session, sessionKnown) {
      const verdicts = await gate.admit(keyOf(principal), req, res, body, session, sessionKnown);
      return verdicts.map((refusal) => (refusal ? denial(refusal) : undefined));
    },
    async overRate(principal, req, res) {
      const refusal = await gate.overRate(keyOf(principal), req, res);
      return refusal ? denial(refusal) : undefined;
    },
    async admitRoute(principal, req, res, route, params) {
      const result = await gate.admitRoute(keyOf(principal), req, res, route, params);
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
        // Arguments the audit cannot keep (beginCall says why, and how to send them); otherwise the store failed.
        if (err instanceof Error && err.cause instanceof AuditRedactionError) throw err;
        throw new Error(`the audit log cannot be written (${err instanceof Error ? err.message : String(err)})`, { cause: err });
      }
    },
    async onToolCall(event, principal) {
      // A debug session opened over HTTP by a stateless request (2026-07-28, plain JSON-RPC) belongs
      // to the key (the server's owner `http:<key id>`) and has no MCP session to follow: record it
      // with this node, in the key's own row, so the other nodes forward the key's calls for it here;
      // closing it drops the row. A session an MCP session opened follows that session's row.
      const key = keyOf(principal);
      if (event.isError || event.owner !== `http:${key.id}`) return;
      if (CLOSES_SESSION.test(event.tool)) {
        const id = debugSessionOf(event.args) ?? debugSessionOf(event.result);
        if (!id) return;
        claimed.delete(slot(event.owner, id));
        await plane.releaseSession(debugRow(key, id), key);
        return;
      }
      if (!OPENS_SESSION.test(event.tool)) return;
      const id = debugSessionOf(event.result) ?? debugSessionOf((event.result as { content?: unknown } | undefined)?.content);
      if (!id) return;
      if (claimed.size >= 100_000) claimed.clear();
      claimed.set(slot(event.owner, id), { row: debugRow(key, id), key });
      await plane.claimSession(debugRow(key, id), key);
    },
    sessions: {
      claim: (id, principal) => plane.claimSession(rowFor(id, keyOf(principal)), keyOf(principal)),
      async locate(id, principal) {
        // Only the key's own rows: a key is never forwarded into another key's session.
        const key = keyOf(principal);
        const where = await plane.locateSession(rowFor(id, key));
        return where && where.key_id === key.id ? { node: where.node, url: where.url } : undefined;
      },
      release: (id) => plane.releaseSession(id),
      async expired(owner, id) {
        const held = claimed.get(slot(owner, id));
        if (!held) return;
        claimed.delete(slot(owner, id));
        await plane.releaseSession(held.row, held.key);
      },
      isForwarded: (req) => plane.isForwarded(headerOf(req, FORWARDED_HEADER)),
      async forward(target, req, res, body) {
        await forwardRequest(target, req, res, body, await plane.forwardToken(), plane.node.id);
      },
    },
    // The live view: the operator's key (every scope) sees every key's sessions; any other key its own.
    seesAll: (principal) => keyOf(principal).scopes.includes('*'),
    liveControl: (principal) => plane.liveControl(keyOf(principal)),
    listening(url) {
      if (!plane.node.url) plane.node.url = url;
    },
    close: () => plane.close(),
  };
}
