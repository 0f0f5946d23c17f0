import type { IncomingMessage, ServerResponse } from 'node:http';
import type { KeyContext } from './keys.js';
import type { ControlPlane, FinishCall, Refusal } from './plane.js';
import { hasScope } from './scopes.js';

/** The header a node puts on a request it forwards to the node holding the session. */
export const FORWARDED_HEADER = 'x-debugkit-forwarded';

interface ToolCall {
  id: string | number | null;
  name: string;
  args: unknown;
}

/** The tools/call requests in a POST body (one message or a batch). */
export function toolCallsIn(body: unknown): ToolCall[] {
  const messages = Array.isArray(body) ? body : [body];
  const calls: ToolCall[] = [];
  for (const m of messages) {
    if (!m || typeof m !== 'object' || (m as { method?: unknown }).method !== 'tools/call') continue;
    const msg = m as { id?: string | number; params?: { name?: unknown; arguments?: unknown } };
    calls.push({ id: msg.id ?? null, name: String(msg.params?.name ?? ''), args: msg.params?.arguments ?? {} });
  }
  return calls;
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
   * One /mcp request: scopes first (a forbidden call is not counted), then rate limit and quota.
   * Sets the rate-limit fields on `res` (every answer carries them); returns the refusal, if any.
   */
  async admit(key: KeyContext, req: IncomingMessage, res: ServerResponse, body: unknown, session?: string): Promise<Refusal | undefined> {
    const calls = req.method === 'POST' ? toolCallsIn(body) : [];
    const info = (c: ToolCall) => ({ tool: c.name, args: c.args, client: httpClientLabel(req), transport: 'http' as const, session: session ?? null, traceparent: headerOf(req, 'traceparent') });
    for (const call of calls) {
      const refusal = this.plane.authorizeTool(key, call.name);
      if (refusal) {
        await this.plane.recordDenied(key, info(call), refusal).catch(() => undefined);
        // 200: the JSON-RPC error is the answer, so MCP clients show the code and the scope it needs.
        return { ...refusal, status: 200 };
      }
    }
    // A request one node forwarded to another was counted where it came in.
    const forwarded = await this.plane.isForwarded(headerOf(req, FORWARDED_HEADER));
    const admission = await this.plane.admit(key, { consume: calls.length > 0 && !forwarded });
    for (const [k, v] of Object.entries(admission.headers)) res.setHeader(k, v);
    if (!admission.ok && admission.refusal) {
      for (const call of calls) await this.plane.recordDenied(key, info(call), admission.refusal).catch(() => undefined);
      return admission.refusal;
    }
    return undefined;
  }

  /**
   * A REST route of toolset `toolset`: GET needs `<toolset>:read`, other methods `<toolset>`; it
   * counts as a call and is audited before it runs. Gives the function that records its end.
   */
  async admitRoute(key: KeyContext, req: IncomingMessage, res: ServerResponse, toolset: string, route: string, params: unknown): Promise<{ finish: FinishCall } | { refusal: Refusal }> {
    const scope = req.method === 'GET' ? `${toolset}:read` : toolset;
    const tool = `${req.method} ${route}`;
    const call = { tool, args: params, client: httpClientLabel(req), transport: 'rest' as const, traceparent: headerOf(req, 'traceparent') };
    if (!hasScope(key.scopes, scope)) {
      const refusal: Refusal = { code: -32003, message: `Permission denied: ${tool} needs scope ${scope}`, data: { required_scope: scope, key_id: key.id }, status: 403 };
      await this.plane.recordDenied(key, call, refusal).catch(() => undefined);
      return { refusal };
    }
    const admission = await this.plane.admit(key, { consume: true });
    for (const [k, v] of Object.entries(admission.headers)) res.setHeader(k, v);
    if (!admission.ok && admission.refusal) {
      await this.plane.recordDenied(key, call, admission.refusal).catch(() => undefined);
      return { refusal: admission.refusal };
    }
    try {
      return { finish: await this.plane.beginCall(key, call) };
    } catch (err) {
      return { refusal: auditRefusal(err) };
    }
  }
}

export function auditRefusal(err: unknown): Refusal {
  return { code: -32603, message: `Call refused: the audit log cannot be written (${err instanceof Error ? err.message : String(err)})`, status: 503 };
}
