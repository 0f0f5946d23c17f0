import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync, unlinkSync, readdirSync, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startPostgres, type RunningPostgres } from '../toolsets/mocks/postgres/testing.js';
import { AuditKey, bodyOf, canonicalJson, chainHash, sha256Hex, type AuditBody, type AuditRecord } from './audit.js';
import { CheckpointFile, readCheckpointFile, withFileLock } from './anchor.js';
import { auditFiles, openStore } from './open.js';
import { PostgresStore } from './postgres.js';
import { SqliteStore, auditFromRow } from './sqlite.js';
import type { Store } from './store.js';

// Issue 18, "the audit can be broken, shortened and blinded", on both stores: text is hashed as it
// is stored (lone surrogates, NUL); the chain is keyed with a key held outside the database and its
// head checkpointed to a file beside it, so entries removed from the end (or all of them) and entries
// rewritten and re-hashed are reported; verifying a store that is not there is an error that creates
// nothing.

const require = createRequire(import.meta.url);
const Database = require('better-sqlite3');

let tmp: string;
let postgres: RunningPostgres;
let admin: pg.Client;
let dbs = 0;

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'debugkit-anchor-'));
  postgres = await startPostgres();
  admin = new pg.Client({ host: '127.0.0.1', port: postgres.port, user: postgres.user, password: postgres.password, database: 'postgres' });
  await admin.connect();
}, 120_000);

afterAll(async () => {
  await admin?.end();
  await postgres?.stop();
  await rm(tmp, { recursive: true, force: true });
});

/** Direct access to a store's audit table, as someone who can write the database (not the files beside it). */
interface Backdoor {
  rows(): Promise<AuditRecord[]>;
  run(sql: string, params?: unknown[]): Promise<void>;
  /** Rewrites entries in place (content, prev_hash and hash). */
  put(records: AuditRecord[]): Promise<void>;
  close(): Promise<void>;
}

interface Kind {
  name: string;
  /** A fresh store: its spec and data directory. */
  fresh(): Promise<{ spec: string | undefined; dataDir: string }>;
  backdoor(spec: string | undefined, dataDir: string): Promise<Backdoor>;
  /** A store without the audit key (as before keys existed). */
  unkeyed(spec: string | undefined, dataDir: string): Promise<Store>;
}

let dirs = 0;
const newDir = () => path.join(tmp, `d${++dirs}`);

const sqlite: Kind = {
  name: 'SQLite',
  async fresh() {
    return { spec: undefined, dataDir: newDir() };
  },
  async backdoor(_spec, dataDir) {
    const db = new Database(path.join(dataDir, 'control.db'));
    const update = db.prepare('UPDATE audit SET tool = @tool, args = @args, prev_hash = @prev_hash, hash = @hash WHERE seq = @seq');
    return {
      rows: async () => (db.prepare('SELECT * FROM audit ORDER BY seq').all() as Record<string, unknown>[]).map(auditFromRow),
      run: async (sql, params = []) => void db.prepare(sql.replace(/\$\d+/g, '?')).run(...params),
      put: async (records) => {
        for (const r of records) update.run({ seq: r.seq, tool: r.tool, args: canonicalJson(r.args), prev_hash: r.prev_hash, hash: r.hash });
      },
      close: async () => db.close(),
    };
  },
  async unkeyed(_spec, dataDir) {
    return new SqliteStore(path.join(dataDir, 'control.db'));
  },
};

const postgresKind: Kind = {
  name: 'PostgreSQL',
  async fresh() {
    const name = `anchor_${++dbs}`;
    await admin.query(`CREATE DATABASE ${name}`);
    return { spec: `postgres://${postgres.user}:${postgres.password}@127.0.0.1:${postgres.port}/${name}`, dataDir: newDir() };
  },
  async backdoor(spec) {
    const client = new pg.Client({ connectionString: spec });
    await client.connect();
    return {
      rows: async () => (await client.query('SELECT * FROM debugkit_audit ORDER BY seq')).rows.map(auditFromRow),
      run: async (sql, params = []) => void (await client.query(sql.replace(/\baudit\b/g, 'debugkit_audit'), params)),
      put: async (records) => {
        for (const r of records) {
          await client.query('UPDATE debugkit_audit SET tool = $2, args = $3, prev_hash = $4, hash = $5 WHERE seq = $1', [r.seq, r.tool, canonicalJson(r.args), r.prev_hash, r.hash]);
        }
      },
      close: () => client.end(),
    };
  },
  async unkeyed(spec) {
    return PostgresStore.open(spec!);
  },
};

function body(i: number, extra: Partial<AuditBody> = {}): AuditBody {
  return {
    ts: new Date(1_700_000_000_000 + i).toISOString(),
    event: 'call',
    call_id: `c${i}`,
    node: 'n1',
    key_id: 'k1',
    client: 'test/1',
    transport: 'http',
    session: null,
    debug_session: null,
    tool: 'list_sessions',
    args: { i },
    outcome: null,
    error: null,
    duration_ms: null,
    traceparent: null,
    ...extra,
  };
}

/** Appends n entries through the server's own path (openStore: keyed, checkpointed), then closes. */
async function chainOf(kind: Kind, n: number): Promise<{ spec: string | undefined; dataDir: string }> {
  const at = await kind.fresh();
  const store = await openStore(at.spec, at.dataDir);
  for (let i = 1; i <= n; i++) await store.appendAudit(body(i));
  await store.close();
  return at;
}

async function verify(at: { spec: string | undefined; dataDir: string }) {
  const store = await openStore(at.spec, at.dataDir, { purpose: 'inspect' });
  try {
    return await store.verifyAudit();
  } finally {
    await store.close();
  }
}

/** Entries from `from` on re-hashed without the key, as whoever can write the database would. */
function rehash(records: AuditRecord[], from: number): AuditRecord[] {
  let prev = records.find((r) => r.seq === from - 1)?.hash ?? '0'.repeat(64);
  return records
    .filter((r) => r.seq >= from)
    .map((r) => {
      const hash = chainHash(prev, r.seq, sha256Hex(canonicalJson(bodyOf(r))));
      const out = { ...r, prev_hash: prev, hash };
      prev = hash;
      return out;
    });
}

describe.each([sqlite, postgresKind])('the audit on $name', (kind) => {
  it('text with lone surrogates and NUL is hashed as it is stored, and verifies', async () => {
    const at = await kind.fresh();
    const store = await openStore(at.spec, at.dataDir);
    try {
      const odd = {
        tool: 'list_sessions\ud800',
        client: 'client\udc00/1',
        session: 'http:s\ud83d',
        debug_session: 'dbg\u0000x',
        args: { 'na\udfffme': ['v\ud800', 'nul\u0000', 'pair \ud83d\ude00'], id: 'dbg\u0000x' },
        error: 'err\ud800',
      };
      const written = await store.appendAudit(body(1, odd));
      await store.appendAudit(body(2));
      expect(written.tool).toBe('list_sessions\\ud800');
      expect(written.client).toBe('client\\udc00/1');
      expect(written.args).toEqual({ 'na\\udfffme': ['v\\ud800', 'nul\\u0000', 'pair \ud83d\ude00'], id: 'dbg\\u0000x' });
      const [read] = await store.queryAudit({ tool: 'list_sessions\\ud800' });
      expect(read).toEqual(written);
      expect(await store.verifyAudit()).toMatchObject({ ok: true, checked: 2, keyed_from: 1 });
    } finally {
      await store.close();
    }
    expect(await verify(at)).toMatchObject({ ok: true, checked: 2 });
  });

  it('entries removed from the end are reported against the checkpoint file', async () => {
    const at = await chainOf(kind, 5);
    const door = await kind.backdoor(at.spec, at.dataDir);
    await door.run('DELETE FROM audit WHERE seq > $1', [3]);
    await door.close();
    expect(await verify(at)).toMatchObject({ ok: false, first_broken: { seq: 4, reason: expect.stringMatching(/ends at entry 3, but the checkpoint in .* names entry 5 \(truncated\)/) } });
  });

  it('every entry removed is reported', async () => {
    const at = await chainOf(kind, 3);
    const door = await kind.backdoor(at.spec, at.dataDir);
    await door.run('DELETE FROM audit');
    await door.close();
    expect(await verify(at)).toMatchObject({ ok: false, first_broken: { seq: 1, reason: expect.stringMatching(/the chain is empty, but the checkpoint .* names entry 3/) } });
  });

  it('an entry rewritten and the rest re-hashed (without the key) is reported; so is a chain re-made from its first entry', async () => {
    const at = await chainOf(kind, 5);
    const door = await kind.backdoor(at.spec, at.dataDir);
    const records = await door.rows();
    records[2]!.tool = 'forged';
    await door.put(rehash(records, 3));
    expect(await verify(at)).toMatchObject({ ok: false, first_broken: { seq: 3, reason: expect.stringMatching(/hashed without the audit key.*re-hashed from here/) } });
    // From entry 1: no keyed entry is left to show it; the key's file does (it signs from entry 1), and so does the checkpoint.
    await door.put(rehash(await door.rows(), 1));
    await door.close();
    expect(await verify(at)).toMatchObject({ ok: false, first_broken: { seq: 1, reason: expect.stringMatching(/whose file says it signs every entry from entry 1/) } });
  });

  it('a chain keyed from its first entry, re-hashed whole without the key, is reported by a node with no checkpoint of its own (attack 18ao e2-7)', async () => {
    const at = await chainOf(kind, 4);
    // The key was made for a store with no entry: its file says it signs from entry 1.
    const keyText = readFileSync(path.join(at.dataDir, 'audit.key'), 'utf8');
    expect(keyText).toMatch(/^[0-9a-f]{64}\nkeyed-from 1\n$/);
    const door = await kind.backdoor(at.spec, at.dataDir);
    const records = await door.rows();
    records[0]!.tool = 'forged';
    await door.put(rehash(records, 1));
    await door.close();
    // Another node (or the operator's machine): the same key file, no checkpoint.
    for (const f of readdirSync(at.dataDir)) if (f.includes('audit-head')) rmSync(path.join(at.dataDir, f));
    expect(await verify(at)).toMatchObject({ ok: false, first_broken: { seq: 1, reason: expect.stringMatching(/hashed without the audit key, whose file says it signs every entry from entry 1/) } });
  });

  it('a server appending after the chain was cut leaves the checkpoint as it was, the evidence verify reports', async () => {
    const at = await chainOf(kind, 5);
    const door = await kind.backdoor(at.spec, at.dataDir);
    await door.run('DELETE FROM audit WHERE seq > $1', [2]);
    await door.close();
    const store = await openStore(at.spec, at.dataDir);
    for (let i = 10; i < 15; i++) await store.appendAudit(body(i));
    expect(store.auditAnchor?.checkpoint?.problem).toMatch(/entry 5, the checkpoint in .*, is no longer in the store/);
    await store.close();
    // Entries 3..7 are there again (new ones), entry 5 with another hash than the checkpoint holds.
    expect(await verify(at)).toMatchObject({ ok: false, first_broken: { seq: 5, reason: expect.stringMatching(/another hash/) } });
  });

  it('a server told the cut chain still holds the checkpoint entry (the store lies) sees the head before it, and leaves the checkpoint as it was', async () => {
    // Attack 18o F1, on PostgreSQL: the tail deleted, and the head function redefined to answer the
    // checkpoint entry's old hash; the node appended its own entries from seq 3 on and moved the
    // checkpoint onto them, so verify said OK. The same lie, told by a SQLite store, is the same check.
    const at = await chainOf(kind, 5);
    const store = await openStore(at.spec, at.dataDir);
    const checkpoint = store.auditAnchor!.checkpoint!;
    const saved = checkpoint.expected()!;
    expect(saved.seq).toBe(5);
    const door = await kind.backdoor(at.spec, at.dataDir);
    await door.run('DELETE FROM audit WHERE seq > $1', [2]);
    if (kind === postgresKind) {
      await door.run(`CREATE OR REPLACE FUNCTION debugkit_audit_head(p_check BIGINT) RETURNS TABLE (o_seq BIGINT, o_hash TEXT, o_check TEXT) LANGUAGE plpgsql AS $f$
        BEGIN RETURN QUERY SELECT a.seq, a.hash, '${saved.hash}'::TEXT FROM audit a ORDER BY a.seq DESC LIMIT 1; END $f$`);
    } else {
      const check = checkpoint.check.bind(checkpoint);
      checkpoint.check = (expected, _stored, headSeq) => check(expected, saved.hash, headSeq);
    }
    await door.close();
    for (let i = 10; i < 15; i++) await store.appendAudit(body(i));
    expect(checkpoint.problem).toMatch(/the store's newest entry is 2, before entry 5, the checkpoint in .* \(entries were removed\)/);
    await store.close();
    expect(await verify(at)).toMatchObject({ ok: false, first_broken: { seq: 5, reason: expect.stringMatching(/another hash/) } });
  });

  it('a chain written before the key existed verifies: unkeyed up to where keying starts', async () => {
    const at = await kind.fresh();
    const old = await kind.unkeyed(at.spec, at.dataDir);
    for (let i = 1; i <= 3; i++) await old.appendAudit(body(i));
    await old.close();
    const store = await openStore(at.spec, at.dataDir);
    for (let i = 4; i <= 5; i++) await store.appendAudit(body(i));
    await store.close();
    expect(await verify(at)).toMatchObject({ ok: true, checked: 5, keyed_from: 4, checkpoints: [{ seq: 5 }] });
  });

  it('the key is made once (mode 0600) by processes starting together; a store keyed with another key, or missing its key, is refused', async () => {
    const at = await kind.fresh();
    const both = await Promise.all([openStore(at.spec, at.dataDir), openStore(at.spec, at.dataDir)]);
    expect(both[0].auditAnchor?.key?.id).toBe(both[1].auditAnchor?.key?.id);
    await both[0].appendAudit(body(1));
    await Promise.all(both.map((s) => s.close()));
    const { keyFile } = auditFiles(at.spec, at.dataDir);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(readdirSync(path.dirname(keyFile)).filter((f) => f.includes('.tmp-'))).toEqual([]);
    const other = path.join(tmp, `other-${kind.name}.key`);
    writeFileSync(other, AuditKey.generate().text, { mode: 0o600 });
    await expect(openStore(at.spec, at.dataDir, { auditKeyFile: other })).rejects.toThrow(/is not the one the audit chain .* is keyed with .*same key file/);
    unlinkSync(keyFile);
    await expect(openStore(at.spec, at.dataDir)).rejects.toThrow(/is keyed .*but the key file .* is missing: restore it/);
    expect(existsSync(keyFile)).toBe(false); // no new key was made in its place
    await expect(openStore(at.spec, at.dataDir, { purpose: 'inspect' }).then((s) => s.close().then(() => s.auditAnchor?.keyProblem))).resolves.toMatch(/no key file/);
  });

  it('verifying a store that is not there is an error and creates nothing', async () => {
    const at = await kind.fresh();
    await expect(openStore(at.spec, at.dataDir, { purpose: 'inspect' })).rejects.toThrow(kind === sqlite ? /there is no control database at/ : /holds no debugkit store/);
    expect(existsSync(at.dataDir)).toBe(false);
    if (at.spec) {
      const client = new pg.Client({ connectionString: at.spec });
      await client.connect();
      expect((await client.query("SELECT count(*)::int AS n FROM pg_tables WHERE tablename LIKE 'debugkit_%'")).rows[0].n).toBe(0);
      await client.end();
    }
  });
});

describe('the checkpoint file shared by two processes (attack 18aj q1-2)', () => {
  it('never moves backwards when two writers race: read, compare and rename happen under one lock', async () => {
    const file = path.join(tmp, 'shared-checkpoint.json');
    let behind = 0;
    for (let run = 0; run < 300; run++) {
      rmSync(file, { force: true });
      // Two nodes on one data dir: A appended entry 1, B entry 2 just after; both write the file.
      const a = new CheckpointFile(file);
      const b = new CheckpointFile(file);
      a.appended(1, 'a'.repeat(64));
      b.appended(2, 'b'.repeat(64));
      await Promise.all([a.flush(), b.flush()]);
      if (readCheckpointFile(file)?.seq !== 2) behind++;
    }
    expect(behind).toBe(0);
    expect(existsSync(`${file}.lock`)).toBe(false);
  });

  it('a lock left by a process that died is taken over; a live holder is waited for', async () => {
    const lock = path.join(tmp, 'left.lock');
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    writeFileSync(lock, `${os.hostname()} ${dead.stdout}`);
    await expect(withFileLock(lock, async () => 'ran')).resolves.toBe('ran');
    expect(existsSync(lock)).toBe(false);

    const order: string[] = [];
    let release: (() => void) | undefined;
    const held = withFileLock(lock, () => new Promise<void>((resolve) => (release = () => (order.push('first done'), resolve()))));
    await vi.waitFor(() => expect(release).toBeDefined());
    const second = withFileLock(lock, async () => void order.push('second ran'));
    await new Promise((resolve) => setImmediate(resolve));
    release!();
    await Promise.all([held, second]);
    expect(order).toEqual(['first done', 'second ran']);
  });
});

describe('the audit key file', () => {
  it('holds the key, and may say the first entry it signs; anything else is refused, saying what is valid', () => {
    const hex = 'ab'.repeat(32);
    expect(AuditKey.fromText(`${hex}\n`, 'k').keyedFrom).toBeUndefined();
    expect(AuditKey.fromText(`${hex}\nkeyed-from 7\n`, 'k').keyedFrom).toBe(7);
    expect(AuditKey.fromText(`${hex}\nkeyed-from 7\n`, 'k').id).toBe(AuditKey.fromText(hex, 'k').id);
    for (const bad of [`${hex}\nkeyed-from 0`, `${hex}\nkeyed-from x`, `${hex}\nkeyed-from 1\nkeyed-from 2`, `${hex}\nhello`]) {
      expect(() => AuditKey.fromText(bad, 'the audit key file k')).toThrow(/may hold one line "keyed-from N"/);
    }
    expect(AuditKey.generate(1).text).toMatch(/^[0-9a-f]{64}\nkeyed-from 1\n$/);
  });
});
