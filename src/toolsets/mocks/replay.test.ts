import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMockSet } from './keploy/parse.js';
import { startRedis } from './redis/testing.js';
import { MISS_LINES, RECORDED_MAX_BYTES, replayMocks } from './replay.js';
import { loadCa } from './session.js';

/** replayMocks, the whole of a replay: a real program under the capture proxy, answered from a set. */

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'dk-replay-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SET = [
  'version: api.keploy.io/v1beta1',
  'kind: Redis',
  'name: mock-0',
  'spec:',
  '  metadata:',
  '    type: config',
  '  redisrequests:',
  '    - origin: client',
  '      message:',
  '        - type: string',
  '          data: "*2\\r\\n$3\\r\\nGET\\r\\n$5\\r\\nknown\\r\\n"',
  '  redisresponses:',
  '    - origin: server',
  '      message:',
  '        - type: string',
  '          data: "$5\\r\\nvalue\\r\\n"',
  '  reqtimestampmock: 2024-08-02T22:15:10.6084523Z',
  '  restimestampmock: 2024-08-02T22:15:10.608930466Z',
  '',
].join('\n');

// One connection, `n` pipelined GETs no mock answers, every reply read before it closes.
const MISSER = `import socket, sys
n = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", 6399))
s.sendall(b"".join(b"*2\\r\\n$3\\r\\nGET\\r\\n$%d\\r\\n%s\\r\\n" % (len(k), k) for k in (b"missing-%d" % i for i in range(n))))
got = b""
while got.count(b"\\r\\n-ERR") + got.startswith(b"-ERR") < n:
    chunk = s.recv(65536)
    if not chunk: break
    got += chunk
s.close()
`;

/** `command` run in the workspace with SET replayed to it (misses answered as `onMiss` says). */
async function replaySet(command: string, onMiss?: 'record'): Promise<Awaited<ReturnType<typeof replayMocks>>> {
  const { ca, env } = await loadCa(() => undefined);
  return replayMocks({
    command,
    mocks: parseMockSet(SET, 'mocks.yaml'),
    fallBackOnMiss: false,
    ...(onMiss ? { onMiss } : {}),
    cwd: dir,
    ca,
    caEnv: env,
    timeoutMs: 60_000,
    ownPorts: [],
    warn: () => undefined,
  });
}

describe('replayMocks', () => {
  it('keeps the first miss lines and counts the rest: a program missing thousands of times holds no line per miss in the server', async () => {
    writeFileSync(path.join(dir, 'misser.py'), MISSER);
    const n = 3_000;
    const outcome = await replaySet(`/usr/bin/python3 misser.py ${n}`);
    expect(outcome.run.exitCode, JSON.stringify(outcome.run)).toBe(0);
    expect(outcome.missed).toBe(n);
    expect(outcome.misses).toHaveLength(MISS_LINES);
    expect(outcome.misses[0], outcome.misses[0]).toMatch(/missing-0\b/);
  }, 90_000);

  it('records on a miss no more than a set may hold (the rest are counted): the calls recorded are kept in the server until the run ends', async () => {
    // 40 SETs of 1 MiB to a real Redis: 40 MiB recorded on a miss, past the 32 MiB a set holds.
    const redis = await startRedis();
    try {
      writeFileSync(
        path.join(dir, 'setter.py'),
        [
          'import socket, sys',
          'port, password = int(sys.argv[1]), sys.argv[2].encode()',
          's = socket.create_connection(("127.0.0.1", port))',
          'f = s.makefile("rb")',
          'def call(*args):',
          '    s.sendall(b"*%d\\r\\n" % len(args) + b"".join(b"$%d\\r\\n%s\\r\\n" % (len(a), a) for a in args))',
          '    line = f.readline()',
          '    assert line.startswith(b"+"), line',
          'call(b"AUTH", password)',
          'for i in range(40): call(b"SET", b"big-%d" % i, b"x" * (1 << 20))',
          '',
        ].join('\n'),
      );
      const outcome = await replaySet(`/usr/bin/python3 setter.py ${redis.port} ${redis.password}`, 'record');
      expect(outcome.run.exitCode, JSON.stringify(outcome.run)).toBe(0);
      expect(outcome.recorded.length).toBeGreaterThan(20);
      expect(outcome.recorded.length + outcome.recordedDropped).toBe(41);
      expect(outcome.recordedDropped).toBeGreaterThan(0);
      expect(outcome.recorded.length * (1 << 20)).toBeLessThanOrEqual(RECORDED_MAX_BYTES + (1 << 20));
    } finally {
      await redis.stop();
    }
  }, 90_000);
});
