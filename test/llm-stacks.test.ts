import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectStdio, startHttpServer, type HttpServer, type TestClient } from './helpers/client.js';
import { createKey, callTool, openMcpSession, rpc, startNode, tempDataDir, type Node } from './helpers/control.js';
import { PY_ROOT } from './helpers/python.js';

/**
 * The tools as LLM stacks other than MCP's own take them: every listed input schema (all toolsets
 * on) against the rules of Gemini's function declarations and of OpenAI's strict mode as OpenAI
 * Agents converts MCP tools, each rule written down with where it comes from; optional arguments
 * sent as null; tool names with --tool-prefix.
 */

type Schema = Record<string, unknown>;

/**
 * Gemini function declarations (`parameters`): "a select subset of an OpenAPI 3.0 schema object".
 * Source: the Gemini API reference, Schema (https://ai.google.dev/api/caching#Schema), the same
 * field list as the `Schema` type of Google's @google/genai SDK (src/types.ts): an unknown field
 * is refused with 400 "Invalid JSON payload received. Unknown name ...". `type` is one value of
 * its Type enum (no type arrays; `nullable: true` is its word for null). `enum` holds strings.
 * `format`: for strings "enum" and "date-time", for numbers "float" and "double", for integers
 * "int32" and "int64". An OBJECT with empty `properties` is refused ("properties: should be
 * non-empty for OBJECT type", the API's answer reported by Gemini users of MCP servers).
 * Added by debugkit's own choice: no `anyOf` (Gemini has it, but LangChain's Gemini adapter maps
 * unions by hand and throws on the ones it does not know).
 * One exception: `additionalProperties: false` on a tool without arguments, MCP's recommended form
 * ({"type":"object","additionalProperties":false}), which OpenAI's strict mode needs (below):
 * LangChain's Gemini adapter removes every `additionalProperties` before sending, and
 * @google/genai's mcpToTool sends an MCP input schema as `parametersJsonSchema` (JSON Schema).
 */
const GEMINI_FIELDS = new Set([
  'type',
  'format',
  'title',
  'description',
  'nullable',
  'enum',
  'maxItems',
  'minItems',
  'properties',
  'required',
  'minProperties',
  'maxProperties',
  'minLength',
  'maxLength',
  'pattern',
  'example',
  'anyOf',
  'propertyOrdering',
  'default',
  'items',
  'minimum',
  'maximum',
]);
const GEMINI_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'array', 'object']);
const GEMINI_FORMATS: Record<string, string[]> = { string: ['enum', 'date-time'], number: ['float', 'double'], integer: ['int32', 'int64'] };

function geminiProblems(root: Schema): string[] {
  const problems: string[] = [];
  const parameterless = root.properties === undefined && root.additionalProperties === false;
  const visit = (s: Schema, at: string, isRoot: boolean) => {
    for (const key of Object.keys(s)) {
      if (GEMINI_FIELDS.has(key)) continue;
      if (isRoot && parameterless && key === 'additionalProperties') continue;
      problems.push(`${at}: "${key}" is not a field of Gemini's Schema`);
    }
    if (typeof s.type !== 'string' || !GEMINI_TYPES.has(s.type)) problems.push(`${at}: type ${JSON.stringify(s.type)} is not one Gemini type`);
    if (s.enum !== undefined && !(Array.isArray(s.enum) && s.enum.every((v) => typeof v === 'string'))) problems.push(`${at}: enum of non-strings`);
    if (s.format !== undefined && !(GEMINI_FORMATS[s.type as string] ?? []).includes(s.format as string)) problems.push(`${at}: format "${s.format}" on ${s.type}`);
    if (s.anyOf !== undefined) problems.push(`${at}: anyOf`);
    if (s.properties !== undefined) {
      const props = s.properties as Record<string, Schema>;
      if (Object.keys(props).length === 0) problems.push(`${at}: empty properties`);
      for (const [name, sub] of Object.entries(props)) visit(sub, `${at}.${name}`, false);
      for (const name of (s.required as string[] | undefined) ?? []) if (!(name in props)) problems.push(`${at}: required "${name}" is not a property`);
    }
    if (s.items !== undefined) visit(s.items as Schema, `${at}[]`, false);
  };
  visit(root, 'input', true);
  return problems;
}

/**
 * OpenAI's strict mode, as OpenAI Agents JS converts an MCP tool (`mcpToFunctionTool` with
 * `convertSchemasToStrict: true`; a schema it cannot convert falls back to non-strict with the
 * warning "Error converting MCP schema to strict mode"). Source: openai-agents-js,
 * packages/agents-core/src/mcp.ts and src/utils/strictToolSchema.ts
 * (`assertOpenAIStrictToolSchemaPreservesOpenObjects`), release 0.20; and OpenAI's function calling
 * guide, "Strict mode": every object has `additionalProperties: false` and lists every property
 * in `required`, an optional field being a union with null. The conversion itself marks every
 * property required, wraps an optional one as `anyOf: [schema, {type: "null"}]` and sets
 * `additionalProperties: false`; what it refuses:
 * - these keywords anywhere: allOf, oneOf, not, if/then/else, patternProperties, propertyNames,
 *   prefixItems, contains, dependentSchemas/dependentRequired, unevaluated*, additionalItems, $dynamicRef;
 * - an object that may hold anything: `additionalProperties` other than false on an object, or an
 *   object declaring no properties without `additionalProperties: false` (so a tool without
 *   arguments must say `additionalProperties: false`);
 * - `anyOf` with a sibling other than a description-like keyword, or a branch with optional object fields;
 * - an optional property whose nullability cannot be told (no `type`, no `anyOf`);
 * - `$ref` that does not resolve locally (debugkit lists none).
 */
const STRICT_REFUSED = [
  'allOf',
  'oneOf',
  'not',
  'if',
  'then',
  'else',
  'patternProperties',
  'propertyNames',
  'prefixItems',
  'contains',
  'dependentSchemas',
  'dependentRequired',
  'dependencies',
  'unevaluatedProperties',
  'unevaluatedItems',
  'additionalItems',
  '$dynamicRef',
  '$recursiveRef',
  '$ref',
];
const ANYOF_SIBLINGS = new Set(['anyOf', 'description', 'title', 'default', 'examples', 'deprecated', 'readOnly', 'writeOnly', '$comment']);

function strictProblems(root: Schema): string[] {
  const problems: string[] = [];
  if (root.type !== 'object') problems.push('input: the root is not type object');
  const visit = (s: Schema, at: string) => {
    for (const key of STRICT_REFUSED) if (key in s) problems.push(`${at}: keyword "${key}"`);
    const isObject = s.type === 'object' || (Array.isArray(s.type) && s.type.includes('object'));
    const props = s.properties as Record<string, Schema> | undefined;
    const declared = props !== undefined && Object.keys(props).length > 0;
    if (isObject && s.additionalProperties !== false && (!declared || 'additionalProperties' in s)) problems.push(`${at}: an open object`);
    if (Array.isArray(s.anyOf)) {
      for (const key of Object.keys(s)) if (!ANYOF_SIBLINGS.has(key)) problems.push(`${at}: anyOf beside "${key}"`);
      s.anyOf.forEach((b, i) => visit(b as Schema, `${at}|${i}`));
    }
    if (props) {
      const required = new Set((s.required as string[] | undefined) ?? []);
      for (const [name, sub] of Object.entries(props)) {
        if (!required.has(name) && typeof sub.type !== 'string' && !Array.isArray(sub.type) && !Array.isArray(sub.anyOf)) problems.push(`${at}.${name}: nullability unknown`);
        visit(sub, `${at}.${name}`);
      }
    }
    if (s.items && typeof s.items === 'object') visit(s.items as Schema, `${at}[]`);
  };
  visit(root, 'input');
  return problems;
}

interface ListedTool {
  name: string;
  inputSchema: Schema;
  outputSchema?: Schema;
}

let dk: TestClient;
let tools: ListedTool[];

beforeAll(async () => {
  dk = await connectStdio({ root: PY_ROOT });
  tools = (await dk.client.listTools()).tools as unknown as ListedTool[];
}, 60_000);

afterAll(async () => {
  await dk?.close();
});

describe('input schemas every LLM stack takes as they are', () => {
  it('the rules catch what broke LangChain + Gemini and OpenAI Agents strict mode before', () => {
    // Before: debugger_attach, grep_files, python_start_session and the tools without arguments.
    expect(geminiProblems({ type: 'object', properties: { pid: { type: 'integer', exclusiveMinimum: 0 } }, required: ['pid'] })).toEqual([
      'input.pid: "exclusiveMinimum" is not a field of Gemini\'s Schema',
    ]);
    expect(geminiProblems({ type: 'object', properties: { glob_pattern: { default: null, type: ['string', 'null'] } } })).toEqual([
      'input.glob_pattern: type ["string","null"] is not one Gemini type',
    ]);
    expect(geminiProblems({ type: 'object', properties: { env: { type: 'object', propertyNames: { type: 'string' }, additionalProperties: { type: 'string' } } } })).toEqual([
      'input.env: "propertyNames" is not a field of Gemini\'s Schema',
      'input.env: "additionalProperties" is not a field of Gemini\'s Schema',
    ]);
    expect(geminiProblems({ type: 'object', properties: {} })).toEqual(['input: empty properties']);
    expect(strictProblems({ type: 'object', properties: {} })).toEqual(['input: an open object']);
    expect(strictProblems({ type: 'object', properties: { env: { type: 'object', propertyNames: { type: 'string' }, additionalProperties: { type: 'string' } } } })).toEqual([
      'input.env: keyword "propertyNames"',
      'input.env: an open object',
    ]);
  });

  it("every listed tool's input schema, all toolsets on, keeps Gemini's rules", () => {
    expect(tools.length).toBeGreaterThanOrEqual(40);
    const problems = tools.flatMap((t) => geminiProblems(t.inputSchema).map((p) => `${t.name} ${p}`));
    expect(problems).toEqual([]);
  });

  it("every listed tool's input schema converts to OpenAI's strict mode without falling back", () => {
    const problems = tools.flatMap((t) => strictProblems(t.inputSchema).map((p) => `${t.name} ${p}`));
    expect(problems).toEqual([]);
  });

  it("a tool without arguments is listed in MCP's recommended form", () => {
    expect(tools.find((t) => t.name === 'list_sessions')!.inputSchema).toEqual({ type: 'object', additionalProperties: false });
  });

  it('python_start_session takes env as ["NAME=value"] (listed) and as the contract\'s map', async () => {
    const env = tools.find((t) => t.name === 'python_start_session')!.inputSchema.properties as Record<string, Schema>;
    expect(env.env).toMatchObject({ type: 'array', items: { type: 'string' } });
    for (const value of [['DEBUG_MODE=true', 'EMPTY='], { DEBUG_MODE: 'true' }]) {
      const r = await dk.tool('python_start_session', { entry: 'src/calculator.py', env: value });
      expect(r.isError, r.text).toBe(false);
      await dk.tool('python_end_session', { sessionId: r.structured.sessionId });
    }
    const bad = await dk.tool('python_start_session', { entry: 'src/calculator.py', env: ['no equals sign'] });
    expect(bad.isError).toBe(true);
  });
});

describe('an optional argument sent as null is absent', () => {
  it('top-level and nested, on every toolset, while a required one stays required', async () => {
    const open = await dk.ok('open', { program: null, args: null, cwd: null });
    // Before: "wait": null was refused ("expected a number").
    const waited = await dk.tool('call', { id: open.id, command: 'show version', wait: null });
    expect(waited.isError, waited.text).toBe(false);
    expect((await dk.tool('gdb_program_output', { id: open.id, cursor: null, tail: null, stream: null })).isError).toBe(false);
    await dk.ok('close', { id: open.id });

    const started = await dk.tool('python_start_session', { entry: 'src/calculator.py', args: null, env: null, pythonPath: null, idleTimeout: null });
    expect(started.isError, started.text).toBe(false);
    const sessionId = started.structured.sessionId;
    const set = await dk.tool('python_set_breakpoints', { sessionId, file: 'src/calculator.py', breakpoints: [{ line: 10, condition: null, hitCondition: null, logMessage: null }] });
    expect(set.isError, set.text).toBe(false);
    await dk.tool('python_end_session', { sessionId });

    const missing = await dk.tool('call', { id: null, command: 'bt' });
    expect(missing.isError).toBe(true);
    expect(missing.text).toMatch(/"id"/);
  });

  describe('the python REST API keeps its OpenAPI contract', () => {
    let server: HttpServer;
    beforeAll(async () => {
      server = await startHttpServer(['--root', PY_ROOT, '--toolsets', 'python', '--api-key', 'llm-stacks-key-0123']);
    }, 30_000);
    afterAll(async () => {
      await server?.stop();
    });

    it("a null where the contract has no null is still refused, the contract's map env still taken", async () => {
      const post = (body: unknown) =>
        fetch(`${new URL(server.url).origin}/sessions`, {
          method: 'POST',
          headers: { Authorization: 'Bearer llm-stacks-key-0123', 'Content-Type': 'application/json' },
          body: JSON.stringify(body),
        });
      expect((await post({ entry: 'src/calculator.py', env: null })).status).toBe(400);
      expect((await post({ entry: 'src/calculator.py', env: ['A=1'] })).status).toBe(400);
      const ok = await post({ entry: 'src/calculator.py', env: { DEBUG_MODE: 'true' } });
      expect(ok.status).toBe(200);
    });
  });
});

describe('--tool-prefix', () => {
  let data: { dir: string; cleanup(): Promise<void> };
  let node: Node;
  let key: { key: string; id: string };

  beforeAll(async () => {
    data = await tempDataDir();
    key = await createKey(['--data-dir', data.dir], 'prefixed', 'bundles:read,debugger:read');
    node = await startNode(['--data-dir', data.dir, '--tool-prefix', 'dk_,bundles=k8s_', '--toolsets', 'gdb,bundles,debugger']);
  }, 60_000);

  afterAll(async () => {
    await node?.stop();
    await data?.cleanup();
  });

  it('lists, calls, scopes and audits tools by their prefixed names; the contract names are unknown', async () => {
    const sid = await openMcpSession(node.url, key.key);
    const listed = await rpc(node.url, key.key, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }, { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18' });
    const names: string[] = listed.body.result.tools.map((t: { name: string }) => t.name);
    expect(names).toContain('k8s_read_file');
    expect(names).toContain('k8s_list_available_bundles');
    expect(names).toContain('dk_debugger_quota_status');
    expect(names).not.toContain('read_file');
    // The key has no gdb scope: gdb's tools are not shown, prefixed or not.
    expect(names.some((n) => n === 'dk_open' || n === 'open')).toBe(false);
    const instructions = (
      await rpc(node.url, key.key, { jsonrpc: '2.0', id: 2, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } })
    ).body.result?.instructions;
    expect(instructions).toMatch(/bundles tools start with "k8s_"/);

    const bundles = await callTool(node.url, key.key, sid, 'k8s_list_available_bundles');
    expect(bundles.body.result?.isError ?? false).toBe(false);
    const unknown = await callTool(node.url, key.key, sid, 'list_available_bundles');
    expect(unknown.body.error?.code ?? unknown.body.result?.isError).toBeTruthy();
    const denied = await callTool(node.url, key.key, sid, 'dk_open', {});
    expect(denied.body.error?.code).toBe(-32003);

    // A contract alias calls the prefixed tool, judged (scopes, audit) as that tool.
    const viaAlias = await callTool(node.url, key.key, sid, 'debugger/quota_status');
    expect(viaAlias.body.error, JSON.stringify(viaAlias.body)).toBeUndefined();
    expect(viaAlias.body.result.structuredContent).toMatchObject({ plan: expect.any(String) });

    const audit = await callTool(node.url, key.key, sid, 'dk_debugger_get_comprehensive_audit');
    const tools = audit.body.result.structuredContent.entries.map((e: { tool: string }) => e.tool);
    expect(tools).toContain('k8s_list_available_bundles');
    expect(tools).toContain('dk_debugger_quota_status');
  });

  it('over stdio too, where a contract alias (debugger/...) calls the prefixed tool', async () => {
    const prefixed = await connectStdio({ args: ['--tool-prefix', 'dk_', '--toolsets', 'gdb,debugger'] });
    try {
      const names = (await prefixed.client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('dk_open');
      expect(names).toContain('dk_debugger_license_info');
      expect(names.filter((n) => !n.startsWith('dk_'))).toEqual([]);
      expect((await prefixed.tool('dk_list_sessions')).isError).toBe(false);
      const viaAlias = await prefixed.tool('debugger/license_info');
      expect(viaAlias.isError, viaAlias.text).toBe(false);
      await expect(prefixed.tool('list_sessions')).rejects.toThrow(/-32602|not found/i);
    } finally {
      await prefixed.close();
    }
  });

  it('a bad --tool-prefix is one sentence on stderr and a non-zero exit', async () => {
    const { runCli } = await import('./helpers/control.js');
    const r = await runCli(['--tool-prefix', 'nosuch=x_', '--version']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/--tool-prefix: unknown toolset "nosuch"/);
  });
});
