import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, realpathSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { removeAtFileEnd } from './file-end.js';

const SOURCES = path.resolve(import.meta.dirname, '../programs');

/** A fresh directory under the system temp dir, realpath'd (it becomes a --root), removed when the test file ends. */
export function tempDir(prefix = 'debugkit-test-'): string {
  return removeAtFileEnd(realpathSync(mkdtempSync(path.join(tmpdir(), prefix))));
}

/**
 * A fresh --root holding the mocks test programs (test/programs/mocks); `nodeModules`: with the
 * project's node_modules linked in, for the Node programs among them.
 */
export function mocksWorkspace(prefix: string, { nodeModules = false } = {}): string {
  const root = tempDir(prefix);
  cpSync(path.join(SOURCES, 'mocks'), root, { recursive: true });
  if (nodeModules) symlinkSync(path.resolve(SOURCES, '../../node_modules'), path.join(root, 'node_modules'));
  return root;
}

/**
 * Copies test/programs/NAME.c into `dir` and compiles it there (`gcc -g -O0`): its source is then
 * inside the root, as a program's own code is (what a stop's first own frame is chosen by).
 */
export function compileCInside(dir: string, name: string): string {
  const source = path.join(dir, `${name}.c`);
  cpSync(path.join(SOURCES, `${name}.c`), source);
  const out = path.join(dir, name);
  execFileSync('gcc', ['-g', '-O0', '-o', out, source], { stdio: 'pipe' });
  return out;
}

/** Compiles test/programs/NAME.c with `gcc -g -O0` into `dir`; returns the executable's path. */
export function compileC(dir: string, name: string): string {
  const out = path.join(dir, name);
  execFileSync('gcc', ['-g', '-O0', '-o', out, path.join(SOURCES, `${name}.c`)], { stdio: 'pipe' });
  return out;
}
