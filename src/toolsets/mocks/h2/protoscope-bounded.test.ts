// Finding F1 of attack 18k-A: during keploy_mock_record one gRPC message nested 1,500 deep
// (507 KB), each level ending in a byte that does not parse, took 108 s in protoscopeText on the
// event loop (each level's attempt was written and thrown away by every level above it); at
// 2,000 deep the recursion overflowed the stack. The bound is on a count of the bytes read and
// written (`examined`), not on time: each byte is read a few times at most, whatever the depth.
import { describe, expect, it } from 'vitest';
import { TimeSlice } from '../../../core/wait.js';
import { MAX_DEPTH, protoscopeBytes, protoscopeBytesSliced, protoscopeText } from './protoscope.js';

const varint = (n: number) => {
  const out: number[] = [];
  do {
    out.push((n & 0x7f) | (n >= 0x80 ? 0x80 : 0));
    n = Math.floor(n / 128);
  } while (n > 0);
  return out;
};
/** `inner` as field 1 of a message, `depth` times, each level followed by `tail`. */
const nest = (inner: Buffer, depth: number, tail: number[] = []) => {
  for (let i = 0; i < depth; i++) inner = Buffer.concat([Buffer.from([0x0a, ...varint(inner.length)]), inner, Buffer.from(tail)]);
  return inner;
};
const deepestIndent = (text: string) => text.split('\n').reduce((n, l) => Math.max(n, l.length - l.trimStart().length), 0);

/** The text, checked to read back to the bytes, and the work it took. */
function written(bytes: Buffer): { text: string; examined: number } {
  const stats = { examined: 0 };
  const text = protoscopeText(bytes, stats);
  expect(Buffer.from(protoscopeBytes(text)).equals(bytes)).toBe(true);
  return { text, examined: stats.examined };
}

describe('protoscopeText on adversarial nesting (attack 18k-A F1: bounded work)', () => {
  // 0x0f (field 1, wire type 7) ends every level's parse: none of them is a message.
  for (const depth of [2000, 1500]) {
    it(`a ${depth}-deep message whose every level fails to parse is read a few times a byte, not once a level`, () => {
      const bytes = nest(Buffer.alloc(500_000, 0x41), depth, [0x0f]);
      const { text, examined } = written(bytes);
      // Before: each byte once for each level above it (about depth x 507 KB).
      expect(examined).toBeGreaterThanOrEqual(bytes.length);
      expect(examined).toBeLessThanOrEqual(3 * bytes.length);
      // Nothing parses, so it is one field of bytes: hex rows, no nesting.
      expect(text.startsWith('1: {\n  `0a')).toBe(true);
      expect(deepestIndent(text)).toBe(2);
    });
  }

  it('a message nested 100,000 deep that does parse is cut at MAX_DEPTH (no stack overflow), the rest written as bytes', () => {
    const bytes = nest(Buffer.from([0x08, 0x01]), 100_000);
    const { text, examined } = written(bytes);
    expect(examined).toBeLessThanOrEqual(3 * bytes.length);
    expect(deepestIndent(text)).toBeLessThanOrEqual((MAX_DEPTH + 1) * 2);
    expect(text).toContain('`');
  });

  it('nesting up to MAX_DEPTH is written as protoscope writes it (blocks all the way down)', () => {
    expect(written(nest(Buffer.from([0x08, 0x01]), MAX_DEPTH)).text).toBe(`${'1: {'.repeat(MAX_DEPTH)}1: 1${'}'.repeat(MAX_DEPTH)}\n`);
    expect(written(nest(Buffer.from([0x08, 0x01]), MAX_DEPTH + 2)).text).toContain('`');
  });

  it('groups nested 20,000 deep: blocks up to MAX_DEPTH, deeper ones flat (N:SGROUP ... N:EGROUP)', () => {
    const open = Buffer.from(Array.from({ length: 20_000 }, () => [0x0b, 0x08, 0x00, 0x08, 0x00]).flat());
    const bytes = Buffer.concat([open, Buffer.alloc(20_000, 0x0c)]);
    const { text } = written(bytes);
    expect(deepestIndent(text)).toBe(MAX_DEPTH * 2);
    expect(text).toContain('1:SGROUP\n');
    expect(text).toContain('1:EGROUP\n');
    expect(text.split('\n').filter((l) => l.trim() === '}')).toHaveLength(MAX_DEPTH);
  });

  it('remark columns: a message of 20,000 doubles is written once a line (each line scanned the rest of them before)', () => {
    const one = [0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f]; // 1: 1.0
    const bytes = Buffer.from(Array.from({ length: 20_000 }, () => one).flat());
    const { text } = written(bytes);
    expect(text).toBe('1: 1.0  # 0x3ff0000000000000i64\n'.repeat(20_000));
  });

  it('remark columns are as protoscope aligns them (a run of remarks to the end is scanned again from each line)', () => {
    // The text before the change, for the same bytes.
    expect(protoscopeText(Buffer.from('5d0064803f8df00600428041', 'hex'))).toBe('11: 1.0030518i32      # 0x3f806400i32\n14081: 16.032227i32   # 0x41804200i32\n');
    const mixed = Buffer.from('1d0000803f' + '0b' + '1d0000803f' + '0d0000803f' + '0c' + '1d0000803f', 'hex');
    expect(protoscopeText(mixed)).toBe(['3: 1.0i32   # 0x3f800000i32', '1: !{', '  3: 1.0i32   # 0x3f800000i32', '  1: 1.0i32   # 0x3f800000i32', '}', '3: 1.0i32   # 0x3f800000i32', ''].join('\n'));
  });
});

describe('protoscopeBytes on a padding count from the set (attack 18s M4)', () => {
  it('long-form:N past what a varint can have is refused at once, allocating nothing (a 722-byte set with long-form:200000000 crashed the server)', () => {
    const before = process.memoryUsage().heapUsed;
    const started = performance.now();
    expect(() => protoscopeBytes('1: long-form:200000000 5')).toThrow(/long-form:200000000: a varint has at most 10 bytes, so at most 9 of padding/);
    expect(() => protoscopeBytes('1: long-form:10 5')).toThrow(/at most 9 of padding/);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(32 * 2 ** 20);
    // Nine bytes of padding is the most a varint may carry, and is written as such.
    expect(Buffer.from(protoscopeBytes('1: long-form:9 5')).toString('hex')).toBe('08' + '85' + '80'.repeat(8) + '00');
  });
});

/** A slice that never pauses, counting the looks at it: one between each two steps of the assembler. */
class CountLooks extends TimeSlice {
  looks = 0;
  constructor() {
    super(1000);
  }
  override over(): boolean {
    this.looks++;
    return false;
  }
}

// Attack 18x U1: a hex literal was one token whatever its length, found and checked whole (a regex
// over 4 MiB of digits) before the bound on its bytes: one 66-72 ms block. It is read now in pieces
// of a step's text (64 KiB), and at most 2 x 256 KiB digits long (the most a message is written as text).
describe('protoscopeBytes on long hex literals (attack 18x U1)', () => {
  const MAX_DIGITS = 2 * 256 * 1024;

  it('the longest hex literal assembles to its bytes, read 64 KiB of text a step', async () => {
    const bytes = Buffer.from(Array.from({ length: MAX_DIGITS / 2 }, (_, i) => (i * 7) & 0xff));
    const slice = new CountLooks();
    const text = `1: {\`${bytes.toString('hex').toUpperCase()}\`}`;
    expect(Buffer.from(await protoscopeBytesSliced(text, slice, { maxBytes: 1 << 20 })).equals(Buffer.concat([Buffer.from([0x0a, 0x80, 0x80, 0x10]), bytes]))).toBe(true);
    // Before: the literal was one token of one step (no look at the clock).
    expect(slice.looks).toBeGreaterThanOrEqual(MAX_DIGITS / (64 * 1024) - 1);
  });

  it('one longer is refused by its length, before its digits are read', async () => {
    for (const text of [`\`${'0'.repeat(4 * 1024 * 1024 - 3)}\``, `\`${'00'.repeat(MAX_DIGITS / 2 + 1)}\``, `1: 1 \`${'0'.repeat(4 * 1024 * 1024)}`]) {
      const slice = new CountLooks();
      await expect(protoscopeBytesSliced(text, slice)).rejects.toThrow(`a hex literal of more than ${MAX_DIGITS} digits`);
      expect(slice.looks).toBe(0);
    }
  });

  it('an odd count of digits and a pair that is not hex are refused, naming what is wrong', () => {
    expect(() => protoscopeBytes('`abc`')).toThrow('a hex literal of 3 digits: each byte is two, so the count must be even');
    expect(() => protoscopeBytes(`\`${'00'.repeat(100_000)}zz\``)).toThrow("protoscope at byte 200001: 'zz' in a hex literal: only pairs of 0-9, a-f or A-F");
    expect(() => protoscopeBytes('`00 1`')).toThrow("' 1' in a hex literal");
    expect(() => protoscopeBytes('1: 1 `0011')).toThrow('unterminated hex literal');
    expect(Buffer.from(protoscopeBytes('`` `0aFf` ``')).toString('hex')).toBe('0aff');
  });
});

// Attack 18x U4: crafted text that replayed other bytes than it says, silently. A hex float was
// computed as digits / 16^n * 2^p in doubles (2^p underflowed or overflowed, and the digits were
// rounded before the scaling), and a `long-form:N` was kept for whatever varint or tag came next.
describe('protoscopeBytes writes what crafted text says, or refuses it (attack 18x U4)', () => {
  const hex = (text: string) => Buffer.from(protoscopeBytes(text)).toString('hex');

  it('a hex float is its exact value rounded once to the nearest double (or float32), ties to even', () => {
    expect(hex('1: 0x10.0p-1075')).toBe('09' + '0800000000000000'); // 2^-1071, subnormal (before: 0.0)
    expect(hex('1: 0x0.1p1027')).toBe('09' + '000000000000e07f'); // 2^1023 (before: +inf)
    expect(hex('1: 0x1.fffffffffffff8p0')).toBe('09' + '0000000000000040'); // halfway to 2.0: even
    expect(hex('1: 0x1.00000000000008p0')).toBe('09' + '000000000000f03f'); // halfway to 1.0 + 2^-52: even
    expect(hex('1: 0x1.fffffffffffffp1023')).toBe('09' + 'ffffffffffffef7f'); // the largest double
    expect(hex('1: 0x1.8p-1075')).toBe('09' + '0100000000000000'); // over half the smallest subnormal
    expect(hex('1: -0x0.0p0')).toBe('09' + '0000000000000080');
    expect(hex('1: 0x1.0p-149i32')).toBe('0d' + '01000000'); // the smallest float32
    expect(hex('1: 0x1.fffffep127i32')).toBe('0d' + 'ffff7f7f'); // the largest float32
    expect(hex('1: 0x1.000001p0i32')).toBe('0d' + '0000803f'); // halfway: even (a double first, then float32, is the same here)
  });

  it('a hex float beyond the range of its width is refused, naming it', () => {
    expect(() => protoscopeBytes('1: 0x1.0p1024')).toThrow('0x1.0p1024: too big: a float64 is at most about 2^1024');
    expect(() => protoscopeBytes('1: 0x1.ffffffffffffffp1023')).toThrow('too big'); // rounds up to 2^1024
    expect(() => protoscopeBytes('1: 0x1.0p-1075')).toThrow('0x1.0p-1075: too small: a float64 is at most about 2^1024 and at least 2^-1074');
    expect(() => protoscopeBytes(`1: 0x1.0p-${'9'.repeat(100)}`)).toThrow('too small');
    expect(() => protoscopeBytes('1: 0x1.0p128i32')).toThrow('too big: a float32');
    expect(() => protoscopeBytes('1: 0x1.0p-151i32')).toThrow('too small: a float32');
  });

  it('long-form:N must come right before the varint it pads (a tag, a number, a brace), else it is refused', () => {
    for (const [text, token] of [
      ['long-form:3 "abc" 1: 5', '"abc"'],
      ['long-form:2 5i32 2: 1', '5i32'],
      ['1: {long-form:2 } 2: 1', '}'],
      ['long-form:2 1.5 2: 1', '1.5'],
      ['long-form:2 `00` 2: 1', '`00`'],
      ['long-form:1 long-form:2 5', 'long-form:2'],
    ]) {
      expect(() => protoscopeBytes(text), text).toThrow(`long-form:${text.match(/long-form:(\d)/)![1]} before '${token}': it pads the varint right after it`);
    }
    expect(() => protoscopeBytes('1: 5 long-form:2')).toThrow('long-form:2 at the end');
    // Where the writer puts it: before a tag, a value, a length, a group's end.
    expect(hex('long-form:1 1: long-form:2 5')).toBe('8800' + '858000');
    expect(hex('1: long-form:1 {"a"}')).toBe('0a' + '8100' + '61');
    expect(hex('1: !{\n  long-form:1\n}')).toBe('0b' + '8c00');
    expect(hex('long-form:1 true')).toBe('8100');
  });
});
