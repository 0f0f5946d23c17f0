// Round 18af (attacker k1): three rounds of patterns that told a password from code each missed a
// spelling, and the audit hid code that ran: an assignment after a secret-looking name (k1-1), a
// function's name and a command kept in convenience variables (k1-2), a literal that code ran
// (k1-3), the gdb command on pipe's left side (k1-4); shell lines through MI and abbreviations kept
// their passwords (k1-5); and in command lines a URL's "password" or htpasswd's last word hid a
// command substitution that ran (k1-6, k1-7). Now code is shown but for a quoted literal's inert
// text, and a hidden span of a command line never holds shell.
import { describe, expect, it } from 'vitest';
import { REDACTED as R } from '../core/secrets.js';
import { redact, redactWords } from './audit.js';

const code = (command: string) => (redact({ command }, { code: 'gdb' }) as { command: string }).command;

describe('attack 18af k1-1..k1-4: in code a debugger runs, only a quoted literal inert text is ever hidden', () => {
  it('k1-1, k1-2: gdb code after a secret-looking name is shown whole', () => {
    for (const command of [
      'print token=1,is_admin=5',
      'set $secret = is_admin=1337',
      'set $token = system',
      'set $password = "touch /tmp/x"',
      'call ((int(*)(char*))$token)($password)',
      'print password=is_admin',
      'print mysql -phunter2',
      'print --token ?is_admin=9:0',
    ])
      expect(code(command), command).toBe(command);
  });

  it('k1-3: a literal that holds blanks, quotes, brackets, an escape or an assignment is shown (code may run it)', () => {
    for (const expression of [
      `exec(dict(token='__import__("os").system("touch x")')['token'])`,
      `os.system(dict(token='touch x')['token'])`,
      `os.system(dict(token='touch\\x20x')['token'])`,
      `exec(dict(password='is_admin=1')['password'])`,
      `os.system(dict(token='a;id')['token'])`,
    ])
      expect(redact({ expression }, { code: true }), expression).toEqual({ expression });
  });

  it('k1-3: a comment, an f-string or a quote after a name opens no literal', () => {
    for (const expression of ["# '''\ntoken=system\n# '''\ntoken('touch x')", 'f"https://u:{password}@h"', "rf'{token=}'", "x'token=system'"])
      expect(redact({ expression }, { code: true }), expression).toEqual({ expression });
  });

  it('k1-4: pipe reads its gdb command as code and its shell side as a command line', () => {
    for (const command of ['pipe print mongo -p?is_admin=7:0 | cat', '| print mongo -p?is_admin=7:0 | cat', 'pipe -d XX print a|b XX cat']) expect(code(command), command).toBe(command);
    expect(code('pipe print 1 | mysql -uroot -pAb=cd9x')).toBe(`pipe print 1 | mysql -uroot -p${R}`);
    expect(code('|print 1|mysql -pAb=cd9x')).toBe(`|print 1|mysql -p${R}`);
    expect(code('pipe -d XX print token=x XX mysql -pAb=cd9x')).toBe(`pipe -d XX print token=x XX mysql -p${R}`);
  });

  it('secrets in literals are still hidden: a URL password, a quoted key, argv given as a list, an Authorization header', () => {
    expect(redact({ expression: 'requests.get("https://u:hunter2@h")' }, { code: true })).toEqual({ expression: `requests.get("https://u:${R}@h")` });
    expect(redact({ expression: 'connect(password="hunter2", user="u")' }, { code: true })).toEqual({ expression: `connect(password="${R}", user="u")` });
    expect(redact({ expression: 'subprocess.run(["mysql", "-phunter2"])' }, { code: true })).toEqual({ expression: `subprocess.run(["mysql", "-p${R}"])` });
    expect(redact({ expression: `get(u, headers={"Authorization": "Bearer abcdefghijklmnop1234"})` }, { code: true })).toEqual({ expression: `get(u, headers={"Authorization": "Bearer ${R}"})` });
    expect(redact({ expression: `k = b'''ghp_abcdefghijklmnopqrstuvwxyz0123456789'''` }, { code: true })).toEqual({ expression: `k = b'''${R}'''` });
    // A literal with base64's padding is a password; gdb's set environment value is data.
    expect(code('print --token "YWJjZA=="')).toBe(`print --token "${R}"`);
    expect(code('set environment PGPASSWORD hunter2')).toBe(`set environment PGPASSWORD ${R}`);
  });
});

describe('attack 18af k1-5: gdb shell lines through MI and abbreviations are command lines', () => {
  it('hides their passwords', () => {
    for (const command of [
      '-interpreter-exec console "shell mysql -pAb=cd9x"',
      '-interpreter-exec --thread 1 console "she mysql -pAb=cd9x"',
      'thr apply all shell mysql -pAb=cd9x',
      'thread app all shell mysql -pAb=cd9x',
      'fr apply all shell mysql -pAb=cd9x',
      't a all shell mysql -pAb=cd9x',
    ])
      expect(code(command), command).toMatch(/-p\[REDACTED\]"?$/);
  });

  it('an MI console command with an escape is code, shown; MI code is code', () => {
    for (const command of ['-interpreter-exec console "print \\"a\\", token=system"', '-interpreter-exec console "print token=system"', '-data-evaluate-expression "password=is_admin"'])
      expect(code(command), command).toBe(command);
  });
});

describe('attack 18af k1-6, k1-7: a hidden span of a command line never holds shell', () => {
  it('a URL password or htpasswd last word that substitutes a command is shown', () => {
    for (const command of [`sh -c 'curl http://u:$(touch\${IFS}x)@h/'`, 'curl http://u:`id`@h/', 'htpasswd -b f u a$(touch${IFS}x)', `sh -c "htpasswd -b f u 'a$(touch x)'"`])
      expect(redact({ command }), command).toEqual({ command });
    // A password ends where shell begins: what the shell runs after it is shown.
    for (const tail of [';id', '&id', '>x', '|id']) expect(redact({ command: `mysql -pa${tail}` })).toEqual({ command: `mysql -p${R}${tail}` });
  });

  it('passwords without shell are hidden; brackets and braces in a word are no shell', () => {
    expect(redact({ command: 'curl http://u:hunter2@h/ && htpasswd -b f u Hunter2' })).toEqual({ command: `curl http://u:${R}@h/ && htpasswd -b f u ${R}` });
    expect(redact({ command: 'PGPASSWORD=(hunter2) psql; curl http://a:p4ss{x}@h' })).toEqual({ command: `PGPASSWORD=${R} psql; curl http://a:${R}@h` });
  });

  it('argv is read by no shell: a password is hidden whatever it holds, but an inline script is code', () => {
    expect(redactWords(['mysql', '--password', 'a;b$c'])).toEqual(['mysql', '--password', R]);
    expect(redactWords(['curl', 'http://u:a$(b)@h'])).toEqual(['curl', `http://u:${R}@h`]);
    expect(redactWords(['sh', '-c', 'curl http://u:$(touch x)@h'])).toEqual(['sh', '-c', 'curl http://u:$(touch x)@h']);
  });
});

describe('rounds 18ac e1-1, 18ad g1-6: the spellings left open', () => {
  it('Oracle logons, FreeRDP, rabbitmqctl, net use/user, PowerShell -Password:, XML elements are hidden', () => {
    const cases: Array<[string, string]> = [
      ['sqlplus scott/Hunter2Secret@orcl', `sqlplus scott/${R}@orcl`],
      ['sqlplus -s scott/Hunter2@//h:1521/svc', `sqlplus -s scott/${R}@//h:1521/svc`],
      ['rman target sys/Pw9x@db', `rman target sys/${R}@db`],
      ['xfreerdp /v:h /u:bob /p:Hunter2', `xfreerdp /v:h /u:bob /p:${R}`],
      ['rabbitmqctl add_user bob Hunter2 && rabbitmqctl change_password bob Hunter3', `rabbitmqctl add_user bob ${R} && rabbitmqctl change_password bob ${R}`],
      ['net use \\\\srv\\share Hunter2 /user:bob', `net use \\\\srv\\share ${R} /user:bob`],
      ['net user bob Hunter2 /add', `net user bob ${R} /add`],
      ['Connect-Thing -Password:Hunter2 -User:x', `Connect-Thing -Password:${R} -User:x`],
      ['<config><password>Hunter2</password><user>u</user></config>', `<config><password>${R}</password><user>u</user></config>`],
    ];
    for (const [command, hidden] of cases) expect(redact({ command }), command).toEqual({ command: hidden });
    expect(redactWords(['sqlplus', 'scott/Hunter2@orcl'])).toEqual(['sqlplus', `scott/${R}@orcl`]);
  });

  it('what only looks alike is kept: sqlplus / as sysdba, paths, net user * (asks), a conditional in code', () => {
    for (const command of ['sqlplus / as sysdba', 'cp src/x dst/y', 'net user bob * /add', 'a ? -password:x : y', `sh -c "sqlplus u/$(id)@db"`])
      expect(redact({ command }), command).toEqual({ command });
    expect(code('print c ? -password:is_admin : 0')).toBe('print c ? -password:is_admin : 0');
  });
});

// Round 18ag (attacker m1), on the rule above: a line starting `set env` was read as `set
// environment` whatever followed (m1-1, quadratic too: m1-6); gdb/MI's later console commands,
// its other options and escapes were not read (m1-2); `pip`, `wit` were not known (m1-3); a log
// message's prose quotes were read as a literal around code (m1-4); the program's command line
// after run/start/set args was read as code (m1-5).
describe('attack 18ag m1: set environment, MI, abbreviations, log messages, program arguments', () => {
  it('m1-1: only gdb set environment NAME VALUE is data; set envx = ... is code', () => {
    for (const command of ['set envz_entry, password=is_admin=77', 'set envx = token=1,is_admin=5', 'set envz_entry, $token = system', 'set env\nPASSWORD hunter2'])
      expect(code(command), command).toBe(command);
    expect(code('set environment PGPASSWORD hunter2')).toBe(`set environment PGPASSWORD ${R}`);
    expect(code('set env DB_PASSWORD=hunter 2')).toBe(`set env DB_PASSWORD=${R}`);
    expect(code('set env DATABASE_URL = postgres://u:pw@h/db')).toBe(`set env DATABASE_URL = postgres://u:${R}@h/db`);
    expect(code('set env HOME /root')).toBe('set env HOME /root');
  });

  it('m1-2: every command of -interpreter-exec is read, after any options, escapes unescaped', () => {
    expect(code('-interpreter-exec console "echo" "shell echo A9 mysql -uroot -pSecret9 db"')).toBe(`-interpreter-exec console "echo" "shell echo A9 mysql -uroot -p${R} db"`);
    expect(code('-interpreter-exec --thread-group i1 console "shell mysql -pSecret9 db"')).toBe(`-interpreter-exec --thread-group i1 console "shell mysql -p${R} db"`);
    expect(code('12-interpreter-exec --language c console "shell mysql -pSecret9 db"')).toBe(`12-interpreter-exec --language c console "shell mysql -p${R} db"`);
    expect(code('-interpreter-exec console "shell echo A7 mysql -uroot -pSecret9 \\"db\\""')).toBe(`-interpreter-exec console "shell echo A7 mysql -uroot -p${R} \\"db\\""`);
    expect(code('-interpreter-exec mi "-interpreter-exec console \\"shell mysql -pSecret9\\""')).toBe(`-interpreter-exec mi "-interpreter-exec console \\"shell mysql -p${R}\\""`);
    for (const command of ['-interpreter-exec console "print 1" "print token=1,is_admin=8"', '-interpreter-exec console print token=system']) expect(code(command), command).toBe(command);
  });

  it('m1-3: pip and wit are pipe and with', () => {
    expect(code('pip print 1 | echo A8 mysql -uroot -pSecret9 db')).toBe(`pip print 1 | echo A8 mysql -uroot -p${R} db`);
    expect(code('wit print pretty -- shell echo A6 mysql -uroot -pSecret9 db')).toBe(`wit print pretty -- shell echo A6 mysql -uroot -p${R} db`);
    expect(code('pip print token=system | cat')).toBe('pip print token=system | cat');
  });

  it("m1-4: a log message's prose around {...} is text, its braces code", () => {
    const logMessage = "loaded '{dict(token=exec ).popitem()[1](bytes((105,109)).decode())}'";
    expect(redact({ logMessage }, { code: true })).toEqual({ logMessage });
    expect(redact({ logMessage: 'login with token=abc123 for {user}' }, { code: true })).toEqual({ logMessage: `login with token=${R} for {user}` });
    expect(redact({ logMessage: '{{literal}} token=abc123 {x}' }, { code: true })).toEqual({ logMessage: `{{literal}} token=${R} {x}` });
  });

  it('m1-5: the program command line after run, start, set args, set exec-wrapper, -exec-arguments', () => {
    const cases: Array<[string, string]> = [
      ['run --password Secret9 > /tmp/x', `run --password ${R} > /tmp/x`],
      ['r --password Secret9', `r --password ${R}`],
      ['start --password=Secret9', `start --password=${R}`],
      ['set args --token Secret8', `set args --token ${R}`],
      ['set exec-wrapper env PGPASSWORD=Secret9', `set exec-wrapper env PGPASSWORD=${R}`],
      ['-exec-arguments --password Secret9', `-exec-arguments --password ${R}`],
    ];
    for (const [command, hidden] of cases) expect(code(command), command).toBe(hidden);
    // A password ends where shell begins: the substitution is shown.
    expect(code('run $(touch x) --password a$(id)')).toBe(`run $(touch x) --password ${R}$(id)`);
  });

  it("gdb's rules are gdb's: a Python expression that begins like run or shell is code", () => {
    for (const expression of ['r = x; token = system; token("id")', 'run = token = system', 'shell = password = exec'])
      expect(redact({ expression }, { code: true }), expression).toEqual({ expression });
  });
});
