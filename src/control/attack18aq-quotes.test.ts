import { describe, expect, it } from 'vitest';
import { eightfold } from '../core/cputime.js';
import { REDACTED as R, redactText } from '../core/secrets.js';
import { redactWords } from './audit.js';

// Round 18aq (quotes). In a command line, a secret found by its place ended at the first quote,
// backslash or `$` of its shell word, and what followed in that word was stored in clear: `wrap
// token=ab'cd'` was stored as `token=[REDACTED]'cd'`, `mysql -p"pw"suffix` kept `suffix`, `curl -u
// admin:'pw'` and `mysql --password=$'pw'` kept the whole password. The rule now: a value found by
// its place is read as its program gets it (secrets.ts wordValueAt, on the one reading of a shell
// word, readShellWord): in a command line to the end of its shell word, quotes, `$'...'` and
// backslashes joining, an unquoted blank, separator, redirection or expansion ending it; inside
// quotes, as the shell that runs the quoted text reads it (`bash -c "mysql -p'ab'cd db"`); in argv,
// which no shell reads, to the next blank. A value quoted whole keeps its quotes shown.

describe('attack 18aq quotes: a value found by its place is hidden to the end of its shell word', () => {
  it('in a command line, past quotes, `$` quotes and backslashes', () => {
    for (const [line, stored] of [
      ["wrap token=ab'cd'", `wrap token=${R}`],
      ["mysql -pab'cd'", `mysql -p${R}`],
      ['PGPASSWORD=ab"cd" psql', `PGPASSWORD=${R} psql`],
      ["curl -u admin:'pw' h", `curl -u admin:'${R}' h`],
      ['curl -u admin:"pw" h', `curl -u admin:"${R}" h`],
      ["curl -u 'admin':pw h", `curl -u 'admin':${R} h`],
      ["mysql --password=$'pw'", `mysql --password=$'${R}'`],
      ['mysql -p"pw"suffix', `mysql -p${R}`],
      // An escaped blank ends the value as a blank does (attack v2-2): a program that gets the word whole may hand it to a shell.
      ['wrap --password a\\ b', `wrap --password ${R}\\ b`],
      ['mysql --password=ab\\ cd db', `mysql --password=${R}\\ cd db`],
      ["wrap token='pw'x", `wrap token=${R}`],
      // The value is `abc`, written `ab"c`: a quoted blank ends it too.
      ['wrap token=ab"c d"e more', `wrap token=${R} d"e more`],
      ['wrap --password ""pw', `wrap --password ${R}`],
      ["wrap --password=ab'cd'", `wrap --password=${R}`],
      ["wrap -password ab'cd'", `wrap -password ${R}`],
      ["wrap -Password:ab'cd'", `wrap -Password:${R}`],
      ["sshpass -p ab'cd' ssh h", `sshpass -p ${R} ssh h`],
      ["redis-cli -a ab'cd' ping", `redis-cli -a ${R} ping`],
      ["ldapsearch -w ab'cd' -b dc=x", `ldapsearch -w ${R} -b dc=x`],
      ["openssl enc -k ab'cd'", `openssl enc -k ${R}`],
      ["openssl enc -pass pass:ab'cd'", `openssl enc -pass pass:${R}`],
      ["sqlplus scott/ab'cd'@db", `sqlplus scott/${R}@db`],
      ["lftp -u user,ab'cd' h", `lftp -u user,${R} h`],
      ["smbclient -U user%ab'cd' //h/s", `smbclient -U user%${R} //h/s`],
      ["aws configure set aws_secret_access_key ab'cd'", `aws configure set aws_secret_access_key ${R}`],
      ["htpasswd -b f u ab'cd'", `htpasswd -b f u ${R}`],
      ["wrap http://u:ab'cd'@h/x", `wrap http://u:${R}@h/x`],
      ["sqlplus scott/'pw'@db", `sqlplus scott/'${R}'@db`],
      ['wrap --password=$"pw"', `wrap --password=$"${R}"`],
      [`curl -H "X-Api-Key: ab'cd'" h`, `curl -H "X-Api-Key: ${R}" h`],
    ])
      expect(redactText(line!, true), line).toBe(stored);
  });

  it('quoted whole, a value keeps its quotes shown (as before)', () => {
    for (const [line, stored] of [
      ["wrap --password 'a b'", `wrap --password '${R} b'`],
      ['wrap --password="x y"', `wrap --password="${R} y"`],
      ["mysql -p'pw'", `mysql -p'${R}'`],
      ["PGPASSWORD='pw' psql", `PGPASSWORD='${R}' psql`],
      ['mysql -p"pw" && ls /etc', `mysql -p"${R}" && ls /etc`],
    ])
      expect(redactText(line!, true), line).toBe(stored);
  });

  it('inside a quoted script, as the shell that runs it reads it', () => {
    for (const [line, stored] of [
      [`bash -c 'mysql -p"ab"cd db'`, `bash -c 'mysql -p${R} db'`],
      [`bash -c "mysql -p'ab'cd db"`, `bash -c "mysql -p${R} db"`],
      [`bash -c "curl -u admin:'pw' h"`, `bash -c "curl -u admin:'${R}' h"`],
      // In a script, its program's quoted argument ends at a blank too (attack v2-1: the program may hand it to a shell).
      ['bash -c "mysql -p\\"a b\\" db"', `bash -c "mysql -p\\"${R} b\\" db"`],
      [`su root -c "mysql -pab'cd' db"`, `su root -c "mysql -p${R} db"`],
      [`env -S "mysql -pab'cd'" x`, `env -S "mysql -p${R}" x`],
      [`bash -c "mysql -pab'cd'" && ls /etc`, `bash -c "mysql -p${R}" && ls /etc`],
      // In a quoted script, a blank ends the value: the words after it are other words.
      [`ssh h "mysql -pab;rm x"`, `ssh h "mysql -p${R};rm x"`],
    ])
      expect(redactText(line!, true), line).toBe(stored);
  });

  it('in argv, a word is one value: quotes are the password', () => {
    expect(redactWords(['mysql', "-p'pw'"])).toEqual(['mysql', `-p${R}`]);
    expect(redactWords(['curl', '-u', "admin:'pw'"])).toEqual(['curl', '-u', `admin:${R}`]);
    expect(redactWords(['curl', "http://u:ab'cd'@h/x"])).toEqual(['curl', `http://u:${R}@h/x`]);
    expect(redactWords(['bash', '-c', "mysql -pab'cd' db"])).toEqual(['bash', '-c', `mysql -p${R} db`]);
    expect(redactWords(['bash', '-c', "curl -u admin:'pw' h"])).toEqual(['bash', '-c', `curl -u admin:'${R}' h`]);
  });

  it('what runs stays shown: an expansion, a substitution, a quoted separator end what is hidden', () => {
    for (const [line, stored] of [
      ["wrap token=ab'cd'$X", `wrap token=${R}$X`],
      ["wrap token=ab'cd'`id`", `wrap token=${R}\`id\``],
      ['PGPASSWORD="a$(id)b" psql', `PGPASSWORD="${R}$(id)b" psql`],
      // A separator quoted in the value's word is never hidden (a shell that reads the word again runs it): read as before.
      ["wrap token=ab';touch x'", `wrap token=${R}';touch x'`],
      ["mysql -pab'cd'>out", `mysql -p${R}>out`],
      // A value that reads as a path is what ran (attack 18aq), quotes read through.
      ['wrap token="x"/"."/evil', 'wrap token="x"/"."/evil'],
      ["wrap token=x'/./evil.sh'", "wrap token=x'/./evil.sh'"],
    ])
      expect(redactText(line!, true), line).toBe(stored);
  });
});

describe('a quoted argument of a program the audit does not know: a value in it ends at its first blank', () => {
  // Attack 18aq hid such a value to the end of the argument (`wrap "token=a b"`: `a b`), the program
  // getting `token=a b` whole. Attack v2-1 showed why that hides code: the program may be a wrapper that
  // hands the argument to a shell (`prlimit sh -c "PGPASSWORD=x touch m"`, `gdb -ex "shell ..."`,
  // `docker exec c sh -c "..."`), and no list of such programs is complete. A value there ends at its
  // first blank, as a shell reading it would end it: the later words of a secret with blanks are shown
  // (SECURITY.md: pass secrets through `env`), the code after a secret never hidden.
  it('an argument of a program that may or may not run a shell on it', () => {
    for (const [line, stored] of [
      ['wrap "token=a b"', `wrap "token=${R} b"`],
      ["wrap 'token=a b' c", `wrap 'token=${R} b' c`],
      ['wrap "--password=a b" && ls /etc', `wrap "--password=${R} b" && ls /etc`],
      ['wrap "x token=a b"', `wrap "x token=${R} b"`],
      ['prlimit --nofile=1024 sh -c "PGPASSWORD=x touch m"', `prlimit --nofile=1024 sh -c "PGPASSWORD=${R} touch m"`],
      ['gdb -batch -ex "shell PGPASSWORD=x touch m"', `gdb -batch -ex "shell PGPASSWORD=${R} touch m"`],
      ['docker exec c sh -c "PGPASSWORD=x touch m"', `docker exec c sh -c "PGPASSWORD=${R} touch m"`],
      ['prlimit sh -c "curl -u admin:pw h; touch m"', `prlimit sh -c "curl -u admin:${R} h; touch m"`],
      ['x "--password PW touch m"', `x "--password ${R} touch m"`],
    ])
      expect(redactText(line!, true), line).toBe(stored);
  });

  it('a script a shell reads again keeps the words after the value', () => {
    for (const [line, stored] of [
      ['bash -c "token=a b"', `bash -c "token=${R} b"`],
      ['ssh h "token=a b"', `ssh h "token=${R} b"`],
      ['watch "mysql -pab cd"', `watch "mysql -p${R} cd"`],
      ['watch -n 1 "mysql -pab cd"', `watch -n 1 "mysql -p${R} cd"`],
      ['flock /tmp/l -c "mysql -pab cd"', `flock /tmp/l -c "mysql -p${R} cd"`],
      ['wrap "token=a;b"', `wrap "token=${R};b"`],
      ['wrap "token=a $X"', `wrap "token=${R} $X"`],
    ])
      expect(redactText(line!, true), line).toBe(stored);
  });
});

describe('attack 18aq quotes: the reading stays linear', () => {
  // Each shape at n and 8n characters: a linear reading takes ~8x as long, a quadratic one ~64x (the
  // bound of attack 18's linearity tests: 24x, or 10 ms), the least CPU time of 7 runs of each (eightfold).
  function expectLinear(name: string, make: (n: number) => string, run: (text: string) => unknown): void {
    const t = eightfold(name, make, run);
    expect(t.big, t.message).toBeLessThan(t.bound);
  }
  const line = (text: string) => redactText(text, true);
  // One word of many values, each after a quote: the word is read once.
  it("mysql -pa'-pa'... is linear", () => expectLinear("-pa' in one word", (n) => `mysql ${"-pa'".repeat(n / 4)}`, line));
  it("wrap token=a';'token=a';'... is linear", () => expectLinear("token=a';' in one word", (n) => `wrap ${"token=a';'".repeat(n / 10)}`, line));
  // A quoted script of many values, each read as its shell reads it.
  it('bash -c "mysql -pa\'b\' ..." is linear', () => expectLinear('values in a quoted script', (n) => `bash -c "${"mysql -pa'b' ".repeat(n / 13)}"`, line));
  it('wrap "token=a token=a ..." is linear', () => expectLinear('values in one quoted argument', (n) => `wrap "${'token=a '.repeat(n / 8)}"`, line));
  it("bash -c \"mysql -pa'b'a'b'...\" is linear", () => expectLinear('one long value in a quoted script', (n) => `bash -c "mysql -p${"a'b'".repeat(n / 4)}"`, line));
  it("argv: mysql -pa'-pa'... is linear", () =>
    expectLinear(
      "-pa' in one argv word",
      (n) => "-pa'".repeat(n / 4),
      (t) => redactWords(['mysql', t]),
    ));
});
