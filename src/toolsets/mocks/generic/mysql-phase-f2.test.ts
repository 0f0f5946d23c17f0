import { afterEach, describe, expect, it } from 'vitest';
import type { Closable } from '../http/test-support.js';
import { packetOf } from '../mysql/wire.js';
import { buildGenericMock } from './keploy.js';
import { GenericIndex } from './matcher.js';
import type { ReplayGenericOptions } from './replayer.js';
import { Client, eventually, replayingListener } from './testing.js';

// Attack f2-3: after the login's OK, a packet with a sequence id other than 0 was still matched to
// the recorded login packet with that sequence id, whatever its bytes: COM_QUERY "DROP TABLE users"
// sent with sequence id 1 got a recorded login's OK, and a strict replay passed. Authentication is
// matched by sequence id only during the connection phase; after it such a packet is a miss.

const at = new Date('2026-11-28T08:00:00Z');
const packet = (seq: number, payload: string | Buffer) => packetOf(seq, typeof payload === 'string' ? Buffer.from(payload, 'latin1') : payload);
const greeting = packet(0, '\x0a8.0.1\0' + '\0'.repeat(40));
const ok = (seq: number) => packet(seq, Buffer.from([0, 0, 0, 2, 0, 0, 0]));
/** A HandshakeResponse41 (CLIENT_PROTOCOL_41) of user `user`, no password. */
function login(user: string, seq = 1): Buffer {
  const head = Buffer.alloc(32);
  head.writeUInt32LE(0x200, 0);
  head.writeUInt32LE(1 << 24, 4);
  head[8] = 0xff;
  return packet(seq, Buffer.concat([head, Buffer.from(`${user}\0\0`, 'latin1')]));
}
const mock = (request: Buffer, response: Buffer, i: number) => ({ ...buildGenericMock({ request, response, startedAt: at, endedAt: at }), name: `mock-${i}` });
const target = { host: 'db.test', port: 3306 };

const open: Closable[] = [];
afterEach(async () => {
  for (const c of open.splice(0)) await c.close();
});

async function replay(mocks: ReturnType<typeof mock>[], options: ReplayGenericOptions = {}) {
  const misses: string[] = [];
  const served: string[] = [];
  const l = await replayingListener(target, new GenericIndex(mocks), { ...options, onMiss: (m) => misses.push(m.message), onMatch: (m) => served.push(m.mock) });
  open.push(l);
  return { port: l.port, misses, served, results: l.results };
}

describe('attack f2-3: MySQL authentication is matched by sequence id only during the connection phase', () => {
  it('a command sent with sequence id 1 after the login is a miss answered with an ERR packet, not a recorded login OK', async () => {
    // Two connection phases recorded (two connections) and one SELECT 1: the second login's OK is still unused.
    const r = await replay([
      mock(Buffer.alloc(0), greeting, 0),
      mock(login('alice'), ok(2), 1),
      mock(packet(0, '\x03SELECT 1'), ok(1), 2),
      mock(Buffer.alloc(0), greeting, 3),
      mock(login('alice'), ok(2), 4),
    ]);
    const c = new Client(r.port);
    expect(await c.readBytes(greeting.length)).toEqual(greeting);
    // The login's bytes differ from the recording's (its user): still matched, by its sequence id.
    c.send(login('bob'));
    expect(await c.readBytes(ok(2).length)).toEqual(ok(2));
    c.send(packet(0, '\x03SELECT 1'));
    expect(await c.readBytes(ok(1).length)).toEqual(ok(1));
    c.send(packet(1, '\x03DROP TABLE users'));
    const head = await c.readBytes(5);
    // An ERR packet (0xff) with sequence id 2, not mock-4's OK.
    expect(head[3]).toBe(2);
    expect(head[4]).toBe(0xff);
    await eventually(() => r.misses.length === 1);
    expect(r.misses[0]).toMatch(/no recorded mock for COM_QUERY.*DROP TABLE users.*sequence id 1 after the connection phase.*Got packets out of order/);
    expect(r.served).toEqual(['mock-0', 'mock-1', 'mock-2']);
    c.end();
    await eventually(() => r.results.length === 1);
    expect(r.results[0]).toMatchObject({ matched: 3, missed: 1 });
  });

  it('a login in several packets (an auth switch) is matched whatever its bytes until its OK; a packet with its sequence id after that misses', async () => {
    const authSwitch = packet(2, '\xfemysql_native_password\0' + 'x'.repeat(20) + '\0');
    const r = await replay([mock(Buffer.alloc(0), greeting, 0), mock(login('alice'), authSwitch, 1), mock(packet(3, 'A'.repeat(20)), ok(4), 2)]);
    const c = new Client(r.port);
    await c.readBytes(greeting.length);
    c.send(login('bob'));
    expect(await c.readBytes(authSwitch.length)).toEqual(authSwitch);
    // The scrambled password differs on every run: matched by its sequence id.
    c.send(packet(3, 'B'.repeat(20)));
    expect(await c.readBytes(ok(4).length)).toEqual(ok(4));
    expect(r.misses).toEqual([]);
    // The connection phase ended with that OK: the same sequence id now is no login packet.
    c.send(packet(3, '\x03DELETE FROM users'));
    const head = await c.readBytes(5);
    expect(head[4]).toBe(0xff);
    await eventually(() => r.misses.length === 1);
    expect(r.misses[0]).toMatch(/DELETE FROM users.*sequence id 3 after the connection phase/);
    c.end();
  });
});
