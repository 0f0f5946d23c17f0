import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { protoscopeBytes, protoscopeText, ProtoscopeError } from './protoscope.js';

const FIXTURES = path.join(import.meta.dirname, 'fixtures', 'protoscope');
const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const bytes = (text: string) => Buffer.from(protoscopeBytes(text));

describe('protoscope text (what Keploy writes as decoded_data)', () => {
  // protoscope's own goldens (default writer options), as they are in its testdata/.
  for (const name of ['message', 'groups', 'packed', 'proto3', 'maps', 'oneof']) {
    it(`writes ${name}.pb exactly as protoscope's golden, and reads the golden back to the bytes`, () => {
      const pb = readFileSync(path.join(FIXTURES, `${name}.pb`));
      const golden = readFileSync(path.join(FIXTURES, `${name}.pb.golden`), 'utf8');
      const want = golden.slice(golden.indexOf('\n') + 1);
      expect(protoscopeText(pb)).toBe(want);
      expect(bytes(want).equals(pb)).toBe(true);
    });
  }

  it('writes the shapes of a Keploy sample (keploy/samples-go grpc-protoscope/README.md): i32 floats, i64 remarks, folded blocks', () => {
    // The README's decoded_data, with its elided long string (field 4) shortened to one line.
    const keploy = [
      '1: 67.0i32  # 0x42860000i32',
      '4: {"{\\"hits\\":[]}"}',
      '8: 0',
      '9: {',
      '  3: {',
      '    1: {',
      '      1: {"type"}',
      '      2: {3: {"OVS"}}',
      '    }',
      '    1: {',
      '      1: {"candidateCnt"}',
      '      2: {2: 0.0}   # 0x0i64',
      '    }',
      '  }',
      '  2: {',
      '    1: {',
      '      1: {"candidateCnt"}',
      '      2: {2: 1.0}   # 0x3ff0000000000000i64',
      '    }',
      '    1: {',
      '      1: {"resultCnt"}',
      '      2: {2: 1.0}   # 0x3ff0000000000000i64',
      '    }',
      '  }',
      '}',
      '',
    ].join('\n');
    const pb = bytes(keploy);
    expect(pb.subarray(0, 5).toString('hex')).toBe('0d00008642');
    expect(protoscopeText(pb)).toBe(keploy);
  });

  it('writes varints as int64, strings with escapes, bytes as hex, and what does not parse as a hex tail', () => {
    expect(protoscopeText(hex('08 96 01'))).toBe('1: 150\n');
    expect(protoscopeText(hex('08 ff ff ff ff ff ff ff ff ff 01'))).toBe('1: -1\n');
    expect(protoscopeText(hex('08 80 00'))).toBe('1: long-form:1 0\n');
    expect(protoscopeText(Buffer.from([0x0a, 4, ...Buffer.from('a"\n\\')]))).toBe('1: {"a\\"\\n\\\\"}\n');
    expect(protoscopeText(hex('0a 03 ff fe 00'))).toBe('1: {`fffe00`}\n');
    expect(protoscopeText(hex('0a 00'))).toBe('1: {}\n');
    expect(protoscopeText(hex('08 01 00 01'))).toBe('1: 1\n`0001`\n');
    expect(protoscopeText(hex('1d 00 00 c0 7f'))).toBe('3: 0x7fc00000i32\n');
    expect(protoscopeText(hex('1d 01 00 00 00'))).toBe('3: 1i32\n');
    expect(protoscopeText(hex('19 00 00 00 00 00 00 f0 7f'))).toBe('3: inf64\n');
    expect(protoscopeText(hex('1d 00 24 74 49'))).toBe('3: 1.0e06i32  # 0x49742400i32\n');
    expect(protoscopeText(hex('19 9a 99 99 99 99 99 b9 3f'))).toBe('3: 0.1  # 0x3fb999999999999ai64\n');
    const long = 'a'.repeat(100); // not 'x': 0x78 0x78 parses as field 15 = 120
    expect(protoscopeText(Buffer.from([0x0a, 100, ...Buffer.from(long)]))).toBe(`1: {\n  "${'a'.repeat(80)}"\n  "${'a'.repeat(20)}"\n}\n`);
  });

  it('reads every text it writes back to the same bytes (random messages)', () => {
    for (let i = 0; i < 3000; i++) {
      const b = randomBytes(1 + (i % 48));
      if (i % 2 === 0) {
        b[0] = 0x0a;
        b[1] = b.length - 2;
      }
      expect(bytes(protoscopeText(b)).toString('hex')).toBe(b.toString('hex'));
    }
  });

  it('reads the explicit forms of the language, and says where text is not protoscope', () => {
    expect(bytes('1:VARINT 5 2:LEN 3 "abc" 3: !{4: 1} 5: -2z 6: true 7: long-form:1 {"x"}').toString('hex')).toBe('080512036162631b' + '2001' + '1c' + '2803' + '3001' + '3a810078');
    expect(bytes('1: 1.5i32 2: -3i64 # a remark\n`ab`').toString('hex')).toBe('0d0000c03f' + '11fdffffffffffffff' + 'ab');
    expect(() => protoscopeBytes('1: {"unclosed"')).toThrow(ProtoscopeError);
    expect(() => protoscopeBytes('hello world')).toThrow(/unknown token 'hello'/);
  });
});
