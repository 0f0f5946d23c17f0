// Finding F1 of attack 18b, the same pattern in the gRPC replayer's index build: GrpcIndex reads
// each mock's `decoded_data` with protoscopeBytes on the event loop, and every closing brace
// copied the frame's bytes into its parent, so nesting cost depth x size (`{` x 8,000 then `}`
// x 8,000: 2.1 s; at 4x the size 70 s). Each shape is timed at n and 4n characters: linear ~4x,
// quadratic ~16x (relative, so a loaded machine does not decide it); the nesting shapes at n and 16n (below).
import { describe, expect, it } from 'vitest';
import { cpuTimes, linearMessage } from '../../../core/cputime.js';
import { protoscopeBytes, protoscopeText } from './protoscope.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('protoscopeBytes on deeply nested text (F1: linear)', () => {
  const shapes: Record<string, (n: number) => string> = {
    '{ x n/2 then } x n/2': (n) => `${'{'.repeat(n / 2)}${'}'.repeat(n / 2)}`,
    '1: { x n/4 then }': (n) => `${'1: {'.repeat(n / 4)}${'}'.repeat(n / 4)}`,
    '1: !{ (groups) x n/6 then }': (n) => `${'1: !{'.repeat(n / 6)}${'}'.repeat(n / 6)}`,
    '{ "a" x n/5 then }': (n) => `${'{"a"'.repeat(n / 5)}${'}'.repeat(n / 5)}`,
  };
  for (const [name, make] of Object.entries(shapes)) {
    it(`${name} reads in linear time`, () => {
      // n against 16n: a linear reader grows 16x, a quadratic one 256x. This one's own work is
      // linear, but deep nesting keeps every open frame alive, and the garbage collector's share
      // grows faster (measured 40x to 50x from 16,000 to 256,000 characters, two thirds of it
      // GC), so the bound is 128x: still far below the old reader (2.1 s at 16,000, minutes at 16n).
      // At 16,000 characters the work is ~0.5 ms of CPU, too little to scale from on every host (a
      // fresh 2-CPU VM measured 0.5 ms and 102 ms, GC most of it): the floor is 400 ms of CPU at 16n,
      // still a fifth of what the old reader took at n alone.
      const small = make(16_000);
      const big = make(256_000);
      protoscopeBytes(small); // warm up
      protoscopeBytes(big);
      const t = cpuTimes(
        () => protoscopeBytes(small),
        () => protoscopeBytes(big),
      );
      expect(t.big, linearMessage(name, t).replace('at 4n', 'at 16n')).toBeLessThan(Math.max(128 * t.small, 400));
    });
  }

  it('length prefixes land where their frames open: outer before inner, earlier before later', () => {
    // (The bytes the reader gave before the change.)
    expect(hex(protoscopeBytes('{}{1}'))).toBe('000101');
    expect(hex(protoscopeBytes('{{}}'))).toBe('0100');
    expect(hex(protoscopeBytes('{{1}{}2}'))).toBe('0401010002');
    expect(hex(protoscopeBytes('1: {2: {3: 1} 4: !{5: 2}}'))).toBe('0a08' + '1202' + '1801' + '23' + '2802' + '24');
    expect(hex(protoscopeBytes('long-form:2 {1} long-form:1 {}'))).toBe('818000' + '01' + '8000');
    // 300 nested frames: prefixes of more than one byte
    expect(hex(protoscopeBytes(`{${'{'.repeat(300)}${'}'.repeat(300)}}`)).slice(0, 8)).toBe('d803d603');
  });

  it('reads back what protoscopeText writes, for nested messages', () => {
    let seed = 18;
    const random = (k: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % k;
    };
    const message = (depth: number): Buffer => {
      const parts: Buffer[] = [];
      for (let i = random(4); i >= 0; i--) {
        const field = 1 + random(20);
        if (depth < 6 && random(2) === 0) {
          const inner = message(depth + 1);
          parts.push(Buffer.from([(field << 3) | 2, inner.length]), inner);
        } else parts.push(Buffer.from([(field << 3) | 0, random(128)]));
      }
      const out = Buffer.concat(parts);
      return out.length < 128 ? out : Buffer.from([0x08, 1]);
    };
    for (let i = 0; i < 2000; i++) {
      const bytes = message(0);
      expect(hex(protoscopeBytes(protoscopeText(bytes)))).toBe(hex(bytes));
    }
  });
});
