import { isAscii } from 'node:buffer';
import { closeSync, readSync } from 'node:fs';
import { openVerified } from '../../../core/paths.js';
import type { GrepMatch } from './grep.js';
import type { Searcher } from './grep-pattern.js';
import { looksBinary, SNIFF_BYTES } from './resolve.js';

/** Longer matching lines are shown as a window around the match. */
const MAX_SHOWN_LINE = 500;

/** Called once per regex run, line or file: the worker counts it as progress (see grepFiles' time bounds). */
export let progress: () => void = () => undefined;

/** Where progress goes (the worker's counter). */
export function reportProgressTo(tick: () => void): void {
  progress = tick;
}

export interface SearchState {
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
 * A file to search, opened and checked inside the bundle (core/paths openVerified): a file or
 * directory swapped for a link out of the bundle after the walk saw it is never read. Null when it
 * cannot be read or is no longer a file inside.
 */
export function openChecked(root: string, abs: string): number | null {
  try {
    const opened = openVerified(root, abs, { type: 'file' });
    return opened !== 'changed' && opened.kind === 'inside' ? opened.fd : null;
  } catch {
    return null;
  }
}

/** A line longer than this is searched in pieces (its matches may then repeat the line number). */
export const MAX_CARRY = 16 * 1024 * 1024;

/** Searches one file, synchronously (small reads cost far less than a trip through the thread pool). */
export function searchFile(searcher: Searcher, abs: string, display: string, state: SearchState): void {
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

export interface FileScan {
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
export function record(file: FileScan, state: SearchState, lineNo: number, line: string, at: number): boolean {
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
    if (recordLine(data, text, bytewise, ls, lineEnd, at, file, state, lineNo)) return true;
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
      if (recordLine(data, text, bytewise, ls, lineEnd, lm.index, file, state, lineNo)) return true;
    }
    if (!terminated) break;
    lineNo++;
    ls = le + 1;
  }
  if (!last) file.lineBase = lineNo;
  return false;
}

/**
 * Records the line [ls, lineEnd) of `text`, matching at `at`. `bytewise`: text is data decoded as
 * latin1, so the line shown is decoded again from `data` as UTF-8 (and `at` counted in its characters).
 */
function recordLine(data: Buffer, text: string, bytewise: boolean, ls: number, lineEnd: number, at: number, file: FileScan, state: SearchState, lineNo: number): boolean {
  let line: string;
  if (bytewise) {
    line = data.toString('utf8', ls, lineEnd);
    if (line.length > MAX_SHOWN_LINE) at = data.toString('utf8', ls, ls + at).length;
  } else {
    line = text.slice(ls, lineEnd);
  }
  return record(file, state, lineNo, line, at);
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
