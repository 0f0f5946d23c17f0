import { describe, expect, it } from 'vitest';
import type { GenericMock } from '../keploy/types.js';
import { buildGenericMock } from './format.js';
import { GenericIndex, type GenericMatch } from './matcher.js';

const at = new Date('2024-01-02T00:00:00Z');
let n = 0;
/** A mock as the recorder writes it (`host` null: as Keploy writes it, naming no target). */
function mock(request: string, response: string, host: string | null = 'kv:7000'): GenericMock {
  const m = buildGenericMock({ request: Buffer.from(request, 'latin1'), response: Buffer.from(response, 'latin1'), startedAt: at, endedAt: at, ...(host ? { host } : {}) }, 0);
  return { ...m, name: `mock-${n++}` };
}
const kv = { host: 'kv', port: 7000 };
const answer = (m: GenericMatch) => (m.kind === 'match' ? m.entry.response.toString('latin1') : m.kind);

describe('GenericIndex', () => {
  it('takes the longest recorded request the bytes begin with, waiting while a longer one is possible', () => {
    const view = new GenericIndex([mock('GET x\n', 'A\n'), mock('GET x\nGET y\n', 'AB\n'), mock('GET y\n', 'B\n')]).forTarget(kv)!;
    expect(answer(view.match(Buffer.from('GET x\nGET y\n'), false))).toBe('AB\n');
    const waiting = view.match(Buffer.from('GET x\n'), false);
    expect(waiting.kind).toBe('partial');
    expect(waiting.kind === 'partial' && waiting.complete?.response.toString()).toBe('A\n');
    expect(answer(view.match(Buffer.from('GET x\n'), true))).toBe('A\n');
    // Pipelined beyond any single recording: the first request now, the rest after.
    expect(answer(view.match(Buffer.from('GET y\nGET x\n'), false))).toBe('B\n');
    expect(view.match(Buffer.from('GET'), false)).toEqual({ kind: 'partial' });
  });

  it('misses bytes no recorded request begins, naming the one sharing the longest prefix', () => {
    const view = new GenericIndex([mock('SET a 1\n', 'OK\n'), mock('GET abc\n', 'V\n'), mock('GET ab\n', 'V\n')]).forTarget(kv)!;
    const m = view.match(Buffer.from('GET abd\n'), false);
    expect(m.kind).toBe('miss');
    expect(m.kind === 'miss' && m.closest).toMatchObject({ name: expect.stringMatching(/^mock-/), samePrefix: 6 });
    expect(m.kind === 'miss' && m.closest!.request.toString()).toBe('GET abc\n');
    // An unfinished request that never completes.
    expect(view.match(Buffer.from('GET a'), true)).toMatchObject({ kind: 'miss', closest: { samePrefix: 5 } });
  });

  it('answers a repeated request in recorded order, then repeats the last answer', () => {
    const view = new GenericIndex([mock('NEXT\n', '1\n'), mock('OTHER\n', 'x\n'), mock('NEXT\n', '2\n')]).forTarget(kv)!;
    const took = [1, 2, 3].map(() => view.match(Buffer.from('NEXT\n'), false));
    expect(took.map(answer)).toEqual(['1\n', '2\n', '2\n']);
    expect(took.map((m) => m.kind === 'match' && m.reused)).toEqual([false, false, true]);
  });

  it('sends greetings (recorded with no request) in recorded order', () => {
    const view = new GenericIndex([mock('', '220 one\n'), mock('QUIT\n', 'bye\n'), mock('', '220 two\n')]).forTarget(kv)!;
    expect([1, 2, 3].map(() => view.greeting()!.entry.response.toString())).toEqual(['220 one\n', '220 two\n', '220 two\n']);
    expect(answer(view.match(Buffer.from('QUIT\n'), false))).toBe('bye\n');
  });

  it("answers a target from its own mocks, else from mocks naming no target, never another target's", () => {
    const index = new GenericIndex([mock('PING\n', 'kv\n'), mock('PING\n', 'cache\n', 'Cache:6379'), mock('PING\n', 'keploy\n', null)]);
    expect(index.hosts).toEqual(['kv:7000', 'cache:6379']);
    expect(answer(index.forTarget(kv)!.match(Buffer.from('PING\n'), false))).toBe('kv\n');
    expect(answer(index.forTarget({ host: 'CACHE', port: 6379 })!.match(Buffer.from('PING\n'), false))).toBe('cache\n');
    expect(answer(index.forTarget({ host: 'other', port: 1 })!.match(Buffer.from('PING\n'), false))).toBe('keploy\n');
    expect(new GenericIndex([mock('PING\n', 'kv\n')]).forTarget({ host: 'other', port: 1 })).toBeUndefined();
  });

  it('reads the closing and truncation marks', () => {
    const closing = buildGenericMock({ request: Buffer.from('QUIT\n'), response: Buffer.alloc(0), startedAt: at, endedAt: at, host: 'kv:7000', serverClosed: true });
    const big = buildGenericMock({
      request: Buffer.from('BIG\n'),
      response: Buffer.from('xx'),
      startedAt: at,
      endedAt: at,
      host: 'kv:7000',
      truncated: { requestBytes: 4, responseBytes: 5000 },
    });
    const view = new GenericIndex([closing, big]).forTarget(kv)!;
    expect(view.match(Buffer.from('QUIT\n'), false)).toMatchObject({ kind: 'match', entry: { serverClosed: true, response: Buffer.alloc(0) } });
    expect(view.match(Buffer.from('BIG\n'), false)).toMatchObject({ kind: 'match', entry: { truncated: { requestBytes: 4, responseBytes: 5000 } } });
  });
});
