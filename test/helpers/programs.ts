import { execFileSync } from 'node:child_process';
import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const SOURCES = path.resolve(import.meta.dirname, '../programs');

/** A fresh directory under the system temp dir, realpath'd (it becomes a --root). */
export function tempDir(prefix = 'debugkit-test-'): string {
  return realpathSync(mkdtempSync(path.join(tmpdir(), prefix)));
}

/** Compiles test/programs/NAME.c with `gcc -g -O0` into `dir`; returns the executable's path. */
export function compileC(dir: string, name: string): string {
  const out = path.join(dir, name);
  execFileSync('gcc', ['-g', '-O0', '-o', out, path.join(SOURCES, `${name}.c`)], { stdio: 'pipe' });
  return out;
}
