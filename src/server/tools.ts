import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { z, type ZodRawShape } from 'zod';
import { DebugkitError, describeError } from '../core/errors.js';
import type { ClientContext } from './toolset.js';

const HEARTBEAT_MS = 1000;

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
  /** The text content, when the contract prescribes one; default: the value as JSON. */
  render?(value: z.infer<z.ZodObject<O>>): string;
  run(args: z.infer<z.ZodObject<I>>, ctx: CallContext): Promise<z.infer<z.ZodObject<O>>>;
}

/** How a toolset's contract wants results and errors to look. */
export interface ResultFormat {
  outputSchema(shape: ZodRawShape): z.ZodType;
  ok(value: Record<string, unknown>, text?: string): CallToolResult;
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
 * Errors as the support-bundle contract shows them: `{"error": {"type", "message"}}` with the
 * contract's type names (the error's `name`), in the text and as structuredContent.
 */
export const typedErrorFormat: ResultFormat = {
  ...plainFormat,
  error: (err) => {
    const body = { error: { type: err instanceof Error ? err.name : 'Error', message: describeError(err) } };
    return { isError: true, structuredContent: body, content: [{ type: 'text', text: `${body.error.type}: ${body.error.message}` }] };
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

/** Registers one tool: zod does the parsing, thrown errors become tool results, never crashes. */
export function registerTool<I extends ZodRawShape, O extends ZodRawShape>(
  server: McpServer,
  client: ClientContext,
  format: ResultFormat,
  spec: ToolSpec<I, O>,
): void {
  server.registerTool(
    spec.name,
    {
      title: spec.title,
      description: spec.description,
      inputSchema: spec.input,
      outputSchema: format.outputSchema(spec.output) as z.ZodObject<ZodRawShape>,
      annotations: { title: spec.title, ...spec.annotations },
    },
    (async (args: z.infer<z.ZodObject<I>>, extra: RequestExtra) => {
      const ctx: CallContext = {
        client,
        signal: extra.signal,
        progress: async (progress, total, message) => {
          const token = extra._meta?.progressToken;
          if (token === undefined) return;
          await extra
            .sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress, total, message } })
            .catch(() => undefined);
        },
      };
      // Long calls (a program running to its next stop) report progress each second when asked to.
      const started = Date.now();
      const heartbeat = setInterval(() => {
        const seconds = Math.round((Date.now() - started) / 1000);
        void ctx.progress(seconds, undefined, `${spec.name}: still working after ${seconds} s`);
      }, HEARTBEAT_MS);
      heartbeat.unref();
      // Control plane: every call is audited before it runs; when the audit cannot be written, no call.
      let finish: Awaited<ReturnType<NonNullable<ClientContext['audit']>>> | undefined;
      try {
        finish = await client.audit?.(spec.name, args, { traceparent: extra.requestInfo?.headers?.traceparent ?? extra._meta?.traceparent });
      } catch (err) {
        clearInterval(heartbeat);
        return format.error(new DebugkitError('INTERNAL', `call refused: the audit log cannot be written (${describeError(err)})`));
      }
      let result: CallToolResult | undefined;
      try {
        const { [RENDERED_TEXT]: rendered, ...value } = (await spec.run(args, ctx)) as Record<string, unknown> & { [RENDERED_TEXT]?: string };
        result = format.ok(value, spec.render?.(value as never) ?? rendered);
        return result;
      } catch (err) {
        result = format.error(err);
        return result;
      } finally {
        clearInterval(heartbeat);
        // The outcome entry is written off the answer's path (its failures are logged, not fatal).
        void finish?.({ ok: result?.isError !== true, error: result?.isError ? resultText(result) : undefined });
      }
    }) as never,
  );
}

function resultText(result: CallToolResult): string {
  return result.content.map((c) => (c.type === 'text' ? c.text : '')).join('').slice(0, 500);
}

interface RequestExtra {
  signal: AbortSignal;
  _meta?: { progressToken?: string | number; traceparent?: unknown };
  requestInfo?: { headers?: Record<string, string | string[] | undefined> };
  sendNotification(n: { method: 'notifications/progress'; params: Record<string, unknown> }): Promise<void>;
}
