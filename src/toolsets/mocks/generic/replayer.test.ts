import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Closable } from '../http/test-support.js';
import { parseMockSet } from '../keploy/parse.js';
import { numberMocks, serializeMockSet } from '../keploy/serialize.js';
import type { GenericMock } from '../keploy/types.js';
import { GenericIndex } from './matcher.js';
import type { GenericReplayMatch, GenericReplayMiss } from './replayer.js';
import { sleep } from '../../../core/wait.js';
import { Client, eventually, recordingListener, replayingListener, startGreeterServer, startKvServer } from './testing.js';

/** The program's conversations: each is recorded against the real servers, then replayed without them. */
const BIG = 2 * 1024 * 1024;

async function kvSession(port: number): Promise<string[]> {
  const c = new Client(port);
  const out = [];
  for (const line of ['GET x', 'SET y 2', 'GET y', 'INCR c', 'INCR c', 'BIN', 'QUIT']) out.push(await c.ask(line));
  out.push((await c.closed()).toString('latin1')); // the server closed after QUIT: nothing more
  return out;
}

async function greeterSession(port: number): Promise<string[]> {
  const c = new Client(port);
  const out = [await c.readLine()];
  for (const line of ['ehlo me', 'data', 'QUIT']) out.push(await c.ask(line));
  return out;
}

async function counterSession(port: number): Promise<string[]> {
  const c = new Client(port);
  const out = [await c.ask('INCR c')];
  c.end();
  await c.closed();
  return out;
}

const targets = { kv: { host: '127.0.0.1', port: 0 }, greeter: { host: '127.0.0.1', port: 0 } };
const recorded: Record<string, string[]> = {};
let mocks: GenericMock[];
let index: GenericIndex;
const matches: GenericReplayMatch[] = [];
const misses: GenericReplayMiss[] = [];
const replay = { kv: 0, greeter: 0, nowhere: 0 };
const closables: Closable[] = [];

beforeAll(async () => {
  const kv = await startKvServer();
  const greeter = await startGreeterServer();
  targets.kv.port = kv.port;
  targets.greeter.port = greeter.port;
  const kvRec = await recordingListener(targets.kv, {});
  const greeterRec = await recordingListener(targets.greeter, {});
  recorded.kv = await kvSession(kvRec.port);
  recorded.greeter = await greeterSession(greeterRec.port);
  recorded.counter = await counterSession(kvRec.port);
  const big = new Client(kvRec.port);
  recorded.bigGet = [await big.ask('GET x')];
  big.send(`BIG ${BIG}\n`);
  expect((await big.readBytes(BIG)).length).toBe(BIG);
  big.end();
  await big.closed();
  await eventually(() => kvRec.results.length === 3 && greeterRec.results.length === 1);
  await Promise.all([kvRec.close(), greeterRec.close(), kv.close(), greeter.close()]);
  // Through the Keploy file and back, in the order the exchanges happened.
  mocks = parseMockSet(serializeMockSet(numberMocks([...kvRec.mocks, ...greeterRec.mocks])), 'mocks.yaml') as GenericMock[];
  index = new GenericIndex(mocks);
  const options = { partialWaitMs: 300, onMatch: (m: GenericReplayMatch) => matches.push(m), onMiss: (m: GenericReplayMiss) => misses.push(m) };
  const listeners = await Promise.all([
    replayingListener(targets.kv, index, options),
    replayingListener(targets.greeter, index, options),
    replayingListener({ host: '127.0.0.1', port: 1 }, index, options),
  ]);
  closables.push(...listeners);
  [replay.kv, replay.greeter, replay.nowhere] = listeners.map((l) => l.port) as [number, number, number];
});
afterAll(async () => {
  for (const c of closables) await c.close();
});

describe('replayGeneric', () => {
  it('answers a client-first conversation exactly as recorded, and closes where the server closed', async () => {
    expect(recorded.kv).toEqual(['VALUE 1\n', 'OK\n', 'VALUE 2\n', 'VALUE 1\n', 'VALUE 2\n', '\xff\x00\x80\n', 'BYE\n', '']);
    expect(await kvSession(replay.kv)).toEqual(recorded.kv);
  });

  it('sends a recorded greeting on connect (server-speaks-first)', async () => {
    expect(recorded.greeter).toEqual(['220 hello\n', 'EHLO ME\n', 'DATA\n', '221 bye\n']);
    expect(await greeterSession(replay.greeter)).toEqual(recorded.greeter);
    expect(matches.some((m) => m.greeting && m.target === `127.0.0.1:${targets.greeter.port}`)).toBe(true);
  });

  it('answers a repeated request in recorded order across connections, then repeats the last answer', async () => {
    // INCR c was recorded three times: 1, 2 (first connection), 1 (the counter connection).
    expect(recorded.counter).toEqual(['VALUE 1\n']);
    const own: GenericReplayMatch[] = [];
    const fresh = await replayingListener(targets.kv, new GenericIndex(mocks), { onMatch: (m) => own.push(m) });
    closables.push(fresh);
    const first = new Client(fresh.port);
    expect([await first.ask('INCR c'), await first.ask('INCR c')]).toEqual(['VALUE 1\n', 'VALUE 2\n']);
    first.end();
    const second = new Client(fresh.port);
    expect([await second.ask('INCR c'), await second.ask('INCR c')]).toEqual(['VALUE 1\n', 'VALUE 1\n']);
    second.end();
    expect(own.map((m) => m.reused)).toEqual([false, false, false, true]);
    expect(new Set(own.slice(0, 3).map((m) => m.mock)).size).toBe(3);
  });

  it('misses a changed request: counted, described, the connection closed', async () => {
    const before = misses.length;
    const c = new Client(replay.kv);
    expect(await c.ask('GET x')).toBe('VALUE 1\n');
    c.send('GET z\n');
    expect((await c.closed()).length).toBe(0);
    expect(misses).toHaveLength(before + 1);
    const miss = misses[before]!;
    expect(miss).toMatchObject({ target: `127.0.0.1:${targets.kv.port}`, bytes: 6, preview: '"GET z\\n"', closest: { samePrefix: 4 } });
    const getX = mocks.find((m) => m.spec.genericrequests[0]?.message[0]?.data === 'GET x\n')!;
    expect(miss.closest!.name).toBe(getX.name);
    expect(miss.message).toBe(`generic connection to 127.0.0.1:${targets.kv.port}: no recorded request matches 6 bytes "GET z\\n"; closest ${getX.name} (same first 4 bytes): "GET x\\n"`);
  });

  it('shows bytes that are not text as hex', async () => {
    const before = misses.length;
    const c = new Client(replay.kv);
    c.send(Buffer.from([0x00, 0x01, 0xfe, 0x02, 0x03, 0x04, 0x05, 0x06]));
    await c.closed();
    expect(misses[before]!.preview).toBe('hex 00 01 fe 02 03 04 05 06');
  });

  it('waits for a request split over several writes, and answers pipelined requests in turn', async () => {
    const c = new Client(replay.kv);
    expect(await c.ask('GET x')).toBe('VALUE 1\n');
    c.send('GE');
    await sleep(50); // a pause, not a wait: the request arrives in two writes, apart in time
    c.send('T y\n');
    expect(await c.readLine()).toBe('VALUE 2\n');
    c.send('GET x\nGET y\n');
    expect([await c.readLine(), await c.readLine()]).toEqual(['VALUE 1\n', 'VALUE 2\n']);
    c.end(); // half-close: answered, then closed
    expect((await c.closed()).length).toBe(0);
  });

  it('misses a request that stops short of any recorded one, once the client has gone quiet', async () => {
    const before = misses.length;
    const c = new Client(replay.kv);
    expect(await c.ask('GET x')).toBe('VALUE 1\n');
    const sent = Date.now();
    c.send('GET');
    expect((await c.closed()).length).toBe(0);
    expect(Date.now() - sent).toBeGreaterThanOrEqual(250);
    expect(misses[before]).toMatchObject({ bytes: 3, preview: '"GET"', closest: { samePrefix: 3 } });
  });

  it('answers what a half-closing client sent before closing', async () => {
    const c = new Client(replay.kv);
    c.send('GET y\n');
    c.end();
    expect((await c.closed()).toString()).toBe('VALUE 2\n');
  });

  it('refuses an exchange that was over the recording limit instead of sending part of it', async () => {
    const before = misses.length;
    const c = new Client(replay.kv);
    expect(await c.ask('GET x')).toBe(recorded.bigGet![0]);
    c.send(`BIG ${BIG}\n`);
    expect((await c.closed()).length).toBe(0);
    expect(misses[before]).toMatchObject({ bytes: 12, preview: `"BIG ${BIG}\\n"` });
    expect(misses[before]!.message).toMatch(
      new RegExp(`^generic connection to 127\\.0\\.0\\.1:${targets.kv.port}: mock mock-\\d+ matched, but its exchange \\(12 \\+ ${BIG} bytes\\) went over the recording limit`),
    );
  });

  it('answers a target only from its own mocks: one with none is a miss at connect', async () => {
    const before = misses.length;
    const c = new Client(replay.nowhere);
    expect((await c.closed()).length).toBe(0);
    expect(misses[before]!.message).toBe(
      `generic connection to 127.0.0.1:1: no Generic mocks were recorded for it (recorded: 127.0.0.1:${targets.kv.port}, 127.0.0.1:${targets.greeter.port}); received no bytes`,
    );
  });
});

describe('replaying a set Keploy wrote (no target recorded, requests in several payloads)', () => {
  const keploy = (request: Array<[string, string]>, response: string, name: string): GenericMock => ({
    version: 'api.keploy.io/v1beta1',
    kind: 'Generic',
    name,
    spec: {
      metadata: { type: 'config' },
      genericrequests: request.map(([type, data]) => ({ origin: 'client', message: [{ type, data }] })),
      genericresponses: [{ origin: 'server', message: [{ type: 'binary', data: Buffer.from(response).toString('base64') }] }],
      reqtimestampmock: '2024-08-06T16:26:50.741516528+05:30',
      restimestampmock: '2024-08-06T16:26:50.741516528+05:30',
    },
  });

  it('matches on the concatenated bytes, and waits briefly when a longer recorded request could follow', async () => {
    const set = [
      keploy(
        [
          ['string', 'PING'],
          ['binary', Buffer.from('\r\n').toString('base64')],
        ],
        '+PONG\r\n',
        'mock-0',
      ),
      keploy([['string', 'PING\r\nPING\r\n']], '+PONG\r\n+PONG2\r\n', 'mock-1'),
    ];
    const l = await replayingListener({ host: 'redis.internal', port: 6379 }, new GenericIndex(set), { settleMs: 30 });
    closables.push(l);
    const c = new Client(l.port);
    c.send('PING\r\n');
    expect((await c.readBytes(7)).toString()).toBe('+PONG\r\n');
    c.send('PING\r\nPING\r\n');
    expect((await c.readBytes(15)).toString()).toBe('+PONG\r\n+PONG2\r\n');
    c.end();
    await c.closed();
    await eventually(() => l.results.length === 1);
    expect(l.results[0]).toEqual({ matched: 2, missed: 0 });
  });
});
