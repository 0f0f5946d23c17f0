import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODERN_PROTOCOL, connectHttp, connectHttpModern, startHttpServer, type HttpServer } from './helpers/client.js';
import { compileC, tempDir } from './helpers/programs.js';
import { RawStdioServer } from './helpers/raw-stdio.js';

/**
 * Bounded fuzzing: a few thousand malformed messages over HTTP and over stdio, from a seeded
 * generator (the same run every time), then a real tool call must still answer. The server may
 * refuse anything it likes, but never with a 5xx, never by crashing, never by going silent.
 */

const KEY = 'fuzz-key-0123456789';
const HTTP_MESSAGES = 2000;
const STDIO_MESSAGES = 2000;
/** The server's header and body timeouts in this file, in seconds. */
const TIMEOUT_S = 5;

/** mulberry32: a small seeded generator. */
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const METHODS = ['initialize', 'tools/list', 'tools/call', 'resources/read', 'server/discover', 'ping', 'logging/setLevel', 'notifications/initialized', 'nope', '', 'tools/call/../x'];
const VALUES: unknown[] = [null, true, 0, -1, 1e308, 'x', '', [], {}, [1, [2, [3]]], { a: { b: { c: {} } } }, '\u0000\ud800', 'A'.repeat(5000), NaN];

function malformed(random: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const message: Record<string, unknown> = {};
  if (random() < 0.8) message.jsonrpc = random() < 0.8 ? '2.0' : pick(VALUES);
  if (random() < 0.7) message.id = random() < 0.5 ? Math.floor(random() * 1e6) : pick(VALUES);
  if (random() < 0.9) message.method = random() < 0.8 ? pick(METHODS) : pick(VALUES);
  if (random() < 0.7) {
    const params: Record<string, unknown> = {};
    if (random() < 0.5) params.name = pick(['open', 'call', 'close', 'list_sessions', 'kubectl', 'x', ...VALUES.map(String)]);
    if (random() < 0.5) params.arguments = random() < 0.5 ? { id: pick(VALUES), command: pick(VALUES) } : pick(VALUES);
    if (random() < 0.3) params._meta = random() < 0.5 ? { 'io.modelcontextprotocol/protocolVersion': pick([MODERN_PROTOCOL, '2099-01-01', 7]) } : pick(VALUES);
    if (random() < 0.2) params.protocolVersion = pick(['2025-11-25', '1999', 3]);
    message.params = random() < 0.9 ? params : pick(VALUES);
  }
  let text = JSON.stringify(message);
  const r = random();
  if (r < 0.15)
    text = text.slice(0, Math.floor(random() * text.length)); // cut short
  else if (r < 0.25)
    text = text.replace(/[{}[\]":,]/, () => pick(['', '{', ']', "'", '\\', '\u0000'])); // broken syntax
  else if (r < 0.3) text = Buffer.from(Array.from({ length: 1 + Math.floor(random() * 64) }, () => Math.floor(random() * 256))).toString('latin1');
  else if (r < 0.33) text = `[${text},${text}]`; // a batch
  return text;
}

let server: HttpServer;
beforeAll(async () => {
  const root = tempDir();
  compileC(root, 'spin');
  // Short timeouts, but not so short that a loaded machine (the whole suite on two cores) trips
  // them on a real client: Node counts the header timeout from the moment it accepts the connection.
  server = await startHttpServer(['--root', root, '--api-key', KEY, '--toolsets', 'gdb', '--header-timeout', `${TIMEOUT_S}`, '--body-timeout', `${TIMEOUT_S}`]);
});
afterAll(async () => {
  await server?.stop();
});

describe('fuzz', () => {
  it(`HTTP: ${HTTP_MESSAGES} malformed requests, no 5xx, then real calls still answer`, async () => {
    const random = rng(0xdeb06);
    const statuses = new Map<number, number>();
    const fiveXX: string[] = [];
    const headerSets: Array<Record<string, string>> = [
      { 'Content-Type': 'application/json' },
      { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      { 'Content-Type': 'text/plain' },
      { 'Content-Type': 'application/json', 'Mcp-Session-Id': 'not-a-session' },
      { 'Content-Type': 'application/json', 'MCP-Protocol-Version': MODERN_PROTOCOL, 'Mcp-Method': 'tools/list' },
      { 'Content-Type': 'application/json', 'MCP-Protocol-Version': '\u00ff\u00fe' },
    ];
    let next = 0;
    const worker = async () => {
      while (next < HTTP_MESSAGES) {
        next++;
        const body = malformed(random);
        const headers = { Authorization: `Bearer ${KEY}`, ...headerSets[Math.floor(random() * headerSets.length)]! };
        const method = random() < 0.9 ? 'POST' : (['GET', 'DELETE', 'PUT'] as const)[Math.floor(random() * 3)]!;
        const res = await fetch(server.url, { method, headers, body: method === 'POST' || method === 'PUT' ? body : undefined, signal: AbortSignal.timeout(20_000) });
        await res.arrayBuffer();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status >= 500) fiveXX.push(`${res.status} ${method} ${body.slice(0, 200)}`);
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    expect(fiveXX.slice(0, 5)).toEqual([]);
    expect([...statuses.values()].reduce((a, b) => a + b, 0)).toBe(HTTP_MESSAGES);

    for (const dk of [await connectHttpModern(server.url, KEY), await connectHttp(server.url, KEY)]) {
      const { id } = await dk.ok('open');
      expect((await dk.ok('call', { id, command: 'show version' })).output ?? '').toBeDefined();
      await dk.ok('close', { id });
      await dk.close();
    }
  }, 300_000);

  it('HTTP: a stalled body and slow headers are dropped, the server goes on', async () => {
    const { port } = new URL(server.url);
    // Headers that never finish: the server closes the connection (headers timeout), within bounds.
    const slow = connect(Number(port), '127.0.0.1');
    slow.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    // A body announced but never sent: dropped after the body stall timeout.
    const stalled = connect(Number(port), '127.0.0.1');
    stalled.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"jsonrpc"`);
    const closed = (s: ReturnType<typeof connect>) =>
      new Promise<string>((resolve) => {
        s.resume(); // read what the server sends (a 408), so its close is seen
        s.on('error', () => resolve('error'));
        s.on('close', () => resolve('closed'));
        setTimeout(() => resolve('still open'), 30_000).unref();
      });
    const [a, b] = await Promise.all([closed(slow), closed(stalled)]);
    expect(a).not.toBe('still open');
    expect(b).not.toBe('still open');
    // The timeouts bound requests, not answers: a call that runs longer than both (over a plain
    // JSON answer and over an SSE stream) still gets its answer.
    for (const dk of [await connectHttpModern(server.url, KEY), await connectHttp(server.url, KEY)]) {
      const { id } = await dk.ok('open', { program: 'spin' });
      const run = await dk.ok('call', { id, command: 'run', wait: TIMEOUT_S + 1.5 });
      expect(run.state).toBe('running');
      await dk.ok('close', { id });
      await dk.close();
    }
  }, 90_000);

  it(`stdio: ${STDIO_MESSAGES} malformed lines, then a real call still answers`, async () => {
    const random = rng(0x57d10);
    const raw = new RawStdioServer(['--toolsets', 'gdb']);
    try {
      let answers = 0;
      raw.proc.stdout!.on('data', (d: Buffer) => (answers += d.toString().split('\n').length - 1));
      for (let i = 0; i < STDIO_MESSAGES; i++) {
        const line = malformed(random).replace(/\n/g, ' ');
        if (!raw.proc.stdin!.write(`${line}\n`)) await new Promise((r) => raw.proc.stdin!.once('drain', r));
      }
      await raw.initialize();
      const list = await raw.request('tools/list', {}, 60_000);
      expect(list.result.tools.length).toBeGreaterThan(0);
      const { id } = await raw.tool('open', {});
      await raw.tool('close', { id });
      expect(answers).toBeGreaterThan(STDIO_MESSAGES / 4); // malformed lines are answered, not swallowed
    } finally {
      raw.proc.kill('SIGTERM');
      await raw.exited();
    }
  }, 300_000);
});
