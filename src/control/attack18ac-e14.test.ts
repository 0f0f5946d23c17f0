// Attack round 18ac (attacker e1), e1-4: the audit grew ~30 times what a key sent. A value nested
// 16 deep is kept as a note of ~93 characters (its size and SHA-256), so 3 × 1,000 empty arrays
// at that depth (9,091 characters of arguments) were a record of 279,091, and a batch of 100 such
// calls refused for their scope added 27 MB to the audit. A record is now at most RECORD_GROWTH
// times its arguments' JSON plus RECORD_SLACK (MAX_REFUSED_RECORD for a refused call), runs of
// the same note folded into one first.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson, MAX_REFUSED_RECORD, RECORD_GROWTH, RECORD_SLACK, redactForAudit, sha256Hex } from './audit.js';
import { makeKey } from './keys.js';
import { ControlPlane } from './plane.js';
import { SqliteStore } from './sqlite.js';

let dir: string;
let plane: ControlPlane;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'debugkit-18ac-audit-'));
  plane = new ControlPlane({ store: new SqliteStore(path.join(dir, 'control.db')), node: { id: 'n1' } });
  plane.setCatalog([{ name: 'open', toolset: 'gdb', readOnly: false, scopes: [] }]);
});
afterAll(async () => {
  await plane.close();
  await rm(dir, { recursive: true, force: true });
});

function deep(leaf: unknown, depth: number): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

/** The report's amp.mjs arguments: 3 arrays 15 deep, each holding 1,000 empty arrays (nested 16 deep, too deep to keep); `depth` 12 under open's `mocks` (amp2.mjs). */
const amp = (depth = 13) => ({
  m: [0, 1, 2].map(() =>
    deep(
      Array.from({ length: 1000 }, () => []),
      depth,
    ),
  ),
});
/** The same with each deep value different ([0], [1], ...): their notes differ, nothing folds. */
const distinct = (depth = 13) => ({
  m: [0, 1, 2].map((j) =>
    deep(
      Array.from({ length: 1000 }, (_, i) => [j * 1000 + i]),
      depth,
    ),
  ),
});

describe('attack 18ac e1-4: a record of arguments is never much larger than their own JSON', () => {
  it("the report's amp shape: runs of the same note fold into one, the record smaller than its input (before: 279,091 characters for 9,091)", async () => {
    const args = amp();
    const input = JSON.stringify(args).length;
    expect(input).toBe(9091);
    for (const refused of [true, false]) {
      const json = JSON.stringify(await redactForAudit(args, 'e1-4', refused));
      expect(json.length).toBeLessThanOrEqual(2 * input + 1024);
      expect(json.match(/\[1000 × nested too deep, sha256 [0-9a-f]{64}\]/g)).toHaveLength(3);
    }
  });

  it('notes that differ: the head of the redacted JSON within RECORD_GROWTH × input + RECORD_SLACK, or MAX_REFUSED_RECORD when refused', async () => {
    const args = distinct();
    const input = JSON.stringify(args).length;
    const ran = JSON.stringify(await redactForAudit(args, 'e1-4'));
    // The head (a string of JSON, its quotes escaped) and the note saying what was cut: a constant more.
    expect(ran.length).toBeLessThanOrEqual(RECORD_GROWTH * input + RECORD_SLACK + 1024);
    expect(ran).toContain(`over the ${RECORD_GROWTH * input + RECORD_SLACK} this record keeps (${RECORD_GROWTH} times the ${input} characters of the arguments' own JSON, plus ${RECORD_SLACK})`);
    expect(JSON.parse(ran)).toMatchObject({ arguments_json_chars: input, head: expect.stringMatching(/^\{"m":\[\[\[\[/) });
    const refused = JSON.stringify(await redactForAudit(args, 'e1-4', true));
    expect(refused.length).toBeLessThanOrEqual(MAX_REFUSED_RECORD + 1024);
    expect(refused).toContain(`over the ${MAX_REFUSED_RECORD} this record keeps (the most the record of a refused call keeps)`);
  });

  it('a cut record keeps secrets hidden: its head is of the redacted JSON, and no digest of the arguments is kept', async () => {
    const args = { command: 'curl -u admin:Hunter2Secret https://x', env: ['DB_PASSWORD=Hunter2Secret'], ...distinct() };
    const json = JSON.stringify(await redactForAudit(args, 'e1-4', true));
    expect(json).toMatch(/their head follows/);
    expect(json).toContain('[REDACTED]');
    expect(json).not.toContain('Hunter2Secret');
    expect(json).not.toContain(sha256Hex(JSON.stringify(args)));
    expect(json).not.toContain(sha256Hex(canonicalJson(args)));
  });

  it('100 calls refused for their scope (the report: +27 MB of audit for a 0.9 MB batch) add at most about their own size', async () => {
    const made = makeKey({ name: 'e14', scopes: 'gdb:read' });
    await plane.store.createKey(made.record, made.hash);
    const auth = await plane.authenticate(`Bearer ${made.secret}`);
    if (!('key' in auth)) throw new Error('authentication failed');
    const refusal = plane.authorizeTool(auth.key, 'open')!;
    expect(refusal.code).toBe(-32003);
    let sent = 0;
    for (let i = 0; i < 100; i++) {
      // amp2.mjs: open's arguments with mocks holding 3 × 1,000 empty arrays 16 deep; half of them all different.
      const args = { program: 'app.py', mocks: i % 2 ? amp(12) : distinct(12) };
      sent += JSON.stringify(args).length;
      await plane.recordDenied(auth.key, { tool: 'open', args, client: 'e1-4', transport: 'http', session: null }, refusal);
    }
    const entries = (await plane.queryAudit({ keyId: auth.key.id, limit: 1000 })).entries;
    expect(entries).toHaveLength(100);
    const kept = entries.reduce((n, e) => n + canonicalJson(e.args).length, 0);
    // Before: ~28 MB kept for ~1.1 MB sent.
    expect(kept).toBeLessThanOrEqual(2 * sent);
  }, 120_000);
});
