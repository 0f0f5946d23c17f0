import { describe, expect, it } from 'vitest';
import { ShellSyntaxError } from '../../core/argv.js';
import { redactText } from '../../core/secrets.js';
import { parseCommand } from './runner.js';

// Attack p2 (issue 18): the runner split a command line at every JavaScript blank and read `$'x\'` as `$` and a
// single-quoted `x\`, while the audit reads it as a shell does: the program that ran was hidden under [REDACTED].
describe('the mocks runner and the audit read a command line alike: what runs is shown', () => {
  const spellings = [
    'PGPASSWORD=x\u00a0touch\u00a0/tmp/m1',
    'env PGPASSWORD=x\u00a0touch /tmp/m1',
    'wrap token=x\u2028touch /tmp/m1',
    'mysql -px\u3000touch\u3000/tmp/m1',
    'curl --password x\u00a0touch /tmp/m1',
    'psql postgres://u:pw\u00a0touch\u00a0m@h',
    "wrap=1 PGPASSWORD=$'x\\' touch /tmp/m2 ''",
    "wrap --password $'x\\' touch /tmp/m2 ''",
    'PGPASSWORD=ab\\\ncd touch /tmp/m3',
    'PGPASSWORD="x\\\nq" touch /tmp/m4',
    'node argv.mjs --password\u00a0Hunter2Secret',
    'timeout 5 PGPASSWORD=x\u00a0touch /tmp/m5',
    'nice wrap token=x\u00a0touch /tmp/m6',
  ];
  for (const line of spellings)
    it(JSON.stringify(line), () => {
      let argv: string[];
      try {
        argv = parseCommand(line).argv;
      } catch (err) {
        expect(err, 'refused as shell syntax').toBeInstanceOf(ShellSyntaxError);
        return;
      }
      // Run: the program, as the runner found it, is in what the audit keeps, and so is `touch` wherever it is a word that runs.
      const stored = redactText(line, true);
      expect(stored.includes(argv[0]!), `ran ${JSON.stringify(argv)}, stored ${JSON.stringify(stored)}`).toBe(true);
      if (argv.includes('touch')) expect(stored, `ran ${JSON.stringify(argv)}`).toMatch(/touch/);
    });
});

// Attack t2-1 (issue 18): a quote or a backslash inside a secret's name or option (`PGPASS''WORD=x`, `--pass''word x`) is taken
// out by the runner, so the program got `PGPASSWORD=x` and `--password x`; the audit, reading the text as written, kept them in clear.
describe('a secret whose name or option is spelled with quotes or backslashes is hidden, as the program gets it', () => {
  const spellings: Array<[string, string]> = [
    ["PGPASS''WORD=hunter2 python3 dump.py --pass''word s3cretA", 'hunter2 s3cretA'],
    ['PGPASS""WORD=hunter2 psql', 'hunter2'],
    ['PGPASSWORD\\=hunter2 psql', 'hunter2'],
    ["MYSQL_PWD''=hunter2 mysql", 'hunter2'],
    ["env PGPASS''WORD=hunter2 psql", 'hunter2'],
    ['psql --pass\\word=hunter2', 'hunter2'],
    ["mysql --user=u --pass''word=pw123", 'pw123'],
    ["x --password''=pw123", 'pw123'],
    ['x --"password" pw123', 'pw123'],
    ["curl --us''er u:pw123 h", 'pw123'],
    ["sshpass -''p pw123 ssh h", 'pw123'],
    ["redis-cli -''a pw123", 'pw123'],
    ["curl https:''//u:pw123@h/", 'pw123'],
    ["curl https://h/x?sig''=abcdef", 'abcdef'],
    ['curl -H Authorization:\\ Bearer\\ abc123 h', 'abc123'],
    // Attack v2-4: quotes at a name's, an option's or a value's edge.
    ["PGPASSWORD'='PW ./dump.sh", 'PW'],
    ["./dump.sh '--password' PW", 'PW'],
    ['./dump.sh https://h/x?sig=Zq9K"x"7Wm', 'Zq9K 7Wm'],
    ["curl -u'' admin:PW h", 'PW'],
    ["curl -H 'Authorization: Bearer'' PW' h", 'PW'],
  ];
  for (const [line, secrets] of spellings)
    it(JSON.stringify(line), () => {
      const stored = redactText(line, true);
      for (const secret of secrets.split(' ')) expect(stored, 'the audit hides it').not.toContain(secret);
      let parsed: ReturnType<typeof parseCommand>;
      try {
        parsed = parseCommand(line);
      } catch (err) {
        // A quoted NAME=value before the program is a program's name to a shell: refused, never run (attack v2-4).
        expect(err).toBeInstanceOf(ShellSyntaxError);
        expect((err as Error).message).toMatch(/with quotes or a backslash before its "="/);
        return;
      }
      const got = [...parsed.argv, ...Object.values(parsed.env)].join(' ');
      for (const secret of secrets.split(' ')) expect(got, 'the program gets the secret').toContain(secret);
      // What runs is still shown: the program and the words around the secret.
      expect(stored).toContain(parsed.argv[0]!);
    });

  it('a value the reading as written already judged stays as it judged it: quotes kept around a hidden value, a path that runs shown', () => {
    expect(redactText(`bash -c "curl -u admin:'pw' h"`, true)).toBe(`bash -c "curl -u admin:'[REDACTED]' h"`);
    // A quoted blank ends a value as an unquoted one does (attack v2-1): `a` is hidden, `b/./evil.sh` (a path that may run) shown.
    expect(redactText('wrap token="a b"/./evil.sh', true)).toBe('wrap token="[REDACTED] b"/./evil.sh');
    expect(redactText(`bash -c 'mysql -pX; touch m'`, true)).toBe(`bash -c 'mysql -p[REDACTED]; touch m'`);
  });
});
