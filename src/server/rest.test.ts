import { describe, expect, it } from 'vitest';
import { jsonShapeProblem, MAX_JSON_DEPTH, MAX_JSON_MEMBERS } from './rest.js';

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
});
