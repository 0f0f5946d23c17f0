import { describe, expect, it } from 'vitest';
import { cpuTimes, linearMessage } from './cputime.js';
import { LineSplitter } from './lines.js';
import { MiConnection } from './mi/connection.js';
import { PassThrough } from 'node:stream';

function split(chunks: string[], max = 100): string[] {
  const out: string[] = [];
  const lines = new LineSplitter(max);
  for (const chunk of chunks) lines.push(chunk, (line) => out.push(line));
  return out;
}

describe('LineSplitter: lines as they come, each character looked at once', () => {
  it('joins a line across chunks, ends lines at each newline, keeps an open line for the next chunk', () => {
    expect(split(['ab', 'c\nd', 'e\n\nf'])).toEqual(['abc', 'de', '']);
    expect(split(['\n', 'x\ny\n'])).toEqual(['', 'x', 'y']);
  });

  it('cuts a line past its bound and drops the rest of it to its newline', () => {
    expect(split(['abcdef', 'ghij\nkl\n'], 4)).toEqual(['abcd', 'kl']);
  });

  // Attack w2-1: gdb's reader joined the open line with each chunk and searched it again from its start; a 27 MB line held
  // every other client about 1 s at a time for 48 s.
  it("a line of many chunks costs gdb's MI channel what its length does (8 times the line, about 8 times the time)", () => {
    const chunk = 'x'.repeat(64 * 1024);
    const feed = (chunks: number) => () => {
      const mi = new MiConnection(new PassThrough(), new PassThrough()) as unknown as { onData(chunk: string): void };
      for (let i = 0; i < chunks; i++) mi.onData(chunk);
      mi.onData('\n');
    };
    const t = cpuTimes(feed(32), feed(256), 5);
    expect(t.big, linearMessage('a line of 2 MB against 16 MB', t, 8)).toBeLessThan(Math.max(24 * t.small, 10));
  });

  it("gdb's MI channel answers a command whose result record came in many chunks", async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    const mi = new MiConnection(input, output);
    const reply = mi.send('-data-evaluate-expression x', 5000);
    const value = 'v'.repeat(300_000);
    const record = `1^done,value="${value}"\n`;
    for (let i = 0; i < record.length; i += 4096) output.write(record.slice(i, i + 4096));
    expect(((await reply).results as { value: string }).value).toBe(value);
  });
});
