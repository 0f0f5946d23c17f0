import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, startHttpServer, type HttpServer, type TestClient } from './helpers/client.js';
import { pyOk } from './helpers/python.js';
import { TREE_BUDGET_CHARS } from '../src/toolsets/python/values.js';

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
// Attack 18y X6: secrets as the names of locals (a config loaded into globals()).
const KEY_SECRETS = [`ghp_${'A'.repeat(36)}`, `ghp_${'B'.repeat(36)}`, 'hunter2-Key-Sup3rSecret', 'abcdefghijklmnop123456'];
const KEYS_FILE = 'keys.py';
const KEYS_PROGRAM = [
  'g = globals()',
  'g["ghp_" + "A" * 36] = 1',
  'g["ghp_" + "B" * 36] = 2',
  'g["password=hunter2-Key-Sup3rSecret"] = 3',
  'g["Authorization: Bearer abcdefghijklmnop123456"] = 4',
  'y = 1',
  'done = True',
  '',
].join('\n');
// Attack 18y X4: 100 locals of secret-looking text, each hidden label longer than what it hides.
const AMP_FILE = 'redamp.py';
const AMP_PROGRAM = ['g = globals()', 'for i in range(100):', '    g["v%03d" % i] = "token=a " * 30000', 'y = 1', ''].join('\n');

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

/** A REST session of `file` stopped at `line`: its start answer, its id and the stop's answer. */
async function stoppedAt(file: string, at: number): Promise<{ start: Awaited<ReturnType<typeof api>>; id: string; hit: Awaited<ReturnType<typeof api>> }> {
  const start = await api('POST', '/sessions', { entry: file });
  expect(start.status).toBe(200);
  const id = start.json.sessionId as string;
  const hit = await api('POST', `/sessions/${id}/breakpoint`, { file, line: at });
  expect(hit.status).toBe(200);
  // The contract's shape, key for key: only the strings changed.
  expect(Object.keys(hit.json)).toEqual(['hit', 'frameInfo', 'locals', 'completed', 'error']);
  expect(hit.json.hit).toBe(true);
  return { start, id, hit };
}

function expectNoSecret(text: string): void {
  for (const s of SECRETS) expect(text).not.toContain(s);
}

beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'dk-18x-rest-'));
  mkdirSync(root, { recursive: true });
  writeFileSync(path.join(root, FILE), PROGRAM);
  writeFileSync(path.join(root, KEYS_FILE), KEYS_PROGRAM);
  writeFileSync(path.join(root, AMP_FILE), AMP_PROGRAM);
  server = await startHttpServer(['--root', root, '--api-key', KEY]);
  base = new URL(server.url).origin;
});
afterAll(async () => {
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe('attack 18x V6: python REST answers hide secrets as the MCP tools do', () => {
  it('a stop, a second stop and the session state show no secret; a plain local is shown as before', async () => {
    const { id, hit } = await stoppedAt(FILE, 6);
    expectNoSecret(hit.text);
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

describe('attack 18y: python REST answers hide secrets in names and stay within the stop budget', () => {
  it('X6: a local named like a token or `password=...` is never shown by name, over REST or MCP; every local keeps its entry', async () => {
    const { start, id, hit } = await stoppedAt(KEYS_FILE, 6);
    const next = await api('POST', `/sessions/${id}/continue`, { file: KEYS_FILE, line: 7 });
    const state = await api('GET', `/sessions/${id}`);
    for (const answer of [start, hit, next, state]) for (const s of KEY_SECRETS) expect(answer.text).not.toContain(s);
    const names = Object.keys(hit.json.locals);
    // The two tokens read alike once hidden: both stay, the second numbered, with their own values.
    expect(hit.json.locals['[redacted GitHub token]']).toEqual({ type: 'int', repr: '1', isTruncated: false });
    expect(hit.json.locals['[redacted GitHub token] (2)']).toEqual({ type: 'int', repr: '2', isTruncated: false });
    expect(names).toContain('password=[redacted password]');
    expect(names.some((n) => n.startsWith('Authorization: Bearer [redacted'))).toBe(true);
    expect(hit.json.locals.g.type).toBe('dict');
    expect(Object.keys(next.json.locals)).toEqual([...names, 'y']);
    expect((await api('DELETE', `/sessions/${id}`)).json).toEqual({ ended: true });

    // MCP's structured locals are walked by the same code: their keys are hidden alike.
    const dk: TestClient = await connectHttp(server.url, KEY);
    try {
      const { sessionId } = await pyOk(dk, 'python_start_session', { entry: KEYS_FILE });
      const mcp = await dk.tool('python_run_to_breakpoint', { sessionId, file: KEYS_FILE, line: 6 });
      for (const s of KEY_SECRETS) expect(JSON.stringify(mcp.structured.locals)).not.toContain(s);
      expect(Object.keys(mcp.structured.locals)).toEqual(names);
      await pyOk(dk, 'python_end_session', { sessionId });
    } finally {
      await dk.close();
    }
  });

  it('X4: a stop of 100 secret-looking locals stays within the stop budget once hidden, in the contract shape', async () => {
    const { id, hit } = await stoppedAt(AMP_FILE, 4);
    const locals = Object.entries(hit.json.locals as Record<string, { type: string; repr: string; isTruncated: boolean }>);
    expect(locals.length).toBeGreaterThan(0);
    for (const [, v] of locals) expect(Object.keys(v)).toEqual(['type', 'repr', 'isTruncated']);
    // Hidden, then cut (the contract's defaults: 200 characters of repr, 50 locals): the later
    // locals keep their entries with less of their reprs.
    expect(hit.json.locals.v000.repr).toContain('token=[redacted');
    for (const [name, v] of locals) if (name.startsWith('v')) expect(v.isTruncated).toBe(true);
    // localsView's bound (values.ts): each local costs its repr, its name and 50, and only the last
    // one shown may pass the budget, by at most 40 characters of repr, "..." and its own cost.
    const last = locals[locals.length - 1]!;
    const cost = locals.reduce((n, [name, v]) => n + v.repr.length + name.length + 50, 0);
    expect(cost).toBeLessThanOrEqual(TREE_BUDGET_CHARS + 43 + last[0].length + 50);
    // So the body is the budget plus the JSON framing around the reprs (it was 28,737 bytes).
    const framing = JSON.stringify({ ...hit.json, locals: Object.fromEntries(locals.map(([n, v]) => [n, { ...v, repr: '' }])) }).length;
    expect(hit.text.length).toBeLessThanOrEqual(framing + TREE_BUDGET_CHARS + 43);
    await api('DELETE', `/sessions/${id}`);
  });
});
