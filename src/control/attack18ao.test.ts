import { describe, expect, it } from 'vitest';
import { REDACTED as R, redactText } from '../core/secrets.js';
import { redactForAudit, redactWords } from './audit.js';

// Attack 18ao c2-1, c2-2: a program named like a token ran while the audit kept `./[REDACTED]`:
// behind a wrapper with options (`timeout 5`, `nice -n 5`, `env -i`), a redirection, an unquoted
// `sh -c` script, gdb's argv `-c`, a `cwd` that decides which `./run` runs, and `CC=./TOK` for make.
const TOK = 'ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';

describe('attack 18ao c2-1, c2-2: what runs is shown, even named like a token', () => {
  it('a command line shows its program past wrappers with options, redirections and a shell -c, by path or by name', () => {
    for (const line of [
      `timeout 5 ./${TOK}`,
      `timeout -s KILL 5 ${TOK}`,
      `nice -n 5 ./${TOK}`,
      `env -i ./${TOK}`,
      `sudo -u root ${TOK}`,
      `stdbuf -o0 ${TOK}`,
      `2>/dev/null ./${TOK}`,
      `> out ${TOK}`,
      `/bin/sh -c ./${TOK}`,
      `bash -ec ${TOK}`,
      `sh -c '${TOK} arg'`,
      `taskset 0x3 ${TOK}`,
      `chroot / ${TOK}`,
      `cd /w && /w/sub/${TOK}`,
    ])
      expect(redactText(line, true), line).toBe(line);
  });

  // Since round 18ap, a token known only by its shape is kept in text that runs (attack18ap.test.ts): a URL's path, an echo's word.
  it('a token in a value is still hidden: an option, a header, a URL password, an assignment', () => {
    expect(redactText(`curl -H "Authorization: token ${TOK}" https://x`, true)).toBe(`curl -H "Authorization: token ${R}" https://x`);
    expect(redactText(`git clone https://x:${TOK}@github.com/a`, true)).toBe(`git clone https://x:${R}@github.com/a`);
    expect(redactText(`GH_TOKEN=${TOK} ./run`, true)).toBe(`GH_TOKEN=${R} ./run`);
    expect(redactText(`timeout 5 ./run --token ${TOK}`, true)).toBe(`timeout 5 ./run --token ${R}`);
    // A `(` inside a word is the word's, not a subshell (test/attack-18c's `DB_PASSWORD=WORD(rest)`): the value stays hidden.
    expect(redactText('DB_PASSWORD=Hunter2Secret(9q) ./migrate', true)).toBe(`DB_PASSWORD=${R} ./migrate`);
    // A logon's password after a `/` is a password, not a file's name.
    expect(redactText('sqlplus scott/Hunter2Secret@orcl', true)).toBe(`sqlplus scott/${R}@orcl`);
  });

  it("gdb's argv -c script, its cwd, and env values that name a program are kept as sent", async () => {
    const args = {
      program: '/r/sh',
      args: ['-c', `./${TOK}`],
      cwd: `/r/${TOK}`,
      env: [`CC=./${TOK}`, `CC=${TOK}`, `MANPAGER=${TOK}`, `CMAKE_C_COMPILER=${TOK}`, `RUSTC_WRAPPER=${TOK}`, `SUDO_ASKPASS=${TOK}`],
    };
    expect(await redactForAudit(args, 'open', false, 'gdb')).toEqual(args);
    expect(await redactForAudit({ command: 'make', env: [`CC=./${TOK}`] }, 'keploy_mock_record', false, false, true)).toEqual({ command: 'make', env: [`CC=./${TOK}`] });
    // A secret's name still hides its value, a relative cwd too is kept.
    expect(await redactForAudit({ cwd: TOK, env: [`API_TOKEN=${TOK}`] }, 'open', false, 'gdb')).toEqual({ cwd: TOK, env: [`API_TOKEN=${R}`] });
  });
});

// Attack 18ao e2 (on the fix above): the program was read at blanks, not as the runner splits words; argv's wrappers were not
// read; every CARGO_* and any name holding TOOL/PROGRAM kept its URL password; a token in a URL without a scheme was kept.
describe('attack 18ao e2: programs read as they run, secrets in values still hidden', () => {
  it('e2-1, e2-6: words are read with their quotes and escapes: a quoted blank or separator is inside its word', () => {
    for (const line of [`PATH=/usr/bin:. A="x y" ${TOK}`, `A=x\\ y ${TOK}`, `A='x y' ${TOK}`, `env "A=x y" ${TOK}`, `timeout "5" ${TOK}`, `sh -c 'A="x y" ${TOK}'`])
      expect(redactText(line, true), line).toBe(line);
    // A quoted ; | & ( is data, not a new command: a password after it is a value, hidden.
    expect(redactText('curl -H "X-Tokens: old;password=hunter2" localhost:1/', true)).toBe(`curl -H "X-Tokens: ${R};password=${R}" localhost:1/`);
    expect(redactText('curl -d "q&password=hunter2" x', true)).toBe(`curl -d "q&password=${R}" x`);
    expect(redactText('psql "host=db|password=hunter2"', true)).toBe(`psql "host=db|password=${R}"`);
    // A substitution inside double quotes still runs a command: its program is shown.
    expect(redactText(`echo "$(./${TOK})"`, true)).toBe(`echo "$(./${TOK})"`);
    expect(redactText(`echo "$(${TOK} x)"`, true)).toBe(`echo "$(${TOK} x)"`);
  });

  it('e2-2: in argv, the program a wrapper, a shell -c or an interpreter runs is shown; a shell script is read as a command line', () => {
    expect(redactWords(['env', 'PATH=/usr/bin:.', TOK])).toEqual(['env', 'PATH=/usr/bin:.', TOK]);
    expect(redactWords(['timeout', '5', TOK])).toEqual(['timeout', '5', TOK]);
    expect(redactWords(['sh', '-c', TOK])).toEqual(['sh', '-c', TOK]);
    expect(redactWords(['busybox', 'sh', '-c', `${TOK} --token ${TOK}`])).toEqual(['busybox', 'sh', '-c', `${TOK} --token ${R}`]);
    expect(redactWords(['python3', TOK])).toEqual(['python3', TOK]);
    expect(redactWords(['sh', '-c', `mysql -p${TOK}`])).toEqual(['sh', '-c', `mysql -p${R}`]);
    // A token as an option's value is still hidden.
    expect(redactWords(['curl', '-H', `Authorization: token ${TOK}`])).toEqual(['curl', '-H', `Authorization: token ${R}`]);
  });

  it('e2-3, e2-5: only variables that name a program keep their value; a URL password in one is hidden; a credential provider is shown', async () => {
    const env = [
      'CARGO_HTTP_PROXY=http://deploy:hunter2@proxy.corp:3128',
      'CARGO_REGISTRIES_CORP_INDEX=sparse+https://deploy:hunter2@reg.corp/index/',
      'TOOL_URL=http://u:hunter2@h',
      'GIT_PROXY_COMMAND=http://u:hunter2@h',
      'CARGO_REGISTRY_CREDENTIAL_PROVIDER=./evil2',
      `CARGO_BUILD_RUSTC_WRAPPER=${TOK}`,
    ];
    expect(await redactForAudit({ command: 'cargo build', env }, 'keploy_mock_record', false, false, true)).toEqual({
      command: 'cargo build',
      env: [
        `CARGO_HTTP_PROXY=http://deploy:${R}@proxy.corp:3128`,
        `CARGO_REGISTRIES_CORP_INDEX=sparse+https://deploy:${R}@reg.corp/index/`,
        `TOOL_URL=http://u:${R}@h`,
        // A command's program is shown, even when it reads as a URL: it runs as a path (a directory `http:`: attack 18ap h2-1).
        'GIT_PROXY_COMMAND=http://u:hunter2@h',
        'CARGO_REGISTRY_CREDENTIAL_PROVIDER=./evil2',
        `CARGO_BUILD_RUSTC_WRAPPER=${TOK}`,
      ],
    });
    expect(redactText('CARGO_HTTP_PROXY=http://u:hunter2@proxy:3128 cargo build', true)).toBe(`CARGO_HTTP_PROXY=http://u:${R}@proxy:3128 cargo build`);
  });

  // e2-4 (a JWT in a URL's path kept) was fixed by reading URL-like words; round 18ap g2-5 showed a URL cannot be told from a
  // path that runs (`"https://h/hooks"/TOK`, `$BASE/TOK`, a directory named `https:`): a token known only by its shape is
  // now kept in text that runs, a URL's path included; a URL's password and a signature in its query are hidden by place.
  it('e2-4: a URL password and a signed query are hidden; a token-shaped path word is kept', () => {
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';
    expect(redactText(`curl localhost:3000/auth/reset/${jwt}`, true)).toBe(`curl localhost:3000/auth/reset/${jwt}`);
    expect(redactText('curl https://u:hunter2@h/x?X-Amz-Signature=abcdef0123456789', true)).toBe(`curl https://u:${R}@h/x?X-Amz-Signature=${R}`);
    expect(redactText(`./bin/run --out build/${TOK}`, true)).toBe(`./bin/run --out build/${TOK}`);
  });
});
