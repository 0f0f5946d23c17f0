import type { CallToolResult, McpServer, ServerContext, ToolAnnotations } from '@modelcontextprotocol/server';
import type { z, ZodRawShape } from 'zod';
import { DebugkitError, describeError } from '../core/errors.js';
import { PERMISSION_DENIED, type CallDenial, type CallOutcome, type CallRuntime, type EndToolCall, type ToolCallEvent, type ToolCallStart } from './call-runtime.js';
import { withCallLog } from './request-log.js';
import { CHARS_PER_TOKEN, DEFAULT_RESULT_MAX_TOKENS, TRUNCATED_META_KEY, capResult } from './result-ceiling.js';
import { redactAnswer } from './redact-answers.js';
import { checkedError, type ResultFormat } from './result-formats.js';
import { noteListedName, rpcErrorResult } from './rpc-hooks.js';
import { schemasFor } from './tool-schemas.js';
import type { ClientContext, ToolServer } from './toolset.js';

const HEARTBEAT_MS = 1000;
/** A tool's own progress message is left standing this long before the heartbeat speaks again. */
const OWN_PROGRESS_KEPT_MS = 5000;

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
    of?(args: z.infer<z.ZodObject<I>>, ctx: CallContext): string[] | Promise<string[]>;
  };
  /** The name its contract gives it, when that is not `name` (kindly-debugger's `debugger/attach`): callable by that name too. */
  contractName?: string;
  /**
   * The argument naming the session the call acts on (`id`, `sessionId`, `session_id`), when it
   * has one: a call is routed to the node that holds that session. defineToolset sets it from the
   * toolset's `sessionArg`.
   */
  sessionArg?: string;
  /** The text content, when the contract prescribes one (a format may keep its own); default: the value as JSON. */
  render?(value: z.infer<z.ZodObject<O>>): string;
  run(args: z.infer<z.ZodObject<I>>, ctx: CallContext): Promise<z.infer<z.ZodObject<O>>>;
}

/** Registers one tool: zod does the parsing, thrown errors become tool results, never crashes. */
export function registerTool<I extends ZodRawShape, O extends ZodRawShape>(server: ToolServer, client: ClientContext, format: ResultFormat, spec: ToolSpec<I, O>): void {
  const runtime = client.calls ?? {};
  // The one place a tool gets the name it is listed, called, authorized and audited by.
  const name = runtime.toolName?.(spec.name) ?? spec.name;
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
      const send = async (progress: number, total?: number, message?: string) => {
        if (token === undefined) return;
        await extra.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress, total, message } }).catch(() => undefined);
      };
      // When the tool last said how it is doing itself: its own words are not overwritten by the heartbeat's for a while.
      let ownProgressAt = -Infinity;
      const ctx: CallContext = {
        client,
        signal: extra.mcpReq.signal,
        progress: (progress, total, message) => {
          ownProgressAt = performance.now();
          return send(progress, total, message);
        },
      };
      // Long calls (a program running to its next stop) report progress each second when asked to.
      const started = performance.now();
      const heartbeat =
        token === undefined
          ? undefined
          : setInterval(() => {
              const now = performance.now();
              if (now - ownProgressAt < OWN_PROGRESS_KEPT_MS) return;
              const seconds = Math.round((now - started) / 1000);
              void send(seconds, undefined, `${name}: still working after ${seconds} s`);
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
      if (runtime.redact !== false) result = redactAnswer(result);
      if (end) {
        // The outcome entry is written off the answer's path (its failures are logged, not fatal):
        // after this turn of the event loop, so a synchronous store (SQLite) writes it only once
        // the answer has gone out.
        const done = end;
        // A call whose request was cancelled (tasks/cancel, notifications/cancelled, the client gone) is recorded as such,
        // whatever the tool made of its end: a cancelled task was recorded "ok" (attack 18ao c2-3).
        const signal = extra.mcpReq.signal;
        const outcome: CallOutcome = signal.aborted
          ? {
              ok: false,
              cancelled: true,
              error: `cancelled: ${signal.reason instanceof Error ? signal.reason.message : typeof signal.reason === 'string' ? signal.reason : 'the request was cancelled'}`,
            }
          : { ok: result.isError !== true, ...(result.isError ? { error: resultText(result) } : {}) };
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

/** The denial for a call whose capability scopes the caller lacks; undefined when it may go on. */
async function deniedScopes(spec: ToolSpec<ZodRawShape, ZodRawShape>, args: unknown, ctx: CallContext, start: ToolCallStart, runtime: CallRuntime): Promise<CallDenial | undefined> {
  if (!runtime.authorize || !spec.scopes) return undefined;
  const needed = [...new Set([...(spec.scopes.always ?? []), ...((await spec.scopes.of?.(args as never, ctx)) ?? [])])];
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
