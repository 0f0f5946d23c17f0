import { DebugkitError } from '../../../core/errors.js';
import { workerEntry, WorkerJobError, WorkerPool, WorkerStalledError } from '../../../core/workers.js';
import { BundleError, type BundleErrorType } from '../errors.js';
import { findRipgrep, ripgrepOutput, type RipgrepLimits } from './ripgrep.js';

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
