// Attack 18u P4: a gRPC mock's `decoded_data` (protoscope text from the set) was assembled into
// bytes when the replayer was built, in one turn of the event loop and with no bound: a 30 MiB
// `{}{}...` took the server's heap (it died), 16 MiB held the loop 6.4 s, and a literal over
// ~120 KB overflowed `push(...bytes)`, after which the text itself was replayed as the message.
// Now a mock's text is bounded (MAX_DECODED_TEXT) and so are its bytes (MAX_MOCK_EXCHANGE_BYTES),
// the text is assembled in slices, and a mock that cannot be read is refused, saying why.
import { describe, expect, it } from 'vitest';
import { TimeSlice } from '../../../core/wait.js';
import type { Mock } from '../keploy/types.js';
import { MAX_MOCK_EXCHANGE_BYTES } from '../protocol.js';
import { turnsMarked } from '../../../../test/helpers/stall.js';
import { MAX_DECODED_TEXT, readGrpcMock } from './keploy.js';
import { GrpcIndex } from './matcher.js';
import { protoscopeBytes } from './protoscope.js';

/** One gRPC mock for `path` whose response message is `decoded` (protoscope text). */
const mock = (path: string, decoded: string): Mock =>
  ({
    version: 'api.keploy.io/v1beta1',
    kind: 'gRPC',
    name: 'mock-0',
    spec: {
      grpcReq: { headers: { pseudo_headers: { ':path': path }, ordinary_headers: {} }, body: { compression_flag: 0, message_length: 2, decoded_data: '2: 3' } },
      grpcResp: {
        headers: { pseudo_headers: { ':status': '200' }, ordinary_headers: {} },
        body: { compression_flag: 0, message_length: 0, decoded_data: decoded },
        trailers: { pseudo_headers: {}, ordinary_headers: { 'grpc-status': '0' } },
      },
    },
  }) as unknown as Mock;

/** A slice that counts the turns of the loop in which the work looked at it. */
class CountingSlice extends TimeSlice {
  readonly turns = turnsMarked();
  override over(): boolean {
    this.turns.mark();
    return super.over();
  }
}

async function build(m: Mock) {
  const warnings: string[] = [];
  const slice = new CountingSlice(5);
  const index = await GrpcIndex.build([m], slice, (w) => warnings.push(w));
  return { index, warnings, turns: slice.turns.count() };
}

const request = [{ compressed: false, data: Buffer.from('1003', 'hex') }];

describe('gRPC decoded_data read from a set (attack 18u P4)', () => {
  it(`a mock with more than MAX_DECODED_TEXT of text is refused, naming the bound, and nothing is assembled`, async () => {
    const { index, warnings } = await build(mock('/s.S/Big', '{}'.repeat(MAX_DECODED_TEXT / 2 + 1)));
    expect(index.size).toBe(0);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`more than the ${MAX_DECODED_TEXT} one mock may hold`);
    // A call to the method misses, saying why its mock is not there.
    const m = index.match('/s.S/Big', request);
    expect('miss' in m && m.miss).toContain('not replayed');
  });

  it('braces whose length prefixes pass MAX_MOCK_EXCHANGE_BYTES are refused, naming the bound, assembled in many turns', async () => {
    const { index, warnings, turns } = await build(mock('/s.S/Braces', '{}'.repeat(MAX_MOCK_EXCHANGE_BYTES + 1)));
    expect(index.size).toBe(0);
    expect(warnings[0]).toContain(`more than the ${MAX_MOCK_EXCHANGE_BYTES} bytes one mock`);
    // Before: one turn for the whole text (and 1 GB of frame objects for a few MiB of it).
    expect(turns).toBeGreaterThan(4);
  });

  it('braces within the bounds are assembled (a zero length prefix each), in many turns of the loop', async () => {
    const n = 400_000;
    const { index, warnings, turns } = await build(mock('/s.S/Ok', '{}'.repeat(n)));
    expect(warnings).toEqual([]);
    const m = index.match('/s.S/Ok', request);
    expect('call' in m).toBe(true);
    const data = 'call' in m ? Buffer.from(m.call.responseMessages[0]!.data) : Buffer.alloc(0);
    expect(data.equals(Buffer.alloc(n))).toBe(true);
    // Before: one turn (the build paused between mocks only).
    expect(turns).toBeGreaterThan(4);
  });

  it('a 200 KB string literal and a 200 KB hex literal assemble to their bytes (before: RangeError, then the text was replayed)', async () => {
    const bytes = Buffer.from(Array.from({ length: 200_000 }, (_, i) => 0x61 + (i % 26)));
    expect(Buffer.from(protoscopeBytes(`1: {"${bytes.toString('latin1')}"}`)).equals(Buffer.concat([Buffer.from([0x0a, 0xc0, 0x9a, 0x0c]), bytes]))).toBe(true);
    const { index, warnings } = await build(mock('/s.S/Str', `"${bytes.toString('latin1')}" \`${bytes.toString('hex')}\``));
    expect(warnings).toEqual([]);
    const m = index.match('/s.S/Str', request);
    expect('call' in m && Buffer.from(m.call.responseMessages[0]!.data).equals(Buffer.concat([bytes, bytes]))).toBe(true);
  });

  it('a literal whose bytes pass MAX_MOCK_EXCHANGE_BYTES is refused, not replayed as its text', async () => {
    // Literals of 64 KiB each (one hex literal is at most 256 KiB, the most a message is written as text).
    const { index, warnings } = await build(mock('/s.S/Hex', `\`${'00'.repeat(64 * 1024)}\` `.repeat(MAX_MOCK_EXCHANGE_BYTES / (64 * 1024) + 1)));
    expect(index.size).toBe(0);
    expect(warnings[0]).toContain(`more than the ${MAX_MOCK_EXCHANGE_BYTES} bytes one mock`);
  });

  // Attack 18v Q1: one token is read between two looks at the clock, and a word of 4 MiB of digits was one 0.8 s block,
  // its number then cut to its low 64 bits.
  it('a word longer than any protoscope word is refused as soon as it is, and a number must fit 64 bits', async () => {
    const { index, warnings } = await build(mock('/s.S/Digits', `1: ${'1'.repeat(4 * 1024 * 1024 - 16)}`));
    expect(index.size).toBe(0);
    expect(warnings).toEqual([expect.stringContaining('protoscope at byte 132: a word of more than 128 characters')]);
    expect(() => protoscopeBytes('1: 18446744073709551616')).toThrow(/does not fit 64 bits/);
    expect(() => protoscopeBytes('1: -9223372036854775809')).toThrow(/does not fit 64 bits/);
    expect(Buffer.from(protoscopeBytes('1: 18446744073709551615')).toString('hex')).toBe('08ffffffffffffffffff01');
    expect(Buffer.from(protoscopeBytes('1: -9223372036854775808')).toString('hex')).toBe('0880808080808080808001');
    // Attack 18w S2: checked before the tag's shift, the zigzag and the i32 narrowing, numbers still wrapped.
    expect(() => protoscopeBytes('2305843009213693953: 5')).toThrow(/field number 2305843009213693953 is outside 0..2305843009213693951/);
    expect(() => protoscopeBytes('1: 4294967296i32')).toThrow(/does not fit 32 bits/);
    expect(() => protoscopeBytes('1: 9223372036854775808z')).toThrow(/outside the signed 64-bit range/);
    expect(Buffer.from(protoscopeBytes('2305843009213693951: 5')).toString('hex')).toBe('f8ffffffffffffffff0105');
    expect(Buffer.from(protoscopeBytes('1: -1z 2: 4294967295i32')).toString('hex')).toBe('080115ffffffff');
  });

  // Attack 18w S1: one 4 MiB escaped literal was one ~200 ms block, and 1,024 literals of 4 KiB of escapes one step.
  it('a string literal longer than the writer ever writes is refused, and literals are read a bounded number of bytes a step', async () => {
    const long = await build(mock('/s.S/Long', `"${'\\x00'.repeat(300_000)}"`));
    expect(long.index.size).toBe(0);
    expect(long.warnings).toEqual([expect.stringContaining(`a string literal of more than ${4 * 256 * 1024 + 2} characters`)]);
    const many = await build(mock('/s.S/Many', Array.from({ length: 1000 }, () => `"${'\\x01'.repeat(1000)}"`).join(' ')));
    expect(many.warnings).toEqual([]);
    expect(many.index.size).toBe(1);
    // 4 MB of text: at most 64 KiB a step, so some 60 looks at the clock; before, the 1,000 tokens were one step (one turn).
    expect(many.turns).toBeGreaterThan(4);
  });

  it('text that is not protoscope is refused with the reason, not replayed as its UTF-8 bytes', async () => {
    const { index, warnings } = await build(mock('/s.S/Text', 'hello world'));
    expect(index.size).toBe(0);
    expect(warnings).toEqual([expect.stringContaining("cannot be read as protoscope (protoscope at byte 5: unknown token 'hello')")]);
    expect(readGrpcMock(mock('/s.S/Text', 'hello world'))).toBeUndefined();
  });
});
