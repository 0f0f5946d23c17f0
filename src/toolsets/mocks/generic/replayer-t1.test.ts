import { describe, expect, it, vi } from 'vitest';
import { KeptBytes } from '../kept.js';
import { programSide } from '../kept-testing.js';
import { packetOf } from '../mysql/wire.js';
import { buildGenericMock } from './keploy.js';
import { GenericIndex } from './matcher.js';
import { replayGeneric, type ReplayGenericOptions, type ReplayGenericResult } from './replayer.js';

// Attack 18ak t1-2: a MySQL replay held each connection's unfinished command packet (a header
// declaring 16 MiB, then a trickle) outside every budget, re-copying it whole on each read: 48
// connections of one replay took the server from 150 MiB to 1.43 GB, and the run said success with
// no miss. t1-3: an empty query-attributes prefix (00 01) was taken off every COM_QUERY, whether
// or not the client asked for query attributes, so the query text "\x00\x01SELECT 1" got SELECT 1's answer.

const at = new Date('2026-11-27T10:00:00Z');
const packet = (seq: number, payload: string | Buffer) => packetOf(seq, typeof payload === 'string' ? Buffer.from(payload, 'latin1') : payload);
const greeting = packet(0, '\x0a8.0.1\0' + '\0'.repeat(40));
const ok = (seq: number) => packet(seq, Buffer.from([0, 0, 0, 2, 0, 0, 0]));
/** A HandshakeResponse41 with these capability flags (CLIENT_PROTOCOL_41 and more), user "u", no password. */
function login(flags: number): Buffer {
  const head = Buffer.alloc(32);
  head.writeUInt32LE(flags, 0);
  head.writeUInt32LE(1 << 24, 4);
  head[8] = 0xff;
  return packet(1, Buffer.concat([head, Buffer.from('u\0\0', 'latin1')]));
}
const PROTOCOL_41 = 0x200;
const QUERY_ATTRIBUTES = 0x08000000;

function mysqlIndex(extra: Array<{ request: Buffer; response: Buffer }> = []): GenericIndex {
  return new GenericIndex([
    buildGenericMock({ request: Buffer.alloc(0), response: greeting, startedAt: at, endedAt: at }, 0),
    ...extra.map((e, i) => buildGenericMock({ ...e, startedAt: at, endedAt: at }, i + 1)),
    buildGenericMock({ request: packet(0, '\x03SELECT 1'), response: ok(1), startedAt: at, endedAt: at }, 99),
  ]);
}

/** One replayed connection, the program's side a Duplex: `send` what it writes, `written` what it got. */
function connection(index: GenericIndex, options: ReplayGenericOptions = {}) {
  const { client, written } = programSide();
  const misses: string[] = [];
  const done: Promise<ReplayGenericResult> = replayGeneric({ target: { host: 'db', port: 3306 }, client }, index, { ...options, onMiss: (m) => misses.push(m.message) });
  return { client, written, misses, done, send: (b: Buffer) => client.push(b) };
}

describe('attack 18ak t1-2: bytes of requests not whole yet are held within the replay budget', () => {
  it('connections holding unfinished 16 MiB packets: the one past the budget misses and is closed, and every byte is given back', async () => {
    const kept = new KeptBytes(1024 * 1024);
    const index = mysqlIndex();
    const conns = [connection(index, { kept }), connection(index, { kept }), connection(index, { kept })];
    const chunk = Buffer.alloc(64 * 1024, 0x41);
    for (const c of conns) {
      c.send(Buffer.from([0xff, 0xff, 0xff, 0x00, 0x03]));
      for (let i = 0; i < 6; i++) c.send(chunk); // 384 KiB each: the third passes 1 MiB
      // All of it read by the replayer (or the connection missed) before the next connection sends.
      await vi.waitFor(() => expect(c.client.readableLength === 0 || c.misses.length > 0).toBe(true));
    }
    await vi.waitFor(() => expect(conns[2]!.misses).toHaveLength(1));
    expect(conns[0]!.misses).toEqual([]);
    expect(conns[1]!.misses).toEqual([]);
    expect(conns[2]!.misses).toHaveLength(1);
    expect(conns[2]!.misses[0]).toMatch(/unanswered bytes \(\d+\) went over what a replay holds of requests not whole yet \(1048576 bytes per replay/);
    expect(conns[2]!.client.writableEnded).toBe(true);
    // The program leaves with its requests unfinished: each is a miss, and the budget is whole again.
    for (const c of conns.slice(0, 2)) c.client.destroy();
    const results = await Promise.all(conns.map((c) => c.done));
    expect(results.map((r) => r.missed)).toEqual([1, 1, 1]);
    expect(conns[0]!.misses[0]).toMatch(/closed before its request was whole or answered/);
    expect(kept.take(1024 * 1024)).toBe(true);
  });

  it('a request answered gives its bytes back: a long conversation never fills the budget', async () => {
    const kept = new KeptBytes(64 * 1024);
    const c = connection(mysqlIndex(), { kept });
    for (let i = 0; i < 2000; i++) c.send(packet(0, '\x03SELECT 1'));
    // Answered over several turns (a burst is served in slices): the greeting and 2,000 answers.
    await vi.waitFor(() => expect(c.written.length).toBe(2001), { timeout: 20_000 });
    expect(c.misses).toEqual([]);
    c.client.push(null);
    expect((await c.done).matched).toBe(2001);
    expect(kept.take(64 * 1024)).toBe(true);
  });
});

describe('attack 18ak t1-3: the query-attributes prefix is read only for a client that asked for query attributes', () => {
  /** Sends `bytes` and waits until the replayer has written `answers` packets in all (the greeting counted). */
  async function ask(c: ReturnType<typeof connection>, bytes: Buffer, answers: number): Promise<void> {
    c.send(bytes);
    await vi.waitFor(() => expect(c.written.length).toBe(answers));
  }

  it('without the capability, "\\x00\\x01SELECT 1" is that query text: a miss, not SELECT 1', async () => {
    const c = connection(mysqlIndex([{ request: login(PROTOCOL_41), response: ok(2) }]));
    await ask(c, login(PROTOCOL_41), 2);
    await ask(c, packet(0, '\x03\x00\x01SELECT 1'), 3);
    expect(c.misses).toHaveLength(1);
    expect(c.misses[0]).toMatch(/no recorded mock for COM_QUERY "\\u0000\\u0001SELECT 1"/);
    c.client.destroy();
  });

  it('with it, the empty prefix is read once: 00 01 then the text "\\x00\\x01SELECT 1" is not SELECT 1', async () => {
    const flags = PROTOCOL_41 | QUERY_ATTRIBUTES;
    const c = connection(mysqlIndex([{ request: login(flags), response: ok(2) }]));
    await ask(c, login(flags), 2);
    await ask(c, packet(0, '\x03\x00\x01SELECT 1'), 3);
    expect(c.misses).toEqual([]);
    // Sent in two reads, so that the packet is looked at twice before it is whole.
    const twice = packet(0, '\x03\x00\x01\x00\x01SELECT 1');
    c.send(twice.subarray(0, 9));
    await ask(c, twice.subarray(9), 4);
    expect(c.misses).toHaveLength(1);
    c.client.destroy();
  });
});
