// The control plane on both protocol generations: kindly-debugger's curl form (no initialize, no Accept,
// no session), the 2026-07-28 SDK client, and 2025 sessions, all through the same keys, scopes,
// limits and audit.
import { execFile } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, connectHttpModern } from './helpers/client.js';
import { auditEntries, createKey, openMcpSession, runCli, startNode, tempDataDir, type Node } from './helpers/control.js';

const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

let data: Awaited<ReturnType<typeof tempDataDir>>;
let store: string[];
let node: Node;

beforeAll(async () => {
  data = await tempDataDir();
  store = ['--data-dir', data.dir];
  await createKey(store, 'bootstrap', 'gdb:read');
  node = await startNode(store);
}, 60_000);
afterAll(async () => {
  await node?.stop();
  await data?.cleanup();
});

/** The seed's example, exactly: Authorization and Content-Type only. */
async function curl(key: string, message: object, headers: Record<string, string> = {}) {
  const res = await fetch(node.url, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(message),
  });
  return { status: res.status, headers: res.headers, body: JSON.parse(await res.text()) };
}

const audit = () => auditEntries(store);

describe('the control plane on MCP SDK v2', () => {
  it("kindly-debugger's curl example: tools/list and tools/call with a key, its scopes, its rate fields, audited", async () => {
    const k = await createKey(store, 'curl', 'gdb:read', ['--rate', '50/hour']);
    const list = await curl(k.key, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    expect(list.status).toBe(200);
    const names = list.body.result.tools.map((t: { name: string }) => t.name);
    expect(names).toContain('list_sessions');
    expect(names).not.toContain('open'); // gdb:read: read-only tools only
    expect(names.some((n: string) => n.startsWith('python_'))).toBe(false);
    // The rate fields are on every answer; a listing is a request, and counts.
    expect(list.headers.get('x-ratelimit-limit')).toBe('50');
    expect(list.headers.get('x-ratelimit-remaining')).toBe('49');
    expect(list.headers.get('ratelimit-policy')).toMatch(/"rate";q=50;w=3600/);
    const call = await curl(k.key, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'list_sessions', arguments: {} } }, { traceparent: TRACEPARENT });
    expect(call.status).toBe(200);
    expect(call.body.result.isError).toBeFalsy();
    expect(call.headers.get('x-ratelimit-remaining')).toBe('48');
    expect(call.headers.get('ratelimit')).toMatch(/"rate";r=48;t=\d+/);
    // Outside the key's scopes: -32003 naming the scope, nothing runs.
    const denied = await curl(k.key, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'open', arguments: {} } });
    expect(denied.body).toMatchObject({ id: 3, error: { code: -32003, data: { required_scope: 'gdb' } } });
    const entries = (await audit()).filter((e) => e.key_id === k.id);
    const before = entries.find((e) => e.event === 'call' && e.tool === 'list_sessions');
    expect(before).toMatchObject({ transport: 'http', traceparent: TRACEPARENT, session: `http:${k.id}` });
    expect(entries.find((e) => e.event === 'result' && e.call_id === before.call_id)).toMatchObject({ outcome: 'ok' });
    expect(entries.find((e) => e.event === 'denied' && e.tool === 'open')).toMatchObject({ outcome: 'permission_denied' });
  });

  it('the 2026-07-28 SDK client: sees only its tools; its calls are audited before they run and the chain verifies', async () => {
    const k = await createKey(store, 'modern', 'gdb', ['--rate', '50/hour']);
    const client = await connectHttpModern(node.url, k.key);
    try {
      const names = (await client.client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['open', 'call', 'close', 'list_sessions']));
      expect(names.some((n) => n.startsWith('python_') || n === 'kubectl')).toBe(false);
      const { id } = await client.ok('open');
      expect((await client.ok('call', { id, command: 'print 6*7' })).output).toContain('42');
      await client.ok('close', { id });
    } finally {
      await client.close();
    }
    const entries = (await audit()).filter((e) => e.key_id === k.id && e.event === 'call');
    expect(entries.map((e) => e.tool)).toEqual(['open', 'call', 'close']);
    expect(entries[1].args).toMatchObject({ command: 'print 6*7' });
    const verify = await runCli(['audit', 'verify', ...store]);
    expect(verify.code).toBe(0);
  });

  it('over the limit: 429, Retry-After and -32002 on stateless requests and 2025 sessions alike', async () => {
    const k = await createKey(store, 'tight', 'gdb:read', ['--rate', '3/hour']);
    const call = (id: number, headers: Record<string, string> = {}) => curl(k.key, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'list_sessions', arguments: {} } }, headers);
    expect((await call(1)).status).toBe(200);
    const sid = await openMcpSession(node.url, k.key); // initialize counts too
    const inSession = await call(2, { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18', Accept: 'application/json, text/event-stream' });
    expect(inSession.status).toBe(200);
    const over = await call(3);
    expect(over.status).toBe(429);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(over.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(over.body).toMatchObject({ id: 3, error: { code: -32002, data: { limit: 3, used: 3, reset_at: expect.any(String) } } });
  });

  it('an MCP session is bound to the key that opened it', async () => {
    const owner = await createKey(store, 'owner', 'gdb:read', ['--rate', 'unlimited']);
    const other = await createKey(store, 'intruder', 'gdb:read', ['--rate', 'unlimited']);
    const sid = await openMcpSession(node.url, owner.key);
    const r = await curl(
      other.key,
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_sessions', arguments: {} } },
      {
        'Mcp-Session-Id': sid,
        'MCP-Protocol-Version': '2025-06-18',
        Accept: 'application/json, text/event-stream',
      },
    );
    expect(r.status).toBe(404);
    expect(r.body.error.message).toMatch(/Session not found/);
  });

  it('stdio still serves the local user when the default data directory cannot be created (a warning, no audit)', async () => {
    // /dev/null is a file: nothing can be created below it, whoever runs the test.
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI],
      env: { ...process.env, XDG_DATA_HOME: '/dev/null/debugkit-test', DEBUGKIT_STORE: '' } as Record<string, string>,
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr!.on('data', (d) => (stderr += d));
    const client = new Client({ name: 'no-data-dir', version: '1' });
    await client.connect(transport);
    try {
      const r = await client.callTool({ name: 'list_sessions', arguments: {} });
      expect(r.isError).toBeFalsy();
      expect(stderr).toMatch(/control database cannot be opened, so stdio calls are not audited/);
    } finally {
      await client.close();
    }
  });

  it('an explicit --data-dir that cannot be created stops stdio at start, saying why', async () => {
    const r = await new Promise<{ code: number; stderr: string }>((resolve) =>
      execFile(process.execPath, [CLI, '--data-dir', '/dev/null/debugkit-test'], { timeout: 30_000 }, (err, _out, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
      ),
    );
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/cannot open the control database \/dev\/null\/debugkit-test\/control\.db/);
  });
});
