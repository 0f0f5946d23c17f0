import { describe, expect, it } from 'vitest';
import { exactNumber, jsonShape } from './json-shape.js';

describe('jsonShape (one linear scan of JSON text before JSON.parse)', () => {
  it('counts every value wherever it stands, and every object key, as JSON.parse builds them', () => {
    expect(jsonShape('{"k":{}}')).toEqual({ ok: true, depth: 2, values: 3, keys: 1, widest: 1 });
    expect(jsonShape(' [ 1 , "a" , true , null , -2.5e3 , [ ] , { } ] ')).toEqual({ ok: true, depth: 2, values: 8, keys: 0, widest: 7 });
    expect(jsonShape('{"a":{"b":[1,{"c":"d"}]},"e":[]}')).toEqual({ ok: true, depth: 4, values: 11, keys: 4, widest: 2 });
    expect(jsonShape('7')).toEqual({ ok: true, depth: 0, values: 1, keys: 0, widest: 0 });
    expect(jsonShape('')).toEqual({ ok: true, depth: 0, values: 0, keys: 0, widest: 0 });
    // Commas, colons, brackets and escaped quotes inside keys and strings are not structure.
    expect(jsonShape('{"a,[{:\\"":"],}:\\\\","b":["\\"[1,2]"]}')).toEqual({ ok: true, depth: 2, values: 6, keys: 2, widest: 2 });
  });

  it('stops at the first bound passed, naming it', () => {
    expect(jsonShape('[[[]]]', { depth: 2 })).toEqual({ ok: false, bound: 'depth', problem: 'JSON nested deeper than 2 levels' });
    expect(jsonShape('[[[]]]', { depth: 3 }).ok).toBe(true);
    expect(jsonShape('{"a":1,"b":2,"c":3}', { members: 2 })).toEqual({ ok: false, bound: 'members', problem: 'a JSON array or object with more than 2 members' });
    expect(jsonShape('{"a":1,"b":2}', { members: 2 }).ok).toBe(true);
    // {"k":{}} is three values: the object, its key, and the object after the colon.
    expect(jsonShape('{"k":{}}', { values: 3 }).ok).toBe(true);
    expect(jsonShape('{"k":{}}', { values: 2 })).toEqual({
      ok: false,
      bound: 'values',
      problem: 'JSON with more than 2 values (arrays, objects, strings, numbers and literals, object keys counted)',
    });
  });

  it('scans text that is not JSON as far as it goes, never counting less than JSON.parse builds before its error', () => {
    // An unterminated string ends the scan.
    expect(jsonShape('["a", "b')).toEqual({ ok: true, depth: 1, values: 3, keys: 0, widest: 2 });
    // Brackets opened where no value may stand still count toward the depth.
    expect(jsonShape('[1 [[[', { depth: 3 })).toMatchObject({ ok: false, bound: 'depth' });
  });

  // j1-2: JSON.parse turned 9007199254740993 into ...992, 1e400 and 2e999 into Infinity, and kept
  // the last of two values under one key, so bodies compared after JSON.parse matched other bodies.
  it('with inexactNumbers, reports the first number JavaScript cannot hold exactly, as written (j1-2)', () => {
    const N = { inexactNumbers: true };
    expect(jsonShape('[9007199254740993]')).not.toHaveProperty('inexact'); // (not looked for unless asked)
    expect(jsonShape('{"account_id":9007199254740993,"amount":100}', N)).toEqual({ ok: true, depth: 1, values: 5, keys: 2, widest: 2, inexact: '9007199254740993' });
    expect(jsonShape('{"order_id":1234567890123456789}', N)).toMatchObject({ inexact: '1234567890123456789' });
    expect(jsonShape('[1, 1e400, 2e999]', N)).toMatchObject({ inexact: '1e400' });
    expect(jsonShape('{"v":0.10000000000000001}', N)).toMatchObject({ inexact: '0.10000000000000001' });
    expect(jsonShape('[-1e-400]', N)).toMatchObject({ inexact: '-1e-400' });
    // Numbers in strings and keys are not numbers.
    expect(jsonShape('{"9007199254740993":"1e400"}', N)).toEqual({ ok: true, depth: 1, values: 3, keys: 1, widest: 1 });
    for (const text of [
      '0',
      '-0',
      '0.1',
      '100',
      '9007199254740991',
      '-9007199254740992',
      '0.30000000000000004',
      '1e21',
      '1E+21',
      '1.7976931348623157e308',
      '5e-324',
      '0e999',
      '0.000e-999',
      '123456789012345.0',
    ]) {
      expect([text, exactNumber(text)]).toEqual([text, true]);
    }
    for (const text of ['9007199254740993', '1234567890123456788', '1e400', '2e999', '-1e309', '1e-400', '0.10000000000000001', '1.7976931348623159e308', '99999999999999991611392']) {
      expect([text, exactNumber(text)]).toEqual([text, false]);
    }
    // A number of a million digits is read once, to its end (its exponent is not its last digits).
    const long = `[${'1'.repeat(1_000_000)}e-999999, 2]`;
    expect(jsonShape(long, N)).toMatchObject({ ok: true, values: 3, widest: 2, inexact: `${'1'.repeat(1_000_000)}e-999999` });
  });

  it('with duplicateKeys, reports the first key given twice in one object, escapes decoded (j1-2)', () => {
    expect(jsonShape('{"role":"admin","role":"user"}', { duplicateKeys: true })).toEqual({ ok: true, depth: 1, values: 5, keys: 2, widest: 2, duplicateKey: 'role' });
    expect(jsonShape('{"role":"admin","role":"user"}')).not.toHaveProperty('duplicateKey');
    expect(jsonShape('{"k":1,"\\u006b":2}', { duplicateKeys: true })).toMatchObject({ duplicateKey: 'k' });
    expect(jsonShape('{"a":{"k":1},"b":{"k":2},"c":[{"k":3},{"k":4}]}', { duplicateKeys: true })).not.toHaveProperty('duplicateKey');
    expect(jsonShape('{"a":{"k":1,"x":[{"k":2}],"k":3}}', { duplicateKeys: true })).toMatchObject({ duplicateKey: 'k' });
    expect(jsonShape('["k","k"]', { duplicateKeys: true })).not.toHaveProperty('duplicateKey');
  });
});
