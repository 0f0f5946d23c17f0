import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../config.js';
import { createLogger } from '../mcp/log.js';
import type { ToolCallEvent } from '../mcp/call-runtime.js';
import { toolsetFactories } from '../toolsets/index.js';
import { createDebugkit, type Debugkit, type Principal } from './createServer.js';
import { serveHttp, type HttpHandle } from './http.js';

/** The control plane's seams: who calls (authenticate), what they may call (authorize), what they did (onToolCall). */
const KEYS: Record<string, Principal> = {
  'key-full': { id: 'k1', scopes: ['gdb'] },
  'key-read': { id: 'k2', scopes: ['gdb:read'] },
};
const READ_ONLY = new Set(['list_sessions']);

let dk: Debugkit;
let http: HttpHandle;
const events: Array<{ event: ToolCallEvent; principal: Principal }> = [];

beforeAll(async () => {
  const config = defaultConfig({ toolsets: ['gdb'], root: mkdtempSync(path.join(tmpdir(), 'debugkit-hooks-')), logLevel: 'error' });
  config.http.port = 0;
  dk = createDebugkit(config, {
    toolsets: toolsetFactories,
    log: createLogger('error'),
    hooks: {
      authenticate: (req) => {
        const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
        if (token === 'key-limited') throw { code: -32002, message: 'Rate limit exceeded', data: { limit: 1, used: 1, reset_at: 'soon' } };
        return KEYS[token];
      },
      authorize: (principal, tool) =>
        (principal.scopes as string[]).includes('gdb') || READ_ONLY.has(tool) ? true : { message: `Permission denied: ${tool} needs scope gdb`, data: { required: 'gdb' } },
      onToolCall: (event, principal) => void events.push({ event, principal }),
    },
  });
  http = await serveHttp(dk);
});
afterAll(async () => {
  await http?.close();
  await dk?.close();
});

const rpc = (key: string, method: string, params: Record<string, unknown>) =>
  fetch(http.url, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });

describe('control-plane seams (hooks passed to createDebugkit)', () => {
  it('authenticate: an unknown key is 401 -32001; a thrown denial keeps its code', async () => {
    const unknown = await rpc('nope', 'tools/list', {});
    expect(unknown.status).toBe(401);
    expect(((await unknown.json()) as any).error.code).toBe(-32001);
    const limited = await rpc('key-limited', 'tools/list', {});
    expect(limited.status).toBe(429);
    expect(((await limited.json()) as any).error).toMatchObject({ code: -32002, data: { limit: 1 } });
  });

  it('authorize: tools/list shows a key only what it may call; a call outside it is -32003', async () => {
    const full = (await (await rpc('key-full', 'tools/list', {})).json()) as any;
    const read = (await (await rpc('key-read', 'tools/list', {})).json()) as any;
    expect(full.result.tools.map((t: { name: string }) => t.name)).toContain('open');
    expect(read.result.tools.map((t: { name: string }) => t.name)).toEqual(['list_sessions']);
    const denied = await rpc('key-read', 'tools/call', { name: 'open', arguments: {} });
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as any).error).toEqual({ code: -32003, message: 'Permission denied: open needs scope gdb', data: { required: 'gdb' } });
  });

  it('onToolCall: every call is reported with its principal, tool, outcome and duration', async () => {
    events.length = 0;
    const ok = (await (await rpc('key-read', 'tools/call', { name: 'list_sessions', arguments: {} })).json()) as any;
    expect(ok.result.structuredContent.type).toBe('ok');
    expect(events).toHaveLength(1);
    expect(events[0]!.principal.id).toBe('k2');
    expect(events[0]!.event).toMatchObject({ tool: 'list_sessions', principal: 'k2', owner: 'http:k2', isError: false, args: {} });
    expect(events[0]!.event.durationMs).toBeGreaterThanOrEqual(0);
  });
});
