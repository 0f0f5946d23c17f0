import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { ShellSyntaxError, splitShellWords } from './argv.js';

describe('splitShellWords: the words a shell would make, or a refusal', () => {
  it('splits at spaces and tabs, joins quotes and backslashes, continues a line after a backslash-newline', () => {
    expect(splitShellWords(`a  b\tc 'd e' "f g" h\\ i`)).toEqual(['a', 'b', 'c', 'd e', 'f g', 'h i']);
    expect(splitShellWords('mysql \\\n -u root \\\n db')).toEqual(['mysql', '-u', 'root', 'db']);
    expect(splitShellWords('PGPASSWORD=ab\\\ncd psql')).toEqual(['PGPASSWORD=abcd', 'psql']);
    expect(splitShellWords('echo "ab\\\ncd"')).toEqual(['echo', 'abcd']);
    expect(splitShellWords('  run it \n')).toEqual(['run', 'it']);
    // Inside quotes every character is the word's own.
    expect(splitShellWords('echo \'a\u00a0b\' "c\u2028d"')).toEqual(['echo', 'a\u00a0b', 'c\u2028d']);
  });

  it('refuses what a shell reads otherwise than a reader of command lines might: other blanks, line breaks, $-quoting', () => {
    for (const [line, says] of [
      ['PGPASSWORD=x\u00a0touch\u00a0m', /U\+00A0 outside quotes/],
      ['wrap token=x\u2028touch m', /U\+2028/],
      ['a\u3000b', /U\+3000/],
      ['a\ufeffb', /U\+FEFF/],
      ['a\fb', /U\+000C/],
      ['a\rb', /U\+000D/],
      ['a\vb', /U\+000B/],
      ['PGPASSWORD=x\ntouch m', /a line break/],
      ["wrap=1 PGPASSWORD=$'x\\' touch m ''", /\$'\.\.\.' quoting/],
      ['echo $"x"', /\$"\.\.\." quoting/],
    ] as const) {
      let thrown: unknown;
      try {
        splitShellWords(line);
      } catch (err) {
        thrown = err;
      }
      expect(thrown, JSON.stringify(line)).toBeInstanceOf(ShellSyntaxError);
      expect((thrown as Error).message, JSON.stringify(line)).toMatch(says);
    }
  });
});

describe('splitShellWords reads as bash reads: one reader of shell words for what runs and what the audit shows', () => {
  it('keeps a backslash inside double quotes unless it escapes $ ` " \\ or a newline; refuses unterminated quotes and what needs a shell', () => {
    expect(splitShellWords('grep "a\\.b" "c\\$d" "e\\\\f" "g\\"h"')).toEqual(['grep', 'a\\.b', 'c$d', 'e\\f', 'g"h']);
    expect(splitShellWords("echo $HOME a$ ''")).toEqual(['echo', '$HOME', 'a$', '']);
    for (const [line, says] of [
      ["echo 'open", /an unterminated single quote/],
      ['echo "open', /an unterminated double quote/],
      ['echo "$HOME"', /substitution inside double quotes/],
      ['echo "`id`"', /substitution inside double quotes/],
      ['echo $(id)', /shell syntax "\$"/],
      ['echo `id`', /shell syntax "`"/],
      ['echo a>b', /shell syntax ">"/],
      ['echo a|b', /shell syntax "\|"/],
      ['echo a # note', /a comment/],
      ['echo a\\', /a backslash at its end/],
    ] as const) {
      expect(() => splitShellWords(line), line).toThrow(says);
    }
  });

  it('every line it accepts of 3,000 made of quotes, backslashes, blanks and separators splits into the words bash makes', () => {
    // A seeded generator: the same lines each run.
    let seed = 18;
    const next = () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t ^= t + Math.imul(t ^ (t >>> 7), 61 | t);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const alphabet = ['a', 'b', ' ', ' ', '\t', "'", "'", '"', '"', '\\', '\\', '\n', '\u00a0', '|', ';', '(', '=', '-', '#', '*'];
    const accepted: Array<{ line: string; words: string[] }> = [];
    for (let n = 0; n < 3000; n++) {
      let line = 'x ';
      for (let k = 1 + Math.floor(next() * 12); k > 0; k--) line += alphabet[Math.floor(next() * alphabet.length)];
      try {
        accepted.push({ line, words: splitShellWords(line) });
      } catch (err) {
        expect(err, JSON.stringify(line)).toBeInstanceOf(ShellSyntaxError);
      }
    }
    expect(accepted.length).toBeGreaterThan(300);
    // bash with globbing off (debugkit does not glob: `*` is plain), each line's words NUL-separated.
    // A line that ends in a line continuation would continue onto the next command of the script: left out.
    const compared = accepted.filter(({ line }) => !/\\\n[ \t\n]*$/.test(line));
    const script = ['set -f', ...compared.map(({ line }) => `printf '%s\\0' ${line}\nprintf '\\1\\0'`)].join('\n');
    const out = execFileSync('bash', ['--norc', '--noprofile', '-c', script], { encoding: 'utf8' });
    const lines = out.split('\u0001\u0000').slice(0, -1);
    expect(lines.length).toBe(compared.length);
    lines.forEach((printed, k) => expect(printed.split('\u0000').slice(0, -1), JSON.stringify(compared[k]!.line)).toEqual(compared[k]!.words));
  });
});
