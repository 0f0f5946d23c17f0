import { closeSync, readSync, statSync } from 'node:fs';
import type { RipgrepRequest } from './grep.js';
import type { Searcher } from './grep-pattern.js';
import { MAX_CARRY, openChecked, progress, record, searchFile, type FileScan, type SearchState } from './grep-scan.js';
import { walk } from './grep-walk.js';
import type { FileCandidates, RipgrepScan } from './ripgrep.js';
import { childDisplay, looksBinary, SNIFF_BYTES } from './resolve.js';

/** How the search asks for an rg scan (from the worker: the main thread runs rg). */
export type RipgrepScanner = (request: RipgrepRequest) => Promise<RipgrepScan | null>;

/**
 * rg's output is read on the main thread (it owns the child): 8 MiB at most. A bundle's one 400 MB
 * line made rg print 64 MiB, held and copied there on every call, and other clients' pings waited
 * 0.3-1.4 s with a few such calls (attack 18am w1-1); past the bound the built-in search, on its
 * worker thread, reads the line in pieces.
 */
export const RG_MAX_OUTPUT = 8 * 1024 * 1024;
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
export async function searchWithRipgrep(
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
