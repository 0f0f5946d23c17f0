import { closeSync, constants, fstatSync, openSync, read, type Stats } from 'node:fs';
import { openContained } from './paths.js';

/** Lines of a source file around a stop: the first line's number, and the lines. */
export interface LinesAround {
  first: number;
  lines: string[];
  /** When the file read was last modified (ms since the epoch). */
  modifiedMs: number;
}

/**
 * What a stop says of source lines read from a file modified after the program was built or started
 * (as gdb warns): they may not be the code that runs. `since`: the program's build (or start) time;
 * `what`: which of the two; `remedy`: how to run the new code.
 */
export function newerSourceNote(source: { modifiedMs: number } | undefined, since: number | undefined, what = 'built', remedy = 'rebuild and launch again'): string | undefined {
  return source && since !== undefined && source.modifiedMs > since
    ? `the source file was modified after the program was ${what}: its lines shown may not be the code that runs (${remedy})`
    : undefined;
}

/** Bytes of a file read, a chunk at a time, to reach a stop's lines: a stop further in shows none. */
export const SOURCE_READ_BYTES = 16 * 1024 * 1024;
const CHUNK = 256 * 1024;
/** Excerpts a cache keeps (the oldest goes first). */
const CACHED = 64;

/**
 * The lines `context` before and after `line` of `file`, read a chunk at a time only as far as the
 * lines shown (at most SOURCE_READ_BYTES), asynchronously, and only those lines decoded, each cut
 * to `maxLineChars`. With a `root`, only a file inside it, opened as every file a client names is
 * (openContained: a `..` or a link leading out, or a component swapped for a link after the check,
 * shows nothing); with `root` null, any regular file by its path (a program's own frames: Python's
 * standard library, say; what the program could read itself). Undefined when the file is not
 * there, not a regular file, not inside, or does not reach `line`. With `cache`, an excerpt is kept
 * by the opened file's identity, size and change time.
 */
export async function linesAround(
  root: string | null,
  file: string,
  line: number,
  { context, maxLineChars, cache }: { context: number; maxLineChars: number; cache?: Map<string, LinesAround | null> },
): Promise<LinesAround | undefined> {
  if (!Number.isSafeInteger(line) || line < 1) return undefined;
  const opened = openSource(root, file);
  if (!opened) return undefined;
  try {
    const id = `${opened.real}\0${line}\0${context}\0${maxLineChars}\0${opened.stats.dev}\0${opened.stats.ino}\0${opened.stats.size}\0${opened.stats.mtimeMs}`;
    const kept = cache?.get(id);
    if (kept !== undefined) return kept ?? undefined;
    const excerpt = await readAround(opened.fd, opened.stats.size, line, context, maxLineChars, opened.stats.mtimeMs);
    if (cache) {
      cache.set(id, excerpt ?? null);
      if (cache.size > CACHED) cache.delete(cache.keys().next().value!);
    }
    return excerpt;
  } catch {
    return undefined;
  } finally {
    closeSync(opened.fd);
  }
}

/** A regular file opened for reading: inside `root` (openContained), or by its path when `root` is null (never blocking on a FIFO). */
function openSource(root: string | null, file: string): { fd: number; real: string; stats: Stats } | undefined {
  if (root !== null) {
    try {
      return openContained(root, file, { what: 'source file', type: 'file' });
    } catch {
      return undefined;
    }
  }
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch {
    return undefined;
  }
  const stats = fstatSync(fd);
  if (stats.isFile()) return { fd, real: file, stats };
  closeSync(fd);
  return undefined;
}

/** Bytes of a file countLines reads: past them a line is past what debugkit reads of the file. */
export const COUNT_READ_BYTES = 64 * 1024 * 1024;

/**
 * How many lines the open file `fd` (of `size` bytes) holds, as a text split on newlines counts
 * them (a last line without a newline counts; the empty text after a final newline does not);
 * counted a chunk at a time, asynchronously, only until `enough` lines are seen when given, and
 * over at most `maxBytes` (COUNT_READ_BYTES): `bounded` says the count stopped there, before the
 * file's end. Stops with `signal` (its reason thrown): a breakpoint at line 10^9 of a sparse 1 TiB
 * file read on for an hour after its call was cancelled and its session ended (attack 18ao d2-3).
 */
export async function countLines(
  fd: number,
  size: number,
  enough = Infinity,
  { signal, maxBytes = COUNT_READ_BYTES }: { signal?: AbortSignal; maxBytes?: number } = {},
): Promise<{ lines: number; bounded: boolean }> {
  const readable = Math.min(size, maxBytes);
  const buffer = Buffer.alloc(Math.min(CHUNK, Math.max(1, readable)));
  let newlines = 0;
  let offset = 0;
  let last = 10;
  while (offset < readable && newlines < enough) {
    signal?.throwIfAborted();
    const got = await readChunk(fd, buffer, readable - offset, offset);
    if (got === 0) break;
    offset += got;
    for (let at = buffer.indexOf(10); at >= 0 && at < got; at = buffer.indexOf(10, at + 1)) newlines++;
    last = buffer[got - 1]!;
  }
  if (newlines >= enough) return { lines: newlines, bounded: false };
  if (offset < size && offset >= readable) return { lines: newlines, bounded: true };
  return { lines: newlines + (offset > 0 && last !== 10 ? 1 : 0), bounded: false };
}

function readChunk(fd: number, buffer: Buffer, left: number, offset: number): Promise<number> {
  return new Promise<number>((resolve, reject) => read(fd, buffer, 0, Math.min(buffer.length, left), offset, (err, count) => (err ? reject(err) : resolve(count))));
}

async function readAround(fd: number, fileSize: number, line: number, context: number, maxLineChars: number, modifiedMs: number): Promise<LinesAround | undefined> {
  const size = Math.min(fileSize, SOURCE_READ_BYTES);
  const first = Math.max(1, line - context);
  const last = line + context;
  // A line's bytes kept: enough for maxLineChars characters of UTF-8.
  const cap = maxLineChars * 4;
  const lines: string[] = [];
  let current: Buffer[] = [];
  let held = 0;
  let n = 1;
  const take = (bytes: Buffer) => {
    if (n < first || held >= cap) return;
    const part = Buffer.from(bytes.subarray(0, cap - held));
    current.push(part);
    held += part.length;
  };
  const endLine = () => {
    if (n >= first) lines.push(Buffer.concat(current).toString('utf8').replace(/\r$/, '').slice(0, maxLineChars));
    current = [];
    held = 0;
    n++;
  };
  const buffer = Buffer.alloc(Math.min(CHUNK, Math.max(1, size)));
  let offset = 0;
  while (n <= last && offset < size) {
    const got = await readChunk(fd, buffer, size - offset, offset);
    if (got === 0) break;
    offset += got;
    let from = 0;
    while (n <= last) {
      const nl = buffer.indexOf(10, from);
      if (nl < 0 || nl >= got) {
        take(buffer.subarray(from, got));
        break;
      }
      take(buffer.subarray(from, nl));
      endLine();
      from = nl + 1;
    }
  }
  // The file's last line, without a newline after it (not a line cut by the bound on bytes read).
  if (n <= last && held > 0 && offset >= fileSize) endLine();
  return lines.length > line - first ? { first, lines, modifiedMs } : undefined;
}
