import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../config.js';
import { pollUntil } from '../core/wait.js';
import { createLogger } from '../mcp/log.js';
import { toolsetFactories } from '../toolsets/index.js';
import { createDebugkit, type Debugkit } from './createServer.js';
import { serveHttp, type HttpHandle } from './http.js';

/** The seams added for the control plane: a pre-call seam that can refuse, and the HTTP edge. */
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
let dk: Debugkit;
let http: HttpHandle;
const log: string[] = [];
let auditBroken = false;

beforeAll(async () => {
  const config = defaultConfig({ toolsets: ['gdb'], root: mkdtempSync(path.join(tmpdir(), 'debugkit-precall-')), logLevel: 'error' });
  config.http.port = 0;
  config.http.noAuth = true;
  dk = createDebugkit(config, {
    toolsets: toolsetFactories,
    log: createLogger('error'),
    hooks: {
      async beforeToolCall(start) {
        if (auditBroken) throw new Error('the audit log cannot be written (disk full)');
        log.push(`before ${start.tool} ${start.transport} ${start.traceparent ?? '-'}`);
        return (outcome) => void log.push(`end ${start.tool} ${outcome.ok}`);
      },
      onToolCall: (event) => void log.push(`after ${event.tool}`),
      async admitRequest(_principal, req, res, body) {
        res.setHeader('X-RateLimit-Limit', '10');
        // Message by message: x-test-refuse refuses every tools/call, x-test-refuse-id only the one with that id.
        const messages = body === undefined ? [] : Array.isArray(body) ? body : [body];
        return messages.map((m: { id?: unknown; method?: unknown }) => {
          const refuse = (req.headers['x-test-refuse'] && m.method === 'tools/call') || (req.headers['x-test-refuse-id'] !== undefined && String(m.id) === req.headers['x-test-refuse-id']);
          return refuse ? { code: -32002, message: 'Rate limit exceeded', data: { limit: 10, used: 10, reset_at: 'soon' }, headers: { 'Retry-After': '7' } } : undefined;
        });
      },
    },
  });
  http = await serveHttp(dk);
});
afterAll(async () => {
  await http?.close();
  await dk?.close();
});

const call = (headers: Record<string, string> = {}) =>
  fetch(http.url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'list_sessions', arguments: {} } }),
  });

describe('beforeToolCall and admitRequest', () => {
  it('beforeToolCall runs before the call with its traceparent; its end function after', async () => {
    log.length = 0;
    const r = await call({ traceparent: TRACEPARENT });
    expect(((await r.json()) as any).result.isError).toBeFalsy();
    // The end entry is written off the answer's path: after the call, in any order with onToolCall.
    await pollUntil(() => log.length >= 3, { timeoutMs: 5000, intervalMs: 5 });
    expect(log[0]).toBe(`before list_sessions http ${TRACEPARENT}`);
    expect(log.slice(1).sort()).toEqual(['after list_sessions', 'end list_sessions true']);
  });

  it('a beforeToolCall that throws refuses the call: it never runs, the client learns why', async () => {
    log.length = 0;
    auditBroken = true;
    try {
      const body = (await (await call()).json()) as any;
      expect(body.result.isError).toBe(true);
      expect(JSON.stringify(body.result.content)).toMatch(/call refused: the audit log cannot be written \(disk full\)/);
      expect(log).toEqual([]);
    } finally {
      auditBroken = false;
    }
  });

  it('admitRequest sets fields on every answer and refuses with its status, headers and code', async () => {
    const ok = await call();
    expect(ok.headers.get('x-ratelimit-limit')).toBe('10');
    const refused = await call({ 'x-test-refuse': '1' });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('7');
    expect(refused.headers.get('x-ratelimit-limit')).toBe('10');
    expect(await refused.json()).toMatchObject({ id: 5, error: { code: -32002, data: { limit: 10 } } });
  });

  it('a batch is judged message by message: a refused request gets its own error, the others are served', async () => {
    const calls = [1, 2, 3].map((id) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'list_sessions', arguments: {} } }));
    const batch = (headers: Record<string, string>, body: unknown[] = calls) =>
      fetch(http.url, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body) });
    // Plain JSON (no session): the served answers and the refusal, in one array.
    const some = await batch({ 'x-test-refuse-id': '2' });
    expect(some.status).toBe(200);
    const answers = ((await some.json()) as any[]).sort((a, b) => a.id - b.id);
    expect(answers.map((a) => [a.id, a.error?.code ?? 'result'])).toEqual([
      [1, 'result'],
      [2, -32002],
      [3, 'result'],
    ]);
    expect(answers[1].error.data).toEqual({ limit: 10, used: 10, reset_at: 'soon' });
    // Nothing left to serve: the refusals alone, with the refusal's status.
    const none = await batch({ 'x-test-refuse': '1' });
    expect(none.status).toBe(429);
    expect(((await none.json()) as any[]).map((a) => [a.id, a.error.code])).toEqual([
      [1, -32002],
      [2, -32002],
      [3, -32002],
    ]);
    // A notification is served (answered 202 alone); with a refused request beside it, the refusal is the answer.
    const note = { jsonrpc: '2.0', method: 'notifications/initialized' };
    const mixed = await batch({ 'x-test-refuse-id': '1' }, [note, calls[0]!]);
    expect(mixed.status).toBe(200);
    expect(await mixed.json()).toEqual([{ jsonrpc: '2.0', id: 1, error: { code: -32002, message: 'Rate limit exceeded', data: { limit: 10, used: 10, reset_at: 'soon' } } }]);
  });

  it("in a 2025 session, an SSE answer to a batch carries the refused requests' errors too", async () => {
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      fetch(http.url, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(body) });
    const init = await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'batch', version: '1' } } });
    await init.text();
    const sid = init.headers.get('mcp-session-id')!;
    const session = { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18' };
    expect((await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, session)).status).toBe(202);
    const r = await post(
      [1, 2].map((id) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'list_sessions', arguments: {} } })),
      { ...session, 'x-test-refuse-id': '1' },
    );
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/text\/event-stream/);
    const messages = (await r.text())
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)));
    expect(messages.map((m) => [m.id, m.error?.code ?? 'result']).sort()).toEqual([
      [1, -32002],
      [2, 'result'],
    ]);
  });
});
