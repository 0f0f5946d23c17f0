// PENDING (issue 18, still open): findings F1 and F2 of the third attack on issue 18 (attack 18c),
// whose tests fail today: a Redis set's misses (RedisIndex.closest scans every recorded command of
// the name) and a Generic set's matches (TargetView.match scans every recorded request) run in one
// synchronous loop per chunk the program sends, so 20,000 pipelined commands against a set of
// 19,000 held another key's ping 28-38 s (Redis) and 75-95 s (Generic). Not run (not *.test.ts),
// so CI stays true: move the two describes into test/attack-18c.test.ts once fixed (index the
// recorded commands, and answer a pipelined burst in slices that yield to the event loop).
import { closeSync, mkdirSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerText, dropped, idleBaseline, plainCall, slowestPingWhile, startKeyedServer, stopKeyedServers, type KeyedServer } from '../helpers/attack.js';
import { mocksWorkspace } from '../helpers/programs.js';
import { stopHard, track } from '../helpers/stall.js';

/** A Redis set of `count` mocks, each `SET k<i> v` answered +OK (as redis-py records them). */
function redisSet(file: string, count: number): void {
  const fd = openSync(file, 'w');
  const one = (i: number) => {
    const key = `k${i}`;
    const cmd = `*3\\r\\n$3\\r\\nSET\\r\\n$${key.length}\\r\\n${key}\\r\\n$1\\r\\nv\\r\\n`;
    return (
      `version: api.keploy.io/v1beta1\nkind: Redis\nname: mock-${i}\nspec:\n    metadata:\n        type: config\n` +
      `    redisrequests:\n        - origin: client\n          message:\n            - type: string\n              data: "${cmd}"\n` +
      `    redisresponses:\n        - origin: server\n          message:\n            - type: string\n              data: "+OK\\r\\n"\n` +
      `    reqtimestampmock: 2024-08-02T22:15:10.6084523Z\n    restimestampmock: 2024-08-02T22:15:10.608930466Z\n---\n`
    );
  };
  for (let i = 0; i < count; i += 1000) writeSync(fd, Array.from({ length: Math.min(1000, count - i) }, (_, k) => one(i + k)).join(''));
  closeSync(fd);
}

// The program: one connection to a Redis port, N pipelined `SET x v` (none recorded) in one write,
// then reads the N replies (errors naming the closest mock) and exits.
const PIPELINE_PY = `import socket, sys
n = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", 6379), timeout=300)
s.sendall(b"*3\\r\\n$3\\r\\nSET\\r\\n$1\\r\\nx\\r\\n$1\\r\\nv\\r\\n" * n)
got = 0
while got < n:
    b = s.recv(1 << 20)
    if not b:
        break
    got += b.count(b"\\r\\n")
print("replies", got)
`;

describe("attack 18c: a Redis set's misses, each scanning every recorded command of its name on the main thread (RedisIndex.closest)", () => {
  let s: KeyedServer;
  let root: string;

  beforeAll(async () => {
    root = mocksWorkspace('debugkit-attack18c-redis-');
    for (const [name, count] of [
      ['redis-big', 19_000],
      ['redis-one', 1],
    ] as const) {
      mkdirSync(path.join(root, 'keploy', name), { recursive: true });
      redisSet(path.join(root, 'keploy', name, 'mocks.yaml'), count);
    }
    writeFileSync(path.join(root, 'pipeline.py'), PIPELINE_PY);
    s = await startKeyedServer(root, { attacker: 'mocks,mocks:run', other: 'mocks:read' }, ['--toolsets', 'mocks']);
  }, 60_000);
  afterAll(async () => {
    await stopHard(s?.node.proc);
    await stopKeyedServers([s]);
    rmSync(root, { recursive: true, force: true });
  });

  for (const [mockName, n, what] of [
    ['redis-one', 20_000, 'control: 20,000 pipelined misses against a set of one SET'],
    ['redis-big', 20_000, '20,000 pipelined misses against a set of 19,000 SETs'],
  ] as const) {
    it(`${what} do not hold another key's ping`, async () => {
      const baseline = await idleBaseline(s, s.keys.other!.key);
      const t = performance.now();
      const replay = track(plainCall(s, s.keys.attacker!.key, 'keploy_mock_test', { command: `/usr/bin/python3 pipeline.py ${n}`, mockName, timeout: 600 }));
      const { slowest, count } = await slowestPingWhile(s, s.keys.other!.key, replay);
      const answer = await replay.promise;
      const took = performance.now() - t;
      const text = answerText(answer, { structured: true });
      expect(text, 'the program ran against the set').toMatch(/replies/);
      expect(slowest, `slowest of ${count} pings ${slowest.toFixed(0)} ms, idle ${baseline.toFixed(1)} ms, call ${took.toFixed(0)} ms; answer: ${text.slice(0, 400)}`).toBeLessThan(
        Math.max(500, 20 * baseline),
      );
      expect(dropped.splice(0), 'pings the server dropped meanwhile').toEqual([]);
    }, 900_000);
  }
});

/** A Generic set of `count` mocks (no host: they answer any target), each request `Q<i, 6 digits>\n` answered `A\n`. */
function genericSet(file: string, count: number): void {
  const fd = openSync(file, 'w');
  const one = (i: number) =>
    `version: api.keploy.io/v1beta1\nkind: Generic\nname: mock-${i}\nspec:\n    metadata:\n        type: config\n` +
    `    genericrequests:\n        - origin: client\n          message:\n            - type: string\n              data: "Q${String(i).padStart(6, '0')}\\n"\n` +
    `    genericresponses:\n        - origin: server\n          message:\n            - type: string\n              data: "A\\n"\n` +
    `    reqtimestampmock: 2024-08-02T22:15:10.6084523Z\n    restimestampmock: 2024-08-02T22:15:10.608930466Z\n---\n`;
  for (let i = 0; i < count; i += 1000) writeSync(fd, Array.from({ length: Math.min(1000, count - i) }, (_, k) => one(i + k)).join(''));
  closeSync(fd);
}

// The program: one connection, N pipelined copies of the first recorded request (each a hit), the N answers read.
const GENERIC_PY = `import socket, sys
n = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", 7777), timeout=300)
s.sendall(b"Q000000\\n" * n)
got = 0
while got < n:
    b = s.recv(1 << 20)
    if not b:
        break
    got += b.count(b"A")
print("answers", got)
`;

describe('attack 18c: a Generic set whose every match scans every recorded request on the main thread (TargetView.match)', () => {
  let s: KeyedServer;
  let root: string;

  beforeAll(async () => {
    root = mocksWorkspace('debugkit-attack18c-generic-');
    for (const [name, count] of [
      ['generic-big', 19_000],
      ['generic-one', 1],
    ] as const) {
      mkdirSync(path.join(root, 'keploy', name), { recursive: true });
      genericSet(path.join(root, 'keploy', name, 'mocks.yaml'), count);
    }
    writeFileSync(path.join(root, 'generic.py'), GENERIC_PY);
    s = await startKeyedServer(root, { attacker: 'mocks,mocks:run', other: 'mocks:read' }, ['--toolsets', 'mocks']);
  }, 60_000);
  afterAll(async () => {
    await stopHard(s?.node.proc);
    await stopKeyedServers([s]);
    rmSync(root, { recursive: true, force: true });
  });

  for (const [mockName, n, what] of [
    ['generic-one', 20_000, 'control: 20,000 pipelined hits against a set of one request'],
    ['generic-big', 20_000, '20,000 pipelined hits against a set of 19,000 requests'],
  ] as const) {
    it(`${what} do not hold another key's ping`, async () => {
      const baseline = await idleBaseline(s, s.keys.other!.key);
      const t = performance.now();
      const replay = track(plainCall(s, s.keys.attacker!.key, 'keploy_mock_test', { command: `/usr/bin/python3 generic.py ${n}`, mockName, timeout: 600 }));
      const { slowest, count } = await slowestPingWhile(s, s.keys.other!.key, replay);
      const answer = await replay.promise;
      const took = performance.now() - t;
      const text = answerText(answer, { structured: true });
      expect(text, 'the program ran against the set').toMatch(/"mocksReplayed":20000/);
      expect(slowest, `slowest of ${count} pings ${slowest.toFixed(0)} ms, idle ${baseline.toFixed(1)} ms, call ${took.toFixed(0)} ms; answer: ${text.slice(0, 400)}`).toBeLessThan(
        Math.max(500, 20 * baseline),
      );
      expect(dropped.splice(0), 'pings the server dropped meanwhile').toEqual([]);
    }, 900_000);
  }
});
