import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DebugkitError } from './errors.js';
import { CheckedProgram, containment, isInside, MAX_PROGRAM_COPY_BYTES, PATH_MAX, onlyOwnUserWrites, openContainedDirectory, openedPath, openInside, openVerified, resolveContained } from './paths.js';

/**
 * A real tree in a temp dir:
 *
 *   base/
 *     root/                      the workspace root
 *       file.txt
 *       ..foo                    a file whose name merely starts with ".."
 *       sub/inner.txt
 *       sub/deep/
 *       ünïcödé/日本語.txt
 *       link-in          -> root/sub                  (absolute, inside)
 *       link-file-in     -> file.txt                  (relative, inside)
 *       link-out         -> base/outside              (absolute, outside dir)
 *       link-file-out    -> base/outside/secret.txt   (absolute, outside file)
 *       rel-link-out     -> ../outside                (relative, outside dir)
 *       dangling-in      -> not-yet.txt               (relative, inside, missing)
 *       dangling-out     -> base/outside/new.txt      (absolute, outside, missing)
 *       rel-dangling-out -> ../outside/new.txt        (relative, outside, missing)
 *       dangling-out-dir -> base/outside/nodir        (outside, missing directory)
 *       sub/up-out       -> ../../outside             (relative from a subdirectory, outside)
 *       loop-a -> loop-b, loop-b -> loop-a
 *     outside/secret.txt
 *     root-evil/x.txt            sibling whose name has the root's name as a prefix
 *     rootlink         -> root   (the root itself given as a symlink)
 */
let base: string;
let root: string;
let outsideDir: string;

function write(file: string, text = 'x'): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

beforeAll(() => {
  // realpath: os.tmpdir() may itself be a symlink (macOS /tmp -> /private/tmp).
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'debugkit-paths-')));
  root = path.join(base, 'root');
  outsideDir = path.join(base, 'outside');
  write(path.join(root, 'file.txt'));
  write(path.join(root, '..foo'));
  write(path.join(root, 'sub', 'inner.txt'));
  fs.mkdirSync(path.join(root, 'sub', 'deep'));
  write(path.join(root, 'ünïcödé', '日本語.txt'));
  write(path.join(outsideDir, 'secret.txt'));
  write(path.join(base, 'root-evil', 'x.txt'));
  fs.symlinkSync(path.join(root, 'sub'), path.join(root, 'link-in'));
  fs.symlinkSync('file.txt', path.join(root, 'link-file-in'));
  fs.symlinkSync(outsideDir, path.join(root, 'link-out'));
  fs.symlinkSync(path.join(outsideDir, 'secret.txt'), path.join(root, 'link-file-out'));
  fs.symlinkSync('../outside', path.join(root, 'rel-link-out'));
  fs.symlinkSync('not-yet.txt', path.join(root, 'dangling-in'));
  fs.symlinkSync(path.join(outsideDir, 'new.txt'), path.join(root, 'dangling-out'));
  fs.symlinkSync('../outside/new.txt', path.join(root, 'rel-dangling-out'));
  fs.symlinkSync(path.join(outsideDir, 'nodir'), path.join(root, 'dangling-out-dir'));
  fs.symlinkSync('../../outside', path.join(root, 'sub', 'up-out'));
  fs.symlinkSync('loop-b', path.join(root, 'loop-a'));
  fs.symlinkSync('loop-a', path.join(root, 'loop-b'));
  fs.symlinkSync(root, path.join(base, 'rootlink'));
});

afterAll(() => {
  if (base) fs.rmSync(base, { recursive: true, force: true });
});

/** Runs `fn` and returns the DebugkitError it throws (fails the test when it does not throw one). */
function failure(fn: () => unknown): DebugkitError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(DebugkitError);
    return err as DebugkitError;
  }
  throw new Error('expected a DebugkitError, but nothing was thrown');
}

const outsideMessage = (userPath: string, what = 'path', realRoot = root) =>
  `${what} ${userPath} is outside the workspace root ${realRoot}: use a path inside it (start debugkit with --root to change the root)`;

function expectOutside(userPath: string, options?: { mustExist?: boolean; what?: string }, rootArg = root): void {
  const err = failure(() => resolveContained(rootArg, userPath, options));
  expect(err.code).toBe('PATH_OUTSIDE_ROOT');
  expect(err.message).toBe(outsideMessage(userPath, options?.what ?? 'path'));
}

describe('resolveContained: plain paths inside the root', () => {
  it('resolves a relative file to its absolute real path', () => {
    expect(resolveContained(root, 'file.txt')).toBe(path.join(root, 'file.txt'));
  });

  it('resolves nested files and directories', () => {
    expect(resolveContained(root, 'sub/inner.txt')).toBe(path.join(root, 'sub', 'inner.txt'));
    expect(resolveContained(root, 'sub/deep')).toBe(path.join(root, 'sub', 'deep'));
  });

  it('resolves "." and "./" to the root itself', () => {
    expect(resolveContained(root, '.')).toBe(root);
    expect(resolveContained(root, './')).toBe(root);
  });

  it('allows ".." that stays inside', () => {
    expect(resolveContained(root, 'sub/../file.txt')).toBe(path.join(root, 'file.txt'));
    expect(resolveContained(root, 'sub/deep/../../sub/inner.txt')).toBe(path.join(root, 'sub', 'inner.txt'));
    expect(resolveContained(root, './sub/./deep/..')).toBe(path.join(root, 'sub'));
  });

  it('treats a name that only starts with ".." as an ordinary child', () => {
    expect(resolveContained(root, '..foo')).toBe(path.join(root, '..foo'));
    expect(resolveContained(root, './..foo')).toBe(path.join(root, '..foo'));
  });

  it('accepts unicode names', () => {
    expect(resolveContained(root, 'ünïcödé/日本語.txt')).toBe(path.join(root, 'ünïcödé', '日本語.txt'));
    const err = failure(() => resolveContained(root, 'ünïcödé/不存在.txt'));
    expect(err.code).toBe('NOT_FOUND');
    expect(err.message).toBe(`path not found: ünïcödé/不存在.txt (resolved against ${root})`);
  });

  it('ignores trailing slashes on directories and files', () => {
    expect(resolveContained(root, 'sub/')).toBe(path.join(root, 'sub'));
    expect(resolveContained(root, 'sub//')).toBe(path.join(root, 'sub'));
    expect(resolveContained(root, 'sub/deep/')).toBe(path.join(root, 'sub', 'deep'));
    // path.resolve drops the trailing slash before realpath sees it.
    expect(resolveContained(root, 'file.txt/')).toBe(path.join(root, 'file.txt'));
    expect(resolveContained(root, `${root}/`)).toBe(root);
  });

  it('accepts a root given with a trailing slash or relative ".." segments', () => {
    expect(resolveContained(`${root}/`, 'file.txt')).toBe(path.join(root, 'file.txt'));
    expect(resolveContained(path.join(root, 'sub', '..'), 'file.txt')).toBe(path.join(root, 'file.txt'));
  });

  it('accepts absolute paths inside the root', () => {
    expect(resolveContained(root, path.join(root, 'file.txt'))).toBe(path.join(root, 'file.txt'));
    expect(resolveContained(root, root)).toBe(root);
    expect(resolveContained(root, path.join(root, 'sub', '..', 'sub', 'inner.txt'))).toBe(path.join(root, 'sub', 'inner.txt'));
  });
});

describe('resolveContained: invalid input', () => {
  it('refuses an empty path, naming the root as given', () => {
    const err = failure(() => resolveContained(root, ''));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toBe(`path is empty: give a path relative to the workspace root ${root}`);
  });

  it('uses `what` in the empty-path message', () => {
    const err = failure(() => resolveContained('/some/where', '', { what: 'program' }));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toBe('program is empty: give a path relative to the workspace root /some/where');
  });

  it('refuses a non-string path as empty', () => {
    const err = failure(() => resolveContained(root, undefined as unknown as string));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toBe(`path is empty: give a path relative to the workspace root ${root}`);
  });

  it('does not treat whitespace as empty (it is a legal, missing name)', () => {
    const err = failure(() => resolveContained(root, ' '));
    expect(err.code).toBe('NOT_FOUND');
  });

  it.each([
    ['file.txt\0', 'trailing NUL'],
    ['\0', 'NUL alone'],
    ['sub/\0/inner.txt', 'NUL in a middle segment'],
    ['file.txt\0.png', 'NUL truncation trick'],
    ['../../etc/passwd\0', 'NUL on an escape'],
  ])('refuses %j (%s) with INVALID_ARGUMENT', (userPath) => {
    const err = failure(() => resolveContained(root, userPath));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toBe('path contains a NUL byte');
  });

  it('refuses a NUL byte even when mustExist is false, with `what` in the message', () => {
    const err = failure(() => resolveContained(root, 'new\0.txt', { mustExist: false, what: 'cwd' }));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toBe('cwd contains a NUL byte');
  });

  it('checks the input before touching the file system (a missing root is not reported first)', () => {
    const missingRoot = path.join(base, 'no-such-root');
    expect(failure(() => resolveContained(missingRoot, '')).code).toBe('INVALID_ARGUMENT');
    expect(failure(() => resolveContained(missingRoot, 'a\0')).code).toBe('INVALID_ARGUMENT');
  });

  // Attack q2: a read_file of a 4 MiB path held the event loop ~155 ms walking it; no file has a path past PATH_MAX.
  it('refuses a path past PATH_MAX, naming the bound; containment judges one missing without walking it', () => {
    for (const userPath of ['a'.repeat(PATH_MAX), 'a/'.repeat(4 * 1024 * 1024), `${'é'.repeat(2100)}`]) {
      const err = failure(() => resolveContained(root, userPath, { mustExist: false }));
      expect(err.code).toBe('INVALID_ARGUMENT');
      expect(err.message).toMatch(/^path is too long: \d+ bytes under the workspace root, and a path is at most 4095 \(Linux's PATH_MAX\)$/);
      expect(containment(fs.realpathSync(root), path.resolve(root, userPath))).toEqual({ kind: 'missing' });
    }
    // Just under the bound, many components: judged as before.
    const deep = 'a/'.repeat(Math.floor((PATH_MAX - root.length - 10) / 2));
    expect(failure(() => resolveContained(root, deep)).code).toBe('NOT_FOUND');
  });

  it('throws the file system error when the root itself does not exist', () => {
    expect(() => resolveContained(path.join(base, 'no-such-root'), 'file.txt')).toThrow(/ENOENT/);
  });
});

describe('resolveContained: ".." escapes', () => {
  it.each([
    '..',
    '../',
    '../x',
    '../outside/secret.txt',
    'a/../../x',
    'sub/../../outside/secret.txt',
    'sub/deep/../../../outside',
    './../root-evil/x.txt',
    '../../../../../../../../etc/passwd',
    '../root/../outside/secret.txt',
  ])('refuses %j as PATH_OUTSIDE_ROOT', (userPath) => {
    expectOutside(userPath);
  });

  it('names `what` in the outside message', () => {
    expectOutside('../x', { what: 'cwd' });
  });

  it('refuses escapes with mustExist false as well', () => {
    expectOutside('../new.txt', { mustExist: false });
    expectOutside('a/../../new.txt', { mustExist: false });
    expectOutside('../outside/secret.txt', { mustExist: false });
  });

  it('still accepts a ".." path that leaves and re-enters the root', () => {
    expect(resolveContained(root, '../root/file.txt')).toBe(path.join(root, 'file.txt'));
  });
});

describe('resolveContained: absolute paths', () => {
  it.each([() => path.join(base, 'outside', 'secret.txt'), () => outsideDir, () => base, () => '/', () => '/etc', () => path.join(base, 'root-evil', 'x.txt'), () => path.join(base, 'root-evil')])(
    'refuses an existing absolute path outside the root (%#)',
    (make) => {
      expectOutside(make());
    },
  );

  it('refuses a nonexistent absolute path outside the root', () => {
    expectOutside(path.join(outsideDir, 'nope.txt'));
    expectOutside('/definitely/not/here/debugkit');
  });
});

describe('resolveContained: sibling with the root as a name prefix', () => {
  it('refuses root-evil relative and absolute, existing and not', () => {
    expectOutside('../root-evil/x.txt');
    expectOutside(`${root}-evil/x.txt`);
    expectOutside(`${root}-evil/nope.txt`);
    expectOutside(`${root}-evil`);
    expectOutside(`${root}-evil/new.txt`, { mustExist: false });
  });
});

describe('resolveContained: nonexistent paths and probing', () => {
  it('reports NOT_FOUND for a missing path inside the root, with the cause attached', () => {
    const err = failure(() => resolveContained(root, 'nope.txt'));
    expect(err.code).toBe('NOT_FOUND');
    expect(err.message).toBe(`path not found: nope.txt (resolved against ${root})`);
    expect((err.cause as NodeJS.ErrnoException).code).toBe('ENOENT');
  });

  it('reports NOT_FOUND for a missing nested path and for a path under a file', () => {
    expect(failure(() => resolveContained(root, 'sub/deep/nope/x.c')).code).toBe('NOT_FOUND');
    const underFile = failure(() => resolveContained(root, 'file.txt/child', { what: 'program' }));
    expect(underFile.code).toBe('NOT_FOUND');
    expect(underFile.message).toBe(`program not found: file.txt/child (resolved against ${root})`);
  });

  it('gives an existing and a missing outside file the same answer, so probing reveals nothing', () => {
    const existing = failure(() => resolveContained(root, '../outside/secret.txt'));
    const missing = failure(() => resolveContained(root, '../outside/nope.txt'));
    expect(existing.code).toBe('PATH_OUTSIDE_ROOT');
    expect(missing.code).toBe('PATH_OUTSIDE_ROOT');
    expect(missing.message).toBe(outsideMessage('../outside/nope.txt'));
  });

  it('does not reveal existence through a symlink to outside either', () => {
    // Both answers must be "outside": NOT_FOUND for the second would leak that it is missing.
    expectOutside('link-out/secret.txt');
    expectOutside('link-out/nope.txt');
    expectOutside('rel-link-out/nope.txt');
    expectOutside('sub/up-out/nope.txt');
    expectOutside('dangling-out');
    expectOutside('dangling-out-dir/x');
  });

  it('reports a dangling link inside pointing inside as NOT_FOUND', () => {
    const err = failure(() => resolveContained(root, 'dangling-in'));
    expect(err.code).toBe('NOT_FOUND');
    expect(err.message).toBe(`path not found: dangling-in (resolved against ${root})`);
  });

  it('reports a symlink loop inside the root as NOT_FOUND (it cannot be opened)', () => {
    const err = failure(() => resolveContained(root, 'loop-a'));
    expect(err.code).toBe('NOT_FOUND');
    expect((err.cause as NodeJS.ErrnoException).code).toBe('ELOOP');
  });
});

describe('resolveContained: symlinks', () => {
  it('allows a directory symlink pointing inside and returns the real path', () => {
    expect(resolveContained(root, 'link-in')).toBe(path.join(root, 'sub'));
    expect(resolveContained(root, 'link-in/inner.txt')).toBe(path.join(root, 'sub', 'inner.txt'));
    expect(resolveContained(root, 'link-in/deep/')).toBe(path.join(root, 'sub', 'deep'));
  });

  it('allows a relative file symlink pointing inside', () => {
    expect(resolveContained(root, 'link-file-in')).toBe(path.join(root, 'file.txt'));
  });

  it.each(['link-out', 'link-out/', 'link-out/secret.txt', 'link-file-out', 'rel-link-out', 'rel-link-out/secret.txt', 'sub/up-out/secret.txt', 'link-in/up-out/secret.txt'])(
    'refuses %j (symlink pointing outside) as PATH_OUTSIDE_ROOT',
    (userPath) => {
      expectOutside(userPath);
    },
  );

  it('refuses an absolute path that goes through a symlink to outside', () => {
    expectOutside(path.join(root, 'link-out', 'secret.txt'));
  });

  it('accepts an absolute path from outside that resolves, through a symlink, into the root', () => {
    // base/rootlink -> root: the real path is what counts, and it is inside.
    expect(resolveContained(root, path.join(base, 'rootlink', 'file.txt'))).toBe(path.join(root, 'file.txt'));
  });
});

describe('resolveContained: the root given as a symlink', () => {
  const rootLink = () => path.join(base, 'rootlink');

  it('resolves paths against the real root and returns real paths', () => {
    expect(resolveContained(rootLink(), 'file.txt')).toBe(path.join(root, 'file.txt'));
    expect(resolveContained(rootLink(), '.')).toBe(root);
    expect(resolveContained(rootLink(), path.join(rootLink(), 'sub', 'inner.txt'))).toBe(path.join(root, 'sub', 'inner.txt'));
  });

  it('refuses escapes and names the real root in the message', () => {
    expectOutside('../outside/secret.txt', undefined, rootLink());
    expectOutside('link-out/secret.txt', undefined, rootLink());
    expectOutside(path.join(outsideDir, 'secret.txt'), undefined, rootLink());
  });

  it('refuses the directory holding the root link', () => {
    // "../" from the real root is base; from the link it would also be base: outside either way.
    expectOutside('..', undefined, rootLink());
    expectOutside(base, undefined, rootLink());
  });

  it('reports NOT_FOUND against the real root', () => {
    const err = failure(() => resolveContained(rootLink(), 'nope.txt'));
    expect(err.code).toBe('NOT_FOUND');
    expect(err.message).toBe(`path not found: nope.txt (resolved against ${root})`);
  });

  it('handles mustExist false under a symlinked root', () => {
    expect(resolveContained(rootLink(), 'new.txt', { mustExist: false })).toBe(path.join(root, 'new.txt'));
    expectOutside('link-out/new.txt', { mustExist: false }, rootLink());
  });
});

describe('resolveContained: mustExist false', () => {
  it('returns an existing path resolved as usual', () => {
    expect(resolveContained(root, 'file.txt', { mustExist: false })).toBe(path.join(root, 'file.txt'));
    expect(resolveContained(root, 'link-in/inner.txt', { mustExist: false })).toBe(path.join(root, 'sub', 'inner.txt'));
  });

  it('returns a not-yet-existing file in an existing directory', () => {
    expect(resolveContained(root, 'new.txt', { mustExist: false })).toBe(path.join(root, 'new.txt'));
    expect(resolveContained(root, 'sub/new.txt', { mustExist: false })).toBe(path.join(root, 'sub', 'new.txt'));
  });

  it('returns a not-yet-existing file under not-yet-existing directories', () => {
    expect(resolveContained(root, 'a/b/c/new.txt', { mustExist: false })).toBe(path.join(root, 'a', 'b', 'c', 'new.txt'));
    expect(resolveContained(root, 'ünïcödé/新/ファイル.txt', { mustExist: false })).toBe(path.join(root, 'ünïcödé', '新', 'ファイル.txt'));
  });

  it('resolves the existing parent through an inside symlink', () => {
    expect(resolveContained(root, 'link-in/new.txt', { mustExist: false })).toBe(path.join(root, 'sub', 'new.txt'));
    expect(resolveContained(root, 'link-in/x/y.txt', { mustExist: false })).toBe(path.join(root, 'sub', 'x', 'y.txt'));
  });

  it.each(['link-out/new.txt', 'link-out/deeper/new.txt', 'rel-link-out/new.txt', 'sub/up-out/new.txt', 'link-in/up-out/new.txt'])(
    'refuses %j: a new file under a symlinked dir pointing outside',
    (userPath) => {
      expectOutside(userPath, { mustExist: false });
    },
  );

  it.each(['dangling-out', 'rel-dangling-out', 'dangling-out-dir/new.txt', 'dangling-out-dir/a/b.txt'])(
    'refuses %j: a dangling symlink pointing outside (writing through it would escape)',
    (userPath) => {
      expectOutside(userPath, { mustExist: false });
    },
  );

  it('follows a dangling symlink pointing inside to its target', () => {
    expect(resolveContained(root, 'dangling-in', { mustExist: false })).toBe(path.join(root, 'not-yet.txt'));
  });

  it('terminates on a symlink loop and stays inside the root', () => {
    expect(resolveContained(root, 'loop-a', { mustExist: false })).toBe(path.join(root, 'loop-a'));
    expect(resolveContained(root, 'loop-a/x', { mustExist: false })).toBe(path.join(root, 'loop-a', 'x'));
  });

  it('does not create anything on disk', () => {
    resolveContained(root, 'never/created/file.txt', { mustExist: false });
    expect(fs.existsSync(path.join(root, 'never'))).toBe(false);
    expect(fs.existsSync(path.join(outsideDir, 'new.txt'))).toBe(false);
  });
});

describe('isInside', () => {
  it('counts the root itself and its descendants as inside', () => {
    expect(isInside('/tmp/r', '/tmp/r')).toBe(true);
    expect(isInside('/tmp/r', '/tmp/r/')).toBe(true);
    expect(isInside('/tmp/r', '/tmp/r/a')).toBe(true);
    expect(isInside('/tmp/r', '/tmp/r/a/b/c')).toBe(true);
    expect(isInside('/tmp/r/', '/tmp/r/a')).toBe(true);
  });

  it('counts parents, siblings and unrelated paths as outside', () => {
    expect(isInside('/tmp/r', '/tmp')).toBe(false);
    expect(isInside('/tmp/r', '/')).toBe(false);
    expect(isInside('/tmp/r', '/tmp/s')).toBe(false);
    expect(isInside('/tmp/r', '/etc/passwd')).toBe(false);
  });

  it('does not treat a shared name prefix as inside', () => {
    expect(isInside('/tmp/r', '/tmp/r-evil')).toBe(false);
    expect(isInside('/tmp/r', '/tmp/r-evil/x')).toBe(false);
    expect(isInside('/tmp/r', '/tmp/rr')).toBe(false);
    expect(isInside('/tmp/r', '/tmp/r.bak/x')).toBe(false);
  });

  it('normalises ".." lexically', () => {
    expect(isInside('/tmp/r', '/tmp/r/../r-evil')).toBe(false);
    expect(isInside('/tmp/r', '/tmp/r/a/../../x')).toBe(false);
    expect(isInside('/tmp/r', '/tmp/r/a/..')).toBe(true);
    expect(isInside('/tmp/r', '/tmp/x/../r/a')).toBe(true);
  });

  it('counts names starting with ".." as inside', () => {
    expect(isInside('/tmp/r', '/tmp/r/..foo')).toBe(true);
    expect(isInside('/tmp/r', '/tmp/r/...')).toBe(true);
    expect(isInside('/tmp/r', '/tmp/r/..foo/bar')).toBe(true);
  });

  it('works with "/" as the root', () => {
    expect(isInside('/', '/')).toBe(true);
    expect(isInside('/', '/anything/at/all')).toBe(true);
  });
});

/** This process's open descriptors: what a refusal must not leave behind. */
function openFds(): number {
  return fs.readdirSync('/proc/self/fd').length;
}

describe('openInside / openVerified: open, then judge what was opened (issue 18)', () => {
  const opened = (abs: string, type?: 'file' | 'directory' | 'any') => {
    const r = openInside(root, abs, type ? { type } : {});
    if (r.kind === 'inside') fs.closeSync(r.fd);
    return r.kind === 'inside' ? { kind: r.kind, real: r.real } : { kind: r.kind };
  };

  it('a file inside is opened; a link inside opens its target; links out and dangling links are never opened', () => {
    const before = openFds();
    expect(opened(path.join(root, 'file.txt'))).toEqual({ kind: 'inside', real: path.join(root, 'file.txt') });
    expect(opened(path.join(root, 'link-file-in'))).toEqual({ kind: 'inside', real: path.join(root, 'file.txt') });
    expect(opened(path.join(root, 'link-in', 'inner.txt'))).toEqual({ kind: 'inside', real: path.join(root, 'sub', 'inner.txt') });
    expect(opened(path.join(root, 'link-file-out'))).toEqual({ kind: 'outside' });
    expect(opened(path.join(root, 'link-out', 'secret.txt'))).toEqual({ kind: 'outside' });
    expect(opened(path.join(root, 'dangling-in'))).toEqual({ kind: 'missing' });
    expect(opened(path.join(root, 'loop-a'))).toEqual({ kind: 'missing' });
    expect(openFds()).toBe(before);
  });

  it('type: a directory is not a file and a file not a directory; the descriptor reads what was checked', () => {
    expect(opened(path.join(root, 'sub'), 'file')).toEqual({ kind: 'missing' });
    expect(opened(path.join(root, 'file.txt'), 'directory')).toEqual({ kind: 'missing' });
    expect(opened(path.join(root, 'sub'), 'directory')).toEqual({ kind: 'inside', real: path.join(root, 'sub') });
    const r = openInside(root, path.join(root, 'ünïcödé', '日本語.txt'), { type: 'file' });
    if (r.kind !== 'inside') throw new Error(`expected inside, got ${r.kind}`);
    try {
      expect(fs.readFileSync(r.fd, 'utf8')).toBe('x');
      expect(r.stats.isFile()).toBe(true);
    } finally {
      fs.closeSync(r.fd);
    }
  });

  it('a FIFO is not opened (opening one waits for a writer)', () => {
    const fifo = path.join(root, 'fifo');
    execFileSync('mkfifo', [fifo]);
    try {
      expect(opened(fifo)).toEqual({ kind: 'missing' });
      // Handed to openVerified directly (a name a listing gave): opened without waiting, then refused.
      expect(openVerified(root, fifo)).toEqual({ kind: 'missing' });
    } finally {
      fs.rmSync(fifo);
    }
  });

  it('openVerified: a link at the end is a change; a parent that leads out is judged by what was opened, and closed', () => {
    const before = openFds();
    expect(openVerified(root, path.join(root, 'link-file-in'))).toBe('changed');
    expect(openVerified(root, path.join(root, 'link-out', 'secret.txt'))).toEqual({ kind: 'outside' });
    expect(openVerified(root, path.join(root, 'nope.txt'))).toBe('changed');
    expect(openFds()).toBe(before);
  });

  it('openedPath names the open file itself, wherever its old name leads by now', () => {
    const dir = fs.mkdtempSync(path.join(base, 'moved-'));
    write(path.join(dir, 'a.txt'), 'A');
    const fd = fs.openSync(path.join(dir, 'a.txt'), 'r');
    try {
      fs.renameSync(path.join(dir, 'a.txt'), path.join(dir, 'b.txt'));
      fs.symlinkSync(path.join(outsideDir, 'secret.txt'), path.join(dir, 'a.txt'));
      expect(openedPath(fd)).toBe(path.join(dir, 'b.txt'));
    } finally {
      fs.closeSync(fd);
    }
  });
});

describe('CheckedProgram and openContainedDirectory: what another process is handed (issue 18)', () => {
  it("where only debugkit's user can write, the program is the checked file itself (gdb runs it by its own name)", async () => {
    write(path.join(root, 'bin-dir', 'tool'), 'original');
    const program = await CheckedProgram.open(root, 'bin-dir/tool');
    expect(program.copied).toBe(false);
    expect(program.path).toBe(path.join(root, 'bin-dir', 'tool'));
    program.close();
    expect(fs.existsSync(program.path)).toBe(true);
  });

  it('where other users can write, the program is a private copy of the checked file, under its own name, unchanged when the workspace file is swapped', async () => {
    const bin = path.join(root, 'shared-bin');
    write(path.join(bin, 'tool'), 'original');
    fs.chmodSync(bin, 0o777);
    const program = await CheckedProgram.open(root, 'shared-bin/tool');
    try {
      expect(program.copied).toBe(true);
      expect(program.real).toBe(path.join(bin, 'tool'));
      expect(path.basename(program.path)).toBe('tool');
      expect(isInside(root, program.path)).toBe(false);
      fs.rmSync(path.join(bin, 'tool'));
      fs.symlinkSync(path.join(outsideDir, 'secret.txt'), path.join(bin, 'tool'));
      expect(fs.readFileSync(program.path, 'utf8')).toBe('original');
      expect(fs.statSync(path.dirname(program.path)).mode & 0o777).toBe(0o700);
      expect(program.changed()).toBe(false); // a link out of the root is not a rebuild
      fs.rmSync(path.join(bin, 'tool'));
      write(path.join(bin, 'tool'), 'rebuilt');
      expect(program.changed()).toBe(true);
      const fresh = await program.reopen();
      expect(fs.readFileSync(fresh.path, 'utf8')).toBe('rebuilt');
      fresh.close();
    } finally {
      program.close();
    }
    expect(fs.existsSync(path.dirname(program.path))).toBe(false);
  });

  it('a copy past MAX_PROGRAM_COPY_BYTES is refused at once, saying how to avoid the copy (a sparse file: no disk used)', async () => {
    const bin = path.join(root, 'shared-big');
    fs.mkdirSync(bin, { recursive: true });
    fs.chmodSync(bin, 0o777);
    fs.writeFileSync(path.join(bin, 'huge'), '');
    fs.truncateSync(path.join(bin, 'huge'), MAX_PROGRAM_COPY_BYTES + 1);
    const err = await CheckedProgram.open(root, 'shared-big/huge').then(
      () => undefined,
      (e: DebugkitError) => e,
    );
    expect(err?.code).toBe('INVALID_ARGUMENT');
    expect(err?.message).toMatch(/is 1025 MiB: debugkit hands gdb a private copy .* of at most 1024 MiB; close the directories on its way to other users \(chmod go-w\)/);
  });

  it('refuses what resolveContained refuses, with the same codes', async () => {
    const code = (userPath: string) =>
      CheckedProgram.open(root, userPath).then(
        () => 'opened',
        (e: DebugkitError) => e.code,
      );
    expect(await code('link-file-out')).toBe('PATH_OUTSIDE_ROOT');
    expect(await code('../outside/secret.txt')).toBe('PATH_OUTSIDE_ROOT');
    expect(await code('dangling-out')).toBe('PATH_OUTSIDE_ROOT');
    expect(await code('missing-program')).toBe('NOT_FOUND');
    expect(await code('sub')).toBe('NOT_FOUND');
    expect(await code('a\0b')).toBe('INVALID_ARGUMENT');
  });

  it('a child started in the checked directory is in it, however the path is swapped afterwards', () => {
    const dir = openContainedDirectory(root, 'link-in');
    try {
      expect(dir.real).toBe(path.join(root, 'sub'));
      expect(execFileSync('pwd', ['-P'], { cwd: dir.path, encoding: 'utf8' }).trim()).toBe(path.join(root, 'sub'));
    } finally {
      dir.close();
    }
    expect(failure(() => openContainedDirectory(root, 'link-out')).code).toBe('PATH_OUTSIDE_ROOT');
    expect(failure(() => openContainedDirectory(root, 'file.txt')).code).toBe('NOT_FOUND');
  });
});

describe('onlyOwnUserWrites: may rg walk a tree itself (issue 18)', () => {
  it("a tree of this user's directories, closed to group and others, under a sticky /tmp: yes", async () => {
    const tree = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'debugkit-own-')));
    try {
      fs.mkdirSync(path.join(tree, 'a', 'b'), { recursive: true });
      write(path.join(tree, 'a', 'b', 'f.log'));
      fs.chmodSync(tree, 0o755);
      expect(await onlyOwnUserWrites(tree, true)).toBe(true);
      // A subdirectory anyone may write to: not for a recursive walk, still for the top level alone.
      fs.chmodSync(path.join(tree, 'a', 'b'), 0o777);
      expect(await onlyOwnUserWrites(tree, true)).toBe(false);
      expect(await onlyOwnUserWrites(tree, false)).toBe(true);
      fs.chmodSync(path.join(tree, 'a', 'b'), 0o775);
      expect(await onlyOwnUserWrites(tree, true)).toBe(false);
      fs.chmodSync(path.join(tree, 'a', 'b'), 0o755);
      // The tree itself, or a directory above it that is not sticky, writable by others: no.
      fs.chmodSync(tree, 0o777);
      expect(await onlyOwnUserWrites(path.join(tree, 'a'), true)).toBe(false);
      fs.chmodSync(tree, 0o1777);
      expect(await onlyOwnUserWrites(path.join(tree, 'a'), true)).toBe(true);
      expect(await onlyOwnUserWrites(tree, true)).toBe(false);
      // Missing, or not a directory: no.
      expect(await onlyOwnUserWrites(path.join(tree, 'nope'), true)).toBe(false);
      expect(await onlyOwnUserWrites(path.join(tree, 'a', 'b', 'f.log'), true)).toBe(false);
    } finally {
      fs.rmSync(tree, { recursive: true, force: true });
    }
  });

  it.runIf(process.geteuid?.() === 0)('a directory another user owns: no (it may rename what is in it)', async () => {
    const tree = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'debugkit-own-')));
    try {
      fs.mkdirSync(path.join(tree, 'theirs', 'sub'), { recursive: true });
      fs.chmodSync(tree, 0o755);
      fs.chownSync(path.join(tree, 'theirs'), 65534, 65534);
      expect(await onlyOwnUserWrites(tree, true)).toBe(false);
      expect(await onlyOwnUserWrites(path.join(tree, 'theirs', 'sub'), true)).toBe(false);
    } finally {
      fs.rmSync(tree, { recursive: true, force: true });
    }
  });
});
