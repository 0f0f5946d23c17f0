// Limits as configured (issue 17): every message of a JSON-RPC batch is admitted, counted and
// audited on its own; the rate limit counts every request (initialize and tools/list too), the
// quota only tool calls; open MCP sessions are capped per key and per server; a session that
// sends nothing after initialize is closed within --session-init-idle.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../src/core/wait.js';
import { createKey, openMcpSession, rpc, runCli, startNode, tempDataDir, type Node } from './helpers/control.js';

let data: Awaited<ReturnType<typeof tempDataDir>>;
let store: string[];
let node: Node;
const nodes: Node[] = [];

beforeAll(async () => {
  data = await tempDataDir();
  store = ['--data-dir', data.dir];
  await createKey(store, 'bootstrap', 'gdb:read');
  node = await startNode(store);
  nodes.push(node);
}, 60_000);
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()));
  await data?.cleanup();
});

const SESSION_VERSION = '2025-06-18';
const list = (id: number | string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'list_sessions', arguments: {} } });

async function audit(keyId: string): Promise<any[]> {
  const r = await runCli(['audit', 'export', ...store]);
  return r.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((e) => e.key_id === keyId);
}

/** `initialize` alone (no notifications/initialized): the answer and the session id, if one was made. */
async function initialize(url: string, key: string): Promise<{ status: number; sid: string | null; body: any }> {
  const r = await rpc(url, key, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: SESSION_VERSION, capabilities: {}, clientInfo: { name: 'limits', version: '1' } } });
  return { status: r.status, sid: r.headers.get('mcp-session-id'), body: r.body };
}

function inSession(sid: string): Record<string, string> {
  return { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': SESSION_VERSION };
}

/** Polls `check` until it holds (a condition, never a fixed sleep); fails after `ms`. */
async function until(what: string, check: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  if (!(await pollUntil(check, { timeoutMs: ms, intervalMs: 100 }))) throw new Error(`timed out waiting until ${what}`);
}

describe('a JSON-RPC batch is limited message by message', () => {
  it('stateless batch: the calls within the rate are served, each one over it gets its own -32002, a forbidden one its own -32003; each refusal is audited', async () => {
    // 4/hour: the forbidden call is a request too (1 of 4), so three calls are served.
    const k = await createKey(store, 'batch', 'gdb:read', ['--rate', '4/hour']);
    const open = { jsonrpc: '2.0', id: 'forbidden', method: 'tools/call', params: { name: 'open', arguments: {} } };
    const r = await rpc(node.url, k.key, [list(1), open, list(2), list(3), list(4), list(5)]);
    expect(r.status).toBe(200);
    const byId = new Map((r.body as any[]).map((m) => [m.id, m]));
    expect([...byId.keys()].sort()).toEqual([1, 2, 3, 4, 5, 'forbidden'].sort());
    for (const id of [1, 2, 3]) expect(byId.get(id).result, `call ${id}`).toMatchObject({ structuredContent: expect.anything() });
    for (const id of [4, 5]) {
      expect(byId.get(id).error, `call ${id}`).toMatchObject({ code: -32002, data: { limit: 4, used: 4, reset_at: expect.stringMatching(/Z$/), kind: 'rate' } });
    }
    expect(byId.get('forbidden').error).toMatchObject({ code: -32003, data: { required_scope: 'gdb' } });
    expect(r.headers.get('x-ratelimit-remaining')).toBe('0');
    // The limit is used up: the next request (a single one) is refused.
    const next = await rpc(node.url, k.key, list(6));
    expect(next.status).toBe(429);
    expect(next.body).toMatchObject({ id: 6, error: { code: -32002, data: { limit: 4, used: 4 } } });
    const entries = await audit(k.id);
    expect(entries.filter((e) => e.event === 'call' && e.tool === 'list_sessions')).toHaveLength(3);
    // The batch's two calls over the rate are one entry (attack 18v R6), the single request its own.
    const limited = entries.filter((e) => e.event === 'denied' && e.outcome === 'limited');
    expect(limited.map((e) => e.tool)).toEqual(['batch of 2 calls', 'list_sessions']);
    expect(limited[0]!.args).toMatchObject({ refused_calls: 2, tools: { list_sessions: 2 } });
    expect(entries.filter((e) => e.event === 'denied' && e.outcome === 'permission_denied').map((e) => e.tool)).toEqual(['open']);
  });

  it('batch in a 2025 session (SSE answer): initialize counts, each call counts, the refused ones are answered in the stream', async () => {
    const k = await createKey(store, 'batch-session', 'gdb:read', ['--rate', '4/hour']);
    const sid = await openMcpSession(node.url, k.key); // initialize: 1 of 4 (notifications/initialized is not counted)
    const res = await fetch(node.url, {
      method: 'POST',
      headers: { Authorization: `Bearer ${k.key}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...inSession(sid) },
      body: JSON.stringify([list(1), list(2), list(3), list(4), list(5)]),
    });
    expect(res.status).toBe(200);
    const messages = (await res.text())
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)));
    expect(messages.map((m) => [m.id, m.error?.code ?? 'served']).sort()).toEqual([
      [1, 'served'],
      [2, 'served'],
      [3, 'served'],
      [4, -32002],
      [5, -32002],
    ]);
    expect(messages.find((m) => m.id === 4).error.data).toMatchObject({ limit: 4, used: 4 });
  });
});

describe('the rate limit counts every request, the quota only tool calls', () => {
  it('tools/list is rate limited (a 3/hour key cannot list without end); it uses none of the quota', async () => {
    const k = await createKey(store, 'lister', 'gdb:read', ['--rate', '3/hour', '--quota', '100/day']);
    const listTools = (id: number) => rpc(node.url, k.key, { jsonrpc: '2.0', id, method: 'tools/list', params: {} });
    const remaining: Array<string | null> = [];
    for (let i = 1; i <= 3; i++) {
      const r = await listTools(i);
      expect(r.status).toBe(200);
      expect(r.body.result.tools.length).toBeGreaterThan(0);
      remaining.push(r.headers.get('x-ratelimit-remaining'));
      expect(r.headers.get('ratelimit')).toMatch(/"quota";r=100;/);
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const over = await listTools(4);
    expect(over.status).toBe(429);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(over.body).toMatchObject({ id: 4, error: { code: -32002, message: expect.stringMatching(/^Rate limit exceeded: 3 requests per hour/), data: { limit: 3, used: 3, kind: 'rate' } } });
    const denied = (await audit(k.id)).filter((e) => e.event === 'denied');
    expect(denied).toMatchObject([{ tool: 'tools/list', outcome: 'limited' }]);
  });

  it('initialize counts against the rate limit: a 2/hour key opens two MCP sessions an hour, not thousands', async () => {
    const k = await createKey(store, 'initializer', 'gdb:read', ['--rate', '2/hour']);
    expect((await initialize(node.url, k.key)).sid).toBeTruthy();
    expect((await initialize(node.url, k.key)).sid).toBeTruthy();
    const third = await initialize(node.url, k.key);
    expect(third.status).toBe(429);
    expect(third.sid).toBeNull();
    expect(third.body).toMatchObject({ id: 0, error: { code: -32002, data: { limit: 2, used: 2, kind: 'rate' } } });
  });

  it('the quota counts tool calls only: listing does not use it', async () => {
    const k = await createKey(store, 'quota-only', 'gdb:read', ['--rate', 'unlimited', '--quota', '2/day']);
    for (let i = 0; i < 5; i++) expect((await rpc(node.url, k.key, { jsonrpc: '2.0', id: i, method: 'tools/list', params: {} })).status).toBe(200);
    expect((await rpc(node.url, k.key, list(10))).status).toBe(200);
    expect((await rpc(node.url, k.key, list(11))).status).toBe(200);
    const over = await rpc(node.url, k.key, list(12));
    expect(over.status).toBe(429);
    expect(over.body.error).toMatchObject({ code: -32002, message: expect.stringMatching(/^Quota exceeded/), data: { limit: 2, used: 2, kind: 'quota' } });
  });

  it('a tools/call the SDK will not parse runs nothing and uses none of the quota (attack 18k)', async () => {
    const k = await createKey(store, 'quota-malformed', 'gdb:read', ['--rate', 'unlimited', '--quota', '1/day']);
    for (const id of [1.5, 2.5, 3.5]) {
      const malformed = await rpc(node.url, k.key, list(id));
      expect(malformed.body.error?.code, JSON.stringify(malformed.body)).not.toBe(-32002);
      expect(malformed.body.result).toBeUndefined();
    }
    // Before, each of them used one call of the quota: this one was refused "Quota exceeded".
    const call = await rpc(node.url, k.key, list(4));
    expect(call.status, JSON.stringify(call.body)).toBe(200);
    expect(call.body.result).toBeDefined();
  });
});

describe('open MCP sessions are capped per key and per server', () => {
  it('--max-mcp-sessions-per-key and --max-mcp-sessions refuse initialize saying which cap, how many are open and how to free one', async () => {
    const capped = await startNode([...store, '--max-mcp-sessions-per-key', '2', '--max-mcp-sessions', '4']);
    nodes.push(capped);
    const [a, b, c] = await Promise.all(['cap-a', 'cap-b', 'cap-c'].map((name) => createKey(store, name, 'gdb:read', ['--rate', 'unlimited'])));
    const a1 = await openMcpSession(capped.url, a!.key);
    const a2 = await openMcpSession(capped.url, a!.key);
    const refused = await initialize(capped.url, a!.key);
    expect(refused.status).toBe(429);
    expect(refused.sid).toBeNull();
    expect(refused.body.error.code).toBe(-32000);
    expect(refused.body.error.message).toMatch(/^Too many open MCP sessions for this key: 2 of the 2 one key may hold are open \(--max-mcp-sessions-per-key\)\. .*HTTP DELETE .*Mcp-Session-Id/);
    expect(refused.body.error.data).toMatchObject({ cap: 'per-key', limit: 2, open: 2, key_id: a!.id });
    expect(refused.body.error.data.sessions.sort()).toEqual([a1, a2].sort());
    // DELETE frees one.
    const del = await fetch(capped.url, { method: 'DELETE', headers: { Authorization: `Bearer ${a!.key}`, ...inSession(a1) } });
    expect(del.status).toBe(200);
    await openMcpSession(capped.url, a!.key);
    // Four initializes at once from one key: exactly two get a session (the check cannot race).
    const burst = await Promise.all(Array.from({ length: 4 }, () => initialize(capped.url, b!.key)));
    expect(burst.filter((r) => r.sid).length).toBe(2);
    expect(burst.filter((r) => r.status === 429).map((r) => r.body.error.data.cap)).toEqual(['per-key', 'per-key']);
    // Four sessions are open: the server's cap refuses a third key.
    const full = await initialize(capped.url, c!.key);
    expect(full.status).toBe(503);
    expect(full.body.error.message).toMatch(/^Too many open MCP sessions on this server: 4 of the 4 it holds are open, 0 of them this key's \(--max-mcp-sessions\)\. .*DELETE/);
    expect(full.body.error.data).toMatchObject({ cap: 'per-server', limit: 4, open: 4, open_for_key: 0, sessions: [] });
  });

  it('a session that sends nothing after initialize is closed within --session-init-idle, freeing its place', async () => {
    const quick = await startNode([...store, '--session-init-idle', '2', '--max-mcp-sessions-per-key', '1']);
    nodes.push(quick);
    const [silent, active] = await Promise.all(['silent', 'active'].map((name) => createKey(store, name, 'gdb:read', ['--rate', 'unlimited'])));
    const kept = await openMcpSession(quick.url, active!.key); // sends notifications/initialized
    const first = await initialize(quick.url, silent!.key);
    expect(first.sid).toBeTruthy();
    expect((await initialize(quick.url, silent!.key)).body.error.data.cap).toBe('per-key');
    // Nothing follows: the server closes it (the log says why) ...
    await until('the silent session is closed', () => quick.output().includes(`MCP session ${first.sid} ended: nothing sent within 2 s of initialize`));
    const gone = await rpc(quick.url, silent!.key, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }, inSession(first.sid!));
    expect(gone.status).toBe(404);
    // ... and its place is free again.
    expect((await initialize(quick.url, silent!.key)).sid).toBeTruthy();
    // The session that spoke after initialize has the ordinary idle bound (--session-idle, 1800 s).
    const alive = await rpc(quick.url, active!.key, { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }, inSession(kept));
    expect(alive.status).toBe(200);
    expect(quick.output()).not.toContain(`MCP session ${kept} ended`);
  });
});
