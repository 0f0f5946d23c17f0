import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../config.js';
import { createLogger } from '../mcp/log.js';
import { toolsetFactories } from '../toolsets/index.js';
import { createDebugkit } from './createServer.js';
import type { SessionHooks } from './createServer.js';
import { debugSessionArg, sessionToForward } from './forwarding.js';

const root = mkdtempSync(path.join(tmpdir(), 'debugkit-forwarding-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('the debug session a call names, for routing it to the node that holds it', () => {
  const dk = createDebugkit(defaultConfig({ root, logLevel: 'error' }), { toolsets: toolsetFactories, log: createLogger('error'), hooks: {} });
  const named = (name: string, args?: unknown) => debugSessionArg({ name, ...(args !== undefined ? { arguments: args } : {}) }, dk.sessionArgOf);

  it("is each toolset's session argument, as given", () => {
    expect(named('debugger_get_stack_trace', { session_id: 'mine' })).toBe('mine');
    expect(named('call', { id: 'gdb-7', command: 'bt' })).toBe('gdb-7');
    expect(named('python_continue', { sessionId: 'py-1' })).toBe('py-1');
  });

  it('is the session the schema defaults to when the call leaves it out (attack 18k: "default" was never forwarded)', () => {
    expect(named('debugger_get_stack_trace', {})).toBe('default');
    expect(named('debugger_get_stack_trace')).toBe('default');
    expect(named('debugger_launch', { program: 'a.out' })).toBe('default');
  });

  it('is none for tools that name no session, and for arguments that are not an object', () => {
    expect(named('list_sessions', {})).toBeUndefined();
    expect(named('debugger_get_stack_trace', 'session_id')).toBeUndefined();
    expect(named('call', {})).toBeUndefined();
  });
});

describe('the node a request goes to', () => {
  const dk = createDebugkit(defaultConfig({ root, logLevel: 'error' }), { toolsets: toolsetFactories, log: createLogger('error'), hooks: {} });
  const held: Record<string, string> = { 'debug:on-b': 'b', 'debug:on-c': 'c', 'debug:default': 'b' };
  const hooks = { locate: async (id: string) => (held[id] ? { node: held[id], url: `http://${held[id]}/mcp` } : undefined) } as unknown as SessionHooks;
  const call = (id: number, args: object) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'debugger_get_stack_trace', arguments: args } });
  const route = (body: unknown) => sessionToForward(hooks, body, { id: 'k' }, dk.sessionArgOf);

  it('is the node holding the sessions its calls name, the default one included', async () => {
    expect(await route(call(1, { session_id: 'on-b' }))).toEqual({ node: 'b', url: 'http://b/mcp' });
    expect(await route([call(1, {}), call(2, { session_id: 'on-b' })])).toEqual({ node: 'b', url: 'http://b/mcp' });
    expect(await route(call(1, { session_id: 'mine' }))).toBeUndefined();
  });

  it('is none for a batch naming sessions of two nodes, or of another node and this one (half of it would answer "not found")', async () => {
    expect(await route([call(1, { session_id: 'on-b' }), call(2, { session_id: 'on-c' })])).toEqual({ mixed: expect.stringMatching(/node b and node c/) });
    expect(await route([call(1, { session_id: 'on-b' }), call(2, { session_id: 'mine' })])).toEqual({ mixed: expect.stringMatching(/node b and this node/) });
  });
});
