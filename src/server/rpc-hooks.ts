import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/**
 * Two things some contracts need that McpServer (SDK 1.x) cannot express:
 * - alias names `tools/call` accepts but `tools/list` does not show (kindly-debugger's
 *   `debugger/attach`, which breaks the SEP-986 name rule, beside the listed `debugger_attach`);
 * - tool failures answered as JSON-RPC errors with a contract's own code and `data` (McpServer
 *   turns every thrown error into an `isError` result).
 * Both work by wrapping the one `tools/call` handler McpServer installs. This reaches into the
 * SDK's request-handler map: with SDK v2, replace this file by its own hook and keep the API.
 */

const ALIASES = new WeakMap<McpServer, Map<string, string>>();
/** The `_meta` key of a result that must become a JSON-RPC error instead. */
const RPC_ERROR = 'debugkit/rpcError';

export interface RpcErrorBody {
  code: number;
  message: string;
  data?: unknown;
}

/** `tools/call` with `alias` runs the tool registered as `target`; the alias is never listed. */
export function registerToolAlias(server: McpServer, alias: string, target: string): void {
  let map = ALIASES.get(server);
  if (!map) ALIASES.set(server, (map = new Map()));
  map.set(alias, target);
}

/** A tool result that `installRpcHooks` turns into the JSON-RPC error `body`. */
export function rpcErrorResult(body: RpcErrorBody): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: body.message }], _meta: { [RPC_ERROR]: body } };
}

type Handler = (request: { params?: { name?: unknown } }, extra: unknown) => Promise<unknown>;

/** Call once per McpServer, after every toolset has registered its tools. */
export function installRpcHooks(server: McpServer): void {
  const handlers = (server.server as unknown as { _requestHandlers?: Map<string, Handler> })._requestHandlers;
  const original = handlers?.get('tools/call');
  if (!handlers || !original) return;
  handlers.set('tools/call', async (request, extra) => {
    const name = request.params?.name;
    const target = typeof name === 'string' ? ALIASES.get(server)?.get(name) : undefined;
    const result = (await original(target ? { ...request, params: { ...request.params, name: target } } : request, extra)) as CallToolResult;
    const rpc = result?._meta?.[RPC_ERROR] as RpcErrorBody | undefined;
    if (rpc) throw Object.assign(new Error(rpc.message), { code: rpc.code, data: rpc.data });
    return result;
  });
}
