import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { REDACTED as R, redactText } from '../core/secrets.js';
import { redact } from './audit.js';
import { SqliteStore } from './sqlite.js';

// Round 18as (issue 18, stop 45's attack t2 on the audit). Found: an environment entry whose value
// holds blanks (`PGPASSWORD=correct horse battery staple`) was read as text, and only its first word
// was hidden (t2-3); so was gdb's `set environment NAME=VALUE`, whose value is the rest of its line.
// And a command line given in one word as an option's value (`env -S"..."`, `--command='...'`,
// tar's `--checkpoint-action=exec=`, `git -c core.sshCommand=`) was read as one value: the
// command after a secret in it was stored as [REDACTED] while it ran (t2-2).

describe('attack 18as t2-3: an environment entry is one value, blanks and all', () => {
  it('hides the whole value of a secret-named entry in an env list; keeps what decides code and what is not secret', () => {
    const stored = redact({
      command: 'python3 dump.py envtest',
      env: ['PGPASSWORD=correct horse battery staple', 'MYSQL_PWD=Tr0ub4dor &3 x', 'API_TOKEN=a\tb', 'LD_PRELOAD=/opt/token_abc.so', 'GREETING=hello there', 'PGPASSWORD='],
    }) as { env: string[] };
    expect(stored.env).toEqual([`PGPASSWORD=${R}`, `MYSQL_PWD=${R}`, `API_TOKEN=${R}`, 'LD_PRELOAD=/opt/token_abc.so', 'GREETING=hello there', 'PGPASSWORD=']);
  });

  it('reads the same under each spelling of an environment list, and only there: a list of commands is still read word by word', () => {
    for (const name of ['env', 'environment', 'environ']) {
      expect((redact({ [name]: ['DB_PASSWORD=two words'] }) as Record<string, string[]>)[name], name).toEqual([`DB_PASSWORD=${R}`]);
    }
    // Any name a program can be given: a long one, npm's registry token (attack v2-5).
    const long = `${'A'.repeat(130)}_PASSWORD`;
    expect((redact({ env: [`${long}=two words`, 'npm_config_//registry.example/:_authToken=tok en'] }) as { env: string[] }).env).toEqual([
      `${long}=${R}`,
      `npm_config_//registry.example/:_authToken=${R}`,
    ]);
    // gdb's commands are separate lines, each read as text; gdb's `set environment` takes the rest of the line, in each spelling.
    for (const line of ['set environment DB_PASSWORD=two words', 'set env DB_PASSWORD = two words', 'set environ DB_PASSWORD two words']) {
      expect(redact({ commands: [line] }), line).toEqual({ commands: [line.replace('two words', R)] });
    }
  });
});

describe("attack 18as t2-2: a command line in one word, as an option's value, is read as the command line it is", () => {
  it('hides the secret in it and shows the command that runs after it', () => {
    for (const line of [
      'env -S"PGPASSWORD=abc touch m"',
      'env --split-string="token=abc touch m"',
      'env "-S PGPASSWORD=abc touch m"',
      "env -iS'PGPASSWORD=abc touch m'",
      "timeout -s KILL 5 env -S'PGPASSWORD=abc touch m'",
      "tar -cf /dev/null --checkpoint=1 --checkpoint-action=exec='PGPASSWORD=abc touch m' dump.py",
      "tar --to-command='PGPASSWORD=abc touch m' -xf a.tar",
      "tar --use-compress-program='PGPASSWORD=abc touch m' -cf a.tar .",
      "script -q --command='PGPASSWORD=abc touch m' /dev/null",
      "nice -n5 script -qc'PGPASSWORD=abc touch m' /dev/null",
      "flock F --command='PGPASSWORD=abc touch m'",
      "su --command='PGPASSWORD=abc touch m'",
      "rsync --rsh='PGPASSWORD=abc touch m' a b",
      "rsync -e'PGPASSWORD=abc touch m' a b",
      "git -c core.sshCommand='PGPASSWORD=abc touch m' fetch",
    ]) {
      const stored = redactText(line, true);
      expect(stored, line).toContain('touch m');
      expect(stored, line).not.toContain('abc');
    }
  });

  it('a quoted argument of any other program is read to its first blank, as a shell would read it (attack v2-1)', () => {
    expect(redactText('wrap "token=a b"', true)).toBe(`wrap "token=${R} b"`);
    expect(redactText("tar -cf a.tar --label='token=a b' .", true)).toBe(`tar -cf a.tar --label='token=${R} b' .`);
  });
});

describe('attack 18as v2-6: a stored row edited into other text that parses alike is a changed entry', () => {
  it('a duplicate key ahead of the real one, and a text in the duration, are named by verify', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'debugkit-18as-'));
    const file = path.join(dir, 'control.db');
    const store = new SqliteStore(file);
    try {
      const body = { ts: new Date().toISOString(), call_id: 'c', node: 'n', key_id: 'k', client: 'x/1', transport: 'http', session: null, debug_session: null, traceparent: null };
      await store.appendAudit({ ...body, event: 'call', tool: 'keploy_mock_record', args: { command: 'touch m' }, outcome: null, error: null, duration_ms: null });
      await store.appendAudit({ ...body, event: 'result', tool: 'keploy_mock_record', args: null, outcome: 'ok', error: null, duration_ms: null });
      expect(await store.verifyAudit()).toMatchObject({ ok: true });
      const db = new Database(file);
      // SQLite's json_extract reads the first of two keys, JSON.parse the last: the row shows `ls -l` to a reader of the file.
      db.prepare(`UPDATE audit SET args = '{"command":"ls -l","command":"touch m"}' WHERE seq = 1`).run();
      expect(db.prepare("SELECT json_extract(args, '$.command') AS c FROM audit WHERE seq = 1").get()).toEqual({ c: 'ls -l' });
      expect(await store.verifyAudit()).toMatchObject({ ok: false, first_broken: { seq: 1 } });
      db.prepare(`UPDATE audit SET args = '{"command":"touch m"}' WHERE seq = 1`).run();
      expect(await store.verifyAudit()).toMatchObject({ ok: true });
      // A text where a number (or null) was: read as NaN, it hashed as the null it replaced.
      db.prepare(`UPDATE audit SET duration_ms = 'not a number' WHERE seq = 2`).run();
      expect(await store.verifyAudit()).toMatchObject({ ok: false, first_broken: { seq: 2 } });
      db.close();
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
