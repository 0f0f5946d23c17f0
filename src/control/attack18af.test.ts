// Rounds 18af-18ah (attackers k1, m1, n1): patterns that told a password from code each missed a
// spelling, and the audit hid code that ran: an assignment after a secret-looking name (k1-1), a
// function's name kept in a convenience variable (k1-2), a literal that code ran (k1-3); and each
// reading of gdb's own syntax (shell lines, pipe, MI, `set environment`, the program's arguments)
// missed one of gdb's spellings (`pip`, `wit`, `with ...on--shell`, MI's octal escapes, an alias
// named `she`: k1-4, k1-5, m1-1..m1-5, n1-1..n1-7), hiding code or keeping a password. Now code a
// debugger runs is code, all of it: only a quoted literal's inert text is hidden; a log message is
// prose around `{...}` code (m1-4, n1-8). In command lines outside code a hidden span never holds
// shell (k1-6, k1-7).
import { describe, expect, it } from 'vitest';
import { REDACTED as R } from '../core/secrets.js';
import { redact, redactWords } from './audit.js';

const code = (command: string) => (redact({ command }, { code: 'gdb' }) as { command: string }).command;

describe('attacks 18af-18ah: in code a debugger runs, only a quoted literal inert text is ever hidden', () => {
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

  it('k1-3: a comment, an f-string (or a keyword read as its prefix) opens no literal', () => {
    for (const expression of ["# '''\ntoken=system\n# '''\ntoken('touch x')", 'f"https://u:{password}@h"', "rf'{token=}'", "if'token=system' else 0"])
      expect(redact({ expression }, { code: true }), expression).toEqual({ expression });
  });

  it("gdb's own syntax is code too: shell lines, pipe, MI, with, set environment, the program's arguments, aliases", () => {
    for (const command of [
      // k1-4, k1-5, m1-2, m1-3, n1-4: pipe's gdb side and shell side, MI and its escapes, abbreviations
      'pipe print mongo -p?is_admin=7:0 | cat',
      'pip print 1 | echo A8 mysql -uroot -pSecret9 db',
      '-interpreter-exec console "echo" "shell echo A9 mysql -uroot -pSecret9 db"',
      '-interpreter-exec console "\\163hell mysql -pSecret9"',
      '-data-evaluate-expression "password=is_admin"',
      'thr apply all shell mysql -pAb=cd9x',
      // m1-1, n1-1, n1-2: set environment and names that begin like it
      'set envz_entry, password=is_admin=77',
      'set env BASH_ENV <password>$(touch x)</password>',
      'set env API_TOKEN a[$(touch x)]',
      // m1-5: the program's arguments
      'run --password Secret9 > /tmp/x',
      // n1-3, n1-5, n1-6: pipe's -d, with's split at --
      '| -d XX print c | mongo -p?is_admin=system(environ[3]):0 XX cat',
      'w print pretty on--print -- !c,token=is_admin=9',
      'w print pretty on--shell mysql -pSecret9 -- print 1',
      // n1-7: an alias named like an abbreviation
      'she -p?is_admin=7:0',
      'set envi token = system("touch x")',
    ])
      expect(code(command), command).toBe(command);
  });

  it('p1-1..p1-3: no reading of code for its literals is safe either: code is kept as sent, a quoted password too (the price)', () => {
    for (const args of [
      // p1-1: gdb's with takes a setting's value as raw text: 'x is no quote; C comments in compile code
      { command: "with prompt 'x -- print $token = system ,'a'" },
      { command: "with prompt 'x -- print password = is_admin = 77 ,'a'" },
      { command: "compile code /*'*/ token = system; /*'*/" },
      // p1-2: a lone CR ends a Python comment; p1-3: pydevd turns @LINE@ into a line break
      { expression: '# x\rs = """\ntoken = exec\n# """' },
      { condition: '#@LINE@s = """@LINE@token = exec@LINE@# """' },
      // what earlier rules hid: a quoted password, a URL's, an Authorization header, a log message's prose
      { expression: 'connect(password="hunter2", user="u")' },
      { expression: 'requests.get("https://u:hunter2@h")' },
      { expression: `get(u, headers={"Authorization": "Bearer abcdefghijklmnop1234"})` },
      { logMessage: "loaded '{dict(token=exec ).popitem()[1](bytes((105,109)).decode())}' token=abc123" },
    ])
      expect(redact(args, { code: true }), JSON.stringify(args)).toEqual(args);
  });

  it('a plain gdb shell line (shell or ! first) is a command line: its passwords hidden, its program and shell shown', () => {
    expect(code("shell mysql -uroot -p'Abcd9x' db")).toBe(`shell mysql -uroot -p'${R}' db`);
    expect(code('shell true curl "https://b.s3.amazonaws.com/o?X-Amz-Signature=f00dfeed&X-Amz-Date=1"')).toBe(`shell true curl "https://b.s3.amazonaws.com/o?X-Amz-Signature=${R}&X-Amz-Date=1"`);
    expect(code('shell ./token=x/../evil $(touch y)')).toBe('shell ./token=x/../evil $(touch y)');
    for (const command of ['she mysql -pSecret9', 'pipe print 1 | mysql -pSecret9', 'print shell ? 0 : token=system']) expect(code(command), command).toBe(command);
  });

  it("only gdb's commands hold shell lines: a Python log message or expression that starts with ! is code, kept (attack 18ak)", () => {
    // A debugpy logpoint evaluates its braces: `-p{...}` was hidden as mysql's password while it ran.
    const logMessage = '!mysql -p{__import__(chr(111)+chr(115)).system(chr(105)+chr(100))}';
    const args = { logMessage, expression: 'shell mysql -pSecret9', condition: '!mysql -pSecret9', program: 'shell mysql -ptoken=x/../evil' };
    expect(redact(args, { code: true })).toEqual(args);
    // A program path is never a shell line, in gdb's calls too: the program that runs is shown.
    expect(redact({ program: args.program }, { code: 'gdb' })).toEqual({ program: args.program });
  });

  it('outside a debugger the same fields are no code: their secrets are hidden', () => {
    expect(redact({ command: "mysql -uroot -p'Abcd9x' db", expression: 'connect(password="hunter2")' })).toEqual({ command: `mysql -uroot -p'${R}' db`, expression: `connect(password="${R}")` });
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
    expect(redact({ command: 'PGPASSWORD=hunter2 psql; curl http://a:p4ss{x}@h' })).toEqual({ command: `PGPASSWORD=${R} psql; curl http://a:${R}@h` });
    expect(redact({ x: 'PGPASSWORD=(hunter2)' })).toEqual({ x: `PGPASSWORD=${R}` });
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

// Round 18aj (attacker q1, q1-1): a program path holding a secret-looking `token=`, `api_key=` or
// `password=` was redacted as text, and the audit hid which program ran: gdb's and the debugger's
// `program`, Python's `entry` and `pythonPath`, argv's first word, a mocks command's program.
describe('attack 18aj q1-1: the program that runs is never hidden', () => {
  it('program, entry and pythonPath are kept as sent; argv keeps its program', () => {
    for (const args of [
      { program: 'token=x/../evil', args: ['--password', 'hunter2'] },
      { entry: 'token=x/../evil.py', pythonPath: '/tmp/api_key=1/../../usr/bin/python3' },
      { argv: ['./token=x/../../usr/bin/touch', '/tmp/p'] },
      { args: ['./token=x/../evil'] },
    ]) {
      const kept = redact(args) as Record<string, unknown>;
      for (const k of ['program', 'entry', 'pythonPath']) if (k in args) expect(kept[k], k).toBe((args as Record<string, unknown>)[k]);
      if ('argv' in args) expect(kept.argv).toEqual(args.argv);
    }
    expect(redact({ program: 'token=x/../evil', args: ['--password', 'hunter2'] })).toEqual({ program: 'token=x/../evil', args: ['--password', R] });
    expect(redactWords(['mysql', '-phunter2'])).toEqual(['mysql', `-p${R}`]);
  });

  it("a command line's programs are shown, after assignments, wrappers and in a script; its passwords still hidden", () => {
    for (const command of ['./token=x/../../../../../usr/bin/touch /tmp/p', "sh -c './token=x/../../usr/bin/touch /tmp/p'", 'env A=1 ./password=x/../../usr/bin/id', 'true; ./token=x/y'])
      expect(redact({ command }), command).toEqual({ command });
    expect(redact({ command: 'AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG aws s3 ls && curl http://u:hunter2@h/' })).toEqual({
      command: `AWS_SECRET_ACCESS_KEY=${R} aws s3 ls && curl http://u:${R}@h/`,
    });
  });
});
