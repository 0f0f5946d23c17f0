// Everything has an owner: the key (issue 17). One node on its SQLite store, several stored keys:
// what one key opens, adds or did is another key's only as a missing thing is, exactly.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLE_K3S } from './helpers/bundles.js';
import { createKey, rpc, startNode, tempDataDir, type Node } from './helpers/control.js';
import { PY_ROOT } from './helpers/python.js';
import { tempDir } from './helpers/programs.js';

const CALC = 'src/calculator.py';
const SIGNATURE = 'X-Amz-Signature=s3cr3t-signature-of-key-a';

let data: Awaited<ReturnType<typeof tempDataDir>>;
let store: string[];
let bundleDir: string;
let node: Node;
let bundleServer: http.Server;
let bundleUrl: string;

beforeAll(async () => {
  data = await tempDataDir();
  store = ['--data-dir', data.dir];
  bundleDir = tempDir('debugkit-owners-bundles-');
  // A bundle server handing out "signed" URLs: the query string is the credential.
  const body = readFileSync(BUNDLE_K3S);
  bundleServer = http.createServer((req, res) => {
    if (!req.url?.endsWith(SIGNATURE)) return void res.writeHead(403).end('unsigned');
    res.writeHead(200, { 'Content-Length': body.length }).end(body);
  });
  await new Promise<void>((r) => bundleServer.listen(0, '127.0.0.1', r));
  const port = (bundleServer.address() as AddressInfo).port;
  bundleUrl = `http://127.0.0.1:${port}/signed/support-bundle.tar.gz?${SIGNATURE}`;
  await createKey(store, 'bootstrap', 'gdb:read'); // stored keys only
  node = await startNode([...store, '--root', PY_ROOT, '--bundle-dir', bundleDir, '--bundle-url-host', `127.0.0.1:${port}`, '--max-sessions', '2']);
}, 60_000);

afterAll(async () => {
  await node?.stop();
  bundleServer?.close();
  await data?.cleanup();
});

let nextId = 1;
/** A plain JSON-RPC tools/call (no MCP session): its result, or its JSON-RPC error. */
async function tool(key: string, name: string, args: object = {}): Promise<{ isError: boolean; text: string; structured: any; error?: any }> {
  const r = await rpc(node.url, key, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args } });
  if (r.body.error) return { isError: true, text: r.body.error.message, structured: undefined, error: r.body.error };
  const result = r.body.result;
  return { isError: result.isError === true, text: result.content.map((c: { text?: string }) => c.text ?? '').join(''), structured: result.structuredContent };
}

async function rest(key: string, method: string, route: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(new URL(route, node.url), {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

/** An answer with `id` written as ID: another key's thing must answer as a missing one does, word for word. */
function shape(answer: unknown, id: string): string {
  return JSON.stringify(answer).split(id).join('ID');
}

describe('Python REST sessions belong to the key that started them', () => {
  it('another key reads, drives and deletes them exactly as it would a missing one, and has caps of its own', async () => {
    const a = await createKey(store, 'rest-a', 'python', ['--rate', 'unlimited']);
    const b = await createKey(store, 'rest-b', 'python', ['--rate', 'unlimited']);
    const started = await rest(a.key, 'POST', '/sessions', { entry: CALC });
    expect(started.status).toBe(200);
    const id: string = started.json.sessionId;
    const missing = 'no-such-session-0000';
    const routes: Array<[string, (s: string) => string, unknown]> = [
      ['GET', (s) => `/sessions/${s}`, undefined],
      ['POST', (s) => `/sessions/${s}/breakpoint`, { file: CALC, line: 11 }],
      ['POST', (s) => `/sessions/${s}/continue`, { file: CALC, line: 19 }],
      ['DELETE', (s) => `/sessions/${s}`, undefined],
    ];
    for (const [method, route, body] of routes) {
      const theirs = await rest(b.key, method, route(id), body);
      const none = await rest(b.key, method, route(missing), body);
      expect(theirs.status, `${method} ${route('ID')}`).toBe(404);
      expect(shape(theirs, id), `${method} ${route('ID')}`).toBe(shape(none, missing));
    }
    // Nothing B did reached A's session: it is still there, idle, A's to drive.
    expect(await rest(a.key, 'GET', `/sessions/${id}`)).toEqual({ status: 200, json: { status: 'idle', lastBreakpoint: null, timings: null } });
    // A at its --max-sessions (2) does not lock REST out for B.
    const second = await rest(a.key, 'POST', '/sessions', { entry: CALC });
    expect(second.status).toBe(200);
    const third = await rest(a.key, 'POST', '/sessions', { entry: CALC });
    expect(third.status).toBe(429);
    expect(third.json.error.code).toBe('SESSION_LIMIT');
    const theirs = await rest(b.key, 'POST', '/sessions', { entry: CALC });
    expect(theirs.status).toBe(200);
    for (const [key, s] of [
      [a.key, id],
      [a.key, second.json.sessionId],
      [b.key, theirs.json.sessionId],
    ] as const) {
      expect((await rest(key, 'DELETE', `/sessions/${s}`)).status).toBe(200);
    }
    // Ended, it is still A's: A learns why; to B it reads like an id that never was.
    expect((await rest(a.key, 'GET', `/sessions/${id}`)).json.error.message).toBe(`Session not found: ${id} (it ended: ended by the client)`);
    expect(shape(await rest(b.key, 'GET', `/sessions/${id}`), id)).toBe(shape(await rest(b.key, 'GET', `/sessions/${missing}`), missing));
  });
});

describe('the audit of a REST call names the session of its route', () => {
  it('a body field named like the route parameter neither renames the session in the audit nor reaches the call', async () => {
    const a = await createKey(store, 'rest-audit', 'python', ['--rate', 'unlimited']);
    const id: string = (await rest(a.key, 'POST', '/sessions', { entry: CALC })).json.sessionId;
    const forged = '00000000-not-the-real-session';
    const hit = await rest(a.key, 'POST', `/sessions/${id}/breakpoint`, { file: CALC, line: 11, id: forged });
    expect(hit.json.hit).toBe(true);
    // Attack 18o F3: the audit read a session id from "session_id" or "sessionId" in the body before the route's.
    await rest(a.key, 'DELETE', `/sessions/${id}`);
    const others: string[] = [];
    for (const field of ['session_id', 'sessionId']) {
      const other: string = (await rest(a.key, 'POST', '/sessions', { entry: CALC })).json.sessionId;
      others.push(other);
      expect((await rest(a.key, 'POST', `/sessions/${other}/breakpoint`, { file: CALC, line: 11, [field]: `${forged}-${field}` })).json.hit).toBe(true);
      await rest(a.key, 'DELETE', `/sessions/${other}`);
    }
    const db = new Database(path.join(data.dir, 'control.db'), { readonly: true });
    try {
      const rows = db.prepare('SELECT debug_session, args FROM audit WHERE key_id = ? AND tool LIKE ? ORDER BY seq').all(a.id, '%breakpoint%') as Array<{ debug_session: string; args: string }>;
      // A call and a result row for each of the three calls, each naming the session of its route.
      expect(rows.map((r) => r.debug_session)).toEqual([id, id, others[0], others[0], others[1], others[1]]);
      // Before: the body's "id" overwrote the route's, and the audit named a session that never was.
      for (const row of rows) expect(row.args).not.toContain(`"id":"${forged}"`);
      // What the body said is kept as it was said, under its own name.
      expect(rows.filter((r) => r.args.includes(`"session_id":"${forged}-session_id"`)).length).toBe(1);
    } finally {
      db.close();
    }
  });
});

describe("bundles belong to the key that added them; sources never show a signed URL's query", () => {
  it('another key neither lists nor opens them (by name or by path), reading or not', async () => {
    const owner = await createKey(store, 'bundles-owner', 'bundles,bundles:download', ['--rate', 'unlimited']);
    const other = await createKey(store, 'bundles-other', 'bundles', ['--rate', 'unlimited']);
    const reader = await createKey(store, 'bundles-reader', 'bundles:read', ['--rate', 'unlimited']);
    const added = await tool(owner.key, 'initialize_bundle', { source: bundleUrl });
    expect(added.isError, added.text).toBe(false);
    const shownUrl = bundleUrl.replace(/\?.*$/, '?…');
    expect(added.structured).toMatchObject({ name: 'support-bundle', source: shownUrl, reused: false });
    const ownList = await tool(owner.key, 'list_available_bundles');
    expect(ownList.structured.bundles).toEqual([expect.objectContaining({ name: 'support-bundle', source: shownUrl, valid: true, active: true })]);
    // The signature is in no answer and not at rest in the store.
    for (const answer of [added, ownList]) expect(JSON.stringify(answer)).not.toContain('s3cr3t');
    const bundlePath: string = ownList.structured.bundles[0].path;
    for (const f of readdirSync(bundlePath)) if (f.startsWith('.')) expect(readFileSync(path.join(bundlePath, f), 'utf8')).not.toContain('s3cr3t');

    // Another key, with or without write scope: an empty store.
    for (const key of [other.key, reader.key]) {
      const list = await tool(key, 'list_available_bundles');
      expect(list.structured.bundles).toEqual([]);
      expect(list.text).not.toContain('support-bundle');
    }
    // By name, and by paths into the store: what a missing bundle gets, word for word.
    const probes: Array<[string, string]> = [
      ['support-bundle', 'no-such-bundle'],
      [bundlePath, path.join(path.dirname(bundlePath), 'no-such-bundle')],
      [
        path.join(
          bundlePath,
          readdirSync(bundlePath).find((f) => !f.startsWith('.'))!,
        ),
        path.join(bundlePath, 'no-such-dir'),
      ],
      [path.dirname(bundlePath), path.join(bundleDir, '.keys', 'key_000000000000')],
    ];
    for (const [theirs, missing] of probes) {
      const got = await tool(other.key, 'initialize_bundle', { source: theirs });
      const none = await tool(other.key, 'initialize_bundle', { source: missing });
      expect(got.isError, theirs).toBe(true);
      expect(got.text, theirs).toMatch(/^BundleNotFoundError: /);
      expect(shape(got, theirs), theirs).toBe(shape(none, missing));
    }
    // The same URL is the other key's own download (it needs bundles:download for that).
    const refused = await tool(other.key, 'initialize_bundle', { source: bundleUrl });
    expect(refused.isError).toBe(true);
    expect(refused.text).toMatch(/bundles:download/);
    // Still one bundle, the owner's, untouched.
    expect((await tool(owner.key, 'list_available_bundles')).structured.bundles.map((b: { name: string }) => b.name)).toEqual(['support-bundle']);
  });

  it("bundles with no owner recorded (the operator's, or added before owners) are shared, their sources redacted", async () => {
    const first = await createKey(store, 'shared-1', 'bundles', ['--rate', 'unlimited']);
    const second = await createKey(store, 'shared-2', 'bundles:read', ['--rate', 'unlimited']);
    mkdirSync(path.join(bundleDir, 'operator-bundle', 'cluster-resources'), { recursive: true });
    mkdirSync(path.join(bundleDir, 'older-bundle', 'cluster-resources'), { recursive: true });
    writeFileSync(
      path.join(bundleDir, 'older-bundle', '.debugkit-bundle.json'),
      JSON.stringify({ version: 1, name: 'older-bundle', kind: 'url', source: 'https://bundles.example.com/b.tar.gz?sig=older-s3cr3t', added_at: '2025-01-01T00:00:00.000Z', size_bytes: 0 }),
    );
    for (const key of [first.key, second.key]) {
      const list = await tool(key, 'list_available_bundles');
      expect(list.structured.bundles.map((b: { name: string; source: string | null }) => [b.name, b.source]).sort()).toEqual([
        ['older-bundle', 'https://bundles.example.com/b.tar.gz?…'],
        ['operator-bundle', null],
      ]);
      expect(list.text).not.toContain('s3cr3t');
    }
    const opened = await tool(first.key, 'initialize_bundle', { source: 'operator-bundle' });
    expect(opened.isError, opened.text).toBe(false);
    expect(opened.structured).toMatchObject({ name: 'operator-bundle', reused: true });
  });
});

describe("the debugger's audit answers with the caller's own entries", () => {
  it("debugger_get_comprehensive_audit with debugger:read never shows another key's calls", async () => {
    const other = await createKey(store, 'audit-other', 'debugger:read', ['--rate', 'unlimited']);
    const auditor = await createKey(store, 'auditor', 'debugger:read', ['--rate', 'unlimited']);
    // The other key's calls carry arguments of its own (a session id, here).
    const theirs = await tool(other.key, 'debugger_get_comprehensive_audit', { session_id: 'their-private-session' });
    expect(theirs.isError).toBe(false);
    const mine = await tool(auditor.key, 'debugger_get_comprehensive_audit', { start_time: new Date(Date.now() - 3_600_000).toISOString() });
    expect(mine.structured).toMatchObject({ configured: true, verified: true });
    expect(mine.structured.entries.length).toBeGreaterThan(0);
    expect(new Set(mine.structured.entries.map((e: { key_id: string }) => e.key_id))).toEqual(new Set([auditor.id]));
    expect(JSON.stringify(mine)).not.toContain('their-private-session');
    // Asking for the other key's session is asking for a session it never had: only this very
    // query (audited before it runs) is found, as for a name no one used.
    const probe = await tool(auditor.key, 'debugger_get_comprehensive_audit', { session_id: 'their-private-session' });
    const none = await tool(auditor.key, 'debugger_get_comprehensive_audit', { session_id: 'nobody-s-session-at-all' });
    const seen = (answer: typeof probe) => answer.structured.entries.map((e: any) => [e.key_id, e.event, e.tool, e.args]);
    expect(seen(probe)).toEqual([[auditor.id, 'call', 'debugger_get_comprehensive_audit', { session_id: 'their-private-session' }]]);
    expect(shape(seen(probe), 'their-private-session')).toBe(shape(seen(none), 'nobody-s-session-at-all'));
    // The operator still sees every key's entries in the store.
    const db = new Database(path.join(data.dir, 'control.db'), { readonly: true });
    try {
      const keys = db.prepare('SELECT DISTINCT key_id FROM audit').all() as Array<{ key_id: string }>;
      expect(keys.map((k) => k.key_id)).toEqual(expect.arrayContaining([other.id, auditor.id]));
    } finally {
      db.close();
    }
  });
});
