import { constants, createReadStream } from 'node:fs';
import { chmod, link, lstat, lutimes, mkdir, mkdtemp, open, realpath, rename, rm, stat, symlink, unlink, utimes, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { DebugkitError } from '../../../core/errors.js';
import { BundleError } from '../errors.js';
import { containment } from './contain.js';
import { TarFormatError, TarReader, type TarHeader, type TarSink } from './tar.js';

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
 *   complete (replacing an existing `dest`), and removed on any failure.
 *
 * Errors: BundleNotFoundError (no archive), BundleExtractionError ("Failed to extract bundle: ..."),
 * StorageError (disk full).
 */
export async function extractBundle(
  archive: string,
  dest: string,
  options: ExtractOptions = {},
  onProgress?: ExtractProgress,
): Promise<ExtractResult> {
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
    await rm(tmp, { recursive: true, force: true }).catch(() => {});
    throw mapError(err);
  }
}

interface Limits {
  maxBytes: number;
  maxEntries: number;
  maxEntryBytes: number;
}

async function extractInto(archive: string, root: string, limits: Limits, signal: AbortSignal | undefined, onProgress?: ExtractProgress): Promise<ExtractResult> {
  const head = await readHead(archive, 512);
  const gzip = head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b;
  if (!gzip && !(head.length >= 262 && head.toString('latin1', 257, 262) === 'ustar')) {
    throw extractionError('not a gzip-compressed tar archive (expected a .tar.gz or .tgz support bundle)');
  }
  const extractor = new Extractor(root, limits, onProgress);
  const reader = new TarReader(extractor);
  // Everything the tar stream may hold: the data limit, a header and padding per entry, pax records.
  const maxStream = limits.maxBytes + (limits.maxEntries + 2) * 1024 + 64 * 1024 * 1024;
  let streamed = 0;

  const input = createReadStream(archive, { highWaterMark: 1024 * 1024 });
  const source = gzip ? pipeline(input, createGunzip({ chunkSize: 256 * 1024 }), () => {}) : input;
  try {
    for await (const chunk of source as AsyncIterable<Buffer>) {
      if (signal?.aborted) throw new BundleError('BundleExtractionError', 'Failed to extract bundle: cancelled');
      streamed += chunk.length;
      if (streamed > maxStream) throw extractor.tooBig();
      if (await reader.push(chunk)) break;
    }
  } finally {
    source.destroy();
    input.destroy();
    await extractor.closeCurrent();
  }
  reader.finish();
  await extractor.finish();
  return extractor.result();
}

class Extractor implements TarSink {
  entries = 0;
  /** Bytes of entry data read (written or skipped): what the limits count. */
  private consumed = 0;
  private written = 0;
  private readonly skipped: SkippedEntry[] = [];
  private skippedCount = 0;
  private readonly symlinks: { rel: string; target: string; mtime: number }[] = [];
  private readonly dirs = new Map<string, { mode: number; mtime: number }>();
  private current: { fh: FileHandle; rel: string; mode: number; mtime: number } | null = null;

  constructor(
    private readonly root: string,
    private readonly limits: Limits,
    private readonly onProgress?: ExtractProgress,
  ) {}

  tooBig(): BundleError {
    return extractionError(`the archive expands to more than ${formatBytes(this.limits.maxBytes)} (the size limit): refusing it as a possible decompression bomb`);
  }

  async onEntry(h: TarHeader): Promise<void> {
    this.entries++;
    if (this.entries > this.limits.maxEntries) {
      throw extractionError(`the archive has more than ${this.limits.maxEntries} entries (the entry limit): refusing it as a possible tar bomb`);
    }
    if (h.type === 'file' || h.type === 'other') {
      if (h.size > this.limits.maxEntryBytes) {
        throw extractionError(`entry '${h.path}' is ${formatBytes(h.size)}, over the per-file limit of ${formatBytes(this.limits.maxEntryBytes)}`);
      }
      this.consumed += h.size;
      if (this.consumed > this.limits.maxBytes) throw this.tooBig();
    }

    const rel = safeRelative(h.path, 'entry');
    if (rel === '') return; // the archive's own root ("./")
    const abs = path.join(this.root, rel);
    switch (h.type) {
      case 'directory':
        if (await ensureDir(abs)) this.dirs.set(rel, { mode: h.mode, mtime: h.mtime });
        else this.skip(rel, 'a file of that name is in the way');
        return;
      case 'file': {
        if (!(await ensureDir(path.dirname(abs)))) return this.skip(rel, 'its parent is not a directory');
        if (!(await clearForFile(abs))) return this.skip(rel, 'a directory of that name exists');
        const fh = await open(abs, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
        this.current = { fh, rel, mode: h.mode, mtime: h.mtime };
        return;
      }
      case 'hardlink': {
        if (h.linkpath === '') return this.skip(rel, 'hard link without a target');
        const targetRel = safeRelative(h.linkpath, `hard link '${h.path}' target`);
        const targetAbs = path.join(this.root, targetRel);
        const st = await lstat(targetAbs).catch(() => null);
        if (!st?.isFile()) return this.skip(rel, `hard link to '${h.linkpath}', which is not a file extracted earlier from this archive`);
        if (!(await ensureDir(path.dirname(abs)))) return this.skip(rel, 'its parent is not a directory');
        if (!(await clearForFile(abs))) return this.skip(rel, 'a directory of that name exists');
        await link(targetAbs, abs);
        this.progress();
        return;
      }
      case 'symlink': {
        if (h.linkpath === '') return this.skip(rel, 'symbolic link without a target');
        if (path.posix.isAbsolute(h.linkpath)) return this.skip(rel, `symbolic link to the absolute path '${h.linkpath}', outside the bundle`);
        const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(rel), h.linkpath));
        if (resolved === '..' || resolved.startsWith('../')) return this.skip(rel, `symbolic link to '${h.linkpath}', outside the bundle`);
        this.symlinks.push({ rel, target: h.linkpath, mtime: h.mtime });
        return;
      }
      case 'char':
      case 'block':
        return this.skip(rel, 'device file');
      case 'fifo':
        return this.skip(rel, 'FIFO');
      default:
        return this.skip(rel, `unsupported entry type '${h.flag}'`);
    }
  }

  async onData(chunk: Buffer): Promise<void> {
    if (!this.current) return; // a skipped entry's data
    await this.current.fh.write(chunk);
    this.written += chunk.length;
  }

  async onEnd(): Promise<void> {
    const cur = this.current;
    if (!cur) return;
    this.current = null;
    try {
      await cur.fh.chmod((cur.mode & 0o777) | 0o600);
      await cur.fh.utimes(cur.mtime, cur.mtime);
    } finally {
      await cur.fh.close();
    }
    this.progress();
  }

  async closeCurrent(): Promise<void> {
    const cur = this.current;
    this.current = null;
    if (cur) await cur.fh.close().catch(() => {});
  }

  /** After the last entry: symbolic links (checked twice), then directory modes and times. */
  async finish(): Promise<void> {
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
    for (let changed = true; changed; ) {
      changed = false;
      const next: string[] = [];
      for (const rel of live) {
        if (containment(realRoot, path.join(this.root, rel)).kind !== 'outside') {
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

  private skip(rel: string, reason: string): void {
    this.skippedCount++;
    if (this.skipped.length < MAX_SKIPPED_LISTED) this.skipped.push({ path: rel, reason });
    this.progress();
  }

  private progress(): void {
    this.onProgress?.(this.written, this.entries);
  }
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

async function ensureDir(abs: string): Promise<boolean> {
  try {
    await mkdir(abs, { recursive: true });
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' || code === 'ENOTDIR') return false;
    throw err;
  }
}

/** Removes a file or link already at `abs` (a later entry replaces an earlier one, as in tar). */
async function clearForFile(abs: string): Promise<boolean> {
  const st = await lstat(abs).catch(() => null);
  if (!st) return true;
  if (st.isDirectory()) return false;
  await unlink(abs);
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
  await rm(old, { recursive: true, force: true });
}

function extractionError(detail: string, cause?: unknown): BundleError {
  return new BundleError('BundleExtractionError', `Failed to extract bundle: ${detail}`, cause === undefined ? undefined : { cause });
}

function mapError(err: unknown): Error {
  if (err instanceof BundleError) return err;
  if (err instanceof TarFormatError) return extractionError(err.message, err);
  if (err instanceof DebugkitError) return extractionError(err.message, err);
  const e = err as NodeJS.ErrnoException;
  if (typeof e?.code === 'string' && (e.code.startsWith('Z_') || e.code === 'ERR_ZLIB_INITIALIZATION_FAILED' || /incorrect header check|unexpected end of file|invalid (block|distance|stored|code)/.test(e.message))) {
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
