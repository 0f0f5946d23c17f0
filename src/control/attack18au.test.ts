import { describe, expect, it } from 'vitest';
import { cpuTimes, eightfold, linearMessage } from '../core/cputime.js';
import { REDACTED as R, redactText } from '../core/secrets.js';
import { redact } from './audit.js';

// Round 18au (issue 18, stop 47's attack e3 on the audit's reading of a command line). Found: a
// secret-named variable counted as code only where a list of spellings said bash runs it, and bash
// runs a value in more places than any list holds: `command -p $TOKEN`, `setsid $TOKEN`, `perl -e
// "$TOKEN"`, `echo "$TOKEN" |& bash`, `read c <<< "$TOKEN"; $c`, `$(echo "$TOKEN")`, `(( PASSWORD ))`
// evaluating `x[$(...)]` (e3-1 to e3-4, each confirmed end to end: the code ran, the audit kept
// `[REDACTED]`); a variable of the call's `env` that its command runs (e3-5); abbreviated long options
// (`wget --passw=`, e3-6); curl's `-E FILE:PASSPHRASE` (e3-7); an argv word `PGPASSWORD=a b c` kept
// `b c` (e3-8). Now a secret-named variable's value is code wherever the line names the variable
// again, but as `$NAME` where the audit hides a secret itself. Every line below was stored otherwise before.

/** A command line, read as the audit reads one. */
const stored = (line: string) => redactText(line, true);

describe('attack 18au e3-1 to e3-4: a variable the line names again holds code, shown', () => {
  it('run from any command position, fed to a shell or an interpreter, copied, or read as arithmetic', () => {
    for (const line of [
      `bash -c 'TOKEN="touch m"; command -p $TOKEN'`,
      `bash -c 'TOKEN="touch m"; exec -a x $TOKEN'`,
      `bash -c 'TOKEN="touch m"; nice -n5 $TOKEN'`,
      `bash -c 'TOKEN="touch m"; setsid -w $TOKEN'`,
      `bash -c 'TOKEN="touch m"; flock /tmp/lk $TOKEN'`,
      `bash -c 'TOKEN="touch m"; coproc $TOKEN; wait'`,
      `bash -c 'TOKEN="touch m"; $EMPTY$TOKEN'`,
      `bash -c 'TOKEN="touch m"; $(echo "$TOKEN")'`,
      `bash -c 'TOKEN="touch m"; read c <<< "$TOKEN"; $c'`,
      `bash -c 'TOKEN="touch m"; printf -v c %s "$TOKEN"; $c'`,
      `bash -c 'TOKEN="touch m"; for c in "$TOKEN"; do $c; done'`,
      `bash -c 'TOKEN="touch m"; mapfile -t -C "$TOKEN" -c 1 a <<<x'`,
      `bash -c 'TOKEN="touch m"; \${TOKEN:-x}'`,
      `TOKEN='touch m'; export TOKEN; bash -c "\\$TOKEN"`,
      `bash -c 'TOKEN="touch m"; echo "$TOKEN" |& bash'`,
      `bash -c 'TOKEN="touch m"; echo "$TOKEN" | env bash'`,
      `bash -c 'TOKEN="touch m"; . /dev/stdin <<< "$TOKEN"'`,
      `bash -c 'TOKEN="system(q(touch m))"; perl -e "$TOKEN"'`,
      `bash -c 'TOKEN="touch m"; bash -c -e "$TOKEN"'`,
      `bash -c 'PASSWORD=$'"'"'x[\\x24(touch m)]'"'"'; (( PASSWORD ))'`,
      `bash -c 'PASSWORD=$'"'"'x[\\x24(touch m)]'"'"'; echo \${PATH:PASSWORD:1}'`,
      `bash -c 'PASSWORD=$'"'"'x[\\x60touch m\\x60]'"'"'; [[ $PASSWORD -eq 0 ]]'`,
      `TOKEN='touch m'; printenv TOK''EN | cat`,
      `TOKEN='touch m' python3 -c 'import os; exec(os.environ["TOKEN"])'`,
    ])
      expect(stored(line), line).toBe(line);
  });

  it('in argv, and in a gdb shell line', () => {
    const script = 'TOKEN="touch m"; command -p $TOKEN';
    expect(redact({ command: ['bash', '-c', script] })).toEqual({ command: ['bash', '-c', script] });
    expect(redact({ program: '/bin/bash', args: ['-c', script] })).toEqual({ program: '/bin/bash', args: ['-c', script] });
    expect(redact({ command: `shell ${script}` }, { code: 'gdb' })).toEqual({ command: `shell ${script}` });
  });

  it('a secret still hidden where the line gives it to a program as one, or names it nowhere', () => {
    for (const [line, want] of [
      ['TOKEN=abc curl -H "Authorization: Bearer $TOKEN" h', `TOKEN=${R} curl -H "Authorization: Bearer $TOKEN" h`],
      ['TOKEN=abc mytool --token "$TOKEN"', `TOKEN=${R} mytool --token "$TOKEN"`],
      ['API_TOKEN=abc curl "https://h/?api_token=${API_TOKEN}"', `API_TOKEN=${R} curl "https://h/?api_token=\${API_TOKEN}"`],
      ['PASSWORD=pw1 curl -u "admin:$PASSWORD" h', `PASSWORD=${R} curl -u "admin:$PASSWORD" h`],
      ['TOKEN=abc; export TOKEN; mytool', `TOKEN=${R}; export TOKEN; mytool`],
      ['PGPASSWORD=secret1 psql -h db', `PGPASSWORD=${R} psql -h db`],
      ['GITHUB_TOKEN=abc gh pr list --label token', `GITHUB_TOKEN=${R} gh pr list --label token`],
    ])
      expect(stored(line!), line).toBe(want);
  });
});

describe("attack 18au e3-5: a variable of the call's env that its command names", () => {
  it('is code in a list and in an object; one the command gives as a password, or names nowhere, is hidden', () => {
    expect(redact({ command: "bash -c '$TOKEN'", env: ['TOKEN=touch m'] })).toEqual({ command: "bash -c '$TOKEN'", env: ['TOKEN=touch m'] });
    expect(redact({ command: ['bash', '-c', 'command -p $TOKEN'], env: { TOKEN: 'touch m' } })).toEqual({
      command: ['bash', '-c', 'command -p $TOKEN'],
      env: { TOKEN: 'touch m' },
    });
    expect(redact({ command: 'printenv | sh', env: ['API_TOKEN=touch m'] })).toEqual({ command: 'printenv | sh', env: ['API_TOKEN=touch m'] });
    expect(redact({ command: 'curl -H "Authorization: Bearer $TOKEN" h', env: ['TOKEN=abc123secret'] })).toEqual({
      command: 'curl -H "Authorization: Bearer $TOKEN" h',
      env: [`TOKEN=${R}`],
    });
    expect(redact({ command: 'psql -h db', env: ['PGPASSWORD=correct horse'], cmd: 'x' })).toEqual({ command: 'psql -h db', env: [`PGPASSWORD=${R}`], cmd: 'x' });
    expect(redact({ command: ['psql'], env: { PGPASSWORD: 'pw' } })).toEqual({ command: ['psql'], env: { PGPASSWORD: R } });
  });
});

describe('attack 18au e3-6, e3-7, e3-8: abbreviated options, a certificate passphrase, argv assignments', () => {
  it('a start of a secret long option is the option (getopt_long, MySQL)', () => {
    for (const [line, want] of [
      ['wget -q --user=u --passw=hunter2 http://h/', `wget -q --user=u --passw=${R} http://h/`],
      ['wget --http-passw=h2 --ftp-passw h3 u', `wget --http-passw=${R} --ftp-passw ${R} u`],
      ['mysql --passwo=hunter2 --pas=x1 --passwor y2', `mysql --passwo=${R} --pas=${R} --passwor ${R}`],
      ['gpg --passphr X1; mariadb --passw X2', `gpg --passphr ${R}; mariadb --passw ${R}`],
      // Only programs known to take a start of an option for it (attack h3-4: argparse expands `--passw` to a lone
      // `--password-command`, which ran while the audit hid it).
      ['wrap --secr X2 --api-ke X3 --tok X4', 'wrap --secr X2 --api-ke X3 --tok X4'],
      ["python3 tool.py --passw 'rm -f v1'; python3 tool.py --passw='rm -f v1'", "python3 tool.py --passw 'rm -f v1'; python3 tool.py --passw='rm -f v1'"],
      // Too short to name one, or another option.
      ['x --api https://h --sec 5 --to y --pa z', 'x --api https://h --sec 5 --to y --pa z'],
    ])
      expect(stored(line!), line).toBe(want);
    expect(redact({ command: ['wget', '--passw', 'hunter2', 'u'] })).toEqual({ command: ['wget', '--passw', R, 'u'] });
  });

  it("curl's -E, --cert and --proxy-cert FILE:PASSPHRASE", () => {
    expect(stored('curl -E cert.pem:Correct-Horse-9 h; curl --cert c.p12:Horse-9 h; curl --proxy-cert c:pp h')).toBe(`curl -E cert.pem:${R} h; curl --cert c.p12:${R} h; curl --proxy-cert c:${R} h`);
    expect(stored('curl --cert-type P12 --cert c.p12 h')).toBe('curl --cert-type P12 --cert c.p12 h');
  });

  it('an argv word that assigns a name or an option is one value: all of it hidden', () => {
    expect(redact({ command: ['env', 'PGPASSWORD=correct horse battery', 'psql', '-h', 'db'] })).toEqual({ command: ['env', `PGPASSWORD=${R}`, 'psql', '-h', 'db'] });
    expect(redact({ command: ['export', 'PGPASSWORD=correct horse battery'] })).toEqual({ command: ['export', `PGPASSWORD=${R}`] });
    expect(redact({ command: ['psql', '--password=correct horse battery'] })).toEqual({ command: ['psql', `--password=${R}`] });
    // A script's words are its arguments, which it may run: a value there ends at its first blank, as in a command line.
    expect(redact({ command: ['bash', '-c', 'eval "$1"', 'x', '--password=a touch m'] })).toEqual({ command: ['bash', '-c', 'eval "$1"', 'x', `--password=${R} touch m`] });
  });
});

describe('attack 18au: the reading of named variables stays linear', () => {
  function expectLinear(name: string, make: (n: number) => string): void {
    const t = eightfold(name, make, stored);
    expect(t.big, t.message).toBeLessThan(t.bound);
  }
  it('many expansions of one secret', () => expectLinear('expansions', (n) => `TOKEN=abc; ${'curl -H "Authorization: Bearer $TOKEN" h; '.repeat(n / 42)}`));
  it('many secret-named variables', () => expectLinear('names', (n) => Array.from({ length: n / 24 }, (_, i) => `TOKEN_${i}=a x $TOKEN_${i};`).join(' ')));
});

// Attack h3 (on the rule above). Found: an expansion in a secret's place is split into words when
// unquoted, or read again by eval, ssh or a nested shell (`zip -P $ZIP_PASSWORD`, `git clone
// https://u:$TOKEN@h/`, `eval true --password $TOKEN`: h3-1, confirmed end to end); a line that
// prints every variable and runs what it picks names none (`$(printenv | grep TOKE | cut -d= -f2-)`:
// h3-2); option names that take a command (`--password-eval`, `credential_process`: h3-3); a start of
// an option that a program expands to a command's (h3-4); a function bash imports (h3-5).
describe('attack 18au h3: places that split or read again, variables dumped, commands named', () => {
  const ran = (command: string | string[], env: string[]) => expect(redact({ command, env }), JSON.stringify(command)).toEqual({ command, env });
  it("h3-1: a variable in a secret's place is a secret only while its value is one plain word", () => {
    ran("bash -c 'eval true --password $TOKEN'", ['TOKEN=x;touch m']);
    ran("bash -c 'git clone -q ./repo https://u:$TOKEN@h/'", ['TOKEN=x --no-local -u touch${IFS}m2;']);
    ran("bash -c 'zip -q -P $ZIP_PASSWORD a.zip f'", ['ZIP_PASSWORD=x -T -TT touch${IFS}mz;']);
    ran('bash -c \'eval curl -H "Authorization: Bearer $TOKEN" h\'', ['TOKEN=x;touch m']);
    ran(['bash', '-c', 'eval true --password $TOKEN'], ['TOKEN=x;touch m']);
    expect(stored(`TOKEN='x;touch m' curl -H "Authorization: Bearer $TOKEN" h`)).toBe(`TOKEN='x;touch m' curl -H "Authorization: Bearer $TOKEN" h`);
    // One plain word stays hidden.
    expect(redact({ command: "bash -c 'curl -u u:$TOKEN h'", env: ['TOKEN=Zq9-x_7.w'] })).toEqual({ command: "bash -c 'curl -u u:$TOKEN h'", env: [`TOKEN=${R}`] });
    expect(stored('TOKEN=abc123 curl -H "Authorization: Bearer $TOKEN" h')).toBe(`TOKEN=${R} curl -H "Authorization: Bearer $TOKEN" h`);
  });

  it('h3-2: a line that prints every variable makes each of them code', () => {
    for (const command of [
      "bash -c '$(printenv | grep TOKE | cut -d= -f2-)'",
      `bash -c 'eval "$(env)"'`,
      "bash -c 'printenv |& sh'",
      "bash -c 'env | python3'",
      `bash -c 'eval "$(declare -p | grep TOKE)"'`,
      `bash -c 'eval "$(export -p)"'`,
      `bash -c 'for v in $(compgen -v); do eval "\\$$v"; done'`,
      "bash -c 'sh < /proc/self/environ'",
    ])
      ran(command, ['API_TOKEN=touch m']);
    // env as a wrapper prints nothing.
    expect(stored('env PGPASSWORD=abc psql -h db')).toBe(`env PGPASSWORD=${R} psql -h db`);
  });

  it('h3-3: a secret-named option or variable that takes a command shows it', () => {
    for (const line of [
      "msmtp --passwordeval 'touch m' -a x",
      "python3 tool.py --password-eval 'touch m'",
      "python3 tool.py --password-run 'touch m'",
      "python3 tool.py --token-script 'touch m'",
      "aws configure set credential_process 'touch m'",
    ])
      expect(stored(line), line).toBe(line);
    const env = ['AWS_CREDENTIAL_PROCESS=touch m', 'MSMTP_PASSWORDEVAL=touch m', 'TOKEN_SCRIPT=touch m'];
    expect(redact({ command: 'x', env })).toEqual({ command: 'x', env });
  });

  it('h3-5: a function bash imports from its environment is code', () => {
    ran('bash -c get_token', ['BASH_FUNC_get_token%%=() { touch m; }']);
  });
});

// Attack i3 (on the h3 fixes). Found, each confirmed end to end: a one-word value that begins with
// `-` is an option where it stands (`perl -pass $API_TOKEN` ran `-esystem+q+...+`: i3-1); a program
// reading its environment as an object (`process.env.API_TOKEN`, jq's `env.API_TOKEN`: i3-2); a
// lower-case name that says it holds a command (`db_password_cmd`: i3-3); more ways to print every
// variable (`env -u X`, `/usr/bin/printenv`, `compgen -A variable`, `/proc/self/env*`: i3-4).
describe('attack 18au i3: options in one word, environments read as objects, commands in any case, more dumps', () => {
  const ran = (command: string | string[], env: string[]) => expect(redact({ command, env }), JSON.stringify(command)).toEqual({ command, env });
  it('each value that runs is shown', () => {
    ran("bash -c 'prlimit perl -pass $API_TOKEN h.txt'", ['API_TOKEN=-esystem+q+touch+,q+m+']);
    ran(`node -e 'require("child_process").execSync(process.env.API_TOKEN)'`, ['API_TOKEN=touch m']);
    ran("bash -c 'eval $(jq -nr env.API_TOKEN)'", ['API_TOKEN=touch m']);
    ran("bash -c '$db_password_cmd'", ['db_password_cmd=touch m']);
    for (const command of [
      "bash -c 'eval $(env -u X | grep _TOKE | cut -d= -f2-)'",
      "bash -c 'eval $(/usr/bin/printenv | grep _TOKE | cut -d= -f2-)'",
      "bash -c 'eval \\$$(compgen -A variable | grep _TOKE)'",
      "bash -c 'eval $(cat /proc/self/env* | tr \\\\0 \\\\n | grep _TOKE | cut -d= -f2-)'",
      "bash -c 'eval $(env -0 | tr \\\\0 \\\\n | grep TOKE)'",
      "bash -c 'eval $(export | grep TOKE)'",
      "bash -c 'eval $(ps eww $$ | grep -o TOKE.*)'",
    ])
      ran(command, ['API_TOKEN=touch m']);
    expect(redact({ command: ['bash', '-c', '$db_password_cmd'], env: { db_password_cmd: 'touch m', api_token: 'abc' } })).toEqual({
      command: ['bash', '-c', '$db_password_cmd'],
      env: { db_password_cmd: 'touch m', api_token: R },
    });
  });

  it('a plain secret stays hidden: set with options prints nothing, a word without a leading dash is one', () => {
    expect(redact({ command: "bash -c 'set -euo pipefail; psql -h db'", env: ['PGPASSWORD=abc'] })).toEqual({ command: "bash -c 'set -euo pipefail; psql -h db'", env: [`PGPASSWORD=${R}`] });
    expect(redact({ command: "bash -c 'curl -u u:$API_TOKEN h'", env: ['API_TOKEN=Zq9x7'] })).toEqual({ command: "bash -c 'curl -u u:$API_TOKEN h'", env: [`API_TOKEN=${R}`] });
  });
});

// Attack j3 (on the i3 fixes). Found: dumps with redirections, assignments or options (`env 2>/dev/null`,
// `env X=1`, `set 2>&1`, `compgen -X "" -v`, `/proc/self//environ`: j3-1); a name in arithmetic next to
// `-` or `/` (`$((API_TOKEN-0))`: j3-2); an interpreter walking its whole environment (`os.environ.items()`,
// awk's `ENVIRON`: j3-3); and the other way, a dump's word as a plain argument (`--profile local`, `true env`)
// made every secret code, stored in clear (j3-4); an env object's `KEY`, `auth`, `pw` named by `args` (j3-5).
describe('attack 18au j3: dumps where a command starts, arithmetic, environments walked', () => {
  const ran = (command: string | string[], env: string[]) => expect(redact({ command, env }), JSON.stringify(command)).toEqual({ command, env });
  it('each value that runs is shown', () => {
    for (const command of [
      "bash -c '$(env 2>/dev/null | grep TOKE | cut -d= -f2-)'",
      "bash -c 'eval $(env X=1 | grep TOKE | cut -d= -f2-)'",
      "bash -c 'eval $(cat /proc/self//environ | tr \\\\0 \\\\n | grep TOKE)'",
      `bash -c 'for n in $(compgen -X "" -v | grep TOKE); do eval "\\$$n"; done'`,
      "bash -c 'eval $(set 2>&1 | grep TOKE)'",
      "bash -c 'eval $(env --debug | grep TOKE)'",
      `python3 -c 'import os;[os.system(v) for k,v in os.environ.items() if "TOK" in k]'`,
      `awk 'BEGIN{for(k in ENVIRON) if (k ~ /TOK/) system(ENVIRON[k])}'`,
      `node -e 'for (const [k,v] of Object.entries(process.env)) if (k.includes("TOK")) require("child_process").execSync(v)'`,
      `perl -e 'for (keys %ENV) { system($ENV{$_}) if /TOK/ }'`,
    ])
      ran(command, ['API_TOKEN=touch m']);
    ran("bash -c 'echo $((API_TOKEN-0))'", ['API_TOKEN=x[$(touch m)]']);
    ran("bash -c '((1-API_TOKEN))'", ['API_TOKEN=x[$(touch m)]']);
    expect(redact({ entry: 'x.py', args: ['$KEY'], env: { KEY: 'touch m', auth: 'a1' } })).toEqual({ entry: 'x.py', args: ['$KEY'], env: { KEY: 'touch m', auth: R } });
  });

  it('a word that is a dump only where a command starts: as an argument, the secrets stay hidden', () => {
    for (const command of [
      'aws s3 ls --profile local',
      'deploy --target env',
      'cd /tmp; true env',
      'npm run export',
      'make set',
      'python3 -m venv env && . env/bin/activate',
      "env -S 'psql -h db'",
      `python3 -c 'import os; print(os.environ["HOME"])'`,
    ])
      expect(redact({ command, env: ['API_TOKEN=abc123'] }), command).toEqual({ command, env: [`API_TOKEN=${R}`] });
  });

  it('finding a dump stays linear (its lookbehind is bounded)', () => {
    for (const [name, make] of [
      ['paths of env', (n: number) => `x ${'/env'.repeat(n / 4)}`],
      ['quotes before env', (n: number) => `x ${`'"\\ env `.repeat(n / 9)}`],
      ['then env', (n: number) => `x ${'then  env= '.repeat(n / 11)}`],
    ] as const) {
      const t = eightfold(name, make, (text) => redact({ command: text, env: ['API_TOKEN=abc'] }));
      expect(t.big, t.message).toBeLessThan(t.bound);
    }
  });
});

// Attack k3 (on the j3 fixes). Found: dumps behind a wrapper or written with quotes (`nice env`, `e""nv`,
// `declare +x`, `jq env`, `os.environb`, `process["env"]`: k3-1), code built and fed to a wrapped shell
// (`printf "\$API_%s" TOKEN | nice sh`: k3-2); and the other way, `| xargs`, an array's keys `${!a[@]}`
// and a secret's name in a path inside `[[ ]]` made every secret code, stored in clear (k3-3).
describe('attack 18au k3: dumps behind wrappers and quotes, code fed to a wrapped shell, and plain lines', () => {
  it('each value that runs is shown', () => {
    for (const command of [
      "bash -c 'x=$(nice env | grep ^API_TO | cut -d= -f2-); $x'",
      `bash -c 'x=$(e""nv | grep ^API_TO | cut -d= -f2-); $x'`,
      "bash -c 'x=$(declare +x | grep ^API_TO | cut -d= -f2-); $x'",
      `bash -c 'x=$(jq -rn "env|to_entries[]|.value"); $x'`,
      "bash -c 'x=$(stdbuf -o0 env | grep TO); $x'",
      "bash -c 'x=$(command -p env | grep TO); $x'",
      "bash -c 'x=$(timeout 5 printenv | grep TO); $x'",
      "bash -c 'cd /proc/self; x=$(tr \\\\0 \\\\n <environ | grep TO); $x'",
      `python3 -c 'import os; [os.system(v) for k, v in os.environb.items()]'`,
      `node -e 'for (const v of Object.values(process["env"])) require("child_process").execSync(v)'`,
      `bash -c 'printf "\\$API_%s\\n" TOKEN | nice sh'`,
      `bash -c 'printf "\\$API_%s\\n" TOKEN > >(bash)'`,
    ]) {
      const env = ['API_TOKEN=touch m'];
      expect(redact({ command, env }), command).toEqual({ command, env });
    }
  });

  it('a secret stays hidden in plain lines: xargs, array keys, a path in [[ ]]', () => {
    for (const command of ['git ls-files | xargs wc -l', `bash -c 'a=(1 2); for i in "\${!a[@]}"; do echo $i; done'`, `bash -c '[[ -r /run/secrets/API_TOKEN ]] && echo ok'`])
      expect(redact({ command, env: ['API_TOKEN=abc123'] }), command).toEqual({ command, env: [`API_TOKEN=${R}`] });
  });
});

// Attack l3 (on the k3 fixes). Found: a name the shell joins from parts the audit did not join
// (`\$API_"TOKEN"`, `"\$API_"TOKEN`, `\$API_TOKE{N,}`, `declare -g -n`: l3-1); plain lines that made every
// secret code (`./run.sh < input.txt`, `$ENV`, `environ.yaml`, `jq . env.json`: l3-2); and `env -!env ...`,
// read on to its end from every `env`, took 4.2 s at 64,000 characters (l3-3).
describe('attack 18au l3: names joined from parts, plain lines, and a dump read once', () => {
  it('each value that runs is shown; plain lines keep their secrets hidden', () => {
    for (const command of [`bash -c 'eval \\$API_"TOKEN"'`, `bash -c 'eval "\\$API_"TOKEN'`, `bash -c 'eval \\$API_TOKE{N,}'`, `bash -c 'declare -g -n r=API_TOKEN; $r'`]) {
      const env = ['API_TOKEN=touch m'];
      expect(redact({ command, env }), command).toEqual({ command, env });
    }
    for (const command of [
      './run.sh < input.txt',
      'npm publish < /dev/null',
      'echo deploy to $ENV',
      'app --config environ.yaml',
      'jq . env.json',
      `bash -c 'curl -H "Authorization: Bearer $API_TOKEN" h'`,
    ])
      expect(redact({ command, env: ['API_TOKEN=abc123'] }), command).toEqual({ command, env: [`API_TOKEN=${R}`] });
  });

  it('a dump is found in time linear in the line', () => {
    for (const [name, make] of [
      ['env -!env', (n: number) => `env${' -!env'.repeat(n / 6)} x`],
      ['env -u !env', (n: number) => `env${' -u !env'.repeat(n / 8)} x`],
      ['env X=!env', (n: number) => `env${' X=!env'.repeat(n / 7)} x`],
      ['declare -g', (n: number) => `declare${' -g'.repeat(n / 3)} x`],
    ] as const) {
      // With an environment beside it the call's command is read for the variables it names (commandVariables), to its first
      // 64 KiB: 8,000 and 64,000 characters (a quadratic reading takes ~64x; it took 54 ms and 4.2 s).
      const run = (text: string) => redact({ command: text, env: ['API_TOKEN=x'] });
      const [small, big] = [make(8_000), make(64_000)];
      const t = cpuTimes(
        () => run(small),
        () => run(big),
        5,
      );
      expect(t.big, linearMessage(name, t, 8)).toBeLessThan(Math.max(24 * t.small, 10));
    }
  });
});
