import { BundleError } from '../errors.js';
import type { GrepMetadata, GrepOptions, GrepResult, GrepEngine } from './grep.js';
import { searchWithRipgrep, type RipgrepScanner } from './grep-candidates.js';
import { Searcher } from './grep-pattern.js';
import { searchFile, type SearchState } from './grep-scan.js';
import { walk } from './grep-walk.js';
import { compileGlob } from './glob.js';
import { findRipgrep, toRustRegex } from './ripgrep.js';
import { resolveBundlePath } from './resolve.js';

export const DEFAULT_GREP_MAX_RESULTS = 1000;
const CHUNK = 1024 * 1024;

/**
 * The search itself, on the calling thread (grep-worker.ts calls it; never the event loop of the
 * server). `scan` runs rg when the engine may use it.
 */
export async function searchBundle(root: string, options: GrepOptions, engine: GrepEngine, scan: RipgrepScanner | null): Promise<{ result: GrepResult; engine: 'ripgrep' | 'builtin' }> {
  const given = options.pattern;
  const recursive = options.recursive ?? true;
  if (typeof given !== 'string' || given === '') throw new BundleError('InvalidPatternError', 'Invalid pattern: the pattern is empty');
  const { pattern, caseSensitive } = withInlineFlags(given, options.case_sensitive ?? false);
  const glob = options.glob_pattern ? options.glob_pattern : null;
  const maxResults = Math.max(1, Math.floor(options.max_results ?? DEFAULT_GREP_MAX_RESULTS));
  const maxPerFile = options.max_results_per_file ? Math.max(1, Math.floor(options.max_results_per_file)) : Infinity;
  if (pattern === '') throw new BundleError('InvalidPatternError', `Invalid pattern: '${given}' is only inline flags`);
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
    pattern: given,
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

/**
 * A leading inline-flag group as PCRE, Python, Go and ripgrep write it (`(?i)error`), which
 * JavaScript's RegExp refuses: `i` searches case-insensitively, `-i` case-sensitively; `m` and `s`
 * change nothing for a match made line by line. Any other flag is left for the RegExp to refuse.
 */
export function withInlineFlags(pattern: string, caseSensitive: boolean): { pattern: string; caseSensitive: boolean } {
  const m = /^\(\?([ims]*)(?:-([ims]*))?\)/.exec(pattern);
  if (!m || (m[1] ?? '') + (m[2] ?? '') === '') return { pattern, caseSensitive };
  const on = m[1] ?? '';
  const off = m[2] ?? '';
  return { pattern: pattern.slice(m[0].length), caseSensitive: on.includes('i') ? false : off.includes('i') ? true : caseSensitive };
}
