import type { CallToolResult, McpServer } from '@modelcontextprotocol/server';
import { registerTaskMethods, requestAcceptsTasks, requestCapabilities, taskContext, type TaskScope, type TaskWork } from './tasks.js';
import { clientRendersApps, STOP_VIEW_URI } from './app-view.js';

/**
 * Two things some contracts need that McpServer cannot express:
 * - alias names `tools/call` accepts but `tools/list` does not show (kindly-debugger's
 *   `debugger/attach`, which breaks the SEP-986 name rule, beside the listed `debugger_attach`);
 * - tool failures answered as JSON-RPC errors with a contract's own code and `data` (McpServer
 *   turns every thrown error into an `isError` result).
 * Both work by wrapping the one `tools/call` handler McpServer installs (the SDK keeps its handlers
 * in a map by method; a thrown error with a numeric `code` and `data` becomes that JSON-RPC error).
 * Aliases are names, the same for every client, so the HTTP gate resolves them too before it
 * asks the control plane whether a key may call the tool.
 *
 * The SDK's wire codecs rewrite error code -32002 (once "resource not found") to -32602 on the way
 * out, but the kindly-debugger contract answers -32002 for an exceeded quota. So the code travels
 * inside `data` through the SDK and is put back by a wrapper around the transport's `send`.
 */

const ALIASES = new Map<string, string>();
/** The `_meta` key of a result that must become a JSON-RPC error instead. */
const RPC_ERROR = 'debugkit/rpcError';
/** Keys of an error's `data` that carry the contract's code and data past the SDK's codec. */
const WIRE_CODE = 'debugkit/code';
const WIRE_DATA = 'debugkit/data';

export interface RpcErrorBody {
  code: number;
  message: string;
  data?: unknown;
  /**
   * The text of a tool result (`isError`) to answer instead when the tool was called by its own
   * name: the JSON-RPC error is then only for its contract name (kindly-debugger's
   * `debugger/attach`, whose clients read the codes). Models see tool results; a JSON-RPC error
   * reaches them as "An error occurred while running the tool" (OpenAI Agents) or ends the turn
   * (Google genai).
   */
  visible?: string;
}

/** The names tools are listed under on a server, by contract name, where they differ (--tool-prefix). */
const listedNames = new WeakMap<object, Map<string, string>>();

/** Tool `name` is listed on `server` as `listed` (the registration wrapper says so once per tool). */
export function noteListedName(server: object, name: string, listed: string): void {
  let names = listedNames.get(server);
  if (!names) listedNames.set(server, (names = new Map()));
  names.set(name, listed);
}

/** `tools/call` with `alias` runs the tool registered as `target`; the alias is never listed. */
export function registerToolAlias(_server: unknown, alias: string, target: string): void {
  ALIASES.set(alias, target);
}

/** Every alias and the tool it calls (by contract name). */
export function toolAliases(): Array<[alias: string, target: string]> {
  return [...ALIASES];
}

/** The tool a name calls: the target of an alias, or the name itself. */
export function resolveToolAlias(name: string): string {
  return ALIASES.get(name) ?? name;
}

/** A tool result that `installRpcHooks` turns into the JSON-RPC error `body`. */
export function rpcErrorResult(body: RpcErrorBody): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: body.message }], _meta: { [RPC_ERROR]: body } };
}

type Handler = (request: { params?: { name?: unknown } }, ctx: unknown) => Promise<unknown>;

/** How tools/list shows the tools. */
export interface ListingOptions {
  /**
   * List each tool's output schema (`--output-schemas`). Off by default: they were 42% of
   * tools/list, which an agent reads on every turn, and no client shows them to the model. The
   * tools still answer with structuredContent, valid against the schema they are registered with.
   */
  outputSchemas?: boolean;
  /** Long calls as tasks (the Tasks extension) for clients that say on a call that they handle them. */
  tasks?: TaskScope;
  /** The tools (listed names) whose answers the MCP Apps stop view shows: named in their `_meta` for clients that render apps. */
  viewed?: ReadonlySet<string>;
}

/** Annotation values MCP gives a tool that says nothing (the spec's defaults): listing them says nothing either. */
const ANNOTATION_DEFAULTS: Record<string, unknown> = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true };

/** A tool's annotations less the spec's defaults and a title the tool's own `title` already gives; none when nothing is left. */
function shownAnnotations(annotations: Record<string, unknown> | undefined, title: unknown): { annotations?: Record<string, unknown> } {
  if (!annotations) return {};
  const shown = Object.entries(annotations).filter(([k, v]) => ANNOTATION_DEFAULTS[k] !== v && !(k === 'title' && v === title));
  return shown.length ? { annotations: Object.fromEntries(shown) } : {};
}

/** True while the SDK builds a tools/list answer whose output schemas installRpcHooks then drops. */
let droppingOutputSchemas = false;

/**
 * Is a tools/list being built that will not show output schemas? The SDK converts each tool's
 * output schema to JSON Schema for every listing; an output schema the listing drops need not be
 * converted for it (tools.ts hands the SDK a stand-in then, and converts it when a call needs it).
 */
export function outputSchemasDropped(): boolean {
  return droppingOutputSchemas;
}

/** Call once per McpServer, after every toolset has registered its tools. */
export function installRpcHooks(server: McpServer, options: ListingOptions = {}): void {
  const handlers = (server.server as unknown as { _requestHandlers?: Map<string, Handler> })._requestHandlers;
  const original = handlers?.get('tools/call');
  if (!handlers || !original) return;
  const list = handlers.get('tools/list');
  if (list) {
    // Every tools/list is read by the agent: the schemas lose what costs tokens and says nothing.
    handlers.set('tools/list', async (request, ctx) => {
      // The SDK builds the listing as it is called (synchronously): the flag covers its conversions.
      droppingOutputSchemas = !options.outputSchemas;
      let listing: Promise<unknown>;
      try {
        listing = list(request, ctx);
      } finally {
        droppingOutputSchemas = false;
      }
      const result = (await listing) as { tools?: Array<{ name?: string; inputSchema?: unknown; outputSchema?: unknown; annotations?: Record<string, unknown> }> };
      if (!Array.isArray(result?.tools)) return result;
      // A client that renders MCP Apps learns which answers have a view (others are not sent the field).
      const views = options.viewed && clientRendersApps(requestCapabilities(ctx as never), server.server.getClientCapabilities()) ? options.viewed : undefined;
      return {
        ...result,
        tools: result.tools.map(({ outputSchema, annotations, ...t }) => ({
          ...t,
          ...(t.inputSchema === undefined ? {} : { inputSchema: compactSchema(t.inputSchema, false) }),
          ...(outputSchema === undefined || !options.outputSchemas ? {} : { outputSchema: compactSchema(outputSchema, true) }),
          ...shownAnnotations(annotations, (t as { title?: unknown }).title),
          ...(views?.has(t.name ?? '') ? { _meta: { ui: { resourceUri: STOP_VIEW_URI }, 'ui/resourceUri': STOP_VIEW_URI } } : {}),
        })),
      };
    });
  }
  const call = async (request: Parameters<Handler>[0], ctx: unknown) => {
    const name = request.params?.name;
    const alias = typeof name === 'string' ? ALIASES.get(name) : undefined;
    // Under --tool-prefix the alias's tool is listed under its prefixed name, if this server serves it.
    const target = alias === undefined ? undefined : (listedNames.get(server)?.get(alias) ?? alias);
    const result = (await original(target ? { ...request, params: { ...request.params, name: target } } : request, ctx)) as CallToolResult;
    const rpc = result?._meta?.[RPC_ERROR] as RpcErrorBody | undefined;
    if (rpc && target === undefined && rpc.visible !== undefined) return { isError: true, content: [{ type: 'text', text: rpc.visible }] };
    if (rpc) throw Object.assign(new Error(rpc.message), { code: rpc.code, data: { [WIRE_CODE]: rpc.code, [WIRE_DATA]: rpc.data } });
    return result;
  };
  const tasks = options.tasks;
  if (tasks) registerTaskMethods(server, tasks);
  handlers.set('tools/call', async (request, ctx) => {
    const context = ctx as { mcpReq: { signal?: AbortSignal; envelope?: unknown; _meta?: unknown } };
    if (!tasks || !tasks.modern() || !requestAcceptsTasks(context)) return call(request, ctx);
    // A client that handles tasks: a call still running after the grace becomes one.
    // A task's result is the call's result as it would have gone out (2026-07-28 results carry their resultType).
    const work = (task: TaskWork) =>
      call(request, taskContext(context, task)).then(
        (result) => ({ resultType: 'complete', ...(result as object) }),
        (err: unknown) => Promise.reject(contractError(err)),
      );
    const started = await tasks.table.start(tasks.owner, work, context.mcpReq.signal);
    if ('answer' in started) return started.answer;
    if ('inline' in started) return call(request, ctx);
    if ('refused' in started) return { isError: true, content: [{ type: 'text', text: started.refused }] };
    return { resultType: 'task', ...started.task };
  });
  const protocol = server.server as unknown as { connect(transport: WireTransport): Promise<void> };
  const connect = protocol.connect.bind(protocol);
  protocol.connect = (transport) => {
    const send = transport.send.bind(transport);
    transport.send = (message, options) => send(restoreContractCode(message), options);
    return connect(transport);
  };
}

interface WireTransport {
  send(message: unknown, options?: unknown): Promise<void>;
}

/** The contract's code and data an error's `data` carries past the SDK's codec, if it carries them. */
function contractCodeOf(error: { data?: unknown } | undefined): { code: number; data?: unknown } | undefined {
  const data = error?.data as Record<string, unknown> | undefined;
  if (!data || typeof data !== 'object' || typeof data[WIRE_CODE] !== 'number') return undefined;
  const inner = data[WIRE_DATA];
  return { code: data[WIRE_CODE], ...(inner === undefined ? {} : { data: inner }) };
}

/** A thrown JSON-RPC error as its contract gives it (a task's `error` is not sent through the transport's wrapper). */
function contractError(err: unknown): unknown {
  const contract = contractCodeOf(err as { data?: unknown } | undefined);
  return contract ? Object.assign(new Error((err as Error).message), contract) : err;
}

/** An error response whose `data` carries a contract code gets that code and data back. */
export function restoreContractCode(message: unknown): unknown {
  const error = (message as { error?: { code: number; message: string; data?: unknown } }).error;
  const contract = contractCodeOf(error);
  return contract ? { ...(message as object), error: { code: contract.code, message: error!.message, ...(contract.data === undefined ? {} : { data: contract.data }) } } : message;
}

/**
 * A JSON Schema without what only inflates it: `$schema`, the ±2^53 bounds zod gives every
 * integer, and (for output schemas, which clients validate against but agents need not read)
 * descriptions. Validation is unchanged. Property *names* are never touched, only keywords.
 */
export function compactSchema(schema: unknown, dropDescriptions: boolean): unknown {
  if (Array.isArray(schema)) return schema.map((s) => compactSchema(s, dropDescriptions));
  if (!schema || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema as Record<string, unknown>)) {
    if (key === '$schema') continue;
    if (key === 'maximum' && value === Number.MAX_SAFE_INTEGER) continue;
    if (key === 'minimum' && value === Number.MIN_SAFE_INTEGER) continue;
    if (key === 'description' && dropDescriptions && typeof value === 'string') continue;
    if ((key === 'properties' || key === '$defs' || key === 'definitions' || key === 'patternProperties') && value && typeof value === 'object') {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, compactSchema(sub, dropDescriptions)]));
    } else if (value && typeof value === 'object') {
      out[key] = compactSchema(value, dropDescriptions);
    } else {
      out[key] = value;
    }
  }
  return out;
}
