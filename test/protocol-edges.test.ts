import net from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep } from '../src/core/wait.js';
import { connectHttp, connectHttpModern, connectStdioModern, MODERN_PROTOCOL, startHttpServer, type HttpServer, type ModernTestClient } from './helpers/client.js';
import { waitFor } from './helpers/procs.js';
import { tempDir } from './helpers/programs.js';

/**
 * Issue 17, "Protocol edges": what a 2026-07-28 request did not ask for is never sent; two
 * Authorization headers are refused; loopback Host names work on any port (SSH tunnels); a client
 * that tries OAuth is told to send the key. Each over real HTTP (and stdio where it applies).
 */

const KEY = 'edges-key-0123456789abcdef';
const LOG_LEVEL = 'io.modelcontextprotocol/logLevel';

let root: string;
let server: HttpServer;
let port: number;

beforeAll(async () => {
  root = tempDir();
  server = await startHttpServer(['--root', root, '--api-key', KEY, '--toolsets', 'gdb', '--allowed-host', 'devbox.lan']);
  port = Number(new URL(server.url).port);
});
afterAll(async () => {
  await server?.stop();
});

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** One HTTP/1.1 request written byte for byte (fetch joins repeated headers and sets Host itself). */
function raw(path: string, headers: Array<[string, string]>, body?: unknown, method = body === undefined ? 'GET' : 'POST'): Promise<RawAnswer> {
  const text = body === undefined ? '' : JSON.stringify(body);
  const head = [`${method} ${path} HTTP/1.1`, ...headers.map(([k, v]) => `${k}: ${v}`), 'Connection: close'];
  if (body !== undefined) head.push('Content-Type: application/json', `Content-Length: ${Buffer.byteLength(text)}`);
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(`${head.join('\r\n')}\r\n\r\n${text}`));
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (d) => (data += d));
    socket.on('error', reject);
    socket.on('close', () => {
      const [top = '', ...rest] = data.split('\r\n\r\n');
      const [status = '', ...lines] = top.split('\r\n');
      const fields: Record<string, string> = {};
      for (const line of lines) {
        const at = line.indexOf(':');
        fields[line.slice(0, at).toLowerCase()] = line.slice(at + 1).trim();
      }
      let payload = rest.join('\r\n\r\n');
      if (fields['transfer-encoding'] === 'chunked') payload = unchunk(payload);
      resolve({ status: Number(status.split(' ')[1]), headers: fields, body: payload });
    });
  });
}

function unchunk(text: string): string {
  let out = '';
  let rest = text;
  for (;;) {
    const nl = rest.indexOf('\r\n');
    const size = parseInt(rest.slice(0, nl), 16);
    if (!size) return out;
    out += rest.slice(nl + 2, nl + 2 + size);
    rest = rest.slice(nl + 2 + size + 2);
  }
}

const LIST = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
const host = (): [string, string] => ['Host', `127.0.0.1:${port}`];
const bearer = (key = KEY): [string, string] => ['Authorization', `Bearer ${key}`];

describe('2026-07-28: no notification the request did not ask for', () => {
  /** Log messages a client received, by what they say. */
  function collectLogs(dk: ModernTestClient): string[] {
    const seen: string[] = [];
    dk.client.setNotificationHandler('notifications/message', (n) => void seen.push(String(n.params.data)));
    return seen;
  }

  async function openAndClose(dk: ModernTestClient, meta?: Record<string, unknown>): Promise<string> {
    const r = await dk.client.callTool({ name: 'open', arguments: {}, ...(meta ? { _meta: meta } : {}) });
    const id = (r.structuredContent as { content: { id: string } }).content.id;
    await dk.ok('close', { id });
    return id;
  }

  for (const transport of ['HTTP', 'stdio'] as const) {
    it(`v2 client over ${transport}: a log message only for a request whose _meta sets a log level, only at or above it`, async () => {
      const dk = transport === 'HTTP' ? await connectHttpModern(server.url, KEY) : await connectStdioModern({ root, args: ['--toolsets', 'gdb'] });
      try {
        const seen = collectLogs(dk);
        const silent = await openAndClose(dk); // no logLevel: nothing (the spec: MUST NOT send)
        const quiet = await openAndClose(dk, { [LOG_LEVEL]: 'warning' }); // "started" is info: below the level
        const loud = await openAndClose(dk, { [LOG_LEVEL]: 'info' });
        await waitFor(() => seen.length > 0, 3000).catch(() => undefined);
        await sleep(300); // a pause, not a wait: anything unsolicited would have come by now
        expect(seen.filter((m) => m.includes(silent))).toEqual([]);
        expect(seen.filter((m) => m.includes(quiet))).toEqual([]);
        expect(seen).toEqual([expect.stringContaining(`gdb session ${loud} started`)]);
      } finally {
        await dk.close();
      }
    });
  }

  it("raw HTTP: without a log level the answer is one JSON object; with one, the message comes first on the request's own stream", async () => {
    const envelope = {
      'io.modelcontextprotocol/protocolVersion': MODERN_PROTOCOL,
      'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    const call = (meta: Record<string, unknown>) =>
      raw('/mcp', [host(), bearer(), ['Accept', 'application/json, text/event-stream'], ['MCP-Protocol-Version', MODERN_PROTOCOL], ['Mcp-Method', 'tools/call'], ['Mcp-Name', 'open']], {
        jsonrpc: '2.0',
        id: 5,
        method: 'tools/call',
        params: { name: 'open', arguments: {}, _meta: meta },
      });
    const plain = await call(envelope);
    expect(plain.status, plain.body).toBe(200);
    expect(plain.headers['content-type']).toMatch(/^application\/json/);
    expect(plain.body).not.toContain('notifications/message');
    const asked = await call({ ...envelope, [LOG_LEVEL]: 'debug', progressToken: 'p' });
    expect(asked.headers['content-type']).toMatch(/^text\/event-stream/);
    const events = asked.body
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)));
    expect(events[0]).toMatchObject({ method: 'notifications/message', params: { level: 'info', logger: 'debugkit', data: expect.stringMatching(/gdb session \S+ started/) } });
    expect(events.at(-1)).toMatchObject({ id: 5, result: { structuredContent: { type: 'ok' } } });
    for (const answer of [plain, asked]) {
      const id = /"id\\?":\\?"([0-9a-f-]{36})/.exec(answer.body)![1]!;
      const dk = await connectHttpModern(server.url, KEY);
      await dk.ok('close', { id });
      await dk.close();
    }
  });
});

describe('Authorization: exactly one', () => {
  it.each([
    ['the right key first', [bearer(), bearer('wrong')]],
    ['the right key second', [bearer('wrong'), bearer()]],
    ['the right key twice', [bearer(), bearer()]],
  ])('two Authorization headers (%s) are refused with 401, saying why', async (_name, auth) => {
    const res = await raw('/mcp', [host(), ...(auth as Array<[string, string]>)], LIST);
    expect(res.status).toBe(401);
    expect(JSON.parse(res.body).error).toEqual({ code: -32001, message: 'Authentication failed: the request has 2 Authorization headers; send exactly one (Authorization: Bearer KEY)' });
    expect(res.headers['www-authenticate']).toMatch(
      /^Bearer realm="debugkit", error="invalid_request", error_description="send one Authorization header, not 2: send the API key as Authorization: Bearer KEY"$/,
    );
  });

  it('one header with the key is served', async () => {
    const res = await raw('/mcp', [host(), bearer()], LIST);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body).result.tools.length).toBeGreaterThan(0);
  });

  it('any path refuses two keys, before routing', async () => {
    const res = await raw('/sessions/nope', [host(), bearer(), bearer('wrong')]);
    expect(res.status).toBe(401);
  });
});

describe('Host and Origin: loopback names on any port, other names only when allowed', () => {
  it.each(['localhost:9000', 'localhost', '127.0.0.1:1', '[::1]:9000', 'LOCALHOST:12345', 'devbox.lan:8080', 'devbox.lan'])('Host %s is served', async (name) => {
    const res = await raw('/mcp', [['Host', name], bearer()], LIST);
    expect(res.status).toBe(200);
  });

  it.each(['evil.com', 'evil.com:PORT', 'localhost.evil.com:PORT', 'evil.com@localhost', 'devbox.lan.evil.com', '0.0.0.0:PORT'])('Host %s is refused (DNS rebinding)', async (name) => {
    const res = await raw('/mcp', [['Host', name.replace('PORT', String(port))], bearer()], LIST);
    expect(res.status).toBe(403);
    expect(JSON.parse(res.body).error.message).toMatch(/DNS-rebinding protection; use --allowed-host/);
  });

  it('a request with no Host header is refused', async () => {
    const res = await raw('/mcp', [bearer()], LIST);
    expect(res.status).not.toBe(200);
  });

  it.each([
    ['http://localhost:6274', 200],
    ['http://127.0.0.1:9000', 200],
    ['http://devbox.lan:3000', 200],
    ['http://evil.com', 403],
    ['http://localhost.evil.com:9000', 403],
    ['null', 403],
  ])('Origin %s: %i', async (origin, status) => {
    const res = await raw('/mcp', [host(), ['Origin', origin], bearer()], LIST);
    expect(res.status).toBe(status);
  });

  it('with --no-auth, an Origin must be the page the request goes to (no simple cross-origin POST from another local port)', async () => {
    const open = await startHttpServer(['--root', root, '--no-auth', '--toolsets', 'gdb']);
    try {
      const url = new URL(open.url);
      const post = (origin: string) => fetch(open.url, { method: 'POST', headers: { 'Content-Type': 'text/plain', Origin: origin }, body: JSON.stringify(LIST) }).then((r) => r.status);
      expect(await post('http://localhost:3000')).toBe(403);
      expect(await post('http://evil.com')).toBe(403);
      expect(await post(`http://${url.host}`)).toBe(200);
    } finally {
      await open.stop();
    }
  });

  it('an MCP client through a tunnel (ssh -L: another local port, Host localhost:THAT_PORT) works', async () => {
    const tunnel = net.createServer((inbound) => {
      const outbound = net.connect(port, '127.0.0.1');
      inbound.pipe(outbound).pipe(inbound);
      const end = () => {
        inbound.destroy();
        outbound.destroy();
      };
      inbound.on('error', end);
      outbound.on('error', end);
    });
    await new Promise<void>((resolve) => tunnel.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://localhost:${(tunnel.address() as net.AddressInfo).port}/mcp`;
      for (const dk of [await connectHttp(url, KEY), await connectHttpModern(url, KEY)]) {
        const { id } = await dk.ok('open');
        await dk.ok('close', { id });
        await dk.close();
      }
    } finally {
      tunnel.close();
    }
  });
});

describe('no key: every 401 says how to authenticate, and OAuth discovery is answered', () => {
  it.each([
    ['no Authorization header', [], 'invalid_request'],
    ['a wrong key', [bearer('wrong')], 'invalid_token'],
  ])('%s: 401 with a WWW-Authenticate challenge naming the error and the header to send', async (_name, auth, error) => {
    for (const path of ['/mcp', '/sessions/x']) {
      const res = await raw(path, [host(), ...(auth as Array<[string, string]>)], path === '/mcp' ? LIST : undefined);
      expect(res.status, path).toBe(401);
      const challenge = res.headers['www-authenticate'];
      expect(challenge).toMatch(/^Bearer realm="debugkit", /);
      expect(challenge).toContain(`error="${error}"`);
      expect(challenge).toMatch(/error_description="[^"]*Authorization: Bearer KEY[^"]*"/);
    }
  });

  it.each([
    '/.well-known/oauth-protected-resource',
    '/.well-known/oauth-protected-resource/mcp',
    '/.well-known/oauth-authorization-server',
    '/.well-known/oauth-authorization-server/mcp',
    '/.well-known/openid-configuration',
    '/.well-known/openid-configuration/mcp',
    '/mcp/.well-known/openid-configuration',
    '/mcp/.well-known/oauth-authorization-server',
    '/mcp/.well-known/oauth-protected-resource',
  ])('GET %s without a key: 404, saying this server takes a static API key and no OAuth', async (path) => {
    const res = await raw(path, [host()]);
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const body = JSON.parse(res.body);
    expect(body).toEqual({ error: 'invalid_request', error_description: expect.stringMatching(/^debugkit does not use OAuth: send the API key as Authorization: Bearer KEY/) });
  });

  it('POST /register (dynamic client registration) without a key: the same 404 and body', async () => {
    const res = await raw('/register', [host()], { client_name: 'x', redirect_uris: ['http://localhost:1/cb'] });
    expect(res.status).toBe(404);
    expect(JSON.parse(res.body).error_description).toMatch(/debugkit does not use OAuth/);
  });

  it('an MCP client that tries OAuth (as Claude Code does) fails saying to send the key, not with a ZodError', async () => {
    const provider: OAuthClientProvider = {
      redirectUrl: 'http://localhost:1/callback',
      clientMetadata: { client_name: 'oauth-trying-client', redirect_uris: ['http://localhost:1/callback'] },
      clientInformation: () => undefined,
      saveClientInformation: () => undefined,
      tokens: () => undefined,
      saveTokens: () => undefined,
      redirectToAuthorization: () => {
        throw new Error('the client was sent to an authorization page');
      },
      saveCodeVerifier: () => undefined,
      codeVerifier: () => 'v',
    };
    const client = new Client({ name: 'oauth-trying-client', version: '1.0.0' });
    const error = await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { authProvider: provider })).then(
      () => undefined,
      (err: unknown) => err as Error,
    );
    expect(error).toBeDefined();
    expect(String(error)).toContain('send the API key as Authorization: Bearer KEY');
    expect(String(error)).not.toMatch(/ZodError|Invalid OAuth error response/);
    await client.close().catch(() => undefined);
  });
});
