// Attack 18e on issue 18, what it found (fixed since; what held is in test/attack-18e.test.ts).
// F1-F4: a `mocks:run` key's program run by `keploy_mock_test` against a set in the workspace,
// while a `mocks:read` key pings (idle, slowest of 10: 0.7-16 ms), each beside a control; F5 needs
// no key. Measured before the fixes on a 2-CPU machine with 23 GB of memory, Node 20, two runs.
//
// F1. Redis replay re-framed a command still arriving from its first byte at every chunk, and took
//     any number of arguments: one command of 1,000,000 empty arguments (6 MB in one write) held
//     another key's ping 2.5-3.2 s; an inline command of 10,000,000 words on one 20 MB line, 7.9 s.
//     Now commands and replies are framed on from where the last chunk stopped (resp.ts
//     CommandFramer, RespFramer), and bounded (100,000 arguments; as a real Redis, an
//     inline line of 64 KiB: past them an error reply).
// F2. Redis replay wrote a slice's answers as one Buffer.concat: a 1 MiB recorded reply and 3,800
//     pipelined GETs made a 3.8 GB copy (2.8-5.8 s). Now answers are written as they are, every
//     1 MiB.
// F3. The gRPC replay index decoded every mock's protoscope text in one go: 20,000 mocks of 50
//     fields held pings 3.7-4.2 s. Now it is built in 10 ms slices (GrpcIndex.build).
// F4. Redis replay wrote every answer whether or not the client read: 1,200 GETs of a 1 MiB reply,
//     never read, grew the server by 1.2 GB. Now it stops reading commands until the client's
//     socket drains (only as many answers as the socket takes are replayed).
// F5. Connections with a request's headers begun and never ended (no key needed): two processes
//     holding 10,500 each kept the server at its descriptor limit, and another key's requests were
//     refused (10,821 of 15,993 pings reset). Now `--max-connections` (default half the open-files
//     limit) bounds them, and a new connection closes the one idle longest (no request in progress).
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKeyedServer, stopAttackServer, type KeyedServer, freshPing } from './helpers/attack.js';
import { waitFor } from './helpers/procs.js';
import { tempDir } from './helpers/programs.js';
import { bulk, grpcYaml, MB, mockYaml, redisCommand, replayAttacks } from './helpers/replay-attack.js';
import { writeDocuments } from './helpers/stall.js';

/** A program that sends one Redis command of `n` empty arguments (after GET), all at once, and reads the answer. */
const WIDE_COMMAND = `import socket, sys
n = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", 6379), timeout=600)
s.sendall(b"*%d\\r\\n$3\\r\\nGET\\r\\n" % (n + 1) + b"$0\\r\\n\\r\\n" * n)
b = s.recv(1 << 16)
print("answer", b[:60])
`;

/** The same as an inline command (after a RESP `GET k`, so the connection is Redis's): GET and `n` one-letter words on one line. */
const WIDE_INLINE = `import socket, sys
n = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", 6379), timeout=600)
s.sendall(b"*2\\r\\n$3\\r\\nGET\\r\\n$1\\r\\nk\\r\\n")
print("first", s.recv(64))
s.sendall(b"GET" + b" a" * n + b"\\r\\n")
b = s.recv(1 << 16)
print("answer", b[:60])
`;

replayAttacks(
  'attack 18e: Redis replay of one command with millions of arguments (RESP framing re-parsed from the start at every chunk)',
  'debugkit-attack18e-rediswide-',
  { one: (f) => writeFileSync(f, mockYaml('Redis', 0, redisCommand('GET', 'k'), bulk('v'))) },
  [
    { what: 'control: a command of 1,000 empty arguments', set: 'one', program: WIDE_COMMAND, args: '1000', counted: /answer b'-ERR debugkit/ },
    { what: 'a command of 1,000,000 empty arguments (6 MB)', set: 'one', program: WIDE_COMMAND, args: '1000000', counted: /answer b'-ERR debugkit/ },
    { what: 'control: an inline command of 1,000 words', set: 'one', program: WIDE_INLINE, args: '1000', counted: /answer b'-ERR debugkit/ },
    { what: 'an inline command of 10,000,000 words (20 MB, one line)', set: 'one', program: WIDE_INLINE, args: '10000000', counted: /answer b'-ERR debugkit/ },
  ],
);

/** A program that sends `n` GET k pipelined at once, then reads every byte of the answers. */
const MANY_GETS = `import socket, sys
n = int(sys.argv[1]); size = int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", 6379), timeout=600)
s.sendall(b"*2\\r\\n$3\\r\\nGET\\r\\n$1\\r\\nk\\r\\n" * n)
want = n * (size + len(b"$%d\\r\\n\\r\\n" % size)); got = 0
while got < want:
    b = s.recv(1 << 22)
    if not b:
        break
    got += len(b)
print("bytes", got, "of", want)
sys.exit(0 if got == want else 3)
`;

replayAttacks(
  'attack 18e: Redis replay of pipelined hits on a large recorded reply (one slice of answers written as one Buffer.concat)',
  'debugkit-attack18e-redisbig-',
  { big: (f) => writeFileSync(f, mockYaml('Redis', 0, redisCommand('GET', 'k'), bulk('x'.repeat(MB)))) },
  [
    { what: 'control: 20 pipelined GETs of a 1 MiB reply', set: 'big', program: MANY_GETS, args: `20 ${MB}`, counted: /"mocksReplayed":20,"mocksMissed":0,"appExitCode":0/ },
    { what: '3,800 pipelined GETs of a 1 MiB reply (84 KB sent)', set: 'big', program: MANY_GETS, args: `3800 ${MB}`, counted: /"mocksReplayed":3800,"mocksMissed":0,"appExitCode":0/ },
  ],
);

replayAttacks(
  "attack 18e: a gRPC set of 20,000 mocks (GrpcIndex reads every mock's protoscope text at keploy_mock_test, on the main thread)",
  'debugkit-attack18e-grpc-',
  {
    one: (f) => writeFileSync(f, grpcYaml(0, `1: {"${'a'.repeat(280)}"}`)),
    many: (f) => writeDocuments(f, 20_000, (i) => grpcYaml(i, `1: {"${'a'.repeat(280)}"}`)),
    fields: (f) => writeDocuments(f, 20_000, (i) => grpcYaml(i, Array.from({ length: 50 }, () => '1: 5').join(' '))),
  },
  [
    { what: 'control: a set of one', set: 'one', program: 'print("ok")\n', counted: /"appExitCode":0/ },
    { what: 'a set of 20,000 mocks, each message a 280-byte string', set: 'many', program: 'print("ok")\n', counted: /"appExitCode":0/ },
    { what: 'a set of 20,000 mocks, each message 50 fields', set: 'fields', program: 'print("ok")\n', counted: /"appExitCode":0/ },
  ],
);

/** A program that sends `n` GET k, `batch` at a time, never reads an answer, and stays connected 3 s. */
const GETS_UNREAD = `import socket, sys, time
n = int(sys.argv[1]); batch = int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", 6379), timeout=600)
for i in range(n // batch):
    s.sendall(b"*2\\r\\n$3\\r\\nGET\\r\\n$1\\r\\nk\\r\\n" * batch)
    time.sleep(0.002)
print("sent", n, flush=True)
time.sleep(3)
`;

replayAttacks(
  'attack 18e: Redis replay writes answers a client never reads (no backpressure on replies)',
  'debugkit-attack18e-redisunread-',
  { big: (f) => writeFileSync(f, mockYaml('Redis', 0, redisCommand('GET', 'k'), bulk('x'.repeat(MB)))) },
  [
    { what: 'control: 8 GETs of a 1 MiB reply, unread', set: 'big', program: GETS_UNREAD, args: '8 4', counted: /"mocksReplayed":\d,"mocksMissed":0,"appExitCode":0/, rssGrowthMiB: 256 },
    {
      what: '1,200 GETs of a 1 MiB reply (26 KB sent, 4 at a time), unread',
      set: 'big',
      program: GETS_UNREAD,
      args: '1200 4',
      // Only what the client's socket takes is answered (a few MiB), not 1,200 MiB.
      counted: /"mocksReplayed":\d{1,2},"mocksMissed":0,"appExitCode":0/,
      rssGrowthMiB: 256,
    },
  ],
);

const FLOOD = `import selectors, socket, sys, time, resource
port = int(sys.argv[1]); n = int(sys.argv[2]); hold = float(sys.argv[3])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
sel = selectors.DefaultSelector()
def one():
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET /mcp HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n")
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)
opened = 0
for i in range(n):
    try:
        one(); opened += 1
    except OSError as e:
        print("stopped at", i, e, flush=True)
        break
print("open", opened, flush=True)
# Each connection the server closes (its header timeout) is opened again at once.
end = time.time() + hold
while time.time() < end:
    for key, _ in sel.select(timeout=0.5):
        sel.unregister(key.fileobj); key.fileobj.close()
        try:
            one()
        except OSError:
            pass
`;

describe('attack 18e: connections whose headers never end, opened until the server has no descriptor left (no key needed)', () => {
  let s: KeyedServer;
  let root: string;
  const flooders: ChildProcess[] = [];

  beforeAll(async () => {
    root = tempDir('debugkit-attack18e-flood-');
    writeFileSync(path.join(root, 'flood.py'), FLOOD);
    s = await startKeyedServer(root, { other: 'gdb:read' }, ['--toolsets', 'gdb']);
  }, 60_000);
  afterAll(async () => {
    for (const f of flooders) f.kill('SIGKILL');
    await stopAttackServer(s, root);
  });

  it("21,000 such connections: another key's requests are still answered", async () => {
    expect(await freshPing(s, s.keys.other!.key), 'control: a fresh connection before').toBe('200');
    const port = new URL(s.node.url).port;
    const said: string[] = [];
    for (let i = 0; i < 2; i++) {
      const f = spawn('python3', [path.join(root, 'flood.py'), port, '10500', '60'], { stdio: ['ignore', 'pipe', 'inherit'] });
      f.stdout!.on('data', (d) => said.push(String(d)));
      flooders.push(f);
    }
    expect(await waitFor(() => said.join('').split('open').length === 3, 60_000), `the flooders: ${said.join('')}`).toBe(true);
    const fds = readdirSync(`/proc/${s.node.proc.pid}/fd`).length;
    const answers: string[] = [];
    for (let i = 0; i < 10; i++) answers.push(await freshPing(s, s.keys.other!.key));
    const t = performance.now();
    while (performance.now() - t < 20_000) answers.push(await freshPing(s, s.keys.other!.key));
    expect(
      answers.filter((a) => a !== '200'),
      `server descriptors ${fds}; ${answers.length} pings over 20 s: ${answers.slice(0, 12).join(', ')}`,
    ).toEqual([]);
  }, 120_000);
});
