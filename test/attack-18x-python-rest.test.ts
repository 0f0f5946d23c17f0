import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, startHttpServer, type HttpServer, type TestClient } from './helpers/client.js';
import { pyOk } from './helpers/python.js';

// Attack 18x V6: the python toolset's REST routes answered a local `password`, a forge token and a
// dict's password in clear while the MCP tools hid them. REST answers are now hidden the same way
// (mcp/redact-answers.ts), keeping the OpenAPI contract's shape: only strings change.

const KEY = 'rest-redact-key-abcdef';
const PASSWORD = 'hunter2-Sup3rSecret-XYZ';
const TOKEN = `ghp_${'A'.repeat(36)}`;
const DICT_PASSWORD = 'dictpass-12345';
const SECRETS = [PASSWORD, TOKEN, DICT_PASSWORD];
const PROGRAM = [
  `password = "${PASSWORD}"`,
  `api_token = "ghp_" + "A" * 36`,
  `db = {"password": "${DICT_PASSWORD}", "user": "bob"}`,
  `count = 41`,
  `print("ready")`,
  `count += 1`,
  `done = True`,
  '',
].join('\n');
const FILE = 'sec.py';

let root: string;
let server: HttpServer;
let base: string;

async function api(method: string, route: string, body?: unknown): Promise<{ status: number; text: string; json: any }> {
  const res = await fetch(`${base}${route}`, {
    method,
    headers: { Authorization: `Bearer ${KEY}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, json: JSON.parse(text) };
}

function expectNoSecret(text: string): void {
  for (const s of SECRETS) expect(text).not.toContain(s);
}

beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'dk-18x-rest-'));
  mkdirSync(root, { recursive: true });
  writeFileSync(path.join(root, FILE), PROGRAM);
  server = await startHttpServer(['--root', root, '--api-key', KEY]);
  base = new URL(server.url).origin;
});
afterAll(async () => {
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe('attack 18x V6: python REST answers hide secrets as the MCP tools do', () => {
  it('a stop, a second stop and the session state show no secret; a plain local is shown as before', async () => {
    const start = await api('POST', '/sessions', { entry: FILE });
    expect(start.status).toBe(200);
    const id = start.json.sessionId as string;

    const hit = await api('POST', `/sessions/${id}/breakpoint`, { file: FILE, line: 6 });
    expect(hit.status).toBe(200);
    expectNoSecret(hit.text);
    // The contract's shape, key for key: only the strings changed.
    expect(Object.keys(hit.json)).toEqual(['hit', 'frameInfo', 'locals', 'completed', 'error']);
    expect(hit.json.hit).toBe(true);
    expect(hit.json.locals.count).toEqual({ type: 'int', repr: '41', isTruncated: false });
    for (const name of ['password', 'api_token', 'db']) {
      expect(Object.keys(hit.json.locals[name])).toEqual(['type', 'repr', 'isTruncated']);
      expect(hit.json.locals[name].repr).toContain('[redacted ');
    }
    expect(hit.json.locals.password.type).toBe('str');
    expect(hit.json.locals.db.type).toBe('dict');
    // The dict's other entry is still shown: only the password in it is hidden.
    expect(hit.json.locals.db.repr).toContain("'user': 'bob'");

    const next = await api('POST', `/sessions/${id}/continue`, { file: FILE, line: 7 });
    expect(next.status).toBe(200);
    expectNoSecret(next.text);
    expect(next.json.locals.count).toEqual({ type: 'int', repr: '42', isTruncated: false });

    const state = await api('GET', `/sessions/${id}`);
    expect(state.status).toBe(200);
    expectNoSecret(state.text);
    expect(state.json.status).toBe('paused');

    expect((await api('DELETE', `/sessions/${id}`)).json).toEqual({ ended: true });
  });

  it('the REST repr of each secret is the text the MCP tools show for it', async () => {
    const dk: TestClient = await connectHttp(server.url, KEY);
    try {
      const { sessionId } = await pyOk(dk, 'python_start_session', { entry: FILE });
      const mcp = await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: FILE, line: 6 });
      expectNoSecret(JSON.stringify(mcp));
      const mcpRepr = (name: string): string => {
        const locals = mcp.locals as unknown;
        const entry = Array.isArray(locals) ? locals.find((l: { name: string }) => l.name === name) : (locals as Record<string, any>)[name];
        return entry.repr ?? entry.value;
      };

      const start = await api('POST', '/sessions', { entry: FILE });
      const id = start.json.sessionId as string;
      const hit = await api('POST', `/sessions/${id}/breakpoint`, { file: FILE, line: 6 });
      for (const name of ['password', 'api_token', 'db', 'count']) expect(hit.json.locals[name].repr).toBe(mcpRepr(name));
      await api('DELETE', `/sessions/${id}`);
      await pyOk(dk, 'python_end_session', { sessionId });
    } finally {
      await dk.close();
    }
  });
});
