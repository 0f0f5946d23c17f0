import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMockSet } from '../keploy/parse.js';
import { numberMocks, serializeMockSet } from '../keploy/serialize.js';
import type { RedisMock } from '../keploy/types.js';
import { detectProtocol } from '../proxy/sniff.js';
import { RedisIndex } from './matcher.js';
import { KeptBytes } from '../kept.js';
import { recordRedis } from './recorder.js';
import { replayRedis } from './replayer.js';
import { commandArgs, encodeCommand, respEnd } from './wire.js';
import { cpuTimes, linearMessage } from '../../../core/cputime.js';
import { pollUntil } from '../../../core/wait.js';
import { startRedis, type RunningRedis } from './testing.js';

const FIXTURE = path.join(import.meta.dirname, 'fixtures', 'keploy-flask-redis.yaml');
const cmd = (...args: string[]) => encodeCommand(args.map((a) => Buffer.from(a)));

/** Sends `bytes` in one write and reads `count` complete RESP replies (bounded). */
function exchange(port: number, steps: Array<{ bytes: Buffer; replies: number }>): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const got: string[] = [];
    let buf = Buffer.alloc(0);
    let step = 0;
    let want = 0;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`timed out after ${got.length} replies: ${JSON.stringify(got)} + ${JSON.stringify(buf.toString('latin1'))}`));
    }, 10_000);
    const next = () => {
      if (step === steps.length) {
        clearTimeout(timer);
        socket.end();
        return resolve(got);
      }
      want += steps[step]!.replies;
      socket.write(steps[step++]!.bytes);
    };
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      for (let end = respEnd(buf, 0); end > 0; end = respEnd(buf, 0)) {
        got.push(buf.subarray(0, end).toString('latin1'));
        buf = buf.subarray(end);
      }
      if (got.length >= want) next();
    });
    socket.on('error', reject);
    socket.on('connect', next);
  });
}

function listen(handler: (socket: net.Socket) => void): Promise<net.Server & { port: number }> {
  const server = net.createServer({ allowHalfOpen: true }, handler) as net.Server & { port: number };
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r(Object.assign(server, { port: (server.address() as net.AddressInfo).port }))));
}

describe('Redis mocks: Keploy format', () => {
  it("reads Keploy's own Redis mocks and writes them back byte for byte", () => {
    const text = readFileSync(FIXTURE, 'utf8');
    const mocks = parseMockSet(text, FIXTURE);
    expect(mocks.map((m) => m.kind)).toEqual(['Redis', 'Redis']);
    expect(serializeMockSet(mocks)).toBe(text);
  });

  it("answers from Keploy's recording", async () => {
    const index = new RedisIndex(parseMockSet(readFileSync(FIXTURE, 'utf8'), FIXTURE) as RedisMock[]);
    const server = await listen((socket) => void replayRedis({ target: { host: 'redis', port: 6379 }, client: socket }, index));
    try {
      const replies = await exchange(server.port, [{ bytes: Buffer.concat([cmd('CLIENT', 'SETINFO', 'LIB-VER', '5.0.8'), cmd('client', 'SETINFO', 'LIB-NAME', 'redis-py')]), replies: 2 }]);
      expect(replies).toEqual(['+OK\r\n', '+OK\r\n']);
    } finally {
      server.close();
    }
  });

  /** Writes `bytes`, half-closes, and reads everything until the server ends (bounded). */
  const sendAll = (port: number, bytes: Buffer) =>
    new Promise<Buffer>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => socket.end(bytes));
      const got: Buffer[] = [];
      const timer = setTimeout(() => (socket.destroy(), reject(new Error(`no end within 60 s; ${Buffer.concat(got).length} bytes read`))), 60_000);
      socket.on('data', (b: Buffer) => got.push(b));
      socket.on('end', () => (clearTimeout(timer), resolve(Buffer.concat(got))));
      socket.on('error', reject);
    });

  it('answers a long pipelined burst (in slices) in order, every reply before the end, whether the commands match or not', async () => {
    const index = new RedisIndex(parseMockSet(readFileSync(FIXTURE, 'utf8'), FIXTURE) as RedisMock[]);
    const server = await listen((socket) => void replayRedis({ target: { host: 'redis', port: 6379 }, client: socket }, index));
    try {
      const hit = cmd('CLIENT', 'SETINFO', 'LIB-NAME', 'redis-py');
      const burst = Buffer.concat(Array.from({ length: 60_000 }, (_, i) => (i % 3 === 2 ? cmd('GET', `absent${i}`) : hit)));
      const replies = (await sendAll(server.port, burst)).toString('latin1').split('\r\n').slice(0, -1);
      expect(replies).toHaveLength(60_000);
      expect(replies.map((r, i) => (i % 3 === 2 ? r.startsWith(`-ERR debugkit: redis redis:6379: no recorded mock for GET "absent${i}"`) : r === '+OK')).every(Boolean)).toBe(true);
    } finally {
      server.close();
    }
  });

  it('refuses a command still not whole past 64 MiB, saying so, instead of holding all of it', async () => {
    const index = new RedisIndex([]);
    const misses: string[] = [];
    const server = await listen((socket) => void replayRedis({ target: { host: 'redis', port: 6379 }, client: socket }, index, { onMiss: (m) => misses.push(m.message) }));
    try {
      const header = Buffer.from('*2\r\n$3\r\nSET\r\n$100000000\r\n');
      const reply = (await sendAll(server.port, Buffer.concat([header, Buffer.alloc(65 << 20, 0x61)]))).toString('latin1');
      expect(reply).toMatch(/^-ERR debugkit: redis redis:6379: the client sent a command over 64 MiB \(\d+ bytes and not yet whole\): /);
      expect(misses).toHaveLength(1);
    } finally {
      server.close();
    }
  });

  it('answers a client that does not read only as fast as it reads (backpressure), then everything in order once it does', async () => {
    const big = Buffer.concat([Buffer.from(`$${1 << 20}\r\n`), Buffer.alloc(1 << 20, 0x62), Buffer.from('\r\n')]);
    const index = new RedisIndex([
      {
        version: 'api.keploy.io/v1beta1',
        kind: 'Redis',
        name: 'mock-big',
        spec: {
          metadata: {},
          redisrequests: [{ origin: 'client', message: [{ type: 'string', data: cmd('GET', 'k').toString('latin1') }] }],
          redisresponses: [{ origin: 'server', message: [{ type: 'binary', data: big.toString('base64') }] }],
        },
      } as unknown as RedisMock,
    ]);
    let answered = 0;
    let served: net.Socket | undefined;
    const server = await listen((socket) => {
      served = socket;
      void replayRedis({ target: { host: 'redis', port: 6379 }, client: socket }, index, { onMatch: () => void answered++ });
    });
    const client = net.connect(server.port, '127.0.0.1');
    try {
      client.pause(); // reads nothing yet
      await new Promise((r) => client.once('connect', r));
      client.write(Buffer.concat(Array.from({ length: 1200 }, () => cmd('GET', 'k'))));
      // The replayer stops reading commands once the client's socket is full.
      const held = await pollUntil(() => !!(served?.isPaused() && served.writableNeedDrain), { timeoutMs: 20_000, intervalMs: 5 });
      if (!held) throw new Error(`the replayer never held: ${answered} answered, ${served?.writableLength} bytes waiting`);
      expect(answered, 'answered before the client read anything').toBeLessThan(64);
      expect(served!.writableLength, 'bytes waiting to be written').toBeLessThan(64 << 20);
      // Reading now, the client gets all 1,200 answers in order.
      let got = 0;
      let bytes = 0;
      await new Promise<void>((resolve, reject) => {
        client.on('data', (b: Buffer) => {
          bytes += b.length;
          got = Math.floor(bytes / big.length);
          if (got === 1200) resolve();
        });
        client.on('error', reject);
        client.resume();
      });
      expect(bytes).toBe(1200 * big.length);
      expect(answered).toBe(1200);
    } finally {
      client.destroy();
      server.close();
    }
  }, 60_000);

  it('detects Redis commands by their first bytes, and leaves other text alone', () => {
    expect(detectProtocol(cmd('PING'), false)).toEqual({ protocol: 'redis' });
    expect(detectProtocol(Buffer.from('*1\r'), false)).toBeUndefined();
    expect(detectProtocol(Buffer.from('*hello\r\n'), false)).toEqual({ protocol: 'generic' });
    expect(commandArgs(Buffer.from('PING hi\r\n')).map(String)).toEqual(['PING', 'hi']);
  });
});

describe('Redis mocks: recorded against a real redis-server, replayed without it', () => {
  let redis: RunningRedis | undefined;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('RESP2 and RESP3, pipelining, AUTH and HELLO: identical replies; passwords never written; a miss names the closest', async () => {
    const pw = redis!.password;
    const steps = (password: string) => [
      { bytes: cmd('AUTH', password), replies: 1 },
      // Pipelined: five commands in one write.
      { bytes: Buffer.concat([cmd('SET', 'fruit', 'apple'), cmd('GET', 'fruit'), cmd('INCR', 'n'), cmd('INCR', 'n'), cmd('LRANGE', 'none', '0', '-1')]), replies: 5 },
      { bytes: cmd('HELLO', '3', 'AUTH', 'default', password), replies: 1 },
      { bytes: Buffer.concat([cmd('HSET', 'h', 'a', '1'), cmd('HGETALL', 'h'), cmd('GET', 'missing'), cmd('INCR', 'n')]), replies: 4 },
    ];
    const mocks: RedisMock[] = [];
    const recorder = await listen((socket) => {
      const upstream = net.connect(redis!.port, '127.0.0.1');
      void recordRedis({ target: { host: '127.0.0.1', port: redis!.port }, client: socket }, upstream, { onMock: (m) => mocks.push(m) });
    });
    const recorded = await exchange(recorder.port, steps(pw));
    recorder.close();
    // The last exchange is written once the connections close.
    await pollUntil(() => mocks.length >= 11, { timeoutMs: 5000, intervalMs: 5 });
    expect(recorded.slice(0, 6)).toEqual(['+OK\r\n', '+OK\r\n', '$5\r\napple\r\n', ':1\r\n', ':2\r\n', '*0\r\n']);
    expect(recorded[6]).toMatch(/^%7\r\n\$6\r\nserver\r\n\$5\r\nredis\r\n/); // RESP3 from here on
    expect(recorded.slice(7)).toEqual([':1\r\n', '%1\r\n$1\r\na\r\n$1\r\n1\r\n', '_\r\n', ':3\r\n']);
    expect(mocks).toHaveLength(11);

    const text = serializeMockSet(numberMocks(mocks));
    expect(text).not.toContain(pw);
    expect(text).toContain('(redacted)');
    const back = parseMockSet(text, 'redis.yaml') as RedisMock[];
    expect(serializeMockSet(back)).toBe(text);
    await redis!.stop();
    redis = undefined;

    const index = new RedisIndex(back);
    const misses: string[] = [];
    let matched = 0;
    const replayer = await listen(
      (socket) => void replayRedis({ target: { host: '127.0.0.1', port: 6379 }, client: socket }, index, { onMatch: () => void matched++, onMiss: (m) => misses.push(m.message) }),
    );
    try {
      // Another password: replay needs none.
      expect(await exchange(replayer.port, steps('not-the-password'))).toEqual(recorded);
      expect(matched).toBe(11);
      expect(misses).toEqual([]);
      const [miss, after] = await exchange(replayer.port, [{ bytes: Buffer.concat([cmd('GET', 'pear'), cmd('GET', 'fruit')]), replies: 2 }]);
      expect(miss).toMatch(/^-ERR debugkit: redis 127\.0\.0\.1:6379: no recorded mock for GET "pear"; closest mock-\d+: GET "fruit"\r\n$/);
      expect(after).toBe('$5\r\napple\r\n'); // the connection stays usable
      expect(misses).toHaveLength(1);
    } finally {
      replayer.close();
    }
  });
});

describe('RedisIndex at scale', () => {
  /** `n` recorded `SET k<i> v`, as mocks. */
  const setOf = (n: number): RedisMock[] =>
    Array.from({ length: n }, (_, i) => ({
      version: 'api.keploy.io/v1beta1',
      kind: 'Redis',
      name: `mock-${i}`,
      spec: {
        metadata: {},
        redisrequests: [{ origin: 'client', message: [{ type: 'string', data: cmd('SET', `k${i}`, 'v').toString('latin1') }] }],
        redisresponses: [{ origin: 'server', message: [{ type: 'string', data: '+OK\r\n' }] }],
      },
    })) as unknown as RedisMock[];

  it("a miss costs the same in a set 16 times larger (it looks among the commands of the miss's name and key, not at all of them)", () => {
    const [small, big] = [new RedisIndex(setOf(1000)), new RedisIndex(setOf(16_000))];
    const misses = Array.from({ length: 2000 }, (_, i) => commandArgs(cmd('SET', `x${i}`, 'v')));
    const near = (index: RedisIndex) => () => misses.map((m) => index.closest(m));
    const t = cpuTimes(near(small), near(big));
    expect(t.big, linearMessage('2,000 misses against 1,000 and 16,000 recorded commands', t, 16)).toBeLessThan(4 * t.small + 5);
    // The closest is still the same command with most equal arguments; the same key first, when recorded.
    expect(big.closest(commandArgs(cmd('SET', 'k15999', 'w')))?.name).toBe('mock-15999');
    expect(big.closest(commandArgs(cmd('SET', 'zz', 'v')))?.name).toBe('mock-0');
    expect(big.closest(commandArgs(cmd('GET', 'k1')))).toBeUndefined();
  });
});

describe("Redis recording: commands awaiting replies are charged to the recording's budget (attack 18q)", () => {
  it('a server that never answers: the connection stops being recorded once the budget is full, the budget is given back, the bytes still flow', async () => {
    // 300 MB of 14-byte PINGs never answered filled a 4 GB heap before.
    let received = 0;
    const sides: net.Socket[] = [];
    const silent = await listen((socket) => {
      sides.push(socket);
      socket.on('data', (c: Buffer) => void (received += c.length));
    });
    const kept = new KeptBytes(256 * 1024);
    const dropped: string[] = [];
    let result: Promise<{ stoppedRecording?: string }> | undefined;
    const recorder = await listen((socket) => {
      const upstream = net.connect(silent.port, '127.0.0.1');
      result = recordRedis({ target: { host: '127.0.0.1', port: silent.port }, client: socket }, upstream, { onMock: () => undefined, onDropped: (why) => dropped.push(why), kept });
    });
    const client = net.connect(recorder.port, '127.0.0.1');
    const ping = cmd('PING');
    const total = 5000 * ping.length;
    client.write(Buffer.concat(Array.from({ length: 5000 }, () => ping)));
    await pollUntil(() => received === total, { timeoutMs: 10_000, intervalMs: 5 });
    client.destroy();
    for (const side of sides) side.destroy();
    const outcome = await result!;
    recorder.close();
    silent.close();
    expect(dropped).toHaveLength(1);
    expect(dropped[0]).toMatch(
      /^a Redis pipeline of \d+ commands awaiting replies, past the \d+ bytes a recording keeps of calls not finished: it and the rest of its connection were relayed, not recorded$/,
    );
    expect(outcome.stoppedRecording).toBe(dropped[0]);
    expect(kept.take(256 * 1024)).toBe(true);
  });
});
