import { execFileSync } from 'node:child_process';
import { copyFileSync, readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { createRequire } from 'node:module';
import path from 'node:path';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, connectStdio } from './helpers/client.js';
import { callTool, createKey, openMcpSession, rpc, runCli, startNode, tempDataDir, type Node } from './helpers/control.js';

const require = createRequire(import.meta.url);
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

let data: Awaited<ReturnType<typeof tempDataDir>>;
let store: string[];
let node: Node;

beforeAll(async () => {
  data = await tempDataDir();
  store = ['--data-dir', data.dir];
});
afterAll(async () => {
  await node?.stop();
  await data?.cleanup();
});

function auditLines(): Promise<any[]> {
  return runCli(['audit', 'export', ...store]).then((r) =>
    r.stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l)),
  );
}

describe('keys', () => {
  it('creates, lists and revokes keys; only hashes are stored', async () => {
    const alice = await createKey(store, 'alice', 'gdb:read,python', ['--rate', '30/min', '--quota', '500/day', '--expires', '30d']);
    expect(alice.key).toMatch(/^dk_[A-Za-z0-9_-]{40,}$/);
    const list = await runCli(['keys', 'list', ...store]);
    expect(list.stdout).toMatch(/alice\s+dk_\S+\.\.\.\s+gdb:read,python\s+30\/minute\s+500\/day\s+active/);
    expect(list.stdout).not.toContain(alice.key);
    const db = readFileSync(path.join(data.dir, 'control.db'));
    expect(db.includes(Buffer.from(alice.key))).toBe(false);

    node = await startNode(store);
    expect(node.output()).not.toMatch(/API key: /); // stored keys only: no made-up full-scope key
    expect((await openMcpSession(node.url, alice.key)).length).toBeGreaterThan(0);
    const revoked = await runCli(['keys', 'revoke', alice.id, ...store]);
    expect(revoked.stdout).toMatch(new RegExp(`Revoked ${alice.id} \\(alice\\)`));
    const after = await rpc(node.url, alice.key, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe(-32001);
    expect(after.headers.get('www-authenticate')).toMatch(/revoked/);
  });

  it('refuses bad options with the valid forms', async () => {
    const bad = await runCli(['keys', 'create', ...store, '--name', 'x', '--scopes', 'gdb,root']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/unknown scope "root": valid scopes are/);
    const rate = await runCli(['keys', 'create', ...store, '--name', 'x', '--scopes', 'gdb', '--rate', 'fast']);
    expect(rate.stderr).toMatch(/--rate "fast" is not valid: write COUNT\/UNIT/);
    expect((await runCli(['keys', 'revoke', 'nobody', ...store])).stderr).toMatch(/no key with id or name "nobody"/);
  });
});

describe('scopes (SDK client)', () => {
  it('lists only the tools a key may call and refuses the rest with -32003 and the scope', async () => {
    const reader = await createKey(store, 'reader', 'gdb:read,bundles:read', ['--rate', 'unlimited']);
    const client = await connectHttp(node.url, reader.key);
    try {
      const names = (await client.client.listTools()).tools.map((t) => t.name).sort();
      expect(names).toContain('list_sessions');
      expect(names).toContain('read_file');
      expect(names).not.toContain('open');
      expect(names).not.toContain('call');
      expect(names).not.toContain('initialize_bundle');
      expect(names.some((n) => n.startsWith('python_'))).toBe(false);
      const err = await client.client.callTool({ name: 'open', arguments: {} }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(McpError);
      expect((err as McpError).code).toBe(-32003);
      expect((err as McpError).message).toMatch(/open needs scope gdb/);
      expect((err as McpError).data).toMatchObject({ required_scope: 'gdb', tool: 'open' });
      expect((await client.tool('list_sessions')).isError).toBe(false);
    } finally {
      await client.close();
    }
  });

  it('gdb without gdb:shell debugs but cannot reach a shell', async () => {
    const dev = await createKey(store, 'dev', 'gdb', ['--rate', 'unlimited']);
    const client = await connectHttp(node.url, dev.key);
    try {
      const { id } = await client.ok('open');
      expect(await client.ok('call', { id, command: 'print 6*7' })).toMatchObject({ output: expect.stringContaining('42') });
      for (const command of ['shell id', '!id', 'python import os', 'pipe bt | sh', 'run; id', 'attach 1']) {
        const err = (await client.client.callTool({ name: 'call', arguments: { id, command } }).catch((e: unknown) => e)) as McpError;
        expect(err.code, command).toBe(-32003);
        expect(err.data, command).toMatchObject({ required_scope: command.startsWith('attach') ? 'gdb:attach' : 'gdb:shell' });
      }
      await client.ok('close', { id });
    } finally {
      await client.close();
    }
    const denied = (await auditLines()).filter((e) => e.event === 'denied' && e.key_id === dev.id);
    expect(denied.map((e) => e.args.command)).toEqual(expect.arrayContaining(['shell id', 'attach 1']));
  });
});

describe('rate limits and quotas (plain HTTP)', () => {
  it('counts every request (initialize, tools/list, tool calls), reports them on every answer, and answers 429 + -32002 over the limit', async () => {
    const k = await createKey(store, 'limited', 'gdb:read', ['--rate', '5/min']);
    const sid = await openMcpSession(node.url, k.key); // initialize: 1 of 5 (notifications/initialized is not counted)
    const list = await rpc(node.url, k.key, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }, { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18' });
    expect(list.status).toBe(200);
    expect(list.headers.get('x-ratelimit-limit')).toBe('5');
    expect(list.headers.get('x-ratelimit-remaining')).toBe('3');
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await callTool(node.url, k.key, sid, 'list_sessions');
      expect(r.status).toBe(200);
      remaining.push(r.headers.get('x-ratelimit-remaining')!);
      expect(r.headers.get('ratelimit-policy')).toBe('"rate";q=5;w=60');
      expect(r.headers.get('ratelimit')).toMatch(/^"rate";r=\d;t=\d+$/);
      expect(Number(r.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000);
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const over = await callTool(node.url, k.key, sid, 'list_sessions');
    expect(over.status).toBe(429);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(over.body.error).toMatchObject({ code: -32002, data: { limit: 5, used: 5, reset_at: expect.stringMatching(/Z$/) } });
  });

  it("a quota ends at its period with the contract's error data", async () => {
    const k = await createKey(store, 'quota', 'gdb:read', ['--rate', 'unlimited', '--quota', '2/month']);
    const sid = await openMcpSession(node.url, k.key);
    expect((await callTool(node.url, k.key, sid, 'list_sessions')).status).toBe(200);
    expect((await callTool(node.url, k.key, sid, 'list_sessions')).status).toBe(200);
    const over = await callTool(node.url, k.key, sid, 'list_sessions');
    const now = new Date();
    const nextMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
    expect(over.status).toBe(429);
    expect(over.body.error).toMatchObject({ code: -32002, message: expect.stringMatching(/^Quota exceeded/), data: { limit: 2, used: 2, reset_at: nextMonth } });
  });

  it('another key cannot use a session it did not open', async () => {
    const a = await createKey(store, 'owner', 'gdb:read', ['--rate', 'unlimited']);
    const b = await createKey(store, 'intruder', 'gdb:read', ['--rate', 'unlimited']);
    const sid = await openMcpSession(node.url, a.key);
    expect((await callTool(node.url, b.key, sid, 'list_sessions')).status).toBe(404);
  });
});

describe('REST routes (the Python OpenAPI contract)', () => {
  it('need the toolset scope, count against the limits and are audited', async () => {
    const k = await createKey(store, 'rest-reader', 'python:read', ['--rate', '50/min']);
    const get = (p: string, init: RequestInit = {}) => fetch(new URL(p, node.url), { ...init, headers: { Authorization: `Bearer ${k.key}`, 'Content-Type': 'application/json' } });
    const missing = await get('/sessions/no-such-session');
    expect(missing.status).toBe(404); // the route ran: python:read covers GET
    expect(missing.headers.get('x-ratelimit-remaining')).toBe('49');
    const start = await get('/sessions', { method: 'POST', body: JSON.stringify({ entry: 'x.py' }) });
    expect(start.status).toBe(403);
    expect(start.headers.get('x-ratelimit-remaining')).toBe('48'); // a refused call is a request all the same
    expect(((await start.json()) as any).error).toMatchObject({ code: -32003, data: { required_scope: 'python' } });
    const entries = (await auditLines()).filter((e) => e.key_id === k.id);
    expect(entries.map((e) => [e.event, e.tool, e.transport])).toEqual([
      ['call', 'GET /sessions/:id', 'rest'],
      ['result', 'GET /sessions/:id', 'rest'],
      ['denied', 'POST /sessions', 'rest'],
    ]);
  });
});

describe('audit', () => {
  it('records calls with key id, client, redacted arguments, outcome, duration and traceparent; the chain verifies', async () => {
    const k = await createKey(store, 'audited', 'gdb', ['--rate', 'unlimited']);
    const sid = await openMcpSession(node.url, k.key);
    const opened = await callTool(node.url, k.key, sid, 'open', { args: ['--token', 'abc123secret'] }, { traceparent: TRACEPARENT });
    const id = opened.body.result.structuredContent.content.id;
    await callTool(node.url, k.key, sid, 'call', { id, command: 'print "API_TOKEN=shown-as-code"' });
    const entries = (await auditLines()).filter((e) => e.key_id === k.id);
    const call = entries.find((e) => e.event === 'call' && e.tool === 'call')!;
    expect(call).toMatchObject({ session: `http:${sid}`, debug_session: id, transport: 'http', client: 'plain-fetch/1' });
    // A debugger's code is kept as sent (SECURITY.md); the program's arguments are argv, their secret hidden.
    expect(call.args.command).toBe('print "API_TOKEN=shown-as-code"');
    expect(entries.find((e) => e.tool === 'open' && e.event === 'call')!.args.args).toEqual(['--token', '[REDACTED]']);
    const result = entries.find((e) => e.event === 'result' && e.call_id === call.call_id)!;
    expect(result.outcome).toBe('ok');
    expect(result.duration_ms).toBeGreaterThan(0);
    expect(entries.find((e) => e.tool === 'open' && e.event === 'call')!.traceparent).toBe(TRACEPARENT);
    const all = JSON.stringify(await auditLines());
    expect(all).not.toContain('abc123secret');
    expect(all).not.toContain(k.key);
    const verify = await runCli(['audit', 'verify', ...store]);
    expect(verify.code).toBe(0);
    expect(verify.stdout).toMatch(/audit chain OK: \d+ entries verified/);
    const since = await runCli(['audit', 'export', ...store, '--since', '1h']);
    expect(since.stdout.trim().split('\n').length).toBeGreaterThan(4);
    expect((await runCli(['audit', 'export', ...store, '--since', 'yesterdayish'])).stderr).toMatch(/--since "yesterdayish" is not valid/);
  });

  it('stdio calls are audited as the local user', async () => {
    const client = await connectStdio({ args: store });
    try {
      expect((await client.tool('list_sessions')).isError).toBe(false);
    } finally {
      await client.close();
    }
    const stdio = (await auditLines()).filter((e) => e.transport === 'stdio');
    expect(stdio.some((e) => e.tool === 'list_sessions' && e.key_id === 'local' && e.event === 'result' && e.outcome === 'ok')).toBe(true);
  });

  it('verify names the first entry changed behind its back', async () => {
    const copy = path.join(data.dir, 'tampered');
    execFileSync('mkdir', ['-p', copy]);
    const Database = require('better-sqlite3');
    const src = new Database(path.join(data.dir, 'control.db'));
    await src.backup(path.join(copy, 'control.db'));
    src.close();
    // The chain is keyed: verifying it takes the audit key the server keeps beside the store.
    copyFileSync(path.join(data.dir, 'audit.key'), path.join(copy, 'audit.key'));
    const db = new Database(path.join(copy, 'control.db'));
    db.prepare('UPDATE audit SET args = \'{"command":"innocent"}\' WHERE seq = 3').run();
    db.close();
    const verify = await runCli(['audit', 'verify', '--data-dir', copy]);
    expect(verify.code).toBe(1);
    expect(verify.stdout).toMatch(/audit chain BROKEN at entry 3: hash does not match the entry/);
  });

  it('refuses a call when the audit cannot be written', async () => {
    const k = await createKey(store, 'blocked', 'gdb', ['--rate', 'unlimited']);
    const Database = require('better-sqlite3');
    const db = new Database(path.join(data.dir, 'control.db'), { timeout: 5000 });
    db.exec("CREATE TRIGGER audit_full BEFORE INSERT ON audit BEGIN SELECT RAISE(ABORT, 'disk full'); END;");
    try {
      const client = await connectHttp(node.url, k.key);
      const r = await client.tool('open');
      expect(r.isError).toBe(true);
      expect(r.text).toMatch(/call refused: the audit log cannot be written \(.*disk full/);
      await client.close();
    } finally {
      db.exec('DROP TRIGGER audit_full');
      db.close();
    }
    // Nothing ran: no gdb session was opened for that key.
    const client = await connectHttp(node.url, k.key);
    expect((await client.ok('list_sessions')).sessions ?? []).toEqual([]);
    await client.close();
  });
});

describe('--api-key and TLS', () => {
  it('--api-key is one full-scope key, served over HTTPS with --tls-cert/--tls-key', async () => {
    const cert = path.join(data.dir, 'cert.pem');
    const key = path.join(data.dir, 'key.pem');
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'],
      { stdio: 'ignore' },
    );
    const tls = await startNode([...store, '--api-key', 'team-secret-key-123', '--tls-cert', cert, '--tls-key', key]);
    try {
      expect(tls.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/mcp$/);
      const ca = readFileSync(cert);
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'tls', version: '1' } } });
      const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = httpsRequest(
          tls.url,
          { method: 'POST', ca, headers: { Authorization: 'Bearer team-secret-key-123', 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' } },
          (res) => {
            let text = '';
            res.on('data', (d) => (text += d));
            res.on('end', () => resolve({ status: res.statusCode!, text }));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
      expect(answer.status).toBe(200);
      expect(answer.text).toContain('"serverInfo"');
      // Plain HTTP to the TLS port gets no MCP answer.
      await expect(fetch(tls.url.replace('https:', 'http:'), { method: 'POST', body })).rejects.toThrow();
    } finally {
      await tls.stop();
    }
  });

  it('--tls-cert without --tls-key is refused', async () => {
    const r = await runCli(['serve', '--port', '0', ...store, '--tls-cert', '/nonexistent.pem']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/--tls-cert and --tls-key go together/);
  });
});
