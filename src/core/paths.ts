import { chmodSync, closeSync, constants, fstatSync, lstatSync, mkdirSync, mkdtempSync, openSync, readlinkSync, realpathSync, rmSync, type Stats } from 'node:fs';
import { open, readdir, rm, statfs, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DebugkitError } from './errors.js';
import { leftByGone, ownMark } from './process.js';
import { runBounded } from './run.js';
import { findOnPath } from './which.js';

/**
 * Resolves a client-supplied path against `root` and proves it stays inside: NUL bytes refused,
 * `..` and symlinks resolved (realpath) before the check, and `/root-evil` is not inside `/root`.
 * The target must exist unless `mustExist` is false, in which case its nearest existing parent
 * is resolved instead (see `leads`).
 */
export function resolveContained(root: string, userPath: string, { mustExist = true, what = 'path' } = {}): string {
  const { realRoot, candidate } = clientPath(root, userPath, what);
  const where = leads(candidate);
  const real = where.real;
  if (!where.exists) {
    if (mustExist) {
      const err = realpathError(candidate);
      // Say "outside" rather than "missing" for escapes (also through a symlink), so probing does not reveal what exists.
      if (!isInside(realRoot, candidate) || !isInside(realRoot, real)) throw outside(what, userPath, realRoot);
      throw new DebugkitError('NOT_FOUND', `${what} not found: ${userPath} (resolved against ${realRoot})`, { cause: err });
    }
  }
  if (!isInside(realRoot, real)) throw outside(what, userPath, realRoot);
  return real;
}

/** A client path's absolute form under the root's real path; empty paths and NUL bytes refused. */
function clientPath(root: string, userPath: string, what: string): { realRoot: string; candidate: string } {
  if (typeof userPath !== 'string' || userPath.length === 0) {
    throw new DebugkitError('INVALID_ARGUMENT', `${what} is empty: give a path relative to the workspace root ${root}`);
  }
  if (userPath.includes('\0')) throw new DebugkitError('INVALID_ARGUMENT', `${what} contains a NUL byte`);
  const realRoot = realpathSync.native(root);
  const candidate = path.resolve(realRoot, userPath);
  if (candidate.length >= PATH_MAX || Buffer.byteLength(candidate) >= PATH_MAX) {
    throw new DebugkitError('INVALID_ARGUMENT', `${what} is too long: ${Buffer.byteLength(candidate)} bytes under the workspace root, and a path is at most ${PATH_MAX - 1} (Linux's PATH_MAX)`);
  }
  return { realRoot, candidate };
}

export function isInside(root: string, target: string): boolean {
  const rel = path.relative(root, target);
  return rel === '' || (!rel.startsWith(`..${path.sep}`) && rel !== '..' && !path.isAbsolute(rel));
}

/** Linux's PATH_MAX: the bytes of the longest path the kernel resolves, with its NUL. */
export const PATH_MAX = 4096;

export type Containment = { kind: 'inside'; real: string } | { kind: 'outside' } | { kind: 'missing' };

/**
 * Where `abs` really leads, judged against `realRoot` (itself a real path): the one containment
 * check for client paths (resolveContained) and for files served from a bundle (read_file, pod
 * logs, extraction). 'missing' when it does not resolve (missing, dangling link, loop) but what
 * exists of it stays inside; 'outside' when the path, or what a dangling link on it points to,
 * leads out of the root, whether or not the end exists (so probing reveals nothing).
 */
export function containment(realRoot: string, abs: string): Containment {
  // No file has a longer path (the kernel refuses one: ENAMETOOLONG), and walking one costs a step
  // per component: a read_file of a 4 MiB path held the event loop ~155 ms (attack q2).
  if (abs.length >= PATH_MAX || Buffer.byteLength(abs) >= PATH_MAX) return { kind: 'missing' };
  const where = leads(abs);
  if (!isInside(realRoot, where.real)) return { kind: 'outside' };
  return where.exists ? { kind: 'inside', real: where.real } : { kind: 'missing' };
}

interface Lead {
  real: string;
  exists: boolean;
}

/**
 * Where `abs` leads as the kernel walks it. An existing path is its realpath(3) (the kernel's,
 * not fs.realpathSync's JavaScript walk, which reads a link target's `..` lexically: `x -> d/..`
 * with `d` a link is not `x -> .`). A missing path is its nearest existing ancestor's real path
 * with the rest appended, and a dangling link is followed to where it points, component by
 * component like the kernel, so a not-yet-existing file behind a link to outside is outside.
 */
function leads(abs: string, hops = { n: 0 }): Lead {
  try {
    return { real: realpathSync.native(abs), exists: true };
  } catch {
    // missing, dangling, a loop, or under one of those
  }
  const parent = path.dirname(abs);
  if (parent === abs) return { real: abs, exists: false };
  const up = leads(parent, hops);
  const here = path.join(up.real, path.basename(abs));
  if (!up.exists) return { real: here, exists: false };
  let link: string;
  try {
    link = readlinkSync(here);
  } catch {
    return { real: here, exists: false }; // missing (not a link)
  }
  // A loop (or a chain longer than the kernel follows) cannot be opened anyway.
  if (++hops.n > 40) return { real: here, exists: false };
  let current = path.isAbsolute(link) ? '/' : up.real;
  for (const part of link.split('/')) {
    if (part === '' || part === '.') continue;
    current = part === '..' ? path.dirname(current) : leads(path.join(current, part), hops).real;
  }
  return { real: current, exists: false };
}

/** Why realpath(3) fails on a path `leads` found unresolvable (ENOENT, ELOOP, ENOTDIR): the cause of a NOT_FOUND. */
function realpathError(p: string): unknown {
  try {
    realpathSync.native(p);
    return undefined;
  } catch (err) {
    return err;
  }
}

/**
 * A file or directory opened and then proven inside a root: what the kernel says the descriptor
 * names (`/proc/self/fd/N`) is inside, so a link swapped in after the check cannot have been
 * followed. Read through `fd` (never the path again) and close it.
 */
export interface OpenedInside {
  kind: 'inside';
  fd: number;
  /** The opened file's real path, as the kernel names it now. */
  real: string;
  /** fstat of the descriptor: what was opened, not what the path names now. */
  stats: Stats;
}

export type OpenContainment = OpenedInside | { kind: 'outside' } | { kind: 'missing' };

export interface OpenInsideOptions {
  /** 'file': only a regular file; 'directory': only a directory; 'any' (default): either. */
  type?: 'file' | 'directory' | 'any';
}

/** Opens without following a link at the end, without waiting on a FIFO, closed on exec (libuv adds O_CLOEXEC). */
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
/** How often a path that changed between the check and the open is checked again. */
const OPEN_ATTEMPTS = 3;

/**
 * Whether `real`, a real path recorded earlier (a bundle's directory), still is one: it exists and
 * no component of it became a link since. A root is never resolved again when it is used: a writer
 * replacing the directory (or a parent) by a link to elsewhere would move the root with it, and
 * every check against it (attack 18o: a bundle directory swapped for a link to /etc, then
 * `read_file /shadow`). Used as a fixed string, openInside refuses what leads out of it.
 */
export function isStillReal(real: string): boolean {
  try {
    return realpathSync.native(real) === path.resolve(real);
  } catch {
    return false;
  }
}

/**
 * Check, open, then check what was opened: the one way a file under `realRoot` (a real path) is
 * opened for a client. `containment` finds where `abs` leads; its real path is opened with
 * O_NOFOLLOW (a last component swapped for a link fails), and the descriptor's own path, read from
 * /proc/self/fd, must be inside the root (a parent directory swapped for a link after the check
 * shows there). 'outside' when the path, or what was opened, leads out; 'missing' when it does not
 * resolve, is not of the asked `type`, or kept changing between check and open. Other open errors
 * (EACCES, EMFILE) are thrown.
 */
export function openInside(realRoot: string, abs: string, { type = 'any' }: OpenInsideOptions = {}): OpenContainment {
  for (let attempt = 0; attempt < OPEN_ATTEMPTS; attempt++) {
    const where = containment(realRoot, abs);
    if (where.kind !== 'inside') return where;
    // Not opened at all when it is something else (a FIFO, a device): opening has effects.
    const before = lstatSync(where.real, { throwIfNoEntry: false });
    if (!before) continue;
    if (!before.isSymbolicLink() && !fitsType(before, type)) return { kind: 'missing' };
    const opened = openVerified(realRoot, where.real, { type });
    // A link or a missing component where the check saw none: the path changed, check again.
    if (opened !== 'changed') return opened;
  }
  return { kind: 'missing' };
}

/**
 * The second half of openInside, for a path already known to name a file (or directory) without
 * links (a real path; a name a directory listing gave): opened without following a link at its
 * end (O_NOFOLLOW), without waiting on a FIFO, then judged by what the kernel says the descriptor
 * names (/proc/self/fd/N), which a parent directory swapped for a link cannot hide. 'changed' when
 * the open met a link, a missing name or a non-directory on the way.
 */
export function openVerified(realRoot: string, abs: string, { type = 'any' }: OpenInsideOptions = {}): OpenContainment | 'changed' {
  let fd: number;
  try {
    fd = openSync(abs, OPEN_FLAGS | (type === 'directory' ? constants.O_DIRECTORY : 0));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOENT' || code === 'ENOTDIR') return 'changed';
    throw err;
  }
  let opened: { real: string; stats: Stats };
  try {
    opened = { real: openedPath(fd), stats: fstatSync(fd) };
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  if (!isInside(realRoot, opened.real)) {
    closeSync(fd);
    return { kind: 'outside' };
  }
  if (!fitsType(opened.stats, type)) {
    closeSync(fd);
    return { kind: 'missing' };
  }
  return { kind: 'inside', fd, ...opened };
}

function fitsType(stats: Stats, type: 'file' | 'directory' | 'any'): boolean {
  return type === 'file' ? stats.isFile() : type === 'directory' ? stats.isDirectory() : stats.isFile() || stats.isDirectory();
}

/**
 * The path the kernel gives an open descriptor (readlink of /proc/self/fd/N): where the opened
 * file is, not where a path leads now. A file deleted since ends in " (deleted)".
 */
export function openedPath(fd: number): string {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch (err) {
    throw new DebugkitError('INTERNAL', `cannot read /proc/self/fd/${fd}: debugkit needs /proc to prove that what it opened is inside the root`, { cause: err });
  }
}

/**
 * A path that names the file open on `fd` in this process, for another process of the same user:
 * /proc/<pid>/fd/N. Opening it (or chdir to it) reaches the opened file itself (the kernel follows
 * the descriptor, not a name), so nothing swapped at the old path can be reached through it. Only
 * for a process that uses it as it is: one that canonicalizes paths with realpath(3) (gdb) reads
 * it back to the workspace path; see CheckedProgram.
 */
export function descriptorPath(fd: number): string {
  return `/proc/${process.pid}/fd/${fd}`;
}

/**
 * `openInside` for a client path: resolved against `root` as `resolveContained` does (same
 * errors: PATH_OUTSIDE_ROOT, NOT_FOUND, INVALID_ARGUMENT), then opened and checked.
 */
export function openContained(root: string, userPath: string, { what = 'path', type = 'any' }: { what?: string } & OpenInsideOptions = {}): OpenedInside {
  const { realRoot, candidate } = clientPath(root, userPath, what);
  const opened = openInside(realRoot, candidate, { type });
  if (opened.kind === 'inside') return opened;
  // As resolveContained: an escape is "outside" whether or not its end exists, so probing reveals nothing.
  if (opened.kind === 'outside' || !isInside(realRoot, candidate)) throw outside(what, userPath, realRoot);
  const kind = type === 'file' ? 'a file' : type === 'directory' ? 'a directory' : 'a file or directory';
  throw new DebugkitError('NOT_FOUND', `${what} not found: ${userPath} (resolved against ${realRoot}; it must be ${kind})`);
}

/** The biggest program debugkit copies for gdb (see CheckedProgram): past it, the operator closes the root to other users instead. */
export const MAX_PROGRAM_COPY_BYTES = 1024 * 1024 * 1024;
/**
 * The bytes of private copies (programs, their debug and dwz files; bytes written, holes not
 * counted) held at once: by one API key, and by the whole server. Tests lower them.
 */
export const copyBounds = { perKey: 4 * 2 ** 30, perServer: 16 * 2 ** 30 };
/** The share of the temporary directory's filesystem a copy must leave free. */
const FREE_SHARE_KEPT = 0.05;
/** What a copy reads at a time; a run of all-zero blocks of it stays a hole in the copy. */
const COPY_CHUNK = 1 << 20;
const HOLE_BLOCK = 64 * 1024;
const ZEROS = Buffer.alloc(HOLE_BLOCK);
/**
 * A file with at least this many bytes more than its blocks on disk hold has its data runs listed
 * by the kernel (SEEK_DATA, SEEK_HOLE) before it is copied, so its holes are never read (attack
 * 18w T3: three 1000 MiB sparse files were read in full, ~20 s for one open). Node has no lseek,
 * so python3 (an engine debugkit installs) lists them from the same open file, runListing.perCall runs
 * a call, each call going on from where the last stopped (attack 18y X1: the one call of 4,096 runs
 * left a 1000 MiB file of 4,096 4 KiB runs read whole past them, 985.8 MiB an open), up to
 * runListing.most in all: twice the runs of a 1 GiB file (MAX_PROGRAM_COPY_BYTES) of alternate
 * 4 KiB blocks of data and holes, so only a file system of blocks under 2 KiB reaches it; past it
 * the rest of the file is read as it is. That bounds the work: 16 calls, ~6 MB of their output.
 */
const LISTED_WHEN_HOLES = 16 * 2 ** 20;
/** The runs one call lists, and all calls for one file (tests lower them). */
export const runListing = { perCall: 16_384, most: 2 * (MAX_PROGRAM_COPY_BYTES / (8 * 1024)) };
const LIST_RUNS = `import errno, os, sys
at, size, most = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
runs = []
while at < size and len(runs) < most:
    try:
        start = os.lseek(0, at, os.SEEK_DATA)
    except OSError as e:
        if e.errno != errno.ENXIO:
            raise
        start = size
    if start >= size:
        at = size
        break
    end = min(os.lseek(0, start, os.SEEK_HOLE), size)
    runs.append("%d %d" % (start, end))
    at = end
print(at)
print("\\n".join(runs))
`;

/** What copies read of their sources (for tests): the bytes, in all. */
export const copyReads = { bytes: 0 };

/** The bytes of private copies held now: per key and in all (attack atk-r R2: 4 opens wrote 12 GB, unbounded). */
const held = { total: 0, byKey: new Map<string, number>() };

/** One CheckedProgram's copies: its directory, its key, and the bytes written into it. */
interface CopyAccount {
  dir: string;
  key: string;
  bytes: number;
}
/** The accounts of the private directories alive now, by directory (copyIntoPrivate finds a target's by its path). */
const accounts = new Map<string, CopyAccount>();

/**
 * Counts `bytes` more on `account` before they are written, or refuses with what bound it would
 * pass and how to free room. Synchronous, so concurrent copies cannot all pass one check.
 */
function charge(account: CopyAccount, bytes: number, what: string, { checkOnly = false } = {}): void {
  const ofKey = held.byKey.get(account.key) ?? 0;
  const free = 'close sessions (gdb close, debugger_detach) whose programs are copied to free room';
  if (ofKey + bytes > copyBounds.perKey) {
    throw new DebugkitError(
      'SESSION_LIMIT',
      `cannot copy ${what}: this API key's sessions already hold ${mib(ofKey)} MiB of private program copies, and a key may hold at most ${mib(copyBounds.perKey)} MiB; ${free}`,
    );
  }
  if (held.total + bytes > copyBounds.perServer) {
    throw new DebugkitError(
      'SESSION_LIMIT',
      `cannot copy ${what}: the server's sessions already hold ${mib(held.total)} MiB of private program copies, at most ${mib(copyBounds.perServer)} MiB; ${free}`,
    );
  }
  if (checkOnly) return;
  account.bytes += bytes;
  held.byKey.set(account.key, ofKey + bytes);
  held.total += bytes;
}

function release(account: CopyAccount): void {
  accounts.delete(account.dir);
  const left = (held.byKey.get(account.key) ?? 0) - account.bytes;
  if (left > 0) held.byKey.set(account.key, left);
  else held.byKey.delete(account.key);
  held.total -= account.bytes;
  account.bytes = 0;
}

const mib = (bytes: number) => Math.ceil(bytes / 2 ** 20);

/** What the private copies hold now (for tests and status): bytes written, in all and for `key`. */
export function heldCopyBytes(key?: string): number {
  return key === undefined ? held.total : (held.byKey.get(key) ?? 0);
}

/**
 * Copies the opened `source` (its first `size` bytes) to `target`, a new file in a private
 * directory of a CheckedProgram, keeping holes: a run of all-zero blocks is skipped, not written,
 * so a sparse file (1000 MiB with 16 KB on disk) stays one (Node's copyFile, FICLONE or not,
 * wrote it out in full: 3 GB for one open; attack atk-r R2). A file with many holes is read only
 * where the kernel says it holds data (dataRuns). Each written run is counted against the copy
 * bounds before it is written. Small reads and writes in the thread pool, so several copies at
 * once do not hold it for whole files.
 */
export async function copyIntoPrivate(source: FileHandle, size: number, target: string, what: string): Promise<void> {
  const account = [...accounts.values()].find((a) => target.startsWith(`${a.dir}/`));
  if (!account) throw new DebugkitError('INTERNAL', `${target} is not in a private copy directory of debugkit's`);
  const fs = await statfs(account.dir);
  const avail = fs.bavail * fs.bsize;
  const kept = fs.blocks * fs.bsize * FREE_SHARE_KEPT;
  const stats = await source.stat();
  const estimate = Math.min(size, stats.blocks * 512);
  // Refused before any byte is written when its blocks on disk would not fit.
  charge(account, estimate, what, { checkOnly: true });
  if (avail - estimate < kept) {
    throw new DebugkitError(
      'SESSION_LIMIT',
      `cannot copy ${what} (${mib(estimate)} MiB on disk): ${tmpdir()} has ${mib(avail)} MiB free and debugkit leaves at least ${mib(kept)} MiB of it; close sessions (gdb close, debugger_detach) or free space there`,
    );
  }
  const runs = size - stats.blocks * 512 >= LISTED_WHEN_HOLES ? await dataRuns(source, size) : [[0, size] as const];
  const out = await open(target, 'wx', 0o600);
  try {
    const buf = Buffer.allocUnsafe(COPY_CHUNK);
    for (const [from, to] of runs) await copyRun(source, out, buf, from, to, (bytes) => charge(account, bytes, what));
    await out.truncate(size);
  } finally {
    await out.close();
  }
}

/**
 * The runs of `source` (its first `size` bytes) that hold data, as [from, to) in order, asked of
 * the kernel; the whole file as one run when they cannot be listed (no python3, a file system
 * without SEEK_DATA). A copy reads these and skips what lies between: holes read as zeros, so a
 * write into one during the copy is no more missed than a write just after it.
 */
async function dataRuns(source: FileHandle, size: number): Promise<ReadonlyArray<readonly [number, number]>> {
  const python = findOnPath('python3');
  if (!python) return [[0, size]];
  const runs: Array<readonly [number, number]> = [];
  let at = 0;
  while (at < size && runs.length < runListing.most) {
    const listed = await listRuns(python, source, at, size, Math.min(runListing.perCall, runListing.most - runs.length));
    // Not listed, or listed going nowhere: the rest is read as it is.
    if (!listed || listed.stopped <= at) break;
    runs.push(...listed.runs);
    at = listed.stopped;
  }
  if (at < size) runs.push([at, size]);
  return runs;
}

/**
 * One call of LIST_RUNS: at most `most` runs of data from `at` on, and where it stopped (`size`
 * when no run is left); undefined when the child failed or its output is not ascending runs
 * between `at` and `size` (not trusted).
 */
async function listRuns(python: string, source: FileHandle, at: number, size: number, most: number): Promise<{ runs: Array<readonly [number, number]>; stopped: number } | undefined> {
  // A line is two offsets of at most size's digits; the output bound is what `most` lines take.
  const maxOutputChars = (most + 1) * (2 * String(size).length + 2);
  const listed = await runBounded({ command: python, args: ['-c', LIST_RUNS, String(at), String(size), String(most)], stdinFd: source.fd, timeoutMs: 10_000, maxOutputChars });
  if (listed.code !== 0 || listed.stdoutTruncated) return undefined;
  const [stopped, ...lines] = listed.stdout.trim().split('\n');
  const runs: Array<readonly [number, number]> = [];
  let last = at;
  for (const line of lines.filter((l) => l !== '')) {
    const [from, to] = line.split(' ').map(Number);
    if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || from < last || to <= from || to > size || runs.length >= most) return undefined;
    runs.push([from, to]);
    last = to;
  }
  const rest = Number(stopped);
  if (!Number.isSafeInteger(rest) || rest < last || rest > size) return undefined;
  return { runs, stopped: rest };
}

/** Copies [from, to) of `source` to the same place in `out`, runs of all-zero blocks left holes; `charge` counts each written run first. */
async function copyRun(source: FileHandle, out: FileHandle, buf: Buffer, from: number, to: number, charge: (bytes: number) => void): Promise<void> {
  for (let at = from; at < to;) {
    const { bytesRead } = await source.read(buf, 0, Math.min(COPY_CHUNK, to - at), at);
    if (bytesRead === 0) break;
    copyReads.bytes += bytesRead;
    // Each run of blocks that are not all zero, written where it was.
    for (let block = 0; block < bytesRead;) {
      const end = (start: number, zero: boolean) => {
        let b = start;
        while (b < bytesRead && isZero(buf, b, Math.min(b + HOLE_BLOCK, bytesRead)) === zero) b += HOLE_BLOCK;
        return Math.min(b, bytesRead);
      };
      const dataAt = end(block, true);
      if (dataAt >= bytesRead) break;
      const dataEnd = end(dataAt, false);
      charge(dataEnd - dataAt);
      await out.write(buf, dataAt, dataEnd - dataAt, at + dataAt);
      block = dataEnd;
    }
    at += bytesRead;
  }
}

function isZero(buf: Buffer, from: number, to: number): boolean {
  return buf.subarray(from, to).equals(ZEROS.subarray(0, to - from));
}

/**
 * A program checked and opened inside the root, for another process to load and run (gdb), by
 * `path`. When no user other than debugkit's own could make the file's name lead elsewhere
 * (`swappable`: no link on the way, no directory on it that others may write), `path` is the file
 * itself: whoever could swap it runs as debugkit's user and gains nothing by racing, and gdb runs
 * the program by its own name (argv[0], /proc/self/exe, a rebuild re-read at `run`). Otherwise
 * `path` is a private copy of the opened file (made from the descriptor, so it is the checked file
 * whatever the workspace path names by then), in a directory of its own (mode 0700), under the
 * program's own file name, copied in the thread pool (the event loop goes on meanwhile), holes
 * kept, at most MAX_PROGRAM_COPY_BYTES long, and counted with the debug files put beside it
 * against copyBounds.perKey and copyBounds.perServer until closed (copyIntoPrivate). gdb cannot
 * be handed the descriptor itself: it canonicalizes what it is given with realpath(3), which reads
 * /proc/<pid>/fd/N back to the workspace path, and opens that name again (strace shows it; under a
 * racing writer it then reads one file's symbols and runs another). The program's argv[0] and
 * /proc/self/exe name the copy. `close()` once the loading process is gone.
 */
export class CheckedProgram {
  private closed = false;

  private constructor(
    /** The real path that was checked and opened (what to show the client). */
    readonly real: string,
    /** What to hand the other process: the file itself, or its private copy. */
    readonly path: string,
    /** The copy's directory and the bytes it holds; undefined when `path` is the file itself. */
    private readonly account: CopyAccount | undefined,
    private readonly root: string,
    /** The opened file as it was: device, inode, size, change and modification times. */
    private readonly stamp: string,
    /** Whether it was opened with `copy`: so is it when opened again (reopen). */
    private readonly always: boolean,
    private readonly key: string,
  ) {}

  /** When the opened file was last modified (ms since the epoch): a source modified later is newer than the program built from it. */
  get modifiedMs(): number {
    return Number(this.stamp.split(':')[3]);
  }

  /**
   * `copy`: always hand over a private copy, for a file whose content is judged before gdb reads
   * it (a core's list of mapped files, a program's debug links): the file itself could be rewritten after the check by
   * anyone who may write it, debugkit's own user (a gdb `dump`) included. `key`: the API key the
   * copy is counted for (copyBounds.perKey).
   */
  static async open(root: string, userPath: string, what = 'program', { copy: always = false, key = '' }: { copy?: boolean; key?: string } = {}): Promise<CheckedProgram> {
    const opened = openContained(root, userPath, { what, type: 'file' });
    let account: CopyAccount | undefined;
    let handle: FileHandle | undefined;
    try {
      const stamp = stampOf(opened.stats);
      const why = swappable(opened.real) ?? (always ? 'its content is checked on the copy gdb reads' : undefined);
      if (!why) return new CheckedProgram(opened.real, opened.real, undefined, root, stamp, always, key);
      if (opened.stats.size > MAX_PROGRAM_COPY_BYTES) {
        throw new DebugkitError(
          'INVALID_ARGUMENT',
          `${what} ${userPath} is ${Math.ceil(opened.stats.size / 2 ** 20)} MiB: debugkit hands gdb a private copy of a program ${always ? 'whose content it checks' : 'whose name other users could swap'} (${why}), ` +
            `of at most ${MAX_PROGRAM_COPY_BYTES / 2 ** 20} MiB` +
            (always
              ? '; a file whose content debugkit checks is always copied, so strip it or split its debug information out (objcopy --only-keep-debug)'
              : '; close the directories on its way to other users (chmod go-w) and gdb is handed the file itself'),
        );
      }
      const dir = privateTempDir('debugkit-prog-');
      account = { dir, key, bytes: 0 };
      accounts.set(dir, account);
      const copy = path.join(dir, path.basename(opened.real));
      // /proc/self/fd/N is the opened file itself: the kernel follows the descriptor, not a name.
      handle = await open(`/proc/self/fd/${opened.fd}`, 'r');
      await copyIntoPrivate(handle, opened.stats.size, copy, `${what} ${userPath}`);
      chmodSync(copy, (opened.stats.mode & 0o777) | 0o500);
      return new CheckedProgram(opened.real, copy, account, root, stamp, always, key);
    } catch (err) {
      if (account) {
        release(account);
        removeNow(account.dir);
      }
      throw err;
    } finally {
      await handle?.close();
      closeSync(opened.fd);
    }
  }

  /** Whether `path` is a private copy, not the file itself. */
  get copied(): boolean {
    return this.account !== undefined;
  }

  /**
   * Whether the file at `real` is no longer the one opened (rebuilt, replaced): checked and opened
   * inside the root again, as when it was opened. False when it cannot be opened there any more
   * (removed, or leading out of the root now): a copy is still the checked program.
   */
  changed(): boolean {
    let opened: OpenedInside;
    try {
      opened = openContained(this.root, this.real, { type: 'file' });
    } catch {
      return false;
    }
    closeSync(opened.fd);
    return stampOf(opened.stats) !== this.stamp;
  }

  /** The file at `real` as it is now, checked and opened inside the root again (and copied if it must be, or was). */
  reopen(): Promise<CheckedProgram> {
    return CheckedProgram.open(this.root, this.real, 'program', { copy: this.always, key: this.key });
  }

  close(): void {
    if (this.closed || !this.account) return;
    this.closed = true;
    release(this.account);
    removeNow(this.account.dir);
  }
}

function stampOf(st: Stats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
}

/** This server's temporary directory (see privateTempDir), once made. */
let ownTemp: string | undefined;
let sweptTemp = false;

/**
 * A new private directory (mode 0700) for temporary files of this server (a program's private copy,
 * gdb's output file, a proxychains configuration), named `prefix` and a random tail, inside this
 * server's own temporary directory (runTempDir). That directory goes when the server exits; one a
 * SIGKILLed server left (its mark gone) is removed by the next server to make one here, with what
 * it holds (before, every private copy a killed server held stayed in the temp directory for good).
 */
export function privateTempDir(prefix: string): string {
  if (!ownTemp) {
    if (!sweptTemp) removeLeftTemp(tmpdir());
    sweptTemp = true;
    ownTemp = runTempDir(tmpdir(), ownMark());
    removeAtExit(ownTemp);
  }
  return mkdtempSync(path.join(ownTemp, prefix));
}

const RUN_PREFIX = 'debugkit-run-';

/**
 * Makes the temporary directory of the server marked `mark` (process.ts ownMark) in `temp`:
 * `debugkit-run-<mark>`, or, when another user (in a world-writable temp directory) took that
 * name first, `debugkit-run-<mark>-XXXXXX` made by mkdtemp: a new directory of this user's, mode
 * 0700, that removeLeftTemp still knows by its mark (attack 18y X2: the fallback was to put each
 * copy in the temp directory itself, and a SIGKILLed server's copies there were never removed).
 */
function runTempDir(temp: string, mark: string): string {
  const dir = path.join(temp, `${RUN_PREFIX}${mark}`);
  try {
    mkdirSync(dir, { mode: 0o700 });
    return dir;
  } catch {
    return mkdtempSync(`${dir}-`);
  }
}

/** A run directory's name: the mark, and mkdtemp's tail when the plain name was taken. */
const RUN_NAME = new RegExp(`^${RUN_PREFIX}(\\d+-\\d+-\\d+)(?:-[A-Za-z0-9]{6})?$`);

/**
 * Removes, in the background, the temporary directories in `temp` of this user's servers that no
 * longer run (their marks gone); never another user's, nor a live server's.
 */
function removeLeftTemp(temp: string): void {
  for (const dir of leftByGone(temp, RUN_NAME)) {
    try {
      const st = lstatSync(dir);
      if (!st.isDirectory() || (process.getuid && st.uid !== process.getuid())) continue;
    } catch {
      continue;
    }
    void rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** What this process made for others to read (private copies, kubeconfigs) and has not removed yet. */
const leftAtExit = new Set<string>();
let exitHooked = false;

/** Removes `file` (a file or a directory) when the process exits, unless it was removed before (`removeNow`); a SIGKILL leaves it. */
export function removeAtExit(file: string): void {
  if (!exitHooked) {
    exitHooked = true;
    process.on('exit', () => {
      for (const f of leftAtExit) rmSync(f, { recursive: true, force: true });
    });
  }
  leftAtExit.add(file);
}

/** Removes `file` now, and forgets it for the exit. */
export function removeNow(file: string): void {
  rmSync(file, { recursive: true, force: true });
  leftAtExit.delete(file);
}

/** A file or directory checked and opened inside the root, named for another process by its descriptor. */
export interface HandedOpen {
  /** The real path that was checked and opened. */
  real: string;
  /** /proc/<pid>/fd/N: the opened file itself for a process of this user (see descriptorPath). */
  path: string;
  /** fstat of what was opened. */
  stats: Stats;
  /** Closes the descriptor (once; `path` names nothing after). */
  close: () => void;
}

/**
 * `openContained` for another process of this user to use by `path` (/proc/<pid>/fd/N), which
 * names the checked file or directory whatever the workspace path names by then. Keep it open
 * until that process has opened it (or has started in it), then close it.
 */
export function openContainedHandle(root: string, userPath: string, options: { what?: string } & OpenInsideOptions = {}): HandedOpen {
  const opened = openContained(root, userPath, options);
  let closed = false;
  return {
    real: opened.real,
    path: descriptorPath(opened.fd),
    stats: opened.stats,
    close: () => {
      if (!closed) closeSync(opened.fd);
      closed = true;
    },
  };
}

/**
 * A directory opened and checked inside the root, for a child process's working directory:
 * `path` (/proc/<pid>/fd/N) names the checked directory, so the child's chdir cannot be sent out
 * of the root by a link swapped in after the check. Close it once the child has started.
 */
export function openContainedDirectory(root: string, userPath: string, what = 'cwd'): HandedOpen {
  return openContainedHandle(root, userPath, { what, type: 'directory' });
}

/**
 * True when no user but this process's own (or root) can change a name anywhere on the way to the
 * files under `dir` (its own only, without `recursive`): `dir` and every directory under it (links
 * to directories are not followed) belong to this user or root and are writable by neither group
 * nor others, and so is every directory above it, except a sticky one (such as /tmp) whose entry on
 * the way belongs to this user or root. Then whoever could swap a file or directory there for a
 * link already runs as this user or as root, and can read anything debugkit could read through the
 * link: racing a check gains it nothing. Ownership and modes can only be changed by their owner or
 * root, so the answer cannot be turned by another user meanwhile. The tree is read by path.
 */
export async function onlyOwnUserWrites(dir: string, recursive: boolean): Promise<boolean> {
  try {
    if (!ownUserWay(dir)) return false;
    if (!recursive) return true;
    // Below it: every directory, a level at a time (the levels' directories are read in parallel).
    for (let level = [dir]; level.length > 0;) {
      const listed = await Promise.all(level.map((here) => readdir(here, { withFileTypes: true }).then((entries) => ({ here, entries }))));
      level = [];
      for (const { here, entries } of listed) {
        for (const entry of entries) {
          if (!entry.isDirectory()) continue;
          const sub = path.join(here, entry.name);
          if (!closedToOthers(lstatSync(sub))) return false;
          level.push(sub);
        }
      }
    }
    return true;
  } catch {
    return false;
  }
}

const ownedByUs = (st: Stats) => st.uid === (process.geteuid?.() ?? -1) || st.uid === 0;
const closedToOthers = (st: Stats) => ownedByUs(st) && (st.mode & 0o022) === 0;

/** onlyOwnUserWrites(dir, false), synchronous: `dir` and the way down to it. Throws when `dir` cannot be read. */
function ownUserWay(dir: string): boolean {
  // Above `dir`: each directory, and the entry of it on the way down.
  let child = lstatSync(dir);
  if (!child.isDirectory() || !closedToOthers(child)) return false;
  for (let at = dir, up = path.dirname(dir); up !== at; at = up, up = path.dirname(up)) {
    const parent = lstatSync(up);
    const sticky = (parent.mode & 0o1000) !== 0;
    if (!ownedByUs(parent) || ((parent.mode & 0o022) !== 0 && !(sticky && ownedByUs(child)))) return false;
    child = parent;
  }
  return true;
}

/**
 * Why a user other than this process's own (or root) could make `abs` lead somewhere else
 * between a check and another process's open of the same name; undefined when none can, so the
 * name may be handed over as it is (racing gains such a writer nothing: see onlyOwnUserWrites).
 * `abs` is read as the kernel walks it (a `..` after a link goes up from where the link leads).
 * It must lead where it reads, through no link (a check that reads the name lexically and the
 * open would disagree, and each link is one more name to swap), and the directory that holds it
 * (a directory: itself; missing: its nearest existing ancestor) and every one above it must be
 * closed to other users as onlyOwnUserWrites requires.
 */
export function swappable(abs: string): string | undefined {
  const where = leads(abs);
  if (where.real !== path.resolve(abs)) return `${abs} leads through a link`;
  let dir = where.real;
  if (!lstatSync(dir, { throwIfNoEntry: false })?.isDirectory()) dir = path.dirname(dir);
  while (!lstatSync(dir, { throwIfNoEntry: false }) && dir !== path.dirname(dir)) dir = path.dirname(dir);
  try {
    if (ownUserWay(dir)) return undefined;
  } catch {
    // unreadable: judged as open to others
  }
  return `${dir}, or a directory above it, can be written by users other than debugkit's`;
}

function outside(what: string, userPath: string, root: string): DebugkitError {
  return new DebugkitError('PATH_OUTSIDE_ROOT', `${what} ${userPath} is outside the workspace root ${root}: use a path inside it (start debugkit with --root to change the root)`);
}
