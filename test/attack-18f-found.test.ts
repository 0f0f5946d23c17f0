// Attack 18f on issue 18, what it found (fixed since; what held is in test/attack-18f.test.ts).
// Measured before the fixes on the shared 2-CPU machine, Node 20, `dist/` bundled.
//
// F1. One key's calls that wait their turn (64 grep_files of a `bundles` key behind its one worker
//     thread, each answered one re-sent) held every connection --max-connections (64) allows:
//     35 of 28,289 fresh pings of another key answered in 10 s. Now one key may have at most
//     --max-requests-per-key requests in progress (default a quarter of --max-connections, 4 to
//     64; more: 429 and the connection closed).
// F2. The redactor's "a name called further on holds code" rule kept shell-word secrets when a
//     later `NAME (` was prose or `x-NAME(` a longer word, and the first of two assignments. Now only
//     a dotted path ending its statement whose name is called as `NAME(` is kept.
// F3 (keyless pipelined requests on new connections) is still open: test/pending/attack-18f.unit.ts.
// F4. The eviction closed "the idle longest", and a half-open flood made a working client's
//     kept-alive connection that one: 3 of 521 pings failed (UND_ERR_SOCKET). Now connections that
//     never had a request answered go first.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redactText } from '../src/core/secrets.js';
import { sleep } from '../src/core/wait.js';
import { answerText, dropped, ping, plainCall, startKeyedServer, stopAttackServer, type KeyedServer, freshPing } from './helpers/attack.js';
import { waitFor } from './helpers/procs.js';
import { tempDir } from './helpers/programs.js';

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
    expect(await freshPing(s, other, 5_000), 'control: a ping before').toBe('200');
    const init = await plainCall(s, s.keys.attacker!.key, 'initialize_bundle', { source: 'five.tar.gz' });
    expect(answerText(init)).toMatch(/Bundle initialized/);
    const base = readdirSync(`/proc/${s.node.proc.pid}/fd`).length;
    const said: string[] = [];
    flooder = spawn('python3', [path.join(root, 'queue.py'), new URL(s.node.url).port, s.keys.attacker!.key, '64', '30'], { stdio: ['ignore', 'pipe', 'inherit'] });
    flooder.stdout!.on('data', (d) => said.push(String(d)));
    expect(await waitFor(() => said.join('').includes('open 64'), 20_000), said.join('')).toBe(true);
    // Another key pings for 10 s while the attacker keeps its calls going (past its bound it is refused, 429).
    const fds = () => readdirSync(`/proc/${s.node.proc.pid}/fd`).length;
    const answers: string[] = [];
    const t = performance.now();
    while (performance.now() - t < 10_000) answers.push(await freshPing(s, other, 5_000));
    const bad = answers.filter((a) => a !== '200');
    expect(bad, `${answers.length - bad.length} of ${answers.length} pings answered (server descriptors ${fds()}, ${base} before); first failures: ${bad.slice(0, 3).join(' | ')}`).toEqual([]);
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
      await sleep(10); // a pause, not a wait: pings paced 10 ms apart
    }
    expect([...dropped], `${dropped.length} of ${sent} keep-alive pings failed`).toEqual([]);
  }, 90_000);
});
