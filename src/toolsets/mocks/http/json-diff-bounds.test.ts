// Attack f1, findings f1-1 and f1-4: what one step of the JSON comparison may cost.
// f1-1: 100 valid ignore paths (99 of `body..a` and 96 `.*`, and `body.a...a.*`, 90 `.a`) and a
// body of a 90-deep chain of objects with 5,000 keys at the bottom: every key worked out a set of
// ~8,900 positions (sorted, joined), while a step counted only keys: 7 steps of ~4.9 s each.
// f1-4: a body of arrays nested 524,000 deep (1 MiB) was given to JSON.parse (~400 ms; 2 s for
// 4 MiB), and each difference's path walked every level above it.
import { describe, expect, it } from 'vitest';
import { parseIgnore } from '../tools/mock-test.js';
import { buildHttpMock } from './keploy.js';
import { compilePath, jsonDifferenceSteps, jsonRefusal, MAX_DESCENDING_SEGMENTS, MAX_JSON_NESTING, parseJsonBody, STEP_NODES, type Json, type JsonIgnore } from './json-diff.js';
import { HttpMatcher } from './matcher.js';

/** Runs a comparison to its end: its differences, its steps, and the work the meter was told of each. */
function run(recorded: Json, got: Json, ignore: JsonIgnore) {
  const works: number[] = [];
  const steps = jsonDifferenceSteps(recorded, got, ignore, 5, { step: (work) => works.push(work) });
  let count = 1;
  let step = steps.next();
  for (; !step.done; count++) step = steps.next();
  return { differences: step.value, steps: count, works, total: works.reduce((a, b) => a + b, 0) };
}

describe('ignored paths whose positions pile up (f1-1)', () => {
  const DEPTH = 90;
  // The attack's body: {"a":{"a":...{}}} 90 deep, and the same with `keys` keys at the bottom.
  const chain = (keys: number): Json => {
    const bottom = Object.fromEntries(Array.from({ length: keys }, (_, i) => [`k${i}`, 1]));
    return JSON.parse(`${'{"a":'.repeat(DEPTH)}${JSON.stringify(bottom)}${'}'.repeat(DEPTH)}`) as Json;
  };
  // The attack's 100 ignore paths, as keploy_mock_test takes them, and 99 different ones like them.
  const attack = [...Array<string>(99).fill(`body..a${'.*'.repeat(96)}`), `body${'.a'.repeat(DEPTH)}.*`];
  const different = [...Array.from({ length: 99 }, (_, i) => `body..a${'.*'.repeat(94)}.x${i}`), `body${'.a'.repeat(DEPTH)}.*`];
  // (keploy_mock_test now refuses the 99 different ones, below: the comparison is held to its bounds without that.)
  const ignore = (fields: readonly string[]): JsonIgnore => ({ keys: new Set(), paths: fields.map(compilePath), timeLike: true });
  // The most positions a set can hold: every step of every path (each followed once), and each path's end.
  const positions = (fields: readonly string[]) => [...new Set(fields)].reduce((n, p) => n + compilePath(p).steps.length + 1, 0);

  for (const [name, fields] of [
    ['the attack', attack],
    ['99 different', different],
  ] as const) {
    it(`${name} paths: the work on them counts in the steps; no step does more than STEP_NODES and one set`, () => {
      expect(fields.every((f) => f.length <= 200)).toBe(true);
      expect(JSON.stringify(chain(5000)).length).toBe(49_431);
      const plain = run(chain(0), chain(0), ignore(fields));
      expect(plain.differences).toEqual([]);
      // The meter hears of every step (before: there was none).
      expect(plain.works).toHaveLength(plain.steps);
      const wide = run(chain(0), chain(5000), ignore(fields));
      // The same comparison: the 5,000 keys are under `body.a...a.*`, so the bodies match.
      expect(wide.differences).toEqual([]);
      expect(wide.works).toHaveLength(wide.steps);
      // Past the STEP_NODES a step may do first, one value may cost a set (worked out in one go:
      // going through the positions it comes from, those it reaches, and its id: at most three
      // times all positions) and a key list (5,000 keys at the most here). Before: 7 steps for the
      // whole comparison, each of ~1,000 keys and as many sets of up to ~8,900 positions.
      for (const work of wide.works) expect(work).toBeLessThanOrEqual(STEP_NODES + 3 * positions(fields) + 5000);
      // The keys no path names (all 5,000 here) lead to one set, worked out once: each key costs its
      // listing, its turn and a look-up (before: a set of ~8,900 positions sorted and joined per key).
      expect(wide.total - plain.total).toBeLessThanOrEqual(3 * 5000 + 3 * positions(fields));
    });
  }

  it("keploy_mock_test takes the attack's paths (one path given 99 times) and refuses '..' paths of more than MAX_DESCENDING_SEGMENTS segments in all", () => {
    expect(parseIgnore(attack).ignoreJsonPaths).toHaveLength(100);
    expect(() => parseIgnore(different)).toThrow(
      `ignore: the JSON paths with '..' have ${99 * 97} segments in all (each '..', name, '*' and '[n]' counts one; a path given twice, once), at most ${MAX_DESCENDING_SEGMENTS} can be followed: give fewer or shorter paths with '..'`,
    );
    // 10 paths of 98 segments ('..' and 97 more, 200 characters) and one of 20 are as many as can be; one more path is refused.
    const paths = [...Array.from({ length: 10 }, (_, i) => `body..k${i}${'.*'.repeat(96)}`), `body..${Array.from({ length: 19 }, (_, i) => `n${i}`).join('.')}`];
    expect(paths.every((p) => p.length <= 200)).toBe(true);
    expect(parseIgnore([...paths, 'body.a.b.c', 'body.x[*].y']).ignoreJsonPaths).toHaveLength(13);
    expect(() => parseIgnore([...paths, 'body..z'])).toThrow(/have 1002 segments in all/);
  });

  it('follows a path given more than once as one', () => {
    const once = run(chain(0), chain(0), { keys: new Set(), paths: [compilePath(`$..a${'.*'.repeat(96)}`)] });
    const twice = run(chain(0), chain(0), { keys: new Set(), paths: Array.from({ length: 99 }, () => compilePath(`$..a${'.*'.repeat(96)}`)) });
    expect(once.works).toHaveLength(once.steps);
    expect(twice.total).toBe(once.total);
  });

  it('still tells a named key or index from the others under the same set', () => {
    const rules = { keys: new Set<string>(), paths: ['$..a.*.id', '$.*[1]', '$.x.Y'].map(compilePath) };
    const a: Json = { x: { y: 1, z: 1, q: [1, 2] }, a: { b: { id: 1, n: 1 } }, l: [1, 2, 3] };
    const b: Json = { x: { y: 2, z: 2, q: [1, 3] }, a: { b: { id: 2, n: 2 } }, l: [1, 5, 4] };
    // As before the change: `$.x.q[1]` is two levels under `$.*`, not one.
    expect(run(a, b, rules).differences).toEqual(['$.x.z: recorded 1, got 2', '$.x.q[1]: recorded 2, got 3', '$.a.b.n: recorded 1, got 2', '$.l[2]: recorded 3, got 4']);
  });
});

describe('JSON bodies nested deeper than MAX_JSON_NESTING (f1-4)', () => {
  // The attack's bodies: arrays 524,000 deep around five numbers (1,048,009 bytes).
  const DEPTH = 524_000;
  const deep = (v: number) => Buffer.from(`${'['.repeat(DEPTH)}${Array<number>(5).fill(v).join(',')}${']'.repeat(DEPTH)}`);

  it('are compared as bytes, not parsed, and the refusal says why', () => {
    const body = deep(1);
    expect(body.length).toBe(1_048_009);
    // (Not printed when it fails: a value 524,000 deep overflows the stack of the printer.)
    expect(parseJsonBody(body) === undefined).toBe(true);
    expect(jsonRefusal(body)).toBe(`JSON nested deeper than ${MAX_JSON_NESTING} levels`);
    const nested = (n: number) => Buffer.from(`${'[{"k":'.repeat(n / 2)}1${'}]'.repeat(n / 2)}`);
    expect(parseJsonBody(nested(MAX_JSON_NESTING))).toBeDefined();
    expect(parseJsonBody(nested(MAX_JSON_NESTING + 2))).toBeUndefined();
    // Brackets in strings (escaped quotes and backslashes too) are not nesting.
    const text = Buffer.from(`{"s":"${'[\\"'.repeat(1000)}\\\\","t":"${'{'.repeat(1000)}"}`);
    expect(parseJsonBody(text)).toEqual(JSON.parse(text.toString()));
    expect(jsonRefusal(text)).toBeUndefined();
  });

  it('a miss says the body was compared as bytes; the same bytes still match exactly', () => {
    const mock = buildHttpMock(
      {
        method: 'POST',
        url: 'http://h/deep',
        requestHeaders: [['Content-Type', 'application/json']],
        requestBody: deep(1),
        statusCode: 200,
        responseHeaders: [],
        responseBody: 'ok',
        requestTime: new Date(0),
        responseTime: new Date(0),
      },
      { name: 'mock-0' },
    );
    const request = (body: Buffer) => ({ method: 'POST', url: '/deep', scheme: 'http' as const, host: 'h', headers: [['Content-Type', 'application/json']] as Array<[string, string]>, body });
    const missed = new HttpMatcher([mock]).match(request(deep(2)));
    expect(missed.miss && missed.closest?.differences).toEqual([
      `body: recorded 1048009 bytes "${'['.repeat(40)}"..., got 1048009 bytes "${'['.repeat(40)}"...; compared as bytes, not as JSON: the recorded body is JSON nested deeper than ${MAX_JSON_NESTING} levels`,
    ]);
    expect(new HttpMatcher([mock]).match(request(deep(1)))).toMatchObject({ miss: false, how: 'exact' });
  });
});
