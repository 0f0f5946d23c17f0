// Attack b1, findings b1-3 and b1-2: the JSON comparison of a request with a mock was one step on
// the event loop (a body of 1-4 MiB, with a path string built for every value and tested against
// every ignored path's regex: another client's ping waited 4-7.8 s), and a recursive walk (two
// bodies nested 100,000 deep threw RangeError, which the replayer answered 502 without counting
// it: strict passed). Now the walk keeps its own stack and yields every STEP_NODES values, paths
// are written only for a difference, ignored paths are followed segment by segment, and whatever
// keeps a request from being answered from the set is a counted miss.
import net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { TimeSlice } from '../../../core/wait.js';
import type { HttpMock } from '../keploy/types.js';
import { compilePath, jsonDifferenceSteps, jsonDifferences, MAX_JSON_BODY_VALUES, MAX_JSON_NESTING, preview, STEP_NODES, type Json } from './json-diff.js';
import { HttpMatcher, type MatchRequest } from './matcher.js';
import { HttpReplayer, type ReplayEvent } from './replayer.js';
import { closeServer, listen, postMock, postRequest, rawExchange, watchTurns } from './test-support.js';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups) await c();
});

const post = (body: string | Buffer, name = 'mock-0'): HttpMock => postMock('/big', body, name);
const request = (body: string | Buffer): MatchRequest => postRequest('/big', body);

const DEPTH = 100_000;
const deep = (inner = '') => `${'['.repeat(DEPTH)}${inner}${']'.repeat(DEPTH)}`;

/** Serves `matcher`'s replay on a local port; `events` gets what it says. */
async function serve(matcher: HttpMatcher, holdMiss?: () => Promise<void>) {
  const events: ReplayEvent[] = [];
  const replayer = new HttpReplayer({ matcher, onEvent: (e) => events.push(e), ...(holdMiss ? { holdMiss } : {}) });
  const server = net.createServer({ allowHalfOpen: true }, (socket) => void replayer.serve({ target: { host: 'h', port: 80 }, client: socket }, { scheme: 'http' }));
  const port = await listen(server);
  cleanups.push(() => closeServer(server));
  const send = async (body: string) => {
    const answer = (await rawExchange(port, `POST /big HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)).toString('latin1');
    return Number(/^HTTP\/1\.1 (\d+)/.exec(answer)?.[1]);
  };
  return { replayer, events, send };
}

describe('JSON bodies nested 100,000 deep (b1-2)', () => {
  it('compares them without recursion: equal, and differing at the bottom with the path cut short', () => {
    const a = JSON.parse(deep()) as Json;
    expect(jsonDifferences(a, JSON.parse(deep(' ')) as Json, new Set())).toEqual([]);
    const diffs = jsonDifferences(JSON.parse(deep('1')) as Json, JSON.parse(deep('2')) as Json, new Set());
    expect(diffs).toEqual([`$${'[0]'.repeat(16)}...(${DEPTH - 32} levels)...${'[0]'.repeat(16)}: recorded 1, got 2`]);
    // A nested value is shown by its start, not serialized whole (JSON.stringify recursed, and threw here).
    expect(preview(a)).toBe(`${'['.repeat(57)}...`);
    const gone = jsonDifferences({ a, b: 1 }, { b: 1 }, new Set());
    expect(gone).toEqual([`$.a: recorded ${'['.repeat(57)}..., got nothing`]);
  });

  it('the replayer answers the same body and a JSON-equal one from the set, and counts a different one as a miss', async () => {
    // As deep as a body is compared as JSON (f1-4: deeper ones are compared as bytes, below).
    const depth = MAX_JSON_NESTING - 1;
    const nested = (inner = '') => `${'['.repeat(depth)}${inner}${']'.repeat(depth)}`;
    const { replayer, events, send } = await serve(new HttpMatcher([post(nested()), post(nested(), 'mock-1'), post(nested(), 'mock-2')]));
    expect(await send(nested())).toBe(200);
    expect(await send(nested(' '))).toBe(200); // bytes differ: compared as JSON (before: RangeError, a 502 counted as nothing)
    expect(await send(nested('{}'))).toBe(502);
    expect(replayer.counters).toMatchObject({ replayed: 2, missed: 1 });
    expect(events.map((e) => [e.kind, e.how])).toEqual([
      ['replayed', 'exact'],
      ['replayed', 'json'],
      ['missed', undefined],
    ]);
    expect(events[2]!.differences).toEqual([`body $${'[0]'.repeat(16)}...(${depth - 33} levels)...${'[0]'.repeat(16)}: recorded 0 items, got 1`]);
  });

  it('nested deeper than MAX_JSON_NESTING, the same body is answered and any other is a miss that says it was compared as bytes (f1-4)', async () => {
    const { replayer, events, send } = await serve(new HttpMatcher([post(deep()), post(deep(), 'mock-1')]));
    expect(await send(deep())).toBe(200);
    expect(await send(deep(' '))).toBe(502);
    expect(replayer.counters).toMatchObject({ replayed: 1, missed: 1 });
    expect(events.map((e) => [e.kind, e.how])).toEqual([
      ['replayed', 'exact'],
      ['missed', undefined],
    ]);
    const start = JSON.stringify('['.repeat(40));
    expect(events[1]!.differences).toEqual([
      `body: recorded ${2 * DEPTH} bytes ${start}..., got ${2 * DEPTH + 1} bytes ${start}...; compared as bytes, not as JSON: the recorded body is JSON nested deeper than ${MAX_JSON_NESTING} levels`,
    ]);
  });
});

describe('a request the replayer cannot answer from the set (b1-2)', () => {
  /** A matcher that fails, as the recursive walk did on a deep body. */
  class FailingMatcher extends HttpMatcher {
    override matchSliced(): Promise<never> {
      return Promise.reject(new RangeError('Maximum call stack size exceeded'));
    }
  }

  it('is answered 502 and counted as a miss, with the reason, and the miss is held like any other (stopOnMiss)', async () => {
    let held = 0;
    const { replayer, events, send } = await serve(new FailingMatcher([post('{}')]), async () => void held++);
    expect(await send('{"a":1}')).toBe(502);
    // Counted: `missed` is what strict fails on (index.ts counts.missed) and what a debug session's stop reports.
    expect(replayer.counters).toMatchObject({ replayed: 0, missed: 1 });
    expect(events).toEqual([{ kind: 'missed', method: 'POST', url: '/big', error: 'debugkit could not answer it from the set: Maximum call stack size exceeded' }]);
    expect(held).toBe(1);
  });
});

describe('ignored JSON paths, followed segment by segment', () => {
  const cases: Array<[string, Json, Json, boolean]> = [
    ['$.order.ref', { order: { ref: 1, n: 1 } }, { order: { ref: 2, n: 1 } }, true],
    ['order.REF', { order: { ref: 1 } }, { order: { ref: 2 } }, true],
    ['body.order.ref', { order: { ref: 1 } }, { order: { ref: 2 } }, true],
    ['$.order.ref', { order: { ref: 1, n: 1 } }, { order: { ref: 1, n: 2 } }, false],
    ['items[*].id', { items: [{ id: 1 }, { id: 2 }] }, { items: [{ id: 3 }, { id: 4 }] }, true],
    ['items[1].id', { items: [{ id: 1 }, { id: 2 }] }, { items: [{ id: 1 }, { id: 4 }] }, true],
    ['items[1].id', { items: [{ id: 1 }, { id: 2 }] }, { items: [{ id: 3 }, { id: 2 }] }, false],
    ['$..id', { a: [{ b: { id: 1 } }], id: 2 }, { a: [{ b: { id: 5 } }], id: 6 }, true],
    ['$..b.id', { a: [{ b: { id: 1 } }] }, { a: [{ b: { id: 5 } }] }, true],
    ['$..b.id', { a: [{ c: { id: 1 } }] }, { a: [{ c: { id: 5 } }] }, false],
    ['$.*.id', { x: { id: 1 }, y: { id: 2 } }, { x: { id: 3 }, y: { id: 4 } }, true],
    ['$.*.id', { x: [{ id: 1 }] }, { x: [{ id: 3 }] }, false],
    ['$', { a: 1 }, { a: 2 }, true],
    ['$..', { a: 1 }, { a: 2 }, true],
    // An ignored key is ignored when one side lacks it, too.
    ['$.order.ref', { order: { ref: 1 } }, { order: {} }, true],
  ];
  for (const [path, a, b, equal] of cases) {
    it(`${path}: ${JSON.stringify(a)} and ${JSON.stringify(b)} ${equal ? 'equal' : 'differ'}`, () => {
      expect(jsonDifferences(a, b, { keys: new Set(), paths: [compilePath(path)] }).length === 0).toBe(equal);
    });
  }
});

// b1-3: a million values (2 MiB against 3 MiB: under the 4 MiB a JSON body is parsed up to) against
// 100 ignored paths, `$..xxx...N` (what the attack sent). Before: one step of many seconds (a path
// string and 100 regex tests per value), in one turn of the event loop. Since h1-1 a body of more
// than MAX_JSON_BODY_VALUES values is not parsed at all (its JSON.parse alone is one long step):
// it is compared as bytes, and the walk over a parsed body is sliced (json-diff-bounds.test.ts
// counts its steps).
describe('a big JSON comparison on the event loop (b1-3)', () => {
  it('a body of a million values is compared as bytes, not parsed: the same bytes match, other bytes miss saying why', async () => {
    const n = 1_000_000;
    const recorded = `[${Array<string>(n).fill('1').join(',')}]`;
    const got = `[${Array<string>(n).fill('1').join(', ')}]`;
    const ignoreJsonPaths = Array.from({ length: 100 }, (_, i) => `$..${'x'.repeat(190)}${i}`);
    const matcher = new HttpMatcher([post(recorded)], { ignoreJsonPaths });
    matcher.build();
    expect(await matcher.matchSliced(request(recorded), new TimeSlice(5))).toMatchObject({ miss: false });
    const other = await matcher.matchSliced(request(got), new TimeSlice(5));
    expect(other.miss && other.closest?.differences).toEqual([
      `body: recorded ${recorded.length} bytes "[${'1,'.repeat(19)}1"..., got ${got.length} bytes "[${'1, '.repeat(13)}"...; compared as bytes, not as JSON: the recorded body is JSON with more than ${MAX_JSON_BODY_VALUES.toLocaleString('en')} values (arrays, objects, strings, numbers and literals, object keys counted)`,
    ]);
  });

  it('a difference deep in a body of MAX_JSON_BODY_VALUES values is found as JSON, with the same slicing', async () => {
    // The array and its members: MAX_JSON_BODY_VALUES values.
    const n = MAX_JSON_BODY_VALUES - 1;
    const values = Array<string>(n).fill('1');
    const recorded = `[${values.join(',')}]`;
    values[n - 1] = '2';
    const matcher = new HttpMatcher([post(recorded)]);
    const result = await matcher.matchSliced(request(`[${values.join(', ')}]`), new TimeSlice(5));
    expect(result.miss && result.closest?.differences).toEqual([`body $[${n - 1}]: recorded 1, got 2`]);
  });
});

// d1-1: two objects of 300,000 keys (3.8 MB each as JSON), keys in opposite orders. The walk was
// sliced, but the list of keys to compare (a's keys, then b's that a lacks) was built in one step:
// both objects' key lists and a membership test in `a` of each of b's keys.
describe('a wide JSON object on the event loop (d1-1)', () => {
  it("reports a's keys in a's order (missing from b or different), then b's extra keys in b's order, ignored ones left out", () => {
    const a: Json = { x: 1, y: 2, n: { p: 1, q: 2 }, z: 3, ts: 1 };
    const b: Json = { w: 0, z: 3, id: 7, n: { r: 3, q: 2 }, y: 5, v: 9 };
    expect(jsonDifferences(a, b, { keys: new Set(['ts', 'id']), paths: [compilePath('$.v')] }, 10)).toEqual([
      '$.x: recorded 1, got nothing',
      '$.y: recorded 2, got 5',
      '$.n.p: recorded 1, got nothing',
      '$.n.r: not recorded, got 3',
      '$.w: not recorded, got 0',
    ]);
    expect(jsonDifferences(a, b, new Set(), 3)).toEqual(['$.x: recorded 1, got nothing', '$.y: recorded 2, got 5', '$.n.p: recorded 1, got nothing']);
  });

  it("goes through each object's keys in slices: one key list at most per step, and the loop gets turns", async () => {
    const n = 300_000;
    const members = Array.from({ length: n }, (_, i) => `"k${i}":1`);
    const recorded = JSON.parse(`{${members.join(',')}}`) as { [key: string]: Json };
    const got = JSON.parse(`{${members.reverse().join(',')}}`) as { [key: string]: Json };
    const cpu = () => {
      const used = process.cpuUsage();
      return (used.user + used.system) / 1000;
    };
    // What one object's key list costs here (a native call, the least a step can hold): the longest.
    let list = 0;
    for (const o of [recorded, got]) {
      const began = cpu();
      Object.keys(o);
      list = Math.max(list, cpu() - began);
    }
    const slice = new TimeSlice(5);
    const watch = watchTurns();
    const steps = jsonDifferenceSteps(recorded, got, new Set());
    // Each step's CPU time, in the unit the key list was measured in: wall-clock blocks grow with
    // whatever else runs on the machine (a loaded CI host failed the ratio), CPU time does not.
    let longest = 0;
    const timed = () => {
      const began = cpu();
      const next = steps.next();
      longest = Math.max(longest, cpu() - began);
      return next;
    };
    let count = 1;
    let step = timed();
    for (; !step.done; count++) {
      await slice.pause();
      step = timed();
    }
    const { turns } = watch.stop();
    expect(step.value).toEqual([]);
    // Each object's keys are gone through in steps of STEP_NODES (b's checked against a's too):
    // 587 steps here. Before: b's keys were checked in the first step, with both key lists: 293.
    expect(count).toBeGreaterThanOrEqual((2 * n) / STEP_NODES);
    // The longest step holds one key list (about 100 ms here, 1.0x the list measured above).
    // Before: both lists and the membership tests, 2.2x (~230 ms here).
    expect(longest / list, `the longest step, ${longest.toFixed(0)} ms of CPU, against one key list's ${list.toFixed(0)} ms`).toBeLessThan(1.7);
    expect(turns, 'turns of the event loop during the comparison').toBeGreaterThan(3);
  });
});
