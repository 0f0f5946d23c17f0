import { describe, expect, it } from 'vitest';
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
