import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { resolveToolAlias } from '../mcp/rpc-hooks.js';
import type { Debugkit, Principal } from './createServer.js';

/** JSON-RPC error: the caller's key may not do this (the seed's -32003). */
export const PERMISSION_DENIED = -32003;

/**
 * The authorization seam on the wire: a tools/call of a tool the principal may not call is
 * answered here with the Denial (default -32003), before any toolset runs. Undefined: let it through.
 */
export function deniedCall(dk: Debugkit, principal: Principal, message: unknown): JSONRPCMessage | undefined {
  const authorize = dk.hooks.authorize;
  if (!authorize) return undefined;
  const m = message as { id?: string | number; method?: unknown; params?: { name?: unknown } };
  if (m.method !== 'tools/call' || m.id === undefined || typeof m.params?.name !== 'string') return undefined;
  const verdict = authorize(principal, resolveToolAlias(m.params.name)); // a contract alias is judged as the tool it calls
  if (verdict === true) return undefined;
  const error = { code: verdict.code ?? PERMISSION_DENIED, message: verdict.message, ...(verdict.data === undefined ? {} : { data: verdict.data }) };
  return { jsonrpc: '2.0', id: m.id, error } as unknown as JSONRPCMessage;
}
