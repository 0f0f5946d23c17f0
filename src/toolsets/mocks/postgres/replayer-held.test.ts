// Attack 18ao d2-2: the PostgreSQL replayer (and recorder) held a message not whole yet (up to 64 MiB a
// connection) outside the replay's budget: 12 connections of one replay held 755 MB. Its bytes are
// charged to the budget now, shared by the replay's connections, as MySQL's and Redis's are.
import { Duplex } from 'node:stream';
import { serialize } from 'pg-protocol';
import { describe, expect, it, vi } from 'vitest';
import { KEPLOY_MOCK_VERSION, ZERO_TIME, type PostgresMock } from '../keploy/types.js';
import { KeptBytes } from '../kept.js';
import { programSide } from '../kept-testing.js';
import { parseFrontendBytes } from './frontend.js';
import { buildRequestPacket, buildResponsePacket } from './keploy.js';
import { ReplayIndex } from './matcher.js';
import { recordPostgres } from './recorder.js';
import { replayPostgres } from './replayer.js';
import { backend } from './wire.js';

const mock: PostgresMock = {
  version: KEPLOY_MOCK_VERSION,
  kind: 'Postgres',
  name: 'mock-0',
  spec: {
    metadata: {},
    postgresrequests: [buildRequestPacket(parseFrontendBytes(serialize.query('SELECT 1')), { length: 8 })],
    postgresresponses: [buildResponsePacket([backend.commandComplete('SELECT 1'), backend.readyForQuery('I')], { length: 8 })],
    reqtimestampmock: ZERO_TIME,
    restimestampmock: ZERO_TIME,
  },
};

/** The start-up message of protocol 3.0 for user u. */
function startup(): Buffer {
  const body = Buffer.from('\0\x03\0\0user\0u\0\0', 'latin1');
  const head = Buffer.alloc(4);
  head.writeUInt32BE(body.length + 4);
  return Buffer.concat([head, body]);
}

function connection(kept: KeptBytes) {
  const { client, written } = programSide();
  const errors: string[] = [];
  const done = replayPostgres({ target: { host: 'db', port: 5432 }, client }, new ReplayIndex([mock]), { kept, onError: (e) => errors.push((e as Error).message), onMiss: () => undefined });
  return { client, written, errors, done };
}

describe('PostgreSQL replay: a message the program has not finished', () => {
  it('is held within the replay budget shared by its connections: past it a FATAL error, the connection closed; every byte given back', async () => {
    const kept = new KeptBytes(1024 * 1024);
    const conns = [connection(kept), connection(kept), connection(kept)];
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    for (const c of conns) {
      // A Query of 16 MiB announced, 384 KiB of it sent.
      const head = Buffer.alloc(5);
      head[0] = 0x51;
      head.writeUInt32BE(16 * 1024 * 1024, 1);
      c.client.push(Buffer.concat([startup(), head]));
      for (let i = 0; i < 6; i++) c.client.push(chunk);
      await vi.waitFor(() => expect(c.client.readableLength === 0 || c.errors.length > 0).toBe(true));
    }
    // Two connections hold 768 KiB; the third goes past the 1 MiB.
    await vi.waitFor(() => expect(conns[2]!.errors).toHaveLength(1));
    expect(conns[2]!.errors[0]).toMatch(/the client's bytes of messages not whole yet \(\d+\) went over what a replay holds of calls not finished \(1048576 bytes per replay/);
    expect(Buffer.concat(conns[2]!.written).toString('latin1')).toMatch(/FATAL.*debugkit: the client's bytes of messages not whole yet/);
    expect(conns[0]!.errors).toEqual([]);
    for (const c of conns) c.client.destroy();
    await Promise.all(conns.map((c) => c.done));
    expect(kept.take(1024 * 1024)).toBe(true);
  });
});

describe('PostgreSQL recording: a message not whole yet', () => {
  it('is held within the recording budget: past it the rest of the connection is relayed, not recorded, and said so; every byte given back', async () => {
    const kept = new KeptBytes(1024 * 1024);
    const { client } = programSide();
    // The real server: reads everything, answers nothing.
    let relayed = 0;
    const upstream = new Duplex({
      read() {},
      write(chunk: Buffer, _enc, done) {
        relayed += chunk.length;
        done();
      },
    });
    const dropped: string[] = [];
    const done = recordPostgres({ target: { host: 'db', port: 5432 }, client }, upstream, { onMock: () => undefined, onDropped: (why) => dropped.push(why), kept });
    const head = Buffer.alloc(5);
    head[0] = 0x51;
    head.writeUInt32BE(16 * 1024 * 1024, 1);
    client.push(Buffer.concat([startup(), head]));
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    for (let i = 0; i < 24; i++) client.push(chunk);
    await vi.waitFor(() => expect(dropped).toHaveLength(1));
    expect(dropped[0]).toMatch(
      /the client's bytes of a message not whole yet went past the 1048576 bytes a recording keeps of calls not finished: the rest of the connection was relayed, not recorded/,
    );
    // Relayed all the same: the program's traffic is never cut by the recording's bound.
    await vi.waitFor(() => expect(relayed).toBe(startup().length + 5 + 24 * 64 * 1024));
    expect(kept.take(1024 * 1024)).toBe(true);
    kept.give(1024 * 1024);
    client.destroy();
    upstream.destroy();
    expect((await done).stoppedRecording).toBe(dropped[0]);
  });
});
