import type { CallToolResult, ServerContext } from '@modelcontextprotocol/server';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { DebugkitError } from '../core/errors.js';
import { PERMISSION_DENIED, type CallRuntime, type ToolCallEvent, type ToolCallStart } from './call-runtime.js';
import { TRUNCATED_META_KEY } from './result-ceiling.js';
import { envelopeFormat, plainFormat } from './result-formats.js';
import { registerTool, withText, type ToolSpec } from './tools.js';
import type { ClientContext, ToolServer } from './toolset.js';

type Handler = (args: unknown, extra: ServerContext) => Promise<CallToolResult>;
interface Registered {
  name: string;
  config: { title: string; description: string; inputSchema: StandardLike; outputSchema: StandardLike; annotations: Record<string, unknown> };
  handler: Handler;
}
interface StandardLike {
  '~standard': { validate(value: unknown): { value?: unknown; issues?: Array<{ message: string }> } };
}

/** A stand-in for McpServer that keeps what registerTool gives it. */
function fakeServer(): { server: ToolServer; tools: Map<string, Registered> } {
  const tools = new Map<string, Registered>();
  const server = {
    registerTool(name: string, config: Registered['config'], handler: Handler) {
      tools.set(name, { name, config, handler });
    },
  };
  return { server: server as unknown as ToolServer, tools };
}

/** The request context the SDK hands a tool handler: progress notifications and the request id. */
function extra({ progressToken, traceparent, id = 7 }: { progressToken?: string; traceparent?: string; id?: number } = {}) {
  const notes: unknown[] = [];
  const ctx = {
    mcpReq: {
      id,
      signal: new AbortController().signal,
      _meta: progressToken === undefined ? undefined : { progressToken },
      notify: async (note: unknown) => void notes.push(note),
      log: async () => undefined,
    },
    ...(traceparent === undefined ? {} : { http: { req: { headers: new Headers({ traceparent }) } } }),
  };
  return { ctx: ctx as unknown as ServerContext, notes };
}

function client(calls?: CallRuntime): ClientContext {
  return { owner: 'o1', notify: () => undefined, ...(calls ? { calls } : {}) };
}

const input = { text: z.string(), count: z.number().int().optional() };
const output = { echoed: z.string() };

function echo(overrides: Partial<ToolSpec<typeof input, typeof output>> = {}): ToolSpec<typeof input, typeof output> {
  return {
    name: 'echo',
    title: 'Echo',
    description: 'Says it back',
    input,
    output,
    annotations: { readOnlyHint: true },
    run: async (args) => ({ echoed: args.text }),
    ...overrides,
  };
}

function text(result: CallToolResult): string {
  return result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}

describe('registerTool', () => {
  it('registers the tool under its listed name, with its title, description and annotations', () => {
    const { server, tools } = fakeServer();
    registerTool(server, client({ toolName: (n) => `dk_${n}` }), plainFormat, echo({ scopes: { always: ['extra'] } }));
    const tool = tools.get('dk_echo')!;
    expect(tool.config.title).toBe('Echo');
    expect(tool.config.description).toBe('Says it back');
    expect(tool.config.annotations).toEqual({ title: 'Echo', readOnlyHint: true });
  });

  it('does not register a tool the caller may not call', () => {
    const { server, tools } = fakeServer();
    const asked: string[] = [];
    registerTool(server, client({ mayCall: (name) => (asked.push(name), false) }), plainFormat, echo());
    expect(tools.size).toBe(0);
    expect(asked).toEqual(['echo']);
  });

  it('lists an input schema whose errors name each field, and reads null as absent', () => {
    const { server, tools } = fakeServer();
    registerTool(server, client(), plainFormat, echo());
    const validate = tools.get('echo')!.config.inputSchema['~standard'].validate;
    expect(validate({ text: 'hi', count: null })).toEqual({ value: { text: 'hi' } });
    expect(validate({ count: 1.5 }).issues).toEqual([{ message: '"text" is required (a string); "count": expected an integer, got a fraction' }]);
  });

  it('answers with the format: the value as structured content and JSON text, or the rendered text', async () => {
    const { server, tools } = fakeServer();
    registerTool(server, client(), plainFormat, echo());
    registerTool(server, client(), plainFormat, echo({ name: 'rendered', render: (v) => `said ${v.echoed}` }));
    const plain = await tools.get('echo')!.handler({ text: 'hi' }, extra().ctx);
    expect(plain).toEqual({ structuredContent: { echoed: 'hi' }, content: [{ type: 'text', text: '{"echoed":"hi"}' }] });
    const rendered = await tools.get('rendered')!.handler({ text: 'hi' }, extra().ctx);
    expect(text(rendered)).toBe('said hi');
  });

  it('withText: the text becomes the text content and is not sent again in the structured content', async () => {
    const { server, tools } = fakeServer();
    registerTool(server, client(), plainFormat, echo({ run: async (args) => withText({ echoed: args.text }, `the contract's text for ${args.text}`) }));
    const result = await tools.get('echo')!.handler({ text: 'hi' }, extra().ctx);
    expect(result.structuredContent).toEqual({ echoed: 'hi' });
    expect(text(result)).toBe("the contract's text for hi");
  });

  it('turns a thrown error into an error result of the format, never a crash', async () => {
    const { server, tools } = fakeServer();
    const fail = echo({
      run: async () => {
        throw new DebugkitError('NOT_FOUND', 'no such thing');
      },
    });
    registerTool(server, client(), plainFormat, fail);
    const plain = await tools.get('echo')!.handler({ text: 'x' }, extra().ctx);
    expect(plain.isError).toBe(true);
    expect(text(plain)).toBe('DebugkitError (NOT_FOUND): no such thing');
    const { server: s2, tools: t2 } = fakeServer();
    registerTool(s2, client(), envelopeFormat, fail);
    const enveloped = await t2.get('echo')!.handler({ text: 'x' }, extra().ctx);
    expect(enveloped).toMatchObject({ isError: true, structuredContent: { type: 'error', content: 'no such thing' } });
  });

  it('asks authorize for the scopes a call needs (always and of its arguments, once each); a denial is a JSON-RPC error and the tool never runs', async () => {
    const { server, tools } = fakeServer();
    const run = vi.fn(async () => ({ echoed: 'ran' }));
    const asked: string[][] = [];
    const authorize = async (_start: ToolCallStart, scopes: string[]) => {
      asked.push(scopes);
      return scopes.includes('net') ? { message: 'needs net', data: { scope: 'net' } } : (true as const);
    };
    registerTool(server, client({ authorize }), plainFormat, echo({ run, scopes: { always: ['a'], of: (args) => (args.text === 'url' ? ['net', 'a'] : ['a']) } }));
    const allowed = await tools.get('echo')!.handler({ text: 'x' }, extra().ctx);
    expect(allowed.structuredContent).toEqual({ echoed: 'ran' });
    const denied = await tools.get('echo')!.handler({ text: 'url' }, extra().ctx);
    expect(asked).toEqual([['a'], ['a', 'net']]);
    expect(denied.isError).toBe(true);
    expect(text(denied)).toBe('needs net');
    expect(denied._meta?.['debugkit/rpcError']).toEqual({ code: PERMISSION_DENIED, message: 'needs net', data: { scope: 'net' } });
    expect(run).toHaveBeenCalledTimes(1);
  });

  it('a pre-call seam that throws refuses the call; one that returns an end hears the outcome after the answer', async () => {
    const { server, tools } = fakeServer();
    const run = vi.fn(async (args: { text: string }) => ({ echoed: args.text }));
    let refuse = true;
    const outcomes: unknown[] = [];
    const starts: ToolCallStart[] = [];
    const beforeToolCall = (start: ToolCallStart) => {
      starts.push(start);
      if (refuse) throw new Error('audit full');
      return (outcome: { ok: boolean; error?: string }) => void outcomes.push(outcome);
    };
    registerTool(server, client({ beforeToolCall }), plainFormat, echo({ run }));
    const refused = await tools.get('echo')!.handler({ text: 'x' }, extra().ctx);
    expect(refused.isError).toBe(true);
    expect(text(refused)).toBe('DebugkitError (INTERNAL): call refused: audit full');
    expect(run).not.toHaveBeenCalled();
    refuse = false;
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    await tools.get('echo')!.handler({ text: 'y' }, extra({ traceparent, id: 9 }).ctx);
    expect(starts[1]).toEqual({ owner: 'o1', tool: 'echo', args: { text: 'y' }, requestId: 9, traceparent });
    expect(outcomes).toEqual([]); // written after this turn of the event loop
    await new Promise((resolve) => setImmediate(resolve));
    expect(outcomes).toEqual([{ ok: true }]);
  });

  it('a malformed traceparent is not passed on', async () => {
    const { server, tools } = fakeServer();
    const starts: ToolCallStart[] = [];
    registerTool(server, client({ beforeToolCall: (s) => void starts.push(s) }), plainFormat, echo());
    await tools.get('echo')!.handler({ text: 'y' }, extra({ traceparent: 'not-a-trace' }).ctx);
    expect(starts[0]!.traceparent).toBeUndefined();
  });

  it('tells onToolCall how each call went, and its errors change nothing', async () => {
    const { server, tools } = fakeServer();
    const events: ToolCallEvent[] = [];
    const onToolCall = (event: ToolCallEvent) => {
      events.push(event);
      throw new Error('log broken');
    };
    registerTool(server, client({ onToolCall }), plainFormat, echo());
    const result = await tools.get('echo')!.handler({ text: 'hi' }, extra({ id: 3 }).ctx);
    expect(result.structuredContent).toEqual({ echoed: 'hi' });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ owner: 'o1', tool: 'echo', args: { text: 'hi' }, isError: false, requestId: 3, truncated: false, result: { echoed: 'hi' } });
    expect(typeof events[0]!.durationMs).toBe('number');
  });

  it('cuts an answer beyond the ceiling and flags it', async () => {
    const { server, tools } = fakeServer();
    const events: ToolCallEvent[] = [];
    registerTool(server, client({ maxResultTokens: 200, onToolCall: (e) => void events.push(e) }), plainFormat, echo({ run: async () => ({ echoed: 'x'.repeat(5000) }) }));
    const result = await tools.get('echo')!.handler({ text: 'hi' }, extra().ctx);
    expect(result._meta?.[TRUNCATED_META_KEY]).toEqual({ originalTokens: expect.any(Number), limitTokens: 200 });
    expect(text(result)).toMatch(/\[truncated: this answer had about \d+ tokens and was cut to the 200-token ceiling/);
    expect(events[0]!.truncated).toBe(true);
  });

  it('reports progress only when the client sent a progress token', async () => {
    const { server, tools } = fakeServer();
    registerTool(
      server,
      client(),
      plainFormat,
      echo({
        run: async (args, ctx) => {
          await ctx.progress(1, 2, 'half');
          return { echoed: args.text };
        },
      }),
    );
    const silent = extra();
    await tools.get('echo')!.handler({ text: 'a' }, silent.ctx);
    expect(silent.notes).toEqual([]);
    const asked = extra({ progressToken: 'p1' });
    await tools.get('echo')!.handler({ text: 'a' }, asked.ctx);
    expect(asked.notes).toEqual([{ method: 'notifications/progress', params: { progressToken: 'p1', progress: 1, total: 2, message: 'half' } }]);
  });
});
