import type { IncomingMessage, ServerResponse } from 'node:http';
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { resolveToolAlias } from '../mcp/rpc-hooks.js';
import { PERMISSION_DENIED } from '../mcp/call-runtime.js';
import type { Debugkit, Principal } from './createServer.js';

/**
 * The authorization seam on the wire: a tools/call of a tool the principal may not call is
 * answered here with the Denial (default -32003), before any toolset runs. Undefined: let it through.
 */
export function deniedCall(dk: Debugkit, principal: Principal, message: unknown): JSONRPCMessage | undefined {
  const authorize = dk.hooks.authorize;
  if (!authorize) return undefined;
  const m = message as { id?: string | number; method?: unknown; params?: { name?: unknown } };
  if (m.method !== 'tools/call' || m.id === undefined || typeof m.params?.name !== 'string') return undefined;
  // A contract alias is judged as the tool it calls, by that tool's listed name (--tool-prefix).
  const target = resolveToolAlias(m.params.name);
  const verdict = authorize(principal, target === m.params.name ? target : (dk.toolName?.(target) ?? target));
  if (verdict === true) return undefined;
  const error = { code: verdict.code ?? PERMISSION_DENIED, message: verdict.message, ...(verdict.data === undefined ? {} : { data: verdict.data }) };
  return { jsonrpc: '2.0', id: m.id, error } as unknown as JSONRPCMessage;
}

/** The most messages one JSON-RPC batch may hold (the SDK's bound, checked before anything is counted). */
export const MAX_BATCH = 100;

/** What is left of a /mcp body once each of its messages was admitted or refused. */
export interface Admitted {
  /** The messages to serve, in the body's form (an array stays an array); undefined when none is left. */
  body: unknown;
  /** The answers to the refused requests (JSON-RPC errors), to go out with the served messages' answers. */
  refusals: JSONRPCMessage[];
  /** The HTTP status for the refusals when nothing is left to serve. */
  status: number;
}

/**
 * The /mcp edge, one code path for single messages and batches: the control plane's
 * `admitRequest` and the `authorize` seam judge each message on its own; refused requests are
 * answered with their own error, the rest go on to be served.
 */
export async function admitBody(dk: Debugkit, principal: Principal, req: IncomingMessage, res: ServerResponse, body: unknown, session: string | undefined, sessionKnown = true): Promise<Admitted> {
  const messages = body === undefined ? [] : Array.isArray(body) ? body : [body];
  const verdicts = dk.hooks.admitRequest ? await dk.hooks.admitRequest(principal, req, res, body, session, sessionKnown) : [];
  const kept: unknown[] = [];
  const refusals: JSONRPCMessage[] = [];
  const statuses = new Set<number>();
  messages.forEach((message, i) => {
    const denial = verdicts[i];
    if (denial) {
      for (const [k, v] of Object.entries(denial.headers ?? {})) res.setHeader(k, v);
      statuses.add(denial.status ?? statusFor(denial.code));
      const error = { code: denial.code ?? PERMISSION_DENIED, message: denial.message, ...(denial.data === undefined ? {} : { data: denial.data }) };
      // A refused notification has no id to answer; it is answered (with id null) only if nothing else is.
      refusals.push({ jsonrpc: '2.0', id: requestIdOf(message) ?? null, error } as unknown as JSONRPCMessage);
      return;
    }
    const denied = deniedCall(dk, principal, message);
    if (denied) {
      statuses.add(403);
      refusals.push(denied);
      return;
    }
    kept.push(message);
  });
  const status = statuses.size === 1 ? [...statuses][0]! : 200;
  if (refusals.length === 0) return { body, refusals, status };
  const answered = refusals.filter((r) => (r as { id: unknown }).id !== null);
  if (kept.length > 0) return { body: Array.isArray(body) ? kept : kept[0], refusals: answered, status };
  return { body: undefined, refusals: answered.length > 0 ? answered : refusals.slice(0, 1), status };
}

function requestIdOf(message: unknown): string | number | undefined {
  const id = (message as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : undefined;
}

/** HTTP status for kindly-debugger's error codes: -32001 401, -32002 429, -32003 403. */
export function statusFor(code: number | undefined): number {
  return code === -32001 ? 401 : code === -32002 ? 429 : 403;
}
