// Round 18ah (attacker o1, o1-1): on a miss with `onMiss: passthrough` or `record`, the Redis replay
// kept the real server's reply with no bound and read on after its 10 s timeout: one GET answered
// by an endless bulk reply held 1.4-2.1 GB. A fetch now keeps at most RELAYED_MAX_BYTES of a
// reply, charged to the replay's budget; past it, or past its timeout, the program gets an error
// reply, the miss is counted, and the connection to the real server is destroyed.
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { TimeSlice } from '../../../core/wait.js';
import type { KeptBytes } from '../kept.js';
import { afterTest, connectTo, FAKE_CAP, fakeServer, loopback, Watched } from '../kept-testing.js';
import { RELAYED_MAX_BYTES } from '../kept.js';
import type { ReplayCounts } from '../protocol.js';
import type { InterceptedConnection } from '../proxy/proxy.js';
import type { DebugkitCa } from '../tls/index.js';
import { replayer } from './index.js';
import { toRedisMock } from './keploy.js';
import { redisFetcher } from './replayer.js';
import { encodeCommand, RespFramer } from './wire.js';

/** A "real Redis server" that answers any command with `head`, then (`endless`) 64 KiB chunks, up to FAKE_CAP. */
function fakeRedis(head: string, endless: boolean) {
  return fakeServer((socket, pour) =>
    socket.once('data', () => {
      socket.write(head);
      if (endless) pour(Buffer.alloc(64 * 1024, 'x'));
    }),
  );
}

/** The program: sends commands to a replaying listener, reads whole RESP replies. */
async function program(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  afterTest(() => socket.destroy());
  await new Promise<void>((r) => socket.once('connect', () => r()));
  let buf = Buffer.alloc(0);
  let framer = new RespFramer();
  const replies: string[] = [];
  let wake: (() => void) | undefined;
  socket.on('data', (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    for (let end = framer.end(buf); end > 0; end = framer.end(buf)) {
      replies.push(buf.subarray(0, end).toString('latin1'));
      buf = buf.subarray(end);
      framer = new RespFramer();
    }
    wake?.();
  });
  return {
    async ask(...args: string[]): Promise<string> {
      const want = replies.length + 1;
      socket.write(encodeCommand(args.map((a) => Buffer.from(a))));
      while (replies.length < want) await new Promise<void>((r) => (wake = r));
      return replies[want - 1]!;
    },
  };
}

/** A replay of one Redis mock (PING) whose misses go to `upstreamPort` (onMiss passthrough), through the toolset's own replayer. */
async function replaying(upstreamPort: number, kept: KeptBytes) {
  const misses: string[] = [];
  const ping = toRedisMock(encodeCommand([Buffer.from('PING')]), Buffer.from('+PONG\r\n'), new Date(), new Date(), `127.0.0.1:${upstreamPort}`);
  const r = await replayer([ping], { ca: {} as DebugkitCa, onMiss: 'passthrough', missed: (m) => misses.push(m), recorded: () => {}, kept }, { slice: new TimeSlice(10), built: [] });
  const port = await loopback((socket) => {
    const conn = { id: 'c1', target: { host: '127.0.0.1', port: upstreamPort }, protocol: 'redis', client: socket, via: 'socks5' } satisfies InterceptedConnection;
    void r.serve(conn);
  });
  return { port, misses, counts: r.counts as ReplayCounts };
}

describe('attack 18ah o1-1: a Redis fetch on a miss keeps a bounded part of the real reply', () => {
  it('an endless bulk reply: the program gets an error naming the bound, the miss is counted, the real server is cut off', async () => {
    const fake = await fakeRedis('$4000000000\r\n', true);
    const kept = new Watched(2 * RELAYED_MAX_BYTES);
    const replay = await replaying(fake.port, kept);
    const client = await program(replay.port);
    const reply = await client.ask('GET', 'other');
    expect(reply).toMatch(
      /^-ERR debugkit: redis 127\.0\.0\.1:\d+: GET "other" matched no mock and the real server could not answer it: its reply is over 67108864 bytes, the bound of an answer relayed whole/,
    );
    expect(replay.counts).toMatchObject({ missed: 1, fellBack: 0 });
    expect(replay.misses).toHaveLength(1);
    expect(replay.misses[0]).toContain('the bound of an answer relayed whole');
    // The connection to the real server was destroyed: it could not write what it had to (nothing more was read).
    const written = await fake.gone;
    expect(written).toBeLessThan(FAKE_CAP);
    // What was kept stayed within the bound, and went back to the budget.
    expect(kept.most).toBeGreaterThan(0);
    expect(kept.most).toBeLessThanOrEqual(RELAYED_MAX_BYTES);
    expect(kept.lent).toBe(0);
    // The program's connection is still served: a recorded command is answered, a new miss opens a new connection.
    expect(await client.ask('PING')).toBe('+PONG\r\n');
    expect(await client.ask('GET', 'again')).toMatch(/^-ERR debugkit: .*the bound of an answer relayed whole/);
    expect(fake.connections()).toBe(2);
    expect(replay.counts).toMatchObject({ replayed: 1, missed: 2 });
  });

  it('a reply of a few MB is relayed whole: the bound is for endless ones, not for real answers', async () => {
    const value = 'v'.repeat(2 * 1024 * 1024);
    const fake = await fakeRedis(`$${value.length}\r\n${value}\r\n`, false);
    const kept = new Watched();
    const replay = await replaying(fake.port, kept);
    const client = await program(replay.port);
    expect(await client.ask('GET', 'big')).toBe(`$${value.length}\r\n${value}\r\n`);
    expect(replay.counts).toMatchObject({ missed: 1 });
    expect(kept.lent).toBe(0);
  });

  it('past the budget of unfinished calls, before the bound: the same error, naming the budget', async () => {
    const fake = await fakeRedis('$4000000000\r\n', true);
    const kept = new Watched(256 * 1024);
    const replay = await replaying(fake.port, kept);
    const client = await program(replay.port);
    expect(await client.ask('GET', 'other')).toMatch(/^-ERR debugkit: .*does not fit in the 262144 bytes the replay keeps of calls not finished/);
    expect(await fake.gone).toBeLessThan(FAKE_CAP);
    expect(kept.most).toBeLessThanOrEqual(256 * 1024);
    expect(kept.lent).toBe(0);
    expect(replay.counts.missed).toBe(1);
  });

  it('a reply not whole by the timeout: the fetch fails and the connection to the real server is destroyed', async () => {
    // Half a bulk string, then silence: the fetch waits for the rest until its timeout.
    const fake = await fakeRedis('$10\r\nabc', false);
    const kept = new Watched();
    const fetcher = redisFetcher(() => connectTo(fake.port), { timeoutMs: 50, kept });
    await expect(fetcher.fetch(encodeCommand([Buffer.from('GET'), Buffer.from('k')]), [])).rejects.toThrow(/^no reply within 50 ms; the connection to the server was closed$/);
    // Closed by the timeout itself, not by the end of the replay (close() is not called before this resolves).
    await fake.gone;
    expect(kept.most).toBeGreaterThan(0);
    expect(kept.lent).toBe(0);
    fetcher.close();
  });
});
