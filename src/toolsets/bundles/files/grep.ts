import { isAscii } from 'node:buffer';
import { closeSync, readdirSync, readSync, realpathSync, statSync } from 'node:fs';
import { DebugkitError } from '../../../core/errors.js';
import { isInside, openVerified } from '../../../core/paths.js';
import { workerEntry, WorkerJobError, WorkerPool, WorkerStalledError } from '../../../core/workers.js';
import { TimeSlice } from '../../../core/wait.js';
import { BundleError, type BundleErrorType } from '../errors.js';
import { compileGlob, type GlobMatcher } from './glob.js';
import { findRipgrep, ripgrepOutput, toRustRegex, type FileCandidates, type RipgrepLimits, type RipgrepScan } from './ripgrep.js';
import { childDisplay, looksBinary, resolveBundlePath, SNIFF_BYTES } from './resolve.js';

export interface GrepOptions {
  /** A JavaScript regular expression, matched line by line. */
  pattern: string;
  path?: string;
  recursive?: boolean;
  glob_pattern?: string | null;
  case_sensitive?: boolean;
  /** Most matching lines in all. Default 1000. */
  max_results?: number;
  /** Most matching lines per file; default no limit beyond max_results. */
  max_results_per_file?: number | null;
}

export interface GrepMatch {
  path: string;
  /** 1-based. */
  line_number: number;
  line: string;
}

export interface GrepMetadata {
  pattern: string;
  path: string;
  glob_pattern: string | null;
  total_matches: number;
  files_searched: number;
  recursive: boolean;
  case_sensitive: boolean;
  truncated: boolean;
}

export interface GrepResult {
  matches: GrepMatch[];
  metadata: GrepMetadata;
  /** Files whose matches stopped at max_results_per_file. */
  files_truncated: string[];
  /** Binary files skipped. */
  binary_files_skipped: number;
  text: string;
}

export const DEFAULT_GREP_MAX_RESULTS = 1000;
/** Longer matching lines are shown as a window around the match. */
const MAX_SHOWN_LINE = 500;
const CHUNK = 1024 * 1024;

/**
 * grep_files: the lines matching `pattern` (a JavaScript RegExp, case-insensitive unless
 * case_sensitive) in the files under `path`, like `grep -rn`: one result per matching line,
 * numbered from 1. Binary files are skipped (the first 8 KiB are sniffed); symlinked files inside
 * the bundle are searched once (under their real path when both are in scope), symlinked
 * directories are not descended into. glob_pattern filters files (see glob.ts). Stops after
 * max_results matching lines with `truncated: true`.
 *
 * Speed (about grep -rn's on a 200 MB bundle): files are read synchronously into one reused 1 MiB
 * buffer, in slices of ~20 ms between which the event loop runs; the regex runs over a whole
 * chunk at once (multiline mode), never line by line, and line boundaries and numbers are worked
 * out only around matches (a match spanning lines is re-checked on its own line). A case-sensitive
 * plain string is searched as bytes without decoding; other patterns skip chunks lacking a literal
 * every match must contain, and decode as latin1 (a copy) when that cannot change the result.
 * Patterns with lookarounds run line by line.
 *
 * The client's regex is V8's, a backtracking engine: a catastrophic pattern (nested quantifiers,
 * `(?=a)(a+)+$`) can run for hours on one short line. So the whole search runs on a worker thread
 * (grep-worker.ts; a pool of up to two, reused across calls), never on the event loop, and is
 * bounded: a pattern that runs `stallMs` (default 10 s, --grep-timeout) without finishing one
 * line or chunk, or a search that runs GREP_TOTAL_MS in all, is stopped (the thread is ended) and
 * answered with an InvalidPatternError saying so. rg itself (a child process, owned by the main
 * thread's process registry) is run by the main thread at the worker's request.
 */
export async function grepFiles(root: string, options: GrepOptions, limits: GrepLimits = {}): Promise<GrepResult> {
  return (await grepFilesWith(root, options, 'auto', limits)).result;
}

/** Which engine scans: ripgrep when installed and the pattern translates (see ripgrep.ts), else the built-in search. */
export type GrepEngine = 'auto' | 'ripgrep' | 'builtin';

export interface GrepLimits {
  /** The pattern may run this long without finishing one line or chunk (default GREP_STALL_MS). */
  stallMs?: number;
  /** The whole search (default GREP_TOTAL_MS). */
  totalMs?: number;
  signal?: AbortSignal;
  /** Whose search (an API key's id): threads are shared fairly between owners (core/workers.ts). */
  owner?: string;
}

/** Default bound on one regex run (one line, or one chunk of lines): --grep-timeout. */
export const GREP_STALL_MS = 10_000;
/** Bound on a whole search (ripgrep's own scan, run for the worker, not counted). */
export const GREP_TOTAL_MS = 120_000;

let pool: WorkerPool | null = null;

/** The threads grep_files runs on (started on first use, kept for the next calls). */
function grepPool(): WorkerPool {
  pool ??= new WorkerPool({ name: 'grep_files', entry: workerEntry(import.meta.url, 'grep-worker'), resourceLimits: { maxOldGenerationSizeMb: 1024 } });
  return pool;
}

/** One grep job for the worker: what searchBundle takes. */
export interface GrepJob {
  root: string;
  options: GrepOptions;
  engine: GrepEngine;
}

/** What the worker asks the main thread for: an rg scan of `dir`. */
export interface RipgrepRequest {
  dir: string;
  rustPattern: string;
  options: { caseSensitive: boolean; recursive: boolean };
  limits: Omit<RipgrepLimits, 'signal'>;
}

/**
 * grepFiles, choosing the engine, and saying which one answered ('ripgrep' only when rg ran to
 * completion and its candidates were used). The answer is the same either way: rg only proposes
 * lines, each checked with the JavaScript regex as the built-in search checks it. Runs on a
 * worker thread, within `limits` (see grepFiles).
 */
export async function grepFilesWith(root: string, options: GrepOptions, engine: GrepEngine, limits: GrepLimits = {}): Promise<{ result: GrepResult; engine: 'ripgrep' | 'builtin' }> {
  if (typeof options.pattern !== 'string' || options.pattern === '') throw new BundleError('InvalidPatternError', 'Invalid pattern: the pattern is empty');
  const stallMs = limits.stallMs ?? GREP_STALL_MS;
  const totalMs = limits.totalMs ?? GREP_TOTAL_MS;
  const job: GrepJob = { root, options, engine };
  try {
    return await grepPool().run(job, {
      stallMs,
      timeoutMs: totalMs,
      ...(limits.signal ? { signal: limits.signal } : {}),
      ...(limits.owner !== undefined ? { owner: limits.owner } : {}),
      onRequest: async (request, signal) => {
        const r = request as RipgrepRequest;
        const rg = findRipgrep();
        const data = rg ? await ripgrepOutput(rg, r.dir, r.rustPattern, r.options, { ...r.limits, signal }) : null;
        if (!data) return { value: null };
        // The output moves to the worker (read there: parseScan) when the memory is its own, not a slice of Node's shared pool.
        const own = data.byteOffset === 0 && data.byteLength === data.buffer.byteLength;
        return { value: data, transfer: own ? [data.buffer as ArrayBuffer] : [] };
      },
    });
  } catch (err) {
    throw grepError(err, options.pattern);
  }
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

/** What a failed search is answered with: the worker's own error, or why the search was stopped. */
function grepError(err: unknown, pattern: string): Error {
  if (err instanceof WorkerStalledError) {
    const shown = pattern.length > 200 ? `${pattern.slice(0, 200)}…` : pattern;
    return new BundleError(
      'InvalidPatternError',
      err.bound === 'stall'
        ? `The pattern '${shown}' took longer than ${seconds(err.limitMs)} on one line (or one piece of text) and was stopped: simplify it. ` +
            'Nested quantifiers such as (a+)+, (\\w+\\s?)* or (a|aa)* backtrack exponentially on text that almost matches; ' +
            'use one quantifier per run of characters, anchor the pattern, or search for a literal part of the text first.'
        : `The search for '${shown}' took longer than ${seconds(err.limitMs)} in all and was stopped: simplify the pattern, or narrow the search with path or glob_pattern.`,
      { cause: err },
    );
  }
  if (err instanceof WorkerJobError) {
    if (isBundleErrorType(err.name)) return new BundleError(err.name, err.message);
    return new DebugkitError('INTERNAL', `grep_files failed: ${err.message}`, { cause: err });
  }
  if (err instanceof Error && err.name === 'WorkerDiedError')
    return new DebugkitError('INTERNAL', `grep_files stopped: ${err.message}; narrow the search with path, glob_pattern or a smaller max_results`, { cause: err });
  return err instanceof Error ? err : new Error(String(err));
}

const BUNDLE_ERROR_TYPES = new Set<string>([
  'NoBundleInitializedError',
  'PathNotFoundError',
  'NotADirectoryError',
  'FileNotFoundError',
  'NotAFileError',
  'SecurityError',
  'KubectlError',
  'CommandNotSupportedError',
  'BundleNotFoundError',
  'BundleExtractionError',
  'StorageError',
  'AuthenticationError',
  'InvalidPatternError',
  'ApiError',
] satisfies BundleErrorType[]);

function isBundleErrorType(name: string): name is BundleErrorType {
  return BUNDLE_ERROR_TYPES.has(name);
}

/** How the search asks for an rg scan (from the worker: the main thread runs rg). */
export type RipgrepScanner = (request: RipgrepRequest) => Promise<RipgrepScan | null>;

/** Called once per regex run, line or file: the worker counts it as progress (see grepFiles' time bounds). */
let progress: () => void = () => undefined;

/** Where progress goes (the worker's counter). */
export function reportProgressTo(tick: () => void): void {
  progress = tick;
}

/**
 * The search itself, on the calling thread (grep-worker.ts calls it; never the event loop of the
 * server). `scan` runs rg when the engine may use it.
 */
export async function searchBundle(root: string, options: GrepOptions, engine: GrepEngine, scan: RipgrepScanner | null): Promise<{ result: GrepResult; engine: 'ripgrep' | 'builtin' }> {
  const pattern = options.pattern;
  const recursive = options.recursive ?? true;
  const caseSensitive = options.case_sensitive ?? false;
  const glob = options.glob_pattern ? options.glob_pattern : null;
  const maxResults = Math.max(1, Math.floor(options.max_results ?? DEFAULT_GREP_MAX_RESULTS));
  const maxPerFile = options.max_results_per_file ? Math.max(1, Math.floor(options.max_results_per_file)) : Infinity;
  if (typeof pattern !== 'string' || pattern === '') throw new BundleError('InvalidPatternError', 'Invalid pattern: the pattern is empty');
  const searcher = new Searcher(pattern, caseSensitive);
  const matcher = glob ? compileGlob(glob) : null;

  const target = resolveBundlePath(root, options.path ?? '/', (d) => new BundleError('PathNotFoundError', `Path '${d}' not found`));
  const state: SearchState = {
    matches: [],
    filesSearched: 0,
    binarySkipped: 0,
    truncated: false,
    filesTruncated: [],
    maxResults,
    maxPerFile,
    buf: Buffer.allocUnsafe(CHUNK),
    root: target.root,
  };

  let used: 'ripgrep' | 'builtin' = 'builtin';
  if (target.stats.isFile()) {
    searchFile(searcher, target.abs, target.display, state);
  } else if (target.stats.isDirectory()) {
    const rg = engine === 'builtin' || matcher || !scan ? null : findRipgrep();
    const rustPattern = rg ? toRustRegex(pattern) : null;
    if (rg && scan && rustPattern !== null && (await searchWithRipgrep(scan, rustPattern, searcher, target, recursive, caseSensitive, state))) {
      used = 'ripgrep';
    } else {
      await walk(
        target.root,
        target.abs,
        target.display,
        recursive,
        matcher,
        (abs, display) => searchFile(searcher, abs, display, state),
        () => state.truncated,
      );
    }
  } else {
    throw new BundleError('PathNotFoundError', `Path '${target.display}' is neither a file nor a directory`);
  }

  const metadata: GrepMetadata = {
    pattern,
    path: target.display,
    glob_pattern: glob,
    total_matches: state.matches.length,
    files_searched: state.filesSearched,
    recursive,
    case_sensitive: caseSensitive,
    truncated: state.truncated || state.filesTruncated.length > 0,
  };
  const result: GrepResult = {
    matches: state.matches,
    metadata,
    files_truncated: state.filesTruncated,
    binary_files_skipped: state.binarySkipped,
    text: render(metadata, state),
  };
  return { result, engine: used };
}

/** Bounds on one rg scan: past them the built-in search answers instead (it stops at max_results by itself). */
const RG_MAX_OUTPUT = 64 * 1024 * 1024;
const RG_MIN_LINES = 20_000;
const RG_TIMEOUT_MS = 120_000;

/**
 * The ripgrep engine. rg scans the directory (in parallel) while this walks it in the built-in
 * order and sniffs each file's head (binary or text, as the built-in search does); then each text
 * file's candidate lines are checked with the JavaScript regex and recorded exactly as the built-in
 * search would. Files rg cannot vouch for are searched the built-in way: linked files (rg does not
 * follow links), and files where a candidate line holds a CR, U+2028 or U+2029 (which JavaScript's
 * multiline mode treats as line ends) or is too long to have been read in one piece. False (and
 * nothing recorded) when rg fails or exceeds its bounds, or reports a file the walk did not see.
 */
async function searchWithRipgrep(
  scanner: RipgrepScanner,
  rustPattern: string,
  searcher: Searcher,
  target: { root: string; abs: string; display: string },
  recursive: boolean,
  caseSensitive: boolean,
  state: SearchState,
): Promise<boolean> {
  const maxLines = Math.max(RG_MIN_LINES, Math.min(state.maxResults, 1_000_000) * 2);
  const scan = scanner({ dir: target.abs, rustPattern, options: { caseSensitive, recursive }, limits: { maxBytes: RG_MAX_OUTPUT, maxLines, timeoutMs: RG_TIMEOUT_MS } });
  const listing = await listFiles(target, recursive);
  const result = await scan;
  if (!result) return false;
  const seen = listing.files.map((f) => ('rel' in f ? { abs: `${target.abs}/${f.rel}`, display: childDisplay(target.display, f.rel), kind: f.kind } : { ...f, kind: 'linked' as const }));
  // Every file rg reports must be one the walk saw as a plain file (a name that does not decode
  // the same way, a file created meanwhile...): else rg's answer cannot be placed.
  let placed = 0;
  for (const f of seen) if (f.kind !== 'linked' && result.byFile.has(f.abs)) placed++;
  if (placed !== result.byFile.size) return false;

  for (const f of seen) {
    if (state.truncated) break;
    if (f.kind === null) continue;
    if (f.kind === 'binary') {
      state.binarySkipped++;
      continue;
    }
    if (f.kind === 'linked') {
      searchFile(searcher, f.abs, f.display, state);
      continue;
    }
    const cands = result.byFile.get(f.abs);
    if (cands && needsBuiltin(result.data, cands)) {
      searchFile(searcher, f.abs, f.display, state);
      continue;
    }
    state.filesSearched++;
    if (cands) recordCandidates(searcher, result.data, cands, f.display, state);
  }
  return true;
}

type ListedFile = { rel: string; kind: 'text' | 'binary' } | { abs: string; display: string };

interface Listing {
  key: string;
  /** Every directory read, with what its stat said: any change (a file added, removed, renamed) means a new listing. */
  dirs: { abs: string; mtimeMs: number; ino: number }[];
  /** In the walk's order: plain files (relative to the searched directory, sniffed), then linked files. */
  files: ListedFile[];
}

/** The last listing made: grep_files is asked about the same bundle again and again. */
let lastListing: Listing | null = null;

/**
 * The files under the target in the built-in search's order, each sniffed (text or binary), as the
 * ripgrep engine needs them. The last listing is kept and reused while none of its directories
 * changed (stat of each: a few ms where walking and sniffing a large bundle costs far more).
 * Bundles in the store are not modified after extraction; a file rewritten in place without any
 * directory changing would keep its earlier text/binary verdict.
 */
async function listFiles(target: { root: string; abs: string; display: string }, recursive: boolean): Promise<Listing> {
  const key = `${target.root}\0${target.abs}\0${recursive}`;
  const cached = lastListing;
  if (cached && cached.key === key && cached.dirs.every((d) => unchanged(d))) return cached;
  lastListing = null;
  const listing: Listing = { key, dirs: [], files: [] };
  const head = Buffer.allocUnsafe(SNIFF_BYTES);
  const prefix = target.abs.length + 1;
  await walk(
    target.root,
    target.abs,
    target.display,
    recursive,
    null,
    (abs, display, linked) => {
      if (linked) {
        listing.files.push({ abs, display });
        return;
      }
      const kind = sniff(target.root, abs, head);
      if (kind) listing.files.push({ rel: abs.slice(prefix), kind });
    },
    () => false,
    (dir) => {
      const st = statSync(dir, { throwIfNoEntry: false });
      if (st) listing.dirs.push({ abs: dir, mtimeMs: st.mtimeMs, ino: st.ino });
    },
  );
  lastListing = listing;
  return listing;
}

function unchanged(d: { abs: string; mtimeMs: number; ino: number }): boolean {
  const st = statSync(d.abs, { throwIfNoEntry: false });
  return st !== undefined && st.mtimeMs === d.mtimeMs && st.ino === d.ino;
}

/** Text or binary by the first SNIFF_BYTES, as searchFile decides; null when unreadable or not inside the bundle (skipped, not counted). */
function sniff(root: string, abs: string, head: Buffer): 'text' | 'binary' | null {
  const fd = openChecked(root, abs);
  if (fd === null) return null;
  try {
    const n = readSync(fd, head, 0, head.length, 0);
    return looksBinary(head.subarray(0, n)) ? 'binary' : 'text';
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/**
 * True when a candidate line is one the line-by-line check cannot stand for: it holds a CR, U+2028
 * or U+2029 (line ends to JavaScript's multiline mode, not to rg), or is so long the built-in
 * search reads it in pieces.
 */
function needsBuiltin(data: Buffer, c: FileCandidates): boolean {
  for (let k = 0; k < c.lines.length; k++) {
    const s = c.starts[k]!;
    const e = c.ends[k]!;
    if (e - s >= MAX_CARRY) return true;
    // Searched within the line only (indexOf on `data` would run on to the end of rg's output).
    const line = data.subarray(s, e);
    if (line.indexOf(13) !== -1) return true;
    if (hasLineSeparator(line)) return true;
  }
  return false;
}

/** Checks rg's candidate lines of one file with the JavaScript regex and records the matches, as searchText would. */
function recordCandidates(searcher: Searcher, data: Buffer, c: FileCandidates, display: string, state: SearchState): void {
  const file: FileScan = { display, lineBase: 0, inFile: 0, lastLine: -1 };
  for (let k = 0; k < c.lines.length; k++) {
    const line = data.toString('utf8', c.starts[k]!, c.ends[k]!);
    progress();
    const lm = searcher.lineRe.exec(line);
    if (lm === null) continue;
    if (record(file, state, c.lines[k]! - 1, line, lm.index)) return;
  }
}

/** U+2028 or U+2029 (E2 80 A8/A9 in UTF-8) in `line`. */
function hasLineSeparator(line: Buffer): boolean {
  for (let i = line.indexOf(0xe2); i !== -1 && i + 2 < line.length; i = line.indexOf(0xe2, i + 1)) {
    if (line[i + 1] === 0x80 && (line[i + 2] === 0xa8 || line[i + 2] === 0xa9)) return true;
  }
  return false;
}

interface SearchState {
  matches: GrepMatch[];
  filesSearched: number;
  binarySkipped: number;
  truncated: boolean;
  filesTruncated: string[];
  maxResults: number;
  maxPerFile: number;
  /** One read buffer for every file (files are searched one at a time). */
  buf: Buffer;
  /** The bundle's real path: every file searched is opened and checked inside it. */
  root: string;
}

/**
 * The compiled pattern: a regex run over whole chunks of text (and one to check a single line), or
 * for a case-sensitive pattern without regex syntax, a plain byte search that needs no decoding.
 */
class Searcher {
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

/**
 * A file to search, opened and checked inside the bundle (core/paths openVerified): a file or
 * directory swapped for a link out of the bundle after the walk saw it is never read. Null when it
 * cannot be read or is no longer a file inside.
 */
function openChecked(root: string, abs: string): number | null {
  try {
    const opened = openVerified(root, abs, { type: 'file' });
    return opened !== 'changed' && opened.kind === 'inside' ? opened.fd : null;
  } catch {
    return null;
  }
}

/** A line longer than this is searched in pieces (its matches may then repeat the line number). */
const MAX_CARRY = 16 * 1024 * 1024;

/** Searches one file, synchronously (small reads cost far less than a trip through the thread pool). */
function searchFile(searcher: Searcher, abs: string, display: string, state: SearchState): void {
  const fd = openChecked(state.root, abs);
  if (fd === null) return; // unreadable, or no longer a file inside the bundle: skipped
  try {
    const buf = state.buf;
    const file: FileScan = { display, lineBase: 0, inFile: 0, lastLine: -1 };
    // The unfinished last line of earlier chunks, kept as pieces (no newline in them).
    let carry: Buffer[] = [];
    let carryBytes = 0;
    let position = 0;
    for (let first = true; ; first = false) {
      progress();
      const bytesRead = readSync(fd, buf, 0, buf.length, position);
      position += bytesRead;
      // A short read of a regular file is its end: no extra read to hear it.
      const last = bytesRead < buf.length;
      if (first) {
        if (looksBinary(buf.subarray(0, Math.min(bytesRead, SNIFF_BYTES)))) {
          state.binarySkipped++;
          return;
        }
        state.filesSearched++;
      }
      const fresh = buf.subarray(0, bytesRead);
      if (last) {
        const data = carryBytes > 0 ? Buffer.concat([...carry, fresh], carryBytes + fresh.length) : fresh;
        if (data.length > 0) searchData(searcher, data, file, state, true);
        return;
      }
      const lastNl = fresh.lastIndexOf(10);
      if (lastNl === -1) {
        carry.push(Buffer.from(fresh));
        carryBytes += fresh.length;
        if (carryBytes >= MAX_CARRY) {
          if (searchData(searcher, Buffer.concat(carry, carryBytes), file, state, false)) return;
          carry = [];
          carryBytes = 0;
        }
        continue;
      }
      const head = fresh.subarray(0, lastNl + 1);
      const data = carryBytes > 0 ? Buffer.concat([...carry, head], carryBytes + head.length) : head;
      carry = lastNl + 1 < fresh.length ? [Buffer.from(fresh.subarray(lastNl + 1))] : [];
      carryBytes = carry.length > 0 ? carry[0]!.length : 0;
      if (searchData(searcher, data, file, state, false)) return;
    }
  } finally {
    closeSync(fd);
  }
}

interface FileScan {
  display: string;
  /** Newlines before the data being searched. */
  lineBase: number;
  inFile: number;
  /** Last line number reported (a line searched in pieces reports once). */
  lastLine: number;
}

/** Searches whole lines of a file (or a piece of an overlong line; `last`: the file's end). True: stop this file. */
function searchData(searcher: Searcher, data: Buffer, file: FileScan, state: SearchState, last: boolean): boolean {
  if (searcher.literal) return searchLiteral(searcher.literal, data, file, state, last);
  if (searcher.required && data.indexOf(searcher.required) === -1) {
    // No match can be in here: only the lines need counting, if more of the file follows.
    if (!last) file.lineBase += countByte(data, 0, data.length);
    return false;
  }
  // Decoded as latin1 (a plain copy, one character per byte) when that cannot change what
  // matches: the pattern ignores non-ASCII characters, or the data has none. Else UTF-8.
  const bytewise = searcher.byteSafe || isAscii(data);
  return searchText(searcher, data, data.toString(bytewise ? 'latin1' : 'utf8'), bytewise, file, state, last);
}

/** Records a matching line; true when the file (or the whole search) must stop. */
function record(file: FileScan, state: SearchState, lineNo: number, line: string, at: number): boolean {
  if (lineNo === file.lastLine) return false;
  if (file.inFile >= state.maxPerFile) {
    state.filesTruncated.push(file.display);
    return true;
  }
  if (state.matches.length >= state.maxResults) {
    state.truncated = true;
    return true;
  }
  state.matches.push({ path: file.display, line_number: lineNo + 1, line: clip(line, at) });
  file.inFile++;
  file.lastLine = lineNo;
  return false;
}

function searchLiteral(needle: Buffer, data: Buffer, file: FileScan, state: SearchState, last: boolean): boolean {
  let counted = 0;
  let lineNo = file.lineBase;
  for (let idx = data.indexOf(needle); idx !== -1;) {
    const ls = idx === 0 ? 0 : data.lastIndexOf(10, idx - 1) + 1;
    let le = data.indexOf(10, idx);
    if (le === -1) le = data.length;
    lineNo += countByte(data, counted, ls);
    counted = ls;
    let line = data.toString('utf8', ls, le);
    if (line.endsWith('\r')) line = line.slice(0, -1);
    const at = line.length > MAX_SHOWN_LINE ? data.toString('utf8', ls, idx).length : idx - ls;
    if (record(file, state, lineNo, line, at)) return true;
    if (le >= data.length) break;
    idx = data.indexOf(needle, le + 1);
  }
  // Lines are counted only up to matches, and past them only when more of the file follows.
  if (!last) file.lineBase = lineNo + countByte(data, counted, data.length);
  return false;
}

/**
 * Runs the chunk regex over `text`. `bytewise`: text was decoded as latin1, so an index in it is
 * a byte offset in `data`, and lines shown are decoded again from `data` as UTF-8.
 */
function searchText(searcher: Searcher, data: Buffer, text: string, bytewise: boolean, file: FileScan, state: SearchState, last: boolean): boolean {
  if (searcher.lineByLine) return searchLines(searcher, data, text, bytewise, file, state, last);
  const re = searcher.chunkRe;
  re.lastIndex = 0;
  const endsWithNewline = text.length > 0 && text.charCodeAt(text.length - 1) === 10;
  let counted = 0; // offset up to which newlines are counted into lineNo
  let lineNo = file.lineBase;
  let m: RegExpExecArray | null;
  for (; progress(), (m = re.exec(text)) !== null;) {
    const idx = m.index;
    if (idx >= text.length && endsWithNewline) break; // after the last newline: no line there
    const ls = idx === 0 ? 0 : text.lastIndexOf('\n', idx - 1) + 1;
    let le = text.indexOf('\n', idx);
    if (le === -1) le = text.length;
    lineNo += countNewlines(text, counted, ls);
    counted = ls;
    let at = idx - ls;
    const lineEnd = le > ls && text.charCodeAt(le - 1) === 13 ? le - 1 : le; // without a CR
    if (le < idx + m[0].length) {
      // The match runs past its line (or may look past it): check the line on its own.
      progress();
      const lm = searcher.lineRe.exec(text.slice(ls, lineEnd));
      if (lm === null) {
        if (le >= text.length) break;
        re.lastIndex = le + 1;
        continue;
      }
      at = lm.index;
    }
    let line: string;
    if (bytewise) {
      line = data.toString('utf8', ls, lineEnd);
      if (line.length > MAX_SHOWN_LINE) at = data.toString('utf8', ls, ls + at).length;
    } else {
      line = text.slice(ls, lineEnd);
    }
    if (record(file, state, lineNo, line, at)) return true;
    if (le >= text.length) break;
    re.lastIndex = le + 1;
  }
  if (!last) file.lineBase = lineNo + countNewlines(text, counted, text.length);
  return false;
}

/** The slow, plain way, for patterns with lookarounds: each line on its own. */
function searchLines(searcher: Searcher, data: Buffer, text: string, bytewise: boolean, file: FileScan, state: SearchState, last: boolean): boolean {
  let lineNo = file.lineBase;
  let ls = 0;
  while (ls < text.length) {
    let le = text.indexOf('\n', ls);
    const terminated = le !== -1;
    if (!terminated) le = text.length;
    const lineEnd = le > ls && text.charCodeAt(le - 1) === 13 ? le - 1 : le;
    progress();
    const lm = searcher.lineRe.exec(text.slice(ls, lineEnd));
    if (lm !== null) {
      let at = lm.index;
      let line: string;
      if (bytewise) {
        line = data.toString('utf8', ls, lineEnd);
        if (line.length > MAX_SHOWN_LINE) at = data.toString('utf8', ls, ls + at).length;
      } else {
        line = text.slice(ls, lineEnd);
      }
      if (record(file, state, lineNo, line, at)) return true;
    }
    if (!terminated) break;
    lineNo++;
    ls = le + 1;
  }
  if (!last) file.lineBase = lineNo;
  return false;
}

function countNewlines(text: string, from: number, to: number): number {
  let n = 0;
  for (let i = text.indexOf('\n', from); i !== -1 && i < to; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

function countByte(data: Buffer, from: number, to: number): number {
  let n = 0;
  for (let i = data.indexOf(10, from); i !== -1 && i < to; i = data.indexOf(10, i + 1)) n++;
  return n;
}

/** A long line is shown as a window around the match. */
function clip(line: string, at: number): string {
  if (line.length <= MAX_SHOWN_LINE) return line;
  const from = Math.max(0, Math.min(at - 100, line.length - MAX_SHOWN_LINE));
  const to = Math.min(line.length, from + MAX_SHOWN_LINE);
  return `${from > 0 ? '…' : ''}${line.slice(from, to)}${to < line.length ? `… [${line.length} characters]` : ''}`;
}

/** The search runs synchronously in slices of about this long, then lets other work run. */
const SLICE_MS = 20;

/**
 * Visits the files under `dir` in a stable order: depth first, a directory's subdirectories (by
 * name) before its own files (by name), which lists /kubernetes/logs/... before
 * /kubernetes/events.log as the contract's example does. Symlinks are followed only to files
 * inside the bundle, and those are visited last, skipping any whose real file was visited.
 */
async function walk(
  realRoot: string,
  dir: string,
  display: string,
  recursive: boolean,
  matcher: GlobMatcher | null,
  visit: (abs: string, display: string, linked: boolean) => void,
  stop: () => boolean,
  onDir?: (dir: string) => void,
): Promise<void> {
  const visited = new Set<string>();
  const linked: { real: string; display: string }[] = [];
  type Task = { dir: string; display: string; rel: string } | { files: { abs: string; display: string }[] };
  const stack: Task[] = [{ dir, display, rel: '' }];
  const slice = new TimeSlice(SLICE_MS);
  while (stack.length > 0) {
    const task = stack.pop()!;
    if ('files' in task) {
      for (const f of task.files) {
        progress();
        visited.add(f.abs);
        visit(f.abs, f.display, false);
        if (stop()) return;
        await slice.pause();
      }
      continue;
    }
    let dirents;
    progress();
    onDir?.(task.dir);
    try {
      dirents = readdirSync(task.dir, { withFileTypes: true });
    } catch {
      continue;
    }
    dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const files: { abs: string; display: string }[] = [];
    const subdirs: Task[] = [];
    for (const d of dirents) {
      const abs = `${task.dir}/${d.name}`;
      const rel = task.rel === '' ? d.name : `${task.rel}/${d.name}`;
      if (d.isDirectory()) {
        if (recursive) subdirs.push({ dir: abs, display: childDisplay(task.display, d.name), rel });
      } else if (d.isFile()) {
        if (!matcher || matcher.matches(rel)) files.push({ abs, display: childDisplay(task.display, d.name) });
      } else if (d.isSymbolicLink()) {
        if (matcher && !matcher.matches(rel)) continue;
        let real: string;
        try {
          real = realpathSync.native(abs);
        } catch {
          continue;
        }
        if (!isInside(realRoot, real)) continue;
        if (statSync(real, { throwIfNoEntry: false })?.isFile()) linked.push({ real, display: childDisplay(task.display, d.name) });
      }
    }
    // Popped in order: the subdirectories first, then this directory's files.
    stack.push({ files });
    for (let i = subdirs.length - 1; i >= 0; i--) stack.push(subdirs[i]!);
  }
  for (const l of linked) {
    progress();
    if (visited.has(l.real)) continue;
    visited.add(l.real);
    visit(l.real, l.display, true);
    if (stop()) return;
    await slice.pause();
  }
}

function render(meta: GrepMetadata, state: SearchState): string {
  const how = `${meta.case_sensitive ? 'case-sensitive' : 'case-insensitive'} pattern '${meta.pattern}' in ${meta.path}${meta.glob_pattern ? ` (matching ${meta.glob_pattern})` : ''}`;
  const parts: string[] = [];
  if (state.matches.length === 0) {
    parts.push(`No matches found for ${how}.`);
  } else {
    parts.push(`Found ${state.matches.length} ${state.matches.length === 1 ? 'match' : 'matches'} for ${how}:`);
    let i = 0;
    while (i < state.matches.length) {
      const file = state.matches[i]!.path;
      const lines: string[] = [];
      for (; i < state.matches.length && state.matches[i]!.path === file; i++) {
        const m = state.matches[i]!;
        lines.push(`${String(m.line_number).padStart(4)} | ${m.line}`);
      }
      parts.push(`**File: ${file}**\n\`\`\`\n${lines.join('\n')}\n\`\`\`${state.filesTruncated.includes(file) ? '\n(more matches in this file not shown: max_results_per_file reached)' : ''}`);
    }
  }
  parts.push(`Search metadata:\n\`\`\`json\n${JSON.stringify(meta, null, 2)}\n\`\`\``);
  if (state.truncated) {
    parts.push(`The results stopped at max_results (${state.maxResults}) matches (truncated): narrow the search with a more specific pattern, a path or a glob_pattern, or raise max_results.`);
  }
  return parts.join('\n\n');
}
