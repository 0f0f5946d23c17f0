// Attack 18aj r1-2: a command cut off by the program's close (`*2\r\n$3\r\nGET\r\n$5\r\not`, or an
// inline `GET oth` without CRLF) was neither answered nor counted: a strict run passed. Attack
// 18ak t1-2, for Redis: each connection may hold 64 MiB of a command not whole, and a thousand
// connections of one replay held them outside the replay's budget.
import { describe, expect, it, vi } from 'vitest';
import { KeptBytes } from '../kept.js';
import { programSide } from '../kept-testing.js';
import { RedisIndex } from './matcher.js';
import { replayRedis } from './replayer.js';

const args = (...a: string[]) => a.map((s) => Buffer.from(s, 'latin1'));

function connection(index: RedisIndex, kept?: KeptBytes) {
  const { client, written } = programSide();
  const misses: string[] = [];
  const matched: string[] = [];
  const done = replayRedis({ target: { host: 'cache', port: 6379 }, client }, index, {
    onMiss: (m) => misses.push(m.message),
    onMatch: (m) => matched.push(m.mock),
    ...(kept ? { kept } : {}),
  });
  return { client, written, misses, matched, done };
}

function index(): RedisIndex {
  const i = new RedisIndex();
  i.add({ name: 'mock-0', args: args('GET', 'k'), response: Buffer.from('$1\r\nv\r\n') });
  return i;
}

describe('Redis replay: a command the program never finished', () => {
  for (const [what, cut] of [
    ['a RESP command', '*2\r\n$3\r\nGET\r\n$5\r\not'],
    ['an inline command', 'GET oth'],
  ] as const) {
    it(`${what} cut off by the close is a miss (attack 18aj r1-2)`, async () => {
      const c = connection(index());
      c.client.push(Buffer.from('*2\r\n$3\r\nGET\r\n$1\r\nk\r\n'));
      await vi.waitFor(() => expect(c.matched).toEqual(['mock-0']));
      c.client.push(Buffer.from(cut));
      c.client.destroy();
      await c.done;
      expect(c.misses).toHaveLength(1);
      expect(c.misses[0]).toMatch(/^redis cache:6379: the connection closed with \d+ bytes of a command not whole/);
    });
  }

  it('a program that leaves after its answers: no miss', async () => {
    const c = connection(index());
    c.client.push(Buffer.from('*2\r\n$3\r\nGET\r\n$1\r\nk\r\n'));
    await vi.waitFor(() => expect(c.written.length).toBe(1));
    c.client.destroy();
    await c.done;
    expect(c.misses).toEqual([]);
  });

  it('commands not whole yet are held within the replay budget: past it an error, the connection closed; every byte given back (attack 18ak t1-2)', async () => {
    const kept = new KeptBytes(1024 * 1024);
    const conns = [connection(index(), kept), connection(index(), kept), connection(index(), kept)];
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    for (const c of conns) {
      c.client.push(Buffer.from(`*2\r\n$3\r\nSET\r\n$${16 * 1024 * 1024}\r\n`));
      for (let i = 0; i < 6; i++) c.client.push(chunk);
      // All of it read by the replayer (or the connection missed) before the next connection sends.
      await vi.waitFor(() => expect(c.client.readableLength === 0 || c.misses.length > 0).toBe(true));
    }
    await vi.waitFor(() => expect(conns[2]!.misses).toHaveLength(1));
    expect(conns[2]!.misses[0]).toMatch(/unanswered bytes \(\d+\) went over what a replay holds of commands not whole yet \(1048576 bytes per replay/);
    expect(Buffer.concat(conns[2]!.written).toString('latin1')).toMatch(/^-ERR debugkit: redis cache:6379: the client's unanswered bytes/);
    expect(conns[0]!.misses).toEqual([]);
    for (const c of conns) c.client.destroy();
    await Promise.all(conns.map((c) => c.done));
    expect(kept.take(1024 * 1024)).toBe(true);
  });
});

describe('Redis replay: naming the closest mock of a miss (attack 18ao d2-1)', () => {
  it('compares a bounded number of arguments over all candidates: 28 recorded commands of 30,000 arguments cost at most 16,384 compares, not 840,000', () => {
    const wide = (first: string, n: number) => [Buffer.from('MSET'), ...Array.from({ length: n }, (_, i) => Buffer.from(`${first}${i % 7}`))];
    const i = new RedisIndex();
    for (let m = 0; m < 28; m++) i.add({ name: `mock-${m}`, args: wide(`v${m}-`, 30_000), response: Buffer.from('+OK\r\n') });
    const equals = vi.spyOn(Buffer.prototype, 'equals');
    try {
      expect(i.closest(wide('other-', 30_000))?.name).toMatch(/^mock-\d+$/);
      expect(equals.mock.calls.length).toBeLessThanOrEqual(16_384);
      // The first arguments still tell the closest: the one that shares them.
      i.add({ name: 'near', args: [Buffer.from('MSET'), Buffer.from('k'), ...wide('other-', 10).slice(1)], response: Buffer.from('+OK\r\n') });
      expect(i.closest([Buffer.from('MSET'), Buffer.from('k'), ...wide('other-', 10).slice(1)])?.name).toBe('near');
    } finally {
      equals.mockRestore();
    }
  });
});
