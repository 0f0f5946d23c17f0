// Secrets in text: where they are and what they are, for the audit (control/audit.ts, which keeps
// tool arguments) and for answers (mcp/redact-answers.ts). Every pattern is linear: each either
// starts only at a literal (`://`, `dk_`, `Bearer`, `Digest`, `--`, `eyJ`, a program's name) or is a
// hand-written scan, no quantifier is both unbounded and followed by one that can match the same
// characters, and a scan that finds nothing goes on from where it stopped, not from where it
// started. Only the secret itself is replaced, never the text around it. Callers bound the text
// before any pattern runs on it.

import { readShellWord } from './shell-word.js';

export const REDACTED = '[REDACTED]';

/**
 * Argument names whose whole value is a secret. "pass" counts as a word of the name (DB_PASS,
 * pass), not inside another (GIT_ASKPASS names a program, BYPASS_CHECKS a switch: both are kept).
 * A key named `pwd` is a password (`{"pwd": ...}`); so an environment's `PWD` (the working
 * directory) is hidden too: noise, not a leak. In text, `pwd` is the shell's command, and only a key
 * there counts (nameValueSpans).
 */
export const SECRET_NAME =
  /password|passwd|passphrase|(?:^|[_ .-])pass(?:$|[_ .-])|(?<!ask|by|com|sur|tres|over|under)pass$|secret|token|api[_-]?key|authori[sz]ation|credential|private[_-]?key|cookie|session[_-]?key|signature|[_-]pwd$|^pwd$|^pw$|[_-]pw$|^auth$|[_-]auth$|^key$|^sig$|(?:master|signing|encryption|auth|secret|access|private|client|app|session|hmac|jwt)[_-]?key$|[_-]creds?$/i;
/**
 * Names (in text: NAME=value, "NAME": value, --NAME value) whose value is a secret. A name that
 * ends in "pass" is one (`SSHPASS`, what `sshpass -e` reads; `DBPASS`, `-storepass`), but not
 * `GIT_ASKPASS` (a program) nor `BYPASS` (a switch); one that ends in `_AUTH` too (`REDISCLI_AUTH`,
 * what redis-cli reads) (attack 18ac e1-1).
 */
export const SECRET_WORD =
  /password|passwd|passphrase|(?:^|[_.-])pass(?:$|[_.-])|(?<!ask|by|com|sur|tres|over|under)pass$|secret|token|api[_-]?key|credential|private[_-]?key|signature|authori[sz]ation|cookie|[_-]pwd$|[_-]pw$|[_-]auth$|(?:master|signing|encryption|auth|access|client|app|session|hmac|jwt)[_-]?key$|[_-]creds?$/i;
/** A header's name (`X-Api-Key`, `X-Auth-Token`): words joined by dashes. */
const HEADER_NAME = /^[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+$/;
/** Names that are a secret only as a URL query parameter (?sig=, &key=). */
const QUERY_SECRET = /^(?:sig|key|auth|apikey|code|pwd)$/i;
/** A flag that names where a secret is, not the secret (--password-file FILE), or a command that prints it (--password-command CMD). */
const NOT_A_VALUE = /(?:file|path|env|stdin|prompt|dir|command|cmd|helper|program|exec|eval|hook|script|shell|process|run)$/i;
/**
 * A name whose value is a command, a program or its options, though the name reads as a secret's
 * (`RESTIC_PASSWORD_COMMAND`, `credential.helper`, `--token-cmd`, `PASSWORD_STORE_GPG_OPTS`): the
 * value runs, and hiding it as a password hid what ran (attack y2-1, y2-2).
 */
export const NAMES_A_COMMAND = /(?:^|[_.-])(?:command|cmd|helper|program|exec|opts|options|args|flags|hook|script|shell|run|process)$|eval$/i;
const NAME_CHAR = /[A-Za-z0-9_.-]/;
/** Characters that end an unquoted value: blanks, quotes, and shell or code punctuation. */
const VALUE_END = new Set([...' \t\r\n\f\v"\'`$;&|<>(){}[],\\']);
/** Characters that end an unquoted value in a shell word or a config line: brackets and commas are part of it there. */
const SHELL_VALUE_END = new Set([...' \t\r\n\f\v"\'`$;&|<>\\']);
const AUTH_SCHEME = /^(?:Bearer|Basic|Digest|Token|Negotiate)$/i;
/**
 * A name in code (`os.system`, `getattr`, `self.key`): an identifier or a dotted path of them,
 * each part bounded. Sticky, run at the start of an unquoted value.
 */
const CODE_NAME = /[A-Za-z_$][\w$]{0,63}(?:\.[A-Za-z_$][\w$]{0,63}){0,15}/y;
/** What follows a name in code and never a secret literal in a shell word, an URL or a config line: a call, an index, the end of an argument. */
const AFTER_CODE_NAME = new Set([...'()[]{},']);
/** Whole values that are a constant of code or config, not a secret (`password = None`). */
export const CONSTANT = new Set(['None', 'True', 'False', 'null', 'nil', 'undefined', 'true', 'false']);

/** Where a secret is, and what it is (a name's value: the name; else its kind: `JWT`, `private key`). */
type Span = [start: number, end: number, kind?: string, word?: boolean];

/** The number of blanks (spaces, tabs; at most 8) at `at`. */
function blanksAt(text: string, at: number): number {
  let i = at;
  while (i < text.length && i - at < 8 && (text[i] === ' ' || text[i] === '\t')) i++;
  return i - at;
}

/**
 * The span of the secret value starting at `at`, if there is one: the content of single quotes
 * (nothing in them is expanded), the literal part of double quotes (`$(...)`, `${...}` and
 * backquotes are code, kept), or an unquoted word (up to a blank, a quote or shell or code
 * punctuation). Each scan stops at the first character that ends it, and callers go on after the
 * span they keep, so no character is scanned twice. With `reading` (text that runs), the value as
 * its program gets it (wordValueAt), else as above.
 */
function valueAt(text: string, at: number, fString = false, shellWord = false, reading?: ValueReading): Span | undefined {
  if (reading) {
    const word = wordValueAt(reading, at);
    if (word) return word;
  }
  const q = text[at];
  let i = at + (q === "'" || q === '"' ? 1 : 0);
  // In an f-string, `{...}` is code that runs: the secret is the literal part before it.
  if (q === "'") {
    while (i < text.length && text[i] !== "'" && text[i] !== '\n' && !(fString && text[i] === '{')) i++;
    return (text[i] === "'" || (fString && text[i] === '{')) && i > at + 1 ? [at + 1, i] : undefined;
  }
  if (q === '"') {
    while (i < text.length && !'"$`\\\n'.includes(text[i]!) && !(fString && text[i] === '{')) i++;
    return i > at + 1 ? [at + 1, i] : undefined;
  }
  const ends = shellWord ? SHELL_VALUE_END : VALUE_END;
  while (i < text.length && !ends.has(text[i]!)) i++;
  return i > at ? [at, i] : undefined;
}

/**
 * Text that runs, read for values as its program gets them (findSecrets' running readings):
 * `shell`, a command line, where a value is a shell word (readShellWord); `argv`, words of argv
 * joined by blanks, which no shell reads: a value runs to the next blank, quotes and all. `read`:
 * where the last value read ended; a scanner goes on from there, so each character is read once.
 */
interface ValueReading {
  mode: 'shell' | 'argv';
  text: string;
  read: number;
  words?: ShellWord[];
  /** The commands of the text, each its words (shellCommands), read once for wordCharacter and dequotedSpans. */
  commands?: ShellWord[][];
  /** What the words (indexes of `words`) are to the shell that runs them (readCommands). */
  shape?: CommandsRead;
  /** How deep in scripts this text is (scriptSpans): each level is a command line inside a word of the one before. */
  depth: number;
  /** The variables whose values are code here (ranVariables), with those of the text this one was read from. */
  ran?: Set<string>;
  inheritedRan?: ReadonlySet<string>;
  /** Read to find where a variable's expansion stands (mentionedVariables): no variable is looked for again. */
  probe: boolean;
  traces: Map<number, Trace>;
  quotes: Map<number, number>;
}

/**
 * What a value's span read as a shell word never holds (it is read as before, to its first quote,
 * instead): a separator, a redirection, a substitution or an expansion, quoted or not. A shell that
 * reads the word again (ssh, a wrapper's `sh -c`) would run it, and the audit shows what runs.
 */
const WORD_ACTIVE = /[`;|&<>\r\n]|\$(?!')/;

/** Blanks: where a shell that reads a word again ends a value in it. */
const BLANKS = new Set([...' \t\r\n\f\v']);
/**
 * What ends a value in a word a shell reads again, quoted there or not: its blanks, and what a shell
 * acts on, once `$'...'` is decoded (`eval true --password $'a\x3btouch\x20m'` runs `touch m`:
 * attack a3-1).
 */
const REREAD_ENDS = new Set([...' \t\r\n\f\v;&|<>()`$']);
/** What ends a value where it stands unquoted: a separator, a redirection, an expansion or a substitution. */
const UNQUOTED_END = new Set([...';&|<>$`']);

/**
 * The secret value at `at` in text that runs, read as its program gets it: in a command line, to
 * the end of its shell word (quotes and backslashes join, `token=ab'cd'` is `abcd`; an unquoted
 * blank, separator, redirection or expansion ends it) when the word has no quotes or backslashes,
 * or the shell assigns it (`PGPASSWORD='correct horse' psql`); in a word a shell reads again (a `-c`
 * script, ssh's command), as that shell reads the word's value (`bash -c "mysql -p'ab'cd db"`:
 * `'ab'cd`); in any other word with quotes or backslashes, to the first blank of its value, since
 * the program that gets it whole may hand it to a shell the audit does not know (`prlimit sh -c
 * "PGPASSWORD=x touch m"`, `gdb -ex "shell ..."`: attack v2-1, v2-2), so code after a secret is never
 * hidden (a secret with blanks typed into such a word shows its later words); in argv, to the next
 * blank. A value quoted whole keeps its quotes shown (`-p'[REDACTED]'`). None when it is empty or
 * holds WORD_ACTIVE (then read as before).
 */
function wordValueAt(r: ValueReading, at: number): Span | undefined {
  const text = r.text;
  r.read = at;
  if (r.mode === 'argv') {
    let i = at;
    while (i < text.length && !' \t\r\n'.includes(text[i]!)) i++;
    r.read = i;
    return i > at ? [at, i, undefined, true] : undefined;
  }
  let span: [number, number];
  const inner = wordCharacter(r, at);
  // The value of a word the shell assigns, read whole: only its own value, at its `=` (`A=PGPASSWORD='x touch m'` assigns A,
  // and `eval $A` runs `touch m`: attack x2-1).
  const assigned = inner !== undefined && commandsOf(r).read.assigned.has(inner.k) && text.indexOf('=', commandsOf(r).words[inner.k]!.start) + 1 === at;
  if (inner && inner.t === NO_TRACE && !assigned) {
    // Unquoted at `at`, quotes or backslashes after it: read on as written, to the value's first blank, quoted or not.
    const word = readShellWord(text, at, VALUE_WORD_END, 'expansion', commandsOf(r).words[inner.k]!.end, undefined, BLANKS);
    r.read = word.end;
    span = word.split ? [at, word.end] : unquotedSpan(text, at, word.end);
    if (span[1] <= span[0]) return undefined;
  } else if (inner && !assigned) {
    const { t, v, k } = inner;
    const { words, read } = commandsOf(r);
    const n = t.value.length;
    let end = v;
    // In a word a shell reads again, as that shell reads it, to a blank of its value quoted there or not: a word it
    // assigns whole is the script's own reading's (scriptSpans), which knows its commands (attack x2-2).
    if (read.reread.has(k)) end = readShellWord(t.value, v, VALUE_WORD_END, 'expansion', n, undefined, REREAD_ENDS).end;
    else while (end < n && !BLANKS.has(t.value[end]!) && !(UNQUOTED_END.has(t.value[end]!) && t.quoted[end] === 0)) end++;
    if (end <= v) return undefined;
    // A value that starts inside quotes (not at them) ends inside them, or at their close.
    const inside = t.quoted[v] === 1 && t.at[v] === at;
    if (read.reread.has(k) || inside || (end < n && BLANKS.has(t.value[end]!)) || (end === n && t.cut)) {
      // Ended by a blank of the value (or inside a word read again): the value's characters, where they stand.
      r.read = t.at[end - 1]! + 1;
      const [a, b] = unquotedSpan(t.value, v, end);
      if (b <= a) return undefined;
      span = [t.at[a]!, t.at[b - 1]! + 1];
    } else {
      // Ended by the word's end or an expansion: as written, to there (a value quoted whole keeps its quotes shown).
      const to = end < n ? t.at[end]! : words[k]!.end;
      r.read = to;
      span = unquotedSpan(text, at, to);
      if (span[1] <= span[0]) return undefined;
    }
  } else {
    const word = readShellWord(text, at, VALUE_WORD_END, 'expansion');
    r.read = word.end;
    span = unquotedSpan(text, at, word.end);
    if (span[1] <= span[0]) return undefined;
  }
  return WORD_ACTIVE.test(withoutContinuations(text.slice(span[0], span[1]))) ? undefined : [span[0], span[1], undefined, true];
}

/**
 * `s` without its line continuations (a backslash-newline, which a shell removes, unquoted or in
 * double quotes: `PGPASSWORD=ab\<newline>cd` is `abcd`); an escaped backslash stays with its escape.
 */
function withoutContinuations(s: string): string {
  if (!s.includes('\\\n')) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    if (s[i] !== '\\') out += s[i];
    else {
      if (s[i + 1] !== '\n') out += s.slice(i, i + 2);
      i++;
    }
  }
  return out;
}

/** The words of the command line and what they are to its shell, read once. */
function commandsOf(r: ValueReading): { words: ShellWord[]; read: CommandsRead } {
  if (r.words === undefined) {
    const commands = (r.commands ??= shellCommands(r.text));
    r.words = commands.flat();
    r.shape = readCommands(commands);
  }
  return { words: r.words, read: r.shape! };
}

/** A word's value as its program gets it, where each character of it stands in the text and whether it was quoted there; `cut`: it stops at a substitution. */
interface Trace {
  value: string;
  at: Int32Array;
  /** 1 where the character was quoted, else 0. */
  quoted: Int32Array;
  cut: boolean;
}

/** The value of the word `k` and where each of its characters is, read once. */
function traceOf(r: ValueReading, k: number): Trace {
  let t = r.traces.get(k);
  if (t === undefined) {
    const size = r.words![k]!.end - r.words![k]!.start;
    const trace = { at: new Positions(size), quoted: new Positions(size) };
    const word = readShellWord(r.text, r.words![k]!.start, COMMAND_WORD_END, 'substitution', r.text.length, trace);
    t = { value: word.value, at: trace.at.view(), quoted: trace.quoted.view(), cut: word.cut === true };
    r.traces.set(k, t);
  }
  return t;
}

/**
 * The word of the command line that holds `at`, when it has a quote or a backslash: its value and
 * where each character is, and the index there of the character at `at` (or of the first after it:
 * `at` is an opening quote or a backslash).
 */
function wordCharacter(r: ValueReading, at: number): { t: Trace; v: number; k: number } | undefined {
  const { words } = commandsOf(r);
  const k = wordIndexAt(r, at);
  if (k < 0) return undefined;
  // Only a word with a quote or a backslash reads otherwise than as written: most words are read no further.
  let quote = r.quotes.get(k);
  if (quote === undefined) r.quotes.set(k, (quote = firstQuote(r.text, words[k]!.start, words[k]!.end)));
  if (quote >= words[k]!.end) return undefined;
  // No quote or backslash before `at`: it is unquoted, and a word no shell reads again is read from there (wordValueAt), untraced.
  if (quote > at && !commandsOf(r).read.reread.has(k)) return { t: NO_TRACE, v: 0, k };
  const t = traceOf(r, k);
  let v = lastAtOrBefore(t.at.length, (m) => t.at[m]!, at);
  if (v < 0 || t.at[v] !== at) v++;
  return v < t.at.length && t.at[v]! < words[k]!.end ? { t, v, k } : undefined;
}
const NO_TRACE: Trace = { value: '', at: new Int32Array(0), quoted: new Int32Array(0), cut: false };

/** Programs that hand their arguments to a shell (ssh's remote one, watch's `sh -c`, eval and trap): those words are read again. */
const REREAD_BY_A_SHELL = /^(?:ssh|watch|eval|trap|tmux|parallel)$/;
/** Builtins whose `NAME=value` operands the shell assigns itself, as it does a command's leading ones. */
const ASSIGNING = /^(?:env|export|declare|local|readonly|typeset)$/;

/** What the words of a command line are to the shell that runs it (indexes into the commands' words, flattened): readCommands. */
interface CommandsRead {
  /** Words a shell reads again: scripts, code, and the arguments of REREAD_BY_A_SHELL. */
  reread: Set<number>;
  /** Of those, the command lines of their own (a shell's `-c` script, su's `-c`, ssh's words): read again as one (scriptSpans). */
  lines: Set<number>;
  /** Of those, the scripts (a shell's `-c` and the like): their reading as their shell reads them decides alone (scriptSpans). */
  scripts: Set<number>;
  /** `NAME=value` words the shell (or env, export) assigns: a value there is the whole word's, never read again. */
  assigned: Set<number>;
  /** The words after a shell's `-c` script: its `$0`, `$1`, ..., which the script, not an option parser, reads. */
  scriptArguments: Set<number>;
}

/** What each word of a command line is to the shell that runs it (CommandsRead). */
function readCommands(commands: ShellWord[][]): CommandsRead {
  const read: CommandsRead = { reread: new Set(), lines: new Set(), scripts: new Set(), assigned: new Set(), scriptArguments: new Set() };
  let base = 0;
  for (const command of commands) {
    const values = command.map((w) => w.value);
    const runs = commandRuns(values);
    let from = Infinity;
    for (const j of runs.programs) if (REREAD_BY_A_SHELL.test(baseName(values[j]!))) from = Math.min(from, j + 1);
    let program = -1;
    let script = -1;
    for (let j = 0; j < command.length; j++) {
      if (runs.programs.has(j)) program = j;
      // eval (a keyword to commandRuns: what follows is no program of its own) joins its words and reads them again (attack x2-3).
      if (values[j] === 'eval' && program < 0 && from > j) from = j + 1;
      if (runs.scripts.has(j) || runs.code.has(j) || j >= from) read.reread.add(base + j);
      // A script given as its own word (not attached to its option: `env -S"..."` is read as written) is a command line.
      if (runs.scripts.has(j) && !values[j]!.startsWith('-')) read.scripts.add(base + j);
      if ((runs.scripts.has(j) && !values[j]!.startsWith('-')) || (j >= from && !runs.code.has(j))) read.lines.add(base + j);
      const inArguments = script < 0 && !runs.scripts.has(j) && !runs.code.has(j) && shellScriptAt(values, j);
      if (inArguments) {
        read.reread.add(base + j);
        read.lines.add(base + j);
        read.scripts.add(base + j);
      }
      if (script < 0 && (inArguments || (runs.scripts.has(j) && program >= 0 && SHELLS.test(baseName(values[program]!))))) script = j;
      else if (script >= 0 && j > script) {
        read.scriptArguments.add(base + j);
        // A script that only runs its arguments (`exec "$@"`): after its `$0`, they are a command of their own, read as one (attack x2-4).
        if (j === script + 1 && FORWARDS_ARGUMENTS.test(values[script]!)) script = -1;
      }
      if (ASSIGNMENT_WORD.test(values[j]!) && j < from && (program < 0 || (ASSIGNING.test(baseName(values[program]!)) && !runs.programs.has(j)))) read.assigned.add(base + j);
    }
    // git's `-c name=value`: a value may be a command line its shell reads (core.sshCommand, core.pager, an alias's `!...`),
    // so a secret in it is read as that shell reads it, never to the end of the word (attack t2-2).
    for (const j of runs.programs) {
      if (baseName(values[j]!) !== 'git') continue;
      for (let k = j + 1; k < command.length; k++) {
        const w = values[k]!;
        if (w === '-c' && k + 1 < command.length) read.reread.add(base + ++k);
        else if (/^-c./s.test(w)) read.reread.add(base + k);
        else if (!w.startsWith('-')) break;
      }
    }
    base += command.length;
  }
  return read;
}

/** Where the first quote or backslash in [start, end) of `text` is, or `end`. */
function firstQuote(text: string, start: number, end: number): number {
  let i = start;
  while (i < end && text[i] !== "'" && text[i] !== '"' && text[i] !== '\\') i++;
  return i;
}

/** The last index below `n` whose key (ascending) is at most `at`, by halves; -1 if none. */
function lastAtOrBefore(n: number, key: (m: number) => number, at: number): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (key(mid) <= at) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/**
 * [a, b) of `str`, or the inside of the quotes it starts with when it is those quotes whole or is
 * cut inside them (`'pw'`, `$'pw'`, `$"pw"`, `"pw$(...)`): a value quoted whole is shown with its quotes.
 */
function unquotedSpan(str: string, a: number, b: number): [number, number] {
  const q = str[a];
  const dollar = q === '$' && (str[a + 1] === "'" || str[a + 1] === '"');
  const open = dollar ? 2 : q === "'" || q === '"' ? 1 : 0;
  if (open === 0) return [a, b];
  const close = str[a + open - 1]!;
  let i = a + open;
  while (i < b && str[i] !== close) i += q !== "'" && str[i] === '\\' ? 2 : 1;
  return i >= b - 1 ? [a + open, Math.min(i, b)] : [a, b];
}

/**
 * Whether the unquoted value at `at` is code rather than a secret literal: a name (an identifier
 * or a dotted path) followed at once by a call, an index, a closing bracket, a comma or a colon, as
 * a keyword argument, a lambda default or a dict value is (`dict(token=os.system)`,
 * `lambda token=eval: ...`, `token=getattr(os, "system")`); a whole value that is a constant
 * (`None`, `true`, ...); and, after `=` with blanks on both sides (an assignment in code, never in
 * the shell), a whole value that is a dotted path (`token = os.system`). A secret written in code is
 * a quoted literal (redacted); one in a shell word, a URL or a config line ends at a blank, `&`, `;`
 * or the end of the line (redacted), and so does a bare name after `NAME = ` (`PASSWORD = hunter2`).
 * Bounded: the name is at most 16 parts of 64 characters, and it is checked before the value is
 * scanned, so a value that is code costs no scan.
 */
function isCodeAt(text: string, at: number, spaced: boolean, lambdaDefault = false): boolean {
  if (text[at] === '"' || text[at] === "'") return false;
  CODE_NAME.lastIndex = at;
  const m = CODE_NAME.exec(text);
  if (m === null) return false;
  const after = text[at + m[0].length];
  // A colon ends a value in code only as a lambda's body begins (`lambda token=eval: ...`): a
  // keyword argument or an item never has one after it, a shell word may (`(PGPASSWORD=a:b psql)`).
  if (after === ':') return lambdaDefault || m[0] === 'lambda';
  if (m[0] === 'lambda' && (after === ' ' || after === '\t')) return true; // a lambda with parameters (`token=lambda x: ...`)
  if (after !== undefined && AFTER_CODE_NAME.has(after)) return true;
  // A call with blanks before its parenthesis (`getattr (os, "system")`).
  if (after === ' ' || after === '\t') {
    const k = at + m[0].length + blanksAt(text, at + m[0].length);
    if (text[k] === '(') return true;
  }
  if (after !== undefined && !VALUE_END.has(after)) return false; // the value goes on: not a name
  return CONSTANT.has(m[0]) || (spaced && m[0].includes('.'));
}

/** What settles that `name(` is a call: a quote, a nested call or a comma in its arguments. */
const CODE_ARGS = /["'(,]/;
/** The one argument that cannot be code: a word that starts with a digit and goes on with letters (`Tr0ub4dor3Zk(9q)`), not a number. */
const NOT_AN_ARG = /^\d+[A-Za-z_]\w*$/;
/**
 * A number in any language gdb or Python reads: hex (with a `p` exponent), binary, octal (`0o`,
 * gdb's `0t`/`0d` radix prefixes), digit separators (`1_000`, `1'000`), an exponent (`e`, Fortran's
 * `d`/`q`), Modula-2's `0FFH`, `17B` and `17C`, and the suffixes of C, gdb (`i` imaginary, `df`
 * decimal floats), Python (`j`) and Rust (`u8`, `i64`, `usize`, `f32`). A literal this misses was
 * taken for a secret, and the call around it was hidden: `print password=system(0b1010...)` ran and
 * was stored as `print password=[REDACTED]` (attack 18x V5).
 */
const NUMBER =
  /^(?:0[xX][\da-fA-F_']*(?:[pP][+-]?\d+)?|0[bB][01_']+|0[oOtTdD][\d_']+|\d[\d_']*(?:[eEdDqQ][+-]?\d+)?|\d[\da-fA-F]*[hH]|[0-7]+[bBcC])(?:[uUlLfFiIjJ]{1,3}|[dD][fFdDlL]|[uif](?:8|16|32|64|128|size))?$/;

/**
 * Whether the `(` at `open` calls something: after a name, a number, a closing bracket, a quote or
 * template arguments (`system(`, `0x1234(`, `(system)(`, `tbl[0](`, `'system'(`, `f<int>(`, with
 * up to 8 blanks between), not a group after an operator (`x+(`). Read where text may be code sent
 * to run (keepCalls: the audit), where a secret-looking name assigned a call's result must show
 * what was called. In the shell an unquoted `(` is a syntax error, so a working shell word never
 * holds one; a word whose one argument cannot be an expression (`Tr0ub4dor3Zk(9q)`: a word
 * starting with a digit that is no number) is taken for a secret, not a call. Bounded: up to 8
 * blanks before it, its arguments to 256 characters on one line, up to the first quote, `(` or comma.
 */
function opensCall(text: string, open: number): boolean {
  // Any number of blanks: a bound here was one the sender chose (`system          (cmd)`, attack 18w T1).
  let before = open;
  while (before > 0 && (text[before - 1] === ' ' || text[before - 1] === '\t')) before--;
  const prev = text[before - 1];
  if (prev === undefined) return false;
  if (prev === ')' || prev === ']' || prev === '"' || prev === "'" || prev === '>') return true;
  if (!CALLEE_CHAR.test(prev)) return false; // a group after an operator
  // To the first character that settles it: a quote, a nested call or a comma (code), or the `)`.
  let close = open + 1;
  while (close < text.length && close - open < 256 && text[close] !== ')' && text[close] !== '\n' && !CODE_ARGS.test(text[close]!)) close++;
  // Settled as code, or not settled within the bound (arguments of 256 characters and more, a call
  // going on to the next line): a call. Only a short argument that cannot be an expression is not.
  if (text[close] !== ')') return true;
  const args = text.slice(open + 1, close).trim();
  return !NOT_AN_ARG.test(args) || NUMBER.test(args);
}

/** Where the blanks (spaces, tabs) at `at` end, however many. */
function blanksEnd(text: string, at: number): number {
  let i = at;
  while (text[i] === ' ' || text[i] === '\t') i++;
  return i;
}

/** A character of a name or a path of them (`os.system`), or of a number. */
const CALLEE_CHAR = /[\w$.]/;

/**
 * Where an expression that starts at `start` ends, read loosely as code (keepCalls): at a blank
 * outside parentheses, a line's end, or a `;` or `|` outside them, quoted strings skipped, so
 * `(system + 0)(...)`, `(*&system)(...)` and `s->fn(...)` are one piece (a shell word ends at the
 * blank, `&` or `>`). Bounded: at most 256 characters past `end`.
 */
function codeExtent(text: string, start: number, end: number): number {
  const limit = Math.min(text.length, end + 256);
  let depth = 0;
  let i = start;
  while (i < limit) {
    const c = text[i]!;
    if (c === '\n' || c === '\r' || ((c === ' ' || c === '\t' || c === ';' || c === '|') && depth === 0)) break;
    if (c === '"' || c === "'") {
      const close = text.indexOf(c, i + 1);
      if (close < 0 || close >= limit) break;
      i = close + 1;
      continue;
    }
    if (c === '(') depth++;
    else if (c === ')' && depth > 0) depth--;
    i++;
  }
  return Math.max(i, end);
}

/**
 * Whether an unquoted value holds a call (keepCalls: the audit), read as code to where the
 * expression it starts ends (codeExtent), or right after it: then it is code, kept whole,
 * whatever comes before the callee (`-system("id")`, `((system))(p[1])`, `(system + 0)(...)`,
 * `tbl[0](...)`, `s->fn(...)`, `x,system(p[1])`). Each `(` costs opensCall's scan, which stops at
 * the next `(`.
 */
function holdsCall(text: string, value: Span): boolean {
  const start = value[0];
  const end = codeExtent(text, start, value[1]);
  for (let p = start; p < end; p++) if (text[p] === '(' && opensCall(text, p)) return true;
  let after = blanksEnd(text, end);
  if (text[after] === '<') {
    const close = text.indexOf('>', after);
    if (close < 0 || close - after > 64) return false;
    after = blanksEnd(text, close + 1);
  }
  return text[after] === '(' && opensCall(text, after);
}

/**
 * The unquoted value at `at` is a dotted path in code and nothing more (`os.system`), ending its
 * statement (at `;`, a line's end or the text's end). A shell word followed by a command
 * (`NAME=value cmd`) or a word without a dot is never taken for one.
 */
function isDottedStatement(text: string, at: number): boolean {
  CODE_NAME.lastIndex = at;
  const m = CODE_NAME.exec(text);
  if (m === null || !m[0].includes('.')) return false;
  const after = text[at + m[0].length];
  return after === undefined || after === ';' || after === '\n' || after === '\r';
}

/**
 * Whether a name is called (`name(`, the parenthesis right after it, not inside a longer name or
 * word: `x-name(`, `my_name(` and `name (` in prose are not calls) after a place in the text:
 * where each name is last called is found once (one scan of the text per distinct name, for at most MAX_CALLED names; past that,
 * names are taken as not called and their values stay hidden), so a text of many assignments
 * costs no more than a few scans.
 */
class CalledNames {
  private static readonly MAX_CALLED = 16;
  private readonly lastCall = new Map<string, number>();
  constructor(private readonly text: string) {}

  later(name: string, after: number): boolean {
    let last = this.lastCall.get(name);
    if (last === undefined) {
      if (this.lastCall.size >= CalledNames.MAX_CALLED) return false;
      last = -1;
      // The last `name(` (or `name (`) not inside a longer name.
      const call = new RegExp(`(?<![\\w.$-])${name.replace(/[.$-]/g, (ch) => `\\${ch}`)}\\(`, 'g');
      for (let m = call.exec(this.text); m; m = call.exec(this.text)) last = m.index;
      this.lastCall.set(name, last);
    }
    return last > after;
  }
}

/** `alias` before a name (`alias api_token='touch m'`): its value is a command. */
const ALIAS_BEFORE = /\balias[ \t]+(?:-p[ \t]+)?$/;

/**
 * Text piped into a shell (wrapped too: `| nice sh`, `| "sh"`, `> >(bash)`), or a process
 * substitution sourced, an indirect expansion (`${!n}`, not an array's keys `${!a[@]}`), a
 * nameref: what runs comes from other commands' output or a name built, where any variable may be
 * (`printenv | sh`: attack c3-3; `printf "\$API_%s" TOKEN | nice sh`: k3-2).
 */
const RUNS_INPUT =
  /\|&?[^|;&\n]{0,200}?(?<![\w.-])(?:[\w.-]{0,32}\/){0,8}(?:sh|bash|dash|zsh|ksh|mksh|ash|busybox)(?![\w.-])|>[ \t]*>\([ \t]*(?:[\w.-]{0,32}\/){0,8}(?:sh|bash|dash|zsh|ksh|mksh|ash)(?![\w.-])|(?:^|[\s;&|(])(?:source|\.)[ \t]+<\(|(?<![\w.-])(?:sh|bash|dash|zsh|ksh|mksh|ash)[ \t]*<{1,3}|<[ \t]*<\(|\$\{![A-Za-z_][A-Za-z0-9_]*(?:\}|[*@]\})|(?:declare|local|typeset)(?:[ \t]+-[A-Za-z]+){0,8}?[ \t]+-[A-Za-z]*n/;

/** Where a command starts, before a word: a separator, an opening, a word that runs the next or a `-c` script's start; blanks, quotes, a backslash and a path between. Bounded: it is read backwards. */
const AT_COMMAND = String.raw`(?<=(?:^|[;&|(){}\x60\n!]|\$\(|(?:^|[\s'"(;&|{\x60])(?:then|do|else|command|builtin|exec|eval|sudo|doas|nohup|time|xargs|ssh|nice|timeout|stdbuf|setsid|ionice|chrt|taskset|flock|unshare|strace|ltrace|watch|env|-[A-Za-z]{0,8}c)(?:[ \t]{1,8}(?:-[\w=-]{0,32}|[0-9][\w.]{0,16})){0,4}[ \t]{1,8})[ \t'"\\]{0,8}(?:[\w.-]{0,32}\/){0,8})`;
/** Nothing more of the command after a word but redirections: its end (or its script's closing quote). */
const NO_MORE = String.raw`(?=(?:[ \t]+[0-9]*(?:>>?|>&|<)[ \t]*[\w./-]+)*[ \t]*(?:$|[;&|)\x60\n]|['"][ \t]*(?:$|[;&|)\x60\n])))`;
/**
 * env's options and assignments before a command it would run (none: env prints every variable).
 * `-S` takes a command. Each word is plain (letters, digits, a path): one that held `!env` put
 * another env where a command starts inside it, and each was read on to the end (attack l3-3:
 * 64,000 characters of `env -!env ...` took 4.2 s).
 */
const ENV_WORDS = String.raw`(?:[ \t]+(?:-u[ \t]*[A-Za-z_]\w*|--unset(?:=|[ \t]+)[A-Za-z_]\w*|-C[ \t]*[\w./~-]+|--chdir(?:=|[ \t]+)[\w./~-]+|-(?![-SuC])[A-Za-z0-9]+|--(?!split-string|unset|chdir)[a-z-]+(?:=[\w./:@%+,~-]*)?|[A-Za-z_]\w*=[\w./:@%+,~-]*))*`;

/**
 * What prints every variable (or their names) for other code to pick one by a name it builds,
 * where a command starts: `printenv` (`/usr/bin/printenv`, `\printenv`), `env` with no command
 * (`env -0`, `env -u X`, `env X=1`, `env 2>/dev/null`), `set`, `export`, `declare`, `typeset`,
 * `readonly` or `local` with no name, `export -p`, `compgen`, `ps e`; and anywhere, the process's
 * `environ` and an interpreter's whole environment (`os.environ.items()`, awk's `ENVIRON`,
 * `process.env`, perl's `%ENV`). `$(printenv | grep TOKE | cut -d= -f2-)` ran a hidden value
 * (attacks h3-2, i3-4, j3-1, j3-3); an argument that is only such a word (`--profile local`) is
 * none (j3-4).
 */
const DUMPS_VARIABLES = new RegExp(
  String.raw`(?<![\w.-])printenv(?![\w.-])|` +
    `(?=env|set|export|declare|typeset|readonly|local|compgen|ps)${AT_COMMAND}(?:env${ENV_WORDS}${NO_MORE}|set${NO_MORE}|(?:export|declare|typeset|readonly|local)(?:[ \\t]+(?:[-+][A-Za-z]+|--))*${NO_MORE}|(?:export|declare|typeset|readonly)[ \\t]+-[A-Za-z]*p|compgen(?![\\w.-])|ps[ \\t]+[A-Za-z]*e[A-Za-z]*(?![\\w.-]))`,
);
/** What reads the whole environment in code (DUMPS_VARIABLES' other half): read as written only, where its quotes decide. */
const READS_ENVIRONMENT = new RegExp(
  String.raw`\/proc\/\S*env|\bjq\b[^|;&\n]{0,200}?(?<![\w.$-])(?:env|\$ENV)(?![\w.-])|(?:\bos\.|\bimport[ \t]+|<[ \t]*)environb?\b(?!\s*\[\s*['"]|\.get\s*\(\s*['"])|\bENVIRON\b(?!\s*\[\s*["'])|\bprocess\.env\b(?!\s*\.\s*[A-Za-z_]|\s*\[\s*['"\x60])|\bprocess\s*\[\s*['"\x60]env['"\x60]\s*\]|%ENV\b|\$ENV\{(?!\s*['"]?[A-Za-z_]\w*['"]?\s*\})`,
);

/** A shell variable's name where it stands in text (not inside a longer name). */
const VARIABLE_NAME = /(?<![A-Za-z0-9_])[A-Za-z_][A-Za-z0-9_]{0,127}(?![A-Za-z0-9_])/g;
/** Where bash evaluates names as arithmetic: `((...))`, `$((...))`, `let`, a comparison (`[[ X -eq 0 ]]`), an array's subscript, an integer declaration. */
const ARITHMETIC = /\(\(|(?<![\w.-])let[ \t]|[ \t]-(?:eq|ne|lt|le|gt|ge)[ \t]|\$\{[A-Za-z_][A-Za-z0-9_]*\[|(?<![\w.-])(?:declare|typeset|local)[ \t]+-[A-Za-z]*i/;
/** A program's environment as an object whose member is named (`process.env.`, `env.`, `ENV.`, `environ.`). */
const ENV_MEMBER = /(?<![A-Za-z0-9_])(?:env|ENV|environ|Env)\.$/;
/** Builtins that name a variable without reading its value (`export TOKEN`, `unset TOKEN`). */
const NAMES_ONLY_BEFORE = /(?:^|[\s;&|(){}])(?:export|readonly|unset|local|typeset)[ \t]+$/;
/** What stands for a variable's expansion where the audit looks for a secret's place (mentionedVariables). */
const PLACE_PROBE = 'dkprobevalue';

/**
 * The secret-named variables `text` (a command line that runs) names anywhere but where it assigns
 * them: such a variable's value is code there, kept whole. Bash reads a variable's value in more
 * places than any list holds (`command -p $TOKEN`, `perl -e "$TOKEN"`, `echo "$TOKEN" |& bash`,
 * `read c <<< "$TOKEN"; $c`, `(( PASSWORD ))` evaluating `x[$(...)]`: attacks a3-2, d3-3, e3-1 to
 * e3-4), so the rule is the other way round: a value stays hidden only while the line names its
 * variable nowhere, or only as `$NAME` where the audit hides a secret itself (a password option's
 * value, an Authorization header, a URL's password: the expansion is given to a program as a
 * password, never run), or after `export`, `readonly`, `unset`. `*`: any variable may be run
 * (RUNS_INPUT). A program that builds a variable's name in its own code, or a value written to a
 * file and run, is not followed: the line shows the code that does so.
 */
export function mentionedVariables(text: string, mode: 'shell' | 'argv' = 'shell'): Set<string> {
  const names = new Set<string>();
  // A word written with quotes or a backslash inside (`e""nv`, `p\rintenv`) is the one the shell joins: read both ways.
  const joined = /['"\\]/.test(text) ? text.replace(/\$?['"]|\\/g, '') : undefined;
  if (RUNS_INPUT.test(text) || DUMPS_VARIABLES.test(text) || READS_ENVIRONMENT.test(text) || (joined !== undefined && (RUNS_INPUT.test(joined) || DUMPS_VARIABLES.test(joined)))) names.add('*');
  const expansions: Array<[number, number, string]> = [];
  const expandedWhole = new Set<string>();
  const arithmetic = ARITHMETIC.test(text);
  // Whether each distinct name reads as a secret's, judged once: a text of many words repeats them.
  const secretNamed = new Map<string, boolean>();
  const scan = (t: string, all: boolean) => {
    for (const m of t.matchAll(VARIABLE_NAME)) {
      const name = m[0];
      if (names.has(name)) continue;
      let secret = secretNamed.get(name);
      if (secret === undefined) secretNamed.set(name, (secret = (SECRET_WORD.test(name) || SECRET_NAME.test(name)) && !NAMES_A_COMMAND.test(name)));
      if (!secret) continue;
      const i = m.index;
      const e = i + name.length;
      const dollar = t[i - 1] === '$' ? i - 1 : t[i - 1] === '{' && t[i - 2] === '$' ? i - 2 : -1;
      if (dollar >= 0) {
        // `$NAME` and `${NAME}` are probed (below); any other expansion (`${NAME:-x}`, `${#NAME}`) reads the value.
        if (!all && (t[i - 1] === '$' || t[e] === '}')) expansions.push([dollar, t[i - 1] === '$' ? e : e + 1, name]);
        // Joined, an expansion the text writes whole was judged as written (probed): only one the shell joins counts here.
        else if (!all || !expandedWhole.has(name)) names.add(name);
        continue;
      }
      // Where it is assigned (`NAME=`, `NAME+=`, `NAME[i]=`, `NAME''=`).
      let k = e;
      while (k < e + 8 && (t[k] === "'" || t[k] === '"' || t[k] === '\\')) k++;
      const after = t[k];
      if (after === '=' || (after === '+' && t[k + 1] === '=') || (after === '[' && /^\[[^\]\s]{0,64}\]\+?=/.test(t.slice(k, k + 70)))) continue;
      // An option's or a file's name (`--token`, `~/.token`, `token.txt`), or a builtin that only names it. A variable's
      // name as a program reads its environment (`process.env.API_TOKEN`, jq's `env.API_TOKEN`: attack i3-2) is one still.
      const member = t[i - 1] === '.' && ENV_MEMBER.test(t.slice(Math.max(0, i - 12), i));
      // In arithmetic a name next to `-` or `/` is the variable (`$((API_TOKEN-0))` evaluates its value: attack j3-2).
      if (!member && (/[-/]/.test(t[i - 1] ?? '') || /[-/]/.test(t[e] ?? '') ? !arithmetic : t[i - 1] === '.' || t[e] === '.')) continue;
      if (NAMES_ONLY_BEFORE.test(t.slice(Math.max(0, i - 24), i))) continue;
      names.add(name);
    }
  };
  scan(text, false);
  // A name a shell joins from quoted or escaped parts names the variable all the same: every mention counts there.
  // A name the shell joins from parts (`\$API_"TOKEN"`, `TOK''EN`, `\$API_TOKE{N,}`: attacks e3, l3-1) names the variable
  // all the same: read joined, every mention counts, of a name the text never writes whole (written whole, it was judged above).
  if (/['"\\{}]/.test(text)) {
    for (const [, , name] of expansions) expandedWhole.add(name);
    scan(text.replace(/\$?['"]|[\\{},]/g, ''), true);
  }
  const probed = expansions.filter(([, , name]) => !names.has(name));
  if (probed.length === 0) return names;
  // Each `$NAME` stands as a probe value: where the audit hides the probe, the expansion is a password given to a program.
  let probe = '';
  let from = 0;
  const at: number[] = [];
  for (const [s, e] of probed) {
    probe += text.slice(from, s);
    at.push(probe.length);
    probe += PLACE_PROBE;
    from = e;
  }
  probe += text.slice(from);
  const hidden = findSecrets(probe, mode === 'argv' ? { keepCalls: true, argv: true, probe: true } : { keepCalls: true, command: true, probe: true });
  let k = 0;
  let reach = -1;
  for (let j = 0; j < probed.length; j++) {
    const a = at[j]!;
    while (k < hidden.length && hidden[k]![0] <= a) reach = Math.max(reach, hidden[k++]![1]);
    names.add(reach < a + PLACE_PROBE.length ? probed[j]![2] : `${IN_PLACE}${probed[j]![2]}`);
  }
  return names;
}

/**
 * Marks a name in mentionedVariables' set whose only expansions stand in a secret's place: its
 * value is a secret only while it is one plain word (INERT_VALUE). Unquoted, or read again (`eval
 * true --password $TOKEN`, `zip -P $ZIP_PASSWORD`, `git clone https://u:$TOKEN@h/`), a value of
 * several words or shell becomes options or code (attack h3-1).
 */
const IN_PLACE = '\u0000place:';
/**
 * A value that stays one plain word wherever a shell reads it, and no option: no blank, quote,
 * escape or shell character, and no leading `-`, `+` or `@` (`perl -pass $API_TOKEN` with the
 * value `-esystem+q+touch+m+` ran it as perl's `-e`: attack i3-1).
 */
const INERT_VALUE = /^(?![-+@])[A-Za-z0-9_.~+/=:@%,^-]*$/;

/** Whether the value of variable `name` is code by `names` (mentionedVariables' set): named, or in a secret's place but not an inert word. */
export function valueIsCode(names: ReadonlySet<string>, name: string, value: string): boolean {
  return names.has(name) || names.has('*') || (names.has(`${IN_PLACE}${name}`) && !INERT_VALUE.test(value));
}

/** The variables whose values are code in `text` (mentionedVariables), with those of the text it was read from. */
function ranVariables(text: string, reading: ValueReading): Set<string> {
  if (reading.probe) return new Set(reading.inheritedRan);
  const names = mentionedVariables(text, reading.mode);
  for (const n of reading.inheritedRan ?? []) names.add(n);
  return names;
}

/**
 * NAME=value, NAME = value, NAME := value, NAME="value", "NAME": value, NAME: value, and a quoted or
 * bracketed name before `=` or `:` (`os.environ["PGPASSWORD"] = ...`, `{'token' : ...}`), with a
 * secret-looking NAME: the value. Blanks after `=` count only when there are blanks before it too:
 * in the shell `NAME= cmd` runs cmd with NAME empty, and cmd is code.
 */
function nameValueSpans(text: string, spans: Span[], keepCalls: boolean, reading?: ValueReading): void {
  const called = new CalledNames(text);
  // In text that runs, a variable run as a command (`TOKEN='touch m' bash -c '$TOKEN'`) holds code, and so does an alias's value (attack a3-2).
  const ran = reading ? (reading.ran ??= ranVariables(text, reading)) : undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c !== '=' && c !== ':') continue;
    // Comparisons (==, !=, <=, >=) and URLs (://) are not assignments; in := the = is.
    if (c === '=' && (text[i + 1] === '=' || '=!<>'.includes(text[i - 1] ?? ''))) continue;
    if (c === ':' && (text[i + 1] === '/' || text[i + 1] === '=')) continue;
    let end = i;
    if (c === '=' && text[end - 1] === ':') end--;
    const beforeBlanks = end;
    while (end > 0 && beforeBlanks - end < 8 && (text[end - 1] === ' ' || text[end - 1] === '\t')) end--;
    const spaced = end < beforeBlanks;
    const bracketed = text[end - 1] === ']';
    if (bracketed) end--;
    const quoted = text[end - 1] === '"' || text[end - 1] === "'";
    if (quoted) end--;
    // A bracket holds a quoted name (["PGPASSWORD"]); a blank before a colon follows only a quoted one.
    if ((bracketed && !quoted) || (spaced && c === ':' && !quoted)) continue;
    let start = end;
    while (start > 0 && end - start < 128 && NAME_CHAR.test(text[start - 1]!)) start--;
    if (start === end) continue;
    const name = text.slice(start, end);
    const inQuery = !quoted && !spaced && (text[start - 1] === '?' || text[start - 1] === '&');
    // `pwd` names the working directory in the shell (the command, `PWD=/home/u`) and a password
    // elsewhere: as a quoted key (`"pwd": ...`, `['pwd'] = ...`), a key given a string (`{pwd: 'x'}`;
    // a label in a log, `pwd: /home/u`, is kept), a URL's query parameter, or an ODBC connection
    // string's field (`UID=sa;PWD=...`).
    const pwd = /^pwd$/i.test(name) && (quoted || text[start - 1] === ';' || (c === ':' && /["']/.test(text[i + 1 + blanksAt(text, i + 1)] ?? '')));
    // Docker's `"auth": "base64 of user:password"` (a config in DOCKER_AUTH_CONFIG: attack a3-4), a quoted key.
    const auth = quoted && /^auth$/i.test(name);
    // A long option's start (`--passw=`) names it as the option does (abbreviatesSecret).
    const abbreviated = c === '=' && name.startsWith('--') && !SECRET_WORD.test(name) && abbreviatesSecret(name.slice(2)) && abbreviatingCommand(text, start);
    if ((!SECRET_WORD.test(name) && !(inQuery && QUERY_SECRET.test(name)) && !pwd && !auth && !abbreviated) || NAMES_A_COMMAND.test(name)) continue;
    if (ran && c === '=' && (ran.has(name) || ran.has('*') || ALIAS_BEFORE.test(text.slice(Math.max(0, start - 24), start)))) continue;
    let at = i + 1;
    const blanks = blanksAt(text, at);
    if (c === ':') {
      // "name": value (JSON, YAML, headers): a quoted name, or a blank after the colon, or a
      // header's name written whole before it (`curl -H X-Api-Key:abc`).
      if (!quoted && blanks === 0 && !(HEADER_NAME.test(name) && (start === 0 || /[\s"']/.test(text[start - 1]!)))) continue;
      at += blanks;
    } else if (spaced) at += blanks;
    // A string literal's prefix in code (f"...", b'...', r"..."): the secret is inside the quotes.
    const prefix = /^[rRbBuUfF]{1,2}(?=["'])/.exec(text.slice(at, at + 3));
    if (prefix) at += prefix[0].length;
    const assigned = c === '=' && spaced && blanks > 0;
    // A name is code only where code is written: an argument or a dict entry (after `(`, `,` or
    // `{`), a lambda's default, an item assigned (`x["k"] = ...`), or an assignment with blanks. A
    // shell word (`PGPASSWORD=abc:def psql`, `export TOKEN=a,b`) is never code, whatever follows.
    // A `(` begins arguments after a callee (`f(`, `g()(`, `print (`); elsewhere it is a subshell
    // or a group (`(PGPASSWORD=x psql)`), where the value is a shell word.
    const before = text.slice(Math.max(0, start - (quoted ? 1 : 0) - 16), start - (quoted ? 1 : 0));
    const lambdaDefault = /\blambda[ \t]+(?:[\w, \t=]*,[ \t]*)?$/.test(before);
    // `$name=` is never a shell assignment (gdb's convenience variable, a script's variable), and
    // `:=` is code's (Python's walrus, Go), in a list too (`[token:=os.system]`).
    const walrus = c === '=' && text[i - 1] === ':';
    const dollar = !quoted && text[start - 1] === '$';
    const inCode = assigned || bracketed || walrus || dollar || /[,{][ \t]*$/.test(before) || /[\w)\]][ \t]{0,8}\([ \t]*$/.test(before) || lambdaDefault;
    if (!inQuery && inCode && isCodeAt(text, at, assigned, lambdaDefault)) continue;
    // A name called further on (`token=os.system;token("id")`) holds code, not a secret: its value is kept.
    if (!inQuery && !quoted && c === '=' && isDottedStatement(text, at) && called.later(name, i)) continue;
    const shellWord = !inCode && !inQuery && c === '=';
    // A header's value in text that runs is read as the program gets it too (`-H "X-Api-Key: ab'cd'"`).
    const header = c === ':' && !quoted && HEADER_NAME.test(name);
    let value = valueAt(text, at, prefix !== null && /f/i.test(prefix[0]), shellWord, shellWord || header ? reading : undefined);
    // A value read as a shell word is read once: what follows in its word is its own.
    const read = shellWord && reading ? reading.read : 0;
    // Where calls must be seen, a value that calls something is code, kept whole: unquoted, or a
    // quoted name called (`'system'(p[1])`).
    if (keepCalls && value && !inQuery) {
      const q = text[value[0] - 1];
      if (q === '"' || q === "'" ? text[value[1]] === q && text[value[1] + 1] === '(' && opensCall(text, value[1] + 1) : holdsCall(text, value)) continue;
    }
    // Authorization: Bearer xyz: the secret is the word after the scheme. Digest's parameters
    // (username=, realm=, ...) are not secret; its response= is (digestSpans).
    if (value && /authori[sz]ation/i.test(name) && AUTH_SCHEME.test(text.slice(value[0], value[1]))) {
      const digest = /^digest$/i.test(text.slice(value[0], value[1]));
      const next = value[1] + blanksAt(text, value[1]);
      value = !digest && next > value[1] && !isCodeAt(text, next, false) ? valueAt(text, next, false, false, reading) : undefined;
    }
    // A variable expanded only where the line gives it as a password is a secret while it is one plain word (h3-1).
    if (value && ran && c === '=' && shellWord && ran.has(`${IN_PLACE}${name}`) && valueIsCode(ran, name, text.slice(value[0], value[1]))) continue;
    if (value) {
      // A debugger's char pointer (`password = 0x5555555592a0 "hunter2"`): the string it points to, not its address.
      const quote = text[value[0] + 1] === 'x' ? value[1] + blanksAt(text, value[1]) : value[1];
      const pointed = quote > value[1] && text[quote] === '"' && /^0x[0-9a-f]{1,16}$/.test(text.slice(value[0], value[1])) ? valueAt(text, quote) : undefined;
      const secret = pointed ?? value;
      spans.push([secret[0], secret[1], kindOf(name), secret[3]]);
      i = Math.max(secret[1], read) - 1; // on after the value: it is not scanned again
    }
  }
}

/**
 * gdb's `set environment NAME VALUE`, `NAME=VALUE` and `NAME = VALUE` (and `set env`, `set environ`):
 * the value is the rest of the line, taken literally, quotes and blanks and all (read as text, the `=`
 * forms hid only the value's first word: attack t2-3).
 */
function gdbEnvironmentSpans(text: string, spans: Span[]): void {
  if (!/set[ \t]+env/i.test(text)) return;
  const setEnv = /(?<![\w-])set[ \t]+env(?:i(?:r(?:o(?:n(?:m(?:e(?:n(?:t)?)?)?)?)?)?)?)?[ \t]+([A-Za-z_][A-Za-z0-9_]{0,127})(?:[ \t]*=[ \t]*|[ \t]+)(?=[^\s=])/gi;
  for (let m = setEnv.exec(text); m; m = setEnv.exec(text)) {
    if (!SECRET_WORD.test(m[1]!)) continue;
    const at = m.index + m[0].length;
    const newline = text.indexOf('\n', at);
    let end = newline < 0 ? text.length : newline;
    while (end > at && /\s/.test(text[end - 1]!)) end--;
    // Read as a word (WORD_ACTIVE, not SHELL_ACTIVE): quotes and backslashes are the value's own characters here,
    // so `a'b` is hidden whole (it was kept in clear), while a value holding what a shell would run is still kept.
    if (end > at) spans.push([at, end, kindOf(m[1]!), true]);
  }
}

/**
 * --password VALUE, --api-token VALUE (a flag naming a secret, then its value as the next word);
 * and the single-dash long options of Java's and other tools: `-password VALUE`, `-storepass
 * VALUE` (keytool) (attack 18ac e1-1), as a word of a command line (after a blank, and not after
 * an operator: `c ? -password : x` is code). A single-dash value must start like a value (a letter,
 * digit or quote). A value that says where the password is (OpenSSL's `env:VAR`, `file:PATH`,
 * `fd:N`, `stdin`) is kept, and OpenSSL's `pass:PASSWORD` is opensslPassSpans' (which keeps
 * `pass:`).
 */
/**
 * Long options whose value is a secret, each with the fewest of its first letters that still name
 * it: getopt_long and MySQL's clients take any unambiguous start of a long option (`wget
 * --passw=`, `mysql --passwo`: attack e3-6 found them stored in clear).
 */
const SECRET_OPTIONS: ReadonlyArray<readonly [string, number]> = [
  ['password', 3],
  ['passwd', 3],
  ['passphrase', 5],
  ['secret', 4],
  ['token', 3],
  ['api-key', 5],
  ['http-password', 8],
  ['ftp-password', 7],
  ['proxy-password', 9],
];

/**
 * Programs known to take a start of a long option for the option (wget and gpg through getopt_long,
 * the MySQL clients): only theirs are read so. Elsewhere a start may name another option than a
 * password (argparse expands `--passw` to a lone `--password-command`: attack h3-4), whose command
 * must be shown.
 */
const ABBREVIATING_PROGRAM = /^(?:\S*\/)?(?:wget|wget2|gpg|gpg2|mysql[a-z_]{0,16}|mariadb[a-z_-]{0,16})(?:\.exe)?$/i;

/** Whether the command that holds `at` runs a program of ABBREVIATING_PROGRAM (its first word, past leading assignments). */
function abbreviatingCommand(text: string, at: number): boolean {
  let start = at;
  while (start > 0 && at - start < 4096 && !';&|\n(`'.includes(text[start - 1]!)) start--;
  const words = text
    .slice(start, at)
    .trim()
    .split(/[ \t]+/);
  const program = words.find((w) => !/^[A-Za-z_][A-Za-z0-9_]*=/.test(w));
  return program !== undefined && ABBREVIATING_PROGRAM.test(program.replace(/^["']|["']$/g, ''));
}

/** Whether a long option's name (without its dashes) is a start of a secret one (SECRET_OPTIONS), as the program takes it. */
function abbreviatesSecret(name: string): boolean {
  if (name.length < 3 || name.length > 14) return false;
  const lower = name.toLowerCase();
  return SECRET_OPTIONS.some(([option, least]) => lower.length >= least && option.startsWith(lower));
}

function flagValueSpans(text: string, spans: Span[], reading?: ValueReading): void {
  const flag = /(?<![A-Za-z0-9_-])-(-?)([A-Za-z0-9][A-Za-z0-9_-]{0,63})[ \t]{1,8}/g;
  for (let m = flag.exec(text); m; m = flag.exec(text)) {
    const double = m[1] === '-';
    const name = m[2]!;
    const at = m.index + m[0].length;
    const abbreviated = double && !SECRET_WORD.test(name) && abbreviatesSecret(name) && abbreviatingCommand(text, m.index);
    if (!(SECRET_WORD.test(name) || abbreviated) || NOT_A_VALUE.test(name) || text[at] === '-') continue;
    // A single-dash name is a word of letters (`-storepass`), not a cluster with its value attached (`7z -pHunter2Secret a.7z`),
    // and an option of a command line: at the start or after a blank that follows a word, not an operator.
    if (!double && (!/^[A-Za-z]{2,32}(?:[_-][A-Za-z]{1,32}){0,3}$/.test(name) || !/[A-Za-z0-9"']/.test(text[at] ?? '') || !optionPlace(text, m.index))) continue;
    if (/^["']?(?:(?:env|file|fd|pass):|stdin\b)/.test(text.slice(at, at + 7))) continue;
    const value = valueAt(text, at, false, false, reading);
    if (value) spans.push([value[0], value[1], kindOf(name), value[3]]);
    if (reading) flag.lastIndex = Math.max(flag.lastIndex, reading.read);
  }
}

/** Whether a single-dash option at `dash` stands where a command line's option does: the text's start, or a blank after a word (`java -jar x.jar -password`). */
function optionPlace(text: string, dash: number): boolean {
  if (dash === 0) return true;
  if (text[dash - 1] !== ' ' && text[dash - 1] !== '\t') return false;
  let i = dash - 1;
  while (i >= 0 && (text[i] === ' ' || text[i] === '\t')) i--;
  return i < 0 || /[A-Za-z0-9_"'./-]/.test(text[i]!);
}

/** The run of characters at `at` up to a blank or a quote, or none; with `reading`, the value as its program gets it (wordValueAt). */
function wordAt(text: string, at: number, reading?: ValueReading): Span | undefined {
  if (reading) {
    const word = wordValueAt(reading, at);
    if (word) return word;
  }
  let i = at;
  while (i < text.length && !SHELL_VALUE_END.has(text[i]!)) i++;
  return i > at ? [at, i] : undefined;
}

/**
 * Programs that take a password in an option of their own, in any case and with or without `.exe`
 * (MySQL.exe): the MySQL clients (mysql, mysqldump, mariadb, ...), sshpass, the Redis clients,
 * curl, and the programs with a `login` command that takes `-p` (docker, podman, helm, oc, az, ...).
 */
const PASSWORD_PROGRAM =
  /(?<![A-Za-z0-9_.-])(mysql[a-z_]{0,16}|mariadb[a-z_-]{0,16}|sshpass|redis-cli|valkey-cli|keydb-cli|curl|docker|podman|nerdctl|buildah|skopeo|helm|oras|oc|az|cf|mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport|sqlcmd|bcp|tsql|cqlsh|ldap[a-z]{2,12}|smbclient|rpcclient|zip|unzip|unrar|7z|7za|7zr|openssl|vault|ssh-keygen|lftp|sqlplus|sqlldr|expdp|impdp|rman|dgmgrl|xfreerdp|wlfreerdp|sdl-freerdp|rabbitmqctl|net)(?:\.exe)?(?![A-Za-z0-9_.-])/gi;
/** The programs' names (or login) as plain text, checked first: far cheaper than the pattern's lookbehind at every position. */
const PASSWORD_PROGRAM_HINT = /mysql|mariadb|sshpass|-cli|curl|login|mongo|sqlcmd|bcp|tsql|cqlsh|ldap|smb|rpcclient|zip|unrar|7z|openssl|vault|keygen|lftp|sql|dp|rman|dgmgrl|rdp|rabbitmq|net/i;
/** A MySQL client's -pPASSWORD (attached: a lone -p asks for it, and the next word is the database). */
const MYSQL_P = /(?<![^\s"'])-p(?=[^\s])/g;
/** sshpass -p PASSWORD, docker login -p PASSWORD (attached or the next word). */
const SPACED_P = /(?<![^\s"'])-p[ \t]{0,8}(?=[^\s-])/g;
/** redis-cli -a PASSWORD. */
const REDIS_A = /(?<![^\s"'])-a[ \t]{0,8}(?=[^\s-])/g;
/**
 * curl -u user:PASSWORD, --user user:PASSWORD, the proxy's -U, --proxy-user, and a client
 * certificate's passphrase, -E FILE:PASSPHRASE, --cert, --proxy-cert (attack e3-7).
 */
const CURL_USER = /(?<![^\s"'])(?:-[uUE][ \t]{0,8}|--(?:proxy-)?(?:user|cert)(?:[ \t]{1,8}|=))(?=[^\s-])/g;
const LOGIN = /(?<![^\s"'])login(?![^\s"'])/;
/** sqlcmd -P PASSWORD, bcp -P, zip/unzip -P PASSWORD. */
const SPACED_CAP_P = /(?<![^\s"'])-P[ \t]{0,8}(?=[^\s-])/g;
/** ldapsearch (ldapadd, ldapmodify, ...) -w PASSWORD. */
const LDAP_W = /(?<![^\s"'])-w[ \t]{0,8}(?=[^\s-])/g;
/** smbclient/rpcclient -U user%PASSWORD, --user=user%PASSWORD: the password after the first %. */
const SMB_USER = /(?<![^\s"'])(?:-U[ \t]{0,8}|--user(?:[ \t]{1,8}|=))(?=[^\s-])/g;
/** openssl enc -k PASSWORD (`-kfile FILE` names a file, `-pass` is opensslPassSpans'). */
const OPENSSL_K = /(?<![^\s"'])-k[ \t]{1,8}(?=[^\s-])/g;
/** mysqladmin's `password NEWPASSWORD` command. */
const MYSQLADMIN_PASSWORD = /(?<![^\s"'])password[ \t]{1,8}(?=[^\s-])/g;
/** ssh-keygen -N NEW_PASSPHRASE, -P OLD_PASSPHRASE (an empty `-N ""` is no secret). */
const KEYGEN_N = /(?<![^\s"'])-[NP][ \t]{0,8}(?=[^\s-])/g;
/** lftp -u user,PASSWORD: the password after the first comma. */
const LFTP_USER = /(?<![^\s"'])(?:-u[ \t]{0,8}|--user(?:[ \t]{1,8}|=))(?=[^\s-])/g;
/** vault login TOKEN: the first word after `login` that is not an option (`-method=userpass` logs in otherwise). */
const VAULT_TOKEN = /(?<![^\s"'])login[ \t]{1,8}(?=[^\s-])/g;
/** Oracle's tools' logon `USER/PASSWORD[@DB]` (sqlplus, sqlldr, expdp, impdp, rman, dgmgrl): the password, to `@`. */
const ORACLE_LOGON = /(?<![^\s"'])[A-Za-z_][\w$#]{0,127}\/(?=[^\s/@])/g;
/** FreeRDP's `/p:PASSWORD` (and `-p:`). */
const FREERDP_P = /(?<![^\s"'])[/-]p:(?=\S)/g;
/** rabbitmqctl's `add_user USER PASSWORD` and `change_password USER PASSWORD`. */
const RABBIT_USER = /(?<![^\s"'])(?:add_user|change_password)[ \t]{1,8}[^\s]{1,256}[ \t]{1,8}(?=[^\s-])/g;
/** Windows' `net use \\SERVER\SHARE PASSWORD` and `net user USER PASSWORD` (`*` asks). */
const NET_PASSWORD = /(?<![^\s"'])(?:use[ \t]{1,8}\\\\[^\s]{1,256}|user[ \t]{1,8}[^\s/]{1,256})[ \t]{1,8}(?=[^\s/*])/gi;

/**
 * Where the command that a program's name at `from` starts ends: a line's end (not a backslash-newline,
 * which continues it: `mysql \\<newline> -pPW` kept PW), `;`, `|` or `&&` (a single `&` may be part of
 * a URL's query, so it does not end one).
 */
function commandEnd(text: string, from: number): number {
  let i = from;
  let escaped = false;
  while (i < text.length) {
    const ch = text[i];
    if ((ch === '\n' && !escaped) || ch === '\r' || ch === ';' || ch === '|' || (ch === '&' && text[i + 1] === '&')) break;
    escaped = ch === '\\' && !escaped;
    i++;
  }
  return i;
}

/**
 * A password given to a program as an option of its own (PASSWORD_PROGRAM): only in that program's
 * own arguments, from its name to the next such program's name or the end of the command
 * (`redis-cli -a PW ping; ls -a /tmp` keeps `/tmp`; `docker exec db mysql -pPW` hides PW). Each
 * character is in one program's arguments at most, so the scan is linear.
 */
function programPasswordSpans(text: string, spans: Span[], reading?: ValueReading): void {
  if (!PASSWORD_PROGRAM_HINT.test(text)) return;
  const found: Array<[start: number, end: number, program: string]> = [];
  PASSWORD_PROGRAM.lastIndex = 0;
  for (let m = PASSWORD_PROGRAM.exec(text); m; m = PASSWORD_PROGRAM.exec(text)) found.push([m.index, m.index + m[0].length, m[1]!.toLowerCase()]);
  let cmdEnd = -1;
  for (let k = 0; k < found.length; k++) {
    const [, from, program] = found[k]!;
    // The end of the command is the same for every program name before it: scanned once.
    if (from > cmdEnd) cmdEnd = commandEnd(text, from);
    const to = Math.min(cmdEnd, found[k + 1]?.[0] ?? text.length);
    if (to <= from) continue;
    const args = text.slice(from, to);
    let option: RegExp;
    let start = 0;
    if (program === 'mysqladmin') {
      // mysqladmin takes -pPASSWORD as the other MySQL clients do, and a new one after its `password` command.
      addProgramValues(text, from, args, MYSQLADMIN_PASSWORD, 0, spans, reading);
      option = MYSQL_P;
    } else if (program.startsWith('mysql') || program.startsWith('mariadb')) option = MYSQL_P;
    else if (program === 'sshpass') option = SPACED_P;
    else if (program.endsWith('-cli')) option = REDIS_A;
    else if (program === 'curl') option = CURL_USER;
    else if (program.startsWith('mongo') || program === 'cqlsh')
      option = SPACED_P; // -p PASSWORD, attached or the next word (a lone -p asks)
    else if (program === 'sqlcmd' || program === 'bcp' || program === 'tsql' || program === 'zip' || program === 'unzip') option = SPACED_CAP_P;
    else if (program === 'unrar')
      option = MYSQL_P; // -pPASSWORD, attached only
    else if (program === 'ssh-keygen') option = KEYGEN_N;
    else if (program === 'lftp') option = LFTP_USER;
    else if (program.startsWith('ldap')) option = LDAP_W;
    else if (program === 'smbclient' || program === 'rpcclient') option = SMB_USER;
    else if (program.startsWith('7z'))
      option = MYSQL_P; // 7-Zip's -pPASSWORD, attached only
    else if (program === 'openssl') option = OPENSSL_K;
    else if (program === 'vault') option = VAULT_TOKEN;
    else if (/^(?:sqlplus|sqlldr|expdp|impdp|rman|dgmgrl)$/.test(program)) option = ORACLE_LOGON;
    else if (program.endsWith('freerdp')) option = FREERDP_P;
    else if (program === 'rabbitmqctl') option = RABBIT_USER;
    else if (program === 'net') option = NET_PASSWORD;
    else {
      const login = LOGIN.exec(args);
      if (!login) continue;
      option = SPACED_P;
      start = login.index + login[0].length;
    }
    addProgramValues(text, from, args, option, start, spans, reading);
  }
}

/**
 * The values `option` finds in a program's arguments `args` (which start at `from` in `text`), from
 * `start` on: the password in each.
 */
function addProgramValues(text: string, from: number, args: string, option: RegExp, start: number, spans: Span[], reading?: ValueReading): void {
  option.lastIndex = start;
  for (let m = option.exec(args); m; m = option.exec(args)) {
    // lftp's user,PASSWORD holds a comma, which ends a value elsewhere: its word runs to a blank or a quote.
    const at = from + m.index + m[0].length;
    const value = option === LFTP_USER || option === ORACLE_LOGON || option === FREERDP_P ? wordAt(text, at, reading) : valueAt(text, at, false, false, reading);
    // A value read as its program gets it is read once: the options after it in its word are its own.
    if (reading) option.lastIndex = Math.max(option.lastIndex, reading.read - from);
    if (!value) continue;
    if (option === ORACLE_LOGON) {
      const logonAt = text.slice(value[0], value[1]).indexOf('@');
      const logon: [number, number] = [value[0], logonAt < 0 ? value[1] : value[0] + logonAt];
      spans.push([...(value[3] && reading?.mode === 'shell' ? unquotedSpan(text, logon[0], logon[1]) : logon), 'password', value[3]]);
      continue;
    }
    if (option === CURL_USER || option === SMB_USER || option === LFTP_USER) {
      // user:PASSWORD (curl), user%PASSWORD (Samba), user,PASSWORD (lftp): the password is after the first separator (a lone user makes the program ask).
      const cut = text.slice(value[0], value[1]).indexOf(option === CURL_USER ? ':' : option === SMB_USER ? '%' : ',');
      // The password as quoted whole after its separator (`admin:'pw'`) shows its quotes, as a value does.
      const secret: Span = value[3] && reading?.mode === 'shell' ? unquotedSpan(text, value[0] + cut + 1, value[1]) : [value[0] + cut + 1, value[1]];
      if (cut >= 0 && secret[0] < secret[1]) spans.push([secret[0], secret[1], 'password', value[3]]);
    } else spans.push([value[0], value[1], 'password', value[3]]);
    // vault: only the first word after `login` is the token.
    if (option === VAULT_TOKEN) return;
  }
}

/**
 * OpenSSL's password argument `pass:PASSWORD` after -pass, -passin, -passout or -password (pkcs12),
 * as the next word or after `=`: the password, `pass:` kept. `env:VAR`, `file:PATH`, `fd:N` and
 * `stdin` say where the password is and are kept, and so is a `pass:` word after no such option (a
 * test's tally, `pass:12`).
 */
function opensslPassSpans(text: string, spans: Span[], reading?: ValueReading): void {
  if (!text.includes('pass:')) return;
  const option = /(?<![\w-])-pass(?:in|out|word)?(?:[ \t]{1,8}|=)(["']?)pass:/g;
  for (let m = option.exec(text); m; m = option.exec(text)) {
    const at = m.index + m[0].length;
    const quote = m[1]!;
    // Unquoted in text that runs, the value as its program gets it (`pass:ab'cd'`).
    const word = quote === '' && reading ? wordValueAt(reading, at) : undefined;
    if (word) {
      spans.push([word[0], word[1], 'password', true]);
      option.lastIndex = Math.max(option.lastIndex, reading!.read);
      continue;
    }
    // In quotes to the closing quote (in double quotes, to what the shell expands); else to the end of the shell word.
    const ends = quote === "'" ? "'\n" : quote === '"' ? '"$`\\\n' : undefined;
    let i = at;
    while (i < text.length && (ends === undefined ? !SHELL_VALUE_END.has(text[i]!) : !ends.includes(text[i]!))) i++;
    if (i > at) spans.push([at, i, 'password']);
    option.lastIndex = Math.max(option.lastIndex, i);
  }
}

/**
 * Settings whose names look secret but whose value is not a secret: where one is, or a program
 * run for it (`credential_process`, `credential.helper`, `credential_source`, `*_file`); the audit
 * must show a program that runs.
 */
const NOT_A_SECRET_SETTING = /(?:helper|process|source|command|file|path|env|dir|prompt|stdin)$/i;

/**
 * `configure set NAME VALUE` and `config set NAME VALUE` (aws, npm, yarn, pnpm, git 2.46's `git
 * config set`) with a secret-looking NAME (`aws_secret_access_key`, `profile.dev.aws_session_token`,
 * `//registry.npmjs.org/:_authToken`): the value, the next word.
 */
function configSetSpans(text: string, spans: Span[], reading?: ValueReading): void {
  if (!/config/i.test(text)) return;
  const set = /(?<![\w-])config(?:ure)?[ \t]{1,8}set[ \t]{1,8}(["']?)([\w.:/@-]{1,128})\1[ \t]{1,8}/g;
  for (let m = set.exec(text); m; m = set.exec(text)) {
    const name = m[2]!;
    if (!SECRET_WORD.test(name) || NOT_A_SECRET_SETTING.test(name)) continue;
    const value = valueAt(text, m.index + m[0].length, false, true, reading);
    if (value) {
      spans.push([value[0], value[1], kindOf(name), value[3]]);
      set.lastIndex = Math.max(set.lastIndex, value[1], reading?.read ?? 0);
    }
  }
}

/**
 * A call that sets a secret-looking name to a string (`setenv("DB_PASSWORD", "X", 1)`,
 * `os.putenv('API_TOKEN', 'X')`, `SetEnvironmentVariable`, `setdefault`, `localStorage.setItem`,
 * `headers.set`, `map.put`): the string, its quotes and the call kept. Only a callee whose name
 * says it sets something (SETTER), a quoted name first and a string literal second:
 * `print("password", "is wrong")`, `input("password", ...)` and `setenv("DB_PASSWORD", getenv("X"),
 * 1)` are kept. `putenv("NAME=X")` is nameValueSpans'.
 */
/** A callee that sets: starting with `set` or `put` (after `_`, `__` or `_w`: `_wputenv_s`), or ending with `env` (`g_setenv`, Go's `Setenv`). Not `input`, `output`, `reset`. */
const SETTER = /^(?:_{1,2}w?)?(?:set|put)|env(?:_s)?$/i;

function setterCallSpans(text: string, spans: Span[]): void {
  if (!text.includes('(')) return;
  const call = /(?<![\w$])([A-Za-z_$][\w$]{0,63})[ \t]{0,8}\([ \t]{0,8}[LuUbB]?(["'])([\w.:/-]{1,128})\2[ \t]{0,8},[ \t]{0,8}[LuUbB]?(?=["'])/g;
  for (let m = call.exec(text); m; m = call.exec(text)) {
    if (!SETTER.test(m[1]!) || !SECRET_WORD.test(m[3]!)) continue;
    const value = valueAt(text, m.index + m[0].length);
    if (value) {
      spans.push([value[0], value[1], kindOf(m[3]!)]);
      call.lastIndex = Math.max(call.lastIndex, value[1]);
    }
  }
}

/**
 * A user name and password given as a pair of strings: Python requests' and httpx's
 * `auth=("user", "PW")` (or a list; `basic_auth=`, `http_auth=`, `proxy_auth=` as Elasticsearch and
 * aiohttp name it, and `session.auth = (...)`), and `HTTPBasicAuth("user", "PW")`,
 * `HTTPDigestAuth`, `HTTPProxyAuth`, `BasicAuth`, `DigestAuth`: the password, the second string; the
 * user name is kept. A pair that is not two string literals (`auth=(u, os.environ["PW"])`) is code, kept.
 */
function authPairSpans(text: string, spans: Span[]): void {
  if (!/auth/i.test(text)) return;
  const pair =
    /(?<![\w$])(?:(?:basic_|http_|proxy_)?auth[ \t]{0,8}=[ \t]{0,8}[([]|(?:HTTPBasic|HTTPDigest|HTTPProxy|Basic|Digest)Auth[ \t]{0,8}\()[ \t]{0,8}[rRbBuU]?(["'])[^"'\n]{0,256}\1[ \t]{0,8},[ \t]{0,8}[rRbBuU]?(?=["'])/g;
  for (let m = pair.exec(text); m; m = pair.exec(text)) {
    const value = valueAt(text, m.index + m[0].length);
    if (value) {
      spans.push([value[0], value[1], 'password']);
      pair.lastIndex = Math.max(pair.lastIndex, value[1]);
    }
  }
}

/**
 * htpasswd's password given in batch mode (`-b`, alone or in a cluster: `-bc`, `-nb`, `-Bb`): the
 * third word after the options (FILE USER PASSWORD), the second with `-n` (USER PASSWORD), to the
 * last word of the command (a redirection, a line's end, `;`, `|` or `&&` ends it): in the shell the
 * password is one word, and in argv joined by blanks one word of argv may be several (htpasswd
 * refuses more words, so nothing that runs is hidden). `-C COST` and `-r ROUNDS` take the next word.
 * Without `-b` htpasswd asks for the password (or reads it with `-i`): nothing is hidden.
 */
function htpasswdSpans(text: string, spans: Span[]): void {
  if (!/htpasswd/i.test(text)) return;
  const program = /(?<![\w.-])htpasswd(?:\.exe)?(?=[ \t])/gi;
  for (let m = program.exec(text); m; m = program.exec(text)) {
    const end = commandEnd(text, m.index + m[0].length);
    let options = true;
    let batch = false;
    let display = false;
    let skip = false;
    let positional = 0;
    let password = -1;
    let last = -1;
    for (let at = m.index + m[0].length, word = nextShellWord(text, at, end); word; word = nextShellWord(text, at, end)) {
      at = word[1];
      if (skip) skip = false;
      else if (options && text[word[0]] === '-') {
        const option = text.slice(word[0], word[1]);
        if (option === '-C' || option === '-r') skip = true;
        else if (/^-[A-Za-z]+$/.test(option)) {
          batch ||= option.includes('b');
          display ||= option.includes('n');
        }
      } else {
        options = false;
        if (!batch) break;
        if (++positional === (display ? 2 : 3)) password = word[2];
      }
      last = word[3];
    }
    // Its words read as shell words (nextShellWord): quotes in them are the word's.
    if (password >= 0) spans.push([password, last, 'password', true]);
    // Each command is read once: a later `htpasswd` in it is an argument (a file named so).
    program.lastIndex = Math.max(program.lastIndex, end);
  }
}

/**
 * The shell word at or after `from` (after blanks) and before `to`, as [start, end, value start,
 * value end], the value without the quotes of a word quoted whole; none at a redirection (`>`,
 * `<`, `2>`) or `to`. Each character is read once.
 */
function nextShellWord(text: string, from: number, to: number): [number, number, number, number] | undefined {
  const start = blanksEnd(text, from);
  const c = text[start];
  if (start >= to || c === '>' || c === '<' || (c !== undefined && c >= '0' && c <= '9' && (text[start + 1] === '>' || text[start + 1] === '<'))) return undefined;
  let i = start;
  while (i < to && text[i] !== ' ' && text[i] !== '\t' && text[i] !== '>' && text[i] !== '<') {
    const q = text[i];
    i++;
    if (q === '"' || q === "'") {
      while (i < to && text[i] !== q) i++;
      if (i < to) i++;
    }
  }
  const whole = (c === '"' || c === "'") && i - start >= 2 && text[i - 1] === c;
  return whole ? [start, i, start + 1, i - 1] : [start, i, start, i];
}

/**
 * The words of argv that are a secret by the words before them, each a whole word (for the audit's
 * argv, where a word is one value, blanks and all, and the joined words may read otherwise):
 * VALUE after `configure set NAME` or `config set NAME` with a secret-looking NAME (as
 * configSetSpans), and htpasswd's password in batch mode (as htpasswdSpans; the word after its
 * FILE and USER, or after USER with `-n`). An empty word is no secret.
 */
export function argvSecretWords(words: readonly string[]): Set<number> {
  const found = new Set<number>();
  for (let k = 3; k < words.length; k++) {
    const name = words[k - 1]!;
    if (/^config(?:ure)?$/.test(words[k - 3]!) && words[k - 2] === 'set' && /^[\w.:/@-]{1,128}$/.test(name) && SECRET_WORD.test(name) && !NOT_A_SECRET_SETTING.test(name) && words[k] !== '')
      found.add(k);
  }
  for (let j = 0; j < words.length; j++) {
    if (!/(?:^|[/\\])htpasswd(?:\.exe)?$/i.test(words[j]!)) continue;
    let k = j + 1;
    let batch = false;
    let display = false;
    for (; k < words.length && words[k]!.startsWith('-'); k++) {
      const option = words[k]!;
      if (option === '-C' || option === '-r') k++;
      else if (/^-[A-Za-z]+$/.test(option)) {
        batch ||= option.includes('b');
        display ||= option.includes('n');
      }
    }
    const password = k + (display ? 1 : 2);
    if (batch && password < words.length && words[password] !== '') found.add(password);
  }
  return found;
}

/**
 * Whether [start, end) of a command line, read as its program gets it, is one value: no blank in
 * it (quoted or escaped), nor, in a word a shell reads again, what that shell acts on (`eval curl
 * https://u:$'a\x3btouch\x20m'@h/` runs `touch`: attack a3-1). A URL's "password" that is not is
 * no password: what runs stays shown.
 */
function readsWhole(r: ValueReading, start: number, end: number): boolean {
  const inner = wordCharacter(r, start);
  if (inner === undefined) return true;
  const t = traceOf(r, inner.k);
  const ends = commandsOf(r).read.reread.has(inner.k) ? REREAD_ENDS : BLANKS;
  for (let v = lastAtOrBefore(t.at.length, (m) => t.at[m]!, start - 1) + 1; v < t.at.length && t.at[v]! < end; v++) if (ends.has(t.value[v]!)) return false;
  return true;
}

/** What ends the scan of a URL's userinfo: blanks, quotes, angle brackets. */
const URL_END = new Set([...' \t\r\n\f\v"\'`<>']);
/** What ends it in text that runs, where quotes are the word's (wordValueAt). */
const URL_WORD_END = new Set([...' \t\r\n\f\v`<>']);

/**
 * A URL's password: scheme://user:PASSWORD@host. The password runs to the last `@` before the host
 * (a password may hold `/` or `@`: postgres://u:pa/ss@h), the host ending at the first `/`, `?` or
 * `#` after an `@`, a blank, a quote or the end. `host:port/...` (a port of digits, then `/`, `?` or
 * `#`) has no userinfo. A scan that finds no `@` goes on from where it stopped, one that does from
 * that `@`: no character is scanned twice.
 */
function urlPasswordSpans(text: string, spans: Span[], reading?: ValueReading): void {
  // In text that runs, quotes and backslashes are the word's: the password goes on past them (`http://u:ab'cd'@h`).
  const ends = reading ? URL_WORD_END : URL_END;
  const url = /:\/\/[^/\s:@[\]]*:/g;
  for (let m = url.exec(text); m; m = url.exec(text)) {
    const start = m.index + m[0].length;
    let at = -1;
    let i = start;
    for (; i < text.length && !ends.has(text[i]!); i++) {
      const ch = text[i]!;
      if (ch === '@') at = i;
      else if (ch === '/' || ch === '?' || ch === '#') {
        if (at >= 0) break;
        if (i > start && i - start <= 5 && /^\d+$/.test(text.slice(start, i))) break; // host:port/
      }
    }
    if (at > start && reading?.mode === 'shell' && !readsWhole(reading, start, at)) url.lastIndex = at + 1;
    else if (at > start) {
      spans.push([start, at, 'URL password', reading !== undefined]);
      url.lastIndex = at + 1;
    } else url.lastIndex = Math.max(url.lastIndex, i);
  }
}

/**
 * A URL's user name that is a token (`https://TOKEN@github.com/...`, as git and package managers
 * take a personal access token or a deploy token): a user of 20 characters or more, or of 12 or more
 * mixing letters and digits. Shorter users and plain words are names (`ssh://git@`, `oauth2@`,
 * `x-access-token@`, `gitlab-ci-token@`, `user1@`) and kept, and so is an e-mail address as a user
 * (`john.doe%40example.com@`); a long plain name is hidden too (noise, not a leak). A token of a
 * known shape is hidden wherever it is (shapeSpans), and `user:PASSWORD@` is urlPasswordSpans'.
 * Each scan starts at `://` and reads at most 256 characters.
 */
function urlUserTokenSpans(text: string, spans: Span[]): void {
  if (!text.includes('://')) return;
  const user = /:\/\/([^/\s:@?#"'`<>\\[\]]{12,256})@(?=[\w[])/g;
  for (let m = user.exec(text); m; m = user.exec(text)) {
    const name = m[1]!;
    if (name.includes('%40') || !(name.length >= 20 || (/[A-Za-z]/.test(name) && /\d/.test(name)))) continue;
    const start = m.index + 3;
    spans.push([start, start + name.length, 'URL user token']);
  }
}

/**
 * HTTP Digest's response=VALUE (the credential of a Digest Authorization header; its username=,
 * realm=, nonce=, uri= are kept), on the line of a `Digest name=` scheme. One scan per line.
 */
function digestSpans(text: string, spans: Span[]): void {
  if (!/digest/i.test(text)) return;
  const digest = /(?<![A-Za-z0-9_-])Digest[ \t]{1,8}(?=[A-Za-z][A-Za-z0-9_-]{0,31}[ \t]{0,8}=)/gi;
  for (let m = digest.exec(text); m; m = digest.exec(text)) {
    const newline = text.indexOf('\n', m.index);
    const end = newline < 0 ? text.length : newline;
    const params = text.slice(m.index, end);
    const response = /(?<![A-Za-z0-9_-])response[ \t]{0,8}=[ \t]{0,8}/gi;
    for (let r = response.exec(params); r; r = response.exec(params)) {
      const value = valueAt(text, m.index + r.index + r[0].length);
      if (value) spans.push([value[0], value[1], 'Digest response']);
    }
    digest.lastIndex = end;
  }
}

/** Bearer TOKEN, Basic BASE64: the credential after the scheme. */
function authSchemeSpans(text: string, spans: Span[]): void {
  const scheme = /\b(Bearer|Basic)[ \t]{1,8}([A-Za-z0-9._~+/-]{8,}={0,2})(?![A-Za-z0-9._~+/=-])/gi;
  for (let m = scheme.exec(text); m; m = scheme.exec(text)) {
    const token = m[2]!;
    // Basic carries base64 of "user:pass": a word in prose after "basic" is not that.
    if (m[1]!.toLowerCase() === 'basic' && (token.length % 4 !== 0 || /[._~-]/.test(token) || !Buffer.from(token, 'base64').includes(0x3a))) continue;
    const start = m.index + m[0].length - token.length;
    spans.push([start, start + token.length, `${m[1]!.toLowerCase() === 'basic' ? 'Basic' : 'Bearer'} credentials`]);
  }
}

/** debugkit's own API keys, anywhere. */
function apiKeySpans(text: string, spans: Span[]): void {
  const key = /(?<![A-Za-z0-9_-])dk_[A-Za-z0-9_-]{16,}/g;
  for (let m = key.exec(text); m; m = key.exec(text)) {
    // A key is base64url of random bytes: it has a capital or a digit. A name (`dk_debugger_quota_status`, a --tool-prefix'd tool) has neither.
    if (/[A-Z0-9]/.test(m[0].slice(3))) spans.push([m.index, m.index + m[0].length, 'debugkit API key']);
  }
}

/**
 * Secrets known by their shape, whatever names them: private keys (PEM), JSON Web Tokens, and the
 * access keys of AWS, GitHub, GitLab, Slack, Google, Stripe, OpenAI and Anthropic. Each pattern
 * starts at a literal and its classes cannot match what ends it.
 */
const SHAPES: ReadonlyArray<[RegExp, string]> = [
  [/(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, 'JWT'],
  [/(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])/g, 'AWS access key'],
  [/(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})/g, 'GitHub token'],
  [/(?<![A-Za-z0-9_-])glpat-[A-Za-z0-9_-]{20,64}/g, 'GitLab token'],
  [/(?<![A-Za-z0-9_-])xox[abpors]-[A-Za-z0-9-]{10,255}/g, 'Slack token'],
  [/(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])/g, 'Google API key'],
  [/(?<![A-Za-z0-9_])(?:sk|rk)_live_[A-Za-z0-9]{16,255}/g, 'Stripe key'],
  [/(?<![A-Za-z0-9_-])sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,255}/g, 'API key'],
];
/** The kinds of secret known by their shape alone (debugkit's own keys among them). */
const SHAPE_KINDS = new Set([...SHAPES.map(([, kind]) => kind), 'debugkit API key']);
const PEM_BEGIN = /-----BEGIN ([A-Z0-9]{1,16} ){0,3}PRIVATE KEY-----/g;
const PEM_END = '-----END ';

/** The literals every shape starts with: one scan tells whether any shape can be in the text (most have none). */
const SHAPE_HINT = /eyJ|AKIA|ASIA|gh[pousr]_|github_pat_|glpat-|xox[abpors]-|AIza|_live_|sk-|PRIVATE KEY/;

function shapeSpans(text: string, spans: Span[]): void {
  if (!SHAPE_HINT.test(text)) return;
  for (const [shape, kind] of SHAPES) {
    shape.lastIndex = 0;
    for (let m = shape.exec(text); m; m = shape.exec(text)) spans.push([m.index, m.index + m[0].length, kind]);
  }
  PEM_BEGIN.lastIndex = 0;
  for (let m = PEM_BEGIN.exec(text); m; m = PEM_BEGIN.exec(text)) {
    const body = m.index + m[0].length;
    const end = text.indexOf(PEM_END, body);
    // The key's body (its BEGIN and END lines say what it was); a key cut short is hidden to the end.
    spans.push([body, end < 0 ? text.length : end, 'private key']);
    PEM_BEGIN.lastIndex = end < 0 ? text.length : end;
  }
}

/** A name as the kind of the secret it holds (`PGPASSWORD`), short. */
function kindOf(name: string): string {
  return name.length > 40 ? `${name.slice(0, 40)}…` : name;
}

/**
 * How text is read. `keepCalls`: the text may be code sent to run (a tool's arguments, for the
 * audit), so a call is never taken for a secret, even in a word that could be one (`Xy7(ab)`):
 * the audit must show what ran. Answers (what a program printed, a file's lines) hide such a word.
 */
export interface SecretsReading {
  keepCalls?: boolean;
  /** With keepCalls: words of argv joined, which no shell reads: a password is hidden whatever it holds (no SHELL_ACTIVE rule). */
  argv?: boolean;
  /** With keepCalls: a command line (a `command` argument): the programs it runs are never hidden (programWords). */
  command?: boolean;
  /**
   * With keepCalls: text that runs (a command line, a word of argv; `command` and `argv` imply it).
   * A secret known only by its shape (SHAPE_KINDS) is kept there: a word shaped as a token may be
   * the program, the script or the file that runs (`time -p ghp_...`, `eval ghp_...`, `find -exec
   * ghp_...`, `$DIR/ghp_...`, a directory named `https:`), and no reading of a shell finds them all
   * (attack rounds 18ao c2, e2 and 18ap g2-1, g2-2, g2-3, g2-5 each found spellings). A secret known
   * by its place (an option's value, `NAME=value` with a secret's name, a URL's password, a header)
   * is hidden, unless it is in a path word's tail or reads as a path (hiddenInRun: it may be a
   * directory on the way to what ran).
   */
  running?: boolean;
  /** How deep in scripts the text is (scriptSpans); the reading of a command line leaves it out. */
  depth?: number;
  /** Variables whose values are code in the text this one was read from (ranVariables): code here too. */
  ran?: ReadonlySet<string>;
  /** A reading of mentionedVariables' probe: no variable is looked for again. */
  probe?: boolean;
}

/** In each word of `text` (to a blank) that starts as a path does and holds a second `/`, [after its first `/`, its end). */
function pathWordTails(text: string): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  const word = /(?<![^\s'"=])['"]?(?:\.{1,2}\/|~\/|\/)[^\s]*/g;
  for (let m = word.exec(text); m; m = word.exec(text)) {
    // A path goes on past its first `/` (`/p:Hunter2` is xfreerdp's password option, not a path).
    const slash = m[0].indexOf('/');
    if (m[0].indexOf('/', slash + 1) < 0) continue;
    out.push([m.index + slash + 1, m.index + m[0].length]);
    if (out.length > 4096) break;
  }
  return out;
}

/**
 * For each offset of `text` from `start` to `end`, whether the text from there to `end` reads as a
 * path: it holds a `/`, and a `.` that starts it, stands next to a `/` (`x/../evil.sh`, `a/./b.py`,
 * `.ssh/key`), or begins a file's extension (1 to 16 letters or digits ending a segment:
 * `dir/evil.sh`, `lib.d/x`). No base64, hex or JWT secret does: base64 and hex hold no `.`, a JWT no
 * `/` (`wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY` and `a/b+c/d==` do not read as paths). With
 * `unquoted`, quotes and backslashes are read through, as the program gets the word
 * (`"x"/"."/evil`). One pass from the end: each offset is read once, however many spans ask.
 */
function pathSuffixes(text: string, start = 0, end = text.length, unquoted = false): Uint8Array {
  const out = new Uint8Array(end - start + 1);
  let slash = false; // a `/` at or after i
  let mark = false; // a `.` next to a `/`, or an extension, at or after i (its `/` included)
  let run = 0; // the letters and digits after i
  let runEndsSegment = true; // and they end at a `/` or at the end
  let next = 0; // the character after i (0: none)
  for (let i = end - 1; i >= start; i--) {
    const c = text.charCodeAt(i);
    if (unquoted && (c === 0x22 || c === 0x27 || c === 0x5c)) {
      out[i - start] = out[i - start + 1]!;
      continue;
    }
    if (c === 0x2f) slash = true;
    if (c === 0x2e && (next === 0x2f || (run >= 1 && run <= 16 && runEndsSegment))) mark = true;
    if (c === 0x2f && next === 0x2e) mark = true;
    out[i - start] = slash && (mark || c === 0x2e) ? 1 : 0;
    if ((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122)) run++;
    else {
      run = 0;
      runEndsSegment = c === 0x2f;
    }
    next = c;
  }
  return out;
}

/** Whether [s, e) of `text` reads as a path, its quotes and backslashes read through (pathSuffixes). */
function readsAsPathUnquoted(text: string, s: number, e: number): boolean {
  const value = text.slice(s, e);
  return value.includes('/') && value.includes('.') && pathSuffixes(text, s, e, true)[0] === 1;
}

/** Whether a secret's whole text reads as a path (pathSuffixes). */
export function readsAsPath(value: string): boolean {
  return value.includes('/') && value.includes('.') && pathSuffixes(value)[0] === 1;
}

/** What, right after a value, carries its shell word on (`token="x"/./evil.sh`, `token=x\/./e`, `token=x$D/./e`). */
const WORD_GOES_ON = new Set([...'"\'\\$`']);
/** What ends a run of a word's characters (wordRuns): blanks and the shell's separators, quoted or not. */
const RUN_END = new Set([...' \t\r\n;&|<>()']);

/**
 * The runs of `text` between blanks and the shell's separators, as [start, end), quotes and
 * backslashes read through, not as bounds: a quoted blank ends a run too, so a value inside a quoted
 * `-c` script (`bash -c 'mysql -p"PW" db/x.sql'`) is read with its own word, never with the words
 * after it. Linear.
 */
function wordRuns(text: string): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let i = 0;
  while (i < text.length) {
    while (i < text.length && RUN_END.has(text[i]!)) i++;
    const start = i;
    while (i < text.length && !RUN_END.has(text[i]!)) i++;
    if (i > start) out.push([start, i]);
  }
  return out;
}

/** The first run of `runs` (sorted) that ends after `at`, by halves. */
function runAfter(runs: ReadonlyArray<readonly [number, number]>, at: number): number {
  let lo = 0;
  let hi = runs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (runs[mid]![1] > at) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * How text that runs is read for paths (hiddenInRun): `shell`, a command line (a value that a
 * quote, a backslash, `$` or a backquote carries on is read with the rest of its run, quotes
 * removed); `argv`, words of argv joined by blanks (no shell reads them: each value alone); `word`,
 * one word of argv (a value that a blank or one of those characters stops is read to the word's
 * end: the word is one value, a path if it runs).
 */
export type RunReading = 'shell' | 'argv' | 'word';

/**
 * Of the secrets found in text that runs (sorted by start), those still hidden there: one rule for
 * command lines, argv and the values that decide what runs. Kept as sent: a secret known only by its
 * shape (SHAPE_KINDS: a token-shaped word may be what runs); one in what follows the first `/` of a
 * word that starts as a path (`./token=x/../evil.sh`: attack 18ap h2-1); and one whose value, alone
 * or with the rest of its word, reads as a path (readsAsPath): a place found by a name, an option
 * or a URL's userinfo in a word that is not path-like may still be a directory on the way to what
 * ran (`wrapper token=x/../evil.sh`, `wrapper --password=a/./b.py`, `wrapper
 * http://u:p/../x@h/../evil.sh` ran while the audit kept `token=[REDACTED]`: attack 18aq). A value
 * that ends at a character of its own syntax (a URL's or a logon's `@`, a `%`, a `,`) is read alone:
 * what follows is a host or a user, never the value's. Linear: path words and runs are found once,
 * each run is read once (pathSuffixes), and a span finds its run by halves.
 */
export function hiddenInRun<S extends readonly [number, number, string?, boolean?]>(text: string, spans: readonly S[], reading: RunReading): S[] {
  if (spans.length === 0) return [];
  const pathWords = pathWordTails(text);
  // Spans and path words both in order: one pass.
  let w = 0;
  const inPath = (s: number) => {
    while (w < pathWords.length && pathWords[w]![1] <= s) w++;
    return w < pathWords.length && pathWords[w]![0] <= s;
  };
  const wholeWord = reading === 'word' ? pathSuffixes(text) : undefined;
  let runs: Array<[number, number]> | undefined;
  const read = new Map<number, Uint8Array>();
  // The value at `s` read on through the run that holds `e` (where the value stopped), from `s` or the run's start.
  const goesOnAsPath = (s: number, e: number): boolean => {
    if (wholeWord) return wholeWord[s] === 1;
    runs ??= wordRuns(text);
    const k = runAfter(runs, e);
    const run = runs[k];
    if (run === undefined || run[0] > e) return false;
    let paths = read.get(k);
    if (paths === undefined) read.set(k, (paths = pathSuffixes(text, run[0], run[1], true)));
    return paths[Math.max(s, run[0]) - run[0]] === 1;
  };
  return spans.filter(([s, e, kind, word]) => {
    if (kind !== undefined && SHAPE_KINDS.has(kind)) return false;
    if (inPath(s)) return false;
    // A value read as a shell word (wordValueAt) is read with its quotes and backslashes read through, as the program gets it.
    if (word === true && reading === 'shell' ? readsAsPathUnquoted(text, s, e) : readsAsPath(text.slice(s, e))) return false;
    const after = text[e];
    const goesOn = reading !== 'argv' && after !== undefined && (WORD_GOES_ON.has(after) || (reading === 'word' && (after === ' ' || after === '\t')));
    return !(goesOn && goesOnAsPath(s, e));
  });
}

/** Every secret found in `text`, by where it starts (they may overlap). */
export function findSecrets(text: string, reading: SecretsReading = {}): Span[] {
  const running = reading.keepCalls === true && (reading.running === true || reading.command === true || reading.argv === true);
  // In text that runs, `\_` separates words where env -S splits its string (`env -S 'PGPASSWORD=a\_touch\_m'` runs
  // `touch m`: attack d3-1); a shell reads it as `_`. Read as two blanks (the places stay), it can only end a value sooner.
  if (running && text.includes('\\_')) return findSecrets(text.replaceAll('\\_', '  '), reading);
  // In text that runs, a value is read as its program gets it (wordValueAt).
  const values: ValueReading | undefined = running
    ? { mode: reading.argv === true ? 'argv' : 'shell', text, read: 0, traces: new Map(), quotes: new Map(), depth: reading.depth ?? 0, inheritedRan: reading.ran, probe: reading.probe === true }
    : undefined;
  const spans = allSpans(text, reading.keepCalls === true, values);
  // What the audit keeps is never shell: a span that holds a substitution, a separator, a
  // redirection, a group, an expansion or a quote ran, or changed what ran (a URL's "password"
  // `$(touch${IFS}x)`, htpasswd's last word `a$(...)`: attack 18af k1-6, k1-7); nor one right after
  // `<` or `>`, a redirection's file or a process substitution (`<password>(touch x)</password>`
  // ran `>(touch x)`: attack 18ai p1-4). argv is not read by a shell: there a password is hidden
  // whatever it holds.
  // A value read as a shell word (wordValueAt) may hold the quotes and backslashes of its word, never more (WORD_ACTIVE).
  const shell = (s: number, e: number, word?: boolean) =>
    (word === true ? WORD_ACTIVE.test(withoutContinuations(text.slice(s, e))) : SHELL_ACTIVE.test(text.slice(s, e))) || text[s - 1] === '<' || text[s - 1] === '>';
  // Nor is a program that runs: a word where a shell runs one (`./token=x/../../usr/bin/touch` ran
  // while the audit kept `./token=[REDACTED]`: attack 18aj q1-1).
  const programs = reading.keepCalls === true && reading.command === true && spans.length > 0 ? programWords(text) : [];
  spans.sort((a, b) => a[0] - b[0]);
  // Both in order: one pass (the program words that end before a span never matter again).
  let p = 0;
  const runs = (s: number, e: number) => {
    while (p < programs.length && programs[p]![1] <= s) p++;
    return p < programs.length && programs[p]![0] < e;
  };
  if (reading.keepCalls !== true) return spans;
  // In what runs, a secret known only by its shape, one inside a path word and one that reads as a path are kept (hiddenInRun).
  const placed = running ? hiddenInRun(text, spans, reading.argv === true ? 'argv' : 'shell') : spans;
  if (reading.argv === true) return placed;
  const kept = placed.filter(([s, e, , word]) => !shell(s, e, word) && !runs(s, e));
  if (values?.mode !== 'shell') return kept;
  // What the reading as written judged (hid, or kept as a path or a program that runs); not a span it dropped for holding shell.
  const dequoted = dequotedSpans(
    values,
    reading.command === true,
    spans.filter(([s, e, , word]) => !shell(s, e, word)),
  );
  const scripts = scriptSpans(values);
  // In a script read again as its shell reads it, that reading decides alone: the reading as written reads a value there
  // from inside the script's own quotes as if they were not there (`trap -- $'... --password a\x3btouch ...'`: attack a3-1).
  const own = scripts.read.size === 0 ? [...kept, ...dequoted] : [...kept, ...dequoted].filter(([s]) => !scripts.read.has(wordIndexAt(values, s)));
  const found = [...own, ...scripts.spans].sort((a, b) => a[0] - b[0]);
  return found.length === 0 ? found : found.filter(([s]) => !scriptArgumentValue(values, s));
}

/** How deep scripts inside scripts are read (scriptSpans): `sh -c "sh -c \"...\""`, each level a word of the one before. */
const MAX_SCRIPT_DEPTH = 4;

/**
 * Secrets in the command lines a shell reads from a word of this one (a `-c` script, ssh's words),
 * read as that shell gets them: the word's value, its quotes and backslashes removed, is read as a
 * command line of its own, and what that finds is hidden where its characters stand here. The
 * reading as written misses what the quotes and escapes of the word change: `sh -c
 * ./dump.sh\ --password\ PW` runs `./dump.sh --password PW`, `sh -c "sh -c \"PGPASSWORD=x ...\""`
 * assigns x (attack v2-2). A span that holds what a shell acts on here is not one (as
 * dequotedSpans).
 */
function scriptSpans(r: ValueReading): { spans: Span[]; read: Set<number> } {
  const out: Span[] = [];
  const subread = new Set<number>();
  if (r.depth >= MAX_SCRIPT_DEPTH || !/['"\\]/.test(r.text)) return { spans: out, read: subread };
  const { words, read } = commandsOf(r);
  let active: Uint32Array | undefined;
  for (const k of read.lines) {
    const w = words[k]!;
    if (firstQuote(r.text, w.start, w.end) >= w.end || readAsWritten(r.text, w.start, w.end)) continue;
    const t = traceOf(r, k);
    // A script decides alone; the words eval, ssh or watch join are read one by one here, and as written too (an option there
    // and its value may be two words).
    if (!t.cut && read.scripts.has(k)) subread.add(k);
    for (const [s, e, kind] of findSecrets(t.value, { keepCalls: true, command: true, depth: r.depth + 1, ran: r.ran, probe: r.probe })) {
      // A value read to where the word's reading stopped at a substitution goes on into it: the reading as written judges it.
      if (t.cut && e >= t.value.length) continue;
      const a = t.at[s];
      const b = t.at[e - 1];
      if (a === undefined || b === undefined || b < a) continue;
      active ??= activeCount(r.text);
      if (active[b + 1]! === active[a]!) out.push([a, b + 1, kind, true]);
    }
  }
  return { spans: out, read: subread };
}

/** The index of the word of the command line that holds `at`, or -1. */
function wordIndexAt(r: ValueReading, at: number): number {
  const { words } = commandsOf(r);
  const k = lastAtOrBefore(words.length, (m) => words[m]!.start, at);
  return k >= 0 && words[k]!.end > at ? k : -1;
}

/**
 * Whether the reading as written reads the command line in [start, end) of `text` as its shell
 * does: one quoted string and nothing else (`'...'`, `"..."`: its value is what stands between its
 * quotes), with no backslash or `$` (an escape, or `$'...'`, which its shell decodes: attack a3-1),
 * and no `=`, where the shell that runs it might assign a quoted value whole (`sh -c
 * 'PGPASSWORD="correct horse" psql'`), which the reading as written ends at its first blank. The
 * other quotes inside are read as written well enough: a value there ends at a blank, quoted or not.
 * Such a script is not read again (scriptSpans): nested, it was read once a level.
 */
const AS_WRITTEN_NOT = new Set([...'\\=$']);
function readAsWritten(text: string, start: number, end: number): boolean {
  const q = text[start];
  if ((q !== "'" && q !== '"') || end - start < 2 || text[end - 1] !== q) return false;
  for (let i = start + 1; i < end - 1; i++) if (text[i] === q || AS_WRITTEN_NOT.has(text[i]!)) return false;
  return true;
}

/**
 * Whether `at` is where the value of a word after a shell's `-c` script begins (`sh -c 'eval "$1"'
 * --password 'touch m'`): such a word is the script's `$1`, never an option's value, and the script
 * may run it (attack v2-3). A secret inside such a word (`PGPASSWORD=x`, `-pX`) is found there still.
 */
function scriptArgumentValue(r: ValueReading, at: number): boolean {
  const { words, read } = commandsOf(r);
  if (read.scriptArguments.size === 0) return false;
  const k = wordIndexAt(r, at);
  if (k < 0 || !read.scriptArguments.has(k)) return false;
  const inner = wordCharacter(r, at);
  return inner === undefined || inner.t === NO_TRACE ? at === words[k]!.start : inner.v === 0;
}

/**
 * Quotes or a backslash glued between two characters of a name, an option, a URL or a parameter
 * (`PGPASS''WORD`, `--pass\word`, `https:''//`, `sig''=`), a backslash escaping a blank
 * (`Bearer\ TOKEN`), empty quotes (`-u'' admin:PW`) or a quoted option (`'--password' PW`): where
 * the text as written hides what its program gets (dequotedSpans).
 */
const GLUED_QUOTES = /[\w.:/@?&=+-](?:['"]+|\\\S)[\w.:/@?&=+-]|\\[ \t]|''|""|^['"]-/;

/** Places in a text, at most `size`, pushed in order (a typed array: a word of 128,000 characters is not 128,000 boxed numbers). */
class Positions {
  private readonly at: Int32Array;
  private n = 0;
  constructor(size: number) {
    this.at = new Int32Array(size);
  }
  /** A place, or (a flag) 1 for true and 0 for false. */
  push(k: number | boolean): void {
    this.at[this.n++] = +k;
  }
  /** The places pushed, in order. */
  view(): Int32Array {
    return this.at.subarray(0, this.n);
  }
  /** The place pushed `i`-th, or -1. */
  get(i: number): number {
    return i >= 0 && i < this.n ? this.at[i]! : -1;
  }
}

/**
 * How many characters a shell acts on (WORD_ACTIVE's: separators, redirections, substitutions,
 * expansions; a line continuation not) stand before each place of `text`: whether a span holds one
 * is then one subtraction, whatever the number of spans (a test of each span's text was quadratic).
 */
function activeCount(text: string): Uint32Array {
  const count = new Uint32Array(text.length + 1);
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    const continuation = c === '\n' && text[i - 1] === '\\';
    const acts = !continuation && ('`;|&<>\r\n'.includes(c) || (c === '$' && text[i + 1] !== "'"));
    count[i + 1] = count[i]! + (acts ? 1 : 0);
  }
  return count;
}

/**
 * Secrets that a quote or a backslash inside a word kept from the reading of a command line as
 * written: `PGPASS''WORD=x`, `--pass\word x`, `https:''//u:pw@h`, `Bearer\ TOKEN` run as
 * `PGPASSWORD=x`, `--password x`, ... (attack t2-1). Each command whose words hold one is read
 * again as its programs get it, its words' values (quotes and escapes removed) joined by blanks, as
 * argv; what that finds is hidden where its characters stand in the text, unless the reading as
 * written found that value too (`seen`: it decided there, to hide it or to keep it as what runs),
 * or it holds what a shell runs, or is a program that runs (as findSecrets keeps them).
 */
function dequotedSpans(r: ValueReading, command: boolean, seen: readonly Span[]): Span[] {
  const text = r.text;
  if (!/['"\\]/.test(text)) return [];
  const out: Span[] = [];
  let active: Uint32Array | undefined;
  let m = 0;
  let found = -1;
  // A word inside what the reading as written hides already adds nothing (seen is sorted by start, as the words are).
  let k = 0;
  let reach = -1;
  const hidden = (w: ShellWord) => {
    while (k < seen.length && seen[k]![0] <= w.start + 1) reach = Math.max(reach, seen[k++]![1]);
    return reach >= w.end - 1;
  };
  const commands = (r.commands ??= shellCommands(text));
  // A word a shell reads again (a script, code) is read as that shell reads it by the reading as written (wordValueAt).
  const reread = commandsOf(r).read.reread;
  let base = 0;
  for (const words of commands) {
    const first = base;
    base += words.length;
    let glued = false;
    for (let j = 0; j < words.length; j++) {
      const w = words[j]!;
      if (!reread.has(first + j) && firstQuote(text, w.start, w.end) < w.end && !hidden(w) && GLUED_QUOTES.test(text.slice(w.start, w.end))) glued = true;
    }
    if (!glued) continue;
    const values: string[] = [];
    const at = new Positions(words[words.length - 1]!.end - words[0]!.start + words.length);
    const trace = { at };
    for (const w of words) {
      if (values.length > 0) at.push(-1);
      if (firstQuote(text, w.start, w.end) < w.end) values.push(readShellWord(text, w.start, COMMAND_WORD_END, 'substitution', w.end, trace).value);
      else {
        // A word without quotes or backslashes is its value.
        values.push(w.value);
        for (let c = w.start; c < w.end; c++) at.push(c);
      }
    }
    const starts = words.map((w) => w.start);
    for (const [s, e, kind] of findSecrets(values.join(' '), { keepCalls: true, argv: true, ran: r.ran, probe: r.probe })) {
      const a = at.get(s);
      const b = at.get(e - 1);
      if (a < 0 || b < 0 || b < a || reread.has(first + lastAtOrBefore(starts.length, (q) => starts[q]!, a))) continue;
      active ??= activeCount(text);
      if (active[b + 1]! > active[a]!) continue;
      // A value the reading as written found whole, inside this word, was judged there (hidden, or kept as a path or a
      // program that runs); one it found only in part (`sig=ab"c"d` to its quote: attack v2-4), or read on past this word
      // (`PGPASSWORD'='PW ./run`), is hidden whole. In order, by start: one pass.
      while (m < seen.length && seen[m]![0] <= a) found = Math.max(found, seen[m++]![1]);
      if (found >= b + 1 && found <= words[lastAtOrBefore(starts.length, (q) => starts[q]!, a)]!.end) continue;
      out.push([a, b + 1, kind, true]);
    }
  }
  if (out.length === 0) return out;
  // In order (programs by start, the spans asked about by end): one pass.
  const overlapping = (sorted: ReadonlyArray<readonly [number, number, ...unknown[]]>) => {
    let m = 0;
    let end = -1;
    return (s: number, e: number) => {
      while (m < sorted.length && sorted[m]![0] < e) end = Math.max(end, sorted[m++]![1]);
      return end > s;
    };
  };
  const programs = command ? overlapping(programWords(text)) : () => false;
  return out.sort((a, b) => a[1] - b[1]).filter(([s, e]) => !programs(s, e));
}

function allSpans(text: string, keepCalls: boolean, reading?: ValueReading): Span[] {
  const spans: Span[] = [];
  nameValueSpans(text, spans, keepCalls, reading);
  flagValueSpans(text, spans, reading);
  gdbEnvironmentSpans(text, spans);
  programPasswordSpans(text, spans, reading);
  urlPasswordSpans(text, spans, reading);
  urlUserTokenSpans(text, spans);
  opensslPassSpans(text, spans, reading);
  configSetSpans(text, spans, reading);
  setterCallSpans(text, spans);
  authPairSpans(text, spans);
  htpasswdSpans(text, spans);
  colonParameterSpans(text, spans, reading);
  xmlElementSpans(text, spans);
  digestSpans(text, spans);
  authSchemeSpans(text, spans);
  apiKeySpans(text, spans);
  shapeSpans(text, spans);
  return spans;
}

/**
 * What makes a shell run, redirect or expand something in a word: a hidden span of a command line
 * never holds one. Brackets in a word are not among them (a shell refuses `a(b)` unquoted), nor
 * braces (their expansion makes words, never runs one).
 */
export const SHELL_ACTIVE = /[`;|&<>$'"\\\r\n]/;

/**
 * A gdb command that is plainly a shell command line: `shell` or `!` as its first word, nothing
 * before (names gdb will not let an alias take). The audit reads such a line as a command line (its
 * passwords hidden); the gdb toolset refuses one in a session that may have redefined `shell`
 * (`define shell`, or a Python command of that name), where it would be code the audit hid.
 */
export const GDB_SHELL_LINE = /^[ \t]*(?:shell[ \t]|!)/;
/**
 * PowerShell's `-Password:VALUE` (and any secret-named parameter so written), where a command line
 * has its options (optionPlace: `c ? -password:x` in code is not one).
 */
function colonParameterSpans(text: string, spans: Span[], reading?: ValueReading): void {
  if (!text.includes(':')) return;
  const param = /(?<![A-Za-z0-9_-])-([A-Za-z][A-Za-z0-9]{1,63}):(?=[^\s:])/g;
  for (let m = param.exec(text); m; m = param.exec(text)) {
    if (!SECRET_WORD.test(m[1]!) || NOT_A_VALUE.test(m[1]!) || !optionPlace(text, m.index)) continue;
    const value = valueAt(text, m.index + m[0].length, false, false, reading);
    if (value) spans.push([value[0], value[1], kindOf(m[1]!), value[3]]);
    if (reading) param.lastIndex = Math.max(param.lastIndex, reading.read);
  }
}

/** An XML element whose name looks secret: `<password>PW</password>`, `<api-key>K</api-key>` (the text between its tags). */
function xmlElementSpans(text: string, spans: Span[]): void {
  if (!text.includes('</')) return;
  const open = /<([A-Za-z_][\w.:-]{0,63})>/g;
  for (let m = open.exec(text); m; m = open.exec(text)) {
    if (!SECRET_WORD.test(m[1]!)) continue;
    const at = m.index + m[0].length;
    const lt = text.indexOf('<', at);
    if (lt > at && lt - at <= 4096 && text.startsWith(`</${m[1]}>`, lt)) spans.push([at, lt, kindOf(m[1]!)]);
  }
}

/**
 * Environment variables whose value decides what code runs (a library preloaded, a module path, a
 * script sourced, options that load code, where a program finds its files): like a program path,
 * their value is never hidden (unless the name itself reads as a secret's). A directory named like a
 * token (`ghp_...`) in `LD_PRELOAD` or `PYTHONPATH` hid which library ran (attack 18al u1-2); so did
 * a module named like one in `PYTHONWARNINGS`, and `HOME`, whose user site-packages run `.pth`
 * files (18am x1-1). Besides the names listed, any name holding a word that says so (PATH, DIR,
 * HOME, LIB, PREFIX, OPTIONS, CONFIG, PRELOAD, PLUGIN, MODULE, HOOK, INIT, CMD, EXEC, SHELL...).
 */
const CODE_DECIDING_NAMES =
  /^(?:LD_[A-Z_]+|DYLD_[A-Z_]+|PYTHON[A-Z_]*|NODE_[A-Z_]+|BASH_ENV|ENV|PERL5[A-Z_]*|PERLLIB|RUBY[A-Z_]*|GEM_[A-Z_]+|BUNDLE_[A-Z_]+|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS|CLASSPATH|GCONV_PATH|LUA_[A-Z_]+|R_[A-Z_]+|PROMPT_COMMAND|PS4|SHELLOPTS|BASHOPTS|IFS|GIT_[A-Z_]+|SSH_ASKPASS|EDITOR|VISUAL|PAGER|BROWSER|GDB[A-Z_]*|DEBUGINFOD_URLS|XDG_[A-Z_]+|TMPDIR|PWD|USER|LOGNAME|TERM|LANG|LC_[A-Z_]+)$/;
const CODE_DECIDING_WORDS =
  /PATH|DIR|HOME|LIB|PREFIX|OPTS|OPTIONS|FLAGS|WARNINGS|BREAKPOINT|STARTUP|CONFIG|PRELOAD|PLUGIN|MODULE|HOOK|INIT|CMD|COMMAND|EXEC|SHELL|LOADER|RUNNER|INTERPRETER|ROOT|FILE/i;
/**
 * Variables that name a program that build tools, pagers and credential helpers run (`make` runs
 * `$(CC)`: `CC=./ghp_...` hid which one ran, attack 18ao c2-2): their names, and name parts
 * (`CMAKE_C_COMPILER`, `RUSTC_WRAPPER`, `SUDO_ASKPASS`, `MANPAGER`, cargo's `*_CREDENTIAL_PROVIDER`,
 * which its secret-like name hid: 18ao e2-5). Only those: every `CARGO_*` kept a proxy's password
 * (18ao e2-3).
 */
const PROGRAM_NAMES =
  /^(?:CC|CXX|CPP|LD|AR|AS|NM|MAKE|AWK|YACC|BISON|LEX|FLEX|RANLIB|STRIP|OBJCOPY|OBJDUMP|READELF|FC|F77|PERL|NODE|RUSTC|RUSTDOC|GO|JAVA|JAVAC|LESSOPEN|LESSCLOSE|FCEDIT|TAR|GZIP|PKG_CONFIG|SED|GREP|INSTALL|M4|CARGO_BUILD_RUSTC|CARGO_BUILD_RUSTDOC|CARGO_TARGET_[A-Z0-9_]+_(?:LINKER|RUNNER))$/;
const PROGRAM_NAME_PARTS =
  /(?:^|_)(?:COMPILER|WRAPPER|LINKER|CREDENTIAL_PROVIDERS?|COMMAND|CMD|HELPER|PROGRAM|OPTS|OPTIONS|ARGS|FLAGS|EXTENSIONS_DIR|PROCESS|SCRIPT|HOOK|SHELL|RUN)$|ASKPASS$|PAGER$|EVAL$/;

/** Whether an environment variable's value decides what code runs: kept as sent (see CODE_DECIDING_NAMES). */
export function decidesCode(name: string): boolean {
  // A function bash imports from its environment (`BASH_FUNC_get_token%%=() { ...; }`: attack h3-5) is code, whatever its name.
  if (/^BASH_FUNC_.{1,256}%%$/s.test(name)) return true;
  // An environment variable's name (upper case): a tool's own arguments (`command`, `path`) are read as theirs.
  if (!ENV_NAME.test(name)) return false;
  // A registry's or a service's credentials in a config (`DOCKER_AUTH_CONFIG`: attack a3-4) are no code.
  if (/(?:^|_)AUTH(?:_|$)/.test(name)) return false;
  // A program named by a variable whose name reads as a secret's (cargo's credential providers) is a program still.
  if (PROGRAM_NAME_PARTS.test(name)) return true;
  return !SECRET_NAME.test(name) && (CODE_DECIDING_NAMES.test(name) || PROGRAM_NAMES.test(name) || CODE_DECIDING_WORDS.test(name));
}
const ENV_NAME = /^[A-Z_][A-Z0-9_]{0,255}$/;

/** A script that runs its arguments as they are, and nothing else: `"$@"`, `exec "$@"`. */
export const FORWARDS_ARGUMENTS = /^\s*(?:exec\s+)?(?:"\$@"|\$@|"\$\*"|\$\*)\s*$/;
/** Shells whose `-c` takes a script. */
const SHELLS = /^(?:sh|bash|dash|zsh|ksh|mksh|ash|fish)$/;

/**
 * Whether word `k` of `words` (values) is a shell's `-c` script wherever it stands: after a shell's
 * name and its `-c` in the arguments of a program the audit does not know (`prlimit sh -c SCRIPT`,
 * `docker exec c sh -c SCRIPT`), which commandRuns, reading only the program, cannot see. Its later
 * words are then the script's arguments, never an option's values (attack v2-3).
 */
export function shellScriptAt(words: readonly string[], k: number): boolean {
  return k >= 2 && /^-[A-Za-z]*c$/.test(words[k - 1]!) && SHELLS.test(baseName(words[k - 2]!));
}
/** Programs that run their `-c` value through a shell (su, sg, runuser, script; flock's is read among the wrappers). */
const COMMAND_OPTION = /^(?:su|sg|runuser|script)$/;
/** Wrappers' options that run their value as a command line, attached to it (`env -S"..."`, `-iS...`, `--split-string=...`). */
const ATTACHED_SCRIPT: Record<string, RegExp> = { env: /^(?:-[iv0]*S.|--split-string=)/s, flock: /^(?:-c.|--command=)/s };
/**
 * Programs with options whose value they run as a command line (through a shell, or split as one),
 * given as the next word (`separate`) or in the same word (`attached`).
 */
const COMMAND_VALUES: Record<string, { separate: string[]; attached: RegExp }> = {
  tar: {
    separate: ['-I', '-F', '--use-compress-program', '--to-command', '--info-script', '--new-volume-script', '--rsh-command'],
    attached: /^(?:-[A-Za-z]*[IF].|--(?:use-compress-program|to-command|info-script|new-volume-script|rsh-command|checkpoint-action)=)/s,
  },
  rsync: { separate: ['-e', '--rsh'], attached: /^(?:-[A-Za-z]*e.|--rsh=)/s },
};
/**
 * How each interpreter takes code, a script or values: `code`, an option whose next
 * word is code (alone, or ending a cluster: `python -Sc`, `perl -lne`, `perl -0777e`); `attached`,
 * an option word holding its code (`python -c'import os'`, `node --eval=CODE`); `valued`, options
 * whose next word is their value, never the script (`python -W ignore`, `node -r dotenv/config`,
 * `awk -v password=...`: attack 18ap g2-2 read those values as the script, hiding the code after
 * them and showing a password as a "script"); `file`, an option whose next word is the script file
 * (`awk -f`, `php -f`); `operandIsCode`: the first operand is the program text (awk's), not a file.
 */
interface InterpreterOptions {
  code: RegExp;
  attached?: RegExp;
  valued: readonly string[];
  file?: readonly string[];
  module?: string;
  operandIsCode?: boolean;
}
const INTERPRETER_OPTIONS: ReadonlyArray<readonly [RegExp, InterpreterOptions]> = [
  [/^(?:python|pypy)[0-9.]*$/, { code: /^-[A-Za-z]{0,3}c$/, attached: /^-c(?=.*[^A-Za-z0-9_-]).+$/s, valued: ['-W', '-X', '-Q', '--check-hash-based-pycs'], module: '-m' }],
  [
    /^(?:node|nodejs|bun|deno)$/,
    {
      code: /^(?:-e|-p|--eval|--print)$/,
      attached: /^(?:--eval|--print)=/,
      valued: [
        '-r',
        '--require',
        '--import',
        '--loader',
        '--experimental-loader',
        '-C',
        '--conditions',
        '--input-type',
        '--title',
        '--env-file',
        '--stack-size',
        '--inspect-port',
        '--debug-port',
        '--experimental-policy',
        '--openssl-config',
        '--redirect-warnings',
        '--diagnostic-dir',
        '--report-dir',
      ],
    },
  ],
  [/^perl[0-9.]*$/, { code: /^-(?:[A-Za-z]{0,3}|[0-9]+)[eE]$/, attached: /^-[eE](?=.*[^A-Za-z0-9_-]).+$/s, valued: ['-I', '-M', '-m', '-C', '-D', '-i'] }],
  [/^ruby[0-9.]*$/, { code: /^-[A-Za-z]{0,3}e$/, attached: /^-e(?=.*[^A-Za-z0-9_-]).+$/s, valued: ['-I', '-r', '-C', '-E', '-F', '-K', '-x', '--encoding'] }],
  [/^php[0-9.]*$/, { code: /^-r$/, attached: /^-r(?=.*[^A-Za-z0-9_-]).+$/s, valued: ['-d', '-c', '-z', '-t', '-S', '-B', '-E', '-R', '-F'], file: ['-f'] }],
  [/^(?:awk|gawk|mawk)$/, { code: /^(?:-e|--source)$/, valued: ['-v', '-F', '-W', '-i', '-l', '--assign', '--field-separator', '--include', '--load'], file: ['-f', '--file'], operandIsCode: true }],
  [/^lua[0-9.]*$/, { code: /^-e$/, valued: ['-l'] }],
  [/^(?:Rscript|tclsh)$/, { code: /^-e$/, valued: [] }],
];

/**
 * How an option word brings code for some shell or interpreter, when the program is not known (an
 * argv list that starts with an option): `next` (`-c`, `-lc`, `-e`, `-0777e`, `--eval`), `attached`
 * (`-cimport os`, `--eval=CODE`), or not at all. A cluster of more than four letters is no such
 * option (`-verbose`, `-force` stored a password in clear: attack 18z Z1).
 */
export function codeOption(word: string): 'next' | 'attached' | undefined {
  if (/^-[A-Za-z]{0,3}c$/.test(word) || INTERPRETER_OPTIONS.some(([, o]) => o.code.test(word))) return 'next';
  if (INTERPRETER_OPTIONS.some(([, o]) => o.attached?.test(word))) return 'attached';
  return undefined;
}

/** Words that start a command and run the next word (shell keywords, `!`, and the builtins that run their operand: eval, source, `.`, coproc). */
const KEYWORDS = new Set(['then', 'do', 'else', 'elif', 'if', 'while', 'until', '!', '{', 'builtin', 'eval', 'source', '.', 'coproc']);
const ASSIGNMENT_WORD = /^[A-Za-z_][A-Za-z0-9_]*=/;
const REDIRECTION = /^(?:[0-9]*|\{[A-Za-z_][A-Za-z0-9_]*\})(?:<|>|>>|<<|&>|>&|<&|<>|>\|)/;

/**
 * Programs that run the program named after their options and leading operands: each with the
 * options that take the next word as their value, and how many operands come before the program
 * (`timeout 5 PROG`, `taskset 0x3 PROG`, `chroot DIR PROG`). Their options and those words are
 * skipped to find the program (`nice -n 5 ./ghp_...` hid what ran: attack 18ao c2-1).
 */
const WRAPPERS: Record<string, { valued: string[]; operands: number }> = Object.fromEntries(
  Object.entries({
    env: ['-u -C -S --unset --chdir --split-string', 0],
    sudo: ['-u -g -h -p -C -D -r -t -U --user --group --host --prompt --chdir', 0],
    doas: ['-u -C', 0],
    nice: ['-n --adjustment', 0],
    ionice: ['-c -n -p -P -u --class --classdata', 0],
    chrt: ['-T -P -D', 1],
    timeout: ['-s -k --signal --kill-after', 1],
    stdbuf: ['-i -o -e', 0],
    taskset: ['', 1],
    flock: ['-w -E --timeout --conflict-exit-code', 1],
    chroot: ['--userspec --groups', 1],
    unshare: ['', 0],
    setsid: ['', 0],
    strace: ['-e -o -p -s -u -a -b -I -O -P -S -X', 0],
    ltrace: ['-e -o -p -s -u -a -n', 0],
    xargs: ['-a -d -E -I -L -n -P -s --arg-file --delimiter --max-args --max-procs --max-chars', 0],
    runuser: ['-u -g -G --user --group', 0],
    watch: ['-n -d --interval', 0],
    exec: ['-a', 0],
    command: ['', 0],
    nohup: ['', 0],
    time: ['-f -o --format --output', 0],
    'xvfb-run': ['-n -s -e -f -p --server-num --server-args --error-file --auth-file', 0],
    proxychains: ['-f', 0],
    proxychains4: ['-f', 0],
    valgrind: ['', 0],
    busybox: ['', 0],
    setarch: ['', 1],
    linux32: ['', 0],
    linux64: ['', 0],
    fakeroot: ['-l -f -i -s --lib --faked', 0],
    'ssh-agent': ['-a -E -t -P', 0],
    'dbus-run-session': ['--config-file --dbus-daemon', 0],
    setpriv: ['--reuid --regid --groups --inh-caps --ambient-caps --bounding-set --securebits --selinux-label --apparmor-profile', 0],
    nsenter: ['-t -S -G --target --setuid --setgid', 0],
    'systemd-run': ['-p -u -E -M -H --unit --property --setenv --slice --description --machine --host --uid --gid --working-directory', 0],
    sshpass: ['-p -f -d -e -P', 0],
    numactl: ['-N -m -C -p -i --cpunodebind --membind --physcpubind --preferred --interleave', 0],
    firejail: ['', 0],
    torsocks: ['-u -p -a -P', 0],
  } as Record<string, [string, number]>).map(([name, [valued, operands]]) => [name, { valued: valued.split(' ').filter(Boolean), operands }]),
);

const baseName = (word: string) => word.slice(word.lastIndexOf('/') + 1);

/**
 * Which words of one command run, read as the program runs them (`words`: each word's value, its
 * quotes and escapes removed): its program, past `NAME=value` assignments (with `assignments`),
 * redirections, shell keywords and wrappers (WRAPPERS: with their options, option values and
 * operands); a shell's `-c` script (`scripts`, a command line of its own), an interpreter's script
 * file (a program) or its `-c`/`-e` code (`code`, run as it is). One reading for command lines and
 * argv lists (attack 18ao e2-2: argv's wrappers were not read).
 */
export function commandRuns(words: readonly string[], { assignments = true }: { assignments?: boolean } = {}): { programs: Set<number>; scripts: Set<number>; code: Set<number> } {
  const programs = new Set<number>();
  const scripts = new Set<number>();
  const code = new Set<number>();
  const n = words.length;
  let i = 0;
  let leading = assignments;
  while (i < n) {
    const word = words[i]!;
    if (leading && ASSIGNMENT_WORD.test(word)) {
      i++;
      continue;
    }
    if (REDIRECTION.test(word)) {
      // `2>/dev/null` holds its file; `>` alone takes the next word.
      i += /^(?:[0-9]*|\{[A-Za-z_][A-Za-z0-9_]*\})(?:<|>|>>|<<|&>|>&|<&|<>|>\|)$/.test(word) ? 2 : 1;
      continue;
    }
    if (KEYWORDS.has(word)) {
      i++;
      continue;
    }
    programs.add(i);
    const name = baseName(word);
    i++;
    const wrapper = WRAPPERS[name];
    if (wrapper) {
      let operands = wrapper.operands;
      while (i < n) {
        const w = words[i]!;
        if (w === '--') {
          i++;
          break;
        }
        if ((name === 'env' && (w === '-S' || w === '--split-string')) || (name === 'flock' && (w === '-c' || w === '--command'))) {
          // env -S splits its value into the command it runs (attack 18ap h2-2); flock -c runs its value with sh -c.
          if (i + 1 < n) scripts.add(i + 1);
          return { programs, scripts, code };
        }
        if (ATTACHED_SCRIPT[name]?.test(w)) {
          // The same, attached to its option (`env -S"..."`, `--split-string=...`, `flock --command=...`: attack t2-2).
          scripts.add(i);
          return { programs, scripts, code };
        }
        if (w.startsWith('-') && w.length > 1) {
          // A cluster ending in an option that takes a value takes it too (`sudo -iu bob`: attack 18ap g2-3).
          const valued = wrapper.valued.includes(w) || (/^-[A-Za-z]{2,}$/.test(w) && wrapper.valued.includes(`-${w.at(-1)}`));
          i += valued ? 2 : 1;
          continue;
        }
        if (operands > 0) {
          operands--;
          i++;
          continue;
        }
        if (name === 'watch' && /\s/.test(w)) {
          // watch runs its command with sh -c: one word with blanks is a command line, not a program's name.
          scripts.add(i);
          return { programs, scripts, code };
        }
        break;
      }
      // env's own assignments come before its program.
      leading = name === 'env' || leading;
      continue;
    }
    if (SHELLS.test(name)) {
      // A shell reads each letter of an option cluster: a `c` anywhere in one (`-c`, `-ec`, `-cx`,
      // `-c -x`) makes its first operand the script; without one, that operand is a script file.
      let command = false;
      for (; i < n; i++) {
        const w = words[i]!;
        if (w === '--') continue;
        // A cluster ending in o or O takes its value (`-euo pipefail`), as `--rcfile FILE` does (attack 18ap g2-1).
        const valued = /^[-+][A-Za-z]*[oO]$/.test(w) || w === '--rcfile' || w === '--init-file';
        if (/^[-+][A-Za-z]+$/.test(w) || (w.startsWith('--') && w.length > 2)) {
          command ||= /^-[A-Za-z]*c/.test(w);
          if (valued) i++;
          continue;
        }
        (command ? scripts : programs).add(i);
        break;
      }
    } else {
      const options = INTERPRETER_OPTIONS.find(([pattern]) => pattern.test(name))?.[1];
      for (; options && i < n; i++) {
        const w = words[i]!;
        if (options.code.test(w)) {
          if (i + 1 < n) code.add(i + 1);
          break;
        }
        if (options.attached?.test(w)) {
          code.add(i);
          break;
        }
        if (w === options.module || options.file?.includes(w)) {
          // A module or a script file to run, named as a program is.
          if (i + 1 < n) programs.add(i + 1);
          break;
        }
        if (options.valued.includes(w) || (/^-[A-Za-z]{2,}$/.test(w) && options.valued.includes(`-${w.at(-1)}`))) {
          // An option that takes a value, alone or ending a cluster (`python3 -bW ignore`: attack 18ap h2-2).
          i++;
          continue;
        }
        if (w.startsWith('-') && w.length > 1) continue;
        // The script file the interpreter runs, or awk's program text.
        (options.operandIsCode ? code : programs).add(i);
        break;
      }
      // find runs the program after -exec, -execdir, -ok or -okdir (attack 18ap g2-3).
      if (name === 'find') {
        // Read as the command it is, to its `;` or `+` (`-exec sh -c SCRIPT`: attack 18ap h2-2).
        for (let k = i; k + 1 < n; k++) {
          if (!/^-(?:exec|execdir|ok|okdir)$/.test(words[k]!)) continue;
          let end = k + 1;
          while (end < n && words[end] !== ';' && words[end] !== '+') end++;
          const inner = commandRuns(words.slice(k + 1, end), { assignments: false });
          for (const [from, to] of [
            [inner.programs, programs],
            [inner.scripts, scripts],
            [inner.code, code],
          ] as const)
            for (const j of from) to.add(k + 1 + j);
          k = end;
        }
      }
      // su, sg, runuser and script run their `-c` value as a command line, wherever it stands (`su root -c CMD`: 18ap h2-2).
      if (COMMAND_OPTION.test(name)) {
        for (let k = i; k < n; k++) {
          const w = words[k]!;
          if (k + 1 < n && (w === '-c' || w === '--command' || w === '--session-command' || (name === 'script' && /^-[A-Za-z]*c$/.test(w)))) scripts.add(k + 1);
          // Attached (`--command='...'`, `-c'...'`, script's `-qc'...'`): the word is the command line (attack t2-2).
          else if (/^(?:--(?:session-)?command=|-c.)/s.test(w) || (name === 'script' && /^-[A-Za-z]*c./s.test(w))) scripts.add(k);
        }
      }
      // Programs that run an option's value as a command line (tar's --to-command, rsync's -e, git's -c core.sshCommand=...):
      // that value, separate or attached, is read as one (attack t2-2).
      const commandValues = COMMAND_VALUES[name];
      if (commandValues) {
        for (let k = i; k < n; k++) {
          if (commandValues.attached.test(words[k]!)) scripts.add(k);
          else if (k + 1 < n && commandValues.separate.includes(words[k]!)) scripts.add(++k);
        }
      }
    }
    break;
  }
  return { programs, scripts, code };
}

/** A word of a command line: where it is in the text ([start, end), its quotes included) and its value as the program gets it. */
interface ShellWord {
  start: number;
  end: number;
  value: string;
}

/** What ends a word of a command line unquoted (shellCommands): blanks and the shell's separators. */
const COMMAND_WORD_END = new Set([...' \t;&|\n\r)']);
/** What ends a value's shell word unquoted (wordValueAt): blanks, separators and redirections (a parenthesis is read as before: holdsCall). */
const VALUE_WORD_END = new Set([...' \t\r\n\f\v;&|<>']);
/**
 * How many words of a command line are read (shellCommands): a value past them was read without
 * its quotes (`wrap "token=a b"` after 4,096 words kept `b`). The audit reads a string of at most
 * 64 KiB (audit.ts MAX_STRING), at most 32,768 words: all of them.
 */
const MAX_COMMAND_WORDS = 65_536;

/**
 * The commands of a command line, each as its words, read as a shell reads them: quotes and
 * backslashes kept inside a word (a quoted `;` or blank is the word's, not a separator: attack 18ao
 * e2-1, e2-6), commands separated by unquoted `;`, `&`, `|`, line breaks, `)`, backquotes, `$(`
 * (also inside double quotes, where a substitution still runs) and a `(` where a word begins.
 * Linear; at most MAX_COMMAND_WORDS words.
 */
function shellCommands(text: string): ShellWord[][] {
  const commands: ShellWord[][] = [];
  let current: ShellWord[] = [];
  let words = 0;
  const endCommand = () => {
    if (current.length > 0) commands.push(current);
    current = [];
  };
  let i = 0;
  while (i < text.length && words < MAX_COMMAND_WORDS) {
    const c = text[i]!;
    if (';&|\n\r()`'.includes(c) || (c === '$' && text[i + 1] === '(')) {
      endCommand();
      i += c === '$' ? 2 : 1;
      continue;
    }
    if (c === ' ' || c === '\t') {
      i++;
      continue;
    }
    // A backslash-newline between words is a line continuation: a blank, no word.
    if (c === '\\' && text[i + 1] === '\n') {
      i += 2;
      continue;
    }
    const start = i;
    const word = readShellWord(text, i, COMMAND_WORD_END, 'substitution');
    i = word.end;
    current.push({ start, end: i, value: word.value });
    words++;
    // A substitution inside double quotes begins a command: the word so far ended there.
    if (word.cut) {
      endCommand();
      i += text[i] === '$' ? 2 : 1;
    }
  }
  endCommand();
  return commands;
}

/**
 * The places in `text` where a shell runs a program, as [start, end): the words commandRuns finds
 * in each command (a shell's `-c` script read again as a command line, an interpreter's code whole),
 * and the value of a leading assignment that decides what code runs (`LD_PRELOAD=...`). A URL is
 * never one.
 */
function programWords(text: string, depth = 0): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (const words of shellCommands(text)) {
    const { programs, scripts, code } = commandRuns(words.map((w) => w.value));
    let first = words.length;
    for (const k of programs) first = Math.min(first, k);
    for (let k = 0; k < words.length; k++) {
      const w = words[k]!;
      const assigned = ASSIGNMENT_WORD.exec(w.value);
      if (assigned && k < first && decidesCode(assigned[0].slice(0, -1))) {
        const eq = text.indexOf('=', w.start);
        if (eq >= 0 && eq + 1 < w.end) {
          // A command or options (`GIT_SSH_COMMAND="sshpass -p X ssh"`, `MAVEN_OPTS=-Dpassword=X`) is read as a command line,
          // its programs shown and its passwords hidden (attack 18ap h2-3); a path or a list of them is kept whole.
          if (READ_AS_COMMAND.test(assigned[0].slice(0, -1)) && depth < 4) {
            const quoted = text[eq + 1] === "'" || text[eq + 1] === '"' ? 1 : 0;
            for (const [s, e] of programWords(text.slice(eq + 1 + quoted, w.end - quoted), depth + 1)) out.push([eq + 1 + quoted + s, eq + 1 + quoted + e]);
          } else out.push([eq + 1, w.end]);
        }
      }
      // A program is shown even when it reads as a URL: `./http://u:X@h/../evil` and `http://u:X@h/x` (a directory `http:`) are paths that ran (18ap h2-1).
      // A word that starts with `-` is an option, never run.
      if ((programs.has(k) && !w.value.startsWith('-')) || code.has(k)) {
        out.push([w.start, w.end]);
      } else if (scripts.has(k) && depth < 4) {
        // The script's own text (inside its quotes, if quoted): its offsets are the text's.
        const quoted = text[w.start] === "'" || text[w.start] === '"' ? 1 : 0;
        for (const [s, e] of programWords(text.slice(w.start + quoted, w.end - quoted), depth + 1)) out.push([w.start + quoted + s, w.start + quoted + e]);
      }
    }
  }
  return out.sort((a, b) => a[0] - b[0]);
}

/**
 * The code-deciding variables whose value is a command or options, read as a command line
 * (`*_COMMAND`, `*_CMD`, `*_OPTS`, `*_OPTIONS`, `*_FLAGS`, `*_ARGS`): the rest (paths and lists of
 * them: `LD_PRELOAD`, `PYTHONPATH`, `BASH_ENV`) is kept whole.
 */
export const READ_AS_COMMAND = /(?:COMMAND|COMMANDS|CMD|OPTS|OPTIONS|FLAGS|ARGS|PROCESS|SCRIPT|HOOK|SHELL|RUN|EVAL)$/;

/** `text` with each secret replaced by what `mark` makes of its kind; everything around it kept. The kinds hidden, in order. */
export function replaceSecrets(text: string, mark: (kind: string | undefined) => string, reading: SecretsReading = {}): { text: string; kinds: string[] } {
  return hideSpans(text, findSecrets(text, reading), mark);
}

/**
 * `text` with each span (sorted by start) replaced by what `mark` makes of its kind; a span inside
 * one already hidden adds nothing. The kinds hidden, in order.
 */
export function hideSpans(text: string, spans: ReadonlyArray<readonly [number, number, string?, boolean?]>, mark: (kind: string | undefined) => string): { text: string; kinds: string[] } {
  if (spans.length === 0) return { text, kinds: [] };
  let out = '';
  let at = 0;
  const kinds: string[] = [];
  for (const [start, end, kind] of spans) {
    if (end <= at) continue;
    if (start >= at) {
      out += text.slice(at, start) + mark(kind);
      kinds.push(kind ?? 'secret');
    }
    at = end;
  }
  return { text: out + text.slice(at), kinds };
}

/**
 * A value that decides what code runs (decidesCode: kept as sent) with only its URLs' passwords
 * hidden: a proxy's or a registry's password is no code (`CARGO_HTTP_PROXY=http://u:pw@proxy` was
 * stored in clear: attack 18ao e2-3), and one that holds shell stays shown, as in command lines.
 */
export function hideUrlPasswords(text: string): string {
  const spans: Span[] = [];
  // An Authorization header's credentials too (git's `GIT_CONFIG_VALUE_0=Authorization: Bearer ...`: attack a3-4): never code.
  if (/bearer|basic/i.test(text)) authSchemeSpans(text, spans);
  if (text.includes('://')) urlPasswordSpans(text, spans);
  if (spans.length === 0) return text;
  // Not in a path, nor a path itself (`BASH_ENV=./http://u:/../d@x/../evil.sh` loads a file through a directory `http:`: attack
  // 18ap h2-1): the value read as a word of its own, its name blanked. One rule with command lines (hiddenInRun).
  const value = text.replace(/^[A-Za-z_][A-Za-z0-9_]*=/, (m) => ' '.repeat(m.length));
  const hidden = hiddenInRun(
    value,
    spans.filter(([s, e]) => !SHELL_ACTIVE.test(text.slice(s, e))).sort((a, b) => a[0] - b[0]),
    'argv',
  );
  return hideSpans(text, hidden, () => REDACTED).text;
}

/** A tool's argument with every secret value found replaced by [REDACTED], for the audit: everything around it kept, and every call (keepCalls). */
export function redactText(text: string, command = false, running = command): string {
  return replaceSecrets(text, () => REDACTED, { keepCalls: true, command, running }).text;
}

/**
 * A name for `text` not yet used in `out`: `text` itself, else `text (2)`, `text (3)`, ... Names that
 * read alike once their secrets are hidden all stay, so no value replaces another. `numbered` keeps
 * the next number per text, so many names hidden alike are numbered in linear time (trying 2, 3, ...
 * for each was quadratic: attacks 18z and 18ab C2). One rule for the audit and for answers.
 */
export function unusedName(text: string, out: object, numbered: Map<string, number>): string {
  let name = text;
  let n = numbered.get(text) ?? 2;
  while (Object.prototype.hasOwnProperty.call(out, name)) name = `${text} (${n++})`;
  numbered.set(text, n);
  return name;
}
