import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import { killProcessGroup, spawnChild } from '../../../core/process.js';

/**
 * ripgrep as grep_files' scanner. It never decides an answer: it proposes candidate lines (a
 * superset of the lines the JavaScript search would report) and grep.ts checks each candidate with
 * the JavaScript regex, so the answers are the built-in search's, whichever engine ran.
 *
 * The JavaScript pattern is translated into a Rust regex that matches at least every line the
 * JavaScript one matches (`toRustRegex`). Where the dialects differ, the translation widens:
 * - `.` and negated classes (`[^...]`, `\D`, `\W`, `\S`) also take any run of non-ASCII bytes
 *   (Rust's Unicode classes skip invalid UTF-8, which JavaScript reads as U+FFFD);
 * - `\d`, `\w`, `\s` are spelt out as JavaScript's sets (ASCII digits and word characters; `\s`
 *   with U+FEFF); `\b`/`\B` are ASCII word boundaries, as in JavaScript;
 * - `^` and `$` also match at a CR, U+2028 or U+2029, which JavaScript's multiline mode treats as
 *   line ends (only at the start and end of the pattern or of a top-level alternative);
 * - case-insensitive: Rust folds more (K and the Kelvin sign), never less, for ASCII patterns.
 * Anything else falls back to the built-in search (null): non-ASCII characters in the pattern,
 * backreferences, lookarounds, named groups, `\x`/`\u`/`\c`/`\0` escapes, `\n`, empty classes,
 * `^`/`$` elsewhere, patterns over 4,096 characters.
 */
export function toRustRegex(pattern: string): string | null {
  if (pattern.length > 4096 || /[^\x20-\x7e\t]/.test(pattern)) return null;
  let out = '';
  let depth = 0;
  let altStart = true;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    const wasAltStart = altStart;
    altStart = false;
    switch (c) {
      case '^':
        if (depth !== 0 || !wasAltStart) return null;
        out += `(?:^|${LINE_END_CHARS})`;
        altStart = true; // `^^` is still at the start
        break;
      case '$':
        if (depth !== 0 || (i + 1 < pattern.length && pattern[i + 1] !== '|')) return null;
        out += `(?:$|${LINE_END_CHARS})`;
        break;
      case '|':
        if (depth === 0) altStart = true;
        out += '|';
        break;
      case '(':
        if (pattern.startsWith('(?:', i)) {
          out += '(?:';
          i += 2;
        } else if (pattern[i + 1] === '?') {
          return null; // lookarounds, named groups
        } else {
          out += '(';
        }
        depth++;
        break;
      case ')':
        depth--;
        out += ')';
        break;
      case '.':
        out += ANY_CHAR;
        break;
      case '*':
      case '+':
      case '?':
        out += c;
        if (pattern[i + 1] === '?') out += pattern[++i];
        break;
      case '{': {
        const m = /^\{\d{1,4}(,\d{0,4})?\}/.exec(pattern.slice(i));
        if (m) {
          out += m[0];
          i += m[0].length - 1;
          if (pattern[i + 1] === '?') out += pattern[++i];
        } else if (/^\{\d/.test(pattern.slice(i))) {
          return null; // a huge repetition count
        } else {
          out += lit(c); // a lone `{` is a literal in JavaScript
        }
        break;
      }
      case '[': {
        const cls = translateClass(pattern, i);
        if (!cls) return null;
        out += cls.text;
        i = cls.end;
        break;
      }
      case '\\': {
        const e = pattern[++i];
        if (e === undefined) return null;
        const t = escapeOutsideClass(e);
        if (t === null) return null;
        out += t;
        break;
      }
      default:
        out += lit(c);
    }
  }
  return depth === 0 ? out : null;
}

const LINE_END_CHARS = '[\\r\\x{2028}\\x{2029}]';
/** A run of bytes that are not ASCII: what stands in for any character Rust's Unicode classes would skip. */
const NON_ASCII = '(?-u:[\\x80-\\xFF]+)';
const ANY_CHAR = `(?:.|${NON_ASCII})`;
const DIGIT = '0-9';
const WORD = '0-9A-Za-z_';
/** JavaScript's \s without \n (no line holds one). */
const SPACE = '\\t\\x0B\\x0C\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}';

function negated(items: string): string {
  return `(?:[^${items}\\n]|${NON_ASCII})`;
}

function lit(c: string): string {
  return /[A-Za-z0-9_]/.test(c) ? c : `\\x{${c.charCodeAt(0).toString(16).toUpperCase()}}`;
}

function escapeOutsideClass(e: string): string | null {
  switch (e) {
    case 'd':
      return `[${DIGIT}]`;
    case 'w':
      return `[${WORD}]`;
    case 's':
      return `[${SPACE}]`;
    case 'D':
      return negated(DIGIT);
    case 'W':
      return negated(WORD);
    case 'S':
      return negated(SPACE);
    case 'b':
      return '(?-u:\\b)';
    case 'B':
      return '(?-u:\\B)';
    default:
      return simpleEscape(e);
  }
}

/** `\t \r \v \f` and escaped punctuation; null for everything else (backreferences, \n, \x, \u, \c, \0, \k...). */
function simpleEscape(e: string): string | null {
  if (e === 't') return '\\t';
  if (e === 'r') return '\\r';
  if (e === 'v') return '\\x0B';
  if (e === 'f') return '\\x0C';
  if (/[\x20-\x2f\x3a-\x40\x5b-\x60\x7b-\x7e]/.test(e)) return lit(e);
  return null;
}

/** The character an escape stands for (`\t` is a tab, `\.` a dot). */
function escapedChar(e: string): string {
  return e === 't' ? '\t' : e === 'r' ? '\r' : e === 'v' ? '\v' : e === 'f' ? '\f' : e;
}

/** The class opening at `start`, translated, and the index of its `]`; null when it needs JavaScript. */
function translateClass(pattern: string, start: number): { text: string; end: number } | null {
  let i = start + 1;
  const negate = pattern[i] === '^';
  if (negate) i++;
  if (pattern[i] === ']') return null; // `[]` and `[^]`
  let items = '';
  for (; i < pattern.length && pattern[i] !== ']'; i++) {
    let c = pattern[i]!;
    let single: string | null;
    if (c === '\\') {
      const e = pattern[++i];
      if (e === undefined) return null;
      const set = e === 'd' ? DIGIT : e === 'w' ? WORD : e === 's' ? SPACE : null;
      if (set !== null) {
        items += set;
        single = null;
      } else {
        if (e === 'b' || e === 'D' || e === 'W' || e === 'S') return null;
        const t = simpleEscape(e);
        if (t === null) return null;
        single = t;
        c = escapedChar(e);
      }
    } else {
      single = lit(c);
    }
    if (single === null) continue;
    // A range `x-y` between two single characters; `-` next to a class escape or at an end is literal.
    if (pattern[i + 1] === '-' && pattern[i + 2] !== undefined && pattern[i + 2] !== ']') {
      let j = i + 2;
      let hi: string | null;
      let hiChar: string;
      if (pattern[j] === '\\') {
        const e = pattern[j + 1];
        if (e === undefined || 'dwsDWSb'.includes(e)) return null;
        hi = simpleEscape(e);
        hiChar = escapedChar(e);
        j++;
      } else {
        hiChar = pattern[j]!;
        hi = lit(hiChar);
      }
      if (hi === null) return null;
      if (c.charCodeAt(0) > hiChar.charCodeAt(0)) return null; // JavaScript refused it already
      items += `${single}-${hi}`;
      i = j;
      continue;
    }
    items += single;
  }
  if (i >= pattern.length) return null;
  if (items === '') return null;
  return { text: negate ? negated(items) : `[${items}]`, end: i };
}

let cached: { path: string | null } | null = null;

/** The `rg` on PATH (looked up once), or null. DEBUGKIT_RG names another binary; DEBUGKIT_RG=off disables it. */
export function findRipgrep(): string | null {
  if (cached) return cached.path;
  const chosen = process.env.DEBUGKIT_RG;
  let found: string | null = null;
  if (chosen === 'off' || chosen === '0') found = null;
  else if (chosen) found = executable(chosen) ? chosen : null;
  else {
    for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
      if (!dir || !path.isAbsolute(dir)) continue;
      const candidate = path.join(dir, 'rg');
      if (executable(candidate)) {
        found = candidate;
        break;
      }
    }
  }
  cached = { path: found };
  return found;
}

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Lines rg reported for one file: 1-based numbers and where each line's bytes are in `data`. */
export interface FileCandidates {
  lines: number[];
  starts: number[];
  ends: number[];
}

export interface RipgrepScan {
  data: Buffer;
  byFile: Map<string, FileCandidates>;
}

export interface RipgrepLimits {
  /** Most bytes of output read; more ends the scan (null: use the built-in search). */
  maxBytes: number;
  /** Most candidate lines; more ends the scan. */
  maxLines: number;
  timeoutMs: number;
  /** Ends the scan (rg is killed); the answer is then null. */
  signal?: AbortSignal;
}

/** rg's options for every scan: no config file, no ignore files, hidden files included, links not followed, every file read as text, bytes as they are (no BOM sniffing: rg would drop a UTF-8 BOM and transcode UTF-16, JavaScript does not). */
function baseArgs(recursive: boolean): string[] {
  const args = ['--no-config', '--no-ignore', '--hidden', '--text', '--encoding', 'none', '--no-messages', '--null', '--color', 'never'];
  if (!recursive) args.push('--max-depth', '1');
  return args;
}

/**
 * Runs rg over `dir` (argv only, no shell; the pattern after `--regexp`) and gathers the candidate
 * lines per file. Null when rg fails, exceeds a limit or the time bound: the caller then searches
 * without it. rg is an owned child process (core/process.ts), killed on every early end.
 */
export async function scanWithRipgrep(
  rg: string,
  dir: string,
  rustPattern: string,
  options: { caseSensitive: boolean; recursive: boolean },
  limits: RipgrepLimits,
): Promise<RipgrepScan | null> {
  const data = await ripgrepOutput(rg, dir, rustPattern, options, limits);
  return data ? parseScan(data) : null;
}

/** scanWithRipgrep's first half: rg's raw output (null as there), for parseScan to read elsewhere (a worker thread). */
export function ripgrepOutput(rg: string, dir: string, rustPattern: string, options: { caseSensitive: boolean; recursive: boolean }, limits: RipgrepLimits): Promise<Buffer | null> {
  const args = [...baseArgs(options.recursive), '--line-number', '--no-heading', options.caseSensitive ? '--case-sensitive' : '--ignore-case'];
  args.push('--regexp', rustPattern, '--', dir);
  return runRipgrep(rg, args, limits);
}

/** scanWithRipgrep's second half: the candidate lines per file in rg's output; null when it does not parse. */
export function parseScan(data: Buffer): RipgrepScan | null {
  const byFile = parseOutput(data);
  return byFile ? { data, byFile } : null;
}

/**
 * The files under `dir` holding a NUL or a byte over 0x7F anywhere: every other file is plain
 * ASCII text, so it needs no sniffing to be told from a binary file. Null when rg fails.
 */
export async function filesNotPlainAscii(rg: string, dir: string, recursive: boolean, timeoutMs: number): Promise<Set<string> | null> {
  const args = [...baseArgs(recursive), '--files-with-matches', '--regexp', '(?-u:[\\x00\\x80-\\xFF])', '--', dir];
  const data = await runRipgrep(rg, args, { maxBytes: 256 * 1024 * 1024, maxLines: Number.MAX_SAFE_INTEGER, timeoutMs });
  if (!data) return null;
  const out = new Set<string>();
  for (let off = 0; off < data.length; ) {
    const nul = data.indexOf(0, off);
    if (nul === -1) return null;
    out.add(data.toString('utf8', off, nul));
    off = nul + 1;
  }
  return out;
}

async function runRipgrep(rg: string, args: string[], limits: RipgrepLimits): Promise<Buffer | null> {
  let owned;
  try {
    owned = await spawnChild(rg, args, { stdio: ['ignore', 'pipe', 'ignore'], env: {} });
  } catch {
    return null;
  }
  const chunks: Buffer[] = [];
  let bytes = 0;
  let lines = 0;
  let over = false;
  const stop = () => {
    if (owned.child.pid !== undefined) killProcessGroup(owned.child.pid, 'SIGKILL');
  };
  owned.child.stdout!.on('data', (b: Buffer) => {
    if (over) return;
    bytes += b.length;
    for (let k = b.indexOf(10); k !== -1; k = b.indexOf(10, k + 1)) lines++;
    if (bytes > limits.maxBytes || lines > limits.maxLines) {
      over = true;
      chunks.length = 0;
      stop();
      return;
    }
    chunks.push(b);
  });
  const closed = new Promise<void>((resolve) => owned.child.stdout!.once('close', () => resolve()));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    stop();
  }, limits.timeoutMs);
  let aborted = false;
  const onAbort = () => {
    aborted = true;
    stop();
  };
  if (limits.signal?.aborted) onAbort();
  else limits.signal?.addEventListener('abort', onAbort, { once: true });
  const exit = await owned.exited;
  await closed;
  clearTimeout(timer);
  limits.signal?.removeEventListener('abort', onAbort);
  // 0: matches, 1: none; 2: an error (a file it could not read is also 2, with --no-messages silent).
  if (over || timedOut || aborted || exit.signal !== null || (exit.code !== 0 && exit.code !== 1)) return null;
  return Buffer.concat(chunks, bytes);
}

/** `path\0number:line\n` records; null when one does not parse. */
function parseOutput(data: Buffer): Map<string, FileCandidates> | null {
  const byFile = new Map<string, FileCandidates>();
  let lastPath = '';
  let last: FileCandidates | null = null;
  for (let off = 0; off < data.length; ) {
    const nul = data.indexOf(0, off);
    if (nul === -1) return null;
    const colon = data.indexOf(0x3a, nul + 1);
    if (colon === -1) return null;
    let nl = data.indexOf(10, colon + 1);
    if (nl === -1) nl = data.length;
    const file = data.toString('utf8', off, nul);
    const num = Number(data.toString('latin1', nul + 1, colon));
    if (!Number.isSafeInteger(num) || num < 1) return null;
    if (file !== lastPath || !last) {
      last = byFile.get(file) ?? null;
      if (!last) {
        last = { lines: [], starts: [], ends: [] };
        byFile.set(file, last);
      }
      lastPath = file;
    }
    last.lines.push(num);
    last.starts.push(colon + 1);
    last.ends.push(nl);
    off = nl + 1;
  }
  return byFile;
}
