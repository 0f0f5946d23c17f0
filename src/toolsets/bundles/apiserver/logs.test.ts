import { closeSync, ftruncateSync, openSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseLogQuery, TAIL_SEARCH_BYTES, tailStart } from './logs.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'debugkit-logs-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function tail(content: string, lines: number): Promise<string> {
  const file = path.join(dir, `f${Math.random()}.log`);
  await writeFile(file, content);
  const fd = openSync(file, 'r');
  try {
    return readFileSync(file)
      .subarray((await tailStart(fd, Buffer.byteLength(content), lines)).start)
      .toString();
  } finally {
    closeSync(fd);
  }
}

describe('tailStart', () => {
  it('returns the last lines, keeping the final newline', async () => {
    expect(await tail('a\nb\nc\n', 2)).toBe('b\nc\n');
    expect(await tail('a\nb\nc', 2)).toBe('b\nc');
    expect(await tail('a\nb\nc\n', 10)).toBe('a\nb\nc\n');
    expect(await tail('a\nb\nc\n', 0)).toBe('');
    expect(await tail('', 3)).toBe('');
  });

  it('keeps nothing of what it reads: the tail of one long line of a large sparse file is found by its offset (attack 18n: 1.5 GB read into memory)', async () => {
    const file = path.join(dir, 'sparse.log');
    const fd = openSync(file, 'w+');
    try {
      const size = 1024 ** 3;
      await writeFile(file, '');
      ftruncateSync(fd, size);
      const before = process.memoryUsage().rss;
      expect(await tailStart(fd, size, 1)).toEqual({ start: size - TAIL_SEARCH_BYTES, cut: true });
      expect(process.memoryUsage().rss - before).toBeLessThan(256 * 1024 ** 2);
    } finally {
      closeSync(fd);
    }
  }, 60_000);

  it('works across read chunks of a large file', async () => {
    const lines = Array.from({ length: 20_000 }, (_, i) => `line ${i} ${'x'.repeat(20)}`);
    const got = await tail(`${lines.join('\n')}\n`, 5000);
    expect(got).toBe(`${lines.slice(-5000).join('\n')}\n`);
  });
});

describe('parseLogQuery', () => {
  it('reads the parameters kubectl sends', () => {
    const q = new URLSearchParams('container=nginx&previous=true&tailLines=10&limitBytes=500&follow=true');
    expect(parseLogQuery(q)).toEqual({ container: 'nginx', previous: true, tailLines: 10, limitBytes: 500 });
    expect(parseLogQuery(new URLSearchParams(''))).toEqual({ container: undefined, previous: false, tailLines: undefined, limitBytes: undefined });
  });

  it('rejects non-numeric limits with a message', () => {
    expect(parseLogQuery(new URLSearchParams('tailLines=abc'))).toMatch(/tailLines must be/);
  });
});
