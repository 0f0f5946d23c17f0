import type { StandardSchemaWithJSON } from '@modelcontextprotocol/server';
import { z, type ZodRawShape } from 'zod';
import { formatZodIssues } from './input-errors.js';
import type { ResultFormat } from './result-formats.js';
import { outputSchemasDropped } from './rpc-hooks.js';
import { portableInputSchema, withoutAbsentNulls } from './schemas.js';

export interface ToolSchemas {
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

export function schemasFor(format: ResultFormat, spec: { name: string; input: ZodRawShape; output: ZodRawShape }): ToolSchemas {
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

/**
 * The input schema as listed (the zod object's JSON Schema, in the form every LLM stack takes:
 * see schemas.ts) with a validator whose errors name each field and what it accepts, instead of
 * zod's raw issue list. The one place arguments are read: an optional argument sent as `null`
 * is absent, and one the tool does not take is refused, for every tool of every toolset (a
 * toolset's REST routes parse their own bodies).
 */
function friendlyInput(schema: z.ZodObject<ZodRawShape>): StandardSchemaWithJSON {
  // An argument the tool does not take is refused, naming the valid ones: dropped silently, a
  // misnamed one looked taken (debugger_get_variables {"expression": ...} answered every local).
  const strict = schema.strict();
  return memoizedJson(
    schema,
    (value) => {
      const parsed = strict.safeParse(withoutAbsentNulls(value ?? {}, schema));
      if (parsed.success) return { value: parsed.data };
      return { issues: [{ message: formatZodIssues(parsed.error.issues, schema) }] };
    },
    (json) => (json && typeof json === 'object' && (json as { type?: unknown }).type === 'object' ? portableInputSchema(json) : json),
  );
}
