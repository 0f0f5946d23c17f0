import { readlinkSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { DebugkitError } from './errors.js';

/**
 * Resolves a client-supplied path against `root` and proves it stays inside: NUL bytes refused,
 * `..` and symlinks resolved (realpath) before the check, and `/root-evil` is not inside `/root`.
 * The target must exist unless `mustExist` is false, in which case its nearest existing parent
 * is resolved instead.
 */
export function resolveContained(root: string, userPath: string, { mustExist = true, what = 'path' } = {}): string {
  if (typeof userPath !== 'string' || userPath.length === 0) {
    throw new DebugkitError('INVALID_ARGUMENT', `${what} is empty: give a path relative to the workspace root ${root}`);
  }
  if (userPath.includes('\0')) throw new DebugkitError('INVALID_ARGUMENT', `${what} contains a NUL byte`);
  const realRoot = realpathSync.native(root);
  const candidate = path.resolve(realRoot, userPath);
  let real: string;
  try {
    real = realpathSync.native(candidate);
  } catch (err) {
    real = realExistingParent(candidate);
    if (mustExist) {
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

/**
 * The real path of `target`, which may not exist yet: its nearest existing ancestor is resolved
 * and the missing rest appended. A dangling symlink on the way is followed to where it points, so
 * a not-yet-existing file behind a link to outside the root is seen as outside.
 */
function realExistingParent(target: string, hops = 0): string {
  try {
    return realpathSync.native(target);
  } catch {
    const parent = path.dirname(target);
    if (parent === target) return target;
    const joined = path.join(realExistingParent(parent, hops), path.basename(target));
    let link: string;
    try {
      link = readlinkSync(joined);
    } catch {
      return joined; // missing (or not a link): nothing more to follow
    }
    // A loop (or a chain longer than the kernel follows) cannot be opened anyway.
    if (hops >= 40) return joined;
    return realExistingParent(path.resolve(path.dirname(joined), link), hops + 1);
  }
}

function outside(what: string, userPath: string, root: string): DebugkitError {
  return new DebugkitError('PATH_OUTSIDE_ROOT', `${what} ${userPath} is outside the workspace root ${root}: use a path inside it (start debugkit with --root to change the root)`);
}
