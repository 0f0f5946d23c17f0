import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { ChainVerifier, GENESIS, canonicalJson, chainHash, sha256Hex, type AuditBody, type AuditRecord, type ChainAnchor, type ChainState, type Checkpoint } from './audit.js';
import type { AuditAnchor } from './anchor.js';
import { auditFromRow, auditPreviewFromRow, checkpointsFor, keyFromRow, keyRowValues, previewColumns, storedBody } from './sqlite.js';
import { AUDIT_QUERY_WINDOW, AUDIT_SLICE_MS, type AuditQuery, type BumpResult, type CounterBump, type KeyRecord, type SessionLocation, type Store } from './store.js';
import { keepFromChildren } from '../core/process.js';
import { TimeSlice } from '../core/wait.js';

/** Rows one query of a walk reads: entries may hold 256 KiB of arguments each, so a batch stays in tens of MB. */
const WALK_BATCH = 200;

// One advisory lock id for the audit chain: every node appends under it, so there is one chain.
const AUDIT_LOCK = 0x646b6175; // "dkau"

const SCHEMA = `
CREATE TABLE IF NOT EXISTS debugkit_keys (
  id TEXT PRIMARY KEY, name TEXT NOT NULL, prefix TEXT NOT NULL, hash TEXT NOT NULL UNIQUE, scopes TEXT NOT NULL,
  rate TEXT, quota TEXT, created_at TEXT NOT NULL, expires_at TEXT, revoked_at TEXT);
CREATE TABLE IF NOT EXISTS debugkit_counters (
  key_id TEXT NOT NULL, bucket TEXT NOT NULL, count BIGINT NOT NULL, expires_at BIGINT NOT NULL, PRIMARY KEY (key_id, bucket));
CREATE TABLE IF NOT EXISTS debugkit_audit (
  seq BIGINT PRIMARY KEY, ts TEXT NOT NULL, event TEXT NOT NULL, call_id TEXT NOT NULL, node TEXT NOT NULL,
  key_id TEXT NOT NULL, client TEXT NOT NULL, transport TEXT NOT NULL, session TEXT, debug_session TEXT, tool TEXT NOT NULL,
  args TEXT NOT NULL, outcome TEXT, error TEXT, duration_ms DOUBLE PRECISION, traceparent TEXT, prev_hash TEXT NOT NULL, hash TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS debugkit_audit_ts ON debugkit_audit (ts);
CREATE INDEX IF NOT EXISTS debugkit_audit_key_seq ON debugkit_audit (key_id, seq);
CREATE TABLE IF NOT EXISTS debugkit_sessions (id TEXT PRIMARY KEY, node TEXT NOT NULL, url TEXT NOT NULL, key_id TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS debugkit_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS debugkit_signatures (id TEXT PRIMARY KEY, time TEXT NOT NULL, body JSONB NOT NULL);
-- Crash signatures belong to a key (old rows, whose key is unknown, are shown to no key).
ALTER TABLE debugkit_signatures ADD COLUMN IF NOT EXISTS key_id TEXT NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS debugkit_signatures_key_time ON debugkit_signatures (key_id, time);

-- Bumps counters in order and stops at the first one already at its limit: one round trip,
-- atomic (one transaction, row locks), shared by every node. A refused counter comes back negative.
CREATE OR REPLACE FUNCTION debugkit_bump(p_key TEXT, p_buckets TEXT[], p_limits BIGINT[], p_expires BIGINT[])
RETURNS BIGINT[] LANGUAGE plpgsql AS $$
DECLARE result BIGINT[] := '{}'; v BIGINT;
BEGIN
  FOR i IN 1 .. coalesce(array_length(p_buckets, 1), 0) LOOP
    INSERT INTO debugkit_counters AS c (key_id, bucket, count, expires_at) VALUES (p_key, p_buckets[i], 1, p_expires[i])
      ON CONFLICT (key_id, bucket) DO UPDATE SET count = c.count + 1 WHERE c.count < p_limits[i]
      RETURNING c.count INTO v;
    IF NOT FOUND THEN
      -- A refused call uses none of its limits: give back what the earlier counters took.
      FOR j IN 1 .. i - 1 LOOP
        UPDATE debugkit_counters SET count = count - 1 WHERE key_id = p_key AND bucket = p_buckets[j];
        result[j] := result[j] - 1;
      END LOOP;
      SELECT c.count INTO v FROM debugkit_counters c WHERE c.key_id = p_key AND c.bucket = p_buckets[i];
      RETURN result || (-v);
    END IF;
    result := result || v;
  END LOOP;
  RETURN result;
END $$;

-- Takes the audit chain's advisory lock for the rest of the transaction and returns the head
-- (seq, hash) and the hash of entry p_check (the one the node's checkpoint file names). The node
-- hashes the next entry itself (with the audit key, which never reaches the database) and inserts it
-- in the same transaction.
CREATE OR REPLACE FUNCTION debugkit_audit_head(p_check BIGINT)
RETURNS TABLE (o_seq BIGINT, o_hash TEXT, o_check TEXT) LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(${AUDIT_LOCK});
  RETURN QUERY SELECT h.seq, h.hash, (SELECT c.hash FROM debugkit_audit c WHERE c.seq = p_check)
    FROM (SELECT 1) one LEFT JOIN LATERAL (SELECT a.seq, a.hash FROM debugkit_audit a ORDER BY a.seq DESC LIMIT 1) h ON true;
END $$;
`;

export interface PostgresOptions {
  /** Open an existing store only: nothing is created (no table, no function). */
  mustExist?: boolean;
}

/** The shared store for several nodes: every counter and the audit chain are atomic in PostgreSQL. */
export class PostgresStore implements Store {
  readonly kind = 'postgres';
  readonly location: string;
  auditAnchor: AuditAnchor | undefined;
  private constructor(
    private readonly pool: pg.Pool,
    url: string,
  ) {
    const u = new URL(url);
    u.password = u.password ? '***' : '';
    this.location = u.toString();
  }

  static async open(url: string, opts: PostgresOptions = {}): Promise<PostgresStore> {
    // A password libpq takes from PGPASSWORD (the URL has none) is the store's: no child gets it.
    if (process.env.PGPASSWORD && !passwordIn(url)) keepFromChildren('PGPASSWORD');
    const pool = new pg.Pool({ connectionString: url, max: 8, connectionTimeoutMillis: 10_000 });
    pool.on('error', () => undefined); // an idle client dropped by the server is replaced on next use
    const store = new PostgresStore(pool, url);
    if (opts.mustExist) {
      const found = await pool.query("SELECT to_regclass('debugkit_audit') IS NOT NULL AS present").catch(async (err) => {
        await pool.end().catch(() => undefined);
        throw err;
      });
      if (!found.rows[0]?.present) {
        await pool.end().catch(() => undefined);
        throw new Error(`${store.location} holds no debugkit store (no debugkit_audit table)`);
      }
      return store;
    }
    const client = await pool.connect();
    try {
      // Two nodes starting together must not both run CREATE OR REPLACE FUNCTION at once.
      await client.query('SELECT pg_advisory_lock($1)', [AUDIT_LOCK + 1]);
      await client.query(SCHEMA);
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [AUDIT_LOCK + 1]).catch(() => undefined);
      client.release();
    }
    return store;
  }

  private async rows(sql: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
    return (await this.pool.query(sql, params)).rows;
  }

  async createKey(key: KeyRecord, hash: string): Promise<void> {
    await this.rows('INSERT INTO debugkit_keys (id, name, prefix, hash, scopes, rate, quota, created_at, expires_at, revoked_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)', keyRowValues(key, hash));
  }

  async listKeys(): Promise<KeyRecord[]> {
    return (await this.rows('SELECT * FROM debugkit_keys ORDER BY created_at, id')).map(keyFromRow);
  }

  async revokeKey(idOrName: string, at: string): Promise<KeyRecord | undefined> {
    const rows = await this.rows(
      `UPDATE debugkit_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = (
         SELECT id FROM debugkit_keys WHERE id = $1 OR (name = $1 AND revoked_at IS NULL) ORDER BY created_at DESC LIMIT 1) RETURNING *`,
      [idOrName, at],
    );
    return rows[0] && keyFromRow(rows[0]);
  }

  async keyByHash(hash: string): Promise<KeyRecord | undefined> {
    const rows = await this.rows('SELECT * FROM debugkit_keys WHERE hash = $1', [hash]);
    return rows[0] && keyFromRow(rows[0]);
  }

  async bump(keyId: string, counters: CounterBump[]): Promise<BumpResult> {
    const rows = await this.rows('SELECT debugkit_bump($1, $2, $3, $4) AS r', [keyId, counters.map((c) => c.bucket), counters.map((c) => c.limit), counters.map((c) => c.expiresAt)]);
    const raw = (rows[0]!.r as string[]).map(Number);
    const refused = raw.findIndex((n) => n < 0);
    return { counts: raw.map(Math.abs), refused };
  }

  async peek(keyId: string, buckets: string[]): Promise<number[]> {
    const rows = await this.rows('SELECT bucket, count FROM debugkit_counters WHERE key_id = $1 AND bucket = ANY($2)', [keyId, buckets]);
    return buckets.map((b) => Number(rows.find((r) => r.bucket === b)?.count ?? 0));
  }

  useAudit(anchor: AuditAnchor): void {
    this.auditAnchor = anchor;
  }

  async auditKeyId(id?: string): Promise<string | undefined> {
    if (id) await this.rows('INSERT INTO debugkit_meta (name, value) VALUES ($1, $2) ON CONFLICT DO NOTHING', ['audit_key_id', id]);
    const [row] = await this.rows('SELECT value FROM debugkit_meta WHERE name = $1', ['audit_key_id']);
    return row ? String(row.value) : undefined;
  }

  /**
   * Appends one entry in one transaction under the chain's advisory lock (so every node appends to
   * one chain): the head is read, the entry hashed here (with the audit key when there is one:
   * the key never goes to the database) and inserted. The entry the checkpoint file names is
   * checked on the way.
   */
  async appendAudit(input: AuditBody): Promise<AuditRecord> {
    const body = storedBody(input);
    const args = canonicalJson(body.args);
    const digest = sha256Hex(canonicalJson(body));
    const checkpoint = this.auditAnchor?.checkpoint;
    const key = this.auditAnchor?.key;
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      try {
        const expected = checkpoint?.expected();
        const head = (await client.query('SELECT * FROM debugkit_audit_head($1)', [expected?.seq ?? 0])).rows[0] as { o_seq: string | null; o_hash: string | null; o_check: string | null };
        if (expected) checkpoint!.check(expected, head.o_check ?? undefined, Number(head.o_seq ?? 0));
        const seq = Number(head.o_seq ?? 0) + 1;
        const prev_hash = head.o_hash ?? GENESIS;
        const record: AuditRecord = { ...body, seq, prev_hash, hash: key ? key.chainHash(prev_hash, seq, digest) : chainHash(prev_hash, seq, digest) };
        await client.query(
          `INSERT INTO debugkit_audit (seq, ts, event, call_id, node, key_id, client, transport, session, debug_session, tool, args,
             outcome, error, duration_ms, traceparent, prev_hash, hash) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18)`,
          [
            seq,
            record.ts,
            record.event,
            record.call_id,
            record.node,
            record.key_id,
            record.client,
            record.transport,
            record.session,
            record.debug_session,
            record.tool,
            args,
            record.outcome,
            record.error,
            record.duration_ms,
            record.traceparent,
            prev_hash,
            record.hash,
          ],
        );
        await client.query('COMMIT');
        checkpoint?.appended(seq, record.hash);
        return record;
      } catch (err) {
        await client.query('ROLLBACK').catch((e: Error) => (broken = e));
        throw err;
      }
    } finally {
      client.release(broken);
    }
  }

  /**
   * As SqliteStore.queryAudit: newest first, in windows of at most AUDIT_QUERY_WINDOW rows of the
   * key (or of the table), each one statement, so a filter that matches none of a key's million
   * rows never makes one statement read them all (it would hold a pooled connection, which every
   * audited call needs, for as long).
   */
  async queryAudit(q: AuditQuery): Promise<AuditRecord[]> {
    // $1 and $2: the window (below $1, from $2 on), set for each statement.
    const where: string[] = ['seq < $1', 'seq >= $2'];
    const params: unknown[] = [0, 0];
    const add = (sql: (n: number) => string, value: unknown) => (params.push(value), where.push(sql(params.length)));
    if (q.since) add((n) => `ts >= $${n}`, q.since);
    if (q.until) add((n) => `ts <= $${n}`, q.until);
    if (q.session) add((n) => `(session = $${n} OR debug_session = $${n})`, q.session);
    if (q.keyId) add((n) => `key_id = $${n}`, q.keyId);
    if (q.tool) add((n) => `tool = $${n}`, q.tool);
    const limit = q.limit ?? 100;
    params.push(limit);
    const preview = q.preview;
    const columns = preview === undefined ? '*' : previewColumns(String(Math.max(0, Math.floor(preview))));
    const sql = `SELECT ${columns} FROM debugkit_audit WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT $${params.length}`;
    const floor = `SELECT seq FROM debugkit_audit WHERE ${q.keyId ? 'key_id = $2 AND ' : ''}seq < $1 ORDER BY seq DESC OFFSET ${AUDIT_QUERY_WINDOW - 1} LIMIT 1`;
    const found: AuditRecord[] = [];
    for (let before = Number.MAX_SAFE_INTEGER; found.length < limit && before > 0;) {
      const [lowest] = await this.rows(floor, q.keyId ? [before, q.keyId] : [before]);
      const low = Number(lowest?.seq ?? 0);
      params[0] = before;
      params[1] = low;
      params[params.length - 1] = limit - found.length;
      for (const row of await this.rows(sql, params)) found.push(preview === undefined ? auditFromRow(row) : auditPreviewFromRow(row, preview));
      before = low;
    }
    return found.reverse();
  }

  async auditEntry(seq: number): Promise<AuditRecord | undefined> {
    const [row] = await this.rows('SELECT * FROM debugkit_audit WHERE seq = $1', [seq]);
    return row && auditFromRow(row);
  }

  /**
   * Every entry after `after` (from `since` on), in order, WALK_BATCH rows a query; each is taken
   * in slices of the main thread's time (TimeSlice): a batch of large entries never holds the loop.
   */
  private async walk(since: string | undefined, each: (r: AuditRecord) => boolean | void, after = 0): Promise<void> {
    const slice = new TimeSlice(AUDIT_SLICE_MS);
    for (;;) {
      const rows = await this.rows(`SELECT * FROM debugkit_audit WHERE seq > $1 ${since ? 'AND ts >= $2' : ''} ORDER BY seq LIMIT ${WALK_BATCH}`, since ? [after, since] : [after]);
      slice.restart();
      for (const row of rows) {
        const record = auditFromRow(row);
        after = record.seq;
        if (each(record) === false) return;
        await slice.pause();
      }
      if (rows.length < WALK_BATCH) return;
    }
  }

  async verifyAudit(from?: ChainAnchor, checkpoints?: readonly Checkpoint[]): Promise<ChainState> {
    const verifier = new ChainVerifier(from, { ...(this.auditAnchor?.key ? { key: this.auditAnchor.key } : {}), checkpoints: checkpointsFor(this.auditAnchor, checkpoints) });
    if (from && !verifier.checkAnchor(from, await this.auditEntry(from.seq))) return verifier.state();
    await this.walk(undefined, (r) => verifier.add(r), from?.seq ?? 0);
    return verifier.state();
  }

  async exportAudit(since: string | undefined, each: (r: AuditRecord) => void): Promise<number> {
    let n = 0;
    await this.walk(since, (r) => void (each(r), n++));
    return n;
  }

  async claimSession(id: string, where: SessionLocation): Promise<void> {
    await this.rows(
      `INSERT INTO debugkit_sessions (id, node, url, key_id, created_at) VALUES ($1,$2,$3,$4,$5)
       ON CONFLICT (id) DO UPDATE SET node = EXCLUDED.node, url = EXCLUDED.url WHERE debugkit_sessions.key_id = EXCLUDED.key_id`,
      [id, where.node, where.url, where.key_id, new Date().toISOString()],
    );
  }

  async locateSession(id: string): Promise<SessionLocation | undefined> {
    const rows = await this.rows('SELECT node, url, key_id FROM debugkit_sessions WHERE id = $1', [id]);
    return rows[0] as unknown as SessionLocation | undefined;
  }

  async releaseSession(id: string, keyId?: string): Promise<void> {
    if (keyId === undefined) await this.rows('DELETE FROM debugkit_sessions WHERE id = $1', [id]);
    else await this.rows('DELETE FROM debugkit_sessions WHERE id = $1 AND key_id = $2', [id, keyId]);
  }

  async releaseNode(node: string): Promise<void> {
    await this.rows('DELETE FROM debugkit_sessions WHERE node = $1', [node]);
  }

  async nodeSecret(): Promise<string> {
    await this.rows('INSERT INTO debugkit_meta (name, value) VALUES ($1, $2) ON CONFLICT DO NOTHING', ['node_secret', randomBytes(32).toString('hex')]);
    return String((await this.rows('SELECT value FROM debugkit_meta WHERE name = $1', ['node_secret']))[0]!.value);
  }

  async addSignature(keyId: string, id: string, time: string, body: unknown): Promise<void> {
    // A signature id is new each time (a UUID): the conflict arm only keeps a retried insert harmless, never another key's row.
    await this.rows(
      'INSERT INTO debugkit_signatures (id, time, body, key_id) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO UPDATE SET time = EXCLUDED.time, body = EXCLUDED.body WHERE debugkit_signatures.key_id = EXCLUDED.key_id',
      [id, time, JSON.stringify(body), keyId],
    );
  }

  async listSignatures(keyId: string, limit: number): Promise<unknown[]> {
    const rows = await this.rows('SELECT body FROM (SELECT body, time, id FROM debugkit_signatures WHERE key_id = $1 ORDER BY time DESC, id DESC LIMIT $2) s ORDER BY time, id', [keyId, limit]);
    return rows.map((r) => r.body as unknown);
  }

  async close(): Promise<void> {
    await this.auditAnchor?.checkpoint?.flush();
    await this.pool.end().catch(() => undefined);
  }
}

/** Whether a postgres:// URL carries its password (else libpq looks in PGPASSWORD and ~/.pgpass). */
function passwordIn(url: string): boolean {
  try {
    return new URL(url).password !== '';
  } catch {
    return false;
  }
}
