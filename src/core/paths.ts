import { readlinkSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { DebugkitError } from './errors.js';

/**
 * Resolves a client-supplied path against `root` and proves it stays inside: NUL bytes refused,
 * `..` and symlinks resolved (realpath) before the check, and `/root-evil` is not inside `/root`.
 * The target must exist unless `mustExist` is false, in which case its nearest existing parent
 * is resolved instead (see `leads`).
 */
export function resolveContained(root: string, userPath: string, { mustExist = true, what = 'path' } = {}): string {
  if (typeof userPath !== 'string' || userPath.length === 0) {
    throw new DebugkitError('INVALID_ARGUMENT', `${what} is empty: give a path relative to the workspace root ${root}`);
  }
  if (userPath.includes('\0')) throw new DebugkitError('INVALID_ARGUMENT', `${what} contains a NUL byte`);
  const realRoot = realpathSync.native(root);
  const candidate = path.resolve(realRoot, userPath);
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

export function isInside(root: string, target: string): boolean {
  const rel = path.relative(root, target);
  return rel === '' || (!rel.startsWith(`..${path.sep}`) && rel !== '..' && !path.isAbsolute(rel));
}

export type Containment = { kind: 'inside'; real: string } | { kind: 'outside' } | { kind: 'missing' };

/**
 * Where `abs` really leads, judged against `realRoot` (itself a real path): the one containment
 * check for client paths (resolveContained) and for files served from a bundle (read_file, pod
 * logs, extraction). 'missing' when it does not resolve (missing, dangling link, loop) but what
 * exists of it stays inside; 'outside' when the path, or what a dangling link on it points to,
 * leads out of the root, whether or not the end exists (so probing reveals nothing).
 */
export function containment(realRoot: string, abs: string): Containment {
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

function outside(what: string, userPath: string, root: string): DebugkitError {
  return new DebugkitError('PATH_OUTSIDE_ROOT', `${what} ${userPath} is outside the workspace root ${root}: use a path inside it (start debugkit with --root to change the root)`);
}
