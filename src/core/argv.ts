import { DebugkitError } from './errors.js';
import { readShellWord } from './shell-word.js';

/**
 * Splits a command line into the words a POSIX shell would make, without running a shell: each
 * word read by the one reader of shell words the audit reads the same line with
 * (core/shell-word.ts), so the words that run are the words the audit sees. What needs a shell to
 * mean what it says is refused rather than interpreted: pipes, redirections, command lists,
 * substitutions, expansions inside double quotes, and what a shell reads one way and a reader of
 * command lines may read another: a blank other than a space or a tab outside quotes (a no-break
 * space, U+2028, a form feed: a shell keeps it in the word, and `PGPASSWORD=x<U+00A0>touch m` ran
 * `touch` while the audit hid it: attack p2-1), a line break (a shell's command separator), and
 * `$'...'` and `$"..."` quoting (`$'x\' touch m` ran `touch`: attack p2-2). A backslash-newline
 * continues the line. `$NAME`, `~` and wildcards outside quotes are kept as written (no shell expands them).
 */
export function splitShellWords(line: string): string[] {
  return readCommandWords(line).map((w) => w.value);
}

/** A word of a command line as splitShellWords reads it: its value, and its text as written (quotes and escapes in it). */
export interface CommandWord {
  value: string;
  text: string;
}

/** The words of a command line, each with its text as written (splitShellWords). */
export function readCommandWords(line: string): CommandWord[] {
  // Line breaks before the first word and after the last are blanks; between words, a command separator (refused).
  const first = line.search(/[^ \t\n]/);
  if (first < 0) return [];
  let last = line.length;
  while (' \t\n'.includes(line[last - 1]!)) last--;
  // A blank after an odd run of backslashes is escaped: the word's own (`a\ `); a backslash-newline there continues onto nothing.
  let slashes = 0;
  while (line[last - 1 - slashes] === '\\') slashes++;
  if (slashes % 2 === 1) {
    if (last === line.length) throw unsupported("a backslash at its end (it escapes nothing: quote it as '\\')");
    last += line[last] === '\n' ? -1 : 1;
  }
  const words: CommandWord[] = [];
  let i = first;
  while (i < last) {
    const c = line[i]!;
    if (c === ' ' || c === '\t') i++;
    else if (c === '\\' && line[i + 1] === '\n') i += 2;
    else {
      if (c === '#') throw unsupported("a comment (a shell ignores the rest of the line from an unquoted '#' that begins a word: quote it to pass it)");
      const word = readShellWord(line, i, WORD_END, 'plain', last);
      if (word.unclosed) throw unsupported(`an unterminated ${word.unclosed === "'" ? 'single' : 'double'} quote`);
      if (word.cut) throw unsupported('variable or command substitution inside double quotes');
      if (word.end > i) words.push({ value: word.value, text: line.slice(i, word.end) });
      i = word.end;
      if (i < last && line[i] !== ' ' && line[i] !== '\t') throw refusal(line, i);
    }
  }
  return words;
}

/** Where a word of a command run without a shell ends, as a shell would end it or as debugkit refuses to (refusal). */
const WORD_END = new Set([...' \t\n\r\v\f|&;<>()\u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff', ...Array.from({ length: 11 }, (_, k) => String.fromCharCode(0x2000 + k))]);

/** Why the character at `i`, which ended a word, is refused. */
function refusal(text: string, i: number): ShellSyntaxError {
  const c = text[i]!;
  if (c === '\n') return unsupported('a line break (a shell runs what follows it as a command of its own: give one command, or end the line with a backslash to go on)');
  if (c === '$' && (text[i + 1] === "'" || text[i + 1] === '"')) return unsupported(`${c}${text[i + 1]}...${text[i + 1]} quoting (use plain quotes)`);
  if (c !== '$' && c !== '`' && !'|&;<>()'.includes(c)) {
    return unsupported(`the blank U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')} outside quotes (a shell keeps it in the word: separate words with spaces or tabs)`);
  }
  return unsupported(`shell syntax "${c}" (pipes, redirections and command lists are not supported: give one command and its arguments)`);
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
