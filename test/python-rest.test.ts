import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpServer, type HttpServer } from './helpers/client.js';
import { PY_ROOT } from './helpers/python.js';
import { pollUntil } from '../src/core/wait.js';

let server: HttpServer;
let base: string;
const KEY = 'rest-key-abcdef';
const CALC = 'src/calculator.py';

async function api(method: string, path: string, body?: unknown, key = KEY): Promise<{ status: number; json: any }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

async function newSession(body: unknown = { entry: CALC }): Promise<string> {
  const { status, json } = await api('POST', '/sessions', body);
  expect(status).toBe(200);
  expect(Object.keys(json)).toEqual(['sessionId']);
  return json.sessionId;
}

beforeAll(async () => {
  server = await startHttpServer(['--root', PY_ROOT, '--api-key', KEY]);
  base = new URL(server.url).origin;
});
afterAll(async () => {
  await server?.stop();
});

describe('the OpenAPI contract over REST, example by example', () => {
  it('basic and with_args session creation, idle_state', async () => {
    const id = await newSession({ entry: CALC });
    expect(await api('GET', `/sessions/${id}`)).toEqual({ status: 200, json: { status: 'idle', lastBreakpoint: null, timings: null } });
    const withArgs = await newSession({ entry: CALC, args: ['--verbose', '--debug'], env: { DEBUG_MODE: 'true' } });
    expect(withArgs).not.toBe(id);
    for (const s of [id, withArgs]) expect(await api('DELETE', `/sessions/${s}`)).toEqual({ status: 200, json: { ended: true } });
  });

  it('hit_with_locals, paused_at_breakpoint, hit_second_breakpoint, execution_completed', async () => {
    const id = await newSession();
    const hit = await api('POST', `/sessions/${id}/breakpoint`, { file: CALC, line: 11 });
    expect(hit).toEqual({
      status: 200,
      json: {
        hit: true,
        frameInfo: { file: `${PY_ROOT}/${CALC}`, line: 11 },
        locals: {
          x: { type: 'int', repr: '10', isTruncated: false },
          y: { type: 'int', repr: '20', isTruncated: false },
          result: { type: 'int', repr: '30', isTruncated: false },
        },
        completed: false,
        error: null,
      },
    });
    const state = await api('GET', `/sessions/${id}`);
    expect(state.json).toMatchObject({ status: 'paused', lastBreakpoint: { file: CALC, line: 11, hitCount: 1 } });
    expect(state.json.timings.lastRunMs).toBeGreaterThan(0);
    expect(state.json.timings.totalCpuTimeMs).toBeGreaterThan(0);

    const second = await api('POST', `/sessions/${id}/continue`, { file: CALC, line: 19 });
    expect(second.json).toEqual({
      hit: true,
      frameInfo: { file: `${PY_ROOT}/${CALC}`, line: 19 },
      locals: expect.objectContaining({ final_result: { type: 'float', repr: '42.5', isTruncated: false } }),
      completed: false,
      error: null,
    });
    const done = await api('POST', `/sessions/${id}/continue`, { file: CALC, line: 21 });
    expect(done.json).toEqual({ hit: false, frameInfo: null, locals: null, completed: true, error: null });
    expect((await api('GET', `/sessions/${id}`)).json.status).toBe('completed');
    await api('DELETE', `/sessions/${id}`);
  });

  it('not_hit_completed', async () => {
    const id = await newSession();
    const run = await api('POST', `/sessions/${id}/breakpoint`, { file: CALC, line: 21 });
    expect(run.json).toEqual({ hit: false, frameInfo: null, locals: null, completed: true, error: null });
    await api('DELETE', `/sessions/${id}`);
  });

  it('error_before_breakpoint', async () => {
    const id = await newSession({ entry: CALC, args: ['--divide-by-zero'] });
    const run = await api('POST', `/sessions/${id}/breakpoint`, { file: CALC, line: 22 });
    expect(run.json).toMatchObject({ hit: false, frameInfo: null, locals: null, completed: false });
    expect(run.json.error).toMatchObject({ type: 'ZeroDivisionError', message: 'division by zero' });
    expect(run.json.error.traceback).toMatch(/^Traceback \(most recent call last\):\n/);
    expect(run.json.error.traceback).toMatch(/line 6, in divide\n {4}return a \/ b\nZeroDivisionError: division by zero$/);
    expect((await api('GET', `/sessions/${id}`)).json.status).toBe('error');
    await api('DELETE', `/sessions/${id}`);
  });
});

describe('REST errors', () => {
  it('404 with a JSON body for an unknown session, on every route', async () => {
    for (const [method, path, body] of [
      ['GET', '/sessions/nope', undefined],
      ['DELETE', '/sessions/nope', undefined],
      ['POST', '/sessions/nope/breakpoint', { file: CALC, line: 1 }],
      ['POST', '/sessions/nope/continue', { file: CALC, line: 1 }],
    ] as const) {
      const res = await api(method, path, body);
      expect(res.status).toBe(404);
      expect(res.json).toEqual({ error: { code: 'SESSION_NOT_FOUND', message: 'Session not found: nope' } });
    }
  });

  it('400 naming the field for an invalid body', async () => {
    const missing = await api('POST', '/sessions', {});
    expect(missing.status).toBe(400);
    expect(missing.json.error.message).toMatch(/invalid request body: entry: /);
    const badArgs = await api('POST', '/sessions', { entry: CALC, args: 'nope' });
    expect(badArgs.json.error.message).toMatch(/args: /);
    const id = await newSession();
    const zero = await api('POST', `/sessions/${id}/breakpoint`, { file: CALC, line: 0 });
    expect(zero.status).toBe(400);
    expect(zero.json.error.message).toMatch(/line: .*>=1|line: Too small/i);
    const noFile = await api('POST', `/sessions/${id}/breakpoint`, { line: 3 });
    expect(noFile.json.error.message).toMatch(/file: /);
    const notJson = await api('POST', `/sessions/${id}/breakpoint`, '{"file": ');
    expect(notJson.status).toBe(400);
    expect(notJson.json.error.message).toMatch(/not valid JSON/);
    const escape = await api('POST', `/sessions/${id}/breakpoint`, { file: '../../etc/passwd', line: 1 });
    expect(escape.status).toBe(400);
    expect(escape.json.error.code).toBe('PATH_OUTSIDE_ROOT');
    await api('DELETE', `/sessions/${id}`);
  });

  it('requires the API key', async () => {
    const res = await api('POST', '/sessions', { entry: CALC }, 'wrong');
    expect(res.status).toBe(401);
    expect(res.json.error.code).toBe(-32001);
  });

  it('answers for an ended session with 404 and why it ended', async () => {
    const id = await newSession();
    expect((await api('GET', `/sessions/${id}`)).status).toBe(200);
    await api('DELETE', `/sessions/${id}`);
    expect((await api('GET', `/sessions/${id}`)).status).toBe(404);
    expect((await api('GET', `/sessions/${id}`)).json.error.message).toBe(`Session not found: ${id} (it ended: ended by the client)`);
  });

  it('a client leaving a run ends the wait: the program is paused at once, not after the 30 s bound', async () => {
    const id = await newSession({ entry: 'src/busy.py' });
    const leave = new AbortController();
    const run = fetch(`${base}/sessions/${id}/continue`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
      // A breakpoint in a file the program never runs: only the bound or the client ends the wait.
      body: JSON.stringify({ file: CALC, line: 11 }),
      signal: leave.signal,
    }).catch((err: Error) => err);
    expect(await pollUntil(async () => (await api('GET', `/sessions/${id}`)).json.status === 'running', { timeoutMs: 20_000, intervalMs: 50 })).toBe(true);
    leave.abort();
    expect(await run).toBeInstanceOf(Error);
    // Before: the run waited out its 30 s, the program running; now it is paused within a moment.
    expect(await pollUntil(async () => (await api('GET', `/sessions/${id}`)).json.status === 'paused', { timeoutMs: 15_000, intervalMs: 50 })).toBe(true);
    await api('DELETE', `/sessions/${id}`);
  });
});

describe('answers that are true over REST too', () => {
  it('reports an uncaught RecursionError (which debugpy does not stop on) as the error it is', async () => {
    const id = await newSession({ entry: 'src/recursion.py' });
    const end = await api('POST', `/sessions/${id}/breakpoint`, { file: 'src/recursion.py', line: 16 });
    expect(end.status).toBe(200);
    expect(end.json).toMatchObject({ hit: false, completed: true, frameInfo: null, locals: null });
    expect(end.json.error.type).toBe('RecursionError');
    expect(end.json.error.message).toMatch(/maximum recursion depth exceeded/);
    expect(end.json.error.traceback).toMatch(/^Traceback \(most recent call last\):[\s\S]*in depth\n/);
    expect((await api('GET', `/sessions/${id}`)).json.status).toBe('error');
    await api('DELETE', `/sessions/${id}`);
  });
});
