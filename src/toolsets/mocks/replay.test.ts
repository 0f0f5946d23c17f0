import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMockSet } from './keploy/parse.js';
import { startRedis } from './redis/testing.js';
import { MISS_LINES, narrowSet, RECORDED_MAX_BYTES, replayMocks, USAGE_NAMES, UsageCounter } from './replay.js';
import type { Mock } from './keploy/types.js';
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

/** A Python client of the Redis at `argv[1]` (password `argv[2]`): `call(*args)` gives the reply line (with a bulk string's data). */
const REDIS_CLIENT = [
  'import socket, sys',
  'port, password = int(sys.argv[1]), sys.argv[2].encode()',
  's = socket.create_connection(("127.0.0.1", port))',
  'f = s.makefile("rb")',
  'def call(*args):',
  '    s.sendall(b"*%d\\r\\n" % len(args) + b"".join(b"$%d\\r\\n%s\\r\\n" % (len(a), a) for a in args))',
  '    line = f.readline()',
  '    if line.startswith(b"$"): line += f.readline()',
  '    return line',
];

/** `command` run in the workspace with SET replayed to it (misses answered as `onMiss` says). */
async function replaySet(command: string, onMiss?: 'record', caps: { maxMocks?: number } = {}): Promise<Awaited<ReturnType<typeof replayMocks>>> {
  const { ca, env } = await loadCa(() => undefined);
  return replayMocks({
    command,
    mocks: parseMockSet(SET, 'mocks.yaml'),
    fallBackOnMiss: false,
    ...(onMiss ? { onMiss } : {}),
    ...caps,
    cwd: dir,
    ca,
    caEnv: env,
    timeoutMs: 60_000,
    ownPorts: [],
    warn: () => undefined,
  });
}

/** Connects, is busy for `argv[1]` seconds before its first write (`GET known`, or nothing when `argv[2]` is `close`), and prints the reply. */
const SLOW_FIRST_WRITE = `import socket, sys, time
s = socket.create_connection(("127.0.0.1", 6399))
time.sleep(float(sys.argv[1]))
if sys.argv[2:] == ["close"]:
    s.close()
    sys.exit(0)
s.sendall(b"*2\\r\\n$3\\r\\nGET\\r\\n$5\\r\\nknown\\r\\n")
print(s.recv(100))
`;

describe('replayMocks', () => {
  it('answers a client busy for a second before its first write: with no mock to greet it, it is not taken for one waiting to be greeted (CI: a pipeline being built was a Generic miss)', async () => {
    writeFileSync(path.join(dir, 'slow.py'), SLOW_FIRST_WRITE);
    const outcome = await replaySet('/usr/bin/python3 slow.py 1');
    expect(outcome.run.exitCode, JSON.stringify(outcome)).toBe(0);
    expect(outcome.run.stdoutTail).toContain("b'$5\\r\\nvalue\\r\\n'");
    expect([outcome.replayed, outcome.missed]).toEqual([1, 0]);
  }, 60_000);

  it('and one that closes without a word is still a miss, when it closes', async () => {
    const outcome = await replaySet('/usr/bin/python3 slow.py 0.5 close');
    expect(outcome.run.exitCode, JSON.stringify(outcome)).toBe(0);
    expect([outcome.replayed, outcome.missed]).toEqual([0, 1]);
    expect(outcome.misses[0]).toMatch(/received no bytes/);
  }, 60_000);

  it('a connection reset after its first bytes, before its protocol is told, is a miss: a request sent and never answered (issue 18: it was counted nowhere, a strict replay passed)', async () => {
    // Part of a request line (HTTP not yet sure), then a reset (SO_LINGER 0) before the sniffer's wait for the rest ends.
    writeFileSync(
      path.join(dir, 'cut.py'),
      'import socket, struct, time\ns = socket.create_connection(("127.0.0.1", 6399))\ns.sendall(b"GET /cut HT")\ntime.sleep(0.2)\n' +
        's.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))\ns.close()\n',
    );
    const outcome = await replaySet('/usr/bin/python3 cut.py');
    expect(outcome.run.exitCode, JSON.stringify(outcome)).toBe(0);
    expect([outcome.replayed, outcome.missed], JSON.stringify(outcome.misses)).toEqual([0, 1]);
    expect(outcome.misses[0]).toMatch(/127\.0\.0\.1:6399.*11 bytes.*(reset|cut)/);
  }, 60_000);

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
    // 40 SETs of 900 KiB to a real Redis (each under the 1 MiB an exchange may have): 35 MiB recorded on a miss, past the 32 MiB a set holds.
    const redis = await startRedis();
    try {
      writeFileSync(
        path.join(dir, 'setter.py'),
        [...REDIS_CLIENT, 'assert call(b"AUTH", password).startswith(b"+")', 'for i in range(40): assert call(b"SET", b"big-%d" % i, b"x" * (900 << 10)).startswith(b"+")', ''].join('\n'),
      );
      const outcome = await replaySet(`/usr/bin/python3 setter.py ${redis.port} ${redis.password}`, 'record');
      expect(outcome.run.exitCode, JSON.stringify(outcome.run)).toBe(0);
      expect(outcome.recorded.length).toBeGreaterThan(20);
      expect(outcome.recorded.length + outcome.recordedDropped).toBe(41);
      expect(outcome.recordedDropped).toBeGreaterThan(0);
      expect(outcome.recorded.length * (900 << 10)).toBeLessThanOrEqual(RECORDED_MAX_BYTES + (1 << 20));
    } finally {
      await redis.stop();
    }
  }, 90_000);

  it('answers a repeat from a call recorded on a miss only when the set kept it: past its cap the replay index does not grow either', async () => {
    // AUTH, 5 distinct ECHOs, then the same 5 again, against a real Redis; the set keeps 3 mocks.
    const redis = await startRedis();
    try {
      writeFileSync(
        path.join(dir, 'echoer.py'),
        [
          ...REDIS_CLIENT,
          'assert call(b"AUTH", password).startswith(b"+")',
          'for _ in range(2):',
          '    for i in range(5):',
          '        word = b"echo-%d" % i',
          '        got = call(b"ECHO", word)',
          '        assert got == b"$%d\\r\\n%s\\r\\n" % (len(word), word), got',
          '',
        ].join('\n'),
      );
      const outcome = await replaySet(`/usr/bin/python3 echoer.py ${redis.port} ${redis.password}`, 'record', { maxMocks: 3 });
      expect(outcome.run.exitCode, JSON.stringify(outcome.run)).toBe(0);
      // Kept: AUTH, echo-0, echo-1. Only those two ECHOs are answered from what was recorded on their repeat;
      // echo-2..4 are relayed (and dropped) twice: once the first time, again on the repeat.
      expect(outcome.recorded).toHaveLength(3);
      expect(outcome.replayed).toBe(2);
      expect(outcome.recordedDropped).toBe(6);
      expect(outcome.recorded.length + outcome.recordedDropped + outcome.replayed).toBe(11);
    } finally {
      await redis.stop();
    }
  }, 90_000);

  it('HTTP: a request recorded on a miss past the cap is not answered from the recording on its repeat, but relayed again', async () => {
    // 5 distinct GETs, then the same 5 again, each on its own connection; the set keeps 2 mocks.
    let served = 0;
    const server = http.createServer((req, res) => {
      served++;
      res.end(`answer to ${req.url}`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      writeFileSync(
        path.join(dir, 'getter.py'),
        [
          'import socket, sys',
          'port = int(sys.argv[1])',
          'for _ in range(2):',
          '    for i in range(5):',
          '        s = socket.create_connection(("127.0.0.1", port))',
          '        s.sendall(b"GET /p-%d HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\nConnection: close\\r\\n\\r\\n" % (i, port))',
          '        got = b""',
          '        while True:',
          '            chunk = s.recv(65536)',
          '            if not chunk: break',
          '            got += chunk',
          '        s.close()',
          '        assert got.endswith(b"answer to /p-%d" % i), got',
          '',
        ].join('\n'),
      );
      const outcome = await replaySet(`/usr/bin/python3 getter.py ${port}`, 'record', { maxMocks: 2 });
      expect(outcome.run.exitCode, JSON.stringify(outcome.run)).toBe(0);
      expect(outcome.recorded).toHaveLength(2);
      expect(outcome.replayed).toBe(2);
      expect(outcome.recordedDropped).toBe(6);
      // Relayed and not kept: they fell back to the real service, and say so (before: counted as nothing).
      expect(outcome.fellBack).toBe(6);
      expect(served).toBe(8);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  }, 90_000);
});

describe('UsageCounter: what the answer says of the mocks a run did not use, or reused', () => {
  const mock = (name: string, type?: string) => ({ name, kind: 'Generic', spec: { metadata: type ? { type } : {} } }) as unknown as Mock;

  it('counts every mock, names the first USAGE_NAMES, cuts a long name, and never calls a start-up mock reused', () => {
    const long = 'x'.repeat(1_000_000);
    const mocks = [mock(long), mock('start', 'config'), mock('twice'), ...Array.from({ length: USAGE_NAMES + 5 }, (_, i) => mock(`idle-${i}`))];
    const counter = new UsageCounter(mocks);
    for (const name of ['start', 'start', 'start', 'twice', 'twice']) counter.served(name);
    const usage = counter.usage();
    expect(usage.unused).toBe(USAGE_NAMES + 6);
    expect(usage.unusedNames).toHaveLength(USAGE_NAMES);
    expect(usage.unusedNames[0]).toBe(`${'x'.repeat(128)}... (1000000 characters)`);
    expect(usage).toMatchObject({ reused: 1, reusedNames: ['twice (answered 2 times)'] });
  });

  it('a name the set holds several times stands for that many exchanges (attack 18y W4); config on an HTTP mock is no start-up', () => {
    const counter = new UsageCounter([mock('dup'), mock('dup'), mock('dup'), mock('a'), mock('b'), { ...mock('web', 'config'), kind: 'Http' } as Mock]);
    for (const name of ['dup', 'a', 'b', 'web', 'web']) counter.served(name);
    const usage = counter.usage();
    // Before: unused 0 (the name had answered), and a and b were fine but 'dup' was "answered 2 times" when two mocks each answered once.
    expect(usage).toMatchObject({ unused: 2, unusedNames: ['dup (2 of 3 never used)'], reused: 1, reusedNames: ['web (answered 2 times)'] });
  });
});

describe("narrowSet: one test's mocks", () => {
  const at = (name: string, time: string, type?: string) => ({ name, kind: 'Generic', spec: { metadata: type ? { type } : {}, reqtimestampmock: time } }) as unknown as Mock;
  const set = [at('start', '2026-11-27T09:00:00Z', 'config'), at('a', '2026-11-27T10:00:00Z'), at('b', '2026-11-27T10:05:00Z'), at('c', '2026-11-27T10:10:00.5Z')];

  it('by names or by the window their requests were made in, the start-up mocks kept', () => {
    expect(narrowSet(set, { names: ['b'] }).map((m) => m.name)).toEqual(['start', 'b']);
    expect(narrowSet(set, { from: '2026-11-27T10:04:00Z', to: '2026-11-27T10:10:00.5Z' }).map((m) => m.name)).toEqual(['start', 'b', 'c']);
    expect(narrowSet(set, { to: '2026-11-27T10:00:00Z' }).map((m) => m.name)).toEqual(['start', 'a']);
  });

  it('refuses a name the set does not hold, a time that is no time, and a narrowing that keeps nothing', () => {
    expect(() => narrowSet(set, { names: ['b', 'zz'] })).toThrow(/the set holds no mock named 'zz' \(it has 4 mocks, start, a, b, c\)/);
    expect(() => narrowSet(set, { from: 'yesterday' })).toThrow(/from must be an ISO 8601 time/);
    expect(() => narrowSet(set, { from: '2027-01-01T00:00:00Z' })).toThrow(/no mock of the set is requested between 2027-01-01T00:00:00Z and its end/);
  });
});
