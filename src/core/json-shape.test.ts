import { describe, expect, it } from 'vitest';
import { jsonShape } from './json-shape.js';

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
});
