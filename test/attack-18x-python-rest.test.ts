import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, startHttpServer, type HttpServer, type TestClient } from './helpers/client.js';
import { pyOk } from './helpers/python.js';
import { TREE_BUDGET_CHARS } from '../src/toolsets/python/values.js';
import { redactAnswer, redactValue } from '../src/mcp/redact-answers.js';

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

// Attack 18z: what a Python program names and raises reached answers whole. Z3: a local named
// "token=a " * 200,000 held 200,000 secrets, and pushing their kinds as one call's arguments overflowed
// the stack (REST 500, MCP isError, the stop lost). Z4: a name of 3,000,000 characters made a 3 MB
// answer. Z9: an exception's 800 KB message made a 1.6 MB REST stop and a 143,264-character MCP one.
const NAMES_FILE = 'bigname.py';
// argv: which name (0: "x", 1: "token=a "), repeated how often.
const NAMES_PROGRAM = ['import sys', 'g = globals()', 'g[["x", "token=a "][int(sys.argv[1])] * int(sys.argv[2])] = 1', 'y = 1', 'done = True', ''].join('\n');
const ERR_FILE = 'bigerr.py';
const ERR_PROGRAM = ['y = 1', 'raise ValueError("x" * 800_000)', ''].join('\n');
/** The answers asked for: well under the megabytes the attack got. */
const REST_MAX_BYTES = 64 * 1024;
const MCP_MAX_CHARS = 100_000;

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

/** A REST session of `file` (with `args`) run to `line`: its id and the answer. */
async function restRun(file: string, args: string[], line: number): Promise<{ id: string; answer: Awaited<ReturnType<typeof api>> }> {
  const start = await api('POST', '/sessions', { entry: file, args });
  expect(start.status).toBe(200);
  const id = start.json.sessionId as string;
  return { id, answer: await api('POST', `/sessions/${id}/breakpoint`, { file, line }) };
}

/** An MCP session of `file` (with `args`) run to `line`: the answer, and its size as the client gets it (text and structured content). */
async function mcpRun(dk: TestClient, file: string, args: string[], line: number) {
  const { sessionId } = await pyOk(dk, 'python_start_session', { entry: file, args });
  const answer = await dk.tool('python_run_to_breakpoint', { sessionId, file, line });
  return { sessionId, answer, size: answer.text.length + JSON.stringify(answer.structured ?? null).length };
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
  writeFileSync(path.join(root, NAMES_FILE), NAMES_PROGRAM);
  writeFileSync(path.join(root, ERR_FILE), ERR_PROGRAM);
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

describe('attack 18z: a stop stays an answer, within its budget, whatever the program names or raises', () => {
  it('Z3: a local named "token=a " * 200,000 stops fine over REST and MCP, its name cut and hidden', async () => {
    const { id, answer } = await restRun(NAMES_FILE, ['1', '200000'], 4);
    expect(answer.status, answer.text.slice(0, 300)).toBe(200);
    expect(answer.json.hit).toBe(true);
    const names = Object.keys(answer.json.locals);
    const long = names.find((n) => n.startsWith('token='))!;
    expect(long).toContain('[redacted');
    expect(long).toContain('name cut: 1600000 characters');
    expect(answer.text.length).toBeLessThan(REST_MAX_BYTES);
    await api('DELETE', `/sessions/${id}`);

    const dk = await connectHttp(server.url, KEY);
    try {
      const run = await mcpRun(dk, NAMES_FILE, ['1', '200000'], 4);
      expect(run.answer.isError, run.answer.text.slice(0, 300)).toBe(false);
      expect(run.answer.structured.locals.g.type).toBe('dict');
      expect(run.size).toBeLessThan(MCP_MAX_CHARS);
      await pyOk(dk, 'python_end_session', { sessionId: run.sessionId });
    } finally {
      await dk.close();
    }
  });

  it('Z3: redaction takes any number of secrets in one string, key or value, structured or text', () => {
    // Names and messages are cut before redaction now; what redaction takes is not bounded by it.
    const many = 'token=a '.repeat(200_000);
    const hidden = redactValue({ [many]: many }) as Record<string, string>;
    expect(Object.values(hidden)[0]).toContain('token=[redacted');
    const answer = redactAnswer({ content: [{ type: 'text', text: many }] });
    expect((answer.content[1] ?? answer.content[0])!.type).toBe('text');
    expect(JSON.stringify(answer.content)).toContain('hid 200000 values');
  });

  it('Z4: a local named "x" * 3,000,000 is shown cut, with its length; the answers stay under 64 KB', async () => {
    const { id, answer } = await restRun(NAMES_FILE, ['0', '3000000'], 4);
    expect(answer.status).toBe(200);
    expect(answer.text.length).toBeLessThan(REST_MAX_BYTES);
    const long = Object.keys(answer.json.locals).find((n) => n.startsWith('xxx'))!;
    expect(long).toMatch(/^x+\.\.\.\(name cut: 3000000 characters, sha256 [0-9a-f]{12}\)$/);
    expect(answer.json.locals[long]).toEqual({ type: 'int', repr: '1', isTruncated: false });
    // The program's own locals keep their reprs: the name no longer eats the stop's budget.
    expect(answer.json.locals.g.repr.length).toBeGreaterThan(3);
    await api('DELETE', `/sessions/${id}`);

    const dk = await connectHttp(server.url, KEY);
    try {
      const run = await mcpRun(dk, NAMES_FILE, ['0', '3000000'], 4);
      expect(run.answer.isError).toBe(false);
      expect(Object.keys(run.answer.structured.locals)).toContain(long);
      expect(run.size).toBeLessThan(REST_MAX_BYTES);
      await pyOk(dk, 'python_end_session', { sessionId: run.sessionId });
    } finally {
      await dk.close();
    }
  });

  it('Z9: an uncaught exception with an 800 KB message is reported cut, saying so, over REST and MCP', async () => {
    const { id } = await restRun(ERR_FILE, [], 1);
    // Line 1 is behind it: the program runs on to the raise.
    const stop = await api('POST', `/sessions/${id}/continue`, { file: ERR_FILE, line: 1 });
    expect(stop.status).toBe(200);
    expect(stop.text.length).toBeLessThan(REST_MAX_BYTES);
    expect(stop.json.error.type).toBe('ValueError');
    expect(stop.json.error.message).toMatch(/^x{4000}\.\.\. \[cut: 800000 characters in all; .*python_evaluate/);
    expect(stop.json.error.traceback).toContain('ValueError: xxxx');
    await api('DELETE', `/sessions/${id}`);

    const dk = await connectHttp(server.url, KEY);
    try {
      const { sessionId } = await pyOk(dk, 'python_start_session', { entry: ERR_FILE });
      await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: ERR_FILE, line: 1 });
      const answer = await dk.tool('python_continue', { sessionId });
      expect(answer.isError).toBe(false);
      expect(answer.text.length + JSON.stringify(answer.structured ?? null).length).toBeLessThan(MCP_MAX_CHARS);
      expect(answer.text).toContain('cut: 800000 characters in all');
      // The way the note gives to the rest of the message works at that stop.
      const more = await pyOk(dk, 'python_evaluate', { sessionId, expression: 'len(str(__exception__[1]))' });
      expect(JSON.stringify(more)).toContain('800000');
      await pyOk(dk, 'python_end_session', { sessionId });
    } finally {
      await dk.close();
    }
  });
});
