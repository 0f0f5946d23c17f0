import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../src/core/wait.js';
import { CLI, MODERN_PROTOCOL, connectHttp, connectHttpModern, connectStdio, connectStdioModern, startHttpServer, type HttpServer } from './helpers/client.js';
import { compileC, tempDir } from './helpers/programs.js';
import { RawStdioServer } from './helpers/raw-stdio.js';

const KEY = 'protocol-key-0123456789';
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': MODERN_PROTOCOL,
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

let root: string;
let server: HttpServer;

beforeAll(async () => {
  root = tempDir();
  compileC(root, 'basic');
  compileC(root, 'spin');
  server = await startHttpServer(['--root', root, '--api-key', KEY, '--toolsets', 'gdb,python']);
});
afterAll(async () => {
  await server?.stop();
});

/** A bare POST as kindly-debugger's curl example sends it: no Accept header, no session, no initialize. */
function curl(body: unknown, headers: Record<string, string> = {}) {
  return fetch(server.url, {
    method: 'POST',
    headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

describe("kindly-debugger's curl example (plain JSON-RPC over HTTP)", () => {
  it('answers tools/list with the tool list as plain JSON', async () => {
    const res = await curl({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('mcp-session-id')).toBeNull();
    const body = (await res.json()) as any;
    expect(body.id).toBe(1);
    expect(body.result.tools.map((t: { name: string }) => t.name)).toEqual(expect.arrayContaining(['open', 'call', 'python_start_session']));
  });

  it('answers tools/call as plain JSON, and its session lives on for the key', async () => {
    const opened = (await (await curl({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'open', arguments: {} } })).json()) as any;
    expect(opened.result.structuredContent).toMatchObject({ type: 'ok', content: { id: expect.any(String) } });
    const id = opened.result.structuredContent.content.id;
    const bt = (await (await curl({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'call', arguments: { id, command: 'show version' } } })).json()) as any;
    expect(bt.result.structuredContent.type).toBe('ok');
    const closed = (await (await curl({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'close', arguments: { id } } })).json()) as any;
    expect(closed.result.structuredContent.type).toBe('ok');
  });

  it('keeps concurrent requests apart even when they reuse an id; a client that leaves does not stop the others', async () => {
    const opened = (await (await curl({ jsonrpc: '2.0', id: 'x', method: 'tools/call', params: { name: 'open', arguments: { program: 'spin' } } })).json()) as any;
    expect(opened.id).toBe('x');
    const id = opened.result.structuredContent.content.id;
    // A long call, while four others with the same id are answered beside it, each its own.
    const long = curl({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'call', arguments: { id, command: 'run', wait: 3 } } }).then((r) => r.json() as Promise<any>);
    const same = await Promise.all([1, 2, 3, 4].map(async () => (await (await curl({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'list_sessions', arguments: {} } })).json()) as any));
    for (const answer of same) expect(answer).toMatchObject({ jsonrpc: '2.0', id: 7, result: { structuredContent: { type: 'ok', content: { sessions: expect.any(Array) } } } });
    expect(await long).toMatchObject({ id: 7, result: { structuredContent: { type: 'ok', content: { state: 'running' } } } });
    // A client that leaves mid-call: the server goes on answering.
    const gone = new AbortController();
    const left = fetch(server.url, {
      method: 'POST',
      headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'python_start_session', arguments: { script: 'x.py' } } }),
      signal: gone.signal,
    }).catch(() => 'aborted');
    gone.abort();
    expect(await left).toBe('aborted');
    // Errors keep the client's id; an unknown method is -32601.
    const unknown = (await (await curl({ jsonrpc: '2.0', id: 'u', method: 'nope/nothing', params: {} })).json()) as any;
    expect(unknown).toMatchObject({ id: 'u', error: { code: -32601 } });
    const closed = (await (await curl({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'close', arguments: { id } } })).json()) as any;
    expect(closed.result.structuredContent.type).toBe('ok');
  });

  it('refuses a missing or wrong key with 401 and -32001, for every protocol version', async () => {
    for (const body of [
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: ENVELOPE } },
    ]) {
      const res = await curl(body, { Authorization: 'Bearer wrong' });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(((await res.json()) as any).error).toEqual({ code: -32001, message: 'Authentication failed' });
    }
  });
});

describe('protocol 2026-07-28 on the wire', () => {
  const modern = (method: string, params: Record<string, unknown>, extra: Record<string, string> = {}) =>
    curl({ jsonrpc: '2.0', id: 7, method, params: { ...params, _meta: ENVELOPE } }, { 'MCP-Protocol-Version': MODERN_PROTOCOL, 'Mcp-Method': method, ...extra });

  it('answers server/discover with its versions, capabilities and instructions', async () => {
    const res = await modern('server/discover', {});
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.result.supportedVersions).toContain(MODERN_PROTOCOL);
    expect(body.result.capabilities.tools).toBeDefined();
    expect(body.result.instructions).toMatch(/gdb:.*python:/s);
  });

  it('calls a tool without initialize, the Mcp-Name header naming it', async () => {
    const res = await modern('tools/call', { name: 'list_sessions', arguments: {} }, { 'Mcp-Name': 'list_sessions' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = (await res.json()) as any;
    expect(body.result.structuredContent).toEqual({ type: 'ok', content: { sessions: expect.any(Array) } });
  });

  it('refuses headers that disagree with the body', async () => {
    const res = await modern('tools/list', {}, { 'Mcp-Method': 'tools/call' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.code).toBe(-32020);
  });

  it('refuses an envelope that names an unknown revision, saying which are served', async () => {
    const res = await curl(
      { jsonrpc: '2.0', id: 8, method: 'tools/list', params: { _meta: { ...ENVELOPE, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } } },
      { 'MCP-Protocol-Version': '2099-01-01', 'Mcp-Method': 'tools/list' },
    );
    const body = (await res.json()) as any;
    expect(body.error).toBeDefined();
    expect(JSON.stringify(body.error)).toContain(MODERN_PROTOCOL);
  });
});

describe('both SDK generations against the same server', () => {
  it('v2 client (2026-07-28) over HTTP: a GDB session from open to a breakpoint', async () => {
    const dk = await connectHttpModern(server.url, KEY);
    const { id } = await dk.ok('open', { program: 'basic' });
    await dk.ok('call', { id, command: 'break add' });
    const run = await dk.ok('call', { id, command: 'run' });
    expect(run.stopped.frame.func).toBe('add');
    expect(await dk.fails('call', { id: 'no-such-session', command: 'bt' })).toMatch(/Session not found/);
    await dk.ok('close', { id });
    await dk.close();
  });

  it('v2 client (2026-07-28) over HTTP: a request with a progress token gets progress over SSE', async () => {
    const dk = await connectHttpModern(server.url, KEY);
    const { id } = await dk.ok('open', { program: 'spin' });
    const progress: number[] = [];
    const result = await dk.client.callTool({ name: 'call', arguments: { id, command: 'run', wait: 2.5 } }, { onprogress: (p) => progress.push(p.progress) });
    expect((result.structuredContent as any).content.state).toBe('running');
    expect(progress.length).toBeGreaterThanOrEqual(1); // timing decides how many; at least one must arrive
    await dk.ok('close', { id });
    await dk.close();
  });

  it('v1 client (2025-11-25 session) over HTTP', async () => {
    const dk = await connectHttp(server.url, KEY);
    expect(dk.client.getServerVersion()?.name).toBe('debugkit');
    const { id } = await dk.ok('open');
    await dk.ok('close', { id });
    await dk.close();
  });

  it('v2 client (2026-07-28) over stdio', async () => {
    const dk = await connectStdioModern({ root, args: ['--toolsets', 'gdb'] });
    const { id } = await dk.ok('open', { program: 'basic' });
    const { sessions } = await dk.ok('list_sessions');
    expect(sessions.map((s: { id: string }) => s.id)).toEqual([id]);
    await dk.ok('close', { id });
    await dk.close();
  });

  it('v1 client (2025-11-25) over stdio', async () => {
    const dk = await connectStdio({ root, args: ['--toolsets', 'gdb'] });
    const { sessions } = await dk.ok('list_sessions');
    expect(sessions).toEqual([]);
    await dk.close();
  });

  it('input errors name the field and what is valid, in both generations', async () => {
    for (const dk of [await connectHttpModern(server.url, KEY), await connectHttp(server.url, KEY)]) {
      const r = await dk.tool('call', { id: 42, command: 'bt' });
      expect(r.isError).toBe(true);
      expect(r.text).toMatch(/"id": expected a string, got number/);
      expect(r.text).not.toMatch(/"code":|invalid_type/);
      const missing = await dk.tool('close', {});
      expect(missing.text).toMatch(/"id" is required \(a string\)/);
      await dk.close();
    }
  });
});

describe('stdio robustness', () => {
  it('answers invalid JSON with -32700 and non-JSON-RPC with -32600, then goes on', async () => {
    const raw = new RawStdioServer(['--toolsets', 'gdb']);
    try {
      const answers: any[] = [];
      raw.proc.stdout!.on('data', (d: Buffer) => {
        for (const line of d.toString().split('\n').filter(Boolean)) answers.push(JSON.parse(line));
      });
      raw.proc.stdin!.write('this is not json\n');
      raw.proc.stdin!.write('{"jsonrpc":"1.0","id":9,"method":"x"}\n');
      raw.proc.stdin!.write('[1,2]\n');
      raw.proc.stdin!.write('{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}\n');
      await raw.initialize();
      const list = await raw.request('tools/list', {});
      expect(list.result.tools.length).toBeGreaterThan(0);
      const errors = answers.filter((a) => a.error);
      expect(errors.map((e) => e.error.code)).toEqual([-32700, -32600, -32600, -32600]);
      expect(errors[1].id).toBe(9);
    } finally {
      raw.proc.kill('SIGTERM');
      await raw.exited();
    }
  });

  it('answers a line over the 10 MiB limit with an error and goes on', async () => {
    const raw = new RawStdioServer(['--toolsets', 'gdb']);
    try {
      await raw.initialize();
      const big = JSON.stringify({ jsonrpc: '2.0', id: 77, method: 'tools/call', params: { name: 'call', arguments: { id: 'x', command: 'x'.repeat(11 * 1024 * 1024) } } });
      const answered = raw.request('ping', {}); // registers nothing for id 77; read it below
      const tooLong = new Promise<any>((resolve) => {
        const onData = (d: Buffer) => {
          const m = d
            .toString()
            .split('\n')
            .find((l) => l.includes('"id":77'));
          if (m) {
            raw.proc.stdout!.off('data', onData);
            resolve(JSON.parse(m));
          }
        };
        raw.proc.stdout!.on('data', onData);
      });
      raw.proc.stdin!.write(`${big}\n`);
      const err = await tooLong;
      expect(err.error.code).toBe(-32600);
      expect(err.error.message).toMatch(/over the 10485760-byte limit/);
      await answered;
      const list = await raw.request('tools/list', {});
      expect(list.result.tools.length).toBeGreaterThan(0);
    } finally {
      raw.proc.kill('SIGTERM');
      await raw.exited();
    }
  });

  it('keeps answering with stderr closed (EPIPE), and ends on one SIGTERM', async () => {
    const proc = spawn(process.execPath, [CLI, '--toolsets', 'gdb', '--log-level', 'debug'], { stdio: ['pipe', 'pipe', 'pipe'] });
    proc.stderr!.destroy(); // the reading end is gone: every log write gets EPIPE
    let out = '';
    proc.stdout!.on('data', (d) => (out += d));
    const send = (m: unknown) => proc.stdin!.write(`${JSON.stringify(m)}\n`);
    const waitFor = async (id: number) => {
      const answered = await pollUntil(() => out.split('\n').some((l) => l.includes(`"id":${id}`)), { timeoutMs: 15_000, intervalMs: 20 });
      if (!answered) throw new Error(`no answer to ${id}: ${out}`);
    };
    send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } });
    await waitFor(1);
    for (let i = 0; i < 20; i++) send({ jsonrpc: '2.0', id: 100 + i, method: 'tools/call', params: { name: 'list_sessions', arguments: {} } });
    await waitFor(119);
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
    proc.kill('SIGTERM');
    const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('hung'), 10_000))]);
    if (code === 'hung') proc.kill('SIGKILL');
    expect(code).toBe(143);
  });
});

describe('HTTP robustness', () => {
  it('answers a malformed percent-escape in a REST path with 400', async () => {
    const res = await fetch(new URL('/sessions/%E0%A4%A', server.url), { headers: { Authorization: `Bearer ${KEY}` } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.message).toMatch(/malformed percent-escape/);
  });
});

describe('instructions', () => {
  it('describe every toolset served, and only those', async () => {
    for (const [toolsets, present, absent] of [
      ['python', /python_start_session/, /gdb:|bundles:|mocks:/],
      ['bundles,mocks', /initialize_bundle.*keploy_mock_record/s, /gdb:|python:/],
      ['gdb', /"open" a session/, /python:|bundles:|mocks:/],
    ] as const) {
      const raw = new RawStdioServer(['--toolsets', toolsets]);
      try {
        const init = await raw.request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } });
        expect(init.result.instructions).toMatch(present);
        expect(init.result.instructions).not.toMatch(absent);
      } finally {
        raw.proc.kill('SIGTERM');
        await raw.exited();
      }
    }
  });
});
