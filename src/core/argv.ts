import { DebugkitError } from './errors.js';

/**
 * Splits a command line the way a POSIX shell would split words (quotes and backslashes
 * respected), without running a shell: pipes, redirections, command lists and substitutions are
 * refused rather than interpreted.
 */
export function splitShellWords(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw unsupported('an unterminated single quote');
      word += line.slice(i + 1, end);
      i = end;
      inWord = true;
    } else if (c === '"') {
      const { text, end } = doubleQuoted(line, i + 1);
      word += text;
      i = end;
      inWord = true;
    } else if (c === '\\') {
      if (i + 1 < line.length) word += line[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else if ('|&;<>()`'.includes(c) || (c === '$' && line[i + 1] === '(')) {
      throw unsupported(`shell syntax "${c}" (pipes, redirections and command lists are not supported: give one command and its arguments)`);
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

function doubleQuoted(line: string, start: number): { text: string; end: number } {
  let text = '';
  for (let i = start; i < line.length; i++) {
    const c = line[i]!;
    if (c === '"') return { text, end: i };
    if (c === '\\' && '"\\$`'.includes(line[i + 1] ?? '')) text += line[++i];
    else if (c === '$' || c === '`') throw unsupported('variable or command substitution inside double quotes');
    else text += c;
  }
  throw unsupported('an unterminated double quote');
}

/** A command line debugkit will not run: it needs a shell to mean what it says. */
export class ShellSyntaxError extends DebugkitError {
  override name = 'ShellSyntaxError';
  constructor(message: string) {
    super('INVALID_ARGUMENT', message);
  }
}

function unsupported(what: string): ShellSyntaxError {
  return new ShellSyntaxError(`Command contains ${what}`);
}
