import type { CallToolResult } from '@modelcontextprotocol/server';
import { z, type ZodRawShape } from 'zod';
import { DebugkitError, describeError } from '../core/errors.js';

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

/** The GDB-MCP envelope: `{"type":"ok","content":...}` / `{"type":"error","content":"..."}`, as the structured content and as the text. */
export const envelopeFormat: ResultFormat = {
  outputSchema: (shape) => z.object({ type: z.enum(['ok', 'error']), content: z.union([z.object(shape), z.string()]) }),
  ok: (value) => envelope('ok', value),
  error: (err) => ({ ...envelope('error', describeError(err)), isError: true }),
};

/**
 * The same envelope as the structured content, with text for the model: what a tool renders (gdb's
 * console output and stop line), and an error's message alone.
 */
export const compactEnvelopeFormat: ResultFormat = {
  ...envelopeFormat,
  ok: (value, text) => envelope('ok', value, text),
  error: (err) => {
    const message = describeError(err);
    return { ...envelope('error', message, message), isError: true };
  },
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

function envelope(type: 'ok' | 'error', content: unknown, text?: string): CallToolResult {
  const body = { type, content };
  return { structuredContent: body, content: [{ type: 'text', text: text ?? JSON.stringify(body) }] };
}

function errorText(err: unknown): string {
  if (err instanceof DebugkitError) return `${err.name} (${err.code}): ${err.message}`;
  return describeError(err);
}

/** An error result whose structuredContent breaks the output schema is sent as text only. */
export function checkedError(result: CallToolResult, schema: z.ZodType): CallToolResult {
  if (result.structuredContent === undefined) return result;
  if (schema.safeParse(result.structuredContent).success) return result;
  const { structuredContent: _dropped, ...rest } = result;
  return rest;
}
