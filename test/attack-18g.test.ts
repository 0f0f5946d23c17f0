// Attack 18g on issue 18 (the last attack as a key holder, after the worker-thread fix). Found, and
// fixed since:
// - One keploy_mock_test call whose program missed about a million times grew the server to 4.4 GB
//   and killed it (heap out of memory): every miss line was kept until the run ended, though 50
//   were shown. Replay keeps the first 50 and counts the rest, and records on a miss no more than a
//   set holds (src/toolsets/mocks/replay.test.ts; the memory bound below).
// - Busy replay connections each took their own 10 ms of the event loop per turn: 100 connections
//   pipelining Redis hits held another key's pings 2.2-4.8 s (10.7 s on a fresh server), 100
//   Generic ones 1.4-2.8 s. All long work now shares one budget per turn, handed round in turn
//   (core/wait.ts TimeSlice; src/core/wait.test.ts "one share of the loop").
// Held: cancelled set loads leave no descriptor or thread behind; connections a program holds
// through a passthrough replay end with the call's timeout.
import { writeFileSync } from 'node:fs';
import { mockYaml, redisCommand, replayAttacks } from './helpers/replay-attack.js';

/**
 * `conns` connections to PORT at once, each sending `reps` copies of the request in PAYLOAD (as
 * fast as the server takes them) and reading every answer (`answer` bytes each), all through one
 * selector.
 */
const FLOOD = `import selectors, socket, sys
port, conns, reps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
request, answer = bytes.fromhex(sys.argv[4]), int(sys.argv[5])
sel = selectors.DefaultSelector()
left = {}
for i in range(conns):
    s = socket.create_connection(("127.0.0.1", port))
    s.setblocking(False)
    left[s] = [memoryview(request * reps), answer * reps]
    sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
while left:
    for key, events in sel.select(timeout=60):
        s = key.fileobj
        out, want = left[s]
        if events & selectors.EVENT_WRITE and len(out):
            out = out[s.send(out[:65536]):]
            left[s][0] = out
            if not len(out):
                sel.modify(s, selectors.EVENT_READ)
        if events & selectors.EVENT_READ:
            got = s.recv(1 << 20)
            if not got:
                sys.exit("connection closed early")
            want -= len(got)
            left[s][1] = want
            if want <= 0 and not len(out):
                sel.unregister(s)
                s.close()
                del left[s]
print("all answered")
`;

const hex = (yamlEscaped: string) => Buffer.from(yamlEscaped.replace(/\\r/g, '\r').replace(/\\n/g, '\n'), 'latin1').toString('hex');
const SET_K0 = redisCommand('SET', 'k0', 'v');

replayAttacks(
  'attack 18g: many replay connections busy at once (Redis hits, Generic hits) each took 10 ms of the loop per turn',
  'debugkit-attack18g-',
  {
    redis: (f) => writeFileSync(f, [...Array(10).keys()].map((i) => mockYaml('Redis', i, redisCommand('SET', `k${i}`, 'v'), '+OK\\r\\n')).join('')),
    generic: (f) => writeFileSync(f, [...Array(10).keys()].map((i) => mockYaml('Generic', i, `Q00000${i}\\n`, `A${i}\\n`)).join('')),
  },
  [
    {
      what: '100 connections, each 2,000 pipelined Redis SETs a mock answers',
      set: 'redis',
      program: FLOOD,
      args: `6379 100 2000 ${hex(SET_K0)} 5`,
      counted: /"mocksReplayed":200000,"mocksMissed":0,"appExitCode":0/,
    },
    {
      what: '100 connections, each 2,000 pipelined Generic requests a mock answers',
      set: 'generic',
      program: FLOOD,
      args: `7777 100 2000 ${hex('Q000000\\n')} 3`,
      counted: /"mocksReplayed":200000,"mocksMissed":0,"appExitCode":0/,
    },
  ],
);

/** One connection, `n` pipelined SETs of keys no mock has (each a miss with a line naming the command and the closest mock), every answer read. */
const MISSES = `import socket, sys
n = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", 6379))
cmd = b"".join(b"*3\\r\\n$3\\r\\nSET\\r\\n$%d\\r\\n%s\\r\\n$200\\r\\n%s\\r\\n" % (len(k), k, b"v" * 200) for k in (b"miss-%08d-%s" % (i, b"x" * 40) for i in range(2000)))
sent = answered = 0
while sent < n:
    s.sendall(cmd)
    sent += 2000
    while answered < sent:
        got = s.recv(1 << 20)
        if not got:
            sys.exit("connection closed early")
        answered += got.count(b"\\n")
print("answered", answered)
`;

replayAttacks(
  'attack 18g: one call whose program misses hundreds of thousands of times (each miss a line of some 300 bytes)',
  'debugkit-attack18g-misses-',
  { one: (f) => writeFileSync(f, mockYaml('Redis', 0, redisCommand('SET', 'known', 'v'), '+OK\\r\\n')) },
  [{ what: '400,000 Redis misses on one connection', set: 'one', program: MISSES, args: '400000', counted: /"mocksMissed":\d{6},"appExitCode":0/, rssGrowthMiB: 200 }],
);
