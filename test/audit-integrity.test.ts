// Issue 18, "One long string freezes the server" and "The audit can be broken, shortened and
// blinded", end to end: real `debugkit serve` processes on SQLite and PostgreSQL, real gdb, the real
// `debugkit audit` commands. The store-level twins (both stores) are in src/control/anchor.test.ts,
// the redactor's in src/control/audit.test.ts.
import { copyFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCheckpointFile } from '../src/control/anchor.js';
import { bodyOf, canonicalJson, chainHash, sha256Hex, type AuditRecord } from '../src/control/audit.js';
import { auditFromRow } from '../src/control/sqlite.js';
import { pollUntil } from '../src/core/wait.js';
import { startPostgres, type RunningPostgres } from '../src/toolsets/mocks/postgres/testing.js';
import { createKey, rpc, runCli, startNode, tempDataDir, type Node } from './helpers/control.js';
import { tempDir } from './helpers/programs.js';

const require = createRequire(import.meta.url);
const Database = require('better-sqlite3');

/** The workspace root, and a directory outside it for the markers commands create. */
const root = tempDir('debugkit-audit18-root-');
const host = tempDir('debugkit-audit18-host-');

let data: Awaited<ReturnType<typeof tempDataDir>>;
let store: string[];
let node: Node;
let reader: { key: string; id: string };
let other: { key: string; id: string };
let shell: { key: string; id: string };

beforeAll(async () => {
  data = await tempDataDir();
  store = ['--data-dir', data.dir];
  reader = await createKey(store, 'reader', 'gdb:read', ['--rate', 'unlimited']);
  other = await createKey(store, 'other', 'gdb:read', ['--rate', 'unlimited']);
  shell = await createKey(store, 'shell', 'gdb,gdb:shell', ['--rate', 'unlimited']);
  node = await startNode([...store, '--root', root, '--allow-gdb-shell']);
}, 120_000);

/** SIGTERM, then SIGKILL if the server does not exit (a server stuck in a regex never runs its handler). */
async function stop(n: Node | undefined): Promise<void> {
  if (!n || n.proc.exitCode !== null || n.proc.signalCode !== null) return;
  const exited = new Promise((r) => n.proc.once('exit', r));
  n.proc.kill('SIGTERM');
  const timer = setTimeout(() => n.proc.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

afterAll(async () => {
  await stop(node);
  await data?.cleanup();
  rmSync(root, { recursive: true, force: true });
  rmSync(host, { recursive: true, force: true });
});

let nextId = 1;
type Answer = { error?: { code: number; message: string }; result?: any };

/** A plain JSON-RPC tools/call (no MCP session). */
async function call(key: string, name: string, args: object, url = node.url): Promise<Answer> {
  return (await rpc(url, key, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args } })).body;
}

async function auditOf(args = store): Promise<any[]> {
  const r = await runCli(['audit', 'export', ...args]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000): Promise<T> {
  let value: T | undefined;
  const found = await pollUntil(async () => (value = await probe()) !== undefined, { timeoutMs, intervalMs: 25 });
  if (!found) throw new Error(`timed out waiting for ${what}`);
  return value!;
}

describe('one long string does not freeze the server', () => {
  it("while a key sends arguments of 200,000 characters and more (refused for scope, an unknown tool, allowed), another key's pings are answered at once", async () => {
    const ping = async (): Promise<number> => {
      const started = performance.now();
      const r = await rpc(node.url, other.key, { jsonrpc: '2.0', id: nextId++, method: 'ping' });
      expect(r.status).toBe(200);
      return performance.now() - started;
    };
    const baseline: number[] = [];
    for (let i = 0; i < 10; i++) baseline.push(await ping());
    const typical = baseline.sort((a, b) => a - b)[5]!;
    // Generous against a loaded machine; the redactor took ~14 s on 100,000 characters before.
    const bound = Math.max(20 * typical, typical + 1000);

    const big = 'a'.repeat(200_000);
    const attempts: Array<[string, object, (a: Answer) => void]> = [
      ['refused for its scope (audited as denied)', { name: 'call', arguments: { id: 'x', command: big } }, (a) => expect(a.error?.code).toBe(-32003)],
      ['an unknown tool with a long name', { name: `list_sessions${big}`, arguments: {} }, (a) => expect(a.error?.code).toBe(-32602)],
      // Allowed for the key and audited with its arguments (the session is unknown: a tool result saying so). Arguments a
      // tool does not take are refused before the audit, so the long text rides in one it takes.
      ['allowed, long arguments', { name: 'gdb_program_output', arguments: { id: `${big} x://${big} dk_-${big}` } }, (a) => expect(a.result?.content).toBeDefined()],
      ['allowed, near the body limit', { name: 'gdb_program_output', arguments: { id: `x://${'a'.repeat(3_500_000)}` } }, (a) => expect(a.result?.content).toBeDefined()],
    ];
    for (const [what, params, check] of attempts) {
      let done = false;
      const latencies: number[] = [];
      const pinger = (async () => {
        // A ping the server dropped (it stalled past its timeouts) counts as never answered.
        while (!done) latencies.push(await ping().catch(() => Infinity));
      })();
      const started = performance.now();
      const res = await fetch(node.url, {
        method: 'POST',
        headers: { Authorization: `Bearer ${reader.key}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method: 'tools/call', params }),
        signal: AbortSignal.timeout(15_000),
      }).catch((err: Error) => err);
      const bigMs = performance.now() - started;
      done = true;
      await pinger;
      expect(res, what).toBeInstanceOf(Response);
      check((await (res as Response).json()) as Answer);
      expect(bigMs, `${what}: the request itself took ${Math.round(bigMs)} ms`).toBeLessThan(5000);
      expect(Math.max(...latencies), `${what}: pings took ${latencies.map(Math.round).join(', ')} ms (typical ${Math.round(typical)} ms)`).toBeLessThan(bound);
    }

    // What was refused is in the audit, cut with its length and SHA-256: to its share of the 16 KiB of text the last
    // redaction pass keeps (less the 10 characters of "id", "command" and "x"), a refused call's record being at most
    // MAX_REFUSED_RECORD (attack 18ac e1-4).
    const denied = (await auditOf()).find((e) => e.key_id === reader.id && e.event === 'denied' && e.tool === 'call');
    expect(denied.args.command).toBe(`${big.slice(0, 16374)}[cut: 200000 characters in all, sha256 ${sha256Hex(big)}]`);
  }, 180_000);
});

// The attacker's two tests (issue 17's attack, kept for issue 18): the audit must record what ran.
describe('the audit records what a call ran', () => {
  async function gdbSession(key: string): Promise<string> {
    const answer = await call(key, 'open', {});
    const id = answer.result?.structuredContent?.content?.id;
    if (typeof id !== 'string') throw new Error(`open failed: ${JSON.stringify(answer)}`);
    return id;
  }

  /** The `call` entry of the audit whose command contains `needle`, as recorded. */
  async function recorded(keyId: string, needle: string): Promise<string> {
    const entries = (await auditOf()).filter((e) => e.key_id === keyId && e.event === 'call' && e.tool === 'call');
    const hit = entries.find((e) => String(e.args?.command ?? '').includes(needle));
    return String(hit?.args?.command ?? `(no entry with ${needle})`);
  }

  it('a shell command hidden as the value of a NAME=value pair whose name looks secret is recorded (it was stored as [REDACTED])', async () => {
    const id = await gdbSession(shell.key);
    const marker = path.join(host, 'marker-audit-redact');
    const answer = await call(shell.key, 'call', { id, command: `shell MY_TOKEN="$(touch ${marker})" true # audit-redact` });
    expect(answer.error).toBeUndefined();
    expect(existsSync(marker), 'the command ran').toBe(true);
    await call(shell.key, 'close', { id });
    expect(await recorded(shell.id, 'audit-redact')).toContain(`touch ${marker}`);
  });

  it('a command padded past 2,000 characters is recorded with its end, what ran (it was cut)', async () => {
    const id = await gdbSession(shell.key);
    const marker = path.join(host, 'marker-audit-pad');
    const answer = await call(shell.key, 'call', { id, command: `shell true audit-pad${' '.repeat(2100)}; touch ${marker}` });
    expect(answer.error).toBeUndefined();
    expect(existsSync(marker), 'the command ran').toBe(true);
    await call(shell.key, 'close', { id });
    expect(await recorded(shell.id, 'audit-pad')).toContain(`touch ${marker}`);
  });

  it("a password after -p and a signed URL's signature are not stored; the command around them is", async () => {
    const id = await gdbSession(shell.key);
    await call(shell.key, 'call', { id, command: 'shell true mysql -uroot -phunter2 shop # audit-mysql-p' });
    await call(shell.key, 'call', { id, command: 'shell true curl "https://b.s3.amazonaws.com/o?X-Amz-Signature=f00dfeed&X-Amz-Date=1" # audit-sig' });
    await call(shell.key, 'close', { id });
    expect(await recorded(shell.id, 'audit-mysql-p')).toBe('shell true mysql -uroot -p[REDACTED] shop # audit-mysql-p');
    expect(await recorded(shell.id, 'audit-sig')).toBe('shell true curl "https://b.s3.amazonaws.com/o?X-Amz-Signature=[REDACTED]&X-Amz-Date=1" # audit-sig');
  });
});

/** A tool name, a debug session id and an MCP client's name, each with a lone UTF-16 surrogate. */
async function callsWithLoneSurrogates(url: string, key: string): Promise<void> {
  const unknown = await call(key, 'list_sessions\ud800', {}, url);
  expect(unknown.error?.code).toBe(-32602);
  const closed = await call(key, 'close', { id: 'no-such-session\udc00' }, url);
  expect(JSON.stringify(closed)).not.toMatch(/audit log cannot be written/);
  const init = await fetch(url, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'agent\ud83d', version: '1' } } }),
  });
  await init.text();
  const sid = init.headers.get('mcp-session-id')!;
  const headers = { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18' };
  await rpc(url, key, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
  const listed = await rpc(url, key, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 'list_sessions', arguments: {} } }, headers);
  expect(JSON.stringify(listed.body)).not.toMatch(/audit log cannot be written/);
  expect(listed.body.result?.isError).toBeFalsy();
}

function expectRecordedAsStored(entries: any[], keyId: string): void {
  const mine = entries.filter((e) => e.key_id === keyId);
  expect(mine.some((e) => e.event === 'denied' && e.tool === 'list_sessions\\ud800')).toBe(true);
  expect(mine.some((e) => e.tool === 'close' && e.debug_session === 'no-such-session\\udc00')).toBe(true);
  expect(mine.some((e) => e.tool === 'list_sessions' && e.client === 'agent\\ud83d/1')).toBe(true);
}

describe('a lone surrogate does not break the chain', () => {
  it('SQLite: a tool name, a debug session id and clientInfo.name with one are recorded as stored (as their escapes) and the chain verifies', async () => {
    await callsWithLoneSurrogates(node.url, shell.key);
    const verify = await runCli(['audit', 'verify', ...store]);
    expect(verify.stdout).toMatch(/^audit chain OK: \d+ entries verified/); // was BROKEN for good: U+FFFD stored, the original hashed
    expect(verify.code).toBe(0);
    expectRecordedAsStored(await auditOf(), shell.id);
  });

  it('PostgreSQL: the same calls are recorded (they were refused: the audit could not be written) and the chain verifies', async () => {
    let pg: RunningPostgres | undefined;
    let pgNode: Node | undefined;
    const pgData = await tempDataDir();
    try {
      pg = await startPostgres();
      const pgStore = ['--store', `postgres://${pg.user}:${pg.password}@127.0.0.1:${pg.port}/postgres`, '--data-dir', pgData.dir];
      const k = await createKey(pgStore, 'pg-shell', 'gdb', ['--rate', 'unlimited']);
      pgNode = await startNode([...pgStore, '--root', root]);
      await callsWithLoneSurrogates(pgNode.url, k.key);
      expectRecordedAsStored(await auditOf(pgStore), k.id);
      const verify = await runCli(['audit', 'verify', ...pgStore]);
      expect(verify.stdout).toMatch(/^audit chain OK: \d+ entries verified/);
      expect(verify.stdout).toMatch(/keyed: every entry is hashed with the audit key/);
      expect(verify.code).toBe(0);
    } finally {
      await stop(pgNode);
      await pg?.stop();
      await pgData.cleanup();
    }
  }, 120_000);
});

describe('the head is anchored outside the database', () => {
  /** A copy of the store as someone who can write the database (not the key or checkpoint) leaves it. */
  async function copyOfStore(name: string, withCheckpoint: boolean): Promise<string> {
    const copy = path.join(data.dir, name);
    mkdirSync(copy);
    const src = new Database(path.join(data.dir, 'control.db'));
    await src.backup(path.join(copy, 'control.db'));
    src.close();
    copyFileSync(path.join(data.dir, 'audit.key'), path.join(copy, 'audit.key'));
    if (withCheckpoint) copyFileSync(path.join(data.dir, 'control.db-audit-head'), path.join(copy, 'control.db-audit-head'));
    return copy;
  }

  function tamper(dir: string, fn: (db: any) => void): void {
    const db = new Database(path.join(dir, 'control.db'));
    fn(db);
    db.close();
  }

  it('verify of a store that is not there is an error and creates nothing', async () => {
    const missing = path.join(data.dir, 'nothing-here', 'nested');
    const r = await runCli(['audit', 'verify', '--data-dir', missing]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/there is no control database at .*nothing-here\/nested\/control\.db/);
    expect(existsSync(path.join(data.dir, 'nothing-here'))).toBe(false);
    const exported = await runCli(['audit', 'export', '--data-dir', missing]);
    expect(exported.code).not.toBe(0);
    expect(existsSync(path.join(data.dir, 'nothing-here'))).toBe(false);
  });

  it('the server keys its entries and keeps a checkpoint beside the store; removing the last entries, every entry, or re-hashing shows', async () => {
    // Everything the server wrote is in the checkpoint file before the store is copied.
    const head = (await auditOf()).at(-1)!;
    const checkpointFile = path.join(data.dir, 'control.db-audit-head');
    await until('the checkpoint to reach the head', () => (readCheckpointFile(checkpointFile)?.seq === head.seq ? true : undefined));
    const ok = await runCli(['audit', 'verify', ...store]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/keyed: every entry is hashed with the audit key/);
    expect(ok.stdout).toMatch(new RegExp(`checkpoint: entry ${head.seq} matches .*control\\.db-audit-head`));

    const cut = await copyOfStore('cut', true);
    tamper(cut, (db) => db.prepare('DELETE FROM audit WHERE seq > ?').run(head.seq - 2));
    const v1 = await runCli(['audit', 'verify', '--data-dir', cut]);
    expect(v1.code).toBe(1);
    expect(v1.stdout).toMatch(
      new RegExp(`BROKEN at entry ${head.seq - 1}: entries missing from the end: the chain ends at entry ${head.seq - 2}, but the checkpoint in .* names entry ${head.seq} \\(truncated\\)`),
    );

    const emptied = await copyOfStore('emptied', true);
    tamper(emptied, (db) => db.prepare('DELETE FROM audit').run());
    expect((await runCli(['audit', 'verify', '--data-dir', emptied])).stdout).toMatch(/BROKEN at entry 1: entries missing from the end: the chain is empty/);

    const rehashed = await copyOfStore('rehashed', true);
    tamper(rehashed, (db) => {
      const rows = (db.prepare('SELECT * FROM audit ORDER BY seq').all() as Record<string, unknown>[]).map(auditFromRow) as AuditRecord[];
      let prev = rows[1]!.hash;
      rows[2]!.tool = 'innocent';
      for (const r of rows.slice(2)) {
        r.prev_hash = prev;
        r.hash = chainHash(prev, r.seq, sha256Hex(canonicalJson(bodyOf(r))));
        prev = r.hash;
        db.prepare('UPDATE audit SET tool = ?, prev_hash = ?, hash = ? WHERE seq = ?').run(r.tool, r.prev_hash, r.hash, r.seq);
      }
    });
    expect((await runCli(['audit', 'verify', '--data-dir', rehashed])).stdout).toMatch(
      /BROKEN at entry 3: hashed without the audit key, after entries hashed with it from entry 1: the chain was re-hashed from here/,
    );
  });

  it('audit checkpoint prints the head for the operator to keep; verify --checkpoint finds entries removed from the end of a copy with no checkpoint file', async () => {
    const printed = await runCli(['audit', 'checkpoint', ...store]);
    expect(printed.code, printed.stderr).toBe(0);
    const value = printed.stdout.trim();
    expect(value).toMatch(/^\d+:[0-9a-f]{64}$/);
    const seq = Number(value.split(':')[0]);
    const copy = await copyOfStore('no-checkpoint', false);
    tamper(copy, (db) => db.prepare('DELETE FROM audit WHERE seq > ?').run(seq - 3));
    const blind = await runCli(['audit', 'verify', '--data-dir', copy]);
    expect(blind.code).toBe(0); // nothing beside this copy tells; it says so
    expect(blind.stdout).toMatch(/no checkpoint: entries removed from the end could not be told/);
    const anchored = await runCli(['audit', 'verify', '--data-dir', copy, '--checkpoint', value]);
    expect(anchored.code).toBe(1);
    expect(anchored.stdout).toMatch(
      new RegExp(`BROKEN at entry ${seq - 2}: entries missing from the end: the chain ends at entry ${seq - 3}, but the checkpoint in --checkpoint ${value} names entry ${seq}`),
    );
    // Without its key, a keyed chain is not verified as if it were unkeyed: verify says what it needs.
    rmSync(path.join(copy, 'audit.key'));
    const keyless = await runCli(['audit', 'verify', '--data-dir', copy]);
    expect(keyless.code).not.toBe(0);
    expect(keyless.stderr).toMatch(/the audit chain is keyed \(audit key [0-9a-f]+\), but there is no key file .*audit\.key: give it with --audit-key-file/);
  });
});
