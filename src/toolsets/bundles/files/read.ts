import { closeSync } from 'node:fs';
import { BundleError } from '../errors.js';
import { looksBinary, openResolved, readAt, resolveBundlePath, SNIFF_BYTES } from './resolve.js';

export interface ReadResult {
  path: string;
  binary: boolean;
  size_bytes: number;
  /** 1-based first line shown, as grep_files numbers lines. */
  start_line: number;
  /** 1-based last line shown, inclusive; null when no line is shown (binary, empty, out of range). */
  end_line: number | null;
  /** Lines in the file; null for binary files. */
  total_lines: number | null;
  /** True when the answer stops before the requested range ends (line or byte budget). */
  truncated: boolean;
  /** The lines shown, without numbers (binary: the hex dump). */
  content: string;
  text: string;
}

export interface ReadOptions {
  /** Most lines per answer. Default 1000. */
  maxLines?: number;
  /** Most bytes of line text per answer. Default 32 KiB (about 8k tokens numbered). */
  maxBytes?: number;
}

export const DEFAULT_READ_MAX_LINES = 1000;
export const DEFAULT_READ_MAX_BYTES = 32 * 1024;
export const BINARY_DUMP_BYTES = 1024;
const CHUNK = 1024 * 1024;

/**
 * read_file: lines `start_line`..`end_line` of a bundle file, both 1-based and inclusive, the
 * numbers the answer shows and grep_files gives, so a line grep found is read with that number.
 * 0 counts as 1, so the contract's example (start_line 0, end_line null: from the start) works. At most maxLines lines / maxBytes bytes per answer; the answer then says which
 * start_line reads on. Binary files (a NUL byte or non-UTF-8 bytes in the first 8 KiB) are shown
 * as a hex dump of their first 1 KiB.
 */
export async function readFile(root: string, filePath: string, startLine = 1, endLine: number | null = null, options: ReadOptions = {}): Promise<ReadResult> {
  const maxLines = Math.max(1, options.maxLines ?? DEFAULT_READ_MAX_LINES);
  const maxBytes = Math.max(1, options.maxBytes ?? DEFAULT_READ_MAX_BYTES);
  const notFound = (d: string) => new BundleError('FileNotFoundError', `File '${d}' not found`);
  const target = resolveBundlePath(root, filePath, notFound);
  const display = target.display;
  const notAFile = (stats: typeof target.stats) => {
    if (stats.isDirectory()) return new BundleError('NotAFileError', `Path '${display}' is a directory, not a file`);
    return stats.isFile() ? undefined : new BundleError('NotAFileError', `Path '${display}' is not a regular file`);
  };
  const refused = notAFile(target.stats);
  if (refused) throw refused;
  // 0-based inside: `start` and `end` index lines from 0.
  const start = Math.max(1, Math.floor(startLine ?? 1)) - 1;
  const end = endLine === null || endLine === undefined ? Infinity : Math.max(1, Math.floor(endLine)) - 1;

  // Read through the descriptor that was checked inside the bundle, never the path again.
  const { fd, stats } = openResolved(target, notFound);
  try {
    const changed = notAFile(stats);
    if (changed) throw changed;
    const buf = Buffer.allocUnsafe(CHUNK);
    let { bytesRead } = await readAt(fd, buf, 0, CHUNK, 0);
    const size = stats.size;
    if (looksBinary(buf.subarray(0, Math.min(bytesRead, SNIFF_BYTES)))) {
      return binaryResult(display, buf.subarray(0, Math.min(bytesRead, BINARY_DUMP_BYTES)), Math.max(size, bytesRead), start);
    }

    const lines: string[] = [];
    let shownBytes = 0;
    let full = false; // the budget is spent: keep counting lines only
    let line = 0; // index of the line the next byte belongs to
    let pieces: Buffer[] = [];
    let pieceBytes = 0;
    let lineBytes = 0; // bytes of the current line so far, kept or not
    let partial = false; // bytes after the last newline
    let position = 0;

    const wanted = (): boolean => !full && line >= start && line <= end;
    const finishLine = (): void => {
      if (lines.length > 0 && shownBytes + pieceBytes > maxBytes) {
        // This line does not fit in the answer any more: it is where the next read starts.
        full = true;
        pieces = [];
        pieceBytes = 0;
        return;
      }
      let textLine = Buffer.concat(pieces, pieceBytes).toString('utf8');
      if (textLine.endsWith('\r')) textLine = textLine.slice(0, -1);
      if (lineBytes > pieceBytes) textLine += ` … [line cut at ${Math.round(maxBytes / 1024)} KiB of its ${lineBytes} bytes]`;
      lines.push(textLine);
      shownBytes += pieceBytes;
      pieces = [];
      pieceBytes = 0;
      if (lines.length >= maxLines || shownBytes >= maxBytes) full = true;
    };

    while (bytesRead > 0) {
      const chunk = buf.subarray(0, bytesRead);
      let pos = 0;
      while (pos < chunk.length) {
        const nl = chunk.indexOf(10, pos);
        const stop = nl === -1 ? chunk.length : nl;
        if (wanted()) {
          // A line is kept up to the whole budget; finishLine decides whether it still fits.
          const take = Math.min(maxBytes - pieceBytes, stop - pos);
          if (take > 0) {
            pieces.push(Buffer.from(chunk.subarray(pos, pos + take)));
            pieceBytes += take;
          }
        }
        lineBytes += stop - pos;
        if (nl === -1) {
          partial = stop > pos || partial;
          break;
        }
        if (wanted()) finishLine();
        line++;
        lineBytes = 0;
        partial = false;
        pos = nl + 1;
      }
      position += bytesRead;
      ({ bytesRead } = await readAt(fd, buf, 0, CHUNK, position));
    }
    if (partial) {
      if (wanted()) finishLine();
      line++;
    }
    const total = line;
    return textResult(display, size, start, end, total, lines, maxLines, maxBytes);
  } finally {
    closeSync(fd);
  }
}

function textResult(display: string, size: number, start: number, end: number, total: number, lines: string[], maxLines: number, maxBytes: number): ReadResult {
  const base = { path: display, binary: false, size_bytes: size, start_line: start + 1, total_lines: total };
  if (total === 0) {
    return { ...base, end_line: null, truncated: false, content: '', text: `Read text file ${display} (empty file, 0 lines):\n\`\`\`\n\`\`\`` };
  }
  if (start >= total || end < start) {
    const why =
      start >= total
        ? `start_line ${start + 1} is past the end of the file, which has ${total} line${total === 1 ? '' : 's'} (lines count from 1, so the last is start_line ${total})`
        : `end_line ${end + 1} is before start_line ${start + 1}`;
    return { ...base, end_line: null, truncated: false, content: '', text: `Read text file ${display}: no lines to show: ${why}.` };
  }
  const last = start + lines.length - 1; // 0-based, inclusive
  const wantedLast = Math.min(end, total - 1);
  const truncated = last < wantedLast;
  const width = Math.max(4, String(last + 1).length);
  const numbered = lines.map((l, i) => `${String(start + i + 1).padStart(width)} | ${l}`).join('\n');
  let text = `Read text file ${display} (lines ${start + 1}-${last + 1} of ${total}):\n\`\`\`\n${numbered}\n\`\`\``;
  if (truncated) {
    text +=
      `\n\nShowing lines ${start + 1}-${last + 1} of ${total}: one answer holds at most ${maxLines} lines or ${Math.round(maxBytes / 1024)} KiB. ` +
      `To read on, call read_file with start_line ${last + 2}${Number.isFinite(end) ? ` and end_line ${end + 1}` : ''}.`;
  }
  return { ...base, end_line: last + 1, truncated, content: lines.join('\n'), text };
}

function binaryResult(display: string, head: Buffer, size: number, start: number): ReadResult {
  const dump = hexDump(head);
  let text = `Read binary file ${display} (${size} bytes):\n\`\`\`\n${dump}\n\`\`\``;
  if (size > head.length) text += `\n\nShowing the first ${head.length} of ${size} bytes as a hex dump; binary files are not shown as text.`;
  return { path: display, binary: true, size_bytes: size, start_line: start + 1, end_line: null, total_lines: null, truncated: size > head.length, content: dump, text };
}

/** `hexdump -C` layout: offset, 16 bytes in two groups of 8, printable ASCII. */
export function hexDump(data: Buffer): string {
  const rows: string[] = [];
  for (let off = 0; off < data.length; off += 16) {
    const row = data.subarray(off, off + 16);
    let hex = '';
    let ascii = '';
    for (let i = 0; i < 16; i++) {
      if (i === 8) hex += ' ';
      if (i < row.length) {
        const b = row[i]!;
        hex += `${b.toString(16).padStart(2, '0')} `;
        ascii += b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.';
      } else {
        hex += '   ';
      }
    }
    rows.push(`${off.toString(16).padStart(8, '0')}  ${hex} |${ascii}|`);
  }
  return rows.join('\n');
}
