import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMockSet } from '../keploy/parse.js';
import { numberMocks, serializeMockSet } from '../keploy/serialize.js';
import type { RedisMock } from '../keploy/types.js';
import { detectProtocol } from '../proxy/sniff.js';
import { RedisIndex, recordRedis, replayRedis } from './index.js';
import { commandArgs, encodeCommand, respEnd } from './resp.js';
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
    await new Promise((r) => setTimeout(r, 100));
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
