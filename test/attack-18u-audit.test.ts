// Attack 18u on the audit and its query (findings P6-P9): a chain any key can grow is never walked
// in one go on a client's request, an audit answer is bounded before it is built, the record budget
// keeps every string's head, and a secret given as its own argv item is hidden.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_RECORD, MAX_STRING, MAX_TEXT, MIN_HEAD, fairShare, redact, sha256Hex } from '../src/control/audit.js';
import { AUDIT_ANSWER_CHARS, AUDIT_ARGS_CHARS, planeControl } from '../src/control/debugger.js';
import { ControlPlane } from '../src/control/plane.js';
import { PostgresStore } from '../src/control/postgres.js';
import { SqliteStore } from '../src/control/sqlite.js';
import type { AuditRecord } from '../src/control/audit.js';
import type { KeyContext } from '../src/control/keys.js';
import type { Store } from '../src/control/store.js';
import { MAX_COMMAND_CHARS, MAX_COMMANDS, callTool } from '../src/toolsets/gdb/tools/call.js';
import type { GdbContext } from '../src/toolsets/gdb/tools/index.js';
import { startPostgres, type RunningPostgres } from '../src/toolsets/mocks/postgres/testing.js';
import { longestBlock } from './helpers/stall.js';

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'debugkit-18u-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const KEY: KeyContext = { id: 'k_g', name: 'k_g', scopes: ['gdb', 'debugger:read'], rate: null, quota: null };
const OTHER: KeyContext = { id: 'k_b', name: 'k_b', scopes: ['gdb'], rate: null, quota: null };

/** Random text that JSON keeps as it is (base64), `n` characters. */
const noise = (n: number) =>
  randomBytes(Math.ceil((n * 3) / 4))
    .toString('base64')
    .slice(0, n);

/** `count` audited calls of `key`, each with four 64 KiB commands (the finding's fill: about 256 KiB of arguments an entry). */
async function fill(plane: ControlPlane, key: KeyContext, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const finish = await plane.beginCall(key, { tool: 'call', args: { id: `s${i}`, commands: [0, 1, 2, 3].map(() => `echo ${noise(65_000)}`) }, client: 'c/1', transport: 'http' });
    await finish({ ok: false, error: 'no such session' });
  }
}

/** Counts the store's verifyAudit walks and the characters of entries its queries hand back. */
function counting(store: Store): { walks: number; chars: number; whole: number } {
  const seen = { walks: 0, chars: 0, whole: 0 };
  const verify = store.verifyAudit.bind(store);
  const query = store.queryAudit.bind(store);
  const entry = store.auditEntry.bind(store);
  store.verifyAudit = (...a) => (seen.walks++, verify(...a));
  store.queryAudit = async (q) => {
    const rows = await query(q);
    seen.chars += rows.reduce((n, r) => n + JSON.stringify(r).length, 0);
    return rows;
  };
  store.auditEntry = async (seq) => (seen.whole++, entry(seq));
  return seen;
}

describe('P6: an audit query never walks the chain in one go', () => {
  for (const kind of ['SQLite', 'PostgreSQL'] as const) {
    describe(kind, () => {
      let postgres: RunningPostgres | undefined;
      beforeAll(async () => {
        if (kind !== 'PostgreSQL') return;
        // A free port from the system's range; the one band kept for other work is not taken.
        for (let tries = 0; !postgres || (postgres.port >= 47800 && postgres.port <= 47999); tries++) {
          if (postgres) await postgres.stop();
          if (tries > 5) throw new Error('no port outside 47800-47999 in 6 tries');
          postgres = await startPostgres();
        }
      }, 120_000);
      afterAll(async () => {
        await postgres?.stop();
      });

      /** A store with an empty chain: a new SQLite file, or the new cluster's own database (one test uses it). */
      async function freshStore(): Promise<Store> {
        if (kind === 'SQLite') return new SqliteStore(path.join(await mkdtemp(path.join(tmp, 'sq-')), 'control.db'));
        return PostgresStore.open(`postgres://${postgres!.user}:${postgres!.password}@127.0.0.1:${postgres!.port}/postgres`);
      }

      it('the first query walks the whole chain (every entry checked) in many turns of the event loop, and queries at once share one walk', async () => {
        const store = await freshStore();
        const plane = new ControlPlane({ store, node: { id: 'n1' } });
        try {
          // 80 calls: 160 entries, about 21 MB of arguments (the finding: 4,140 entries, 529 MB, one 5 s block).
          await fill(plane, OTHER, 80);
          const seen = counting(store);
          const run = await longestBlock(() => Promise.all(Array.from({ length: 8 }, () => plane.queryAudit({ keyId: KEY.id }))));
          for (const r of run.value) expect(r.verification).toMatchObject({ ok: true, from_seq: 1, checked: 160, head_seq: 160 });
          // Before: one synchronous loop over every row (0 turns for the probe while it ran) and one walk per query (8).
          expect(run.turns, `the probe's turns during the walk (longest block ${Math.round(run.longest)} ms)`).toBeGreaterThanOrEqual(3);
          expect(seen.walks).toBe(1);
        } finally {
          await plane.close();
        }
      }, 120_000);
    });
  }
});

describe('P7: an audit answer is bounded before it is built', () => {
  it('shows the newest entries that fit in AUDIT_ANSWER_CHARS, each argument cut in the query, re-hashing only those shown', async () => {
    const store = new SqliteStore(path.join(await mkdtemp(path.join(tmp, 'p7-')), 'control.db'));
    const plane = new ControlPlane({ store, node: { id: 'n1' } });
    try {
      await fill(plane, KEY, 50); // 100 entries of this key: 50 calls of about 256 KiB, 50 results
      const seen = counting(store);
      const control = planeControl(plane);
      const answer = await control.audit({ owner: 'http:k_g', principal: { id: KEY.id, key: KEY } }, {});
      const text = JSON.stringify(answer);
      expect(answer.verified).toBe(true);
      // Before: 100 entries whole, about 13 MB read from the store and answered.
      expect(text.length).toBeLessThan(AUDIT_ANSWER_CHARS + 5000);
      expect(seen.chars).toBeLessThan(100 * (AUDIT_ARGS_CHARS + 2000));
      expect(answer.entries.length).toBeGreaterThan(10);
      expect(answer.entries.length).toBeLessThan(100);
      expect(seen.whole).toBe(answer.entries.length);
      const cut = answer.entries.find((e) => e.event === 'call')!;
      expect(String(cut.args)).toMatch(/\[cut for display: the arguments' JSON is \d+ characters; debugkit audit export shows them whole\]$/);
      expect(answer.note).toContain(`${100 - answer.entries.length} older matching ones are left out`);
      expect(answer.note).toMatch(/ask again with end_time before \d{4}-/);
      // The newest are the ones shown.
      const all = await store.queryAudit({ keyId: KEY.id, limit: 100 });
      expect(answer.entries.at(-1)!.call_id).toBe(all.at(-1)!.call_id);
      // Eight at once, the chain already walked: the re-hash of what each shows (read whole) goes in
      // slices. Before: one synchronous run each (the finding: 32 at once held the loop 5.5 s).
      const caller = { owner: 'http:k_g', principal: { id: KEY.id, key: KEY } };
      const again = await longestBlock(() => Promise.all(Array.from({ length: 8 }, () => control.audit(caller, {}))));
      for (const a of again.value) expect(a.entries.length).toBe(answer.entries.length);
      expect(again.turns, `the probe's turns during 8 queries (longest block ${Math.round(again.longest)} ms)`).toBeGreaterThanOrEqual(3);
    } finally {
      await plane.close();
    }
  }, 120_000);

  it('an entry changed behind the server is still found among the previews (each shown entry is read whole and re-hashed)', async () => {
    const dir = await mkdtemp(path.join(tmp, 'p7b-'));
    const store = new SqliteStore(path.join(dir, 'control.db'));
    const plane = new ControlPlane({ store, node: { id: 'n1' } });
    try {
      await fill(plane, KEY, 3);
      await plane.queryAudit({ keyId: KEY.id }); // the walk's anchor: later queries check on from it
      const Database = (await import('better-sqlite3')).default;
      const db = new Database(path.join(dir, 'control.db'));
      const args = JSON.parse(String((db.prepare('SELECT args FROM audit WHERE seq = 3').get() as { args: string }).args)) as { commands: string[] };
      args.commands[3] = 'call (int)system("id")';
      db.prepare('UPDATE audit SET args = ? WHERE seq = 3').run(JSON.stringify(args));
      db.close();
      const report = await plane.queryAudit({ keyId: KEY.id, preview: AUDIT_ARGS_CHARS, maxChars: AUDIT_ANSWER_CHARS });
      expect(report.verification).toMatchObject({ ok: false, first_broken: { seq: 3, reason: expect.stringMatching(/content was changed/) } });
    } finally {
      await plane.close();
    }
  });
});

describe('P9: the record budget keeps every string', () => {
  it('four 64 KiB padding commands no longer push the command that ran into a digest', () => {
    const pad = `echo ${'A'.repeat(65_530)}`;
    const ran = 'call (int)system("touch /tmp/atk-p/root/pwned-cut")';
    const kept = redact({ id: 's1', commands: [pad, pad, pad, pad, ran] }) as { commands: string[] };
    // Before: `[51 characters in all, sha256 bedd2367…]`.
    expect(kept.commands[4]).toBe(ran);
    for (const c of kept.commands.slice(0, 4)) expect(c).toMatch(new RegExp(`^echo A+\\[cut: ${pad.length} characters in all, sha256 ${sha256Hex(pad)}\\]$`));
    const text = kept.commands.reduce((n, c) => n + c.replace(/\[cut: .*\]$/, '').length, 0);
    expect(text).toBeLessThanOrEqual(MAX_TEXT);
  });

  it('the share is fair, and past it every string keeps its head, its length and its SHA-256', () => {
    expect(fairShare([10, 20])).toBe(MAX_STRING);
    expect(fairShare([100, MAX_STRING, MAX_STRING, MAX_STRING, MAX_STRING, MAX_STRING])).toBe(Math.floor((MAX_TEXT - 100) / 5));
    // So many strings that their heads and notes pass MAX_RECORD: cut shorter (never under MIN_HEAD), each with its length and SHA-256.
    const many = Array.from({ length: 1000 }, (_, i) => `${i} ${'x'.repeat(600)}`);
    const kept = redact({ many }) as { many: string[] };
    const last = many[999]!;
    const head = /^(x*|\d+ x*)\[cut: (\d+) characters in all, sha256 ([0-9a-f]{64})\]$/.exec(kept.many[999]!);
    expect(head?.[1]!.length).toBeGreaterThanOrEqual(MIN_HEAD);
    expect(last.startsWith(head![1]!)).toBe(true);
    expect([Number(head![2]), head![3]]).toEqual([last.length, sha256Hex(last)]);
    expect(JSON.stringify(kept).length).toBeLessThanOrEqual(MAX_RECORD);
    // Even at MIN_HEAD each, 5,000 cut strings pass MAX_RECORD (attack 18ab C3): the record keeps the head of its JSON.
    const more = Array.from({ length: 5 }, (_, k) => Array.from({ length: 1000 }, (_, i) => `${k}.${i} ${'x'.repeat(200)}`));
    const cut = redact({ more }) as { '[cut]': string; head: string };
    expect(cut['[cut]']).toMatch(/over the 327680 this record keeps \(the most a record keeps\): their head follows/);
    expect(cut.head.startsWith('{"more":[["0.0 ')).toBe(true);
  });

  it("gdb's call takes commands of at most MAX_COMMAND_CHARS, which the audit keeps whole in any call", () => {
    const input = callTool({} as GdbContext).input;
    expect(input.command.safeParse('x'.repeat(MAX_COMMAND_CHARS)).success).toBe(true);
    const long = input.command.safeParse('x'.repeat(MAX_COMMAND_CHARS + 1));
    expect(long.success).toBe(false);
    expect(JSON.stringify(long.error?.issues)).toContain(`a GDB command is at most ${MAX_COMMAND_CHARS} characters`);
    expect(input.commands.safeParse(['ok', 'y'.repeat(MAX_COMMAND_CHARS + 1)]).success).toBe(false);
    // The longest call: MAX_COMMANDS commands of the longest length and a session id at its longest kept.
    expect(MAX_COMMANDS * MAX_COMMAND_CHARS + MAX_STRING).toBeLessThanOrEqual(MAX_TEXT);
    const commands = Array.from({ length: MAX_COMMANDS }, (_, i) => `${i} ${'c'.repeat(MAX_COMMAND_CHARS - 6)}`);
    const kept = redact({ id: 'i'.repeat(200_000), commands, wait: 1 }) as { commands: string[] };
    expect(kept.commands).toEqual(commands);
  });
});

describe('P8: a secret given as its own argv item is hidden', () => {
  const cases: Array<[string[], string[]]> = [
    [
      ['--password', 'hunter2', '-phunter3'],
      ['--password', '[REDACTED]', '-phunter3'],
    ],
    [
      ['--api-key', 'sk_test_abcdef123456'],
      ['--api-key', '[REDACTED]'],
    ],
    [
      ['curl', '-u', 'admin:hunter2', 'https://example.com'],
      ['curl', '-u', 'admin:[REDACTED]', 'https://example.com'],
    ],
    [
      ['mysql', '-uroot', '-phunter2'],
      ['mysql', '-uroot', '-p[REDACTED]'],
    ],
    [
      ['sshpass', '-p', 'hunter2', 'ssh', 'host'],
      ['sshpass', '-p', '[REDACTED]', 'ssh', 'host'],
    ],
    [
      ['redis-cli', '-a', 'hunter2', 'ping'],
      ['redis-cli', '-a', '[REDACTED]', 'ping'],
    ],
    [
      ['docker', 'login', '-u', 'me', '-p', 'hunter2', 'registry.example.com'],
      ['docker', 'login', '-u', 'me', '-p', '[REDACTED]', 'registry.example.com'],
    ],
    // An argv item is one value, blanks and all.
    [
      ['--password', 'two words'],
      ['--password', '[REDACTED]'],
    ],
  ];
  it.each(cases)('%j', (argv, stored) => {
    expect((redact({ program: 'p/prog', args: argv }) as { args: string[] }).args).toEqual(stored);
  });

  it('what names where a secret is, and options that are no password, are kept', () => {
    const kept: string[][] = [
      ['--password-file', '/etc/pw'],
      ['--token-path', '/run/token'],
      ['ls', '-a', '/tmp'],
      ['mysql', '-p', 'mydb'],
      ['break main', 'run', 'print token', 'continue'],
    ];
    for (const argv of kept) expect((redact({ args: argv }) as { args: string[] }).args).toEqual(argv);
    // An item's own secret is still hidden as before.
    expect((redact({ args: ['x', '--password=hunter2'] }) as { args: string[] }).args).toEqual(['x', '--password=[REDACTED]']);
  });

  it('the call entry the store keeps has the secret hidden', async () => {
    const store = new SqliteStore(path.join(await mkdtemp(path.join(tmp, 'p8-')), 'control.db'));
    const plane = new ControlPlane({ store, node: { id: 'n1' } });
    try {
      await (
        await plane.beginCall(KEY, { tool: 'debugger_launch', args: { program: 'p/prog', args: ['--api-key', 'sk_test_abcdef123456'] }, client: 'c/1', transport: 'http' })
      )({ ok: true });
      const entry = (await store.queryAudit({ keyId: KEY.id })).find((e: AuditRecord) => e.event === 'call')!;
      expect(entry.args).toEqual({ program: 'p/prog', args: ['--api-key', '[REDACTED]'] });
    } finally {
      await plane.close();
    }
  });
});
