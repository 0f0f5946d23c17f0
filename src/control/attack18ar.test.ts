import { describe, expect, it } from 'vitest';
import { REDACTED as R, redactText } from '../core/secrets.js';

// Round 18ar (issue 18, the audit's reading of a command line), after attack 18aq. Found: a
// backslash-newline (a shell's line continuation, which it removes) ended a secret value, and the
// rest of the value after it was stored in clear (`PGPASSWORD=ab\<newline>cd` kept `cd`); a program
// whose options went on past one (`mysql \<newline> -pPW`) had its password kept whole; a command
// line of more than 4,096 words was read past them without its quotes (`wrap "token=a b"` kept
// `b`); and gdb's `set environment NAME VALUE` with a quote in its value (`a'b`) kept the value
// whole, the quote read as shell.

/** A command line, read as the audit reads one (redactText, command). */
const stored = (line: string) => redactText(line, true);

describe('attack 18ar: a command line read on past a backslash-newline', () => {
  it('a value goes on past a backslash-newline to the end of its word, as the shell joins it', () => {
    for (const [line, want] of [
      ['export API_TOKEN=abc\\\ndef; ./run', `export API_TOKEN=${R}; ./run`],
      ['PGPASSWORD=ab\\\ncd psql', `PGPASSWORD=${R} psql`],
      ['PGPASSWORD="ab\\\ncd" psql', `PGPASSWORD="${R}" psql`],
      ['mysql -pab\\\ncd db', `mysql -p${R} db`],
      ['curl -u admin:pw\\\nrest http://x', `curl -u admin:${R} http://x`],
      ['x --password ab\\\ncd', `x --password ${R}`],
      ['bash -c "mysql -pab\\\ncd db"', `bash -c "mysql -p${R} db"`],
      ['wrap "token=a\\\nb c"', `wrap "token=${R} c"`],
    ] as const)
      expect(stored(line), JSON.stringify(line)).toBe(want);
  });

  it("a program's options go on past a backslash-newline: its password is found on the next line", () => {
    for (const [line, want] of [
      ['mysql \\\n -phunter2 \\\n db', `mysql \\\n -p${R} \\\n db`],
      ['curl \\\n -u admin:pw http://x', `curl \\\n -u admin:${R} http://x`],
      ['sshpass \\\n -p pw ssh h', `sshpass \\\n -p ${R} ssh h`],
    ] as const) {
      expect(stored(line), JSON.stringify(line)).toBe(want);
      // Not only where it runs: the same text anywhere.
      expect(redactText(line), JSON.stringify(line)).toBe(want);
    }
  });

  it('what a shell runs after a continuation stays shown; an escaped backslash before a newline continues nothing', () => {
    for (const [line, want] of [
      ['PGPASSWORD=ab\\\n;touch x', `PGPASSWORD=${R};touch x`],
      ['export API_TOKEN=ab\\\n$(touch x)', `export API_TOKEN=${R}$(touch x)`],
      // `\\` is one backslash, the newline then ends the command: `-phunter2` is a program that runs.
      ['mysql \\\\\n -phunter2', 'mysql \\\\\n -phunter2'],
      ['PGPASSWORD=ab\\\\\ncd', `PGPASSWORD=${R}\ncd`],
    ] as const)
      expect(stored(line), JSON.stringify(line)).toBe(want);
  });
});

describe('attack 18ar: a command line of more than 4,096 words', () => {
  it('is read with its quotes to its end', () => {
    for (const lead of ['a '.repeat(5000), '"a" '.repeat(5000), 'a; '.repeat(5000), 'token=a '.repeat(5000)]) {
      const out = stored(`${lead}wrap "token=a b" end`);
      expect(out.endsWith(`wrap "token=${R} b" end`), out.slice(-60)).toBe(true);
    }
  });
});

describe("attack 18ar: gdb's set environment with a quote in its value", () => {
  it('hides the value whole, quotes and all; a value holding what a shell runs stays shown', () => {
    for (const [line, want] of [
      ["set environment DB_PASSWORD a'b", `set environment DB_PASSWORD ${R}`],
      ["set environment DB_PASSWORD a'b c", `set environment DB_PASSWORD ${R}`],
      ['set env TOKEN "a b"', `set env TOKEN ${R}`],
      ['set env TOKEN a$(touch x)', 'set env TOKEN a$(touch x)'],
      ['set env TOKEN a;touch x', 'set env TOKEN a;touch x'],
    ] as const) {
      expect(redactText(line), JSON.stringify(line)).toBe(want);
      expect(stored(line), JSON.stringify(line)).toBe(want);
    }
  });
});
