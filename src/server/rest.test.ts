import { describe, expect, it } from 'vitest';
import { jsonShape } from '../core/json-shape.js';
import { jsonShapeProblem, MAX_JSON_DEPTH, MAX_JSON_MEMBERS, MAX_JSON_VALUES } from './rest.js';

describe('jsonShapeProblem (a body judged before JSON.parse and the schemas)', () => {
  it('passes ordinary bodies, brackets and commas inside strings included', () => {
    expect(jsonShapeProblem('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call","arguments":{"id":"x","command":"p a[1], b{2}, \\"[[[\\""}}}')).toBeUndefined();
    expect(jsonShapeProblem(`${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}`)).toBeUndefined();
    expect(jsonShapeProblem(`[${Array.from({ length: MAX_JSON_MEMBERS }, () => '1').join(',')}]`)).toBeUndefined();
    expect(jsonShapeProblem(`"${'['.repeat(100_000)}"`)).toBeUndefined();
  });

  it('refuses a body nested deeper than the bound, or a container with too many members, naming which', () => {
    expect(jsonShapeProblem(`${'['.repeat(MAX_JSON_DEPTH + 1)}${']'.repeat(MAX_JSON_DEPTH + 1)}`)).toBe(`JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
    expect(jsonShapeProblem(`{"x":${'['.repeat(1_000_000)}`)).toMatch(/nested deeper/);
    const wide = `{${Array.from({ length: MAX_JSON_MEMBERS + 1 }, (_, i) => `"k${i}":1`).join(',')}}`;
    expect(jsonShapeProblem(wide)).toBe('a JSON array or object with more than 10,000 members');
  });

  it("tells a string's closing quote by the run of backslashes before it", () => {
    const deep = `${'['.repeat(MAX_JSON_DEPTH + 1)}${']'.repeat(MAX_JSON_DEPTH + 1)}`;
    // "a\\" ends after an even run: the brackets after it are structure.
    expect(jsonShapeProblem(`["a\\\\",${deep}]`)).toMatch(/nested deeper/);
    // "a\\\"...": an odd run escapes the quote, so the brackets are still inside the string.
    expect(jsonShapeProblem(`["a\\\\\\"${deep}"]`)).toBeUndefined();
    expect(jsonShapeProblem(`["\\"${deep}"]`)).toBeUndefined();
    expect(jsonShapeProblem(`["${'\\\\'.repeat(50_000)}",${deep}]`)).toMatch(/nested deeper/);
  });

  it('counts every value, containers and scalars, and refuses a body past MAX_JSON_VALUES (attack e1-2)', () => {
    // The report's body: 137 rows of 9,999 empty arrays under params._meta.x, 4.1 MB that passed
    // the depth and member bounds and held the event loop ~500 ms in JSON.parse.
    const row = `[${Array(9999).fill('[]').join(',')}]`;
    const e12 = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":[${Array(137).fill(row).join(',')}]}}}`;
    expect(e12.length).toBeGreaterThan(4_100_000);
    expect(jsonShapeProblem(e12)).toBe(
      'JSON with more than 200,000 values (arrays, objects, strings, numbers and literals, object keys counted); a body may hold at most 200,000: send fewer, or split a batch into several requests',
    );
    // Exactly at the bound passes, one more is refused: the root, its rows and their members,
    // blanks anywhere, empty containers counted, object keys and brackets inside strings not.
    const rows = (unit: string) => Array.from({ length: 20 }, () => `[ ${Array(9_998).fill(unit).join(' , ')} ]`).join(',');
    const more = (n: number) => Array(n).fill(' 1').join(',');
    // 1 + 20 + 20 × 9,998 = 199,981
    expect(jsonShapeProblem(`[${rows('[]')}, ${more(19)} ]`)).toBeUndefined();
    expect(jsonShapeProblem(`[${rows('[]')}, ${more(20)} ]`)).toMatch(/more than 200,000 values/);
    expect(jsonShapeProblem(`[${rows('{ }')}, ${more(19)}]`)).toBeUndefined();
    expect(jsonShapeProblem(`[${rows('{ }')}, ${more(20)}]`)).toMatch(/more than 200,000 values/);
    // An object, its key and its value are three values: 20 × 9,998 of {"k":1} are 599,981.
    expect(jsonShapeProblem(`[${rows('{"k":1}')}]`)).toMatch(/more than 200,000 values/);
    expect(jsonShapeProblem(`[${rows('"a,[]{}"')},${more(19)}]`)).toBeUndefined();
    expect(MAX_JSON_VALUES).toBe(200_000);
  });

  it('counts the value after a colon, and the key, in objects (attack 18ad, e1-2 partial)', () => {
    // The report's body: 20 objects of 9,990 distinct keys with `{}` values (2.68 MB). Its `{}`
    // after each colon went uncounted: ~199,990 values for the count, ~400,000 for JSON.parse.
    const object = (keys: number, row: number) => `{${Array.from({ length: keys }, (_, i) => `"k${row}_${i}":{}`).join(',')}}`;
    const report = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":[${Array.from({ length: 20 }, (_, r) => object(9_990, r)).join(',')}]}}}`;
    expect(report.length).toBe(2_675_207);
    expect(jsonShapeProblem(report)).toMatch(/^JSON with more than 200,000 values/);
    // The root, its 4 keys and 3 scalars, params, _meta and x with their keys (6), and 20 × (1 + 2 × 9,990).
    expect(jsonShape(report)).toEqual({ ok: true, depth: 6, values: 399_633, keys: 199_806, widest: 9_990 });
    // At the edge: 10 objects of 9,999 keys are 1 + 10 × 19,999 = 199,991 values; 9 more pass, 10 do not.
    const objects = Array.from({ length: 10 }, (_, r) => object(9_999, r)).join(',');
    expect(jsonShapeProblem(`[${objects},${Array<string>(9).fill('1').join(',')}]`)).toBeUndefined();
    expect(jsonShapeProblem(`[${objects},${Array<string>(10).fill('1').join(',')}]`)).toMatch(/^JSON with more than 200,000 values/);
    // Scalars after a colon count as well: {"a":1,"b":"x","c":null} is 1 + 3 keys + 3 values.
    expect(jsonShape('{"a":1,"b":"x","c":null}')).toEqual({ ok: true, depth: 1, values: 7, keys: 3, widest: 3 });
  });
});
