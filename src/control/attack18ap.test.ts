import { describe, expect, it } from 'vitest';
import { REDACTED as R, commandRuns, redactText } from '../core/secrets.js';
import { redactForAudit, redactWords } from './audit.js';

// Round 18ap. Stop 40's review: the audit had two readings of "an option that brings code" (secrets.ts
// for command lines, audit.ts for argv) that disagreed (`perl -0777e`, code attached to its option).
// Attacker g2 then found, on both sides of "show what ran, hide the secret":
// - g2-1: `bash -euo pipefail -c SCRIPT` read `pipefail` as the script, hiding the script's program;
// - g2-2: interpreters' valued options (`python3 -W ignore -c CODE`, `node -r M -e CODE`, `awk -v x=1`)
//   hid the code after them, and showed `awk -v password=...`, `php -d ..._password=...` as "scripts";
// - g2-3: `time -p TOK`, `eval TOK`, `source`, `sudo -iu`, `find -exec TOK`, ... ran a program named like
//   a token while the audit kept [REDACTED];
// - g2-4: in argv, any `-c`/`-e` word (`psql -c "select 1" --password X`) kept a later password in clear;
// - g2-5: a token after a URL split by quotes (`"https://h/hooks"/TOK`) or `$BASE/TOK` was kept, read as a file.
// The rule now: in text that runs (a command line, argv), a secret known only by its shape is kept
// (it may be what runs: no reading of a shell finds every spelling); one known by its place is hidden.
const TOK = 'ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';

describe('attack 18ap: one reading of what runs, for command lines and argv', () => {
  it('finds the code an interpreter runs past its valued options, attached, or after digits', () => {
    const code = (words: string[]) => [...commandRuns(words).code];
    expect(code(['perl', '-0777e', 'CODE'])).toEqual([2]);
    expect(code(['python3', '-W', 'ignore', '-c', 'CODE'])).toEqual([4]);
    expect(code(['python3', "-cimport os; os.system('x')"])).toEqual([1]);
    expect(code(['node', '-r', 'dotenv/config', '-e', 'CODE'])).toEqual([4]);
    expect(code(['node', '--eval=CODE'])).toEqual([1]);
    expect(code(['awk', '-v', 'x=1', 'BEGIN{CODE}'])).toEqual([3]);
    expect(code(['php', '-d', 'x=1', '-r', 'CODE'])).toEqual([4]);
    // perl -p is a loop flag, not code's option; php -c is a config file.
    expect(code(['perl', '-p', '-e', 'CODE'])).toEqual([3]);
    expect(code(['php', '-c', 'php.ini', 'run.php'])).toEqual([]);
    expect([...commandRuns(['php', '-c', 'php.ini', 'run.php']).programs]).toEqual([0, 3]);
    expect([...commandRuns(['python3', '-X', 'dev', 'app.py']).programs]).toEqual([0, 3]);
  });

  it('g2-1: a shell option cluster ending in o takes its value; a c anywhere makes the first operand the script', () => {
    for (const words of [
      ['bash', '-euo', 'pipefail', '-c', 'S'],
      ['bash', '-eo', 'pipefail', '-c', 'S'],
      ['bash', '--rcfile', 'F', '-c', 'S'],
      ['bash', '-cx', 'S'],
      ['sh', '-e', '-o', 'pipefail', '-c', 'S'],
      ['fish', '-c', 'S'],
    ])
      expect([...commandRuns(words).scripts], words.join(' ')).toEqual([words.length - 1]);
    expect([...commandRuns(['bash', '-euo', 'pipefail', 'run.sh']).programs]).toEqual([0, 3]);
  });

  it('g2-3: wrappers with valued clusters, eval, source, time -p, find -exec run the word after them', () => {
    expect([...commandRuns(['sudo', '-iu', 'bob', 'P']).programs]).toEqual([0, 3]);
    expect([...commandRuns(['eval', 'P']).programs]).toEqual([1]);
    expect([...commandRuns(['source', 'P']).programs]).toEqual([1]);
    expect([...commandRuns(['.', 'P']).programs]).toEqual([1]);
    expect([...commandRuns(['time', '-p', 'P']).programs]).toEqual([0, 2]);
    expect([...commandRuns(['find', '.', '-name', 'x', '-exec', 'P', '{}', ';']).programs]).toEqual([0, 5]);
  });

  it('a token-shaped word in text that runs is kept, wherever it is: it may be what ran (g2-1, g2-2, g2-3, g2-5)', async () => {
    for (const line of [
      `bash -euo pipefail -c ./${TOK}`,
      `python3 -W ignore -c "import os; os.system('${TOK}')"`,
      `node -r fs -e "require('child_process').execSync('${TOK}')"`,
      `awk -v x=1 'BEGIN{system("${TOK}")}'`,
      `time -p ${TOK}`,
      `eval ${TOK}`,
      `find . -exec ${TOK} {} ;`,
      `ssh -o ProxyCommand=${TOK} host`,
      `make SHELL=${TOK}`,
      `$DIR/${TOK}`,
      `curl "https://api.example.com/hooks"/${TOK}`,
      `echo ${TOK} | gh auth login --with-token`,
      `perl -0777e 'system("./${TOK}")'`,
    ])
      expect(redactText(line, true), line).toBe(line);
    expect(redactWords(['bash', '-euo', 'pipefail', '-c', `PATH=.; ${TOK}`])).toEqual(['bash', '-euo', 'pipefail', '-c', `PATH=.; ${TOK}`]);
    expect(redactWords(['find', '.', '-exec', TOK, ';'])).toEqual(['find', '.', '-exec', TOK, ';']);
    const record = { command: `sudo -iu bob ${TOK}` };
    expect(await redactForAudit(record, 'keploy_mock_record', false, false, true)).toEqual(record);
  });

  it('g2-2, g2-4: a secret known by its place is hidden, after a valued option and after a -c or -e that is no code', async () => {
    expect(redactText('awk -v password=hunter2 BEGIN{exit}', true)).toBe(`awk -v password=${R} BEGIN{exit}`);
    expect(redactText('php -d mysql.default_password=hunter2 -v', true)).toBe(`php -d mysql.default_password=${R} -v`);
    expect(redactWords(['awk', '-v', 'password=hunter2', 'BEGIN{exit}'])).toEqual(['awk', '-v', `password=${R}`, 'BEGIN{exit}']);
    expect(await redactForAudit({ entry: 'calc.py', args: ['-e', 'prod', '--password', 'hunter2'] }, 'python_start_session', false, true)).toEqual({
      entry: 'calc.py',
      args: ['-e', 'prod', '--password', R],
    });
    for (const words of [
      ['psql', '-c', 'select 1', '--password', 'hunter2'],
      ['mysql', '-p', '--password', 'hunter2'],
      ['docker', 'exec', '-e', 'X=1', 'c', 'mysql', '--password', 'hunter2'],
      ['git', '-c', 'user.name=x', 'clone', 'https://h/x', '--token', 'hunter2'],
    ])
      expect(redactWords(words), words.join(' ')).toEqual([...words.slice(0, -1), R]);
    // Code's own arguments are still kept: it may run them (attack 18w T2).
    expect(redactWords(['sh', '-c', 'eval "$1"', '--password', 'touch x'])).toEqual(['sh', '-c', 'eval "$1"', '--password', 'touch x']);
    expect(redactText(`curl -H "Authorization: token ${TOK}" https://x`, true)).toBe(`curl -H "Authorization: token ${R}" https://x`);
    expect(redactText(`GH_TOKEN=${TOK} ./run`, true)).toBe(`GH_TOKEN=${R} ./run`);
    expect(redactText(`git clone https://x:${TOK}@github.com/a`, true)).toBe(`git clone https://x:${R}@github.com/a`);
  });

  it('a token in text that does not run (an answer, a value) is still hidden by its shape', async () => {
    expect(redactText(`see ${TOK}`)).toBe(`see ${R}`);
    expect(await redactForAudit({ path: `logs/${TOK}.txt`, pattern: TOK }, 'grep_files', false)).toEqual({ path: `logs/${R}.txt`, pattern: R });
  });
});

// Attacker h2 (on the rule above): place-known spans still hid what ran, and some place-known secrets were kept.
describe('attack 18ap h2: a path that runs is shown; a password by its place is hidden to the end of its word', () => {
  it('h2-1, h2-2: a directory named `token=x` or `http:` on a program path is shown, in command lines, argv and env', async () => {
    for (const line of [
      './token=x/../evil.sh R3',
      'setarch x86_64 ./token=x/../evil.sh',
      'fakeroot ./token=x/../evil.sh',
      './http://u:/../../tmp/d@x/../evil.sh R1',
      'nice ./http://u:p@x/evil.sh',
      'bash ./http://u:p@x/evil.sh',
      'python3 --check-hash-based-pycs always ./token=x/../evil.py',
      'python3 -bW ignore ./token=x/../evil.py',
      'gawk -i inplace -f ./token=x/../e.awk',
      'node --inspect-port 0 ./token=x/../e.js',
      'perl -x ./token=x/../ex.pl',
      'shell >|/tmp/out ./token=x/../evil.sh CLOBBER',
      'bash -c "{fd}>/dev/null ./token=x/../evil.sh FDVAR"',
      'find . -maxdepth 0 -exec sh -c "./token=x/../evil.sh FIND" ;',
    ])
      expect(redactText(line, true), line).toBe(line);
    expect(redactWords(['bash', '-c', './http://u:/../../tmp/d@x/../evil.sh R4'])).toEqual(['bash', '-c', './http://u:/../../tmp/d@x/../evil.sh R4']);
    expect(redactWords(['python3', '--check-hash-based-pycs', 'always', './token=x/../evil.py'])).toEqual(['python3', '--check-hash-based-pycs', 'always', './token=x/../evil.py']);
    const env = { command: 'bash -c true', env: ['BASH_ENV=./http://u:/../../tmp/d@x/../evil.sh'] };
    expect(await redactForAudit(env, 'keploy_mock_record', false, false, true)).toEqual(env);
    // su, script and env -S run their -c / -S value as a command line: its program shown, its passwords hidden.
    expect(redactText('su root -c "./token=x/../evil.sh SU"', true)).toBe('su root -c "./token=x/../evil.sh SU"');
    expect(redactText('script -qc "mysql -phunter2" /dev/null', true)).toBe(`script -qc "mysql -p${R}" /dev/null`);
    // A Windows-style option is no path: its password is hidden.
    expect(redactText('xfreerdp /v:h /u:bob /p:Hunter2', true)).toBe(`xfreerdp /v:h /u:bob /p:${R}`);
  });

  it('h2-3: a code-deciding variable that is a command or options is read as a command line: passwords hidden, programs shown', async () => {
    const record = {
      command: 'cargo build',
      env: ['JAVA_TOOL_OPTIONS=-Djavax.net.ssl.keyStorePassword=Hunter2Pw', 'GIT_SSH_COMMAND=sshpass -p Hunter3Pw ssh', 'LD_PRELOAD=/w/token=x/lib.so'],
    };
    expect(await redactForAudit(record, 'keploy_mock_record', false, false, true)).toEqual({
      command: 'cargo build',
      env: [`JAVA_TOOL_OPTIONS=-Djavax.net.ssl.keyStorePassword=${R}`, `GIT_SSH_COMMAND=sshpass -p ${R} ssh`, 'LD_PRELOAD=/w/token=x/lib.so'],
    });
    expect(redactText('MAVEN_OPTS=-Drepo.password=Hunter4Pw mvn package', true)).toBe(`MAVEN_OPTS=-Drepo.password=${R} mvn package`);
    expect(await redactForAudit({ command: 'x', env: { GIT_SSH_COMMAND: 'ssh -i ./token=x/../key' } }, 'keploy_mock_record', false, false, true)).toEqual({
      command: 'x',
      env: { GIT_SSH_COMMAND: 'ssh -i ./token=x/../key' },
    });
  });

  it('h2-4: in argv a password attached to its option is hidden to the next blank; `argv` in a plain operand makes no script', () => {
    expect(redactWords(['curl', '-uadmin:Hun$ter2xyz', '-H', 'X-Api-Key: abc$defghijk'])).toEqual(['curl', `-uadmin:${R}`, '-H', `X-Api-Key: ${R}`]);
    expect(redactWords(['mysql', '-pHunter$2xyz'])).toEqual(['mysql', `-p${R}`]);
    expect(redactWords(['mysql', '-pHunter2"xyz'])).toEqual(['mysql', `-p${R}`]);
    expect(redactWords(['mysql', '-u', 'argv', '--password', 'Hun;ter2'])).toEqual(['mysql', '-u', 'argv', '--password', R]);
    // A URL's password that ends at its `@` ends there.
    expect(redactWords(['curl', 'http://u:a$(b)@h'])).toEqual(['curl', `http://u:${R}@h`]);
  });
});
