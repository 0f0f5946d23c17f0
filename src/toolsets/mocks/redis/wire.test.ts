import { describe, expect, it } from 'vitest';
import { cpuTimes, linearMessage } from '../../../core/cputime.js';
import { CommandFramer, MAX_COMMAND_ARGS, MAX_INLINE_BYTES, RespError, RespFramer, respEnd } from './wire.js';

let seed = 11;
const rand = (k: number) => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8) % k;

/** A random RESP3 value (every type), nested up to `depth`. */
function value(depth: number): string {
  const kind = rand(depth > 0 ? 12 : 8);
  const text = () => Array.from({ length: rand(6) }, () => 'ab\r\n$*'[rand(7)]).join('');
  switch (kind) {
    case 0:
      return `+${text().replace(/[\r\n]/g, '')}\r\n`;
    case 1:
      return `-ERR ${text().replace(/[\r\n]/g, '')}\r\n`;
    case 2:
      return `:${rand(1000) - 500}\r\n`;
    case 3:
      return '_\r\n';
    case 4: {
      const t = text();
      return `$${t.length}\r\n${t}\r\n`;
    }
    case 5:
      return '$-1\r\n';
    case 6: {
      const t = `txt:${text()}`;
      return `=${t.length}\r\n${t}\r\n`;
    }
    case 7:
      return '*-1\r\n';
    case 8:
      return `*${(() => {
        const n = rand(4);
        return `${n}\r\n${Array.from({ length: n }, () => value(depth - 1)).join('')}`;
      })()}`;
    case 9: {
      const n = rand(3);
      return `%${n}\r\n${Array.from({ length: 2 * n }, () => value(depth - 1)).join('')}`;
    }
    case 10: {
      const n = 1 + rand(2);
      return `|${n}\r\n${Array.from({ length: 2 * n }, () => value(depth - 1)).join('')}${value(depth - 1)}`;
    }
    default:
      return `>${(() => {
        const n = rand(3);
        return `${n}\r\n${Array.from({ length: n }, () => value(depth - 1)).join('')}`;
      })()}`;
  }
}

/** Feeds `stream` in random chunks to `framer`, consuming each value it frames; the values' ends in the stream. */
function frameInChunks(stream: Buffer, framer: { end(buf: Buffer): number }): number[] {
  const ends: number[] = [];
  let start = 0;
  let have = 0;
  while (have < stream.length) {
    have = Math.min(stream.length, have + 1 + rand(9));
    for (let end = framer.end(stream.subarray(start, have)); end > 0; end = framer.end(stream.subarray(start, have))) {
      start += end;
      ends.push(start);
    }
  }
  return ends;
}

describe('RespFramer', () => {
  it('frames each value where it ends, every RESP3 type nested, however the bytes are cut into chunks', () => {
    for (let round = 0; round < 300; round++) {
      const values = Array.from({ length: 1 + rand(5) }, () => value(3));
      const stream = Buffer.from(values.join(''), 'latin1');
      let at = 0;
      const ends = values.map((v) => (at += v.length));
      expect(frameInChunks(stream, new RespFramer()), JSON.stringify(values)).toEqual(ends);
      expect(respEnd(stream, 0)).toBe(ends[0]);
      expect(respEnd(stream.subarray(0, ends[0]! - 1), 0)).toBe(-1);
    }
  });

  it('refuses what is not RESP: an unknown type, a line without CR, a bulk string longer than said, nesting past 64', () => {
    for (const bad of ['?x\r\n', '+ok\n', '$3\r\nabcd\r\n', `${'*1\r\n'.repeat(70)}:1\r\n`]) {
      expect(() => respEnd(Buffer.from(bad), 0), bad).toThrow(RespError);
      expect(() => frameInChunks(Buffer.from(bad), new RespFramer()), bad).toThrow(RespError);
    }
    expect(respEnd(Buffer.from(`${'*1\r\n'.repeat(64)}:1\r\n`), 0)).toBe(4 * 64 + 4);
  });

  it('reads each byte once: a reply of 4x the elements, in small chunks, costs ~4x (respEnd from the start each chunk: ~16x)', () => {
    const reply = (n: number) => Buffer.from(`*${n}\r\n${'$1\r\na\r\n'.repeat(n)}`);
    const [small, big] = [reply(20_000), reply(80_000)];
    const feed = (b: Buffer) => () => {
      const framer = new RespFramer();
      let end = -1;
      for (let have = 4096; end < 0; have += 4096) end = framer.end(b.subarray(0, Math.min(have, b.length)));
      if (end !== b.length) throw new Error(`framed ${end} of ${b.length}`);
    };
    const t = cpuTimes(feed(small), feed(big));
    expect(t.big, linearMessage('a reply of 20,000 and 80,000 elements in 4 KiB chunks', t)).toBeLessThan(8 * t.small + 5);
  });
});

describe('CommandFramer', () => {
  it('frames commands (arrays of bulk strings, inline lines) however the bytes are cut', () => {
    const commands = ['*2\r\n$3\r\nGET\r\n$1\r\nk\r\n', 'PING\r\n', '*0\r\n', '*3\r\n$3\r\nSET\r\n$0\r\n\r\n$4\r\na\r\nb\r\n', 'SET a  b\n'];
    for (let round = 0; round < 50; round++) {
      const picked = Array.from({ length: 1 + rand(8) }, () => commands[rand(commands.length)]!);
      const stream = Buffer.from(picked.join(''));
      let at = 0;
      expect(frameInChunks(stream, new CommandFramer())).toEqual(picked.map((c) => (at += c.length)));
    }
  });

  it('refuses what a real Redis refuses: too many arguments, a long inline line, an argument that is not a bulk string', () => {
    const framer = () => new CommandFramer();
    expect(() => framer().end(Buffer.from(`*${MAX_COMMAND_ARGS + 1}\r\n`))).toThrow(/a command of 32769 arguments \(at most 32768\)/);
    expect(() => framer().end(Buffer.alloc(MAX_INLINE_BYTES + 1, 'a'))).toThrow(/an inline command over 64 KiB/);
    expect(() => framer().end(Buffer.from(`GET ${'a'.repeat(MAX_INLINE_BYTES)}\r\n`))).toThrow(/an inline command over 64 KiB/);
    expect(() => framer().end(Buffer.from('*1\r\n:1\r\n'))).toThrow(/a command argument is not a bulk string/);
  });

  it('reads each byte once: a command of 4x the arguments, in small chunks, costs ~4x', () => {
    const command = (n: number) => Buffer.from(`*${n}\r\n${'$0\r\n\r\n'.repeat(n)}`);
    const [small, big] = [command(8_000), command(32_000)];
    const feed = (b: Buffer) => () => {
      const framer = new CommandFramer();
      let end = -1;
      for (let have = 4096; end < 0; have += 4096) end = framer.end(b.subarray(0, Math.min(have, b.length)));
      if (end !== b.length) throw new Error(`framed ${end} of ${b.length}`);
    };
    const t = cpuTimes(feed(small), feed(big));
    expect(t.big, linearMessage('a command of 8,000 and 32,000 arguments in 4 KiB chunks', t)).toBeLessThan(8 * t.small + 5);
  });
});
