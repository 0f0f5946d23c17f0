// Round 18ah (attacker o1, o1-3): on a miss with `onMiss: passthrough` or `record`, the PostgreSQL
// replay collected every message of the real server until ReadyForQuery, with no byte bound:
// endless 1 MiB DataRows held 1.8-2.2 GB. And the program, timed out waiting, closed its connection:
// the replay then said `mocksMissed: 0`. What a forwarded group's answer holds is now bounded by
// RELAYED_MAX_BYTES and charged to the replay's budget; past it, or past the group's timeout,
// the program gets an ErrorResponse and ReadyForQuery, the miss is counted, and the connection to
// the real server is destroyed. A group still unanswered when the program goes is counted as a miss.
import net from 'node:net';
import { serialize } from 'pg-protocol';
import { describe, expect, it } from 'vitest';
import { TimeSlice } from '../../../core/wait.js';
import type { KeptBytes } from '../kept.js';
import { afterTest, connectTo, FAKE_CAP, fakeServer, loopback, Watched } from '../kept-testing.js';
import { RELAYED_MAX_BYTES } from '../kept.js';
import type { ReplayCounts } from '../protocol.js';
import type { InterceptedConnection } from '../proxy/proxy.js';
import type { DebugkitCa } from '../tls/index.js';
import { replayer } from './index.js';
import { Backend } from './protocol.js';
import { replayPostgres } from './replayer.js';
import type { ReplayMiss } from './session.js';
import { backend, BackendSplitter, codeOf, errorFields } from './wire.js';

/** A DataRow of one 64 KiB text column. */
function dataRow(): Buffer {
  const value = 64 * 1024;
  const row = Buffer.alloc(1 + 4 + 2 + 4 + value, 'x');
  row.write('D', 0, 'latin1');
  row.writeUInt32BE(row.length - 1, 1);
  row.writeUInt16BE(1, 5);
  row.writeUInt32BE(value, 7);
  return row;
}

/**
 * A "real PostgreSQL server": trusts the startup (AuthenticationOk, ReadyForQuery), then answers a
 * query with DataRows and never ReadyForQuery: `endless` as fast as they are taken (up to
 * FAKE_CAP), else one and silence. `queried` resolves when the query came; `gone` with the bytes
 * its socket wrote once the other side closed it.
 */
async function fakePostgres(endless: boolean) {
  let queried!: () => void;
  const asked = new Promise<void>((r) => (queried = r));
  const fake = await fakeServer((socket, pour) => {
    const row = dataRow();
    let started = false;
    socket.on('data', () => {
      if (!started) {
        started = true;
        socket.write(Buffer.concat([backend.authenticationOk(), backend.readyForQuery('I')]));
        return;
      }
      queried();
      if (endless) pour(row);
      else socket.write(row);
    });
  });
  return { ...fake, asked };
}

/** The program: a raw protocol client; `query` resolves with the messages up to ReadyForQuery. */
async function program(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  afterTest(() => socket.destroy());
  await new Promise<void>((r) => socket.once('connect', () => r()));
  const splitter = new BackendSplitter();
  const inbox: Buffer[] = [];
  let wake: (() => void) | undefined;
  socket.on('data', (d: Buffer) => {
    inbox.push(...splitter.push(d));
    wake?.();
  });
  const untilReady = async (): Promise<Buffer[]> => {
    for (;;) {
      const at = inbox.findIndex((m) => codeOf(m) === Backend.ReadyForQuery);
      if (at >= 0) return inbox.splice(0, at + 1);
      await new Promise<void>((r) => (wake = r));
    }
  };
  socket.write(serialize.startup({ user: 'postgres', database: 'postgres' }));
  await untilReady();
  return {
    socket,
    async query(text: string): Promise<Buffer[]> {
      socket.write(serialize.query(text));
      return untilReady();
    },
  };
}

/** The toolset's own PostgreSQL replayer over an empty set, misses going to `upstreamPort` (onMiss passthrough). */
async function replaying(upstreamPort: number, kept: KeptBytes) {
  const misses: string[] = [];
  const r = await replayer([], { ca: {} as DebugkitCa, onMiss: 'passthrough', missed: (m) => misses.push(m), recorded: () => {}, kept }, { slice: new TimeSlice(10), built: [] });
  const served: Array<Promise<void>> = [];
  const port = await loopback((socket) => {
    const conn = { id: 'c1', target: { host: '127.0.0.1', port: upstreamPort }, protocol: 'postgres', client: socket, via: 'socks5' } satisfies InterceptedConnection;
    served.push(r.serve(conn));
  });
  return { port, misses, counts: r.counts as ReplayCounts, served };
}

const errorOf = (answers: Buffer[]) => answers.filter((m) => codeOf(m) === Backend.ErrorResponse).map((m) => errorFields(m).M ?? '');

describe('attack 18ah o1-3: a PostgreSQL group forwarded on a miss keeps a bounded part of the real answer', () => {
  it('endless DataRows: the program gets an ErrorResponse naming the bound and ReadyForQuery, the miss is counted, the real server is cut off', async () => {
    const fake = await fakePostgres(true);
    const kept = new Watched(2 * RELAYED_MAX_BYTES);
    const replay = await replaying(fake.port, kept);
    const client = await program(replay.port);
    const answers = await client.query("select secret from u where name='other'");
    expect(answers.map(codeOf)).toEqual([Backend.ErrorResponse, Backend.ReadyForQuery]);
    expect(errorOf(answers)[0]).toMatch(
      /no recorded mock for query: .*the real server could not answer it: the real server 127\.0\.0\.1:\d+ answered over 67108864 bytes, the bound of an answer relayed whole/,
    );
    expect(replay.counts).toMatchObject({ missed: 1, fellBack: 0 });
    expect(replay.misses).toHaveLength(1);
    expect(replay.misses[0]).toContain('the bound of an answer relayed whole');
    // The connection to the real server was destroyed: it could not write what it had to (nothing more was read).
    expect(await fake.gone).toBeLessThan(FAKE_CAP);
    expect(kept.most).toBeGreaterThan(0);
    expect(kept.most).toBeLessThanOrEqual(RELAYED_MAX_BYTES);
    expect(kept.lent).toBe(0);
    // The session goes on: the next miss fails at once, saying why.
    const again = await client.query('select 2');
    expect(errorOf(again)[0]).toContain('the bound of an answer relayed whole');
    expect(replay.counts.missed).toBe(2);
  });

  it('past the budget of unfinished calls, before the bound: the same failure, naming the budget', async () => {
    const fake = await fakePostgres(true);
    const kept = new Watched(256 * 1024);
    const replay = await replaying(fake.port, kept);
    const client = await program(replay.port);
    const answers = await client.query('select 1');
    expect(errorOf(answers)[0]).toMatch(/does not fit in the 262144 bytes the replay keeps of calls not finished/);
    expect(await fake.gone).toBeLessThan(FAKE_CAP);
    expect(kept.most).toBeLessThanOrEqual(256 * 1024);
    expect(kept.lent).toBe(0);
    expect(replay.counts.missed).toBe(1);
  });

  it('no ReadyForQuery by the timeout: the group fails and the connection to the real server is destroyed', async () => {
    const fake = await fakePostgres(false);
    const kept = new Watched();
    const misses: ReplayMiss[] = [];
    const port = await loopback((socket) => {
      const upstream = {
        connect: () => connectTo(fake.port),
        where: `127.0.0.1:${fake.port}`,
        kept,
        timeoutMs: 50,
      };
      void replayPostgres({ id: 'c1', target: { host: '127.0.0.1', port: fake.port }, client: socket }, [], { onMiss: (m) => misses.push(m), upstream });
    });
    const client = await program(port);
    const answers = await client.query('select 1');
    expect(errorOf(answers)[0]).toMatch(/sent no ReadyForQuery within 0\.05 s \(replay waited for an answer\); the connection to it was closed/);
    expect(misses).toHaveLength(1);
    // Closed by the timeout, while the program's connection is still open.
    await fake.gone;
    expect(client.socket.destroyed).toBe(false);
    expect(kept.most).toBeGreaterThan(0);
    expect(kept.lent).toBe(0);
  });

  it('the program closes its connection before the real server answers: the group is counted as a miss', async () => {
    const fake = await fakePostgres(false);
    const kept = new Watched();
    const replay = await replaying(fake.port, kept);
    const client = await program(replay.port);
    client.socket.write(serialize.query("select secret from u where name='other'"));
    await fake.asked;
    client.socket.destroy();
    await Promise.all(replay.served);
    expect(replay.counts).toMatchObject({ missed: 1, fellBack: 0 });
    expect(replay.misses[0]).toMatch(/no recorded mock for query: .*name='other'.*the real server could not answer it: the program closed its connection before the real server answered it/);
    await fake.gone;
    expect(kept.lent).toBe(0);
  });
});
