import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKey } from './keys.js';
import { ControlPlane, LOCAL_KEY as LOCAL } from './plane.js';
import { bodyOf, canonicalJson, chainHash, sha256Hex } from './audit.js';
import { openStore } from './open.js';
import { SqliteStore, auditFromRow } from './sqlite.js';

let dir: string;
let plane: ControlPlane;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'debugkit-plane-'));
  plane = new ControlPlane({ store: new SqliteStore(path.join(dir, 'control.db')), node: { id: 'n1' }, apiKey: 'the-api-key' });
  plane.setCatalog([
    { name: 'list_sessions', toolset: 'gdb', readOnly: true, scopes: [] },
    { name: 'open', toolset: 'gdb', readOnly: false, scopes: [] },
    { name: 'call', toolset: 'gdb', readOnly: false, scopes: [] },
    { name: 'keploy_mock_record', toolset: 'mocks', readOnly: false, scopes: ['mocks:run'] },
  ]);
});
afterAll(async () => {
  await plane.close();
  await rm(dir, { recursive: true, force: true });
});

async function stored(scopes: string, extra: { rate?: string; quota?: string } = {}) {
  const made = makeKey({ name: 't', scopes, ...extra });
  await plane.store.createKey(made.record, made.hash);
  const auth = await plane.authenticate(`Bearer ${made.secret}`);
  if (!('key' in auth)) throw new Error('authentication failed');
  return auth.key;
}

describe('ControlPlane', () => {
  it('authenticates stored keys, the --api-key, and nothing else', async () => {
    expect('key' in (await plane.authenticate('Bearer the-api-key'))).toBe(true);
    expect(await plane.authenticate('Bearer nope')).toMatchObject({ refusal: { code: -32001, status: 401 } });
    expect(await plane.authenticate(undefined)).toMatchObject({ refusal: { code: -32001 } });
    expect(await plane.authenticate('Basic dXNlcjpwYXNz')).toMatchObject({ refusal: { code: -32001 } });
    const key = await stored('gdb:read');
    expect(key.scopes).toEqual(['gdb:read']);
  });

  it('authorizes by scope and filters the tool list', async () => {
    const key = await stored('gdb:read');
    expect(plane.authorizeTool(key, 'list_sessions')).toBeNull();
    expect(plane.authorizeTool(key, 'open')).toMatchObject({ code: -32003, data: { required_scope: 'gdb' } });
    expect(plane.visibleTools(key, ['list_sessions', 'open', 'call'])).toEqual(['list_sessions']);
    expect(plane.authorizeTool(key, 'no_such_tool')).toMatchObject({ code: -32602, message: expect.stringMatching(/^Unknown tool: no_such_tool/) });
    const dev = await stored('gdb');
    // What a call's arguments reach for is read by its toolset and asked here as scopes.
    expect(plane.authorizeScopes(dev, 'call', ['gdb:shell'])).toMatchObject({ code: -32003, data: { required_scope: 'gdb:shell' } });
    expect(plane.authorizeScopes(await stored('gdb,gdb:shell'), 'call', ['gdb:shell'])).toBeNull();
    expect(plane.visibleTools(dev, ['list_sessions', 'open', 'call'])).toEqual(['list_sessions', 'open', 'call']);
    // A capability every call of a tool needs hides the tool from a key without it.
    expect(plane.visibleTools(await stored('mocks'), ['keploy_mock_record'])).toEqual([]);
    expect(plane.authorizeTool(await stored('mocks,mocks:run'), 'keploy_mock_record')).toBeNull();
  });

  it('quota_status reports used, limit and reset_at per key', async () => {
    const key = await stored('gdb:read', { rate: '100/min', quota: '3/day' });
    const call = { rate: true, quota: true };
    for (let i = 0; i < 2; i++) expect((await plane.admit(key, call)).ok).toBe(true);
    const status = await plane.quotaStatus(key);
    expect(status).toMatchObject({ key_id: key.id, rate: { limit: 100, used: 2, remaining: 98, period: 'minute' }, quota: { limit: 3, used: 2, remaining: 1, period: 'day' } });
    expect(Date.parse(status.quota!.reset_at)).toBeGreaterThan(Date.now());
    expect((await plane.admit(key, call)).ok).toBe(true);
    const over = await plane.admit(key, call);
    expect(over).toMatchObject({ ok: false, refusal: { code: -32002, data: { limit: 3, used: 3, kind: 'quota' } } });
    // The call refused by its quota was still a request (a unit of rate); reporting counts nothing.
    expect((await plane.admit(key, { rate: false, quota: false })).headers['X-RateLimit-Remaining']).toBe('96');
    expect((await plane.quotaStatus(key)).quota).toMatchObject({ used: 3, remaining: 0 });
  });

  it('counts every request on the rate limit and only tool calls on the quota', async () => {
    const key = await stored('gdb:read', { rate: '3/min', quota: '10/day' });
    // tools/list, initialize, ...: the rate only.
    expect((await plane.admit(key, { rate: true, quota: false })).headers).toMatchObject({ 'X-RateLimit-Remaining': '2', RateLimit: expect.stringMatching(/"rate";r=2;t=\d+, "quota";r=10;t=\d+/) });
    expect((await plane.admit(key, { rate: true, quota: true })).headers.RateLimit).toMatch(/"rate";r=1;t=\d+, "quota";r=9;t=\d+/);
    expect((await plane.admit(key, { rate: true, quota: false })).ok).toBe(true);
    // Over the rate: refused, and the quota is not touched.
    const over = await plane.admit(key, { rate: true, quota: true });
    expect(over).toMatchObject({ ok: false, refusal: { code: -32002, message: expect.stringMatching(/^Rate limit exceeded: 3 requests per minute/), data: { limit: 3, used: 3, kind: 'rate' } } });
    expect(await plane.quotaStatus(key)).toMatchObject({ rate: { used: 3 }, quota: { used: 1 } });
  });

  it('the audit query API filters by time and session and reports the chain state', async () => {
    const key = await stored('gdb');
    const finish = await plane.beginCall(key, { tool: 'call', args: { id: 'gdb-7', command: 'bt' }, client: 'c/1', transport: 'http', session: 'http:s1' });
    await finish({ ok: true });
    const other = await plane.beginCall(key, { tool: 'open', args: {}, client: 'c/1', transport: 'http', session: 'http:s2' });
    await other({ ok: false, error: 'boom' });
    const bySession = await plane.queryAudit({ session: 'http:s1' });
    expect(bySession.entries.map((e) => e.event)).toEqual(['call', 'result']);
    expect(bySession.verification).toMatchObject({ ok: true });
    expect((await plane.queryAudit({ session: 'gdb-7' })).entries.map((e) => e.event)).toEqual(['call', 'result']);
    expect((await plane.queryAudit({ since: new Date(Date.now() + 60_000).toISOString() })).entries).toEqual([]);
    const failed = (await plane.queryAudit({ session: 'http:s2' })).entries.find((e) => e.event === 'result');
    expect(failed).toMatchObject({ outcome: 'error', error: 'boom' });
  });

  it('an audit query checks on from the last verified entry, re-hashes what it shows, and walks the whole chain when due', async () => {
    const own = await mkdtemp(path.join(os.tmpdir(), 'debugkit-plane-'));
    const file = path.join(own, 'control.db');
    const store = new SqliteStore(file);
    let fullEvery = 600_000;
    const p = new ControlPlane({
      store,
      node: { id: 'n1' },
      get fullVerifyEveryMs() {
        return fullEvery;
      },
    });
    try {
      const call = async (session: string) => (await p.beginCall(LOCAL, { tool: 'call', args: { n: session }, client: 'c/1', transport: 'stdio', session }))({ ok: true });
      for (let i = 0; i < 5; i++) await call(`s${i}`);
      expect((await p.queryAudit({})).verification).toMatchObject({ ok: true, checked: 10, from_seq: 1, head_seq: 10 });
      await call('s5');
      // Only what was appended since is walked.
      expect((await p.queryAudit({})).verification).toMatchObject({ ok: true, checked: 2, from_seq: 11, head_seq: 12 });

      // An old entry changed behind debugkit's back: a query that shows it says so at once.
      const Database = (await import('better-sqlite3')).default;
      const db = new Database(file);
      db.prepare("UPDATE audit SET tool = 'forged' WHERE seq = 3").run();
      const shown = await p.queryAudit({ session: 's1' });
      expect(shown.verification).toMatchObject({ ok: false, first_broken: { seq: 3, reason: expect.stringMatching(/content was changed/) } });
      // One that does not show it goes on from the anchor; the next full walk finds it.
      expect((await p.queryAudit({ session: 's5' })).verification.ok).toBe(true);
      fullEvery = 0;
      expect((await p.queryAudit({ session: 's5' })).verification).toMatchObject({ ok: false, from_seq: 1, first_broken: { seq: 3 } });
      // The anchor entry itself removed: found without a full walk.
      db.prepare("UPDATE audit SET tool = 'call' WHERE seq = 3").run();
      fullEvery = 600_000;
      expect((await p.queryAudit({})).verification).toMatchObject({ ok: true, from_seq: 1, head_seq: 12 });
      db.prepare('DELETE FROM audit WHERE seq = 12').run();
      expect((await p.queryAudit({ session: 's0' })).verification).toMatchObject({ ok: false, first_broken: { seq: 12, reason: expect.stringMatching(/removed/) } });
      db.close();
    } finally {
      await p.close();
      await rm(own, { recursive: true, force: true });
    }
  });

  it('on a keyed store, a query that shows an entry re-hashed without the key says so, between full walks too', async () => {
    const own = await mkdtemp(path.join(os.tmpdir(), 'debugkit-plane-'));
    const store = await openStore(undefined, own);
    const p = new ControlPlane({ store, node: { id: 'n1' } });
    try {
      for (let i = 0; i < 3; i++) await (await p.beginCall(LOCAL, { tool: 'call', args: { i }, client: 'c/1', transport: 'stdio', session: `k${i}` }))({ ok: true });
      expect((await p.queryAudit({})).verification).toMatchObject({ ok: true, keyed_from: 1, head_seq: 6 });
      // Entry 3 rewritten and re-hashed without the key (its link to entry 4 is left: the next full walk finds that).
      const Database = (await import('better-sqlite3')).default;
      const db = new Database(path.join(own, 'control.db'));
      const row = auditFromRow(db.prepare('SELECT * FROM audit WHERE seq = 3').get() as Record<string, unknown>);
      row.tool = 'forged';
      db.prepare('UPDATE audit SET tool = ?, hash = ? WHERE seq = 3').run(row.tool, chainHash(row.prev_hash, 3, sha256Hex(canonicalJson(bodyOf(row)))));
      db.close();
      expect((await p.queryAudit({ session: 'k1' })).verification).toMatchObject({ ok: false, first_broken: { seq: 3, reason: expect.stringMatching(/without the audit key/) } });
    } finally {
      await p.close();
      await rm(own, { recursive: true, force: true });
    }
  });

  it('an entry whose arguments were edited into text that is not JSON is named as changed; verify does not stop at a parse error (attack 18l)', async () => {
    const own = await mkdtemp(path.join(os.tmpdir(), 'debugkit-plane-args-'));
    const store = await openStore(undefined, own);
    const p = new ControlPlane({ store, node: { id: 'n1' } });
    try {
      for (let i = 0; i < 2; i++) await (await p.beginCall(LOCAL, { tool: 'call', args: { i }, client: 'c/1', transport: 'stdio', session: `k${i}` }))({ ok: true });
      const Database = (await import('better-sqlite3')).default;
      const db = new Database(path.join(own, 'control.db'));
      db.prepare("UPDATE audit SET args = '{not json' WHERE seq = 2").run();
      db.close();
      expect((await p.queryAudit({})).verification).toMatchObject({ ok: false, first_broken: { seq: 2 } });
    } finally {
      await p.close();
      await rm(own, { recursive: true, force: true });
    }
  });
});
