import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sourceLines } from './stop.js';

const base = mkdtempSync(path.join(os.tmpdir(), 'debugkit-stop-'));
const root = path.join(base, 'root');
mkdirSync(root);
writeFileSync(path.join(base, 'secret.c'), 'int secret = 42;\n');
writeFileSync(path.join(root, 'main.c'), 'int main(void) {\n  int x = 1;\n  return x;\n}\n');
symlinkSync(path.join(base, 'secret.c'), path.join(root, 'link.c'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe('sourceLines', () => {
  it('shows the lines around a stop, the current one marked', async () => {
    expect(await sourceLines(root, path.join(root, 'main.c'), 2)).toEqual([' 1 int main(void) {', '>2   int x = 1;', ' 3   return x;', ' 4 }']);
  });

  it('reads nothing outside the root: not by path, not by `..`, not through a symlink inside it', async () => {
    expect(await sourceLines(root, path.join(base, 'secret.c'), 1)).toBeUndefined();
    expect(await sourceLines(root, path.join(root, '..', 'secret.c'), 1)).toBeUndefined();
    expect(await sourceLines(root, path.join(root, 'link.c'), 1)).toBeUndefined();
    expect(await sourceLines(root, path.join(root, 'missing.c'), 1)).toBeUndefined();
  });
});
