// One shell word, read as a shell reads it: the one reading of quotes and backslashes, for the
// command lines debugkit runs (core/argv.ts splitShellWords) and for those the audit reads
// (core/secrets.ts). Two readers that disagreed let a command run what the audit did not show
// (attack 18as p2-1, p2-2).

/** What starts an expansion after `$` (`$NAME`, `${...}`, `$1`, `$@`, ...): a value's literal part ends there. */
const PARAMETER_START = /[A-Za-z0-9_{@*#?$!-]/;

/** What a backslash escapes inside double quotes (otherwise it is the word's own character, as in bash). */
const ESCAPED_IN_DOUBLE_QUOTES = '$`"\\\n';

/**
 * Where an unquoted word stops besides `ends` (readShellWord): `substitution`, at `$(` and a
 * backquote, where a command begins (inside double quotes too: then `cut`); `expansion`, also at
 * `$NAME`, `${...}`, `$1` and the like, where a value's literal part ends; `plain`, for a word run
 * without a shell: also at `$'...'` and `$"..."` quoting, and at any `$` or backquote inside double
 * quotes (`cut`); `none`, nowhere.
 */
export type WordStop = 'substitution' | 'expansion' | 'plain' | 'none';

export interface ShellWordRead {
  /** Where the reading ended: the character that ended the word, or `to`. */
  end: number;
  /** The word's value, quotes and escapes removed. */
  value: string;
  /** Ended by what `stop` names inside double quotes. */
  cut: boolean;
  /** The quote that ran to `to` without its close, if one did. */
  unclosed: "'" | '"' | undefined;
  /** Ended inside quotes, at a character of `quotedEnds`. */
  split?: boolean;
}

/**
 * One shell word read from `at` as a shell reads it: single quotes to their close, double quotes
 * with their backslash escapes (a backslash before another character stays), `$'...'` with its
 * escapes (unless `stop` is `plain`), a backslash escaping the next character, a backslash-newline
 * removed (a line continuation); quoted characters are the word's, whatever they are. Unquoted, a
 * character of `ends` ends it, and so does what `stop` names (WordStop). Never past `to`. With
 * `trace`, where each character of the value is in `text` (pushed onto `at`) and, if asked, whether
 * it was inside quotes. With `quotedEnds`, a quoted character of it ends the word too (`split`): the
 * word's value read again by a shell ends at its first blank. Linear.
 */
export function readShellWord(
  text: string,
  at: number,
  ends: ReadonlySet<string>,
  stop: WordStop,
  to = text.length,
  trace?: { at: { push(k: number): unknown }; quoted?: { push(q: boolean): unknown } },
  quotedEnds?: ReadonlySet<string>,
): ShellWordRead {
  let value = '';
  let cut = false;
  let split = false;
  let unclosed: ShellWordRead['unclosed'];
  let i = at;
  const dollarQuotes = stop !== 'plain';
  while (i < to && !cut && !split) {
    const d = text[i]!;
    if (d === "'" || (dollarQuotes && d === '$' && text[i + 1] === "'")) {
      // Single quotes hold everything to their close; `$'...'` too, but a backslash escapes the next character there.
      i += d === '$' ? 2 : 1;
      while (i < to && text[i] !== "'") {
        // `$'...'` decodes its escapes (`\x3b` is `;`, `\x20` a blank: attack a3-1): the character stands where its escape does.
        const escape = d === '$' && text[i] === '\\' && i + 1 < to ? ansiEscape(text, i, to) : undefined;
        const c = escape ? escape.char : text[i]!;
        if (quotedEnds?.has(c)) {
          split = true;
          break;
        }
        value += c;
        // One place for each UTF-16 unit it adds (an escape past U+FFFF adds two: attack c3-2 shifted what was hidden).
        for (let u = 0; u < c.length; u++) traced(trace, i, true);
        i = escape ? escape.end : i + 1;
      }
      if (split) break;
      if (i >= to) unclosed = "'";
      i++;
    } else if (d === '"' || (dollarQuotes && d === '$' && text[i + 1] === '"')) {
      // Double quotes, and `$"..."` (a string the locale may translate): their expansions still run.
      i += d === '$' ? 2 : 1;
      while (i < to && text[i] !== '"') {
        if (quotedEnds?.has(text[i]!)) {
          split = true;
          break;
        }
        if (text[i] === '\\' && i + 1 < to && ESCAPED_IN_DOUBLE_QUOTES.includes(text[i + 1]!)) {
          // A backslash-newline is a line continuation: both go, the word goes on.
          if (text[i + 1] !== '\n') {
            value += text[i + 1];
            traced(trace, i + 1, true);
          }
          i += 2;
        } else if (stopsAt(text, i, stop, true)) {
          cut = true;
          break;
        } else {
          value += text[i];
          traced(trace, i++, true);
        }
      }
      if (split) break;
      if (!cut && i >= to) unclosed = '"';
      if (!cut) i++;
    } else if (d === '\\') {
      // An escaped character of `quotedEnds` ends the word; a backslash-newline is a line continuation still.
      if (text[i + 1] !== '\n' && quotedEnds?.has(text[i + 1] ?? '')) {
        split = true;
        break;
      }
      if (i + 1 < to && text[i + 1] !== '\n') {
        value += text[i + 1];
        traced(trace, i + 1, false);
      }
      i += 2;
    } else if (ends.has(d) && !((d === '|' || d === '&') && (text[i - 1] === '>' || text[i - 1] === '<') && i > at)) break;
    // `>|` (clobber) and `>&`, `<&` are a redirection's, not a pipe or a background job (attack 18ap h2-2).
    else if (stopsAt(text, i, stop, false)) break;
    else {
      value += d;
      traced(trace, i++, false);
    }
  }
  return { end: Math.min(i, to), value, cut, unclosed, ...(split ? { split } : {}) };
}

/** Single-character escapes of `$'...'`, as bash decodes them. */
const ANSI_ESCAPES: Record<string, string> = { a: '\x07', b: '\b', e: '\x1b', E: '\x1b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\\': '\\', "'": "'", '"': '"', '?': '?' };

/**
 * The escape of `$'...'` at the backslash `at` (before `to`), as bash decodes it: `\n` and the
 * like, `\NNN` (octal), `\xHH`, `\uHHHH`, `\UHHHHHHHH`, `\cX`; any other keeps its backslash
 * (then the escape is the backslash alone). Its character and where the escape ends.
 */
function ansiEscape(text: string, at: number, to: number): { char: string; end: number } {
  const c = text[at + 1]!;
  const simple = ANSI_ESCAPES[c];
  if (simple !== undefined) return { char: simple, end: at + 2 };
  const digits = (from: number, max: number, pattern: RegExp) => {
    let end = from;
    while (end < to && end - from < max && pattern.test(text[end]!)) end++;
    return end;
  };
  if (c >= '0' && c <= '7') {
    const end = digits(at + 1, 3, /[0-7]/);
    return { char: String.fromCharCode(Number.parseInt(text.slice(at + 1, end), 8) & 0xff), end };
  }
  if (c === 'x' || c === 'u' || c === 'U') {
    const end = digits(at + 2, c === 'x' ? 2 : c === 'u' ? 4 : 8, /[0-9A-Fa-f]/);
    if (end > at + 2) {
      const code = Number.parseInt(text.slice(at + 2, end), 16);
      return { char: code <= 0x10ffff ? String.fromCodePoint(code) : '\ufffd', end };
    }
  }
  // `\cX` takes the next character, never the closing quote (`$'\c'` is `\c`: attack c3-1 read past the quote).
  if (c === 'c' && at + 2 < to && text[at + 2] !== "'") return { char: String.fromCharCode(text.charCodeAt(at + 2) & 0x1f), end: at + 3 };
  return { char: '\\', end: at + 1 };
}

/** Where each character of a word's value is (readShellWord's trace). */
function traced(trace: { at: { push(k: number): unknown }; quoted?: { push(q: boolean): unknown } } | undefined, k: number, quoted: boolean): void {
  if (trace === undefined) return;
  trace.at.push(k);
  trace.quoted?.push(quoted);
}

/** Whether what `stop` names begins at `k` (readShellWord), inside double quotes or not. */
function stopsAt(text: string, k: number, stop: WordStop, inDoubleQuotes: boolean): boolean {
  if (stop === 'none') return false;
  const c = text[k];
  if (c === '`') return true;
  if (c !== '$') return false;
  const next = text[k + 1] ?? '';
  if (stop === 'plain') return inDoubleQuotes || next === '(' || next === "'" || next === '"';
  return next === '(' || (stop === 'expansion' && PARAMETER_START.test(next));
}
