// Whether one key's input can hold the server's event loop (issue 18): another client's ping
// latency while each input is sent, side by side with the idle baseline in the same run, against
// a real `debugkit serve` in a child process. The inputs: a catastrophic grep_files pattern on a
// bundle of five log lines, keploy_list_mocks over a workspace with a 100 MB-scalar set and a
// 200,000-document set, keploy_mock_test loading each of those sets (refused: past the bounds)
// and a 20,000-document set (at the bound: parsed and replayed), 20,000 pipelined Redis misses and
// Generic hits against sets of 19,000 (answered in slices), a request missing an Http mock whose
// body is 28 MB (its set loaded, its body matched against), a request body dripping one
// byte at a time, 100,000-character arguments (the audit redactor reads every argument),
// 15 bodies of 4 MiB at once (each parsed in a share of the loop of its own), a binary
// debugger_export_trace of a 28 MB recording (sent 256 KiB a call), and gdb's 16 MB MI line.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { drain, envInt, killPid, ms, releaseTempDir, summarize, track, trackTempDir, untrack, waitExit, type BenchModule, type BenchResult } from './util.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CLI = path.join(ROOT, 'dist/cli.js');
/** Milliseconds between one ping's answer and the next ping. */
const PING_GAP_MS = 10;
/** The idle baseline and the slow body each last this long. */
const WINDOW_MS = envInt('BENCH_LIVENESS_WINDOW_MS', 5000);
/** Rounds of each input (each measured separately, the pings pooled). */
const ROUNDS = envInt('BENCH_LIVENESS_ROUNDS', 2);
const GOAL_MS = 50;
const KEY = 'bench-liveness-key';
const BODY_DEADLINE_S = 5;
const GREP_TIMEOUT_S = 5;
const CATASTROPHIC = '(?=a)(a+)+$';
/** Request bodies of 4 MiB sent at once (the pings, of the same key, are its 16th body: --max-pending-bodies-per-key). */
const BIG_BODIES = 15;
/** Calls with a 100,000-character argument per round. */
const LONG_CALLS = envInt('BENCH_LIVENESS_LONG_CALLS', 200);
/** Documents of the set keploy_mock_test replays at its bound (scan.ts PARSE_MAX_DOCS). */
const BOUND_DOCS = 20_000;
/** Recorded exchanges of the pipelined-burst sets, and requests the program sends in one write. */
const BURST_MOCKS = 19_000;
const BURST_REQUESTS = 20_000;
/** Pipelined bursts replayed (attack 18c): each request a Redis miss, or a Generic hit. Each answer ends with one newline. */
const BURSTS = [
  {
    set: 'redis-burst',
    kind: 'Redis',
    port: 6379,
    recorded: (i: number) => [`*3\r\n$3\r\nSET\r\n$${String(i).length + 1}\r\nk${i}\r\n$1\r\nv\r\n`, '+OK\r\n'],
    send: '*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$1\r\nv\r\n',
    what: 'Redis misses',
  },
  { set: 'generic-burst', kind: 'Generic', port: 7777, recorded: (i: number) => [`Q${String(i).padStart(6, '0')}\n`, 'A\n'], send: 'Q000000\n', what: 'Generic hits' },
] as const;

/** The body of the one Http mock of set big-body (MB), and the program that posts a request missing it. */
const BIG_BODY_MB = 28;
/** A program whose recording GDB writes with 28 MB of its memory (a core keeps anonymous memory, touched or not). */
const BIG_RECORDING_MB = 28;
const BIG_RECORDING_C = `#include <stdio.h>
static char block[${BIG_RECORDING_MB}u << 20];
int main(void) {
  block[7] = 'y';
  printf("%c\\n", block[7]);
  return 0;
}
`;
/** Bytes gdb reads in one -data-read-memory-bytes (its MI line holds each as two hex digits). */
const MI_LINE_BYTES = 8_000_000;
const POST_PY = `import http.client
c = http.client.HTTPConnection("127.0.0.1", 9, timeout=300)
c.request("POST", "/x", body=b'{"a":[1]}', headers={"Content-Type": "application/json"})
r = c.getresponse(); print("status", r.status); r.read()
`;

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
/** The other client's key (a key of its own, made in the server's data directory before it starts): the inputs' is KEY. */
let pingKey = KEY;

/**
 * One plain JSON-RPC POST (keep-alive, unless `own`: a connection of its own), with the inputs'
 * key unless `key` is given; the parsed answer and its round trip.
 */
function post(port: number, message: object, { own = false, key = KEY }: { own?: boolean; key?: string } = {}): Promise<{ ms: number; status: number; body: any }> {
  const text = JSON.stringify(message);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: '/mcp',
        method: 'POST',
        agent: own ? false : agent,
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) },
      },
      (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (data += d));
        res.on('end', () => {
          let body: unknown;
          try {
            body = JSON.parse(data);
          } catch {
            body = data;
          }
          resolve({ ms: performance.now() - started, status: res.statusCode ?? 0, body });
        });
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

let nextId = 1;
const call = (port: number, name: string, args: object) => post(port, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args } });

/** Pings (one at a time, PING_GAP_MS apart) until `until` resolves; every round trip. */
async function pingWhile(port: number, until: Promise<unknown>): Promise<number[]> {
  let done = false;
  void until.finally(() => (done = true)).catch(() => undefined);
  const samples: number[] = [];
  while (!done) {
    const r = await post(port, { jsonrpc: '2.0', id: nextId++, method: 'ping' }, { key: pingKey });
    if (r.status !== 200) throw new Error(`ping answered HTTP ${r.status}: ${JSON.stringify(r.body).slice(0, 200)}`);
    samples.push(r.ms);
    if (!done) await new Promise((resolve) => setTimeout(resolve, PING_GAP_MS));
  }
  return samples;
}

const after = (msecs: number) => new Promise<void>((resolve) => setTimeout(resolve, msecs));

/** A request body of `length` bytes sent one byte every 100 ms; resolves when the server closes the connection. */
function drip(port: number, length: number): Promise<{ sent: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    socket.once('connect', () => {
      socket.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`);
      timer = setInterval(() => {
        if (sent < length && !socket.destroyed) {
          socket.write(' ');
          sent++;
        }
      }, 100);
    });
    socket.on('error', () => undefined);
    socket.once('close', () => {
      clearInterval(timer);
      resolve({ sent, ms: performance.now() - started });
    });
  });
}

/** A temporary directory holding the workspace root (`root/`) and the server's own directories beside it. */
function workspace(): { base: string; root: string; cache: string } {
  const base = mkdtempSync(path.join(os.tmpdir(), 'debugkit-bench-liveness-'));
  trackTempDir(base);
  const root = path.join(base, 'root');
  mkdirSync(path.join(root, 'five', 'logs'), { recursive: true });
  mkdirSync(path.join(root, 'five', 'cluster-resources', 'pods'), { recursive: true });
  writeFileSync(path.join(root, 'five', 'cluster-resources', 'pods', 'default.json'), '{"kind": "PodList", "items": []}\n');
  writeFileSync(path.join(root, 'five', 'logs', 'app.log'), ['starting', `${'a'.repeat(40)}!`, 'ready', 'serving', 'done'].join('\n') + '\n');
  execFileSync('tar', ['-czf', path.join(root, 'five.tar.gz'), '-C', root, 'five']);
  for (const name of ['normal', 'huge', 'many']) mkdirSync(path.join(root, 'keploy', name), { recursive: true });
  writeFileSync(path.join(root, 'keploy', 'normal', 'mocks.yaml'), 'version: api.keploy.io/v1beta1\nkind: Generic\nname: mock-0\nspec:\n  metadata: {}\n');
  let fd = openSync(path.join(root, 'keploy', 'huge', 'mocks.yaml'), 'w');
  writeSync(fd, 'version: api.keploy.io/v1beta1\nkind: Generic\nname: mock-0\nspec:\n  metadata:\n    note: ');
  const block = Buffer.alloc(1024 * 1024, 'A');
  for (let i = 0; i < 100; i++) writeSync(fd, block);
  writeSync(fd, '\n');
  closeSync(fd);
  const empty = (i: number) => `version: api.keploy.io/v1beta1\nkind: Generic\nname: mock-${i}\nspec:\n  metadata: {}\n---\n`;
  const documents = (file: string, count: number, doc = empty) => {
    fd = openSync(file, 'w');
    for (let i = 0; i < count; i += 1000) writeSync(fd, Array.from({ length: Math.min(1000, count - i) }, (_, k) => doc(i + k)).join(''));
    closeSync(fd);
  };
  documents(path.join(root, 'keploy', 'many', 'mocks.yaml'), 200_000);
  // Apart from ./keploy (the listing row lists that): a set at keploy_mock_test's bound.
  mkdirSync(path.join(root, 'keploy-replay', 'bound'), { recursive: true });
  documents(path.join(root, 'keploy-replay', 'bound', 'mocks.yaml'), BOUND_DOCS);
  // Pipelined bursts: recorded exchanges (Redis `SET k<i> v`, Generic `Q<i>`) and a program sending one request N times in one write.
  for (const burst of BURSTS) {
    mkdirSync(path.join(root, 'keploy-replay', burst.set), { recursive: true });
    documents(path.join(root, 'keploy-replay', burst.set, 'mocks.yaml'), BURST_MOCKS, (i) => {
      const [request, response] = burst.recorded(i);
      const field = burst.kind === 'Redis' ? 'redis' : 'generic';
      const message = (origin: string, data: string) => `        - origin: ${origin}\n          message:\n            - type: string\n              data: ${JSON.stringify(data)}\n`;
      return `version: api.keploy.io/v1beta1\nkind: ${burst.kind}\nname: mock-${i}\nspec:\n    metadata: {}\n    ${field}requests:\n${message('client', request)}    ${field}responses:\n${message('server', response)}---\n`;
    });
  }
  // One Http mock, POST http://127.0.0.1:9/x, whose body is BIG_BODY_MB of text ("x0,0,...").
  mkdirSync(path.join(root, 'keploy-replay', 'big-body'), { recursive: true });
  writeFileSync(
    path.join(root, 'keploy-replay', 'big-body', 'mocks.yaml'),
    'version: api.keploy.io/v1beta1\nkind: Http\nname: mock-0\nspec:\n    metadata: {}\n    req:\n        method: POST\n        url: http://127.0.0.1:9/x\n' +
      `        body: 'x${'0,'.repeat((BIG_BODY_MB * 1_000_000) / 2)}0'\n    resp:\n        status_code: 200\n        body: "ok"\n`,
  );
  writeFileSync(path.join(root, 'post.py'), POST_PY);
  writeFileSync(
    path.join(root, 'burst.py'),
    'import socket, sys\nport, n, payload = int(sys.argv[1]), int(sys.argv[2]), bytes.fromhex(sys.argv[3])\n' +
      's = socket.create_connection(("127.0.0.1", port), timeout=300)\ns.sendall(payload * n)\ngot = 0\n' +
      'while got < n:\n    b = s.recv(1 << 20)\n    if not b:\n        break\n    got += b.count(b"\\n")\nprint("answers", got)\n',
  );
  writeFileSync(path.join(root, 'bigrec.c'), BIG_RECORDING_C);
  execFileSync('gcc', ['-g', '-O0', '-o', path.join(root, 'bigrec'), path.join(root, 'bigrec.c')]);
  return { base, root, cache: path.join(base, 'cache') };
}

async function startServer({ base, root, cache }: { base: string; root: string; cache: string }): Promise<{ proc: ChildProcess; port: number; out: { text: string } }> {
  const args = [
    CLI,
    'serve',
    '--port',
    '0',
    '--api-key',
    KEY,
    '--root',
    root,
    '--toolsets',
    'bundles,mocks,gdb,debugger',
    '--bundle-dir',
    path.join(base, 'store'),
    '--data-dir',
    path.join(base, 'data'),
    '--log-level',
    'error',
    '--body-deadline',
    String(BODY_DEADLINE_S),
    '--grep-timeout',
    String(GREP_TIMEOUT_S),
  ];
  // The pinging client holds a key of its own: what one key sends must not hold another's answers.
  const made = execFileSync(process.execPath, [CLI, 'keys', 'create', '--data-dir', path.join(base, 'data'), '--name', 'pinger', '--scopes', 'bundles', '--rate', 'unlimited', '--json'], {
    env: { ...process.env, DEBUGKIT_STORE: '' },
  });
  pingKey = (JSON.parse(made.toString('utf8')) as { key: string }).key;
  const proc = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DEBUGKIT_STORE: '', XDG_CACHE_HOME: cache } });
  track(proc.pid, 'debugkit serve', false);
  const out = { text: '' };
  drain(proc.stderr, out);
  let stdout = '';
  proc.stdout!.setEncoding('utf8');
  proc.stdout!.on('data', (d: string) => (stdout += d));
  const deadline = Date.now() + 20_000;
  while (!/serving MCP \(Streamable HTTP\) at http:\/\/127\.0\.0\.1:(\d+)\/mcp/.test(stdout)) {
    if (proc.exitCode !== null) throw new Error(`debugkit serve exited: ${out.text}`);
    if (Date.now() > deadline) {
      if (proc.pid !== undefined) killPid(proc.pid, false);
      untrack(proc.pid);
      throw new Error(`debugkit serve did not start: ${out.text}`);
    }
    await after(50);
  }
  return { proc, port: Number(/127\.0\.0\.1:(\d+)\/mcp/.exec(stdout)![1]), out };
}

interface Row {
  input: string;
  pings: number[];
  answered: number[];
  outcome: string;
}

export const livenessBench: BenchModule = {
  name: 'liveness',
  async run(): Promise<BenchResult> {
    if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
    const dirs = workspace();
    let started;
    try {
      started = await startServer(dirs);
    } catch (err) {
      releaseTempDir(dirs.base);
      throw err;
    }
    const { proc, port } = started;
    try {
      const init = await call(port, 'initialize_bundle', { source: 'five.tar.gz' });
      if (init.body?.result?.isError) throw new Error(`initialize_bundle failed: ${JSON.stringify(init.body).slice(0, 300)}`);
      // Warm up: the worker threads start, the connections open.
      await call(port, 'grep_files', { pattern: 'ready' });
      await call(port, 'keploy_list_mocks', { path: 'keploy-none' });
      for (let i = 0; i < 20; i++) await post(port, { jsonrpc: '2.0', id: nextId++, method: 'ping' });

      const rows: Row[] = [
        { input: 'idle (no other request)', pings: [], answered: [], outcome: '' },
        { input: `grep_files \`${CATASTROPHIC}\` on five log lines`, pings: [], answered: [], outcome: '' },
        { input: 'keploy_list_mocks: a 100 MB scalar + 200,000 documents', pings: [], answered: [], outcome: '' },
        { input: 'keploy_mock_test: a 100 MB scalar, then 200,000 documents', pings: [], answered: [], outcome: '' },
        { input: `keploy_mock_test: ${BOUND_DOCS.toLocaleString('en-US')} documents (parsed, replayed)`, pings: [], answered: [], outcome: '' },
        ...BURSTS.map((b) => ({
          input: `keploy_mock_test: ${BURST_REQUESTS.toLocaleString('en-US')} pipelined ${b.what} against ${BURST_MOCKS.toLocaleString('en-US')} recorded`,
          pings: [] as number[],
          answered: [] as number[],
          outcome: '',
        })),
        { input: `keploy_mock_test: a request missing an Http mock whose body is ${BIG_BODY_MB} MB`, pings: [], answered: [], outcome: '' },
        { input: 'a body dripping 1 byte / 100 ms', pings: [], answered: [], outcome: '' },
        { input: `100,000-character arguments (x${LONG_CALLS} per round)`, pings: [], answered: [], outcome: '' },
        { input: `${BIG_BODIES} request bodies of 4 MiB at once`, pings: [], answered: [], outcome: '' },
        { input: `debugger_export_trace binary of a ${BIG_RECORDING_MB} MB recording, every page`, pings: [], answered: [], outcome: '' },
        { input: `gdb: a ${((MI_LINE_BYTES * 2) / 1e6).toFixed(0)} MB MI line (-data-read-memory-bytes)`, pings: [], answered: [], outcome: '' },
      ];
      const [bigBodyRow, dripRow, longRow, bodiesRow, traceRow, miRow] = rows.slice(-6) as [Row, Row, Row, Row, Row, Row];
      const text = (r: { body: any }) => String(r.body?.result?.content?.[0]?.text ?? r.body?.error?.message ?? '');
      for (let round = 0; round < ROUNDS; round++) {
        // Idle baseline.
        rows[0]!.pings.push(...(await pingWhile(port, after(WINDOW_MS))));
        // A catastrophic pattern: the server stops it at --grep-timeout.
        const grepStarted = performance.now();
        const grep = call(port, 'grep_files', { pattern: CATASTROPHIC });
        rows[1]!.pings.push(...(await pingWhile(port, grep)));
        rows[1]!.answered.push(performance.now() - grepStarted);
        rows[1]!.outcome = text(await grep).slice(0, 80);
        // Listing the huge sets (a few times: each takes about a second).
        const listStarted = performance.now();
        const listing = (async () => {
          let last;
          for (let i = 0; i < 3; i++) last = await call(port, 'keploy_list_mocks', {});
          return last!;
        })();
        rows[2]!.pings.push(...(await pingWhile(port, listing)));
        rows[2]!.answered.push((performance.now() - listStarted) / 3);
        rows[2]!.outcome = `${(await listing).body?.result?.structuredContent?.count} sets listed`;
        // Replaying the huge sets: each refused, past keploy_mock_test's bounds.
        const replayStarted = performance.now();
        const replays = (async () => {
          const answers = [];
          for (const mockName of ['huge', 'many']) answers.push(await call(port, 'keploy_mock_test', { command: '/usr/bin/true', mockName }));
          return answers;
        })();
        rows[3]!.pings.push(...(await pingWhile(port, replays)));
        rows[3]!.answered.push((performance.now() - replayStarted) / 2);
        rows[3]!.outcome = (await replays)
          .map((r) =>
            text(r)
              .replace(/^.*?was not loaded: /, 'refused: ')
              .replace(/\. keploy_mock_test .*$/, ''),
          )
          .join('; ');
        // Replaying the set at the bound: parsed (not from the cache of parsed sets: emptied first), then replayed.
        rmSync(dirs.cache, { recursive: true, force: true });
        const boundStarted = performance.now();
        const bound = call(port, 'keploy_mock_test', { command: '/usr/bin/true', mockName: 'bound', path: 'keploy-replay' });
        rows[4]!.pings.push(...(await pingWhile(port, bound)));
        rows[4]!.answered.push(performance.now() - boundStarted);
        const boundAnswer = await bound;
        rows[4]!.outcome = String(boundAnswer.body?.result?.structuredContent?.message ?? text(boundAnswer)).slice(0, 80);
        // Pipelined bursts against large sets: answered in slices.
        for (const [i, b] of BURSTS.entries()) {
          const row = rows[5 + i]!;
          const burstStarted = performance.now();
          const command = `/usr/bin/python3 burst.py ${b.port} ${BURST_REQUESTS} ${Buffer.from(b.send).toString('hex')}`;
          const burst = call(port, 'keploy_mock_test', { command, mockName: b.set, path: 'keploy-replay', timeout: 600 });
          row.pings.push(...(await pingWhile(port, burst)));
          row.answered.push(performance.now() - burstStarted);
          const answer = (await burst).body?.result?.structuredContent;
          row.outcome = `${answer?.mocksReplayed} replayed, ${answer?.mocksMissed} missed, exit ${answer?.appExitCode}`;
        }
        // A request that misses a mock with a long body: the set is loaded, the body matched against and the closest said.
        const bigStarted = performance.now();
        const big = call(port, 'keploy_mock_test', { command: '/usr/bin/python3 post.py', mockName: 'big-body', path: 'keploy-replay' });
        bigBodyRow.pings.push(...(await pingWhile(port, big)));
        bigBodyRow.answered.push(performance.now() - bigStarted);
        const bigAnswer = (await big).body?.result?.structuredContent;
        bigBodyRow.outcome = `${bigAnswer?.mocksReplayed} replayed, ${bigAnswer?.mocksMissed} missed, exit ${bigAnswer?.appExitCode}`;
        // A body that never finishes: dropped at --body-deadline.
        const body = drip(port, 100_000);
        dripRow.pings.push(...(await pingWhile(port, body)));
        const dropped = await body;
        dripRow.answered.push(dropped.ms);
        dripRow.outcome = `dropped after ${dropped.sent} bytes`;
        // Long arguments, refused or not, are audited.
        const longStarted = performance.now();
        const long = (async () => {
          let last;
          for (let i = 0; i < LONG_CALLS; i++) last = await call(port, 'read_file', { path: `/${'a'.repeat(100_000)}` });
          return last!;
        })();
        longRow.pings.push(...(await pingWhile(port, long)));
        longRow.answered.push((performance.now() - longStarted) / LONG_CALLS);
        longRow.outcome = text(await long).slice(0, 60);
        // Bodies of 4 MiB sent at once, each on a connection of its own: each is parsed in a share of the loop of its own.
        const bodiesStarted = performance.now();
        const path4m = `/${'a'.repeat(4 * 1024 * 1024 - 4096)}`;
        const bodies = Promise.all(
          Array.from({ length: BIG_BODIES }, () => post(port, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 'read_file', arguments: { path: path4m } } }, { own: true })),
        );
        bodiesRow.pings.push(...(await pingWhile(port, bodies)));
        bodiesRow.answered.push(performance.now() - bodiesStarted);
        bodiesRow.outcome = `${(await bodies).filter((r) => r.status === 200).length} of ${BIG_BODIES} answered (HTTP 200)`;
        // A binary trace of a recording near its 32 MiB limit, every page of it (attack w2-2: one answer held the loop ~2 s).
        const launched = await call(port, 'debugger_launch', { program: 'bigrec', session_id: 'rec' });
        if (launched.body?.result?.isError) throw new Error(`debugger_launch failed: ${text(launched)}`);
        await call(port, 'debugger_step_forward', { session_id: 'rec', count: 2 });
        const traceStarted = performance.now();
        const trace = (async () => {
          let pages = 0;
          let bytes = 0;
          for (let offset: number | undefined = 0; offset !== undefined; pages++) {
            const r = await call(port, 'debugger_export_trace', { format: 'binary', offset, session_id: 'rec' });
            const value = r.body?.result?.structuredContent;
            if (r.body?.result?.isError || value === undefined) throw new Error(`debugger_export_trace failed: ${text(r)}`);
            bytes = value.bytes;
            offset = value.next_offset;
          }
          return { pages, bytes };
        })();
        traceRow.pings.push(...(await pingWhile(port, trace)));
        const exported = await trace;
        traceRow.answered.push((performance.now() - traceStarted) / exported.pages);
        traceRow.outcome = `${exported.pages} pages, ${exported.bytes} bytes`;
        await call(port, 'debugger_detach', { session_id: 'rec' });
        // gdb's one long MI line: read in chunks, each searched for its end once (attack w2-1: 38-48 s of 1 s holds).
        const opened = await call(port, 'open', { program: 'bigrec' });
        const id = opened.body?.result?.structuredContent?.content?.id;
        if (id === undefined) throw new Error(`open failed: ${text(opened)}`);
        await call(port, 'call', { id, commands: ['break main', 'run'] });
        const miStarted = performance.now();
        const mi = call(port, 'call', { id, command: `-data-read-memory-bytes &block ${MI_LINE_BYTES}` });
        miRow.pings.push(...(await pingWhile(port, mi)));
        miRow.answered.push(performance.now() - miStarted);
        miRow.outcome = text(await mi)
          .slice(0, 60)
          .replace(/\s+/g, ' ');
        await call(port, 'close', { id });
      }

      const stats = rows.map((r) => ({ row: r, s: summarize(r.pings), a: r.answered.length ? summarize(r.answered) : undefined }));
      const idle = stats[0]!.s;
      const maxOf = (xs: number[]) => (xs.length ? Math.max(...xs) : Number.NaN);
      const table = {
        title: "Another client's ping while the input is sent, ms",
        columns: ['input', 'pings', 'p50', 'p99', 'max', '+p99 vs idle', 'input answered in (ms)', 'answer'],
        rows: stats.map(({ row, s, a }) => [
          row.input,
          String(s.n),
          ms(s.p50),
          ms(s.p99),
          ms(maxOf(row.pings)),
          ms(s.p99 - idle.p99, true),
          a ? ms(a.p50) : '',
          row.outcome.replace(/\|/g, '\\|').replace(/\n/g, ' '),
        ]),
        note: 'The inputs are sent by one client (plain JSON-RPC POSTs, one API key) while another client, with a key of its own, pings (`ping`, one at a time, 10 ms apart) until the input is answered; the idle row pings alone, in the same run.',
      };
      const verdicts = stats.slice(1).map(({ row, s }) => ({
        goal: `another client's ping p99 under ${GOAL_MS} ms while sending: ${row.input}`,
        met: s.p99 < GOAL_MS,
        detail: `${ms(s.p99)} ms (idle ${ms(idle.p99)} ms)`,
      }));
      const cpu = os.cpus();
      return {
        name: 'liveness',
        date: new Date(),
        machine: [
          ['CPU', `${cpu[0]?.model.trim() ?? 'unknown'}, ${cpu.length} cores`],
          ['Node', process.version],
          ['load average (1 min)', os.loadavg()[0]!.toFixed(2)],
        ],
        summary:
          "Whether one key's input can hold the server's event loop: another client's ping latency while each input is sent, " +
          'side by side with the idle baseline in the same run (goal: p99 under 50 ms).',
        method: [
          `A real \`debugkit serve\` (dist/cli.js, one --api-key, toolsets bundles, mocks, gdb and debugger, --grep-timeout ${GREP_TIMEOUT_S}, --body-deadline ${BODY_DEADLINE_S}) in a child process; the bench process is both clients.`,
          `${ROUNDS} rounds, each: ${WINDOW_MS} ms idle; grep_files \`${CATASTROPHIC}\` over a bundle of five log lines (one of them 40 a's and a !), answered when the server stops it; keploy_list_mocks three times over ./keploy holding a set of one 100 MB scalar, a set of 200,000 small documents and a normal set; keploy_mock_test (command /usr/bin/true) on the 100 MB set then the 200,000-document set (answered in: the mean of the two); keploy_mock_test on a set of ${BOUND_DOCS} small Generic documents, parsed (the cache of parsed sets emptied first) and replayed; keploy_mock_test of a Python program sending ${BURST_REQUESTS} requests pipelined in one write on one connection, against a set of ${BURST_MOCKS} recorded exchanges: Redis \`SET x v\` (each a miss, its closest looked for) and Generic \`Q000000\` (each a hit); keploy_mock_test of a Python program posting one request that misses the one Http mock of a set, whose body is ${BIG_BODY_MB} MB of text; a POST /mcp announcing 100,000 bytes and sending one every 100 ms, until the server drops it; read_file ${LONG_CALLS} times in a row with a 100,000-character path; ${BIG_BODIES} read_file calls at once, each a body of 4 MiB (its path) on a connection of its own; debugger_export_trace binary of a program holding ${BIG_RECORDING_MB} MB of static memory (launched, stepped twice), every page fetched in turn (answered in: per page); gdb \`-data-read-memory-bytes &block ${MI_LINE_BYTES}\` at main of the same program, one MI line of ${MI_LINE_BYTES * 2} hex digits.`,
          'Pings are plain JSON-RPC `ping` POSTs of a second API key over a keep-alive connection, timed from request to the end of the answer; percentiles nearest rank over the rounds pooled.',
        ],
        tables: [table],
        verdicts,
      };
    } finally {
      proc.kill('SIGTERM');
      if (!(await waitExit(proc, 5000)) && proc.pid !== undefined) killPid(proc.pid, false);
      untrack(proc.pid);
      agent.destroy();
      releaseTempDir(dirs.base);
    }
  },
};
