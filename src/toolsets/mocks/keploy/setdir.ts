import { closeSync, constants, lstatSync, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import { DebugkitError } from '../../../core/errors.js';
import { isInside, openedPath } from '../../../core/paths.js';

/**
 * The directories of a mock store opened the way debugkit opens what it checked (SECURITY.md,
 * "Open what was checked"): a writer inside the root may swap a set's directory (or the mocks
 * directory, or a directory above it) for a link out of the root between a check and a use by
 * name. So the mocks directory is walked from the root one component at a time, each opened with
 * O_NOFOLLOW | O_DIRECTORY relative to the one before (through /proc/self/fd/N), a set's directory
 * is opened the same way from the mocks directory's descriptor, and each descriptor is judged by
 * what the kernel says it names (/proc/self/fd/N, inside the root). What is below a set's
 * directory (`mocks.yaml`, the temporary file of a write) is then reached as
 * `/proc/self/fd/N/mocks.yaml`: the kernel follows the descriptor, not a name, and the last
 * component is opened with O_NOFOLLOW (read) or created exclusively and renamed (write), which
 * follow no link either. The worker threads that read sets (describe.ts) share the process's
 * descriptors, so they are handed that path; the descriptor is closed once the job has ended.
 */

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** A directory opened and checked; `at` (/proc/self/fd/N) names it in this process and its worker threads. */
export interface OpenDir {
  fd: number;
  at: string;
  /** Closes the descriptor (once; `at` names nothing after). */
  close(): void;
}

function handle(fd: number): OpenDir {
  let closed = false;
  return {
    fd,
    at: `/proc/self/fd/${fd}`,
    close: () => {
      if (closed) return;
      closed = true;
      closeSync(fd);
    },
  };
}

const errno = (err: unknown) => (err as NodeJS.ErrnoException | undefined)?.code;

/**
 * Directory `name` of the opened directory `parent`, opened without following a link
 * (O_NOFOLLOW | O_DIRECTORY, by one name from the descriptor) and judged inside `within` by what
 * the kernel says the descriptor names. 'link': it is a symbolic link; 'missing': it is not there
 * or not a directory; 'outside': what was opened is not inside `within`.
 */
export function openChildDir(parent: OpenDir, name: string, within: string): OpenDir | 'missing' | 'link' | 'outside' {
  if (name === '' || name === '.' || name === '..' || name.includes('/')) return 'missing';
  let fd: number;
  try {
    fd = openSync(`${parent.at}/${name}`, DIR_FLAGS);
  } catch (err) {
    const code = errno(err);
    // A link met with O_NOFOLLOW | O_DIRECTORY fails ENOTDIR (not ELOOP): which it was only names the refusal.
    if (code === 'ELOOP' || code === 'ENOTDIR') return lstatSync(`${parent.at}/${name}`, { throwIfNoEntry: false })?.isSymbolicLink() ? 'link' : 'missing';
    if (code === 'ENOENT') return 'missing';
    throw err;
  }
  let real: string;
  try {
    real = openedPath(fd);
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  if (!isInside(within, real)) {
    closeSync(fd);
    return 'outside';
  }
  return handle(fd);
}

/**
 * Directory `abs` (a path resolved inside `realRoot`, itself a real path) opened one component at
 * a time from the root, no link followed on the way, and checked inside the root. `create`: the
 * components that are missing are made (mkdir by one name from the descriptor before them, which
 * follows no link either). 'missing' when a component is not there (or not a directory) and is
 * not made; a component that became a link, or a directory that leads out of the root, is an
 * INVALID_ARGUMENT error (it was no link when `abs` was resolved: a writer swapped it).
 */
export function openDirFromRoot(realRoot: string, abs: string, { create = false }: { create?: boolean } = {}): OpenDir | 'missing' {
  if (!isInside(realRoot, abs)) {
    throw new DebugkitError('PATH_OUTSIDE_ROOT', `${abs} is outside the workspace root ${realRoot}`);
  }
  const parts = path
    .relative(realRoot, abs)
    .split(path.sep)
    .filter((p) => p !== '');
  let dir: OpenDir | undefined = handle(openSync(realRoot, constants.O_RDONLY | constants.O_DIRECTORY));
  try {
    let at = realRoot;
    for (const part of parts) {
      at = path.join(at, part);
      if (create) {
        try {
          mkdirSync(`${dir.at}/${part}`);
        } catch (err) {
          if (errno(err) !== 'EEXIST') throw err;
        }
      }
      const next = openChildDir(dir, part, realRoot);
      if (next === 'missing') return 'missing';
      if (next === 'link' || next === 'outside') {
        throw new DebugkitError(
          'INVALID_ARGUMENT',
          `${at} ${next === 'link' ? 'is a symbolic link now' : 'leads out of the workspace root now'} (it changed after it was checked); mock sets must be in plain directories`,
        );
      }
      dir.close();
      dir = next;
    }
    const opened = dir;
    dir = undefined;
    return opened;
  } finally {
    dir?.close();
  }
}

/** Directory `abs` as given (no root to walk from: the caller trusts the path), opened; 'missing' when it is not there. */
export function openDirAsGiven(abs: string, { create = false }: { create?: boolean } = {}): OpenDir | 'missing' {
  if (create) mkdirSync(abs, { recursive: true });
  try {
    return handle(openSync(abs, constants.O_RDONLY | constants.O_DIRECTORY));
  } catch (err) {
    if (errno(err) === 'ENOENT' || errno(err) === 'ENOTDIR') return 'missing';
    throw err;
  }
}
