import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containment } from './contain.js';

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
