import { DebugkitError } from './errors.js';

/**
 * Splits a command line the way a POSIX shell would split words (quotes and backslashes
 * respected, a backslash-newline continuing the line), without running a shell: pipes,
 * redirections, command lists and substitutions are refused rather than interpreted. So is what a
 * shell reads one way and a reader of command lines may read another, since the audit reads the
 * same line as a shell does (core/secrets.ts readShellWord) and must see the words that run: a
 * blank other than a space or a tab (a no-break space, U+2028, a form feed: a shell keeps it in the
 * word, and `PGPASSWORD=x<U+00A0>touch m` ran `touch` while the audit hid it: attack p2-1), a line
 * break inside the command (a shell's command separator), and `$'...'` and `$"..."` quoting
 * (`$'x\' touch m` ran `touch`, read as ANSI-C quoting it is one word: attack p2-2).
 */
export function splitShellWords(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  const text = line.replace(/^[ \t\n]+|[ \t\n]+$/g, '');
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) throw unsupported('an unterminated single quote');
      word += text.slice(i + 1, end);
      i = end;
      inWord = true;
    } else if (c === '"') {
      const { text: quoted, end } = doubleQuoted(text, i + 1);
      word += quoted;
      i = end;
      inWord = true;
    } else if (c === '\\') {
      // A backslash-newline is a line continuation: both go (between words too), the word goes on.
      if (text[i + 1] === '\n') i++;
      else {
        if (i + 1 < text.length) word += text[++i];
        inWord = true;
      }
    } else if (c === ' ' || c === '\t') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else if (c === '\n') {
      throw unsupported('a line break (a shell runs what follows it as a command of its own: give one command, or end the line with a backslash to go on)');
    } else if (/\s/.test(c) || c === '\ufeff') {
      throw unsupported(`the blank U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')} outside quotes (a shell keeps it in the word: separate words with spaces or tabs)`);
    } else if ('|&;<>()`'.includes(c) || (c === '$' && text[i + 1] === '(')) {
      throw unsupported(`shell syntax "${c}" (pipes, redirections and command lists are not supported: give one command and its arguments)`);
    } else if (c === '$' && (text[i + 1] === "'" || text[i + 1] === '"')) {
      throw unsupported(`${c}${text[i + 1]}...${text[i + 1]} quoting (use plain quotes)`);
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
    if (c === '\\' && line[i + 1] === '\n')
      i++; // a line continuation, as outside the quotes
    else if (c === '\\' && '"\\$`'.includes(line[i + 1] ?? '')) text += line[++i];
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
