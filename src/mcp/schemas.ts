import { z } from 'zod';

/**
 * Tool input schemas as every LLM stack takes them, and arguments as those stacks send them.
 *
 * A tool's zod schema stays what the server validates with; what `tools/list` shows is its JSON
 * Schema rewritten into the subset that Gemini's function declarations (an OpenAPI 3.0 subset)
 * and OpenAI's strict mode (as OpenAI Agents converts MCP tools) both take unchanged:
 * - one `type` per schema, never a type array: an optional argument is shown as plain optional,
 *   without its `null` (OpenAI Agents' strict conversion adds `null` to optional arguments itself;
 *   Gemini has no type arrays), and a `null` it is sent anyway means absent (`withoutAbsentNulls`);
 * - no `anyOf` where one form will do: a `null` branch goes, and so does a map branch (an object
 *   of free keys, which neither can express) when another form is left, e.g. `["NAME=value"]`;
 * - no `exclusiveMinimum`/`exclusiveMaximum` (an integer bound becomes the inclusive one; a
 *   fraction's is said in the description), no `propertyNames`, no `$schema`;
 * - a `format` only where Gemini knows it (date-time), without the long `pattern` zod adds to it;
 * - no `additionalProperties`, except `false` on a tool without arguments, shown as
 *   `{"type":"object","additionalProperties":false}` (MCP's recommended form: Gemini refuses an
 *   empty `properties`, strict mode an object that may hold anything);
 * - no `default: null`; a `default` the description already states goes too, and so do bounds
 *   no sensible call comes near (a string's `minLength: 1`, `maxLength`, `maxItems`, a
 *   `maximum` of 10,000 or more).
 * The server still validates with the zod schema, so nothing it accepts or refuses changes.
 */
export function portableInputSchema(schema: unknown): Record<string, unknown> {
  const node = portable(schema) as Record<string, unknown>;
  const properties = node.properties as Record<string, unknown> | undefined;
  if (!properties || Object.keys(properties).length === 0) {
    const { properties: _p, required: _r, ...rest } = node;
    return { ...rest, type: 'object', additionalProperties: false };
  }
  return node;
}

const NOT_SHOWN = new Set(['$schema', 'propertyNames', 'additionalProperties']);
/** Formats Gemini's Schema takes for a string (its reference: "enum" and "date-time"). */
const KNOWN_FORMATS = new Set(['date-time', 'enum']);

function portable(schema: unknown): unknown {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return schema;
  let node: Record<string, unknown> = { ...(schema as Record<string, unknown>) };
  if (Array.isArray(node.anyOf)) node = collapseAnyOf(node);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (NOT_SHOWN.has(key)) continue;
    if (key === 'default' && value === null) continue;
    if (key === 'type' && Array.isArray(value)) {
      const types = value.filter((t) => t !== 'null');
      out.type = types.length === 1 ? types[0] : types;
    } else if (key === 'properties' && value && typeof value === 'object') {
      out.properties = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, portable(sub)]));
    } else if (key === 'items' || key === 'anyOf') {
      out[key] = Array.isArray(value) ? value.map(portable) : portable(value);
    } else {
      out[key] = value;
    }
  }
  bounds(out);
  if (typeof out.format === 'string') {
    if (KNOWN_FORMATS.has(out.format)) delete out.pattern;
    else delete out.format;
  }
  if (out.default !== undefined && typeof out.description === 'string' && /\bdefault\b/i.test(out.description)) delete out.default;
  // Bounds no sensible call comes near ("not empty", 100,000 characters, a day) say nothing an
  // agent would get wrong; the server still refuses what breaks them, naming the bound.
  if (out.minLength === 1 && out.type === 'string') delete out.minLength;
  for (const key of ['maxLength', 'maxItems'] as const) delete out[key];
  if (typeof out.maximum === 'number' && out.maximum >= 10_000) delete out.maximum;
  return out;
}

/** `anyOf` without its null branch, and without a map branch when another form is left; one branch left is the schema. */
function collapseAnyOf(node: Record<string, unknown>): Record<string, unknown> {
  const { anyOf, ...rest } = node as { anyOf: unknown[] } & Record<string, unknown>;
  let branches = anyOf.filter((b) => !(b && typeof b === 'object' && (b as { type?: unknown }).type === 'null'));
  const forms = branches.filter((b) => !isMap(b));
  if (forms.length > 0) branches = forms;
  if (branches.length !== 1) return { ...rest, anyOf: branches };
  const only = branches[0] as Record<string, unknown>;
  // The outer schema's words (description, default) are the argument's; the branch gives its form.
  return { ...only, ...rest };
}

/** An object of free keys (a record): what neither Gemini nor strict mode can show. */
function isMap(schema: unknown): boolean {
  if (!schema || typeof schema !== 'object') return false;
  const s = schema as { type?: unknown; properties?: object; additionalProperties?: unknown };
  return s.type === 'object' && (!s.properties || Object.keys(s.properties).length === 0) && s.additionalProperties !== false;
}

function bounds(out: Record<string, unknown>): void {
  const integer = out.type === 'integer';
  for (const [exclusive, inclusive, step, word] of [
    ['exclusiveMinimum', 'minimum', 1, 'more'],
    ['exclusiveMaximum', 'maximum', -1, 'less'],
  ] as const) {
    const limit = out[exclusive];
    if (typeof limit !== 'number') continue;
    delete out[exclusive];
    if (integer) {
      out[inclusive] = step > 0 ? Math.floor(limit) + 1 : Math.ceil(limit) - 1;
    } else {
      out[inclusive] = limit;
      out.description = `${typeof out.description === 'string' ? `${out.description}; ` : ''}${word} than ${limit}`;
    }
  }
}

type AnyZod = z.core.$ZodType;

/**
 * Arguments as the tool's schema reads them: an optional argument sent as `null` (as OpenAI's
 * strict mode and Gemini models send the ones they leave out) is taken as absent, at any depth,
 * unless the schema itself accepts `null` there. Everything else is left for the schema to judge.
 */
export function withoutAbsentNulls(value: unknown, schema: AnyZod): unknown {
  const inner = unwrap(schema);
  const def = inner._zod.def as { type: string; shape?: Record<string, AnyZod>; element?: AnyZod };
  if (def.type === 'object' && def.shape && value && typeof value === 'object' && !Array.isArray(value)) {
    let out: Record<string, unknown> | undefined;
    for (const [key, field] of Object.entries(def.shape)) {
      const v = (value as Record<string, unknown>)[key];
      if (v === undefined) continue;
      let next: unknown = v;
      if (v === null) {
        if (!accepts(field, null) && accepts(field, undefined)) next = undefined;
      } else if (typeof v === 'object') {
        next = withoutAbsentNulls(v, field);
      }
      if (next === v) continue;
      out ??= { ...(value as Record<string, unknown>) };
      if (next === undefined) delete out[key];
      else out[key] = next;
    }
    return out ?? value;
  }
  if (def.type === 'array' && def.element && Array.isArray(value)) {
    const element = def.element;
    let changed = false;
    const out = value.map((v) => {
      const next = v && typeof v === 'object' ? withoutAbsentNulls(v, element) : v;
      if (next !== v) changed = true;
      return next;
    });
    return changed ? out : value;
  }
  return value;
}

/** The schema under optional/nullable/default/readonly/catch wrappers (and a pipe's input). */
function unwrap(schema: AnyZod): AnyZod {
  let s = schema;
  for (let i = 0; i < 16; i++) {
    const def = s._zod.def as { type: string; innerType?: AnyZod; in?: AnyZod };
    if (def.innerType) s = def.innerType;
    else if (def.type === 'pipe' && def.in) s = def.in;
    else break;
  }
  return s;
}

function accepts(schema: AnyZod, value: unknown): boolean {
  return (schema as unknown as { safeParse(v: unknown): { success: boolean } }).safeParse(value).success;
}

/**
 * Environment variables as `["NAME=value", ...]`: the form every LLM stack can be shown (a map of
 * free keys is not: Gemini's schemas and OpenAI's strict mode have no way to say one).
 */
export const envEntries = z.array(z.string().regex(/^[^=\s][^=]*=/, 'an entry is NAME=value')).max(1000);

/** `["NAME=value", ...]` as a map (a later entry of a name wins, as in a shell). */
export function envMap(entries: readonly string[]): Record<string, string> {
  return Object.fromEntries(entries.map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]));
}
