import { describe, expect, it } from 'vitest';
import { cpuTimes, linearMessage } from './cputime.js';
import { LineSplitter } from './lines.js';
import { MAX_MI_LINE, MiConnection } from './mi/connection.js';
import { PassThrough } from 'node:stream';

function split(chunks: string[], max = 100, totals: number[] = []): string[] {
  const out: string[] = [];
  const lines = new LineSplitter(max);
  for (const chunk of chunks)
    lines.push(chunk, (line, total) => {
      out.push(line);
      totals.push(total);
    });
  return out;
}

describe('LineSplitter: lines as they come, each character looked at once', () => {
  it('joins a line across chunks, ends lines at each newline, keeps an open line for the next chunk', () => {
    expect(split(['ab', 'c\nd', 'e\n\nf'])).toEqual(['abc', 'de', '']);
    expect(split(['\n', 'x\ny\n'])).toEqual(['', 'x', 'y']);
  });

  it('cuts a line past its bound and drops the rest of it to its newline', () => {
    const totals: number[] = [];
    expect(split(['abcdef', 'ghij\nkl\n'], 4, totals)).toEqual(['abcd', 'kl']);
    expect(totals).toEqual([10, 2]);
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

  // Bench liveness: a 16 MB result record (`-data-read-memory-bytes` of 8 MB) was parsed whole, and held every other
  // client about 0.5 s. A record past MAX_MI_LINE is an error of its command, saying why; the channel goes on.
  it('answers a result record past its bound as an error that says why, and reads on', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    const mi = new MiConnection(input, output);
    const notes: string[] = [];
    mi.on('record', (r) => notes.push(JSON.stringify(r)));
    const reply = mi.send('-data-read-memory-bytes &block 8000000', 5000);
    const record = `1^done,memory=[{contents="${'ab'.repeat(MAX_MI_LINE)}"}]\n`;
    for (let i = 0; i < record.length; i += 65536) output.write(record.slice(i, i + 65536));
    const answer = await reply;
    expect(answer.resultClass).toBe('error');
    expect((answer.results as { msg: string }).msg).toBe(
      `gdb's answer was one line of ${record.length - 1} characters, over the ${MAX_MI_LINE} debugkit reads: ask for less (fewer bytes, elements or frames)`,
    );
    // A stream record past the bound is kept cut, with a note; an async one is a note; the next command is answered.
    output.write(`~"${'\\\\'.repeat(MAX_MI_LINE)}"\n*stopped,x="${'y'.repeat(MAX_MI_LINE)}"\n`);
    const next = mi.send('-gdb-version', 5000);
    output.write('2^done\n');
    expect((await next).resultClass).toBe('done');
    expect(notes[0]).toMatch(/^\{"kind":"console","text":"(?:\\\\)+\.\.\.\[cut: gdb's answer was one line of \d+ characters, over the 1048576 debugkit reads\]\\n"\}$/);
    expect(notes[1]).toContain("debugkit: a record dropped: gdb's answer was one line of");
  });
});
