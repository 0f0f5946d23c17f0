// Attack 18f on issue 18, what it found (parked here, failing, not run by CI; what held is in
// test/attack-18f.test.ts). Measured on the shared 2-CPU machine, Node 20, `dist/` bundled. Run with
// a vitest config whose include names this file (vitest.config.ts takes only *.test.ts).
//
// F1. --max-connections filled by one key's requests in progress (STALL: other clients refused).
//     The bound never closes a connection answering a request, and refuses new connections when
//     every open one is; but nothing bounds how many requests one key may have in progress. A
//     `bundles` key (no code execution: it may only initialize bundles and search them) initializes
//     a bundle of the workspace and sends one `grep_files` with a catastrophic pattern
//     (`(?=a)(a+)+$`) on each of N connections. One key's searches hold one worker thread at a
//     time, so its calls wait their turn, each a request in progress, for N x --grep-timeout; and
//     when one is answered, the attacker sends the next on the same keep-alive connection.
//     Measured: default bound (half of `ulimit -n` 20,000 = 10,000), 10,050 such connections from
//     one Python process (not re-sending): another key's fresh pings were refused (connection
//     reset, curl 000) 10 of 10 over the 10 s until the first searches were answered (at 10 s each,
//     one at a time, the queue holds its connections for 10,050 x 10 s unless it is re-sent).
//     The test below: --max-connections 64, --grep-timeout 1, 64 connections, each answered call
//     sent again on its connection and each connection closed for room opened again: 35 of
//     28,289 fresh pings of another key answered over 10 s (28,254 reset or hung up). A flooder
//     that neither re-sends nor reopens lets pings in once one of its connections is idle.
//     The same holds for any call that waits (a worker queue, a long kubectl, gdb_wait), and 32 MCP
//     sessions' SSE streams per key add to it.
//
// F2. The redactor's "a name called further on holds code" rule keeps real secrets in clear
//     (BLIND: a secret stored in clear). The rule looks for `NAME(` or `NAME (` anywhere later in the
//     text, so the value of a plain shell word is kept when the name is followed by a parenthesis in
//     prose or in a longer word, none of which calls it, and the first of two assignments is kept
//     when only the second one's value is code:
//       token=ghp_abc123 ./deploy.sh  # the token (from vault)         -> ghp_abc123 kept
//       PGPASSWORD=hunter2 psql -c "select 1"  # PGPASSWORD (see docs)  -> hunter2 kept
//       password=hunter2 ./run.sh --header=x-password(1)                -> hunter2 kept (`x-` is no callee)
//       token=hunter2; token=os.system; token("id")                     -> hunter2 kept (only the second
//                                                                          value is the callee)
//       export TOKEN=hunter2\nTOKEN (x)                                  -> hunter2 kept
//     Each is a shell word (SECURITY.md: "A shell word ... is never code, whatever follows"); the
//     value of `NAME=value` followed by a command or `;` is not code whatever comes later.
//
// F3. Pipelined requests on new connections, no key needed (STALL: new clients wait seconds or are
//     never answered). One Python process opens connections as fast as they are accepted (about 60
//     a second, 200 kept open, the oldest closed), each sending 1,000 pipelined `POST /mcp` of 72
//     bytes with no key (72 KB in one write) and reading nothing (SO_RCVBUF 1 KiB). The server
//     answers each request 401 before it reads the next, some 1,000 per connection until the
//     unread answers fill the socket: tens of ms of the main thread per connection, so it accepts
//     a dozen connections a second, the listen queue (511) stays full and the kernel drops new
//     SYNs (TcpExtListenOverflows grew). Another key's pings on its open keep-alive connection
//     stay fast (slowest 50-202 ms), but a ping on a new connection took 4.2-5.8 s, and the next
//     one got no answer in 15 s; with the default bound and with --max-connections 64 alike. The
//     test below (default bound): fresh pings of 317, 1,494 and 7,686 ms, then none in 10 s.
//     Without the attack a fresh ping takes 2-8 ms; the same churn with 1 request per connection
//     (2,230 connections in 12 s) left fresh pings at 2-7 ms, with 100 at 41 ms at most: the
//     pipelined requests are what it costs. (Node's `server.maxRequestsPerSocket`, or
//     answering a connection's pipelined requests only as its answers are read, would bound a
//     connection's share.)
//
// F4. A keep-alive client's requests dropped by the eviction (DROP: another key's requests fail).
//     --max-connections closes "the one idle longest" for room, and a client's keep-alive
//     connection between two requests is idle; a flood of half-open connections reopened as fast
//     as they are closed (no key) makes every idle connection the oldest within milliseconds, so a
//     request sent on a kept-alive connection meets the close: fetch (undici) fails it with
//     UND_ERR_SOCKET ("other side closed") or ECONNRESET and does not retry a POST. Measured at
//     --max-connections 64, 300 half-open connections reopened on close: 5 of 535 and 3 of 348
//     pings 10 ms apart failed (a ping a second: 0 of 10). At the default bound (10,000) with
//     10,300 connections, 0 of 1,012 (the flood did not churn fast enough there). Closing first
//     the connections whose headers never came whole, or sparing a connection that finished a
//     request within the last moment, would keep a live client's socket.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redactText } from '../../src/control/audit.js';
import { answerText, dropped, ping, plainCall, startKeyedServer, stopAttackServer, type KeyedServer } from '../helpers/attack.js';
import { waitFor } from '../helpers/procs.js';
import { tempDir } from '../helpers/programs.js';

/** One ping of `key` on a connection of its own (no keep-alive): its status, or how it failed. */
function freshPing(s: KeyedServer, key: string): Promise<string> {
  return new Promise((resolve) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const req = http.request(s.node.url, { method: 'POST', agent: false, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(String(res.statusCode)));
    });
    req.setTimeout(5_000, () => req.destroy(new Error('no answer in 5 s')));
    req.on('error', (e) => resolve(`error: ${e.message}`));
    req.end(body);
  });
}

/** N keep-alive connections, each with one grep_files call in progress; an answered one sends the next at once. */
const QUEUE = `import json, selectors, socket, sys, time
port = int(sys.argv[1]); key = sys.argv[2]; n = int(sys.argv[3]); hold = float(sys.argv[4])
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "grep_files", "arguments": {"pattern": "(?=a)(a+)+$"}}}).encode()
req = ("POST /mcp HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nAuthorization: Bearer %s\\r\\nContent-Type: application/json\\r\\nAccept: application/json, text/event-stream\\r\\nContent-Length: %d\\r\\n\\r\\n" % (key, len(body))).encode() + body
sel = selectors.DefaultSelector()
bufs = {}
counts = {"sent": 0, "answered": 0, "reopened": 0}
def one():
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5); s.sendall(req); s.setblocking(False)
    except OSError:
        return
    sel.register(s, selectors.EVENT_READ); bufs[s] = b""; counts["sent"] += 1
for i in range(n): one()
print("open", n, flush=True)
end = time.time() + hold
while time.time() < end:
    for k, _ in sel.select(timeout=0.2):
        s = k.fileobj
        try:
            d = s.recv(65536)
        except OSError:
            d = b""
        if not d:
            # Closed by the server (for room): open another at once.
            sel.unregister(s); s.close(); del bufs[s]; counts["reopened"] += 1; one(); continue
        bufs[s] += d
        head, sep, rest = bufs[s].partition(b"\\r\\n\\r\\n")
        if not sep: continue
        length = int([l.split(b":")[1] for l in head.split(b"\\r\\n") if l.lower().startswith(b"content-length")][0])
        if len(rest) >= length:
            # Answered: the next call on the same connection at once.
            bufs[s] = rest[length:]; counts["answered"] += 1
            try:
                s.sendall(req); counts["sent"] += 1
            except OSError:
                pass
print(json.dumps(counts), flush=True)
`;

describe('attack 18f F1: one key fills --max-connections with calls that wait their turn', () => {
  let s: KeyedServer;
  let root: string;
  let flooder: ChildProcess | undefined;

  beforeAll(async () => {
    root = tempDir('debugkit-attack18f-conns-');
    writeFileSync(path.join(root, 'queue.py'), QUEUE);
    // A support bundle in the workspace with a line `(?=a)(a+)+$` backtracks on.
    mkdirSync(path.join(root, 'five', 'logs'), { recursive: true });
    writeFileSync(path.join(root, 'five', 'logs', 'app.log'), `starting\n${'a'.repeat(40)}!ab\nready\n`);
    mkdirSync(path.join(root, 'five', 'cluster-resources', 'pods'), { recursive: true });
    writeFileSync(path.join(root, 'five', 'cluster-resources', 'pods', 'default.json'), '{"kind": "PodList", "items": []}\n');
    execFileSync('tar', ['-czf', path.join(root, 'five.tar.gz'), '-C', root, 'five']);
    s = await startKeyedServer(root, { attacker: 'bundles', other: 'bundles:read' }, [
      '--toolsets',
      'bundles',
      '--bundle-dir',
      path.join(root, '.store'),
      '--max-connections',
      '64',
      '--grep-timeout',
      '1',
    ]);
  }, 60_000);
  afterAll(async () => {
    flooder?.kill('SIGKILL');
    await stopAttackServer(s, root);
  });

  it("64 grep_files calls of one `bundles` key waiting for its one thread: another key's fresh connections are still answered", async () => {
    const other = s.keys.other!.key;
    expect(await freshPing(s, other), 'control: a ping before').toBe('200');
    const init = await plainCall(s, s.keys.attacker!.key, 'initialize_bundle', { source: 'five.tar.gz' });
    expect(answerText(init)).toMatch(/Bundle initialized/);
    const base = readdirSync(`/proc/${s.node.proc.pid}/fd`).length;
    const said: string[] = [];
    flooder = spawn('python3', [path.join(root, 'queue.py'), new URL(s.node.url).port, s.keys.attacker!.key, '64', '30'], { stdio: ['ignore', 'pipe', 'inherit'] });
    flooder.stdout!.on('data', (d) => said.push(String(d)));
    expect(await waitFor(() => said.join('').includes('open 64'), 20_000), said.join('')).toBe(true);
    // The server has read every connection's request (its descriptors), then another key pings for 10 s.
    const fds = () => readdirSync(`/proc/${s.node.proc.pid}/fd`).length;
    expect(await waitFor(() => fds() >= base + 60, 20_000), `server descriptors ${fds()} (${base} before)`).toBe(true);
    const answers: string[] = [];
    const t = performance.now();
    while (performance.now() - t < 10_000) answers.push(await freshPing(s, other));
    const bad = answers.filter((a) => a !== '200');
    expect(bad, `${answers.length - bad.length} of ${answers.length} pings answered; first failures: ${bad.slice(0, 3).join(' | ')}`).toEqual([]);
  }, 90_000);
});

describe('attack 18f F2: a name followed by a parenthesis later keeps a shell word secret in clear', () => {
  const cases: Array<[text: string, secret: string]> = [
    ['token=ghp_abc123 ./deploy.sh  # the token (from vault)', 'ghp_abc123'],
    ['PGPASSWORD=hunter2 psql -c "select 1"  # PGPASSWORD (see docs)', 'hunter2'],
    ['password=hunter2 ./run.sh --header=x-password(1)', 'hunter2'],
    ['token=hunter2; token=os.system; token("id")', 'hunter2'],
    ['export TOKEN=hunter2\nTOKEN (x)', 'hunter2'],
  ];
  for (const [text, secret] of cases) {
    it(`hides ${secret} in ${JSON.stringify(text)}`, () => {
      expect(redactText(text)).not.toContain(secret);
    });
  }
});

/** New connections, each with `k` pipelined keyless requests sent at once and never read; `keep` kept open, the oldest closed. */
const CHURN = `import collections, socket, sys, time
port = int(sys.argv[1]); keep = int(sys.argv[2]); k = int(sys.argv[3]); hold = float(sys.argv[4])
req = b"POST /mcp HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nContent-Length: 2\\r\\n\\r\\n{}" * k
q = collections.deque(); opened = 0
end = time.time() + hold
while time.time() < end:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    try:
        s.connect(("127.0.0.1", port)); s.setblocking(False)
        try: s.send(req)
        except OSError: pass
        q.append(s); opened += 1
        if opened == 1: print("started", flush=True)
    except OSError:
        s.close()
    while len(q) > keep: q.popleft().close()
    time.sleep(0.005)
print("opened", opened, flush=True)
`;

/** A ping on a new connection: its status (or error) and round trip. */
function timedFreshPing(s: KeyedServer, key: string, timeoutMs: number): Promise<{ status: string; ms: number }> {
  const t = performance.now();
  return new Promise((resolve) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const req = http.request(s.node.url, { method: 'POST', agent: false, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: String(res.statusCode), ms: performance.now() - t }));
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer in ${timeoutMs} ms`)));
    req.on('error', (e) => resolve({ status: `error: ${e.message}`, ms: performance.now() - t }));
    req.end(body);
  });
}

describe('attack 18f F3: keyless pipelined requests on new connections keep new clients out', () => {
  let s: KeyedServer;
  let root: string;
  let churn: ChildProcess | undefined;

  beforeAll(async () => {
    root = tempDir('debugkit-attack18f-churn-');
    writeFileSync(path.join(root, 'churn.py'), CHURN);
    s = await startKeyedServer(root, { other: 'bundles:read' }, ['--toolsets', 'bundles']);
  }, 60_000);
  afterAll(async () => {
    churn?.kill('SIGKILL');
    await stopAttackServer(s, root);
  });

  it("another key's pings on new connections are answered within a second", async () => {
    const other = s.keys.other!.key;
    const before = await timedFreshPing(s, other, 5_000);
    expect(before.status, 'control: a fresh ping before').toBe('200');
    const said: string[] = [];
    churn = spawn('python3', [path.join(root, 'churn.py'), new URL(s.node.url).port, '200', '1000', '25'], { stdio: ['ignore', 'pipe', 'inherit'] });
    churn.stdout!.on('data', (d) => said.push(String(d)));
    expect(await waitFor(() => said.join('').includes('started'), 10_000), said.join('')).toBe(true);
    const pings: Array<{ status: string; ms: number }> = [];
    const t = performance.now();
    while (performance.now() - t < 12_000) pings.push(await timedFreshPing(s, other, 10_000));
    const bad = pings.filter((p) => p.status !== '200' || p.ms > 1_000);
    expect(bad, `${pings.length} fresh pings (idle ${before.ms.toFixed(0)} ms): ${pings.map((p) => `${p.status}/${p.ms.toFixed(0)}`).join(', ')}`).toEqual([]);
  }, 90_000);
});

/** `n` connections with a request's headers begun and never ended; each one the server closes is opened again at once. */
const HALF_OPEN = `import selectors, socket, sys, time
port = int(sys.argv[1]); n = int(sys.argv[2]); hold = float(sys.argv[3])
sel = selectors.DefaultSelector()
def one():
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /mcp HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n")
    except OSError:
        return
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)
for i in range(n): one()
print("open", n, flush=True)
end = time.time() + hold
while time.time() < end:
    for key, _ in sel.select(timeout=0.5):
        sel.unregister(key.fileobj); key.fileobj.close(); one()
`;

describe("attack 18f F4: evicting the idle longest drops a keep-alive client's requests", () => {
  let s: KeyedServer;
  let root: string;
  let flood: ChildProcess | undefined;

  beforeAll(async () => {
    root = tempDir('debugkit-attack18f-keepalive-');
    writeFileSync(path.join(root, 'half-open.py'), HALF_OPEN);
    s = await startKeyedServer(root, { other: 'bundles:read' }, ['--toolsets', 'bundles', '--max-connections', '64']);
  }, 60_000);
  afterAll(async () => {
    flood?.kill('SIGKILL');
    await stopAttackServer(s, root);
  });

  it("another key's pings on its keep-alive connection, 10 ms apart, all answered", async () => {
    const said: string[] = [];
    flood = spawn('python3', [path.join(root, 'half-open.py'), new URL(s.node.url).port, '300', '30'], { stdio: ['ignore', 'pipe', 'inherit'] });
    flood.stdout!.on('data', (d) => said.push(String(d)));
    expect(await waitFor(() => said.join('').includes('open'), 20_000), said.join('')).toBe(true);
    dropped.length = 0;
    let sent = 0;
    const t = performance.now();
    // fetch keeps its connection alive between pings (paced 10 ms apart).
    while (performance.now() - t < 10_000) {
      sent++;
      await ping(s, s.keys.other!.key);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect([...dropped], `${dropped.length} of ${sent} keep-alive pings failed`).toEqual([]);
  }, 90_000);
});
