import { lstatSync, readlinkSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { isInside } from '../../../core/paths.js';

export type Containment = { kind: 'inside'; real: string } | { kind: 'outside' } | { kind: 'missing' };

/**
 * Where `abs` really leads, judged against `realRoot` (itself a real path), by the kernel's
 * realpath(3). Not fs.realpathSync: its JavaScript walk reads a link target's `..` lexically
 * (`x -> d/..` with `d` a link is resolved as `x -> .`), which is not where open() goes.
 *
 * A path that does not resolve (missing, dangling link, loop) is 'missing' unless what exists of
 * it already leads outside: its nearest existing ancestor, or a dangling link's target.
 */
export function containment(realRoot: string, abs: string): Containment {
  try {
    const real = realpathSync.native(abs);
    return isInside(realRoot, real) ? { kind: 'inside', real } : { kind: 'outside' };
  } catch {
    return missingLeadsOutside(realRoot, abs, 0) ? { kind: 'outside' } : { kind: 'missing' };
  }
}

function missingLeadsOutside(realRoot: string, abs: string, hops: number): boolean {
  if (hops > 40) return false; // a chain longer than the kernel follows cannot be opened anyway
  let isLink = false;
  try {
    isLink = lstatSync(abs).isSymbolicLink();
  } catch {
    // not there: judge its parent
  }
  if (isLink) {
    // A dangling link: judge where it points.
    const parent = realOrSelf(path.dirname(abs));
    if (!isInside(realRoot, parent)) return true;
    const target = path.resolve(parent, readlinkSync(abs));
    try {
      return !isInside(realRoot, realpathSync.native(target));
    } catch {
      return !isInside(realRoot, target) || missingLeadsOutside(realRoot, target, hops + 1);
    }
  }
  const parent = path.dirname(abs);
  if (parent === abs) return false;
  try {
    return !isInside(realRoot, realpathSync.native(parent));
  } catch {
    return missingLeadsOutside(realRoot, parent, hops);
  }
}

function realOrSelf(p: string): string {
  try {
    return realpathSync.native(p);
  } catch {
    return p;
  }
}
