// Attack 18e on issue 18 (nothing one key sends stalls the server for others, outlives its call,
// races a path check or blinds the audit), after 60b72d9: new inputs and code paths only. What
// held is here, each a regression test; what succeeded (Redis replay's framing and answering, the
// gRPC index built on the main thread, a connection flood), fixed since, is in
// test/attack-18e-found.test.ts with its numbers. Held:
// - Generic replay in MySQL mode, a flood of missed COM_QUERY packets never read (each answered
//   with an ERR packet): 1,000,000 sent, some 20,000 answered within the call (each miss costs
//   ~170 us, in 10 ms slices), pings held. Under load it grew the server by 714 MiB: the ERR packets
//   were written without backpressure; now the replayer stops reading until they are read.
// - Generic replay in MySQL mode, 20,000 missed queries (1,000 at a time) against a set of 19,000
//   recorded ones, each ERR naming the closest: 7.8 s in all, pings held (the control of one: 1.3 s).
// - Redis replay, 200,000 pipelined GETs then SHUT_WR: every answer, in order, and the connection
//   closed after them (the 10 ms slices keep order across a half-close).
// - Generic replay, an 8 MiB request arriving in 128 pieces, each a prefix of the recorded one
//   (re-concatenated and matched again per piece): pings held.
// - keploy_mock_test calls abandoned by their client 0-600 ms in, while a 20,000-document set's
//   directory is swapped for a link out of the root (renameat2): no load read the file outside,
//   and every descriptor is closed after (test/attack-18e-abandon.test.ts; it did not hold in two
//   of four full runs until worker threads were no longer ended while loading their modules).
// - keploy_mock_test and keploy_mock_record of a program with a double-forked setsid daemon,
//   the call ended by its client leaving (a plain call) or by MCP DELETE of its session: the
//   program and the daemon are gone.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKeyedServer, stopAttackServer, type KeyedServer } from './helpers/attack.js';
import { isRunning, pidFrom, waitFor } from './helpers/procs.js';
import { callTool, openMcpSession } from './helpers/control.js';
import { tempDir } from './helpers/programs.js';
import { bulk, MB, mockYaml, redisCommand, replayAttacks } from './helpers/replay-attack.js';
import { writeDocuments } from './helpers/stall.js';

/** A MySQL greeting (protocol 10, server 8.0) and a recorded COM_QUERY of 120 characters. */
const MYSQL_GREETING = `\\x19\\x00\\x00\\x00\\x0a8.0\\x00${'a'.repeat(20)}`;
const MYSQL_QUERY = `\\x79\\x00\\x00\\x00\\x03SELECT ${'c'.repeat(113)}`;
const mysqlSet = (f: string) => writeFileSync(f, mockYaml('Generic', 0, '', MYSQL_GREETING) + mockYaml('Generic', 1, MYSQL_QUERY, '\\x07\\x00\\x00\\x01\\x00\\x00\\x00\\x02\\x00\\x00\\x00'));

/**
 * A program that reads the greeting, sends `n` one-letter COM_QUERY packets (each a miss; 10,000 at
 * a time, 10 ms apart, so no packet is split between reads), never reads, and stays 3 s. Once the
 * unread ERR packets fill its socket the replayer stops reading (backpressure): a send that waits
 * 10 s ends the sending.
 */
const MYSQL_MISSES_UNREAD = `import socket, sys, time
n = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", 3306), timeout=600)
s.recv(1024)
s.settimeout(10)
batch = b"\\x02\\x00\\x00\\x00\\x03x" * 10000
try:
    for i in range(n // 10000):
        s.sendall(batch)
        time.sleep(0.01)
    print("sent", n, flush=True)
except socket.timeout:
    print("the server stopped reading", flush=True)
time.sleep(3)
`;

replayAttacks('attack 18e: Generic replay in MySQL mode answers each missed command with an ERR packet, to a client that never reads them', 'debugkit-attack18e-mysqlunread-', { mysql: mysqlSet }, [
  { what: 'control: 10,000 missed queries, unread', set: 'mysql', program: MYSQL_MISSES_UNREAD, args: '10000', counted: /"mocksMissed":\d+,"appExitCode":0/, rssGrowthMiB: 256 },
  { what: '1,000,000 missed queries (6 MB sent), unread', set: 'mysql', program: MYSQL_MISSES_UNREAD, args: '1000000', counted: /"mocksMissed":\d+,"appExitCode":0/, rssGrowthMiB: 256 },
]);

/** A program that sends `n` GET k pipelined, half-closes at once (SHUT_WR), and counts the answers, which must come in order. */
const HALF_CLOSE = `import socket, sys
n = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", 6379), timeout=300)
s.sendall(b"".join(b"*2\\r\\n$3\\r\\nGET\\r\\n$%d\\r\\nk%d\\r\\n" % (len(str(i % 3)) + 1, i % 3) for i in range(n)))
s.shutdown(socket.SHUT_WR)
data = b""
while True:
    b = s.recv(1 << 20)
    if not b:
        break
    data += b
want = b"".join(b"$2\\r\\nv%d\\r\\n" % (i % 3) for i in range(n))
print("answers in order" if data == want else "wrong answers: %d bytes of %d" % (len(data), len(want)))
sys.exit(0 if data == want else 3)
`;

replayAttacks(
  'attack 18e: Redis replay of a pipelined burst whose client half-closes before it is answered (answers in 10 ms slices)',
  'debugkit-attack18e-redishalf-',
  { three: (f) => writeFileSync(f, [0, 1, 2].map((i) => mockYaml('Redis', i, redisCommand('GET', `k${i}`), bulk(`v${i}`))).join('')) },
  [
    { what: '30 GETs of three keys, then SHUT_WR: every answer, in order', set: 'three', program: HALF_CLOSE, args: '30', counted: /"mocksReplayed":30,"mocksMissed":0,"appExitCode":0/ },
    { what: '200,000 GETs of three keys, then SHUT_WR: every answer, in order', set: 'three', program: HALF_CLOSE, args: '200000', counted: /"mocksReplayed":200000,"mocksMissed":0,"appExitCode":0/ },
  ],
);

/** A program that sends an 8 MiB Generic request in 64 KiB writes (each a prefix of the recorded one: held as partial) and reads the answer. */
const LONG_REQUEST = `import socket, sys, time
s = socket.create_connection(("127.0.0.1", 7777), timeout=300)
body = b"Q" + b"a" * (8 * 1024 * 1024 - 1) + b"\\n"
for i in range(0, len(body), 65536):
    s.sendall(body[i:i + 65536])
got = s.recv(16)
print("answer", got)
sys.exit(0 if got == b"A\\n" else 3)
`;

replayAttacks(
  'attack 18e: Generic replay of an 8 MiB request arriving in 64 KiB pieces (each piece a prefix of the recorded one, the bytes so far concatenated and matched again)',
  'debugkit-attack18e-genericlong-',
  {
    long: (f) => writeFileSync(f, mockYaml('Generic', 0, `Q${'a'.repeat(8 * MB - 1)}\\n`, 'A\\n')),
  },
  [{ what: 'one 8 MiB request in 128 pieces', set: 'long', program: LONG_REQUEST, counted: /"mocksReplayed":1,"mocksMissed":0,"appExitCode":0/ }],
);

/** A program that starts a double-forked setsid daemon (its pid in daemon.pid), writes its own pid to main.pid, and sleeps. */
const DAEMON = `import os, sys, time
tag = sys.argv[1]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        open(tag + ".daemon.pid", "w").write(str(os.getpid()))
        time.sleep(120)
    os._exit(0)
open(tag + ".main.pid", "w").write(str(os.getpid()))
time.sleep(120)
`;

describe('attack 18e: a mocks program with a setsid daemon, its call ended by the client leaving or by MCP DELETE', () => {
  let s: KeyedServer;
  let root: string;

  beforeAll(async () => {
    root = tempDir('debugkit-attack18e-daemon-');
    mkdirSync(path.join(root, 'keploy', 'one'), { recursive: true });
    writeFileSync(path.join(root, 'keploy', 'one', 'mocks.yaml'), mockYaml('Redis', 0, redisCommand('GET', 'k'), bulk('v')));
    writeFileSync(path.join(root, 'daemon.py'), DAEMON);
    s = await startKeyedServer(root, { runner: 'mocks,mocks:run' }, ['--toolsets', 'mocks']);
  }, 60_000);
  afterAll(() => stopAttackServer(s, root));

  const tools = [
    { tool: 'keploy_mock_test', args: { mockName: 'one', timeout: 120 } },
    { tool: 'keploy_mock_record', args: { timeout: 120 } },
  ];
  for (const { tool, args } of tools) {
    for (const ending of ['the client leaves (plain call)', 'MCP DELETE of its session'] as const) {
      it(`${tool}: when ${ending}, the program and its daemon are gone`, async () => {
        const tag = `${tool}-${ending.startsWith('MCP') ? 'delete' : 'leave'}`;
        const command = `/usr/bin/python3 daemon.py ${tag}`;
        const headers = { Authorization: `Bearer ${s.keys.runner!.key}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
        const leave = new AbortController();
        let sid: string | undefined;
        let call: Promise<unknown>;
        const request = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: tool, arguments: { command, ...args } } };
        if (ending.startsWith('MCP')) {
          sid = await openMcpSession(s.node.url, s.keys.runner!.key);
          call = callTool(s.node.url, s.keys.runner!.key, sid, tool, { command, ...args }).catch(() => undefined);
        } else {
          call = fetch(s.node.url, { method: 'POST', headers, body: JSON.stringify(request), signal: leave.signal })
            .then((r) => r.text())
            .catch(() => undefined);
        }
        const main = await pidFrom(path.join(root, `${tag}.main.pid`), 30_000);
        const daemon = await pidFrom(path.join(root, `${tag}.daemon.pid`), 30_000);
        expect(isRunning(main) && isRunning(daemon), 'both run while the call does').toBe(true);
        if (sid) {
          const del = await fetch(s.node.url, { method: 'DELETE', headers: { ...headers, 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18' } });
          expect(del.status, 'DELETE of the session').toBeLessThan(300);
        } else leave.abort();
        const gone = await waitFor(() => !isRunning(main) && !isRunning(daemon), 20_000);
        expect(gone, `still running 20 s after: main ${isRunning(main)}, daemon ${isRunning(daemon)}`).toBe(true);
        await call;
      }, 90_000);
    }
  }
});

/** A program that reads the greeting and sends `n` COM_QUERY packets no mock has (1,000 at a time, 10 ms apart), reading the ERR packets as they come. */
const MYSQL_MISSES = `import socket, sys, time, threading
n = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", 3306), timeout=600)
s.recv(1024)
got = [0]
def reader():
    while True:
        b = s.recv(1 << 20)
        if not b:
            break
        got[0] += b.count(b"\\xff\\x51\\x04")
t = threading.Thread(target=reader, daemon=True); t.start()
batch = b"".join(b"\\x08\\x00\\x00\\x00\\x03X%06d" % i for i in range(1000))
for i in range(n // 1000):
    s.sendall(batch)
    time.sleep(0.01)
deadline = time.time() + 300
while got[0] < n and time.time() < deadline:
    time.sleep(0.05)
print("errors", got[0])
sys.exit(0 if got[0] == n else 3)
`;

replayAttacks(
  'attack 18e: Generic replay in MySQL mode, 20,000 missed queries against a set of 19,000 recorded ones (each miss names the closest)',
  'debugkit-attack18e-mysqlmany-',
  {
    one: mysqlSet,
    big: (f) =>
      writeDocuments(f, 19_001, (i) =>
        i === 0
          ? mockYaml('Generic', 0, '', MYSQL_GREETING)
          : mockYaml('Generic', i, `\\x08\\x00\\x00\\x00\\x03Q${String(i).padStart(6, '0')}`, '\\x07\\x00\\x00\\x01\\x00\\x00\\x00\\x02\\x00\\x00\\x00'),
      ),
  },
  [
    { what: 'control: 20,000 misses against a set of one query', set: 'one', program: MYSQL_MISSES, args: '20000', counted: /"mocksMissed":20000,"appExitCode":0/ },
    { what: '20,000 misses against a set of 19,000 queries', set: 'big', program: MYSQL_MISSES, args: '20000', counted: /"mocksMissed":20000,"appExitCode":0/ },
  ],
);
