import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../config.js';
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
      async admitRequest(_principal, req, res) {
        res.setHeader('X-RateLimit-Limit', '10');
        if (req.headers['x-test-refuse']) return { code: -32002, message: 'Rate limit exceeded', data: { limit: 10, used: 10, reset_at: 'soon' }, headers: { 'Retry-After': '7' } };
        return true;
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
    await new Promise((resolve) => setTimeout(resolve, 50));
    // The end entry is written off the answer's path: after the call, in any order with onToolCall.
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
});
