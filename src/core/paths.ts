import { realpathSync } from 'node:fs';
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
  const realRoot = realpathSync(root);
  const candidate = path.resolve(realRoot, userPath);
  let real: string;
  try {
    real = realpathSync(candidate);
  } catch (err) {
    if (mustExist) {
      // Say "outside" rather than "missing" for escapes, so probing does not reveal what exists.
      if (!isInside(realRoot, candidate)) throw outside(what, userPath, realRoot);
      throw new DebugkitError('NOT_FOUND', `${what} not found: ${userPath} (resolved against ${realRoot})`, { cause: err });
    }
    real = path.join(realExistingParent(path.dirname(candidate)), path.basename(candidate));
  }
  if (!isInside(realRoot, real)) throw outside(what, userPath, realRoot);
  return real;
}

export function isInside(root: string, target: string): boolean {
  const rel = path.relative(root, target);
  return rel === '' || (!rel.startsWith(`..${path.sep}`) && rel !== '..' && !path.isAbsolute(rel));
}

function realExistingParent(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    const parent = path.dirname(dir);
    if (parent === dir) return dir;
    return path.join(realExistingParent(parent), path.basename(dir));
  }
}

function outside(what: string, userPath: string, root: string): DebugkitError {
  return new DebugkitError('PATH_OUTSIDE_ROOT', `${what} ${userPath} is outside the workspace root ${root}: use a path inside it (start debugkit with --root to change the root)`);
}
