import { closeSync, constants, createReadStream, fchmodSync, futimesSync, linkSync, lstatSync, mkdirSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { chmod, lstat, lutimes, mkdir, mkdtemp, open, realpath, rename, stat, symlink, unlink, utimes } from 'node:fs/promises';
import { removeTree } from '../../../core/remove-tree.js';
import path from 'node:path';
import { pipeline } from 'node:stream';
import { createGunzip, type ZlibOptions } from 'node:zlib';
import { DebugkitError } from '../../../core/errors.js';
import { BundleError } from '../errors.js';
import { containment } from '../../../core/paths.js';
import { TimeSlice } from '../../../core/wait.js';
import type { ReadEntry } from 'tar';

export const GiB = 1024 * 1024 * 1024;

export interface ExtractOptions {
  /** Total bytes of file data the archive may expand to. Default 4 GiB. */
  maxBytes?: number;
  /** Entries (files, directories, links, and skipped ones) the archive may hold. Default 200,000. */
  maxEntries?: number;
  /** Bytes one file may have. Default 2 GiB. */
  maxEntryBytes?: number;
  signal?: AbortSignal;
}

export interface SkippedEntry {
  path: string;
  reason: string;
}

export interface ExtractResult {
  /** Entries read from the archive (written or skipped). */
  entries: number;
  /** Bytes of file data written. */
  bytes: number;
  /** Entries not extracted and why (devices, FIFOs, links leaving the bundle...), at most 100 listed. */
  skipped: SkippedEntry[];
  skippedCount: number;
}

export type ExtractProgress = (bytes: number, entries: number) => void;

export const DEFAULT_EXTRACT_LIMITS = { maxBytes: 4 * GiB, maxEntries: 200_000, maxEntryBytes: 2 * GiB } as const;

const MAX_SKIPPED_LISTED = 100;

/**
 * Extracts a .tar.gz (or plain .tar) support bundle into `dest`, safely:
 *
 * - member names are made relative (a leading `/` is dropped, as GNU tar does); a name with a `..`
 *   component refuses the whole archive, so nothing is ever written outside `dest`;
 * - symbolic links are created only after every file is written (so no file is ever written through
 *   one), only when their target stays inside the bundle (absolute targets and ones climbing out are
 *   skipped), and every created link is checked again with realpath at the end;
 * - hard links must name a regular file already extracted from the same archive (`..` refuses it);
 * - device files and FIFOs are skipped, as are unknown entry types;
 * - the limits bound the total size, each file's size and the entry count (tar bombs and
 *   decompression bombs stop early), and anything over a limit aborts the extraction;
 * - everything goes to a temporary directory next to `dest` that is renamed into place only when
 *   complete (replacing an existing `dest`), and removed on any failure;
 * - the event loop keeps turning: the files are made with synchronous calls (each is short), but the
 *   archive is fed to them in pieces and the work stops for other requests whenever its time slice is
 *   spent; removals (a refused extraction, a replaced `dest`) are asynchronous and a few calls at a time.
 *
 * Errors: BundleNotFoundError (no archive), BundleExtractionError ("Failed to extract bundle: ..."),
 * StorageError (disk full).
 */
export async function extractBundle(archive: string, dest: string, options: ExtractOptions = {}, onProgress?: ExtractProgress): Promise<ExtractResult> {
  const limits = {
    maxBytes: options.maxBytes ?? DEFAULT_EXTRACT_LIMITS.maxBytes,
    maxEntries: options.maxEntries ?? DEFAULT_EXTRACT_LIMITS.maxEntries,
    maxEntryBytes: options.maxEntryBytes ?? DEFAULT_EXTRACT_LIMITS.maxEntryBytes,
  };
  let info;
  try {
    info = await stat(archive);
  } catch (err) {
    throw new BundleError('BundleNotFoundError', `Bundle archive not found: ${archive}`, { cause: err });
  }
  if (!info.isFile()) throw extractionError(`${archive} is not a file (give a .tar.gz or .tgz support bundle)`);

  const target = path.resolve(dest);
  const parent = path.dirname(target);
  let tmp: string;
  try {
    await mkdir(parent, { recursive: true });
    tmp = await mkdtemp(path.join(parent, `.${path.basename(target)}.extract-`));
  } catch (err) {
    throw mapError(err);
  }
  try {
    const result = await extractInto(archive, tmp, limits, options.signal, onProgress);
    await moveIntoPlace(tmp, target);
    return result;
  } catch (err) {
    await removeTree(tmp).catch(() => {});
    throw mapError(err);
  }
}

interface Limits {
  maxBytes: number;
  maxEntries: number;
  maxEntryBytes: number;
}

/**
 * Output in 256 KiB chunks, up to 4 MiB of them buffered: gunzip keeps inflating on the thread pool
 * while this thread writes files (with the default 16 KiB buffer it waits for every chunk to be taken).
 * zlib passes the stream options on to its Transform, though its type does not say so.
 */
const GUNZIP_OPTIONS = { chunkSize: 256 * 1024, readableHighWaterMark: 4 * 1024 * 1024 } as ZlibOptions;

/**
 * The tar stream goes to the parser (which makes the files as it reads them) a piece at a time, and
 * between pieces the work gives way to others once its slice (SLICE_MS) is spent. Before, a whole
 * buffered 4 MiB went at once: 4,096 one-byte files, 0.2-0.25 s of open/write/close without a turn.
 * A file costs 50-300 us (an open of a long path on a busy host; 32 in a 64 KiB piece took 10 ms,
 * up to 140 ms), a MiB of data far less: the piece halves while one takes over PIECE_MS and doubles
 * while one takes under a quarter of it, between 4 KiB (4 small files, 8 entries without data) and 1 MiB.
 */
const PIECE_MIN = 4 * 1024;
const PIECE_MAX = 1024 * 1024;
const PIECE_MS = 2;
const SLICE_MS = 10;

async function extractInto(archive: string, root: string, limits: Limits, signal: AbortSignal | undefined, onProgress?: ExtractProgress): Promise<ExtractResult> {
  const head = await readHead(archive, 512);
  const gzip = head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b;
  if (!gzip && !(head.length >= 262 && head.toString('latin1', 257, 262) === 'ustar')) {
    throw extractionError('not a gzip-compressed tar archive (expected a .tar.gz or .tgz support bundle)');
  }
  const extractor = new Extractor(root, limits, onProgress);
  // The tar package reads the headers (ustar, GNU, pax); every decision is the Extractor's. It is
  // fed already decompressed bytes: Node's gunzip runs on the thread pool (the other core) while
  // this thread parses and writes, the way `tar -xzf` pipes gzip into tar.
  let failure: unknown = null;
  const fail = (err: unknown): void => {
    failure ??= err;
  };
  // The tar package loads with the first archive extracted, not at start.
  const { Parser } = await import('tar');
  const parser = new Parser({
    onwarn: (code: string, message: string | Error) => fail(tarFormatError(code, message, extractor.entries)),
  });
  parser.on('error', (err: Error) => fail(tarFormatError((err as { tarCode?: string }).tarCode ?? '', err, extractor.entries)));
  parser.on('entry', (entry: ReadEntry) => {
    if (failure === null) {
      try {
        extractor.onEntry(entry);
        return;
      } catch (err) {
        fail(err);
      }
    }
    entry.resume();
  });
  parser.on('ignoredEntry', (entry: ReadEntry) => {
    if (failure !== null) return;
    try {
      extractor.onIgnored(entry);
    } catch (err) {
      fail(err);
    }
  });
  let eof = false;
  parser.on('eof', () => (eof = true));
  // Everything the tar stream may hold: the data limit, a header and padding per entry, pax records.
  const maxStream = limits.maxBytes + (limits.maxEntries + 2) * 1024 + 64 * 1024 * 1024;
  let streamed = 0;

  const input = createReadStream(archive, { highWaterMark: 1024 * 1024 });
  const source = gzip ? pipeline(input, createGunzip(GUNZIP_OPTIONS), () => {}) : input;
  const slice = new TimeSlice(SLICE_MS);
  let piece = PIECE_MIN;
  const cancelled = () => new BundleError('BundleExtractionError', 'Failed to extract bundle: cancelled');
  try {
    for await (const chunk of source as AsyncIterable<Buffer>) {
      if (signal?.aborted) throw cancelled();
      streamed += chunk.length;
      if (streamed > maxStream) throw extractor.tooBig();
      // The end-of-archive marker stops it: trailing bytes are ignored.
      for (let at = 0; at < chunk.length && !eof;) {
        const began = performance.now();
        parser.write(chunk.subarray(at, at + piece));
        at += piece;
        const took = performance.now() - began;
        if (took > PIECE_MS) piece = Math.max(PIECE_MIN, piece / 2);
        else if (took < PIECE_MS / 4) piece = Math.min(PIECE_MAX, piece * 2);
        if (failure !== null) throw failure;
        await slice.pause();
        if (signal?.aborted) throw cancelled();
      }
      if (eof) break;
    }
    if (!eof) parser.end();
    if (failure !== null) throw failure;
    if (extractor.entries === 0) throw extractionError('the archive is empty');
  } finally {
    source.destroy();
    input.destroy();
    extractor.closeCurrent();
  }
  await extractor.finish(slice);
  return extractor.result();
}

/** The tar package's warnings (it goes on after them) and errors, as debugkit's messages: any of them refuses the archive. */
function tarFormatError(code: string, message: string | Error, entries: number): BundleError {
  const text = message instanceof Error ? message.message : message;
  if (/checksum failure/.test(text)) {
    return extractionError(entries === 0 ? 'not a tar archive (bad header checksum)' : `corrupt tar header after ${entries} entries (bad checksum)`);
  }
  if (/^Truncated input|TAR_BAD_ARCHIVE: Truncated/.test(text)) return extractionError('unexpected end of archive (the file is truncated)');
  if (/Unrecognized archive format/.test(text)) return extractionError(entries === 0 ? 'the archive is empty or not a tar archive' : 'no valid entry in the archive');
  return extractionError(`invalid tar archive (${code ? `${code}: ` : ''}${text.replace(/^TAR_[A-Z_]+: /, '')}${entries > 0 ? `, after ${entries} entries` : ''})`);
}

/** The tar package's entry types that carry file data debugkit writes. */
const FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);

class Extractor {
  entries = 0;
  /** Bytes of entry data read (written or skipped): what the limits count. */
  private consumed = 0;
  private written = 0;
  private readonly skipped: SkippedEntry[] = [];
  private skippedCount = 0;
  private readonly symlinks: { rel: string; target: string; mtime: number }[] = [];
  private readonly dirs = new Map<string, { mode: number; mtime: number }>();
  /** Directories (relative) known to exist as real directories: no mkdir for each file. */
  private readonly made = new Set<string>(['']);
  private current: { fd: number; rel: string; mode: number; mtime: number } | null = null;
  private lastProgress = 0;
  /** Read once (process.umask() without an argument changes nothing). */
  private readonly umask = process.umask();

  constructor(
    private readonly root: string,
    private readonly limits: Limits,
    private readonly onProgress?: ExtractProgress,
  ) {}

  tooBig(): BundleError {
    return extractionError(`the archive expands to more than ${formatBytes(this.limits.maxBytes)} (the size limit): refusing it as a possible decompression bomb`);
  }

  private count(path: string, size: number, carriesData: boolean): void {
    this.entries++;
    if (this.entries > this.limits.maxEntries) {
      throw extractionError(`the archive has more than ${this.limits.maxEntries} entries (the entry limit): refusing it as a possible tar bomb`);
    }
    if (carriesData) {
      if (size > this.limits.maxEntryBytes) {
        throw extractionError(`entry '${path}' is ${formatBytes(size)}, over the per-file limit of ${formatBytes(this.limits.maxEntryBytes)}`);
      }
      this.consumed += size;
      if (this.consumed > this.limits.maxBytes) throw this.tooBig();
    }
  }

  /** An entry the tar package passes over itself (unknown types, oversized pax records): counted, skipped. */
  onIgnored(entry: ReadEntry): void {
    if (entry.meta) throw extractionError(`a ${/Long/.test(entry.type) ? 'GNU long name' : 'pax'} record of ${entry.size} bytes is too large`);
    this.count(entry.path, entry.size, true);
    const rel = safeRelative(entry.path, 'entry');
    if (rel !== '') this.skip(rel, `unsupported entry type '${rawTypeFlag(entry)}'`);
  }

  /** Synchronous on purpose: a support bundle is thousands of small files, and a trip through the thread pool per syscall costs more than the syscall. */
  onEntry(entry: ReadEntry): void {
    const isFile = FILE_TYPES.has(entry.type);
    this.count(entry.path, entry.size, isFile || entry.remain > 0);
    const rel = safeRelative(entry.path, 'entry');
    const mode = (entry.mode ?? 0o644) & 0o7777;
    const mtime = entry.mtime ? Math.floor(entry.mtime.getTime() / 1000) : 0;
    if (rel === '') return void entry.resume(); // the archive's own root ("./")
    const abs = path.join(this.root, rel);
    switch (entry.type) {
      case 'Directory':
      case 'GNUDumpDir':
        if (this.ensureDir(rel)) this.dirs.set(rel, { mode, mtime });
        else this.skip(rel, 'a file of that name is in the way');
        return void entry.resume();
      case 'File':
      case 'OldFile':
      case 'ContiguousFile': {
        if (!this.ensureDir(parentOf(rel))) return this.skipData(entry, rel, 'its parent is not a directory');
        const fd = openForWrite(abs, (mode & 0o777) | 0o600);
        if (fd === null) return this.skipData(entry, rel, 'a directory of that name exists');
        const cur = { fd, rel, mode, mtime };
        this.current = cur;
        entry.on('data', (chunk: Buffer) => {
          if (this.current !== cur) return;
          writeAll(fd, chunk);
          this.written += chunk.length;
        });
        entry.on('end', () => this.endFile(cur));
        return;
      }
      case 'Link': {
        entry.resume();
        const linkpath = entry.linkpath ?? '';
        if (linkpath === '') return this.skip(rel, 'hard link without a target');
        const targetRel = safeRelative(linkpath, `hard link '${entry.path}' target`);
        const targetAbs = path.join(this.root, targetRel);
        const st = lstatSync(targetAbs, { throwIfNoEntry: false });
        if (!st?.isFile()) return this.skip(rel, `hard link to '${linkpath}', which is not a file extracted earlier from this archive`);
        if (!this.ensureDir(parentOf(rel))) return this.skip(rel, 'its parent is not a directory');
        if (!clearForFile(abs)) return this.skip(rel, 'a directory of that name exists');
        linkSync(targetAbs, abs);
        this.progress();
        return;
      }
      case 'SymbolicLink': {
        entry.resume();
        const linkpath = entry.linkpath ?? '';
        if (linkpath === '') return this.skip(rel, 'symbolic link without a target');
        if (path.posix.isAbsolute(linkpath)) return this.skip(rel, `symbolic link to the absolute path '${linkpath}', outside the bundle`);
        const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(rel), linkpath));
        if (resolved === '..' || resolved.startsWith('../')) return this.skip(rel, `symbolic link to '${linkpath}', outside the bundle`);
        this.symlinks.push({ rel, target: linkpath, mtime });
        return;
      }
      case 'CharacterDevice':
      case 'BlockDevice':
        return this.skipData(entry, rel, 'device file');
      case 'FIFO':
        return this.skipData(entry, rel, 'FIFO');
      default:
        return this.skipData(entry, rel, `unsupported entry type '${rawTypeFlag(entry)}'`);
    }
  }

  private endFile(cur: { fd: number; rel: string; mode: number; mtime: number }): void {
    if (this.current !== cur) return;
    this.current = null;
    try {
      // Created with this mode already; only what the umask took away needs a chmod.
      const want = (cur.mode & 0o777) | 0o600;
      if ((want & ~this.umask) !== want) fchmodSync(cur.fd, want);
      futimesSync(cur.fd, cur.mtime, cur.mtime);
    } finally {
      closeSync(cur.fd);
    }
    this.progress();
  }

  /** Makes `rel` (and its parents) a directory; false when a file is in the way. No symlink exists yet while files are written. */
  private ensureDir(rel: string): boolean {
    if (this.made.has(rel)) return true;
    try {
      mkdirSync(path.join(this.root, rel), { recursive: true });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST' || code === 'ENOTDIR') return false;
      throw err;
    }
    for (let r = rel; r !== '' && !this.made.has(r); r = parentOf(r)) this.made.add(r);
    return true;
  }

  closeCurrent(): void {
    const cur = this.current;
    this.current = null;
    if (cur) {
      try {
        closeSync(cur.fd);
      } catch {
        /* already failing */
      }
    }
  }

  /** After the last entry: symbolic links (checked twice), then directory modes and times. `slice`: the extraction's share of the loop (each check is synchronous). */
  async finish(slice: TimeSlice): Promise<void> {
    const created: string[] = [];
    for (const { rel, target, mtime } of this.symlinks) {
      const abs = path.join(this.root, rel);
      const why = await this.prepareLinkLocation(rel);
      if (why) {
        this.skip(rel, why);
        continue;
      }
      await symlink(target, abs);
      await lutimes(abs, mtime, mtime).catch(() => {});
      created.push(rel);
    }
    // A link can pass the lexical check yet leave the bundle through another link (a/b -> x/../..
    // where x is itself a link); resolve each for real and drop any that escape, until none do.
    // (Dangling links that stay are harmless: the file tools resolve every path when used.)
    const realRoot = await realpath(this.root);
    let live = created;
    for (let changed = true; changed;) {
      changed = false;
      const next: string[] = [];
      for (const rel of live) {
        const escapes = containment(realRoot, path.join(this.root, rel)).kind === 'outside';
        await slice.pause();
        if (!escapes) {
          next.push(rel);
          continue;
        }
        await unlink(path.join(this.root, rel)).catch(() => {});
        this.skip(rel, 'symbolic link that resolves outside the bundle');
        changed = true;
      }
      live = next;
    }
    for (const [rel, { mode, mtime }] of this.dirs) {
      const abs = path.join(this.root, rel);
      await chmod(abs, (mode & 0o777) | 0o700).catch(() => {});
      await utimes(abs, mtime, mtime).catch(() => {});
    }
    this.onProgress?.(this.written, this.entries);
  }

  /** Makes the link's parent directories, refusing to go through a symbolic link; clears the spot. */
  private async prepareLinkLocation(rel: string): Promise<string | null> {
    const parts = rel.split('/');
    let dir = this.root;
    for (const part of parts.slice(0, -1)) {
      dir = path.join(dir, part);
      const st = await lstat(dir).catch(() => null);
      if (!st) await mkdir(dir);
      else if (st.isSymbolicLink()) return 'its parent directory is a symbolic link';
      else if (!st.isDirectory()) return 'its parent is not a directory';
    }
    const abs = path.join(this.root, rel);
    const st = await lstat(abs).catch(() => null);
    if (st?.isDirectory()) return 'a directory of that name exists';
    if (st) await unlink(abs);
    return null;
  }

  result(): ExtractResult {
    return { entries: this.entries, bytes: this.written, skipped: this.skipped, skippedCount: this.skippedCount };
  }

  private skipData(entry: ReadEntry, rel: string, reason: string): void {
    entry.resume();
    this.skip(rel, reason);
  }

  private skip(rel: string, reason: string): void {
    this.skippedCount++;
    if (this.skipped.length < MAX_SKIPPED_LISTED) this.skipped.push({ path: rel, reason });
    this.progress();
  }

  /** At most every 64 entries: the callback is for a progress display, not per file. */
  private progress(): void {
    if (!this.onProgress || this.entries - this.lastProgress < 64) return;
    this.lastProgress = this.entries;
    this.onProgress(this.written, this.entries);
  }
}

function parentOf(rel: string): string {
  const i = rel.lastIndexOf('/');
  return i < 0 ? '' : rel.slice(0, i);
}

/** The header's type flag as written (for messages about types debugkit does not extract). */
function rawTypeFlag(entry: ReadEntry): string {
  const key = entry.header.typeKey;
  return key === 'Unsupported' ? String.fromCharCode(entry.header.block?.[156] ?? 0x3f) : key;
}

/**
 * Creates `abs` for writing, never following a link and never reusing what is there: an earlier
 * file or link of that name is replaced (a later entry wins, as in tar); null when a directory is there.
 */
function openForWrite(abs: string, mode: number): number | null {
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  try {
    return openSync(abs, flags, mode);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  if (!clearForFile(abs)) return null;
  return openSync(abs, flags, mode);
}

function writeAll(fd: number, chunk: Buffer): void {
  for (let off = 0; off < chunk.length;) off += writeSync(fd, chunk, off, chunk.length - off);
}

/**
 * A member name made relative to the extraction root: leading `/` and `.` components dropped,
 * `..` refused (the archive is refused, not just the entry: no real support bundle has one).
 */
function safeRelative(name: string, what: string): string {
  const parts = name.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) throw extractionError(`${what} '${name}' has a '..' path component that would escape the bundle directory`);
  return parts.join('/');
}

/** Removes a file or link already at `abs` (a later entry replaces an earlier one, as in tar). */
function clearForFile(abs: string): boolean {
  const st = lstatSync(abs, { throwIfNoEntry: false });
  if (!st) return true;
  if (st.isDirectory()) return false;
  unlinkSync(abs);
  return true;
}

async function readHead(file: string, n: number): Promise<Buffer> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.alloc(n);
    const { bytesRead } = await fh.read(buf, 0, n, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** Renames the finished extraction onto `dest`, replacing an existing one (moved aside first). */
async function moveIntoPlace(tmp: string, dest: string): Promise<void> {
  try {
    await rename(tmp, dest);
    return;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST' && code !== 'ENOTDIR' && code !== 'EISDIR') throw err;
  }
  const old = path.join(path.dirname(dest), `.${path.basename(dest)}.old-${process.pid}-${Date.now()}`);
  await rename(dest, old);
  try {
    await rename(tmp, dest);
  } catch (err) {
    await rename(old, dest).catch(() => {});
    throw err;
  }
  await removeTree(old);
}

function extractionError(detail: string, cause?: unknown): BundleError {
  return new BundleError('BundleExtractionError', `Failed to extract bundle: ${detail}`, cause === undefined ? undefined : { cause });
}

function mapError(err: unknown): Error {
  if (err instanceof BundleError) return err;
  if (err instanceof DebugkitError) return extractionError(err.message, err);
  const e = err as NodeJS.ErrnoException;
  if (
    typeof e?.code === 'string' &&
    (e.code.startsWith('Z_') || e.code === 'ERR_ZLIB_INITIALIZATION_FAILED' || /incorrect header check|unexpected end of file|invalid (block|distance|stored|code)/.test(e.message))
  ) {
    return extractionError(`corrupt gzip data (${e.message})`, err);
  }
  if (e?.code === 'ENOSPC' || e?.code === 'EDQUOT') {
    return new BundleError('StorageError', `Insufficient disk space for bundle extraction (${e.message})`, { cause: err });
  }
  return extractionError(e?.message ?? String(err), err);
}

export function formatBytes(n: number): string {
  if (n >= GiB) return `${+(n / GiB).toFixed(2)} GiB`;
  if (n >= 1024 * 1024) return `${+(n / 1024 / 1024).toFixed(2)} MiB`;
  if (n >= 1024) return `${+(n / 1024).toFixed(2)} KiB`;
  return `${n} bytes`;
}
