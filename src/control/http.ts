import type { IncomingMessage, ServerResponse } from 'node:http';
import { JSONRPCRequestSchema } from '@modelcontextprotocol/core';
import { resolveToolAlias } from '../mcp/rpc-hooks.js';
import { AuditRedactionError, debugSessionOf } from './audit.js';
import type { KeyContext } from './keys.js';
import type { CallInfo, ControlPlane, FinishCall, Refusal } from './plane.js';

/** The header a node puts on a request it forwards to the node holding the session. */
export const FORWARDED_HEADER = 'x-debugkit-forwarded';

/** A JSON-RPC request in a /mcp body: what the rate limit counts (a tool call counts on the quota too). */
interface RequestMessage {
  id: string | number;
  method: string;
  /** tools/call: the tool and its arguments. */
  call?: { name: string; args: unknown };
}

/** The messages of a POST body, in order: one message is a batch of one. */
export function messagesOf(body: unknown): unknown[] {
  return body === undefined ? [] : Array.isArray(body) ? body : [body];
}

/** A message that is a request (a method and an id); notifications and responses are not. */
function requestOf(m: unknown): RequestMessage | undefined {
  if (!m || typeof m !== 'object') return undefined;
  const msg = m as { id?: unknown; method?: unknown; params?: { name?: unknown; arguments?: unknown } };
  if (typeof msg.method !== 'string' || (typeof msg.id !== 'string' && typeof msg.id !== 'number')) return undefined;
  // A tools/call the SDK will not parse (an id of 1.5, no "jsonrpc") runs no tool: it counts
  // against the rate as any request does, but not against the quota of calls.
  if (msg.method !== 'tools/call' || !JSONRPCRequestSchema.safeParse(m).success) return { id: msg.id, method: msg.method };
  return { id: msg.id, method: msg.method, call: { name: String(msg.params?.name ?? ''), args: msg.params?.arguments ?? {} } };
}

function headerOf(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Who is calling, for audit entries written before an MCP client has introduced itself. */
export function httpClientLabel(req: IncomingMessage): string {
  const agent = headerOf(req, 'user-agent') ?? 'unknown client';
  return `${agent.slice(0, 120)} from ${req.socket.remoteAddress ?? '?'}`;
}

/**
 * The control plane at the HTTP edge (driven by the server's `admitRequest` / `admitRoute` seams,
 * see hooks.ts): `admit` for each /mcp request once its body is read, `admitRoute` for toolsets'
 * REST routes. Both set the rate-limit fields on the answer and return refusals to be answered.
 */
export class HttpGate {
  constructor(readonly plane: ControlPlane) {}

  /**
   * One /mcp request, message by message (a single message is a batch of one): each JSON-RPC
   * request is judged and counted on its own, and audited when refused: on its own, except that
   * the requests the rate limit or quota refused are one entry for the body (counted, tools named:
   * a key past its limit must not add a batch's worth of entries a request). Every request takes a unit
   * of rate (tools/list, initialize, ping, a call the key may not make, ...); a tool call the key
   * may make takes a unit of quota too. Over the rate limit a request gets -32002; otherwise a
   * forbidden call gets -32003 naming the scope, and an allowed call over its quota -32002.
   * Notifications and responses are not counted. Returns one verdict per message, in order:
   * undefined serves it, a refusal answers it instead while the others are served. Sets the
   * rate-limit fields on `res` (every answer carries them, as they stand after the last message).
   */
  async admit(key: KeyContext, req: IncomingMessage, res: ServerResponse, body: unknown, session?: string, sessionKnown = true): Promise<Array<Refusal | undefined>> {
    const messages = req.method === 'POST' ? messagesOf(body) : [];
    const client = httpClientLabel(req);
    const traceparent = headerOf(req, 'traceparent');
    const verdicts: Array<Refusal | undefined> = [];
    let headers: Record<string, string> | undefined;
    // Once the rate limit (or, for tool calls, the quota) refused one message, the later ones in
    // the same body are refused with it without asking the store again.
    let overRate: Refusal | undefined;
    let overQuota: Refusal | undefined;
    const limitedByRate: CallInfo[] = [];
    const limitedByQuota: CallInfo[] = [];
    for (const m of messages) {
      const request = requestOf(m);
      if (!request) {
        verdicts.push(undefined);
        continue;
      }
      // A request for an MCP session this key does not hold (another key's, ended, made up) runs
      // nothing: it counts against the rate, never the quota, and the audit records the refusal.
      const forbidden = !sessionKnown
        ? { code: -32001, message: `Session not found: ${String(session).slice(0, 200)} (it ended or never existed; initialize a new one)`, status: 404 }
        : request.call
          ? this.plane.authorizeTool(key, request.call.name)
          : null;
      const quota = request.call !== undefined && !forbidden;
      let refusal = overRate ?? (quota ? overQuota : undefined);
      if (!refusal) {
        const admission = await this.plane.admit(key, { rate: true, quota });
        headers = { ...headers, ...admission.headers };
        if (!admission.ok && admission.refusal) {
          refusal = admission.refusal;
          if (refusal.data?.kind === 'quota') overQuota = refusal;
          else overRate = refusal;
        }
      }
      // 200: the JSON-RPC error is the answer, so MCP clients show the code and the scope it needs (an unknown session is a 404).
      if (!refusal && forbidden) refusal = { ...forbidden, status: sessionKnown ? 200 : 404 };
      if (refusal) {
        // A contract alias (debugger/attach) is audited as the tool it calls, as a served call is.
        const tool = request.call ? resolveToolAlias(request.call.name) : request.method;
        const call = { tool, args: request.call?.args ?? {}, client, transport: 'http' as const, session: session ?? null, traceparent };
        // Past the rate or quota, the request's refused calls are one entry (below), not one each.
        if (refusal === overRate || refusal === overQuota) (refusal === overRate ? limitedByRate : limitedByQuota).push(call);
        else await this.plane.recordDenied(key, call, refusal).catch(() => undefined);
      }
      verdicts.push(refusal);
    }
    if (overRate) await this.plane.recordDeniedBatch(key, limitedByRate, overRate).catch(() => undefined);
    if (overQuota) await this.plane.recordDeniedBatch(key, limitedByQuota, overQuota).catch(() => undefined);
    // A body with no request (notifications, GET, DELETE) is not counted: the fields say where the key stands.
    headers ??= (await this.plane.admit(key, { rate: false, quota: false })).headers;
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
    return verdicts;
  }

  /**
   * Before a large POST body is parsed: a key already at its rate limit is refused here (nothing
   * counted, as any request over the limit), its body neither parsed nor judged. Sets the rate-limit fields
   * on `res` and writes the one audit entry a request over the limit gets, naming what was asked
   * for by method and path only (the body was not read).
   */
  async overRate(key: KeyContext, req: IncomingMessage, res: ServerResponse): Promise<Refusal | undefined> {
    const over = await this.plane.overRate(key);
    if (!over?.refusal) return undefined;
    for (const [k, v] of Object.entries(over.headers)) res.setHeader(k, v);
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const call = {
      tool: `${req.method ?? 'POST'} ${path.slice(0, 200)}`,
      args: { '[not read]': 'the request body: the key was over its rate limit' },
      client: httpClientLabel(req),
      transport: 'http' as const,
      traceparent: headerOf(req, 'traceparent'),
    };
    await this.plane.recordDenied(key, call, over.refusal).catch(() => undefined);
    return over.refusal;
  }

  /**
   * A REST route of toolset `toolset`: GET needs `<toolset>:read`, other methods `<toolset>`. It is
   * a request (a unit of rate, whether or not the key has the scope) and, when allowed, the REST
   * form of a tool call (a unit of quota); it is audited before it runs. Gives the function that
   * records its end.
   */
  async admitRoute(
    key: KeyContext,
    req: IncomingMessage,
    res: ServerResponse,
    route: { toolset: string; path: string; params: Record<string, string>; scopes?: string[] },
    params: unknown,
  ): Promise<{ finish: FinishCall } | { refusal: Refusal }> {
    const scope = req.method === 'GET' ? `${route.toolset}:read` : route.toolset;
    const tool = `${req.method} ${route.path}`;
    // The session a REST call acts on is the one its path names: a body field (a forged "session_id") must not rename it in the audit.
    const call = {
      tool,
      args: params,
      client: httpClientLabel(req),
      transport: 'rest' as const,
      traceparent: headerOf(req, 'traceparent'),
      debugSession: debugSessionOf(route.params),
      route: { toolset: route.toolset, readOnly: req.method === 'GET' },
    };
    const forbidden = this.plane.authorizeScopes(key, tool, [scope, ...(route.scopes ?? [])]);
    const admission = await this.plane.admit(key, { rate: true, quota: forbidden === null });
    for (const [k, v] of Object.entries(admission.headers)) res.setHeader(k, v);
    const refusal: Refusal | undefined = admission.refusal ?? forbidden ?? undefined;
    if (refusal) {
      await this.plane.recordDenied(key, call, refusal).catch(() => undefined);
      return { refusal };
    }
    try {
      return { finish: await this.plane.beginCall(key, call) };
    } catch (err) {
      return { refusal: auditRefusal(err) };
    }
  }
}

export function auditRefusal(err: unknown): Refusal {
  // Arguments the audit cannot keep whole: the client's to change (400), not the store's failure.
  if (err instanceof Error && err.cause instanceof AuditRedactionError) return { code: -32602, message: `Call refused: ${err.message}`, status: 400 };
  return { code: -32603, message: `Call refused: the audit log cannot be written (${err instanceof Error ? err.message : String(err)})`, status: 503 };
}
