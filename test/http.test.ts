import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, startHttpServer, type HttpServer } from './helpers/client.js';
import { compileC, tempDir } from './helpers/programs.js';

let root: string;
let server: HttpServer;

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

function post(body: unknown, headers: Record<string, string> = {}, path = '/mcp') {
  const url = new URL(server.url);
  return fetch(`${url.origin}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

beforeAll(async () => {
  root = tempDir();
  compileC(root, 'basic');
  server = await startHttpServer(['--root', root, '--api-key', 'test-key-0123456789']);
});
afterAll(async () => {
  await server?.stop();
});

describe('HTTP transport', () => {
  it('prints its URL and key, on loopback by default', () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(server.key).toBe('test-key-0123456789');
  });

  it('runs a GDB session over Streamable HTTP with the key', async () => {
    const dk = await connectHttp(server.url, server.key);
    const { id } = await dk.ok('open', { program: 'basic' });
    await dk.ok('call', { id, command: 'break add' });
    const run = await dk.ok('call', { id, command: 'run' });
    expect(run.stopped.frame.func).toBe('add');
    const { sessions } = await dk.ok('list_sessions');
    expect(sessions.map((s: { id: string }) => s.id)).toEqual([id]);
    await dk.close();
  });

  it('keeps MCP clients apart: one cannot see or use the sessions of another', async () => {
    const a = await connectHttp(server.url, server.key);
    const b = await connectHttp(server.url, server.key);
    const { id } = await a.ok('open');
    expect((await b.ok('list_sessions')).sessions).toEqual([]);
    expect(await b.fails('call', { id, command: 'bt' })).toBe(`Session not found: ${id}`);
    await a.ok('close', { id });
    await a.close();
    await b.close();
  });

  it('rejects a missing or wrong key with 401 and JSON-RPC error -32001', async () => {
    const attempts: Array<Record<string, string>> = [{}, { Authorization: 'Bearer wrong-key' }, { Authorization: 'Basic dGVzdDp0ZXN0' }, { Authorization: 'Bearer ' }];
    for (const headers of attempts) {
      const res = await post(INIT, headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(await res.json()).toEqual({ jsonrpc: '2.0', error: { code: -32001, message: 'Authentication failed' }, id: null });
    }
  });

  it('rejects a foreign Host or Origin with 403 (DNS rebinding)', async () => {
    const auth = { Authorization: `Bearer ${server.key}` };
    // fetch() may not set Host, so this one goes through node:http.
    const evilHost = await new Promise<number>((resolve, reject) => {
      const url = new URL(server.url);
      const req = request({ host: url.hostname, port: url.port, path: '/mcp', method: 'POST', headers: { ...auth, Host: 'evil.example.com', 'Content-Type': 'application/json' } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject);
      req.end(JSON.stringify(INIT));
    });
    expect(evilHost).toBe(403);
    const evilOrigin = await post(INIT, { ...auth, Origin: 'http://evil.example.com' });
    expect(evilOrigin.status).toBe(403);
    const goodOrigin = await post(INIT, { ...auth, Origin: new URL(server.url).origin });
    expect(goodOrigin.status).toBe(200);
  });

  it('limits the request body size and rejects malformed JSON', async () => {
    const auth = { Authorization: `Bearer ${server.key}` };
    const huge = await post({ ...INIT, params: { ...INIT.params, pad: 'x'.repeat(5 * 1024 * 1024) } }, auth);
    expect(huge.status).toBe(413);
    expect(((await huge.json()) as any).error.message).toMatch(/too large/);
    const bad = await post('{"jsonrpc": "2.0", ', auth);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.code).toBe(-32700);
  });

  it('ends an MCP session and its GDB sessions on DELETE', async () => {
    const dk = await connectHttp(server.url, server.key);
    const { id } = await dk.ok('open');
    const transport = dk.client.transport as unknown as { sessionId?: string; terminateSession(): Promise<void> };
    const sid = transport.sessionId!;
    await transport.terminateSession();
    const res = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, { Authorization: `Bearer ${server.key}`, 'Mcp-Session-Id': sid, 'Mcp-Protocol-Version': '2025-06-18' });
    expect(res.status).toBe(404);
    // A new client cannot reach the old GDB session either: it is gone.
    const other = await connectHttp(server.url, server.key);
    expect(await other.fails('close', { id })).toMatch(/^Session not found/);
    await other.close();
  });

  it('answers unknown REST paths with a JSON 404', async () => {
    const res = await fetch(new URL('/nope', server.url), { headers: { Authorization: `Bearer ${server.key}` } });
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).error.message).toMatch(/MCP is served at \/mcp/);
  });
});

describe('serve options', () => {
  it('refuses --no-auth on a non-loopback address', async () => {
    await expect(startHttpServer(['--no-auth', '--host', '0.0.0.0'])).rejects.toThrow(/--no-auth is allowed only on a loopback address/);
  });

  it('generates a key when none is given, and takes DEBUGKIT_API_KEY', async () => {
    const generated = await startHttpServer([], { DEBUGKIT_API_KEY: '' });
    try {
      expect(generated.key).toMatch(/^dk_[A-Za-z0-9_-]{32}$/);
    } finally {
      await generated.stop();
    }
    const fromEnv = await startHttpServer([], { DEBUGKIT_API_KEY: 'from-the-environment' });
    try {
      expect(fromEnv.key).toBe('from-the-environment');
    } finally {
      await fromEnv.stop();
    }
  });

  it('accepts --no-auth on loopback and says so loudly', async () => {
    const open = await startHttpServer(['--no-auth']);
    try {
      expect(open.output()).toMatch(/WARNING: --no-auth/);
      const res = await fetch(open.url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
        body: JSON.stringify(INIT),
      });
      expect(res.status).toBe(200);
    } finally {
      await open.stop();
    }
  });
});
