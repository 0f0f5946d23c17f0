// Attack round 18aa (attacker a1): the audit's redaction was bounded in text only, so a million
// empty objects were redacted on the event loop and kept whole (A1), nesting past the measured depth
// was written and hashed on the loop (A5), one word of many secret hits took its redaction past the
// thread's 30 s and a call that then ran was audited as "[not kept]" (A3), and a name/value pair
// with a secret name kept its value (A4, the object form).
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { longestBlock } from '../../test/helpers/stall.js';
import { MAX_RECORD, MAX_VALUES, canonicalJson, redact, redactForAudit, redactWords } from './audit.js';
import { makeKey } from './keys.js';
import { ControlPlane } from './plane.js';
import { SqliteStore } from './sqlite.js';

let dir: string;
let plane: ControlPlane;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'debugkit-18aa-audit-'));
  plane = new ControlPlane({ store: new SqliteStore(path.join(dir, 'control.db')), node: { id: 'n1' } });
  plane.setCatalog([{ name: 'open', toolset: 'gdb', readOnly: false, scopes: [] }]);
});
afterAll(async () => {
  await plane.close();
  await rm(dir, { recursive: true, force: true });
});

/** How many values (of any kind) a JSON value holds. */
function countValues(value: unknown): number {
  if (value === null || typeof value !== 'object') return 1;
  return 1 + (Array.isArray(value) ? value : Object.values(value)).reduce((n: number, v) => n + countValues(v), 0);
}

describe('attack 18aa A1, A5: a record is bounded in values, and what is not small never holds the loop', () => {
  it('A1: a million empty objects are not "small": redacted off the loop, and kept as at most MAX_VALUES values', async () => {
    const big = { x: Array.from({ length: 1000 }, () => Array.from({ length: 1000 }, () => ({}))) };
    // As for a call that runs: a refused call's record is cut to MAX_REFUSED_RECORD first (attack e1-4), this note past its head.
    const { value, turns } = await longestBlock(() => redactForAudit(big, 'a1'));
    // Before: kept whole, 1,001,001 values and 3 MB an entry.
    expect(countValues(value)).toBeLessThanOrEqual(MAX_VALUES + 2_000);
    expect(canonicalJson(value).length).toBeLessThan(200_000);
    expect(JSON.stringify(value)).toMatch(/cut: the record keeps 10000 values; \d+ more here, sha256 [0-9a-f]{64}/);
    // Redacted on the loop (before) is one block: a turn or two of the probe. Written in slices and redacted on the thread: many.
    expect(turns).toBeGreaterThan(5);
  }, 60_000);

  it('A1: numbers and nulls count as values too (a record of 5,000 numbers is not redacted on the loop)', async () => {
    const numbers = { n: Array.from({ length: 900 }, () => Array.from({ length: 900 }, (_, i) => (i % 2 ? i : null))) };
    const { value, turns } = await longestBlock(() => redactForAudit(numbers, 'a1'));
    expect(countValues(value)).toBeLessThanOrEqual(MAX_VALUES + 2_000);
    // Redacted on the loop (before) is one block: a turn or two of the probe. Written in slices and redacted on the thread: many.
    expect(turns).toBeGreaterThan(5);
  }, 60_000);

  it('A5: a large object below the measured depth goes to the thread, not written and hashed on the loop', async () => {
    let deep: unknown = { wide: Object.fromEntries(Array.from({ length: 200_000 }, (_, i) => [`k${i}`, i])) };
    for (let i = 0; i < 20; i++) deep = { a: deep };
    const { value, turns } = await longestBlock(() => redactForAudit(deep, 'a5', true));
    expect(JSON.stringify(value)).toMatch(/nested too deep, sha256 [0-9a-f]{64}/);
    // Redacted on the loop (before) is one block: a turn or two of the probe. Written in slices and redacted on the thread: many.
    expect(turns).toBeGreaterThan(5);
  }, 60_000);
});

describe('attack 18aa A3: many secret hits in one word are redacted in linear time; a call whose arguments cannot be redacted is not run', () => {
  it("four 64 KiB words of `'-p` after mysql are redacted (before: past the thread's 30 s, and the call ran audited as [not kept])", async () => {
    const word = "'-p".repeat(21_845);
    const args = { program: 'echo', args: ['mysql', word, word, word, word, '--the-real-flag=evil'] };
    const value = (await redactForAudit(args, 'a3')) as { args: string[] };
    expect(value.args.at(-1)).toBe('--the-real-flag=evil');
    expect(value).toEqual(redact(args));
    // Linear: 8 times the hits cost about 8 times as much, not 64 times.
    const time = (n: number) => {
      const w = "'-p".repeat(n);
      const t = performance.now();
      redactWords(['mysql', w]);
      return performance.now() - t;
    };
    time(2_000);
    const small = Math.max(time(2_000), time(2_000), 0.5);
    // The least of three runs: one scheduling stall or GC pause on a loaded host is not the algorithm's cost (quadratic would be 64x).
    expect(Math.min(time(16_000), time(16_000), time(16_000))).toBeLessThan(small * 30);
  }, 60_000);

  it('arguments that cannot be redacted refuse the call (beginCall throws), and the audit keeps the refusal', async () => {
    const made = makeKey({ name: 'a3', scopes: 'gdb' });
    await plane.store.createKey(made.record, made.hash);
    const auth = await plane.authenticate(`Bearer ${made.secret}`);
    if (!('key' in auth)) throw new Error('authentication failed');
    // A cycle: no JSON for it, so no redaction (a client's JSON cannot hold one; this is how the thread's failure is reached here).
    const cyclic: Record<string, unknown> = { program: 'echo' };
    let inner: Record<string, unknown> = cyclic;
    for (let i = 0; i < 20; i++) inner = inner.next = {};
    inner.back = cyclic;
    await expect(plane.beginCall(auth.key, { tool: 'open', args: cyclic, client: 'a3', transport: 'http', session: null })).rejects.toThrow(
      /could not be redacted for the audit.*the call was not run/,
    );
    const entries = (await plane.queryAudit({ keyId: auth.key.id })).entries;
    expect(entries.map((e) => [e.event, e.outcome])).toEqual([['denied', 'refused']]);
    expect(JSON.stringify(entries[0]!.args)).toMatch(/\[not kept\].*circular/);
  });
});

describe('attack 18aa A4 (objects): a name/value pair with a secret name hides its value, and keeps its name', () => {
  it('Kubernetes and ECS env entries, name or key', () => {
    const env = [
      { name: 'DB_PASSWORD', value: 'hunter2' },
      { key: 'API_TOKEN', value: 'tok-123' },
      { Name: 'AWS_SECRET_ACCESS_KEY', Value: 'wJalr' },
      { name: 'HOME', value: '/root' },
    ];
    expect(redact({ env })).toEqual({
      env: [
        { name: 'DB_PASSWORD', value: '[REDACTED]' },
        { key: 'API_TOKEN', value: '[REDACTED]' },
        { Name: 'AWS_SECRET_ACCESS_KEY', Value: '[REDACTED]' },
        { name: 'HOME', value: '/root' },
      ],
    });
  });

  it('argv: aws configure set, htpasswd -b, openssl pass: with blanks, and a program given apart from its args', () => {
    expect(redactWords(['aws', 'configure', 'set', 'aws_secret_access_key', 'hunter4'])).toEqual(['aws', 'configure', 'set', 'aws_secret_access_key', '[REDACTED]']);
    expect(redactWords(['htpasswd', '-b', 'users', 'admin', 'hunter5'])).toEqual(['htpasswd', '-b', 'users', 'admin', '[REDACTED]']);
    const openssl = redactWords(['openssl', 'enc', '-passin', 'pass:my pass phrase']);
    expect(openssl.join(' ')).not.toMatch(/phrase/);
    expect(redact({ program: 'mysql', args: ['-uroot', '-phunter6', 'shop'] })).toEqual({ program: 'mysql', args: ['-uroot', '-p[REDACTED]', 'shop'] });
    expect(redact({ program: '/usr/bin/htpasswd', args: ['-b', 'users', 'admin', 'hunter7'] })).toEqual({ program: '/usr/bin/htpasswd', args: ['-b', 'users', 'admin', '[REDACTED]'] });
    // A script's arguments stay what they are: the word that runs is kept.
    const script = ['sh', '-c', 'eval "$4"', 'configure', 'set', 'password', 'touch x'];
    expect(redactWords(script)).toEqual(script);
    expect(redact({ program: 'echo', args: ['plain', 'words'] })).toEqual({ program: 'echo', args: ['plain', 'words'] });
  });
});

describe('attack 18ab (attacker c1): what the first fixes missed', () => {
  it('C1: a container past MAX_ITEMS is not small (its rest is written and hashed): redacted off the loop', async () => {
    const long = { n: Array.from({ length: 1_000_000 }, (_, i) => i) };
    const { value, turns } = await longestBlock(() => redactForAudit(long, 'c1', true));
    expect(JSON.stringify(value)).toMatch(/cut: 1000000 items in all, sha256 [0-9a-f]{64}/);
    // Before: 1,001 values measured, "small", and the million written and hashed in one block of the loop.
    expect(turns).toBeGreaterThan(5);
  }, 60_000);

  it('C2: many names that read alike once redacted are numbered in linear time', () => {
    const names = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`token=${i.toString(36).padStart(3, '0')}`, i]));
    const out = redact(names(1000)) as Record<string, number>;
    expect(Object.keys(out).slice(0, 3)).toEqual(['token=[REDACTED]', 'token=[REDACTED] (2)', 'token=[REDACTED] (3)']);
    expect(Object.keys(out)).toHaveLength(1000);
    expect(out).toHaveProperty(['token=[REDACTED] (1000)']);
    // Counted, not timed: each name looked up while numbering (quadratic numbering looked ~500,000 times for 1,000 names).
    const own = Object.prototype.hasOwnProperty;
    let looks = 0;
    Object.prototype.hasOwnProperty = function (this: object, key: PropertyKey) {
      looks++;
      return own.call(this, key);
    };
    try {
      redact(names(1000));
    } finally {
      Object.prototype.hasOwnProperty = own;
    }
    expect(looks).toBeLessThan(10_000);
  });

  it('C3: the notes and labels count too: a record is at most MAX_RECORD characters of JSON', () => {
    // Labels: a `-p` hit every 3 characters becomes a 10-character label. Redacted again with half the budget until it fits:
    // every value stays, each shorter (before: 961 KB kept).
    const word = "'-p".repeat(21_845);
    const labels = redact({ args: ['mysql', word, word, word, word, '--the-real-flag=evil'] }) as { args: string[] };
    expect(JSON.stringify(labels).length).toBeLessThanOrEqual(MAX_RECORD);
    expect(labels.args.at(-1)).toBe('--the-real-flag=evil');
    // Notes: 10,000 strings cut to their head of 64 each carry a note of ~95: past MAX_RECORD however short, the head of the JSON is kept.
    const many = { args: Array.from({ length: 40 }, (_, i) => Array.from({ length: 250 }, (_, j) => `${i}.${j} ${'x'.repeat(400)}`)) };
    const json = JSON.stringify(redact(many));
    expect(json.length).toBeLessThanOrEqual(MAX_RECORD + 200);
    expect(json).toMatch(/the redacted arguments are \d+ characters of JSON, over the 327680 this record keeps \(the most a record keeps\)/);
  });

  it('C4: a key revoked while its call waited is refused before the call is recorded and run', async () => {
    const made = makeKey({ name: 'c4', scopes: 'gdb' });
    await plane.store.createKey(made.record, made.hash);
    const auth = await plane.authenticate(`Bearer ${made.secret}`);
    if (!('key' in auth)) throw new Error('authentication failed');
    await plane.store.revokeKey(made.record.id, new Date().toISOString());
    await expect(plane.beginCall(auth.key, { tool: 'open', args: { program: 'echo' }, client: 'c4', transport: 'http', session: null })).rejects.toThrow(/was revoked at .*the call was not run/);
    const entries = (await plane.queryAudit({ keyId: made.record.id })).entries;
    expect(entries.map((e) => [e.event, e.outcome])).toEqual([['denied', 'refused']]);
  });
});
