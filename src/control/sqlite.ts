import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { ChainVerifier, GENESIS, canonicalJson, chainHash, sha256Hex, storableValue, type AuditBody, type AuditRecord, type ChainAnchor, type ChainState, type Checkpoint } from './audit.js';
import { readCheckpointFile, type AuditAnchor } from './anchor.js';
import { TimeSlice } from '../core/wait.js';
import { AUDIT_QUERY_WINDOW, AUDIT_SLICE_MS, type AuditQuery, type BumpResult, type CounterBump, type KeyRecord, type SessionLocation, type Store } from './store.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS keys (
  id TEXT PRIMARY KEY, name TEXT NOT NULL, prefix TEXT NOT NULL, hash TEXT NOT NULL UNIQUE, scopes TEXT NOT NULL,
  rate TEXT, quota TEXT, created_at TEXT NOT NULL, expires_at TEXT, revoked_at TEXT);
CREATE TABLE IF NOT EXISTS counters (
  key_id TEXT NOT NULL, bucket TEXT NOT NULL, count INTEGER NOT NULL, expires_at INTEGER NOT NULL, PRIMARY KEY (key_id, bucket));
CREATE TABLE IF NOT EXISTS audit (
  seq INTEGER PRIMARY KEY, ts TEXT NOT NULL, event TEXT NOT NULL, call_id TEXT NOT NULL, node TEXT NOT NULL,
  key_id TEXT NOT NULL, client TEXT NOT NULL, transport TEXT NOT NULL, session TEXT, debug_session TEXT, tool TEXT NOT NULL,
  args TEXT NOT NULL, outcome TEXT, error TEXT, duration_ms REAL, traceparent TEXT, prev_hash TEXT NOT NULL, hash TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS audit_ts ON audit (ts);
CREATE INDEX IF NOT EXISTS audit_key_seq ON audit (key_id, seq);
CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, node TEXT NOT NULL, url TEXT NOT NULL, key_id TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS signatures (id TEXT PRIMARY KEY, time TEXT NOT NULL, body TEXT NOT NULL);
`;

type Row = Record<string, unknown>;

export function keyFromRow(row: Row): KeyRecord {
  return {
    id: String(row.id),
    name: String(row.name),
    prefix: String(row.prefix),
    scopes: JSON.parse(String(row.scopes)) as string[],
    rate: row.rate ? JSON.parse(String(row.rate)) : null,
    quota: row.quota ? JSON.parse(String(row.quota)) : null,
    created_at: String(row.created_at),
    expires_at: (row.expires_at as string | null) ?? null,
    revoked_at: (row.revoked_at as string | null) ?? null,
  };
}

/** A key's columns as both stores write them (keyFromRow reads them back): id, name, prefix, hash, scopes, rate, quota, created_at, expires_at, revoked_at. */
export function keyRowValues(key: KeyRecord, hash: string): unknown[] {
  return [key.id, key.name, key.prefix, hash, JSON.stringify(key.scopes), key.rate && JSON.stringify(key.rate), key.quota && JSON.stringify(key.quota), key.created_at, key.expires_at, key.revoked_at];
}

/**
 * An entry's arguments as stored. Text that is not JSON (the row was edited by hand) is kept as it
 * is, so verification names that entry as changed (its hash no longer matches) instead of stopping
 * at a parse error. So is JSON other than the canonical text every store writes: a duplicate key
 * ahead of the real one (`{"command":"ls -l","command":...}`) parsed to the entry as hashed while
 * SQLite's json_extract read the forged one, and `audit verify` said OK (attack v2-6).
 */
function argsOf(stored: unknown): unknown {
  const text = String(stored);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { unreadable: text };
  }
  return canonicalJson(parsed) === text ? parsed : { edited: text };
}

/** A duration as stored: a number, or what was written in its place (a text in SQLite's REAL column read as NaN, hashed as null: v2-6). */
function durationOf(stored: unknown): number | string | null {
  if (stored === null || stored === undefined) return null;
  return typeof stored === 'number' ? stored : String(stored);
}

export function auditFromRow(row: Row): AuditRecord {
  return {
    seq: Number(row.seq),
    ts: String(row.ts),
    event: row.event as AuditRecord['event'],
    call_id: String(row.call_id),
    node: String(row.node),
    key_id: String(row.key_id),
    client: String(row.client),
    transport: String(row.transport),
    session: (row.session as string | null) ?? null,
    debug_session: (row.debug_session as string | null) ?? null,
    tool: String(row.tool),
    args: argsOf(row.args),
    outcome: (row.outcome as string | null) ?? null,
    error: (row.error as string | null) ?? null,
    duration_ms: durationOf(row.duration_ms) as number | null,
    traceparent: (row.traceparent as string | null) ?? null,
    prev_hash: String(row.prev_hash),
    hash: String(row.hash),
  };
}

/**
 * An entry as shown, from a row whose `args` holds at most `chars` characters of the stored JSON
 * and whose `args_length` holds its whole length: arguments longer than that are shown as their
 * head and length (the entry cannot be re-hashed from it: Store.auditEntry reads it whole).
 */
export function auditPreviewFromRow(row: Row, chars: number): AuditRecord {
  const length = Number(row.args_length);
  if (length <= chars) return auditFromRow(row);
  const head = String(row.args);
  return { ...auditFromRow({ ...row, args: 'null' }), args: `${head}[cut for display: the arguments' JSON is ${length} characters; debugkit audit export shows them whole]` };
}

/** The audit's columns, with `args` cut to `$chars` (a placeholder the caller fills) and its whole length beside it. */
export function previewColumns(chars: string): string {
  return `seq, ts, event, call_id, node, key_id, client, transport, session, debug_session, tool, substr(args, 1, ${chars}) AS args, length(args) AS args_length,
    outcome, error, duration_ms, traceparent, prev_hash, hash`;
}

/**
 * Normalizes a body so that what is hashed is exactly what reads back from either store: every
 * text (tool, client, session ids, arguments and their names) as the stores keep it (lone
 * surrogates and NUL as U+FFFD), and the arguments as their canonical JSON parses back.
 */
export function storedBody(body: AuditBody): AuditBody {
  const b = storableValue(body) as AuditBody;
  return { ...b, args: JSON.parse(canonicalJson(b.args ?? null)) };
}

/** The checkpoints a verification checks: the store's checkpoint file (read now) and the ones given. */
export function checkpointsFor(anchor: AuditAnchor | undefined, given: readonly Checkpoint[] = []): Checkpoint[] {
  const own = anchor?.checkpoint ? readCheckpointFile(anchor.checkpoint.file) : undefined;
  return own ? [own, ...given] : [...given];
}

export interface SqliteOptions {
  /** Open an existing store only: nothing is created (no directory, file or table). */
  mustExist?: boolean;
}

/** The embedded store: one SQLite file (WAL) in debugkit's data directory. */
export class SqliteStore implements Store {
  readonly kind = 'sqlite';
  private readonly db: BetterSqlite3.Database;
  private readonly stmts;
  private bumps = 0;
  /** The audit key and checkpoint file appends are made with (none: unkeyed, as stores before them). */
  auditAnchor: AuditAnchor | undefined;

  constructor(
    readonly location: string,
    opts: SqliteOptions = {},
  ) {
    // A plain require: better-sqlite3 is CommonJS with a native addon.
    const Database = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;
    if (opts.mustExist) {
      if (!existsSync(location)) throw new Error(`there is no control database at ${location} (give --data-dir or --store where the server keeps it)`);
      this.db = new Database(location, { timeout: 5000, fileMustExist: true });
      if (!this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'audit'").get()) {
        this.db.close();
        throw new Error(`${location} is not a debugkit control database (it has no audit table)`);
      }
    } else {
      mkdirSync(path.dirname(location), { recursive: true, mode: 0o700 });
      // Key hashes and the audit log are for this user only (SQLite gives -wal/-shm the same mode).
      closeSync(openSync(location, 'a', 0o600));
      chmodSync(location, 0o600);
      this.db = new Database(location, { timeout: 5000 });
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = NORMAL');
      this.db.exec(SCHEMA);
      // Crash signatures belong to a key (stores made before that have the column added; their old
      // signatures, whose key is unknown, are shown to no key).
      const columns = (this.db.prepare('PRAGMA table_info(signatures)').all() as Row[]).map((c) => String(c.name));
      if (!columns.includes('key_id')) this.db.exec("ALTER TABLE signatures ADD COLUMN key_id TEXT NOT NULL DEFAULT ''");
      this.db.exec('CREATE INDEX IF NOT EXISTS signatures_key_time ON signatures (key_id, time)');
    }
    const db = this.db;
    this.stmts = {
      keyByHash: db.prepare('SELECT * FROM keys WHERE hash = ?'),
      bump: db.prepare(
        `INSERT INTO counters (key_id, bucket, count, expires_at) VALUES (?, ?, 1, ?)
         ON CONFLICT (key_id, bucket) DO UPDATE SET count = count + 1 WHERE counters.count < ? RETURNING count`,
      ),
      count: db.prepare('SELECT count FROM counters WHERE key_id = ? AND bucket = ?'),
      unbump: db.prepare('UPDATE counters SET count = count - 1 WHERE key_id = ? AND bucket = ?'),
      head: db.prepare('SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1'),
      entry: db.prepare('SELECT * FROM audit WHERE seq = ?'),
      after: db.prepare('SELECT * FROM audit WHERE seq > ? ORDER BY seq'),
      hashAt: db.prepare('SELECT hash FROM audit WHERE seq = ?'),
      insertAudit: db.prepare(
        `INSERT INTO audit (seq, ts, event, call_id, node, key_id, client, transport, session, debug_session, tool, args,
          outcome, error, duration_ms, traceparent, prev_hash, hash)
         VALUES (@seq, @ts, @event, @call_id, @node, @key_id, @client, @transport, @session, @debug_session, @tool, @args,
          @outcome, @error, @duration_ms, @traceparent, @prev_hash, @hash)`,
      ),
    };
    this.append = this.makeAppend();
  }

  async createKey(key: KeyRecord, hash: string): Promise<void> {
    this.db.prepare('INSERT INTO keys (id, name, prefix, hash, scopes, rate, quota, created_at, expires_at, revoked_at) VALUES (?,?,?,?,?,?,?,?,?,?)').run(...keyRowValues(key, hash));
  }

  async listKeys(): Promise<KeyRecord[]> {
    return (this.db.prepare('SELECT * FROM keys ORDER BY created_at, id').all() as Row[]).map(keyFromRow);
  }

  async revokeKey(idOrName: string, at: string): Promise<KeyRecord | undefined> {
    return this.db
      .transaction(() => {
        const row = this.db.prepare('SELECT * FROM keys WHERE id = ? OR (name = ? AND revoked_at IS NULL) ORDER BY created_at DESC LIMIT 1').get(idOrName, idOrName) as Row | undefined;
        if (!row) return undefined;
        this.db.prepare('UPDATE keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?').run(at, row.id);
        return keyFromRow(this.db.prepare('SELECT * FROM keys WHERE id = ?').get(row.id) as Row);
      })
      .immediate();
  }

  async keyByHash(hash: string): Promise<KeyRecord | undefined> {
    const row = this.stmts.keyByHash.get(hash) as Row | undefined;
    return row && keyFromRow(row);
  }

  async bump(keyId: string, counters: CounterBump[]): Promise<BumpResult> {
    if (++this.bumps % 1000 === 0) this.db.prepare('DELETE FROM counters WHERE expires_at < ?').run(Date.now());
    return this.db
      .transaction(() => {
        const counts: number[] = [];
        for (const [i, c] of counters.entries()) {
          const row = this.stmts.bump.get(keyId, c.bucket, c.expiresAt, c.limit) as { count: number } | undefined;
          if (!row) {
            // A refused call uses none of its limits: give back what the earlier counters took.
            for (const earlier of counters.slice(0, i)) this.stmts.unbump.run(keyId, earlier.bucket);
            counts.forEach((n, j) => (counts[j] = n - 1));
            counts.push(Number((this.stmts.count.get(keyId, c.bucket) as { count: number }).count));
            return { counts, refused: i };
          }
          counts.push(Number(row.count));
        }
        return { counts, refused: -1 };
      })
      .immediate();
  }

  async peek(keyId: string, buckets: string[]): Promise<number[]> {
    return buckets.map((b) => Number((this.stmts.count.get(keyId, b) as { count: number } | undefined)?.count ?? 0));
  }

  useAudit(anchor: AuditAnchor): void {
    this.auditAnchor = anchor;
  }

  async auditKeyId(id?: string): Promise<string | undefined> {
    if (id) this.db.prepare('INSERT OR IGNORE INTO meta (name, value) VALUES (?, ?)').run('audit_key_id', id);
    const row = this.db.prepare('SELECT value FROM meta WHERE name = ?').get('audit_key_id') as Row | undefined;
    return row ? String(row.value) : undefined;
  }

  async appendAudit(input: AuditBody): Promise<AuditRecord> {
    const body = storedBody(input);
    const digest = sha256Hex(canonicalJson(body));
    const record = this.append.immediate(body, digest, canonicalJson(body.args));
    this.auditAnchor?.checkpoint?.appended(record.seq, record.hash);
    return record;
  }

  /**
   * Appends one entry after the newest (one transaction, made once: several processes may share
   * the file), hashed with the audit key when the store has one; first checks that the entry the
   * checkpoint file names is still there, unchanged.
   */
  private readonly append: ReturnType<SqliteStore['makeAppend']>;

  private makeAppend() {
    return this.db.transaction((body: AuditBody, digest: string, argsText: string): AuditRecord => {
      const head = this.stmts.head.get() as { seq: number; hash: string } | undefined;
      const checkpoint = this.auditAnchor?.checkpoint;
      const expected = checkpoint?.expected();
      if (expected) checkpoint!.check(expected, (this.stmts.hashAt.get(expected.seq) as { hash: string } | undefined)?.hash, head?.seq ?? 0);
      const seq = (head?.seq ?? 0) + 1;
      const prev_hash = head?.hash ?? GENESIS;
      const key = this.auditAnchor?.key;
      const record: AuditRecord = { ...body, seq, prev_hash, hash: key ? key.chainHash(prev_hash, seq, digest) : chainHash(prev_hash, seq, digest) };
      this.stmts.insertAudit.run({ ...record, args: argsText });
      return record;
    });
  }

  async queryAudit(q: AuditQuery): Promise<AuditRecord[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.since) {
      where.push('ts >= ?');
      params.push(q.since);
    }
    if (q.until) {
      where.push('ts <= ?');
      params.push(q.until);
    }
    if (q.session) {
      where.push('(session = ? OR debug_session = ?)');
      params.push(q.session, q.session);
    }
    if (q.keyId) {
      where.push('key_id = ?');
      params.push(q.keyId);
    }
    if (q.tool) {
      where.push('tool = ?');
      params.push(q.tool);
    }
    const preview = q.preview;
    const columns = preview === undefined ? '*' : previewColumns(String(Math.max(0, Math.floor(preview))));
    // The filters other than the key are checked row by row, so a filter that matches few rows would
    // read every row of the key in one step (one SQLite call the loop cannot leave): each statement
    // reads one window of at most AUDIT_QUERY_WINDOW rows of the key's index (or of the table, for a
    // query of every key), named by its lowest seq, which the index alone gives.
    const index = q.keyId ? 'INDEXED BY audit_key_seq' : 'NOT INDEXED';
    const keyed = q.keyId ? 'key_id = ? AND ' : '';
    const floor = this.db.prepare(`SELECT seq FROM audit ${index} WHERE ${keyed}seq < ? ORDER BY seq DESC LIMIT 1 OFFSET ${AUDIT_QUERY_WINDOW - 1}`);
    const select = this.db.prepare(`SELECT ${columns} FROM audit ${index} WHERE ${['seq < ?', 'seq >= ?', ...where].join(' AND ')} ORDER BY seq DESC LIMIT ?`);
    const limit = q.limit ?? 100;
    const found: AuditRecord[] = [];
    // In slices, newest first: each row's arguments are read whole by SQLite (even to cut them), and
    // the rows can be large; every slice goes on below the oldest row read.
    const slice = new TimeSlice(AUDIT_SLICE_MS);
    for (let before = Number.MAX_SAFE_INTEGER; found.length < limit && before > 0;) {
      const low = Number((floor.get(...(q.keyId ? [q.keyId] : []), before) as { seq: number } | undefined)?.seq ?? 0);
      let cut = false;
      for (const row of select.iterate(before, low, ...params, limit - found.length) as Iterable<Row>) {
        const record = preview === undefined ? auditFromRow(row) : auditPreviewFromRow(row, preview);
        found.push(record);
        before = record.seq;
        if (slice.over()) {
          cut = true;
          break;
        }
      }
      // A window read to its end: the next one is below it (0 once the oldest row was in it).
      if (!cut) before = low;
      await slice.pause();
    }
    return found.reverse();
  }

  async auditEntry(seq: number): Promise<AuditRecord | undefined> {
    const row = this.stmts.entry.get(seq) as Row | undefined;
    return row && auditFromRow(row);
  }

  /**
   * Walks in slices (TimeSlice): a chain of any size, which any key can grow, never holds the event
   * loop for more than a slice. Each slice reads on from the last entry checked (the statement is
   * closed in between, so other statements run on this connection meanwhile).
   */
  async verifyAudit(from?: ChainAnchor, checkpoints?: readonly Checkpoint[]): Promise<ChainState> {
    const verifier = new ChainVerifier(from, { ...(this.auditAnchor?.key ? { key: this.auditAnchor.key } : {}), checkpoints: checkpointsFor(this.auditAnchor, checkpoints) });
    if (from && !verifier.checkAnchor(from, await this.auditEntry(from.seq))) return verifier.state();
    const slice = new TimeSlice(AUDIT_SLICE_MS);
    for (let after = from?.seq ?? 0, more = true; more;) {
      more = false;
      for (const row of this.stmts.after.iterate(after) as Iterable<Row>) {
        const record = auditFromRow(row);
        if (!verifier.add(record)) return verifier.state();
        after = record.seq;
        if (slice.over()) {
          more = true;
          break;
        }
      }
      if (more) await slice.pause();
    }
    return verifier.state();
  }

  async exportAudit(since: string | undefined, each: (r: AuditRecord) => void): Promise<number> {
    let n = 0;
    const rows = since ? this.db.prepare('SELECT * FROM audit WHERE ts >= ? ORDER BY seq').iterate(since) : this.db.prepare('SELECT * FROM audit ORDER BY seq').iterate();
    for (const row of rows as Iterable<Row>) {
      each(auditFromRow(row));
      n++;
    }
    return n;
  }

  async claimSession(id: string, where: SessionLocation): Promise<void> {
    this.db
      .prepare(
        `INSERT INTO sessions (id, node, url, key_id, created_at) VALUES (?,?,?,?,?)
         ON CONFLICT (id) DO UPDATE SET node = excluded.node, url = excluded.url WHERE sessions.key_id = excluded.key_id`,
      )
      .run(id, where.node, where.url, where.key_id, new Date().toISOString());
  }

  async locateSession(id: string): Promise<SessionLocation | undefined> {
    return this.db.prepare('SELECT node, url, key_id FROM sessions WHERE id = ?').get(id) as SessionLocation | undefined;
  }

  async releaseSession(id: string, keyId?: string): Promise<void> {
    if (keyId === undefined) this.db.prepare('DELETE FROM sessions WHERE id = ?').run(id);
    else this.db.prepare('DELETE FROM sessions WHERE id = ? AND key_id = ?').run(id, keyId);
  }

  async releaseNode(node: string): Promise<void> {
    this.db.prepare('DELETE FROM sessions WHERE node = ?').run(node);
  }

  async nodeSecret(): Promise<string> {
    this.db.prepare('INSERT OR IGNORE INTO meta (name, value) VALUES (?, ?)').run('node_secret', randomBytes(32).toString('hex'));
    return String((this.db.prepare('SELECT value FROM meta WHERE name = ?').get('node_secret') as Row).value);
  }

  async addSignature(keyId: string, id: string, time: string, body: unknown): Promise<void> {
    this.db.prepare('INSERT OR REPLACE INTO signatures (id, time, body, key_id) VALUES (?, ?, ?, ?)').run(id, time, JSON.stringify(body), keyId);
  }

  async listSignatures(keyId: string, limit: number): Promise<unknown[]> {
    const rows = this.db.prepare('SELECT body FROM (SELECT body, time, rowid FROM signatures WHERE key_id = ? ORDER BY time DESC, rowid DESC LIMIT ?) ORDER BY time, rowid').all(keyId, limit) as Row[];
    return rows.map((r) => JSON.parse(String(r.body)) as unknown);
  }

  async close(): Promise<void> {
    await this.auditAnchor?.checkpoint?.flush();
    if (this.db.open) this.db.close();
  }
}
