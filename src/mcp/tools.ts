import type { CallToolResult, McpServer, ServerContext, StandardSchemaWithJSON, ToolAnnotations } from '@modelcontextprotocol/server';
import { z, type ZodRawShape } from 'zod';
import { DebugkitError, describeError } from '../core/errors.js';
import { formatZodIssues } from './input-errors.js';
import { portableInputSchema, withoutAbsentNulls } from './schemas.js';
import { withCallLog } from './request-log.js';
import { noteListedName, outputSchemasDropped, rpcErrorResult } from './rpc-hooks.js';
import type { ClientContext, ToolServer } from './toolset.js';

const HEARTBEAT_MS = 1000;

/** The ceiling for one tool result, in tokens (about 4 characters each), unless configured. */
export const DEFAULT_RESULT_MAX_TOKENS = 25_000;
const CHARS_PER_TOKEN = 4;
/** The `_meta` key that flags a result cut by the ceiling. */
export const TRUNCATED_META_KEY = 'debugkit/truncated';

/**
 * A result may carry its contract text under this key: it becomes the text content and is taken
 * out of structuredContent, so long texts (grep results) are not sent twice.
 */
export const RENDERED_TEXT: unique symbol = Symbol('renderedText');

export function withText<T extends object>(value: T, text: string): T {
  return Object.assign(value, { [RENDERED_TEXT]: text });
}

/** What a tool handler gets besides its arguments. */
export interface CallContext {
  client: ClientContext;
  signal: AbortSignal;
  /** Reports progress when the client asked for it (a progressToken); otherwise does nothing. */
  progress(progress: number, total?: number, message?: string): Promise<void>;
}

export interface ToolSpec<I extends ZodRawShape, O extends ZodRawShape> {
  name: string;
  title: string;
  description: string;
  input: I;
  output: O;
  annotations?: ToolAnnotations;
  /**
   * Capability scopes a call needs beyond the tool's base scope (`<toolset>:read` for read-only
   * tools, `<toolset>` otherwise): `always`, known before any call (a key without them is not
   * shown the tool), and `of`, what this call's arguments reach for (a URL to download, a gdb
   * command that leaves the debugger). The one route by which every toolset declares them.
   */
  scopes?: {
    always?: readonly string[];
    of?(args: z.infer<z.ZodObject<I>>, ctx: CallContext): string[];
  };
  /** The text content, when the contract prescribes one; default: the value as JSON. */
  render?(value: z.infer<z.ZodObject<O>>): string;
  run(args: z.infer<z.ZodObject<I>>, ctx: CallContext): Promise<z.infer<z.ZodObject<O>>>;
}

/** How a toolset's contract wants results and errors to look. */
export interface ResultFormat {
  outputSchema(shape: ZodRawShape): z.ZodType;
  ok(value: Record<string, unknown>, text?: string): CallToolResult;
  /**
   * An error result. Its structuredContent, if any, must be valid against `outputSchema` (the
   * wrapper drops it otherwise): MCP clients validate every result once they have listed tools.
   */
  error(err: unknown): CallToolResult;
}

/** Plain results: structuredContent is the value; errors are `isError` text naming the error. */
export const plainFormat: ResultFormat = {
  outputSchema: (shape) => z.object(shape),
  ok: (value, text) => ({ structuredContent: value, content: [{ type: 'text', text: text ?? JSON.stringify(value) }] }),
  error: (err) => ({ isError: true, content: [{ type: 'text', text: errorText(err) }] }),
};

/** The GDB-MCP envelope: `{"type":"ok","content":...}` / `{"type":"error","content":"..."}`. */
export const envelopeFormat: ResultFormat = {
  outputSchema: (shape) => z.object({ type: z.enum(['ok', 'error']), content: z.union([z.object(shape), z.string()]) }),
  ok: (value) => envelope('ok', value),
  error: (err) => ({ ...envelope('error', describeError(err)), isError: true }),
};

/**
 * Errors as the support-bundle contract names them: the contract's type (the error's `name`) and
 * message, as the text `Type: message`. No structuredContent: the contract's `{"error": ...}`
 * body is not what the tools' output schemas describe, and clients reject a result that breaks them.
 */
export const typedErrorFormat: ResultFormat = {
  ...plainFormat,
  error: (err) => {
    const type = err instanceof Error ? err.name : 'Error';
    return { isError: true, content: [{ type: 'text', text: `${type}: ${describeError(err)}` }] };
  },
};

function envelope(type: 'ok' | 'error', content: unknown): CallToolResult {
  const body = { type, content };
  return { structuredContent: body, content: [{ type: 'text', text: JSON.stringify(body) }] };
}

function errorText(err: unknown): string {
  if (err instanceof DebugkitError) return `${err.name} (${err.code}): ${err.message}`;
  return describeError(err);
}

/** One finished tool call, for logs and the audit seam. */
export interface ToolCallEvent {
  owner: string;
  principal?: string;
  tool: string;
  args: unknown;
  isError: boolean;
  durationMs: number;
  requestId?: string | number;
  truncated: boolean;
  /** The result's structuredContent (e.g. the id of a session a call opened). */
  result?: unknown;
}

/** A tool call about to run, for the pre-call seam (the audit entry written before the call). */
export interface ToolCallStart {
  owner: string;
  tool: string;
  args: unknown;
  requestId?: string | number;
  /** The W3C trace context the request carried (HTTP `traceparent` header, or `_meta.traceparent`). */
  traceparent?: string;
}

/** What a pre-call seam hands back: called once the call ended (its errors are swallowed). */
export type EndToolCall = (outcome: { ok: boolean; error?: string }) => void | Promise<void>;

/** A tool as the control plane sees it: its name, whether it only looks, the capability scopes it always needs. */
export interface ToolDescription {
  name: string;
  readOnly: boolean;
  scopes: readonly string[];
}

/** A refused call: the JSON-RPC error the client gets (-32003 permission denied, with the scope in `data`). */
export interface CallDenial {
  code?: number;
  message: string;
  data?: unknown;
}

/**
 * What the registration wrapper needs from the server around it, set per MCP server instance on
 * its ClientContext (`calls`). Absent: defaults (the ceiling, no audit, no log).
 */
export interface CallRuntime {
  /** The ceiling for one result, in tokens. */
  maxResultTokens?: number;
  /**
   * The name a tool is listed and called by (`--tool-prefix`); default: its contract name. Every
   * other name here (mayCall, describe, the audit's `tool`) is this one, as clients see it.
   */
  toolName?(tool: string): string;
  /** May this caller call this tool? Tools it may not are never registered (so never listed). */
  mayCall?(tool: string): boolean;
  /** Told each tool as it registers (the server's catalog of tools for the control plane). */
  describe?(tool: ToolDescription): void;
  /**
   * May this caller make this call, which needs these capability scopes (never empty)? Asked
   * before the audit entry is written; a denial is answered as a JSON-RPC error and the call never runs.
   */
  authorize?(start: ToolCallStart, scopes: string[]): Promise<true | CallDenial>;
  /**
   * Called before every tool call, once its arguments are valid. Throwing refuses the call (it
   * never runs; the client gets an error result naming why), e.g. when the audit cannot be written.
   */
  beforeToolCall?(start: ToolCallStart): Promise<EndToolCall | void> | EndToolCall | void;
  /** Called after every tool call (logs, audit). Its errors are swallowed. */
  onToolCall?(event: ToolCallEvent): void | Promise<void>;
}

/** Registers one tool: zod does the parsing, thrown errors become tool results, never crashes. */
export function registerTool<I extends ZodRawShape, O extends ZodRawShape>(server: ToolServer, client: ClientContext, format: ResultFormat, spec: ToolSpec<I, O>): void {
  const runtime = client.calls ?? {};
  // The one place a tool gets the name it is listed, called, authorized and audited by.
  const name = runtime.toolName?.(spec.name) ?? spec.name;
  runtime.describe?.({ name, readOnly: spec.annotations?.readOnlyHint === true, scopes: spec.scopes?.always ?? [] });
  if (runtime.mayCall && !runtime.mayCall(name)) return;
  if (name !== spec.name) noteListedName(server, spec.name, name);
  const { outputSchema, listedInput, listedOutput } = schemasFor(format, spec);
  const maxChars = (runtime.maxResultTokens ?? DEFAULT_RESULT_MAX_TOKENS) * CHARS_PER_TOKEN;
  (server as McpServer).registerTool(
    name,
    {
      title: spec.title,
      description: spec.description,
      inputSchema: listedInput,
      outputSchema: listedOutput,
      annotations: { title: spec.title, ...spec.annotations },
    },
    async (args: unknown, extra: ServerContext): Promise<CallToolResult> => {
      const token = extra.mcpReq._meta?.progressToken;
      const ctx: CallContext = {
        client,
        signal: extra.mcpReq.signal,
        progress: async (progress, total, message) => {
          if (token === undefined) return;
          await extra.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress, total, message } }).catch(() => undefined);
        },
      };
      // Long calls (a program running to its next stop) report progress each second when asked to.
      const started = performance.now();
      const heartbeat =
        token === undefined
          ? undefined
          : setInterval(() => {
              const seconds = Math.round((performance.now() - started) / 1000);
              void ctx.progress(seconds, undefined, `${name}: still working after ${seconds} s`);
            }, HEARTBEAT_MS);
      heartbeat?.unref();
      let result: CallToolResult;
      let end: EndToolCall | void = undefined;
      const start: ToolCallStart = { owner: client.owner, tool: name, args, requestId: extra.mcpReq.id, traceparent: traceparentOf(extra) };
      const denial = await deniedScopes(spec, args, ctx, start, runtime);
      if (denial) {
        if (heartbeat) clearInterval(heartbeat);
        return rpcErrorResult({ code: denial.code ?? PERMISSION_DENIED, message: denial.message, ...(denial.data === undefined ? {} : { data: denial.data }) });
      }
      if (runtime.beforeToolCall) {
        try {
          end = await runtime.beforeToolCall(start);
        } catch (err) {
          if (heartbeat) clearInterval(heartbeat);
          return checkedError(format.error(new DebugkitError('INTERNAL', `call refused: ${describeError(err)}`)), outputSchema);
        }
      }
      try {
        const { [RENDERED_TEXT]: rendered, ...value } = (await withCallLog(client, extra, () => spec.run(args as never, ctx))) as Record<string, unknown> & {
          [RENDERED_TEXT]?: string;
        };
        const text = spec.render?.(value as never) ?? rendered;
        result = capResult(format.ok(value, text), maxChars, text === undefined ? (v) => format.ok(v).content : undefined);
      } catch (err) {
        result = capResult(checkedError(format.error(err), outputSchema), maxChars);
      } finally {
        if (heartbeat) clearInterval(heartbeat);
      }
      if (end) {
        // The outcome entry is written off the answer's path (its failures are logged, not fatal):
        // after this turn of the event loop, so a synchronous store (SQLite) writes it only once
        // the answer has gone out.
        const done = end;
        const outcome = { ok: result.isError !== true, ...(result.isError ? { error: resultText(result) } : {}) };
        setImmediate(() => void Promise.resolve(done(outcome)).catch(() => undefined));
      }
      if (runtime.onToolCall) {
        const event: ToolCallEvent = {
          owner: client.owner,
          tool: name,
          args,
          isError: result.isError === true,
          durationMs: Math.round((performance.now() - started) * 1000) / 1000,
          requestId: extra.mcpReq.id,
          truncated: result._meta?.[TRUNCATED_META_KEY] !== undefined,
          result: result.structuredContent,
        };
        try {
          await runtime.onToolCall(event);
        } catch {
          // The audit/log seam reports; it never turns a result into a crash.
        }
      }
      return result;
    },
  );
}

/** JSON-RPC error: the caller's key may not do this (the kindly contract's -32003). */
export const PERMISSION_DENIED = -32003;

/** The denial for a call whose capability scopes the caller lacks; undefined when it may go on. */
async function deniedScopes(spec: ToolSpec<ZodRawShape, ZodRawShape>, args: unknown, ctx: CallContext, start: ToolCallStart, runtime: CallRuntime): Promise<CallDenial | undefined> {
  if (!runtime.authorize || !spec.scopes) return undefined;
  const needed = [...new Set([...(spec.scopes.always ?? []), ...(spec.scopes.of?.(args as never, ctx) ?? [])])];
  if (needed.length === 0) return undefined;
  const verdict = await runtime.authorize(start, needed);
  return verdict === true ? undefined : verdict;
}

function resultText(result: CallToolResult): string {
  return result.content
    .map((c) => (c.type === 'text' ? c.text : ''))
    .join('')
    .slice(0, 500);
}

/** The W3C traceparent of the request a call came in: the HTTP header, else `_meta.traceparent`. */
function traceparentOf(extra: ServerContext): string | undefined {
  const fromHeader = extra.http?.req?.headers.get('traceparent') ?? undefined;
  const fromMeta = (extra.mcpReq._meta as Record<string, unknown> | undefined)?.traceparent;
  const value = fromHeader ?? (typeof fromMeta === 'string' ? fromMeta : undefined);
  return value && /^[\da-f]{2}-[\da-f]{32}-[\da-f]{16}-[\da-f]{2}$/i.test(value.trim()) ? value.trim() : undefined;
}

interface ToolSchemas {
  inputKeys: string;
  outputSchema: z.ZodType;
  listedInput: StandardSchemaWithJSON;
  listedOutput: StandardSchemaWithJSON;
}

/**
 * A tool's schemas are built once per process, not once per server instance: a 2026-07-28 request
 * gets a server instance of its own, and building zod objects and their JSON Schemas for every
 * tool on every request cost milliseconds. Keyed by format and tool name (a tool's schemas do not
 * change while the process runs); the input's field names guard the key.
 */
const schemaCache = new WeakMap<ResultFormat, Map<string, ToolSchemas>>();

function schemasFor(format: ResultFormat, spec: ToolSpec<ZodRawShape, ZodRawShape>): ToolSchemas {
  let byName = schemaCache.get(format);
  if (!byName) schemaCache.set(format, (byName = new Map()));
  const inputKeys = Object.keys(spec.input).join(',');
  const cached = byName.get(spec.name);
  if (cached && cached.inputKeys === inputKeys) return cached;
  const outputSchema = format.outputSchema(spec.output);
  const built: ToolSchemas = {
    inputKeys,
    outputSchema,
    listedInput: friendlyInput(z.object(spec.input)),
    listedOutput: memoizedJson(
      outputSchema,
      (value) => {
        const r = outputSchema.safeParse(value);
        return r.success ? { value: r.data } : { issues: r.error.issues.map((i) => ({ message: i.message, path: i.path })) };
      },
      undefined,
      { output: true },
    ),
  };
  byName.set(spec.name, built);
  return built;
}

/** What a tools/list that drops output schemas is given for one (see memoizedJson). */
const UNLISTED_OUTPUT = Object.freeze({ type: 'object' });

/** A standard schema whose JSON Schema conversions are computed once (and rewritten by `shown`, when given). */
function memoizedJson(
  schema: z.ZodType,
  validate: (value: unknown) => unknown,
  shown: (json: unknown) => unknown = (json) => json,
  { output = false }: { output?: boolean } = {},
): StandardSchemaWithJSON {
  const std = schema['~standard'] as unknown as {
    jsonSchema: { input(o?: unknown): unknown; output(o?: unknown): unknown };
  };
  const memo = new Map<string, unknown>();
  const once = (io: 'input' | 'output') => (options?: { target?: string }) => {
    const key = `${io}:${options?.target ?? ''}`;
    // An output schema a tools/list drops (rpc-hooks.ts) is not converted for it: the listing gets
    // a stand-in it throws away (some 15 ms of the first tools/list: issue 19); a call converts it.
    if (output && !memo.has(key) && outputSchemasDropped()) return UNLISTED_OUTPUT;
    if (!memo.has(key)) memo.set(key, shown(std.jsonSchema[io](options)));
    return memo.get(key);
  };
  return {
    '~standard': { version: 1, vendor: 'debugkit', validate, jsonSchema: { input: once('input'), output: once('output') } },
  } as unknown as StandardSchemaWithJSON;
}

/** An error result whose structuredContent breaks the output schema is sent as text only. */
function checkedError(result: CallToolResult, schema: z.ZodType): CallToolResult {
  if (result.structuredContent === undefined) return result;
  if (schema.safeParse(result.structuredContent).success) return result;
  const { structuredContent: _dropped, ...rest } = result;
  return rest;
}

/**
 * The input schema as listed (the zod object's JSON Schema, in the form every LLM stack takes:
 * see schemas.ts) with a validator whose errors name each field and what it accepts, instead of
 * zod's raw issue list. The one place arguments are read: an optional argument sent as `null`
 * is absent, for every tool of every toolset (a toolset's REST routes parse their own bodies).
 */
function friendlyInput(schema: z.ZodObject<ZodRawShape>): StandardSchemaWithJSON {
  return memoizedJson(
    schema,
    (value) => {
      const parsed = schema.safeParse(withoutAbsentNulls(value ?? {}, schema));
      if (parsed.success) return { value: parsed.data };
      return { issues: [{ message: formatZodIssues(parsed.error.issues, schema) }] };
    },
    (json) => (json && typeof json === 'object' && (json as { type?: unknown }).type === 'object' ? portableInputSchema(json) : json),
  );
}

/**
 * The one ceiling for every tool result: an answer whose text and structured content together are
 * larger than `maxChars` is cut (each part to its share of the ceiling), flagged in `_meta` under
 * `debugkit/truncated`, and followed by a text note saying how to get the rest. Both parts count:
 * a client may show the model either or both. Per-tool limits sit below it; this catches what they miss.
 */
export function capResult(result: CallToolResult, maxChars: number, rerender?: (value: Record<string, unknown>) => CallToolResult['content']): CallToolResult {
  const textLength = (result.content ?? []).reduce((n, c) => n + (c.type === 'text' ? c.text.length : 0), 0);
  const structuredLength = result.structuredContent === undefined ? 0 : JSON.stringify(result.structuredContent).length;
  const size = textLength + structuredLength;
  if (size <= maxChars) return result;
  const NOTE_ROOM = 400;
  const budget = Math.max(0, maxChars - NOTE_ROOM);
  // A short text (a summary line) is kept whole; a long one gets at most half, or all of it when
  // there is no structured content. The structured content gets the rest.
  const textBudget = structuredLength === 0 ? budget : Math.min(textLength, Math.floor(budget / 2));
  const structuredBudget = budget - textBudget;
  const out: CallToolResult = { ...result };
  if (result.structuredContent !== undefined && structuredLength > structuredBudget) {
    out.structuredContent = shrink(structuredClone(result.structuredContent), structuredBudget) as Record<string, unknown>;
  }
  if (rerender && out.structuredContent) out.content = rerender(out.structuredContent as Record<string, unknown>);
  const texts = (out.content ?? []).filter((c) => c.type === 'text');
  const renderedLength = texts.reduce((n, c) => n + (c.type === 'text' ? c.text.length : 0), 0);
  if (renderedLength > textBudget) {
    out.content = (out.content ?? []).map((c) => (c.type === 'text' ? { ...c, text: cutText(c.text, Math.floor((textBudget * c.text.length) / renderedLength)) } : c));
  }
  const originalTokens = Math.ceil(size / CHARS_PER_TOKEN);
  const limitTokens = Math.floor(maxChars / CHARS_PER_TOKEN);
  out._meta = { ...result._meta, [TRUNCATED_META_KEY]: { originalTokens, limitTokens } };
  out.content = [
    ...(out.content ?? []),
    {
      type: 'text',
      text: `[truncated: this answer had about ${originalTokens} tokens and was cut to the ${limitTokens}-token ceiling; ask for less to see the rest (a range, a filter, a tail or a page cursor)]`,
    },
  ];
  return out;
}

function cutText(text: string, maxChars: number): string {
  return `${text.slice(0, Math.max(0, maxChars - 20))}\n...[cut]`;
}

/** Cuts the largest strings and arrays of a JSON value until it serialises within `maxChars`. */
function shrink(value: unknown, maxChars: number): unknown {
  for (let round = 0; round < 64; round++) {
    const total = JSON.stringify(value).length;
    if (total <= maxChars) break;
    const largest = largestPart(value);
    if (!largest) break;
    const excess = total - maxChars;
    const { parent, key, part } = largest;
    if (typeof part === 'string') {
      const keep = Math.max(0, part.length - excess - 16);
      parent[key] = `${part.slice(0, keep)}...[cut]`;
    } else if (Array.isArray(part)) {
      const size = JSON.stringify(part).length;
      const keep = Math.max(0, Math.floor((part.length * Math.max(0, size - excess)) / size) - (part.length > 1 ? 1 : 0));
      if (keep >= part.length) part.length = Math.max(0, part.length - 1);
      else part.length = keep;
    }
  }
  return value;
}

/** An array or object holding a part, indexed by the part's key. */
type Container = Record<string | number, unknown>;

function largestPart(root: unknown): { parent: Container; key: string | number; part: unknown } | undefined {
  let best: { parent: Container; key: string | number; part: unknown; size: number } | undefined;
  const visit = (parent: Container, key: string | number, node: unknown) => {
    if (typeof node === 'string') {
      if (node.length > 64 && (!best || node.length > best.size)) best = { parent, key, part: node, size: node.length };
      return;
    }
    if (Array.isArray(node)) {
      const size = JSON.stringify(node).length;
      if (node.length > 0 && (!best || size > best.size)) best = { parent, key, part: node, size };
      node.forEach((child, i) => visit(node as unknown as Container, i, child));
      return;
    }
    if (node && typeof node === 'object') for (const [k, child] of Object.entries(node)) visit(node as Container, k, child);
  };
  if (root && typeof root === 'object') for (const [k, child] of Object.entries(root)) visit(root as Container, k, child);
  return best;
}
