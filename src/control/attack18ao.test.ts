import { describe, expect, it } from 'vitest';
import { REDACTED as R, redactText } from '../core/secrets.js';
import { redactForAudit } from './audit.js';

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

  it('a token in a value is still hidden: an option, a header, a URL (its password, its path), an echo, an assignment', () => {
    expect(redactText(`curl -H "Authorization: token ${TOK}" https://x`, true)).toBe(`curl -H "Authorization: token ${R}" https://x`);
    expect(redactText(`git clone https://x:${TOK}@github.com/a`, true)).toBe(`git clone https://x:${R}@github.com/a`);
    expect(redactText(`curl https://hooks.example.com/services/${TOK}`, true)).toBe(`curl https://hooks.example.com/services/${R}`);
    expect(redactText(`echo ${TOK} | gh auth login --with-token`, true)).toBe(`echo ${R} | gh auth login --with-token`);
    expect(redactText(`GH_TOKEN=${TOK} ./run`, true)).toBe(`GH_TOKEN=${R} ./run`);
    expect(redactText(`timeout 5 ./run --token ${TOK}`, true)).toBe(`timeout 5 ./run --token ${R}`);
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
