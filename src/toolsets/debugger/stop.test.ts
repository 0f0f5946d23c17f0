import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { crashSite, renderStop, sourceLines, type CompactStop } from './stop.js';
import { newerSourceNote } from '../../core/source-lines.js';

const base = mkdtempSync(path.join(os.tmpdir(), 'debugkit-stop-'));
const root = path.join(base, 'root');
mkdirSync(root);
writeFileSync(path.join(base, 'secret.c'), 'int secret = 42;\n');
writeFileSync(path.join(root, 'main.c'), 'int main(void) {\n  int x = 1;\n  return x;\n}\n');
symlinkSync(path.join(base, 'secret.c'), path.join(root, 'link.c'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe('sourceLines', () => {
  it('shows the lines around a stop, the current one marked', async () => {
    expect((await sourceLines(root, path.join(root, 'main.c'), 2))?.lines).toEqual([' 1 int main(void) {', '>2   int x = 1;', ' 3   return x;', ' 4 }']);
  });

  it('shows the file as it is now: an edited source is read again (before, the first reading was kept by path for good)', async () => {
    writeFileSync(path.join(root, 'edited.c'), 'one\ntwo\nthree\n');
    expect((await sourceLines(root, path.join(root, 'edited.c'), 2))?.lines).toEqual([' 1 one', '>2 two', ' 3 three']);
    writeFileSync(path.join(root, 'edited.c'), 'one\nTWO!\nthree\n');
    expect((await sourceLines(root, path.join(root, 'edited.c'), 2))?.lines).toEqual([' 1 one', '>2 TWO!', ' 3 three']);
  });

  it('attack 18ap g2-6: lines read from a source modified after the program was built come with a note saying so', async () => {
    writeFileSync(path.join(root, 'newer.c'), 'one\ntwo\n');
    const source = await sourceLines(root, path.join(root, 'newer.c'), 1);
    expect(newerSourceNote(source, source!.modifiedMs - 1000)).toMatch(/^the source file was modified after the program was built/);
    expect(newerSourceNote(source, source!.modifiedMs)).toBeUndefined();
    expect(newerSourceNote(source, undefined)).toBeUndefined();
  });

  it('reads nothing outside the root: not by path, not by `..`, not through a symlink inside it', async () => {
    expect(await sourceLines(root, path.join(base, 'secret.c'), 1)).toBeUndefined();
    expect(await sourceLines(root, path.join(root, '..', 'secret.c'), 1)).toBeUndefined();
    expect(await sourceLines(root, path.join(root, 'link.c'), 1)).toBeUndefined();
    expect(await sourceLines(root, path.join(root, 'missing.c'), 1)).toBeUndefined();
  });
});

describe('crashSite', () => {
  const libc = { func: '__strlen_sse2', file: '../sysdeps/x86_64/multiarch/strlen-sse2.S', fullname: '/usr/src/glibc/strlen-sse2.S', line: '142', from: '/lib/x86_64-linux-gnu/libc.so.6' };
  const own = { func: 'main', file: 'main.c', fullname: path.join(root, 'main.c'), line: '2' };

  it("names the first frame in the program's own sources where a crash in other code came from, its source standing in", async () => {
    const stop: CompactStop = { state: 'stopped', reason: 'signal-received', function: '__strlen_sse2', file: libc.file, line: 142 };
    await crashSite(stop, [libc, { func: 'strlen' }, own], root);
    expect(stop.user_frame).toEqual({ level: 2, function: 'main', file: 'main.c', line: 2, crashed_in: '__strlen_sse2 in libc.so.6' });
    expect(stop.source?.[1]).toBe('>2   int x = 1;');
    expect(renderStop(stop).split('\n')[1]).toBe('crashed in __strlen_sse2 in libc.so.6, called from main at main.c:2 (frame 2)');
  });

  it('adds nothing when the crash is in the own code, or no frame is (a file outside the root is not)', async () => {
    const inOwn: CompactStop = { state: 'stopped', function: 'main' };
    await crashSite(inOwn, [own, libc], root);
    const outside: CompactStop = { state: 'stopped', function: '__strlen_sse2' };
    await crashSite(outside, [libc, { func: 'secret', file: 'secret.c', fullname: path.join(base, 'secret.c'), line: '1' }], root);
    expect([inOwn.user_frame, outside.user_frame, outside.source]).toEqual([undefined, undefined, undefined]);
  });
});
