import { BundleError } from '../errors.js';

/**
 * The compiled pattern: a regex run over whole chunks of text (and one to check a single line), or
 * for a case-sensitive pattern without regex syntax, a plain byte search that needs no decoding.
 */
export class Searcher {
  readonly chunkRe: RegExp;
  readonly lineRe: RegExp;
  /** The bytes to look for when the pattern is a literal searched case-sensitively. */
  readonly literal: Buffer | null;
  /** Lookarounds could see past a line's end in a chunk: such patterns run line by line. */
  readonly lineByLine: boolean;
  /** The pattern can only match ASCII characters, so UTF-8 text may be searched as latin1. */
  readonly byteSafe: boolean;
  /** Bytes every match contains: a chunk without them is skipped undecoded. */
  readonly required: Buffer | null;

  constructor(pattern: string, caseSensitive: boolean) {
    const flags = caseSensitive ? '' : 'i';
    try {
      this.chunkRe = new RegExp(pattern, `gm${flags}`);
      this.lineRe = new RegExp(pattern, flags);
    } catch (err) {
      const detail = err instanceof Error ? err.message.replace(/^Invalid regular expression: \/.*\/[a-z]*: /s, '') : String(err);
      throw new BundleError('InvalidPatternError', `Invalid regular expression '${pattern}': ${detail}`, { cause: err });
    }
    this.lineByLine = /\(\?<?[=!]/.test(pattern);
    this.byteSafe = matchesOnlyAscii(pattern);
    const lit = requiredLiteral(pattern);
    this.required = lit.length >= 2 && (caseSensitive || !/[\p{L}]/u.test(lit)) ? Buffer.from(lit, 'utf8') : null;
    const plain = !/[\\^$.|?*+()[\]{}]/.test(pattern) && !pattern.includes('\n');
    this.literal = plain && (caseSensitive || !/[A-Za-z]/.test(pattern)) && !/[^\x20-\x7e\t]/.test(pattern) ? Buffer.from(pattern, 'latin1') : null;
  }
}

/**
 * True when the pattern cannot match a non-ASCII character: only ASCII in it, and none of the
 * constructs that match "anything but": `.`, `[^...]`, `\W`, `\S`, `\D`, `\s` (which matches
 * U+00A0), nor `\x`/`\u` escapes. Case-insensitive ASCII never folds to non-ASCII without the u
 * flag. Then searching UTF-8 bytes decoded as latin1 finds exactly the same lines.
 */
export function matchesOnlyAscii(pattern: string): boolean {
  // eslint-disable-next-line no-control-regex -- every character outside ASCII, NUL to DEL
  if (/[^\x00-\x7f]/.test(pattern)) return false;
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\') {
      const e = pattern[++i];
      if (e === undefined || 'WSDsxuc'.includes(e)) return false;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
    } else if (c === '[') {
      if (pattern[i + 1] === '^') return false;
      inClass = true;
      if (pattern[i + 1] === ']') i++; // "[]" is an empty class in JS; "[]a]" is not special: stay simple
    } else if (c === '.') {
      return false;
    }
  }
  return true;
}

/**
 * The longest run of plain characters that every match of `pattern` contains ('' when unsure):
 * `level=\S+ msg` -> `level=`. Only patterns without `|` are read; a character made optional by
 * `?`, `*` or `{0,...}` ends a run before it, and groups, classes, `.` and escapes like `\d` end
 * a run too. Escaped punctuation (`\.`) counts as the character.
 */
export function requiredLiteral(pattern: string): string {
  let best = '';
  let run = '';
  const end = (): void => {
    if (run.length > best.length) best = run;
    run = '';
  };
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    let literal: string | null = null;
    if (c === '|') {
      return ''; // a top-level alternative: nothing is required
    } else if (c === '\\') {
      const e = pattern[++i];
      if (e === 'x') i += 2;
      else if (e === 'u') i += 4;
      else if (e === 'c') i += 1;
      else if (e !== undefined && /[^A-Za-z0-9]/.test(e)) literal = e;
    } else if (c === '[') {
      const close = pattern.indexOf(']', i + 2);
      if (close < 0) return '';
      i = close;
    } else if (c === '(') {
      // Skip the whole group (it may be optional, quantified or an alternation).
      let depth = 0;
      for (; i < pattern.length; i++) {
        if (pattern[i] === '\\') i++;
        else if (pattern[i] === '(') depth++;
        else if (pattern[i] === ')' && --depth === 0) break;
      }
    } else if (c === '{' && /^\{\d+(,\d*)?\}/.test(pattern.slice(i))) {
      i = pattern.indexOf('}', i);
    } else if (!'^$.*+?)]'.includes(c)) {
      literal = c;
    }
    if (literal === null) {
      end();
      continue;
    }
    const next = pattern[i + 1];
    if (next === '?' || next === '*' || (next === '{' && /^\{0[,}]/.test(pattern.slice(i + 1)))) {
      end(); // optional: not required
    } else if (next === '+' || (next === '{' && /^\{\d+(,\d*)?\}/.test(pattern.slice(i + 1)))) {
      run += literal; // required at least once, but what follows is not adjacent
      end();
    } else {
      run += literal;
    }
  }
  end();
  return best;
}
