// Attack round 18ac (attacker e1): a list of gdb commands was read as one command line, so a program
// named in one command made a `-p...` in the next a "password", and the audit hid code that ran
// (e1-3); name/value pairs written as two-item lists kept their values in clear (e1-5); and common
// spellings of a password kept it in clear (e1-1).
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REDACTED as R, redactText } from '../core/secrets.js';
import { redact } from './audit.js';
import { makeKey } from './keys.js';
import { ControlPlane } from './plane.js';
import { SqliteStore } from './sqlite.js';

describe('attack 18ac e1-3: only a command line given as a list is read as one', () => {
  it("gdb's commands are separate command lines: the code in each is kept whole", () => {
    // Before: {"commands": ["echo mysql\\n", "print -p[REDACTED]"]}, while the assignment ran.
    const commands = ['echo mysql\\n', 'print -pretty -- (is_admin = 1337)'];
    expect(redact({ id: 's1', commands })).toEqual({ id: 's1', commands });
    expect(redact({ commands: ['echo curl', '-u x:y print system("id")'] })).toEqual({ commands: ['echo curl', '-u x:y print system("id")'] });
    // A secret inside one command is still hidden in it.
    expect(redact({ commands: ['shell mysql -uroot -phunter2 -e "select 1"', 'info registers'] })).toEqual({ commands: [`shell mysql -uroot -p${R} -e "select 1"`, 'info registers'] });
  });

  it('argv stays argv: args (after the program named beside them), argv, command and cmd lists', () => {
    expect(redact({ program: 'mysql', args: ['-u', 'root', '-phunter2'] })).toEqual({ program: 'mysql', args: ['-u', 'root', `-p${R}`] });
    expect(redact({ entry: 'app.py', args: ['--password', 'hunter2', 'run'] })).toEqual({ entry: 'app.py', args: ['--password', R, 'run'] });
    expect(redact({ command: ['sshpass', '-p', 'hunter2', 'ssh', 'h'] })).toEqual({ command: ['sshpass', '-p', R, 'ssh', 'h'] });
    expect(redact({ x: { argv: ['curl', '-u', 'admin:pw', 'http://h'] } })).toEqual({ x: { argv: ['curl', '-u', `admin:${R}`, 'http://h'] } });
    expect(redact(['--token', 'abc123'])).toEqual(['--token', R]);
  });

  it('other lists are read item by item: env entries, names', () => {
    expect(redact({ env: ['PGPASSWORD=hunter2', 'HOME=/root'] })).toEqual({ env: [`PGPASSWORD=${R}`, 'HOME=/root'] });
    expect(redact({ names: ['mysql', '-pretty'] })).toEqual({ names: ['mysql', '-pretty'] });
  });
});

describe('attack 18ac e1-5: name/value pairs in every usual form', () => {
  it('a pair as a two-item list, alone or in a list of pairs (Object.entries, a Headers init, dict.items())', () => {
    // Before: [["DB_PASSWORD","Hunter2Secret"]] and [["X-Api-Key","Hunter2Secret"]] kept in clear.
    expect(
      redact({
        mocks: {
          env: [['DB_PASSWORD', 'Hunter2Secret']],
          headers: [
            ['X-Api-Key', 'Hunter2Secret'],
            ['Accept', 'json'],
          ],
        },
      }),
    ).toEqual({
      mocks: {
        env: [['DB_PASSWORD', R]],
        headers: [
          ['X-Api-Key', R],
          ['Accept', 'json'],
        ],
      },
    });
    expect(redact({ x: [['password', 'x']] })).toEqual({ x: [['password', R]] });
    // A pair whose name is not secret, and a list of two words that is no pair, are kept.
    expect(redact({ x: [['user', 'alice']], y: ['token', ''] })).toEqual({ x: [['user', 'alice']], y: ['token', ''] });
  });

  it('pair objects whose value field is data, val or values; keys pw and "pass word"', () => {
    expect(redact({ a: { name: 'password', data: 'x' }, b: { key: 'token', val: 'y' }, c: { name: 'password', values: ['z'] }, d: { name: 'user', data: 'alice' } })).toEqual({
      a: { name: 'password', data: R },
      b: { key: 'token', val: R },
      c: { name: 'password', values: R },
      d: { name: 'user', data: 'alice' },
    });
    expect(redact({ pw: 'p', 'pass word': 'q', compass: 'north' })).toEqual({ pw: R, 'pass word': R, compass: 'north' });
  });
});

describe('attack 18ac e1-1: more spellings of a password', () => {
  it('environment names: *PASS glued (SSHPASS, DBPASS), *_AUTH (REDISCLI_AUTH), db.pass; GIT_ASKPASS and BYPASS stay', () => {
    expect(redactText('SSHPASS=Hunter2 DBPASS=Hunter2 ROOTPASS=Hunter2 REDISCLI_AUTH=Hunter2 db.pass=Hunter2')).toBe(`SSHPASS=${R} DBPASS=${R} ROOTPASS=${R} REDISCLI_AUTH=${R} db.pass=${R}`);
    expect(redact({ env: ['SSHPASS=Hunter2', 'PGPASS=Hunter2'] })).toEqual({ env: [`SSHPASS=${R}`, `PGPASS=${R}`] });
    const kept = 'GIT_ASKPASS=/usr/lib/ssh/askpass SSH_ASKPASS=/bin/ask BYPASS_CHECKS=1 BYPASS=1 compass=n';
    expect(redactText(kept)).toBe(kept);
  });

  it("programs' own password options, in a command line and as argv", () => {
    const cases: Array<[string, string]> = [
      ['mongosh -u admin -p Hunter2', `mongosh -u admin -p ${R}`],
      ['mongodump --uri x -p Hunter2', `mongodump --uri x -p ${R}`],
      ['sqlcmd -S db -U sa -P Hunter2', `sqlcmd -S db -U sa -P ${R}`],
      ['ldapsearch -D cn=admin -w Hunter2 -b dc=x', `ldapsearch -D cn=admin -w ${R} -b dc=x`],
      ['keytool -list -storepass Hunter2 -keypass Hunter3', `keytool -list -storepass ${R} -keypass ${R}`],
      ['smbclient //h/s -U user%Hunter2', `smbclient //h/s -U user%${R}`],
      ['zip -P Hunter2 a.zip f', `zip -P ${R} a.zip f`],
      ['unzip -P Hunter2 a.zip', `unzip -P ${R} a.zip`],
      ['7z x -pHunter2Secret a.7z', `7z x -p${R} a.7z`],
      ['openssl enc -aes256 -k Hunter2 -in f', `openssl enc -aes256 -k ${R} -in f`],
      ['mysqladmin -u root password Hunter2', `mysqladmin -u root password ${R}`],
      ['vault login Hunter2', `vault login ${R}`],
      ['java -jar tool.jar -password Hunter2', `java -jar tool.jar -password ${R}`],
    ];
    for (const [text, want] of cases) expect(redactText(text), text).toBe(want);
    expect(redact({ program: 'ldapsearch', args: ['-D', 'cn=admin', '-w', 'Hunter2'] })).toEqual({ program: 'ldapsearch', args: ['-D', 'cn=admin', '-w', R] });
    expect(redact({ program: 'mongosh', args: ['-u', 'admin', '-p', 'Hunter2'] })).toEqual({ program: 'mongosh', args: ['-u', 'admin', '-p', R] });
  });

  it('code and options that only look alike are kept', () => {
    const kept = [
      'x = n -password + 1',
      'ls -la /tmp; git log -p HEAD',
      'print -pretty -- (is_admin = 1337)',
      'openssl pkcs12 -passin env:PW -pass env:X -passout file:pw.txt',
      'gzip -k file; tar -czf a.tgz .',
      'vault login -method=userpass username=alice',
    ];
    for (const text of kept) expect(redactText(text), text).toBe(text);
  });
});

// Round 18ad (attacker g1), on the fixes above: a list of two strings under a name was taken for a
// pair (g1-7), the single-dash `-NAME:VALUE` form matched a conditional's and a slice's colon (g1-1),
// and a program's option value or a --flag's value was taken whole even when it was code (g1-2).
describe('attack 18ad g1-7, g1-1, g1-2: the audit never hides code that ran', () => {
  it('g1-7: two strings under a name are no pair: gdb commands and ignore paths are kept', () => {
    // Before: {"commands": ["pwd", "[REDACTED]"]} while is_admin became 4242.
    expect(redact({ commands: ['pwd', 'print is_admin=4242'] })).toEqual({ commands: ['pwd', 'print is_admin=4242'] });
    expect(redact({ ignore: ['header.Authorization', 'body.amount'] })).toEqual({ ignore: ['header.Authorization', 'body.amount'] });
    // A pair in a list of pairs is still one.
    expect(redact({ env: [['DB_PASSWORD', 'x']] })).toEqual({ env: [['DB_PASSWORD', R]] });
  });

  it("g1-1: a negated secret-looking name before a conditional's, a slice's or a dict's colon is code", () => {
    const kept = ['print c ? -password:is_admin=1337', '[[0][-token:os.system("touch x")] for token in [1] for os in [__import__("os")]]', '{-token:os.system("id")}', 'c ? -password : x'];
    for (const command of kept) expect(redact({ command }, { code: true }), command).toEqual({ command });
  });

  it("g1-2: a program's option value or a flag's value that reads as code is kept; as argv it is a password", () => {
    const kept = [
      'print mongo -p?is_admin=7:0',
      'print --token ?is_admin=9:0',
      'print openssl -k ?is_admin=9:0',
      'print zip -P?x=9:0',
      'print sshpass -p?x=9:0',
      'print curl -u u:is_admin=9',
      '[(mongo:=1) -p+os.system("touch x") for p in [1] for os in [__import__("os")]]',
      '[--secret +__import__("os").system("x") for secret in [1]]',
    ];
    for (const command of kept) expect(redact({ command }, { code: true }), command).toEqual({ command });
    // Round 18ad h1-2: postfix ++ and -- are code too (`print mysql -privileged++` ran).
    for (const command of ['print c ? curl -u :is_admin++', 'print mysql -privileged++', 'print --token x--']) expect(redact({ command }, { code: true }), command).toEqual({ command });
    // Passwords are still hidden in a command line outside code, base64's padding included, and any word after --password in argv.
    // (In a debugger's command, unquoted, they are code since rounds 18af-18ah: attack18af.test.ts.)
    expect(redact({ command: 'mysql -uroot -phunter2 && curl -u admin:pw http://h --token YWJj==' })).toEqual({
      command: `mysql -uroot -p${R} && curl -u admin:${R} http://h --token ${R}`,
    });
    expect(redact({ args: ['--password', 'a?b=c'] })).toEqual({ args: ['--password', R] });
  });

  it('g1-6: more spellings: ssh-keygen -N/-P, cqlsh -p, tsql -P, unrar -pPW, lftp -u user,PW, *_PW, named *_KEY, *_CREDS', () => {
    const cases: Array<[string, string]> = [
      ['ssh-keygen -p -P old1 -N new2 -f k', `ssh-keygen -p -P ${R} -N ${R} -f k`],
      ['cqlsh -u cassandra -p Hunter2', `cqlsh -u cassandra -p ${R}`],
      ['tsql -S h -U sa -P Hunter2', `tsql -S h -U sa -P ${R}`],
      ['unrar x -pHunter2 a.rar', `unrar x -p${R} a.rar`],
      ['lftp -u alice,Hunter2 ftp://h', `lftp -u alice,${R} ftp://h`],
      ['DB_PW=x MASTER_KEY=x SIGNING_KEY=x ENCRYPTION_KEY=x DB_CREDS=x', `DB_PW=${R} MASTER_KEY=${R} SIGNING_KEY=${R} ENCRYPTION_KEY=${R} DB_CREDS=${R}`],
    ];
    for (const [text, want] of cases) expect(redactText(text), text).toBe(want);
    const kept = 'ssh-keygen -N "" -f k; PRIMARY_KEY=id SORT_KEY=a SSH_KEY=/root/.ssh/id';
    expect(redactText(kept)).toBe(kept);
  });
});

// Round 18ad (attacker h1): the rule that keeps code applied to every string, so passwords holding
// `=` or `?` were kept in clear in env values, quoted values and command lines (h1-3).
describe('attack 18ad h1-3: option values are read as code only in the code fields of a tool that runs code', () => {
  const plain = {
    env: { MYSQL_CMD: 'mysql -uroot -pH1=zq7Lw db', APP_ARGS: '--password "H1=Quoted9"', DOCKER: 'docker login -u me -p H1?tok reg', OPTS: '-pAb=cd9x' },
    command: 'mysql -uroot -pAb=cd9x db',
    cmd: 'sshpass -p Pa=ssw0rd ssh u@h',
  };
  it('env values, command lines and argv hide such passwords, in any tool', () => {
    for (const code of [false, true]) {
      const got = redact({ env: plain.env }, { code }) as { env: Record<string, string> };
      // MYSQL_CMD and OPTS decide what the program runs (core/secrets.ts decidesCode): read as command lines since attack 18ap
      // h2-3 (kept whole, `GIT_SSH_COMMAND="sshpass -p X ssh"` stored its password): programs shown, passwords hidden.
      expect(got.env, `code ${code}`).toEqual({ MYSQL_CMD: `mysql -uroot -p${R} db`, APP_ARGS: `--password "${R}"`, DOCKER: `docker login -u me -p ${R} reg`, OPTS: `-pAb=cd9x` });
    }
    expect(redact({ command: plain.command, cmd: plain.cmd })).toEqual({ command: `mysql -uroot -p${R} db`, cmd: `sshpass -p ${R} ssh u@h` });
    expect(redact({ command: 'curl -u admin:Pa?ss9 https://x', x: 'app --password Secret==x' })).toEqual({ command: `curl -u admin:${R} https://x`, x: `app --password ${R}` });
  });

  it("a debugger's code fields are kept as sent, quoted values and gdb shell lines too (rounds 18af-18ai)", () => {
    const commands = ["print --password 'Abcd9x'", 'print mongo -p?x=1:0', 'thr apply all shell mysql -pAb=cd9x'];
    expect(redact({ commands }, { code: true })).toEqual({ commands });
    // A plain shell line (`shell`, `!` first) is a command line: its passwords are hidden, its program shown.
    const plain = ['shell mysql -uroot -pAb=cd9x db', "shell mysql -uroot -p'Abcd9x' db", '!mysql -pAb=cd9x'];
    expect(redact({ commands: plain }, { code: 'gdb' })).toEqual({
      commands: [`shell mysql -uroot -p${R} db`, `shell mysql -uroot -p'${R}' db`, `!mysql -p${R}`],
    });
    // Only gdb's commands: the same text in another debugger's code is code (attack 18ak).
    expect(redact({ commands: plain }, { code: true })).toEqual({ commands: plain });
  });
});

describe("attack 18ad h1-3: the control plane reads code fields as code only for a debugger's tools", () => {
  it('gdb call keeps the code that ran; keploy_mock_record hides the password in its command line; a big record (on the thread) alike', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'debugkit-18ad-h1-'));
    const plane = new ControlPlane({ store: new SqliteStore(path.join(dir, 'control.db')), node: { id: 'n1' } });
    try {
      plane.setCatalog([
        { name: 'call', toolset: 'gdb', readOnly: false, scopes: [] },
        { name: 'keploy_mock_record', toolset: 'mocks', readOnly: false, scopes: [] },
        { name: 'python_evaluate', toolset: 'python', readOnly: false, scopes: [] },
      ]);
      const made = makeKey({ name: 'h1', scopes: '*' });
      await plane.store.createKey(made.record, made.hash);
      const auth = await plane.authenticate(`Bearer ${made.secret}`);
      if (!('key' in auth)) throw new Error('authentication failed');
      const pad = 'x'.repeat(20_000); // past what is redacted on the loop: the thread reads the code fields too
      const calls: Array<[string, Record<string, unknown>]> = [
        ['call', { id: 's', command: 'print mongo -p?is_admin=7:0' }],
        ['call', { id: 's', command: 'print mongo -p?is_admin=7:0', note: pad }],
        ['keploy_mock_record', { command: 'mysql -uroot -pAb=cd9x db' }],
        ['keploy_mock_record', { command: 'mysql -uroot -pAb=cd9x db', note: pad }],
        // gdb's commands and Python expressions are code, kept as sent; a plain shell line is a command line, its password hidden.
        ['call', { id: 's', command: "shell mysql -uroot -p'Abcd9x' db" }],
        ['call', { id: 's', command: "shell mysql -uroot -p'Abcd9x' db", note: pad }],
        ['python_evaluate', { command: 'r = x; token = system; token("id")' }],
        ['python_evaluate', { command: 'r = x; token = system; token("id")', note: pad }],
      ];
      for (const [tool, args] of calls) await (await plane.beginCall(auth.key, { tool, args, client: 'h1', transport: 'http', session: null }))({ ok: true });
      const entries = (await plane.queryAudit({ keyId: auth.key.id })).entries.filter((e) => e.event === 'call');
      const commands = entries.map((e) => (e.args as { command: string }).command);
      expect(commands.sort()).toEqual([
        'mysql -uroot -p[REDACTED] db',
        'mysql -uroot -p[REDACTED] db',
        'print mongo -p?is_admin=7:0',
        'print mongo -p?is_admin=7:0',
        'r = x; token = system; token("id")',
        'r = x; token = system; token("id")',
        "shell mysql -uroot -p'[REDACTED]' db",
        "shell mysql -uroot -p'[REDACTED]' db",
      ]);
    } finally {
      await plane.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

// Round 18ae (attacker i1): in a debugger's code, a URL's "password", an API key's shape and a
// Bearer credential hid code that ran (i1-1, i1-2); gdb lines that run a shell through a prefix
// command or an abbreviation kept their passwords (i1-3).
describe("attack 18ae i1-1, i1-2, i1-3: no pattern hides code a debugger runs; gdb's shell lines are command lines", () => {
  it('i1-1, i1-2: spans that hold a call, a block, ++ or -- are code in code fields', () => {
    const kept = [
      { expression: `f"{0://u:{__import__(chr(111)+chr(115)).system('touch x')}@h}"` },
      { logMessage: 'fetching https://user:{__import__("os").system("id")}@example.com/api' },
      { command: 'print $sk-is_admin---1234567890123456789' },
      { command: 'print $Bearer -counter--' },
    ];
    for (const args of kept) expect(redact(args, { code: true }), JSON.stringify(args)).toEqual(args);
    // Since round 18ai code is kept as sent, a secret in it too (the price: attack18af.test.ts).
    const quoted = { expression: 'requests.get("https://u:hunter2@h")', condition: 'token == "sk-abcdefghijklmnopqrstuvwxyz123456"' };
    expect(redact(quoted, { code: true })).toEqual(quoted);
  });

  it('i1-3: a gdb line that runs a shell is code like any gdb command: nothing in it is hidden but a quoted literal', () => {
    const shell = [
      'she mysql -uroot -pAb=cd9x',
      'thread apply all shell mysql -uroot -pAb=cd9x',
      'thread apply 1-3 -q shell mysql -pAb=cd9x',
      'with print pretty -- shell mysql -pAb=cd9x',
      'taas shell mysql -pAb=cd9x',
      'frame apply level 1 shell mysql -pAb=cd9x',
      'server shell mysql -pAb=cd9x',
      '!mysql -pAb=cd9x',
    ];
    // Since round 18ah the audit reads gdb's commands as code (no second copy of gdb's parser), but for a plain shell line
    // (`shell`, `!` first): a shell reached through a prefix or an abbreviation keeps its password (the price).
    const got = redact({ commands: shell }, { code: 'gdb' }) as { commands: string[] };
    expect(got.commands.slice(0, -1)).toEqual(shell.slice(0, -1));
    expect(got.commands.at(-1)).toBe(`!mysql -p${R}`);
    const code = ['print shell ? 0 : mongo -p?is_admin=7:0', 'thread apply all print shell ? 0 : mongo -p?is_admin=7:0'];
    expect(redact({ commands: code }, { code: true })).toEqual({ commands: code });
  });
});
