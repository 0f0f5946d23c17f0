import { setPriority } from 'node:os';
import { closeSync, type Dirent } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { descriptorPath, onlyOwnUserWrites, openVerified } from '../../../core/paths.js';
import { killProcessGroup, spawnChild } from '../../../core/process.js';
import { findOnPath, isExecutableFile } from '../../../core/which.js';
import { boundPromise, nextTurn } from '../../../core/wait.js';

/**
 * ripgrep as grep_files' scanner. It never decides an answer: it proposes candidate lines (a
 * superset of the lines the JavaScript search would report) and grep-candidates.ts checks each candidate with
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
  let found: string | null;
  if (chosen === 'off' || chosen === '0') found = null;
  else if (chosen) found = isExecutableFile(chosen) ? chosen : null;
  else found = findOnPath('rg');
  cached = { path: found };
  return found;
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

/**
 * rg's options for every scan: no config file, no ignore files, hidden files included, links not
 * followed, every file read as text, bytes as they are (no BOM sniffing: rg would drop a UTF-8 BOM
 * and transcode UTF-16, JavaScript does not), and one thread: rg took both cores over a bundle of
 * 190,000 small files, and other clients' pings waited 390-750 ms (attack 18al v1-2).
 */
function baseArgs(recursive: boolean): string[] {
  const args = ['--no-config', '--no-ignore', '--hidden', '--text', '--encoding', 'none', '--no-messages', '--null', '--color', 'never', '--threads', '1'];
  if (!recursive) args.push('--max-depth', '1');
  return args;
}

/**
 * Runs rg over `dir` (argv only, no shell; the pattern after `--regexp`) and gathers the candidate
 * lines per file. Null when rg fails, exceeds a limit or the time bound: the caller then searches
 * without it. rg is an owned child process (core/process.ts), killed on every early end.
 */
export async function scanWithRipgrep(rg: string, dir: string, rustPattern: string, options: { caseSensitive: boolean; recursive: boolean }, limits: RipgrepLimits): Promise<RipgrepScan | null> {
  const data = await ripgrepOutput(rg, dir, rustPattern, options, limits);
  return data ? parseScan(data) : null;
}

/**
 * scanWithRipgrep's first half: rg's raw output (null as there), for parseScan to read elsewhere (a
 * worker thread). It is what `rg ... -- dir` prints, and rg never reads through a link another
 * user swapped in after the check. When no other user can write anywhere on the way to the files
 * (core/paths onlyOwnUserWrites: the bundle store's own tree, as debugkit extracts it), rg walks
 * `dir` itself, as fast as it goes (started while the directories are checked; its output is
 * dropped unread when they are not): whoever could swap a link in there can read what rg would.
 * Otherwise rg opens nothing by name: `dir` is walked here as rg walks it (regular files, hidden
 * ones too, directories but not links to them), each directory and file is opened and checked
 * inside `dir` (core/paths openVerified), and rg reads the opened files themselves through this
 * process's descriptors (/proc/<pid>/fd/N), RG_BATCH at a time; the names in its output are put
 * back, and a file or directory swapped for a link is not searched. That costs about 4x rg's own
 * time on a tree of many small files (per file: an open, a readlink and an fstat here, and rg
 * handles a list of paths more slowly than a directory).
 */
export async function ripgrepOutput(rg: string, dir: string, rustPattern: string, options: { caseSensitive: boolean; recursive: boolean }, limits: RipgrepLimits): Promise<Buffer | null> {
  // --with-filename: rg names the file even when a batch holds one.
  const args = [...baseArgs(options.recursive), '--line-number', '--no-heading', '--with-filename', options.caseSensitive ? '--case-sensitive' : '--ignore-case', '--regexp', rustPattern, '--'];
  // rg starts on `dir` while its directories are checked; its output is used only if no other user can write there.
  const speculative = new AbortController();
  const direct = runRipgrep(rg, [...args, dir], { ...limits, signal: limits.signal ? AbortSignal.any([limits.signal, speculative.signal]) : speculative.signal });
  if (await onlyOwnUserWrites(dir, options.recursive)) return direct;
  speculative.abort();
  await direct;
  const deadline = Date.now() + limits.timeoutMs;
  const left = () => deadline - Date.now();
  const names = await filesUnder(dir, options.recursive);
  // Batches are opened while rg reads the one before (at most two batches' descriptors open at once).
  const runs: Array<Promise<{ data: Buffer; names: Map<string, string> } | null>> = [];
  let running: Promise<unknown> = Promise.resolve();
  let failed = false;
  let short = false;
  for (let at = 0; at < names.length && !failed;) {
    // Descriptors ran out last time: the run in flight gives its own back first.
    if (short) await running;
    const batch = await openBatch(dir, names, at);
    at = batch.next;
    short = batch.full;
    if (batch.fds.length === 0) {
      if (at < names.length) return null; // not one descriptor to spare
      break;
    }
    await running;
    if (failed || left() <= 0 || limits.signal?.aborted) {
      for (const fd of batch.fds) closeSync(fd);
      return null;
    }
    const run = runRipgrep(rg, [...args, ...batch.names.keys()], { ...limits, timeoutMs: left() })
      .then((data) => {
        if (!data) failed = true;
        return data ? { data, names: batch.names } : null;
      })
      .finally(() => {
        for (const fd of batch.fds) closeSync(fd);
      });
    runs.push(run);
    running = run;
  }
  const outputs: Buffer[] = [];
  let bytes = 0;
  let lines = 0;
  for (const result of await Promise.all(runs)) {
    if (!result) return null;
    bytes += result.data.length;
    for (let k = result.data.indexOf(10); k !== -1; k = result.data.indexOf(10, k + 1)) lines++;
    if (bytes > limits.maxBytes || lines > limits.maxLines) return null;
    const named = renamePaths(result.data, result.names);
    if (!named) return null;
    outputs.push(named);
  }
  return Buffer.concat(outputs);
}

/** Files rg reads in one run, each through a descriptor held open until the run ends. */
const RG_BATCH = 8192;
/** Files opened between two turns of the event loop (~3 ms). */
const OPEN_SLICE = 256;

/**
 * Opens the files of `names` from `at` on, up to RG_BATCH of them, each checked inside `dir`:
 * their descriptors, the descriptor paths rg gets with the names to put back, where the next
 * batch starts, and whether it stopped early because descriptors ran out. Files that are no
 * longer files inside `dir` are left out; the event loop runs every OPEN_SLICE files.
 */
async function openBatch(dir: string, names: string[], at: number): Promise<{ fds: number[]; names: Map<string, string>; next: number; full: boolean }> {
  const fds: number[] = [];
  const byDescriptor = new Map<string, string>();
  let i = at;
  let full = false;
  for (; i < names.length && fds.length < RG_BATCH; i++) {
    if ((i - at) % OPEN_SLICE === OPEN_SLICE - 1) await nextTurn();
    const opened = openFile(dir, names[i]!);
    if (opened === 'full') {
      full = true;
      break;
    }
    if (opened === null) continue;
    fds.push(opened);
    byDescriptor.set(descriptorPath(opened), names[i]!);
  }
  return { fds, names: byDescriptor, next: i, full };
}

/**
 * The regular files under `dir` (only its own with `recursive` false), as rg's walk finds them:
 * hidden ones too, no ignore files, directories descended into but not links to them. Each
 * directory is read through a descriptor checked inside `dir`, so one swapped for a link out of
 * it lists nothing; the event loop runs between directories.
 */
async function filesUnder(dir: string, recursive: boolean): Promise<string[]> {
  const files: string[] = [];
  const queue = [dir];
  while (queue.length > 0) {
    const here = queue.shift()!;
    let opened;
    try {
      opened = openVerified(dir, here, { type: 'directory' });
    } catch {
      continue;
    }
    if (opened === 'changed' || opened.kind !== 'inside') continue;
    let entries: Dirent[];
    try {
      entries = await readdir(`/proc/self/fd/${opened.fd}`, { withFileTypes: true });
    } catch {
      continue;
    } finally {
      closeSync(opened.fd);
    }
    for (const e of entries) {
      if (e.isFile()) files.push(`${here}/${e.name}`);
      else if (recursive && e.isDirectory()) queue.push(`${here}/${e.name}`);
    }
  }
  return files;
}

/** A file to hand rg, opened and checked inside `dir`: its descriptor; null when it is not (any more) a file inside; 'full' when descriptors ran out. */
function openFile(dir: string, name: string): number | null | 'full' {
  try {
    const opened = openVerified(dir, name, { type: 'file' });
    return opened !== 'changed' && opened.kind === 'inside' ? opened.fd : null;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'EMFILE' || code === 'ENFILE' ? 'full' : null;
  }
}

/**
 * rg's `path\0number:line\n` records with each descriptor path replaced by the file's name; null
 * when a record names something else. One pass, one allocation (records of one file are together,
 * so the name is looked up once per file).
 */
function renamePaths(data: Buffer, names: Map<string, string>): Buffer | null {
  const records: Array<{ name: Buffer; from: number; to: number }> = [];
  let size = 0;
  let name: Buffer | undefined;
  let nameAt = -1;
  let nameEnd = -1;
  for (let off = 0; off < data.length;) {
    const nul = data.indexOf(0, off);
    if (nul === -1) return null;
    const nl = data.indexOf(10, nul + 1);
    const end = nl === -1 ? data.length : nl + 1;
    if (!name || data.compare(data, nameAt, nameEnd, off, nul) !== 0) {
      const found = names.get(data.toString('utf8', off, nul));
      if (found === undefined) return null;
      name = Buffer.from(found, 'utf8');
      nameAt = off;
      nameEnd = nul;
    }
    records.push({ name, from: nul, to: end });
    size += name.length + end - nul;
    off = end;
  }
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const r of records) {
    at += r.name.copy(out, at);
    at += data.copy(out, at, r.from, r.to);
  }
  return out;
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
  for (let off = 0; off < data.length;) {
    const nul = data.indexOf(0, off);
    if (nul === -1) return null;
    out.add(data.toString('utf8', off, nul));
    off = nul + 1;
  }
  return out;
}

/** rg's nice value (the worker threads' too). */
export const RG_NICE = 10;

async function runRipgrep(rg: string, args: string[], limits: RipgrepLimits): Promise<Buffer | null> {
  let owned;
  try {
    owned = await spawnChild(rg, args, { stdio: ['ignore', 'pipe', 'ignore'], env: {} });
  } catch {
    return null;
  }
  // Below the server's priority, as the worker threads run: on a busy machine the event loop gets the CPU first.
  if (owned.child.pid !== undefined) {
    try {
      setPriority(owned.child.pid, RG_NICE);
    } catch {
      // not allowed: rg runs at the server's priority
    }
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
  // Past the time bound, or cancelled: rg is stopped, and its end awaited all the same.
  const outcome = await boundPromise(owned.exited, { timeoutMs: limits.timeoutMs, ...(limits.signal ? { signal: limits.signal } : {}) });
  if (outcome.kind !== 'value') stop();
  const exit = await owned.exited;
  await closed;
  // 0: matches, 1: none; 2: an error (a file it could not read is also 2, with --no-messages silent).
  if (over || outcome.kind !== 'value' || exit.signal !== null || (exit.code !== 0 && exit.code !== 1)) return null;
  return Buffer.concat(chunks, bytes);
}

/** `path\0number:line\n` records; null when one does not parse. */
function parseOutput(data: Buffer): Map<string, FileCandidates> | null {
  const byFile = new Map<string, FileCandidates>();
  let lastPath = '';
  let last: FileCandidates | null = null;
  for (let off = 0; off < data.length;) {
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
