import type { ServerResponse } from 'node:http';
import type { Denial, Principal, SessionArgument, SessionHooks, SessionLocation } from './createServer.js';
import { PERMISSION_DENIED } from '../mcp/call-runtime.js';

/**
 * The debug session a tools/call names (by its tool's session argument, ToolSpec.sessionArg), if
 * any; a call that leaves the argument out names the session its schema defaults to (the
 * debugger's "default"), which may be held by another node just the same.
 */
export function debugSessionArg(params: { name?: unknown; arguments?: unknown } | undefined, sessionArgOf: (tool: string) => SessionArgument | undefined): string | undefined {
  if (typeof params?.name !== 'string') return undefined;
  const arg = sessionArgOf(params.name);
  if (!arg) return undefined;
  const args = params.arguments ?? {};
  if (typeof args !== 'object') return undefined;
  const v = (args as Record<string, unknown>)[arg.name] ?? arg.default;
  return typeof v === 'string' || typeof v === 'number' ? String(v) : undefined;
}

/** The methods of the Tasks extension that name a task (`params.taskId`): served by the node that runs it. */
const TASK_METHODS = new Set(['tasks/get', 'tasks/update', 'tasks/cancel']);

/** What one message names that a node holds: a tools/call's debug session (`debug:<id>`), or a task. */
function routedId(m: unknown, sessionArgOf: (tool: string) => SessionArgument | undefined): string | undefined {
  if (!m || typeof m !== 'object') return undefined;
  const { method, params } = m as { method?: unknown; params?: { name?: unknown; arguments?: unknown; taskId?: unknown } };
  if (method === 'tools/call') {
    const id = debugSessionArg(params, sessionArgOf);
    return id === undefined ? undefined : `debug:${id}`;
  }
  if (typeof method === 'string' && TASK_METHODS.has(method) && typeof params?.taskId === 'string' && params.taskId.length <= 200) return params.taskId;
  return undefined;
}

/**
 * The node to send a request to: the one holding the debug sessions its calls name, when another
 * node holds them. A batch whose calls name sessions of more than one node (or of another node and
 * this one) cannot go whole to either, where half of it would answer "not found": `mixed` says
 * which, for a refusal.
 */
export async function sessionToForward(
  sessions: SessionHooks,
  body: unknown,
  principal: Principal,
  sessionArgOf: (tool: string) => SessionArgument | undefined,
): Promise<SessionLocation | { mixed: string } | undefined> {
  const messages = Array.isArray(body) ? body : [body];
  const remote = new Map<string, SessionLocation>();
  const here = new Set<string>();
  for (const m of messages) {
    const id = routedId(m, sessionArgOf);
    if (id === undefined) continue;
    const where = await sessions.locate(id, principal);
    if (where) remote.set(where.node, where);
    else here.add(id);
  }
  if (remote.size === 0) return undefined;
  if (remote.size === 1 && here.size === 0) return [...remote.values()][0];
  const held = [...remote.keys()].map((node) => `node ${node}`);
  return {
    mixed: `its calls name debug sessions or tasks held by ${[...held, ...(here.size > 0 ? ['this node (or by none yet)'] : [])].join(' and ')}: send each node's calls in a request of their own`,
  };
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
