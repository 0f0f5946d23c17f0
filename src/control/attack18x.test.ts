// Attack 18x V2: the audit redacted every call's arguments on the event loop, refused calls too:
// four argv words of 65,000 characters of `mysql -pX ` took 200-300 ms of the loop each, and one
// JSON-RPC batch of 15 such calls, from a key without the tool's scope, held every other client
// ~3 s. A record with much text is now redacted on a worker thread (redactForAudit).
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { longestBlock } from '../../test/helpers/stall.js';
import { redactText } from '../core/secrets.js';
import { canonicalJson, MAX_REFUSED_RECORD, redact, redactForAudit, redactWords, sha256Hex } from './audit.js';
import { makeKey } from './keys.js';
import { ControlPlane } from './plane.js';
import { SqliteStore } from './sqlite.js';

let dir: string;
let plane: ControlPlane;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'debugkit-18x-audit-'));
  plane = new ControlPlane({ store: new SqliteStore(path.join(dir, 'control.db')), node: { id: 'n1' } });
  plane.setCatalog([{ name: 'python_start_session', toolset: 'python', readOnly: false, scopes: [] }]);
});
afterAll(async () => {
  await plane.close();
  await rm(dir, { recursive: true, force: true });
});

/** The attack's arguments: four argv words of 65,000 characters of `mysql -pX `. */
const heavy = (i: number) => ({ entry: `p${i}.py`, args: Array.from({ length: 4 }, (_, k) => `${k}${i} ${'mysql -pX '.repeat(6500)}`) });

describe('attack 18x V2: redaction of large arguments never holds the event loop', () => {
  it('a refused batch of 15 calls of large argv is redacted off the loop, and its digest is of the calls as redacted', async () => {
    const made = makeKey({ name: 'reader', scopes: 'debugger:read' });
    await plane.store.createKey(made.record, made.hash);
    const auth = await plane.authenticate(`Bearer ${made.secret}`);
    if (!('key' in auth)) throw new Error('authentication failed');
    const calls = Array.from({ length: 15 }, (_, i) => ({ tool: 'python_start_session', args: heavy(i), client: 'attacker', transport: 'http' as const, session: null }));
    // What one record's redaction costs on this host, done on the loop as it was before.
    const started = performance.now();
    // A refused call's record keeps MAX_REFUSED_RECORD characters at most (attack e1-4).
    const expected = calls.map((c) => [c.tool, redact(c.args, { max: MAX_REFUSED_RECORD })]);
    const inline = performance.now() - started;
    const refusal = { code: -32029, status: 429, message: 'rate limit' };
    const { longest, turns } = await longestBlock(() => plane.recordDeniedBatch(auth.key, calls, refusal));
    // Before: no turn while the 15 calls were redacted (the whole batch was one block, ~3 s on the
    // attacker's host); yielding between the calls alone gives one turn a call, 15 in all.
    expect(turns).toBeGreaterThan(150);
    expect(longest).toBeLessThan(inline / 4);
    const [entry] = (await plane.queryAudit({ keyId: auth.key.id })).entries.filter((e) => e.event === 'denied');
    expect(entry!.args).toMatchObject({ refused_calls: 15, calls_sha256: sha256Hex(canonicalJson(expected)) });
  });

  it('attack 18y W1: calls of small arguments audited one after another give the loop a turn each', async () => {
    const made = makeKey({ name: 'reader-w1', scopes: 'debugger:read' });
    await plane.store.createKey(made.record, made.hash);
    const auth = await plane.authenticate(`Bearer ${made.secret}`);
    if (!('key' in auth)) throw new Error('authentication failed');
    const args = { program: 'p', args: Array.from({ length: 4 }, () => 'X-Api-Key:a '.repeat(170)) };
    const refusal = { code: -32003, status: 200, message: 'scope' };
    // Another client's work, a turn of the loop at a time: how many turns it gets while the 100 calls are audited.
    let turns = 0;
    let auditing = true;
    const other = () => {
      if (!auditing) return;
      turns++;
      setImmediate(other);
    };
    setImmediate(other);
    for (let i = 0; i < 100; i++) await plane.recordDenied(auth.key, { tool: 'open', args, client: 'attacker', transport: 'http', session: null }, refusal);
    auditing = false;
    // Before: the 100 calls of one refused batch were redacted and stored back to back (160-200 ms a batch, no turn).
    expect(turns).toBeGreaterThanOrEqual(99);
  });

  it('a call of large arguments is redacted on the worker exactly as on the loop; small ones at once', async () => {
    const big = heavy(99);
    const { value, turns } = await longestBlock(() => redactForAudit(big, 'k1'));
    expect(value).toEqual(redact(big));
    expect(JSON.stringify(value)).not.toMatch(/-pX /);
    expect(turns).toBeGreaterThan(0);
    const small = { command: 'print password=hunter2', args: ['--password', 'hunter2'] };
    expect(await redactForAudit(small)).toEqual(redact(small));
  });
});

describe('attack 18x V1: argv after an inline script in any spelling keeps its words', () => {
  it('a cluster ending with c or e, an attached script, node -p and --eval=/--command= are inline scripts: the later words are kept', () => {
    for (const script of ['-lc', '-ec', '-xc', '-Sc', '-we', '-ne', '-lne', '-p', '--print', '-cimport os', "-c'eval $1'", '--eval=x', '--command=x', '-0e', '-0777e']) {
      const argv = [script, 'eval "$1"', '--password', 'touch /tmp/pwned'];
      expect(redactWords(argv), script).toEqual(argv);
    }
  });

  it('without an inline script an option of its own still hides its value; a long option word is not a script', () => {
    expect(redactWords(['-x', '--password', 'hunter2'])).toEqual(['-x', '--password', '[REDACTED]']);
    expect(redactWords(['--verbose', '--password', 'hunter2'])).toEqual(['--verbose', '--password', '[REDACTED]']);
    expect(redactWords(['-Wall', '--password', 'hunter2'])).toEqual(['-Wall', '--password', '[REDACTED]']);
    // Attack 18z Z1: a word of options that merely ends in c, e or S is no script (the password after it was stored in clear).
    for (const option of ['-verbose', '-force', '-trace', '-secure', '-S', '-count', '-xvuec']) {
      expect(redactWords([option, '--password', 'hunter2']), option).toEqual([option, '--password', '[REDACTED]']);
    }
  });
});

describe('attack 18x V5: a call whose one argument is a number in any language is code, kept', () => {
  it('binary, octal, digit separators, hex floats, imaginary and Rust/Modula-2 literals', () => {
    for (const n of ['0b10101010101011000000001000000', '0B101', '0o17', '5_0', "1'000", '0x1p3', '0x10i', '0b1010UL', '10u8', '7usize', '0FFH', '17B', '1q3', '2j', '1df']) {
      const text = `print password=system(${n})`;
      expect(redactText(text), text).toBe(text);
    }
  });

  it('a word that is no number is still a secret: DB_PASSWORD=Tr0ub4dor3Zk(9q) is hidden', () => {
    expect(redactText('shell DB_PASSWORD=Tr0ub4dor3Zk(9q) ./migrate')).toBe('shell DB_PASSWORD=[REDACTED] ./migrate');
  });
});

describe('attack 18z Z2: a word of code that reads its arguments makes the later words its arguments', () => {
  it('awk, php -r, a long cluster before eval "$1", node reading process.argv: the word that runs is kept', () => {
    for (const argv of [
      ['awk', 'BEGIN{system(ARGV[2])}', '--password', 'touch /tmp/pwned-awk'],
      ['-r', 'system($argv[2]);', '--password', 'touch /tmp/pwned-php'],
      ['-xvuec', 'eval "$1"', '--password', 'touch /tmp/pwned'],
      ['-e', 'require("child_process").execSync(process.argv[2])', '--password', 'touch /tmp/pwned-node'],
      ['script.py', 'import os, sys; os.system(sys.argv[2])', '--password', 'touch /tmp/pwned-py'],
    ])
      expect(redactWords(argv), argv[0]).toEqual(argv);
  });

  it('a password after a word that reads no arguments stays hidden', () => {
    expect(redactWords(['deploy', '--password', 'hunter2'])).toEqual(['deploy', '--password', '[REDACTED]']);
    expect(redactWords(['-verbose', 'echo $HOME', '--password', 'hunter2'])).toEqual(['-verbose', 'echo $HOME', '--password', '[REDACTED]']);
  });
});

describe('attack 18y W2, W6: arguments bound for the redaction thread never hold the loop, and refused calls wait their turn', () => {
  it('W2: 40 objects of 10,000 entries each go to the thread without a structured clone held on the loop, and are redacted as on the loop', async () => {
    const big = { rows: Array.from({ length: 40 }, (_, o) => Object.fromEntries(Array.from({ length: 10_000 }, (_, k) => [`k${k}`, k === 7 ? 'password=hunter2' : `v${o}-${k}`]))) };
    // What the old hand-over cost: one structured clone of the arguments, on the loop.
    const started = performance.now();
    structuredClone(big);
    const clone = performance.now() - started;
    const { value, longest } = await longestBlock(() => redactForAudit(big, 'w2'));
    expect(value).toEqual(redact(big));
    expect(JSON.stringify(value)).not.toMatch(/hunter2/);
    // Before: the measuring walk over every entry and the clone were one block (~330 ms on this host, the clone alone ~300 ms).
    expect(longest).toBeLessThan(clone / 2);
  }, 60_000);

  it('W6: a key with two refused calls waiting keeps only the size of its next refused call; a call that ran is always redacted', async () => {
    const calls = Array.from({ length: 6 }, (_, i) => redactForAudit(heavy(200 + i), 'w6-flood', true));
    const ran = redactForAudit(heavy(300), 'w6-flood');
    const records = await Promise.all(calls);
    const stubs = records.filter((r) => JSON.stringify(r).includes("refused calls' arguments waiting"));
    // Six calls' JSON ready at once: one redacted, two waiting, the rest kept by their size alone (no digest of text not redacted).
    expect(stubs.length).toBeGreaterThanOrEqual(1);
    expect(JSON.stringify(stubs[0])).toMatch(/\(\d+ characters of JSON\) were not redacted/);
    expect(JSON.stringify(stubs[0])).not.toMatch(/sha256|-pX/);
    for (const r of records.filter((r) => !stubs.includes(r))) expect(JSON.stringify(r)).not.toMatch(/-pX /);
    expect(await ran).toEqual(redact(heavy(300)));
  }, 120_000);
});
