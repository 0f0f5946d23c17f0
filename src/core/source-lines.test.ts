import { closeSync, fstatSync, mkdirSync, mkdtempSync, openSync, renameSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { countLines, linesAround, SOURCE_READ_BYTES } from './source-lines.js';

const base = mkdtempSync(path.join(os.tmpdir(), 'debugkit-source-lines-'));
const root = path.join(base, 'root');
mkdirSync(root);
writeFileSync(path.join(base, 'secret.c'), 'SECRET line 1\nSECRET line 2\nSECRET line 3\n');
afterAll(() => rmSync(base, { recursive: true, force: true }));

const numbered = (n: number, from = 1) => Array.from({ length: n }, (_, i) => `line ${from + i}`);

describe('linesAround: the lines around a stop, from a file inside the root', () => {
  it('reads the lines around the stop, the first and last lines of a file too, a last line without a newline included', async () => {
    writeFileSync(path.join(root, 'a.c'), numbered(20).join('\n'));
    const opts = { context: 2, maxLineChars: 100 };
    expect(await linesAround(root, path.join(root, 'a.c'), 10, opts)).toMatchObject({ first: 8, lines: numbered(5, 8) });
    expect(await linesAround(root, 'a.c', 1, opts)).toMatchObject({ first: 1, lines: numbered(3) });
    expect(await linesAround(root, 'a.c', 20, opts)).toMatchObject({ first: 18, lines: numbered(3, 18) });
    expect(await linesAround(root, 'a.c', 21, opts)).toBeUndefined();
    expect(await linesAround(root, 'a.c', 0, opts)).toBeUndefined();
  });

  it('finds a stop past the first chunks of a big file, and cuts long lines without reading them into strings whole', async () => {
    const lines = numbered(200_000);
    lines[150_000] = 'x'.repeat(3_000_000);
    writeFileSync(path.join(root, 'big.c'), `${lines.join('\r\n')}\r\n`);
    const around = await linesAround(root, 'big.c', 150_001, { context: 1, maxLineChars: 50 });
    expect(around).toMatchObject({ first: 150_000, lines: ['line 150000', 'x'.repeat(50), 'line 150002'] });
  });

  it('shows nothing of a stop past the bytes it reads', async () => {
    writeFileSync(path.join(root, 'huge.c'), `${'y'.repeat(SOURCE_READ_BYTES + 10)}\nafter\n`);
    expect(await linesAround(root, 'huge.c', 2, { context: 0, maxLineChars: 10 })).toBeUndefined();
  });

  it("with no root, reads a regular file by its path (a program's own frames), and never waits on a FIFO", async () => {
    writeFileSync(path.join(base, 'lib.py'), 'a = 1\nb = 2\nc = 3\n');
    expect(await linesAround(null, path.join(base, 'lib.py'), 2, { context: 1, maxLineChars: 100 })).toMatchObject({ first: 1, lines: ['a = 1', 'b = 2', 'c = 3'] });
    execFileSync('mkfifo', [path.join(base, 'fifo.py')]);
    expect(await linesAround(null, path.join(base, 'fifo.py'), 1, { context: 1, maxLineChars: 100 })).toBeUndefined();
    expect(await linesAround(null, base, 1, { context: 1, maxLineChars: 100 })).toBeUndefined();
  });

  it('reads nothing outside the root: by path, by `..`, or through a link', async () => {
    symlinkSync(path.join(base, 'secret.c'), path.join(root, 'link.c'));
    const opts = { context: 1, maxLineChars: 100 };
    expect(await linesAround(root, path.join(base, 'secret.c'), 1, opts)).toBeUndefined();
    expect(await linesAround(root, '../secret.c', 1, opts)).toBeUndefined();
    expect(await linesAround(root, 'link.c', 1, opts)).toBeUndefined();
    expect(await linesAround(root, 'missing.c', 1, opts)).toBeUndefined();
  });

  it('a directory flipped to a link leading out while stops are read shows the secret 0 times in 1,000 reads', async () => {
    // The flipper swaps root/d (a real directory holding a.c) and a link to the directory holding secret.c, by rename.
    const outside = path.join(base, 'outside');
    mkdirSync(outside);
    writeFileSync(path.join(outside, 'a.c'), 'SECRET 1\nSECRET 2\nSECRET 3\n');
    const real = path.join(root, 'd-real');
    mkdirSync(real);
    writeFileSync(path.join(real, 'a.c'), 'inside 1\ninside 2\ninside 3\n');
    symlinkSync(outside, path.join(root, 'd-link'));
    const d = path.join(root, 'd');
    renameSync(real, d);
    let flips = 0;
    let flipping = true;
    const flip = () => {
      if (!flipping) return;
      try {
        if (flips % 2 === 0) {
          renameSync(d, real);
          renameSync(path.join(root, 'd-link'), d);
        } else {
          renameSync(d, path.join(root, 'd-link'));
          renameSync(real, d);
        }
        flips++;
      } catch {
        // A rename racing the read's open: the next flip goes on.
      }
      setImmediate(flip);
    };
    setImmediate(flip);
    const shown: string[] = [];
    for (let i = 0; i < 1000; i++) {
      const around = await linesAround(root, 'd/a.c', 2, { context: 1, maxLineChars: 100 });
      if (around) shown.push(...around.lines);
      // A read refused at once (the link in place) yields nothing to the loop: the flipper gets its turn here.
      await new Promise((resolve) => setImmediate(resolve));
    }
    flipping = false;
    expect(flips).toBeGreaterThan(100);
    expect(shown.filter((l) => l.includes('SECRET'))).toEqual([]);
    expect(shown.filter((l) => l.includes('inside')).length).toBeGreaterThan(0);
  }, 60_000);

  it('keeps an excerpt by the file it opened: a changed file is read again', async () => {
    const cache = new Map();
    writeFileSync(path.join(root, 'c.c'), 'one\ntwo\nthree\n');
    expect((await linesAround(root, 'c.c', 2, { context: 0, maxLineChars: 10, cache }))?.lines).toEqual(['two']);
    writeFileSync(path.join(root, 'c.c'), 'one\nTWO!\nthree\n');
    expect((await linesAround(root, 'c.c', 2, { context: 0, maxLineChars: 10, cache }))?.lines).toEqual(['TWO!']);
    expect(cache.size).toBe(2);
  });
});

describe('countLines: a file counted as a text split on newlines counts it, a chunk at a time', () => {
  const count = async (text: string, enough?: number) => {
    const file = path.join(root, 'count.txt');
    writeFileSync(file, text);
    const fd = openSync(file, 'r');
    try {
      const counted = await countLines(fd, fstatSync(fd).size, enough);
      expect(counted.bounded).toBe(false);
      return counted.lines;
    } finally {
      closeSync(fd);
    }
  };

  it('counts as split(/\\r?\\n/) does, less the empty text after a final newline', async () => {
    for (const text of ['', 'a', 'a\n', 'a\nb', 'a\nb\n', '\n\n', 'a\r\nb\r\n', 'x'.repeat(300_000) + '\ny']) {
      const parts = text.split(/\r?\n/);
      expect(await count(text)).toBe(parts.at(-1) === '' ? parts.length - 1 : parts.length);
    }
  });

  it('stops once `enough` lines are seen, and reads 16 MiB of newlines over many turns of the loop (attack 18ao b2-1: one read and split held it 3.4 s)', async () => {
    const text = '\n'.repeat(16 * 1024 * 1024);
    expect(await count(text, 3)).toBeGreaterThanOrEqual(3);
    let turns = 0;
    let counting = true;
    const tick = () => {
      turns++;
      if (counting) setImmediate(tick);
    };
    setImmediate(tick);
    expect(await count(text)).toBe(16 * 1024 * 1024);
    counting = false;
    // A chunk of 256 KiB a read: 64 reads, each an await of the thread pool.
    expect(turns).toBeGreaterThanOrEqual(32);
  });

  it('reads at most COUNT_READ_BYTES, and stops when its call is cancelled (attack 18ao d2-3: a sparse 1 TiB file was read for an hour)', async () => {
    const file = path.join(root, 'sparse.py');
    writeFileSync(file, '');
    truncateSync(file, 1024 ** 4);
    const fd = openSync(file, 'r');
    try {
      const size = fstatSync(fd).size;
      expect(await countLines(fd, size, 1e9)).toEqual({ lines: 0, bounded: true });
      const cancelled = new AbortController();
      cancelled.abort(new Error('the call was cancelled'));
      await expect(countLines(fd, size, 1e9, { signal: cancelled.signal })).rejects.toThrow('the call was cancelled');
      // A smaller bound, then a count past it: bounded, with the lines seen so far.
      writeFileSync(file, 'a\n'.repeat(1000));
      expect(await countLines(fd, 2000, Infinity, { maxBytes: 100 })).toEqual({ lines: 50, bounded: true });
      // Enough lines seen within the bound: not bounded (at least `enough`, all the chunk read holds).
      expect(await countLines(fd, 2000, 10, { maxBytes: 100 })).toEqual({ lines: 50, bounded: false });
    } finally {
      closeSync(fd);
      rmSync(file);
    }
  });
});
