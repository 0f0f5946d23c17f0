import type { ServerResponse } from 'node:http';
import type { Denial, Principal, SessionHooks, SessionLocation } from './createServer.js';
import { PERMISSION_DENIED } from '../mcp/call-runtime.js';

/** Argument names by which tools name the debug session they act on (gdb `id`, python `sessionId`, ...). */
const SESSION_ARGS = ['session_id', 'sessionId', 'id'];

/** The debug session a tools/call names in its arguments, if any. */
export function debugSessionArg(args: unknown): string | undefined {
  if (!args || typeof args !== 'object') return undefined;
  const a = args as Record<string, unknown>;
  for (const name of SESSION_ARGS) {
    const v = a[name];
    if (typeof v === 'string' || typeof v === 'number') return String(v);
  }
  return undefined;
}

/**
 * A stateless request (2026-07-28 or plain JSON-RPC) has no MCP session to follow: when one of
 * its tools/calls names a debug session another node recorded (`debug:<id>`), that node answers.
 */
export async function sessionToForward(sessions: SessionHooks, body: unknown, principal: Principal): Promise<SessionLocation | undefined> {
  const messages = Array.isArray(body) ? body : [body];
  for (const m of messages) {
    if (!m || typeof m !== 'object' || (m as { method?: unknown }).method !== 'tools/call') continue;
    const id = debugSessionArg((m as { params?: { arguments?: unknown } }).params?.arguments);
    if (id === undefined) continue;
    const where = await sessions.locate(`debug:${id}`, principal);
    if (where) return where;
  }
  return undefined;
}

/** Answers a Denial as JSON-RPC (one error per request in the body) with its status and header fields. */
export function sendDenial(res: ServerResponse, denial: Denial, body: unknown, status: number): void {
  for (const [k, v] of Object.entries(denial.headers ?? {})) res.setHeader(k, v);
  const error = { code: denial.code ?? PERMISSION_DENIED, message: denial.message, ...(denial.data === undefined ? {} : { data: denial.data }) };
  const messages = body === undefined ? [] : Array.isArray(body) ? body : [body];
  const ids = messages.filter((m) => m && typeof m === 'object' && 'id' in m).map((m) => (m as { id: string | number | null }).id);
  const answer = Array.isArray(body) ? ids.map((id) => ({ jsonrpc: '2.0', id, error })) : { jsonrpc: '2.0', id: ids[0] ?? null, error };
  const text = JSON.stringify(answer);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}
