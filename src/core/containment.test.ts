import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containment, resolveContained } from './paths.js';

let base: string;
let root: string;

beforeAll(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'dk-contain-')));
  root = path.join(base, 'root');
  fs.mkdirSync(path.join(root, 'a/b/c'), { recursive: true });
  fs.mkdirSync(path.join(base, 'outside'));
  fs.writeFileSync(path.join(root, 'file.txt'), 'x');
  fs.symlinkSync('file.txt', path.join(root, 'in'));
  fs.symlinkSync('../outside', path.join(root, 'out'));
  fs.symlinkSync(path.join(base, 'outside/missing.txt'), path.join(root, 'dangling-out'));
  fs.symlinkSync('missing.txt', path.join(root, 'dangling-in'));
  fs.symlinkSync(path.join(base, 'nowhere'), path.join(root, 'dangling-dir-out'));
  fs.symlinkSync('../..', path.join(root, 'a/b/c/d'));
  fs.symlinkSync('d/../../../..', path.join(root, 'a/b/c/x'));
  fs.symlinkSync('loop2', path.join(root, 'loop1'));
  fs.symlinkSync('loop1', path.join(root, 'loop2'));
});
afterAll(() => fs.rmSync(base, { recursive: true, force: true }));

describe('containment', () => {
  it('judges by where the kernel goes', () => {
    expect(containment(root, path.join(root, 'in'))).toEqual({ kind: 'inside', real: path.join(root, 'file.txt') });
    expect(containment(root, path.join(root, 'out'))).toEqual({ kind: 'outside' });
    expect(containment(root, path.join(root, 'out/x.txt')).kind).toBe('outside');
    expect(containment(root, path.join(root, 'nope.txt'))).toEqual({ kind: 'missing' });
    expect(containment(root, path.join(root, 'dangling-in'))).toEqual({ kind: 'missing' });
    expect(containment(root, path.join(root, 'dangling-out'))).toEqual({ kind: 'outside' });
    expect(containment(root, path.join(root, 'dangling-dir-out/deeper/file'))).toEqual({ kind: 'outside' });
    expect(containment(root, path.join(root, 'loop1'))).toEqual({ kind: 'missing' });
    expect(containment(root, path.join(base, 'root-evil'))).toEqual({ kind: 'outside' });
  });

  it('a link whose target has .. after another link: fs.realpathSync reads it lexically, the kernel does not', () => {
    const x = path.join(root, 'a/b/c/x');
    expect(fs.realpathSync(x)).toBe(root); // the JavaScript walk: wrong
    expect(fs.realpathSync.native(x)).toBe(path.resolve(root, 'a', '../../../..')); // where open() really goes
    expect(containment(root, x)).toEqual({ kind: 'outside' });
  });
});

describe('one verdict for client paths and bundle files', () => {
  it('a dangling link to a missing file through an alias of the root is missing, not outside, in both', () => {
    const alias = path.join(base, 'root-alias');
    fs.symlinkSync(root, alias);
    fs.symlinkSync(path.join(alias, 'not-yet.txt'), path.join(root, 'via-alias'));
    expect(containment(root, path.join(root, 'via-alias'))).toEqual({ kind: 'missing' });
    expect(() => resolveContained(root, 'via-alias')).toThrow(/not found/);
    expect(resolveContained(root, 'via-alias', { mustExist: false })).toBe(path.join(root, 'not-yet.txt'));
  });

  it('a dangling link whose target climbs with .. after a link goes where the kernel goes, in both', () => {
    // a/b/c/d -> ../.. (a); a dangling link through d/.. climbs from a, not from c.
    fs.symlinkSync('d/../../../../outside/new.txt', path.join(root, 'a/b/c/dangling-climb'));
    expect(containment(root, path.join(root, 'a/b/c/dangling-climb'))).toEqual({ kind: 'outside' });
    expect(() => resolveContained(root, 'a/b/c/dangling-climb', { mustExist: false })).toThrow(/outside the workspace root/);
    expect(() => resolveContained(root, 'a/b/c/dangling-climb')).toThrow(/outside the workspace root/);
  });

  it('dangling links pointing out are outside in both, missing or not', () => {
    for (const name of ['dangling-out', 'dangling-dir-out/deeper/file']) {
      expect(containment(root, path.join(root, name))).toEqual({ kind: 'outside' });
      expect(() => resolveContained(root, name)).toThrow(/outside the workspace root/);
      expect(() => resolveContained(root, name, { mustExist: false })).toThrow(/outside the workspace root/);
    }
    expect(containment(root, path.join(root, 'dangling-in'))).toEqual({ kind: 'missing' });
    expect(() => resolveContained(root, 'dangling-in')).toThrow(/not found/);
  });
});
