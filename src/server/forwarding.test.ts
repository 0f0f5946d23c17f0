import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../config.js';
import { createLogger } from '../mcp/log.js';
import { toolsetFactories } from '../toolsets/index.js';
import { createDebugkit } from './createServer.js';
import { debugSessionArg } from './forwarding.js';

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
