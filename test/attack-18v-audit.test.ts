// Attack 18v on the audit (findings R5, R6): an audit query whose filter matches none of a key's
// many rows reads them in bounded windows (one SQLite statement per window, never the whole key in
// one step), and a JSON-RPC batch the rate limit refuses is one audit entry, not one per call.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpGate } from '../src/control/http.js';
import type { KeyContext } from '../src/control/keys.js';
import { ControlPlane } from '../src/control/plane.js';
import { PostgresStore } from '../src/control/postgres.js';
import { SqliteStore } from '../src/control/sqlite.js';
import { AUDIT_QUERY_WINDOW, type AuditQuery } from '../src/control/store.js';
import { startPostgres, type RunningPostgres } from '../src/toolsets/mocks/postgres/testing.js';
import { turnsMarked } from './helpers/stall.js';

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'debugkit-18v-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** The store's connection (private: the test reads the statements a query runs). */
const dbOf = (store: SqliteStore) => (store as unknown as { db: BetterSqlite3.Database }).db;

/**
 * `count` entries of key `key` after the newest, written straight into the table (the chain is not
 * what these tests check; the attack made 1.28 M of them with denied calls), every `every`-th of
 * another key, and the oldest three of session "needle".
 */
function fillRows(store: SqliteStore, key: string, count: number, every = 10): void {
  dbOf(store)
    .prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
       INSERT INTO audit (seq, ts, event, call_id, node, key_id, client, transport, session, debug_session, tool, args, outcome, error, duration_ms, traceparent, prev_hash, hash)
       SELECT i, '2026-01-01T00:00:00.000Z', 'denied', 'c' || i, 'n', CASE WHEN i % ? = 0 THEN 'other' ELSE ? END, 'c/1', 'http',
         CASE WHEN i <= 3 THEN 'needle' ELSE 's' END, NULL, 'list_available_bundles', '{}', 'permission_denied', 'no', 0, NULL, 'x', 'x' FROM n`,
    )
    .run(count, every, key);
}

interface Step {
  sql: string;
  before: number;
  low: number;
}

/** Records every statement a query iterates (each is one SQLite step the loop cannot leave) and marks the event-loop turns they ran in. */
function watchSteps(store: SqliteStore): { steps: Step[]; turns: ReturnType<typeof turnsMarked> } {
  const db = dbOf(store);
  const steps: Step[] = [];
  const turns = turnsMarked();
  const prepare = db.prepare.bind(db);
  db.prepare = ((sql: string) => {
    const stmt = prepare(sql);
    const iterate = stmt.iterate.bind(stmt);
    stmt.iterate = ((...params: unknown[]) => {
      turns.mark();
      steps.push({ sql, before: Number(params[0]), low: Number(params[1]) });
      return iterate(...params);
    }) as typeof stmt.iterate;
    return stmt;
  }) as typeof db.prepare;
  return { steps, turns };
}

describe('R5: a filtered audit query reads a key rows in bounded windows', () => {
  let store: SqliteStore;
  const KEY = 'k_gd';
  const ROWS = 200_000;
  beforeAll(() => {
    store = new SqliteStore(path.join(tmp, 'r5.db'));
    fillRows(store, KEY, ROWS);
  });
  afterAll(async () => {
    await store.close();
  });

  /** The rows the steps' plans visit: every row of the key (or, with no key, of the table) in each step's seq range. */
  function rowsPerStep(steps: Step[], keyId: string | undefined): number[] {
    const db = dbOf(store);
    const count = db.prepare(`SELECT count(*) AS n FROM audit WHERE ${keyId ? 'key_id = ? AND ' : ''}seq >= ? AND seq < ?`);
    return steps.map((s) => Number((count.get(...(keyId ? [keyId] : []), s.low, Math.min(s.before, Number.MAX_SAFE_INTEGER)) as { n: number }).n));
  }

  /** The plan of a step's statement: a range of the index (or of the rowid) bounded on both sides, so a step reads only its window. */
  function planOf(sql: string): string {
    const holes = (sql.match(/\?/g) ?? []).length;
    const rows = dbOf(store)
      .prepare(`EXPLAIN QUERY PLAN ${sql}`)
      .all(...Array<null>(holes).fill(null)) as Array<{ detail: string }>;
    return rows.map((r) => r.detail).join('; ');
  }

  const filters: Array<[string, AuditQuery]> = [
    ['a session that matches none', { keyId: KEY, session: 'nomatch' }],
    ['an end_time before every entry', { keyId: KEY, until: '2000-01-01T00:00:00Z' }],
    ['a start_time after every entry', { keyId: KEY, since: '2099-01-01T00:00:00Z' }],
    ['every key, a tool none called', { tool: 'no_such_tool' }],
  ];
  for (const [what, q] of filters) {
    it(`${what}: no statement reads more than AUDIT_QUERY_WINDOW rows, and the loop gets turns`, async () => {
      const { steps, turns } = watchSteps(store);
      const found = await store.queryAudit({ ...q, limit: 100, preview: 2048 });
      expect(found).toEqual([]);
      const selects = steps.filter((s) => s.sql.includes('FROM audit'));
      // Before: one statement read all 180,000 rows of the key (200,000 for every key).
      const per = rowsPerStep(selects, q.keyId);
      expect(Math.max(...per)).toBeLessThanOrEqual(AUDIT_QUERY_WINDOW);
      // Every row was still looked at (the windows cover the key's rows), one window after another.
      expect(per.reduce((a, b) => a + b, 0)).toBe(q.keyId ? ROWS - ROWS / 10 : ROWS);
      expect(planOf(selects[0]!.sql)).toMatch(q.keyId ? /USING INDEX audit_key_seq \(key_id=\? AND seq>\? AND seq<\?\)/ : /USING INTEGER PRIMARY KEY \(rowid>\? AND rowid<\?\)/);
      // Liveness in turns: the windows ran in more than one turn of the loop (before: one step, one turn).
      expect(turns.count()).toBeGreaterThan(1);
    });
  }

  it('still finds the matching rows below every window, newest first within the limit', async () => {
    const found = await store.queryAudit({ keyId: KEY, session: 'needle', limit: 100 });
    expect(found.map((r) => r.seq)).toEqual([1, 2, 3]);
    const newest = await store.queryAudit({ keyId: KEY, limit: 5 });
    expect(newest.map((r) => r.seq)).toEqual([ROWS - 5, ROWS - 4, ROWS - 3, ROWS - 2, ROWS - 1]);
    const both = await store.queryAudit({ limit: 3 });
    expect(both.map((r) => r.seq)).toEqual([ROWS - 2, ROWS - 1, ROWS]);
  });
});

describe('R5 on PostgreSQL: the same windows, each one statement', () => {
  let postgres: RunningPostgres | undefined;
  let store: PostgresStore;
  const KEY = 'k_gd';
  const ROWS = 30_000;
  beforeAll(async () => {
    // A free port from the system's range; the one band kept for other work is not taken.
    for (let tries = 0; !postgres || (postgres.port >= 47800 && postgres.port <= 47999); tries++) {
      if (postgres) await postgres.stop();
      if (tries > 5) throw new Error('no port outside 47800-47999 in 6 tries');
      postgres = await startPostgres();
    }
    store = await PostgresStore.open(`postgres://${postgres.user}:${postgres.password}@127.0.0.1:${postgres.port}/postgres`);
    await (store as unknown as { rows(sql: string, p: unknown[]): Promise<unknown> }).rows(
      `INSERT INTO debugkit_audit (seq, ts, event, call_id, node, key_id, client, transport, session, debug_session, tool, args, outcome, error, duration_ms, traceparent, prev_hash, hash)
       SELECT i, '2026-01-01T00:00:00.000Z', 'denied', 'c' || i, 'n', CASE WHEN i % 10 = 0 THEN 'other' ELSE $1 END, 'c/1', 'http',
         CASE WHEN i <= 3 THEN 'needle' ELSE 's' END, NULL, 'list_available_bundles', '{}', 'permission_denied', 'no', 0, NULL, 'x', 'x' FROM generate_series(1, $2) AS i`,
      [KEY, ROWS],
    );
  }, 120_000);
  afterAll(async () => {
    await store?.close();
    await postgres?.stop();
  });

  it('a session that matches none: no statement reads more than AUDIT_QUERY_WINDOW of the key rows; matches below every window are found', async () => {
    const inner = store as unknown as { rows(sql: string, p?: unknown[]): Promise<Array<Record<string, unknown>>> };
    const rows = inner.rows.bind(store);
    const windows: Array<{ before: number; low: number }> = [];
    inner.rows = async (sql, p = []) => {
      if (sql.includes('seq >= $2')) windows.push({ before: Number(p[0]), low: Number(p[1]) });
      return rows(sql, p);
    };
    try {
      expect(await store.queryAudit({ keyId: KEY, session: 'nomatch', limit: 100, preview: 2048 })).toEqual([]);
      const per: number[] = [];
      for (const w of windows) {
        const [n] = await rows('SELECT count(*) AS n FROM debugkit_audit WHERE key_id = $1 AND seq >= $2 AND seq < $3', [KEY, w.low, Math.min(w.before, Number.MAX_SAFE_INTEGER)]);
        per.push(Number(n!.n));
      }
      // Before: one statement over all 27,000 rows of the key.
      expect(Math.max(...per)).toBeLessThanOrEqual(AUDIT_QUERY_WINDOW);
      expect(per.reduce((a, b) => a + b, 0)).toBe(ROWS - ROWS / 10);
      expect((await store.queryAudit({ keyId: KEY, session: 'needle' })).map((r) => r.seq)).toEqual([1, 2, 3]);
      expect((await store.queryAudit({ keyId: KEY, limit: 2 })).map((r) => r.seq)).toEqual([ROWS - 2, ROWS - 1]);
    } finally {
      inner.rows = rows;
    }
  });
});

describe('R6: a batch the rate limit refuses is one audit entry', () => {
  const fakeReq = { method: 'POST', headers: { 'user-agent': 'atk/1' }, socket: { remoteAddress: '127.0.0.1' } } as unknown as IncomingMessage;
  const fakeRes = { setHeader: () => undefined } as unknown as ServerResponse;
  const batch = (n: number, name: string) => Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name, arguments: { session_id: `s${i}` } } }));

  it('a 5/min key sending 8 batches of 100 refused calls grows the audit by one entry a refused batch', async () => {
    const store = new SqliteStore(path.join(tmp, 'r6.db'));
    const plane = new ControlPlane({ store, node: { id: 'n1' } });
    plane.setCatalog([
      { name: 'open', toolset: 'gdb', readOnly: false, scopes: [] },
      { name: 'list_available_bundles', toolset: 'bundles', readOnly: true, scopes: [] },
    ]);
    const gate = new HttpGate(plane);
    const key: KeyContext = { id: 'k_r', name: 'k_r', scopes: ['gdb'], rate: { limit: 5, unit: 'minute' }, quota: null };
    try {
      const count = async () => (await store.queryAudit({ keyId: key.id, limit: 1000 })).length;
      const first = await gate.admit(key, fakeReq, fakeRes, batch(100, 'list_available_bundles'));
      // Five calls were within the rate (each refused by scope, each its own entry), 95 past it: one entry.
      expect(first.filter((v) => v?.code === -32003)).toHaveLength(5);
      expect(first.filter((v) => v?.code === -32002)).toHaveLength(95);
      expect(await count()).toBe(6);
      for (let i = 1; i < 8; i++) {
        const verdicts = await gate.admit(key, fakeReq, fakeRes, batch(100, i % 2 ? 'open' : 'list_available_bundles'));
        expect(verdicts.every((v) => v?.code === -32002)).toBe(true);
        // Before: 100 entries a batch (800 in all for the eight).
        expect(await count()).toBe(6 + i);
      }
      const entries = await store.queryAudit({ keyId: key.id, limit: 1000 });
      const summary = entries.at(-1)!;
      // What the key tried is still said: how many calls, which tools, and a digest of them.
      expect(summary).toMatchObject({ event: 'denied', outcome: 'limited', tool: 'batch of 100 calls', args: { refused_calls: 100, tools: { open: 100 } } });
      expect((summary.args as { calls_sha256: string }).calls_sha256).toMatch(/^[0-9a-f]{64}$/);
      expect(entries[5]!.args).toMatchObject({ refused_calls: 95, tools: { list_available_bundles: 95 } });
      expect(entries[7]!.args).toMatchObject({ refused_calls: 100, tools: { list_available_bundles: 100 } });
      // A single refused request is still its own entry, with its tool and arguments.
      await gate.admit(key, fakeReq, fakeRes, batch(1, 'open')[0]);
      expect((await store.queryAudit({ keyId: key.id, limit: 1 }))[0]).toMatchObject({ tool: 'open', args: { session_id: 's0' }, outcome: 'limited' });
    } finally {
      await plane.close();
    }
  });
});
