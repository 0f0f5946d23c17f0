import { isAscii, isUtf8 } from 'node:buffer';
import { closeSync, existsSync, read, statSync, type Stats } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { containment, isInside, isStillReal, openInside, openVerified, PATH_MAX } from '../../../core/paths.js';
import { BundleError } from '../errors.js';

export interface BundlePath {
  /** Real path on disk (inside the bundle root). */
  abs: string;
  /** Bundle-relative path as shown to the agent: `/`, `/cluster-resources/pods`. */
  display: string;
  stats: Stats;
  /** The bundle root's real path. */
  root: string;
}

export const OUTSIDE_MESSAGE = 'Access to path outside bundle root is not allowed';

/**
 * Resolves a tool's path inside the bundle at `root`. Paths are bundle-relative (`/` is the bundle
 * root; a missing leading `/` is fine). Also accepted: the absolute host path of something inside
 * the bundle (agents echo paths from initialize_bundle). Refused with SecurityError: NUL bytes,
 * `..` that climbs above the bundle root, host paths next to the bundle (under the directory that
 * holds it, such as `<bundle>-evil`) and symlinks inside the bundle that lead out of it. Relative
 * symlinks that stay inside (all-logs/) resolve normally. Missing paths throw `notFound(display)`.
 */
export function resolveBundlePath(root: string, userPath: string | undefined | null, notFound: (display: string) => BundleError): BundlePath {
  const given = typeof userPath === 'string' ? userPath : '/';
  if (given.includes('\0')) throw new BundleError('SecurityError', `${OUTSIDE_MESSAGE}: the path contains a NUL byte`);
  // No file has a longer path: not normalized or walked (path.resolve of a 4 MiB path cost ~40 ms, and
  // walking it ~155 ms: 15 such read_file calls at once held another key's ping 0.5-2.7 s, attack q2).
  if (given.length >= PATH_MAX || Buffer.byteLength(given) >= PATH_MAX) throw notFound(`${given.slice(0, 64)}... (${Buffer.byteLength(given)} bytes: a path is at most ${PATH_MAX - 1})`);
  // The root as it was found at initialize_bundle (a real path), never resolved again (isStillReal).
  const realRoot = path.resolve(root);
  if (!isStillReal(realRoot)) {
    throw new BundleError(
      'NoBundleInitializedError',
      existsSync(realRoot)
        ? `The bundle directory ${root} is not the directory it was: it, or a directory above it, was replaced by a link since the bundle was initialized; initialize the bundle again`
        : `The bundle directory ${root} does not exist any more: initialize the bundle again`,
    );
  }
  const trimmed = given.trim() === '' ? '/' : given.trim();

  let rel: string;
  const hostRoot = [realRoot, path.resolve(root)].find((r) => trimmed === r || trimmed.startsWith(`${r}/`));
  if (path.isAbsolute(trimmed) && hostRoot !== undefined) {
    rel = path.relative(hostRoot, path.resolve(trimmed));
    if (!isInside(hostRoot, path.resolve(trimmed))) throw outside(given);
  } else {
    for (const r of [realRoot, path.resolve(root)]) {
      const parent = path.dirname(r);
      if (parent !== '/' && path.isAbsolute(trimmed) && trimmed.startsWith(`${parent}/`)) throw outside(given);
    }
    rel = trimmed.replace(/^\/+/, '');
  }
  const norm = path.posix.normalize(rel === '' ? '.' : rel).replace(/\/+$/, '') || '.';
  if (norm === '..' || norm.startsWith('../')) throw outside(given);
  const display = norm === '.' ? '/' : `/${norm}`;

  const where = containment(realRoot, path.resolve(realRoot, norm));
  if (where.kind === 'outside') throw outside(given);
  if (where.kind === 'missing') throw notFound(display);
  const abs = where.real;
  let stats: Stats;
  try {
    stats = statSync(abs);
  } catch {
    throw notFound(display);
  }
  return { abs, display, stats, root: realRoot };
}

/**
 * Opens what `resolveBundlePath` found, and proves what was opened is inside the bundle
 * (core/paths openVerified, openInside): a file or directory swapped for a link after the check
 * is a SecurityError (or not found), never read. Read through `fd` only, then close it. `stats` is
 * the fstat of what was opened.
 */
export function openResolved(target: BundlePath, notFound: (display: string) => BundleError): { fd: number; stats: Stats } {
  // target.abs is the real path the check found: open it as it is, and check again only when it changed meanwhile.
  const first = openVerified(target.root, target.abs);
  const opened = first === 'changed' ? openInside(target.root, target.abs) : first;
  if (opened.kind === 'outside') throw outside(target.display);
  if (opened.kind === 'missing') throw notFound(target.display);
  return { fd: opened.fd, stats: opened.stats };
}

/** fs.read on a descriptor, awaited. */
export const readAt = promisify(read);

function outside(given: string): BundleError {
  return new BundleError('SecurityError', `${OUTSIDE_MESSAGE}: ${given}`);
}

/** Bundle-relative display path of a child. */
export function childDisplay(parent: string, name: string): string {
  return parent === '/' ? `/${name}` : `${parent}/${name}`;
}

export const SNIFF_BYTES = 8192;

/** Binary: a NUL byte, or bytes that are not UTF-8 (a sequence cut at the end is fine). */
export function looksBinary(head: Buffer): boolean {
  if (head.indexOf(0) !== -1) return true;
  if (isAscii(head)) return false;
  return !isUtf8(head.subarray(0, completeUtf8End(head)));
}

/** `buf.length`, or where an incomplete UTF-8 sequence at the very end starts. */
function completeUtf8End(buf: Buffer): number {
  for (let i = buf.length - 1; i >= 0 && i >= buf.length - 4; i--) {
    const b = buf[i]!;
    if ((b & 0xc0) === 0x80) continue; // continuation byte: look further back
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return i + need > buf.length ? i : buf.length;
  }
  return buf.length;
}

/**
 * Sniffs the first 8 KiB of a regular file of the bundle at `realRoot`, opened and checked inside
 * it (openInside); unreadable files, and files that are no longer inside, count as not binary.
 */
export async function isBinaryFile(realRoot: string, abs: string): Promise<boolean> {
  let fd: number | undefined;
  try {
    const opened = openInside(realRoot, abs, { type: 'file' });
    if (opened.kind !== 'inside') return false;
    fd = opened.fd;
    const buf = Buffer.alloc(SNIFF_BYTES);
    const { bytesRead } = await readAt(fd, buf, 0, SNIFF_BYTES, 0);
    return looksBinary(buf.subarray(0, bytesRead));
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** ISO 8601 in UTC without milliseconds, as in the contract: `2025-04-10T15:30:00Z`. */
export function isoSeconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** Runs `fn` over `items` with at most `limit` at once, keeping order. */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
