import { describe, expect, it } from 'vitest';
import { eightfold } from '../core/cputime.js';
import { REDACTED as R, redactText } from '../core/secrets.js';
import { boundField, redact, redactWords } from './audit.js';

// Round 18at (issue 18, stop 45's attack v2 on the audit's reading of a command line). Found: a
// secret inside a quoted or escaped argument was hidden to the end of that argument, and whenever
// the argument was in fact a command line the code after the secret was stored as [REDACTED] while
// it ran: `sh -c "..."` in the arguments of a program the audit does not know (v2-1: prlimit,
// docker exec, gdb's `shell`), a script written with escaped blanks (v2-2: `sh -c
// PGPASSWORD=x\ touch\ m`; the other way, `sh -c ./dump.sh\ --password\ PW` kept PW), and the
// words after a script read as its options (v2-3: `sh -c 'eval "$1"' --password 'touch m'`).
// Now a value in such an argument ends at its first blank, as a shell reading it would end it; a
// script's own quotes and escapes are read as its shell reads them; and a script's arguments are
// never an option's values. Every line below was stored otherwise before.

/** A command line, read as the audit reads one. */
const stored = (line: string) => redactText(line, true);

describe('attack 18at v2-1: a command line inside an argument of a program the audit does not know', () => {
  it('the code after a secret is shown', () => {
    for (const [line, want] of [
      ['prlimit --nofile=1024 sh -c "PGPASSWORD=x touch m"', `prlimit --nofile=1024 sh -c "PGPASSWORD=${R} touch m"`],
      ['gdb -batch -ex "shell PGPASSWORD=x touch m"', `gdb -batch -ex "shell PGPASSWORD=${R} touch m"`],
      ['docker exec c sh -c "PGPASSWORD=x touch m"', `docker exec c sh -c "PGPASSWORD=${R} touch m"`],
      ["prlimit sh -c 'curl -u admin:pw h; touch m'", `prlimit sh -c 'curl -u admin:${R} h; touch m'`],
      ['x "--password PW touch m"', `x "--password ${R} touch m"`],
      ["wrap 'token=a b'", `wrap 'token=${R} b'`],
    ])
      expect(stored(line!), line).toBe(want);
  });

  it('a value the shell assigns itself is its whole word still', () => {
    for (const [line, want] of [
      ["PGPASSWORD='correct horse' psql", `PGPASSWORD='${R}' psql`],
      ['export PGPASSWORD="correct horse"; psql', `export PGPASSWORD="${R}"; psql`],
      ["env PGPASSWORD='correct horse' psql", `env PGPASSWORD='${R}' psql`],
    ])
      expect(stored(line!), line).toBe(want);
  });
});

describe('attack 18at v2-2: a script with escaped blanks and nested quotes is read as its shell reads it', () => {
  it('the code after a secret is shown, the secret hidden', () => {
    for (const [line, want] of [
      ['sh -c PGPASSWORD=x\\ touch\\ m', `sh -c PGPASSWORD=${R}\\ touch\\ m`],
      ['sh -c ./dump.sh\\ --password\\ PW', `sh -c ./dump.sh\\ --password\\ ${R}`],
      ['sh -c ./d\\ --password\\ PW\\;\\ touch\\ m', `sh -c ./d\\ --password\\ ${R}\\;\\ touch\\ m`],
      ['bash -c mysql\\ -pPW\\;\\ touch\\ m', `bash -c mysql\\ -p${R}\\;\\ touch\\ m`],
      ['su -c ./d\\ --password\\ PW root', `su -c ./d\\ --password\\ ${R} root`],
      ['ssh h ./d\\ --password\\ PW', `ssh h ./d\\ --password\\ ${R}`],
      ['docker exec c sh -c ./d\\ --password\\ PW', `docker exec c sh -c ./d\\ --password\\ ${R}`],
      ['sh -c "sh -c \\"PGPASSWORD=x touch m\\""', `sh -c "sh -c \\"PGPASSWORD=${R} touch m\\""`],
    ])
      expect(stored(line!), line).toBe(want);
  });
});

describe("attack 18at v2-3: the words after a shell's script are its arguments, not an option's values", () => {
  it('in a command line', () => {
    for (const line of [`sh -c 'eval "$1"' --password 'touch m'`, `sh -c 'eval "$1"' sh --password 'touch m'`, `prlimit sh -c 'eval "$1"' --password 'touch m'`]) expect(stored(line), line).toBe(line);
    // A secret inside one such word is found there still.
    expect(stored(`sh -c 'eval "$1"' x PGPASSWORD=y`)).toBe(`sh -c 'eval "$1"' x PGPASSWORD=${R}`);
  });

  it('in argv, after a shell in the arguments of a program the audit does not know', () => {
    for (const words of [
      ['prlimit', 'sh', '-c', 'eval "$1"', '--password', 'touch m'],
      ['prlimit', 'bash', '-c', 'eval "$@"', 'x', 'mysql', '--password', 'touch m'],
    ])
      expect(redactWords(words), words.join(' ')).toEqual(words);
  });
});

// Attack x2, on the fixes above. Found: a secret inside the value of a word the shell assigns was
// hidden whole, though the shell assigns only the word's own name (`A=PGPASSWORD='x touch m'`, then
// `eval $A` ran `touch m`: x2-1); inside a script, a quoted argument was read as its shell reads a
// word, whole, not to its first blank (`sh -c 'trap PGPASSWORD="x touch m" EXIT'`: x2-2); `eval`'s
// words were read as assignments before a program (x2-3); and a script that only runs its arguments
// (`exec "$@"`) had a password after them stored in clear (x2-4). Each was confirmed end to end.
describe('attack 18at x2: assignments, eval and scripts inside scripts', () => {
  it('x2-1: only the assigned name keeps its value whole; a secret inside that value ends at its first blank', () => {
    for (const [line, want] of [
      [`A=PGPASSWORD='x touch m' sh -c 'eval $A'`, `A=PGPASSWORD='${R} touch m' sh -c 'eval $A'`],
      [`A=PGPASSWORD='x touch m' sh -c 'env $A'`, `A=PGPASSWORD='${R} touch m' sh -c 'env $A'`],
      [`sh -c 'A=PGPASSWORD=x\\ touch\\ m; eval $A'`, `sh -c 'A=PGPASSWORD=${R}\\ touch\\ m; eval $A'`],
      [`export A=PGPASSWORD="x touch m"; eval $A`, `export A=PGPASSWORD="${R} touch m"; eval $A`],
      [`A=--password='x touch m'`, `A=--password='${R} touch m'`],
      // The assigned name's own value, at any depth, is whole still.
      [`sh -c 'PGPASSWORD="correct horse" psql'`, `sh -c 'PGPASSWORD="${R}" psql'`],
      [`sh -c "PGPASSWORD='correct horse' psql"`, `sh -c "PGPASSWORD='${R}' psql"`],
    ])
      expect(stored(line!), line).toBe(want);
    expect(redactWords(['sh', '-c', 'A=PGPASSWORD="x touch m"; eval $A'])).toEqual(['sh', '-c', `A=PGPASSWORD="${R} touch m"; eval $A`]);
  });

  it('x2-2: inside a script, a quoted argument ends at its first blank as at the top', () => {
    for (const [line, want] of [
      [`sh -c 'sh -c "eval \\$1" sh PGPASSWORD="x touch m"'`, `sh -c 'sh -c "eval \\$1" sh PGPASSWORD="${R} touch m"'`],
      [`sh -c 'trap PGPASSWORD="x touch m" EXIT'`, `sh -c 'trap PGPASSWORD="${R} touch m" EXIT'`],
      [`sh -c 'ssh h PGPASSWORD="x touch m"'`, `sh -c 'ssh h PGPASSWORD="${R} touch m"'`],
      [`sh -c 'wrap --password "x touch m"'`, `sh -c 'wrap --password "${R} touch m"'`],
    ])
      expect(stored(line!), line).toBe(want);
  });

  it("x2-3: eval's words are read again, never as assignments", () => {
    for (const [line, want] of [
      [`eval PGPASSWORD="x touch m"`, `eval PGPASSWORD="${R} touch m"`],
      [`sh -c 'eval PGPASSWORD=x\\ touch\\ m'`, `sh -c 'eval PGPASSWORD=${R}\\ touch\\ m'`],
      [`bash -c 'command eval PGPASSWORD="x touch m"'`, `bash -c 'command eval PGPASSWORD="${R} touch m"'`],
      [`! eval PGPASSWORD="x touch m"`, `! eval PGPASSWORD="${R} touch m"`],
    ])
      expect(stored(line!), line).toBe(want);
    expect(redactWords(['sh', '-c', 'eval PGPASSWORD="x touch m"'])).toEqual(['sh', '-c', `eval PGPASSWORD="${R} touch m"`]);
  });

  it('x2-4: the arguments of a script that only runs them are a command, its password hidden', () => {
    expect(stored(`sh -c 'exec "$@"' sh mysql --password S3cretPW`)).toBe(`sh -c 'exec "$@"' sh mysql --password ${R}`);
    expect(stored(`sh -c '"$@"' sh mysql --password S3cretPW`)).toBe(`sh -c '"$@"' sh mysql --password ${R}`);
    expect(redactWords(['sh', '-c', 'exec "$@"', 'sh', 'mysql', '--password', 'S3cretPW'])).toEqual(['sh', '-c', 'exec "$@"', 'sh', 'mysql', '--password', R]);
    // A script inside them is a script still: its arguments are never an option's values.
    const line = `sh -c 'exec "$@"' sh sh -c 'eval "$1"' --password 'touch m'`;
    expect(stored(line)).toBe(line);
  });
});

// Attack y2 (on the fixes above). Found: a setting whose name reads as a secret's but whose value is a
// command (restic's RESTIC_PASSWORD_COMMAND, --password-command, --token-cmd, git's credential.helper,
// pass's PASSWORD_STORE_GPG_OPTS) had the command hidden as a password while it ran (y2-1, y2-2,
// confirmed with restic and git); an env object's code-deciding variable of a secret-looking name
// (cargo's CARGO_REGISTRIES_X_CREDENTIAL_PROVIDER) was hidden, though its list form was kept (y2-3);
// and the client's name, the tool's name and the session id were stored as sent, a `Bearer dk_...`
// in them in clear (y2-4).
describe('attack 18at y2: what names a command is read as one; what a client names is redacted', () => {
  it('y2-1, y2-2: a secret-named command, program or options is shown, its own passwords hidden', () => {
    for (const [line, want] of [
      [`RESTIC_PASSWORD_COMMAND='sh -c "id > ran; echo pw"' restic snapshots`, `RESTIC_PASSWORD_COMMAND='sh -c "id > ran; echo pw"' restic snapshots`],
      [`restic --password-command "touch ran" snapshots`, `restic --password-command "touch ran" snapshots`],
      [`tool --token-cmd "touch ran"`, `tool --token-cmd "touch ran"`],
      [`git -c credential.helper='!id>ran;:' fetch`, `git -c credential.helper='!id>ran;:' fetch`],
      [`RCLONE_PASSWORD_COMMAND="mysql -pS3cret -e x" rclone ls`, `RCLONE_PASSWORD_COMMAND="mysql -p${R} -e x" rclone ls`],
    ])
      expect(stored(line!), line).toBe(want);
    // The secret itself, next to them, is hidden still.
    expect(stored('restic --password S3cret --password-file f')).toBe(`restic --password ${R} --password-file f`);
  });

  it('y2-1, y2-3: an environment, as a list or an object, keeps what decides code, reads commands, hides secrets', () => {
    const env = {
      CARGO_REGISTRIES_X_CREDENTIAL_PROVIDER: '/root/evilprov',
      RESTIC_PASSWORD_COMMAND: 'sh -c "id; echo pw"',
      PASSWORD_STORE_GPG_OPTS: '--batch',
      RESTIC_PASSWORD: 'S3cret',
    };
    expect(redact({ command: 'python3 x.py', env })).toEqual({ command: 'python3 x.py', env: { ...env, RESTIC_PASSWORD: R } });
    const list = Object.entries(env).map(([k, v]) => `${k}=${v}`);
    expect(redact({ command: 'python3 x.py', env: list })).toEqual({ command: 'python3 x.py', env: [...list.slice(0, 3), `RESTIC_PASSWORD=${R}`] });
  });

  it("y2-4: a client's name, a tool's name and a session id are stored with their secrets hidden", () => {
    const key = `dk_u-${'a1B2c3D4e5'.repeat(4)}`;
    expect(boundField(`agent Authorization: Bearer ${key}`)).toBe(`agent Authorization: Bearer ${R}`);
    expect(boundField(`Bearer ${key}`)).toBe(`Bearer ${R}`);
    expect(boundField('claude-code 1.0')).toBe('claude-code 1.0');
    expect(boundField(`${'x'.repeat(600)} Bearer ${key}`)).not.toContain(key);
  });
});

// Attack a3 (on the fixes above). Found: `$'...'` inside a script was read with its escapes as plain
// letters, while bash decodes them (`\x3b` is `;`, `\x20` a blank): `eval true --password
// $'a\x3btouch\x20m'` ran `touch m` stored as [REDACTED] (a3-1, critical); a secret-named variable
// the script then runs (`TOKEN='touch m' bash -c '$TOKEN'`, an alias, an array) was hidden (a3-2);
// MAKEFLAGS, GOFLAGS, RUSTFLAGS kept the passwords in them (a3-3); a git config's Authorization
// header and DOCKER_AUTH_CONFIG's auth were kept in clear (a3-4). Each was confirmed end to end.
describe('attack 18at a3: $-quotes decoded, variables run as commands, flags and configs', () => {
  it("a3-1: a script's $'...' is read as bash decodes it: the code after a secret is shown", () => {
    for (const [line, want] of [
      [`bash -c 'eval true --password $'"'"'a\\x3btouch\\x20m'"'"`, `bash -c 'eval true --password $'"'"'${R}\\x3btouch\\x20m'"'"`],
      [`bash -c 'trap -- $'"'"'true --password a\\x3btouch\\x20m'"'"' EXIT'`, `bash -c 'trap -- $'"'"'true --password ${R}\\x3btouch\\x20m'"'"' EXIT'`],
      [`bash -c 'eval wrap --password $'"'"'a\\073touch\\040m'"'"`, `bash -c 'eval wrap --password $'"'"'${R}\\073touch\\040m'"'"`],
      [`bash -c 'eval sshpass -p $'"'"'a\\u003btouch\\u0020m'"'"' ssh h'`, `bash -c 'eval sshpass -p $'"'"'${R}\\u003btouch\\u0020m'"'"' ssh h'`],
      // A URL's "password" that its shell splits is no password: what runs is shown.
      [`bash -c 'eval curl https://u:$'"'"'a\\x3btouch\\x20m'"'"'@h/'`, `bash -c 'eval curl https://u:$'"'"'a\\x3btouch\\x20m'"'"'@h/'`],
    ])
      expect(stored(line!), line).toBe(want);
  });

  it('a3-2: a secret-named variable run as a command, or an alias, holds code: shown', () => {
    for (const line of [
      `TOKEN='touch m' bash -c '$TOKEN'`,
      `env API_TOKEN='touch m' bash -c 'eval "$API_TOKEN"'`,
      `PGPASSWORD='touch m'; $PGPASSWORD`,
      `alias api_token='touch m'; api_token`,
      `API_TOKEN=(touch m); "\${API_TOKEN[@]}"`,
    ])
      expect(stored(line), line).toBe(line);
    // Expanded as a value, a secret is one still.
    expect(stored('TOKEN=abc curl -H "Authorization: Bearer $TOKEN" h')).toBe(`TOKEN=${R} curl -H "Authorization: Bearer $TOKEN" h`);
  });

  it('a3-3, a3-4: flags read as command lines, credentials in code-deciding configs hidden', () => {
    const env = [
      'MAKEFLAGS=DB_PASSWORD=hunter2xyz',
      'GOFLAGS=-ldflags=-X=main.token=abc123secret',
      'GIT_CONFIG_KEY_0=http.extraHeader',
      'GIT_CONFIG_VALUE_0=Authorization: Bearer s3cr3tT0kenValue99',
      'DOCKER_AUTH_CONFIG={"auths":{"r.io":{"auth":"dXNlcjpwYXNzd29yZA=="}}}',
      'LD_PRELOAD=/x/y.so',
    ];
    expect(redact({ command: 'make', env })).toEqual({
      command: 'make',
      env: [
        `MAKEFLAGS=DB_PASSWORD=${R}`,
        `GOFLAGS=-ldflags=-X=main.token=${R}`,
        'GIT_CONFIG_KEY_0=http.extraHeader',
        `GIT_CONFIG_VALUE_0=Authorization: Bearer ${R}`,
        `DOCKER_AUTH_CONFIG={"auths":{"r.io":{"auth":"${R}"}}}`,
        'LD_PRELOAD=/x/y.so',
      ],
    });
    expect(stored(`MAKEFLAGS='DB_PASSWORD=hunter2xyz' make all`)).toBe(`MAKEFLAGS='DB_PASSWORD=${R}' make all`);
  });
});

// Attack c3 (on the fixes above). Found: `$'\c'` read its closing quote as the control character's
// and went on past it (c3-1); an escape past U+FFFF adds two UTF-16 units but was traced once, so
// what a script two levels down hid shifted onto the code after it (c3-2); a secret-named variable
// piped into a shell (`printenv TOKEN | sh`, `echo $TOKEN | xargs sh -c`) was hidden (c3-3).
describe("attack 18at c3: $'...' escapes at a quote and past U+FFFF, variables piped into a shell", () => {
  it('the code after a secret is shown', () => {
    const astral = '\\U0001F600'.repeat(12);
    for (const [line, want] of [
      [`bash -c 'PGPASSWORD=$'\\''\\c'\\'' touch m #'\\'''`, `bash -c 'PGPASSWORD=$'\\''${R}'\\'' touch m #'\\'''`],
      [`bash -c 'bash -c $'\\''PGPASSWORD=${astral} touch m'\\'''`, `bash -c 'bash -c $'\\''PGPASSWORD=${R}U0001F600 touch m'\\'''`],
      [`bash -c 'bash -c $'\\''A=${astral} PGPASSWORD=hunter2 touch m'\\'''`, `bash -c 'bash -c $'\\''A=${astral} PGPASSWORD=${R} touch m'\\'''`],
    ])
      expect(stored(line!), line).toBe(want);
    for (const line of [`env TOKEN='touch m' bash -c 'echo $TOKEN | xargs -I{} sh -c {}'`, `env TOKEN='touch m' bash -c 'printenv TOKEN | sh'`]) expect(stored(line), line).toBe(line);
    // A pipe into anything else runs nothing from it.
    expect(stored(`PGPASSWORD=abc psql -c 'select 1' | grep x`)).toBe(`PGPASSWORD=${R} psql -c 'select 1' | grep x`);
  });
});

// Attack d3 (on the fixes above). Found: env -S splits its string at `\_`, which a shell reads as `_`
// (`env -S 'PGPASSWORD=a\_touch\_m'` ran `touch m`: d3-1); a here-doc fed to a shell loses a level of
// backslashes before the shell reads it (d3-2); and more places where bash runs a variable (`if $TOKEN`,
// `A=1 $TOKEN`, `timeout 5 $TOKEN`, `bash <<< "$TOKEN"`, `sh < <(...)`, `declare -n`, `-c --`,
// `set --`: d3-3). Each was confirmed end to end.
describe('attack 18at d3: env -S words, here-docs into a shell, variables run', () => {
  it('the code after a secret, or a variable that runs, is shown', () => {
    for (const [line, want] of [
      [`env -S 'PGPASSWORD=a\\_touch\\_m'`, `env -S 'PGPASSWORD=${R}\\_touch\\_m'`],
      [`env --split-string='TOKEN=a\\_touch\\_m'`, `env --split-string='TOKEN=${R}\\_touch\\_m'`],
      [`env -S 'curl --password a\\_touch\\_m'`, `env -S 'curl --password ${R}\\_touch\\_m'`],
    ])
      expect(stored(line!), line).toBe(want);
    expect(redactWords(['env', '-S', 'PGPASSWORD=a\\_touch\\_m'])).toEqual(['env', '-S', `PGPASSWORD=${R}\\_touch\\_m`]);
    for (const line of [
      `bash -c 'sh <<EOF\nPGPASSWORD=\\\\"a touch m \\\\"\nEOF'`,
      `TOKEN='touch m'; bash <<< "$TOKEN"`,
      `TOKEN='touch m'; if $TOKEN; then :; fi`,
      `TOKEN='touch m'; A=1 $TOKEN`,
      `TOKEN='touch m'; timeout 5 $TOKEN`,
      `TOKEN='touch m'; sh < <(echo $TOKEN)`,
      `TOKEN='touch m'; declare -n R=TOKEN; $R`,
      `TOKEN='touch m'; bash -c -- "$TOKEN"`,
      `TOKEN='touch m'; set -- $TOKEN; "$@"`,
    ])
      expect(stored(line), line).toBe(line);
  });
});

describe('attack 18at: the reading of scripts stays linear', () => {
  // As attack 18aq's linearity tests: n and 8n characters, the least CPU time of 7 runs; a quadratic reading takes ~64x.
  // The escaped script took 10 s at 128,000 characters before (70x).
  function expectLinear(name: string, make: (n: number) => string): void {
    const t = eightfold(name, make, stored);
    expect(t.big, t.message).toBeLessThan(t.bound);
  }
  it('a script of escaped blanks', () => expectLinear('escaped script', (n) => `sh -c ${'mysql\\ -pa\\ '.repeat(n / 12)}`));
  it('a script in a script', () => expectLinear('nested script', (n) => `sh -c "sh -c \\"${'./d --password PW '.repeat(n / 18)}\\""`));
  it("a script's arguments", () => expectLinear('script arguments', (n) => `sh -c 'eval "$1"' ${"--password 'a b' ".repeat(n / 17)}`));
});
