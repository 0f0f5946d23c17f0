// Attack f1, findings f1-1 and f1-4: what one step of the JSON comparison may cost.
// f1-1: 100 valid ignore paths (99 of `body..a` and 96 `.*`, and `body.a...a.*`, 90 `.a`) and a
// body of a 90-deep chain of objects with 5,000 keys at the bottom: every key worked out a set of
// ~8,900 positions (sorted, joined), while a step counted only keys: 7 steps of ~4.9 s each.
// f1-4: a body of arrays nested 524,000 deep (1 MiB) was given to JSON.parse (~400 ms; 2 s for
// 4 MiB), and each difference's path walked every level above it.
import { describe, expect, it } from 'vitest';
import { parseIgnore } from '../tools/mock-test.js';
import { compilePath, jsonDifferenceSteps, jsonRefusal, MAX_DESCENDING_SEGMENTS, MAX_JSON_BODY_VALUES, MAX_JSON_NESTING, parseJsonBody, STEP_NODES, type Json, type JsonIgnore } from './json-diff.js';
import { HttpMatcher } from './matcher.js';
import { postMock, postRequest } from './test-support.js';

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
    const mock = postMock('/deep', deep(1));
    const request = (body: Buffer) => postRequest('/deep', body);
    const missed = new HttpMatcher([mock]).match(request(deep(2)));
    expect(missed.miss && missed.closest?.differences).toEqual([
      `body: recorded 1048009 bytes "${'['.repeat(40)}"..., got 1048009 bytes "${'['.repeat(40)}"...; compared as bytes, not as JSON: the recorded body is JSON nested deeper than ${MAX_JSON_NESTING} levels`,
    ]);
    expect(new HttpMatcher([mock]).match(request(deep(1)))).toMatchObject({ miss: false, how: 'exact' });
  });
});

// h1-1: a mock body of 4 MiB, one object of 419,799 distinct keys with `{}` values, was given to
// JSON.parse in one step (0.8-1.2 s of the event loop per mock, in keploy_mock_test): only its
// nesting was bounded. Now its values are counted first (core/json-shape.ts, keys counted too).
describe('JSON bodies of more than MAX_JSON_BODY_VALUES values (h1-1)', () => {
  /** One object of `n` distinct keys with `{}` values: 1 + 2n values, keys counted. */
  const wide = (n: number) => Buffer.from(`{${Array.from({ length: n }, (_, i) => `"${i.toString(36)}":{}`).join(',')}}`);

  it("the attack's body is compared as bytes, not parsed, and the refusal says why", () => {
    const body = wide(419_799);
    expect(body.length).toBe(4_150_003); // (4,151,096 bytes as the YAML file that held it)
    expect(parseJsonBody(body)).toBeUndefined();
    expect(jsonRefusal(body)).toBe('JSON with more than 100,000 values (arrays, objects, strings, numbers and literals, object keys counted)');
    expect(MAX_JSON_BODY_VALUES).toBe(100_000);
  });

  it('counts each value after a colon and each key: exactly MAX_JSON_BODY_VALUES is parsed, one more is not', () => {
    // 1 + 2 × 49,999 = 99,999 and 1 + 2 × 50,000 = 100,001.
    const at = wide(49_999);
    expect(parseJsonBody(at)).toEqual(JSON.parse(at.toString()));
    expect(jsonRefusal(at)).toBeUndefined();
    const over = wide(50_000);
    expect(parseJsonBody(over)).toBeUndefined();
    expect(jsonRefusal(over)).toMatch(/^JSON with more than 100,000 values/);
    // An array and its 99,999 empty objects: 100,000; one more is over.
    const objects = (n: number) => Buffer.from(`[ ${Array<string>(n).fill('{ }').join(' , ')} ]`);
    expect(parseJsonBody(objects(99_999))).toHaveLength(99_999);
    expect(parseJsonBody(objects(100_000))).toBeUndefined();
    // Commas, colons and brackets inside keys and strings are not values.
    const strings = Buffer.from(`{"a,b:[c]{":"${'x,[]{}:'.repeat(200_000)}","\\"":[1,"\\\\"]}`);
    expect(parseJsonBody(strings)).toEqual(JSON.parse(strings.toString()));
  });

  it('a miss says the body was compared as bytes; the same bytes still match exactly', () => {
    const mock = postMock('/wide', wide(419_799));
    const request = (body: Buffer) => postRequest('/wide', body);
    const missed = new HttpMatcher([mock]).match(request(Buffer.from('[[],[]]')));
    expect(missed.miss && missed.closest?.differences).toEqual([
      `body: recorded 4150003 bytes "{\\"0\\":{},\\"1\\":{},\\"2\\":{},\\"3\\":{},\\"4\\":{},\\"5\\":"..., got 7 bytes "[[],[]]"; compared as bytes, not as JSON: the recorded body is JSON with more than 100,000 values (arrays, objects, strings, numbers and literals, object keys counted)`,
    ]);
    expect(new HttpMatcher([mock]).match(request(wide(419_799)))).toMatchObject({ miss: false, how: 'exact' });
  });
});

// j1-2: bodies were compared after JSON.parse, as doubles. A request for account 9007199254740992
// matched the mock recorded for 9007199254740993 as "json" (keploy_mock_test with strict reported
// success: 1 replayed, 0 missed), 1e400 matched 2e999 (both Infinity), 0.10000000000000001 matched
// 0.1, a body with a key twice matched one with the key once, and a miss quoted numbers never sent.
describe('JSON bodies holding a number JavaScript cannot hold exactly, or a key twice (j1-2)', () => {
  /** A body as a miss line shows it: its first 40 characters, quoted. */
  const shown = (body: string) => (body.length <= 40 ? JSON.stringify(body) : `${JSON.stringify(body.slice(0, 40))}...`);
  const match = (recorded: string, got: string) => new HttpMatcher([postMock('/transfer', recorded)]).match(postRequest('/transfer', got));
  const cases: [string, string, string][] = [
    ['{"account_id":9007199254740993,"amount":100}', '{"account_id":9007199254740992,"amount":100}', 'the recorded body is JSON holding a number JavaScript cannot hold exactly (9007199254740993)'],
    ['{"order_id":1234567890123456789}', '{"order_id":1234567890123456788}', 'the recorded body is JSON holding a number JavaScript cannot hold exactly (1234567890123456789)'],
    ['{"amount":1e400}', '{"amount":2e999}', 'the recorded body is JSON holding a number JavaScript cannot hold exactly (1e400)'],
    ['{"v":0.1}', '{"v":0.10000000000000001}', 'the request body is JSON holding a number JavaScript cannot hold exactly (0.10000000000000001)'],
    ['{"role":"user"}', '{"role":"admin","role":"user"}', 'the request body is JSON with the key "role" twice in one object'],
  ];
  for (const [recorded, got, why] of cases) {
    it(`${recorded} against ${got}: compared as bytes, a miss that says why; the same bytes still match`, () => {
      const missed = match(recorded, got);
      expect(missed.miss).toBe(true);
      expect(missed.miss && missed.closest?.differences).toEqual([
        `body: recorded ${recorded.length} bytes ${shown(recorded)}, got ${got.length} bytes ${shown(got)}; compared as bytes, not as JSON: ${why}`,
      ]);
      expect(match(recorded, recorded)).toMatchObject({ miss: false, how: 'exact' });
      expect(match(got, got)).toMatchObject({ miss: false, how: 'exact' });
    });
  }

  it('a miss never quotes a number the program did not send (the recording held ...993, the program sent ...999)', () => {
    const missed = match('{"account_id":9007199254740993,"amount":100}', '{"account_id":9007199254740999,"amount":100}');
    const line = (missed.miss && missed.closest?.differences?.join('\n')) || '';
    expect(line).toContain('9007199254740999');
    expect(line).not.toMatch(/9007199254740992|9007199254741000/);
  });

  it('numbers held exactly are still compared as JSON, in any spelling of the same value', () => {
    for (const [recorded, got] of [
      ['{"a":1,"b":0.30000000000000004,"c":1e21,"d":-9007199254740991}', '{ "d": -9007199254740991, "c": 1E+21, "b": 0.30000000000000004, "a": 1.0 }'],
      ['{"v":5e-324,"w":1.7976931348623157e308,"z":0e999}', '{"z":0,"w":17976931348623157e292,"v":0.5e-323}'],
    ] as const) {
      expect(jsonRefusal(Buffer.from(recorded))).toBeUndefined();
      expect(match(recorded, got)).toMatchObject({ miss: false, how: 'json' });
    }
    expect(match('{"a":1}', '{"a":2}')).toMatchObject({ miss: true, closest: { differences: ['body $.a: recorded 1, got 2'] } });
    // The same key in two objects is no duplicate; an escaped spelling of a key is the same key.
    expect(parseJsonBody(Buffer.from('{"a":{"k":1},"b":{"k":2}}'))).toEqual({ a: { k: 1 }, b: { k: 2 } });
    const escaped = Buffer.from('{"k":1,"\\u006b":2}');
    expect(parseJsonBody(escaped)).toBeUndefined();
    expect(jsonRefusal(escaped)).toBe('JSON with the key "k" twice in one object');
  });
});
