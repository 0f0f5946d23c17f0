// The mocks toolset's cost on a program's traffic: (1) the latency one HTTP request gains through the
// recorder (and through replay), p50 and p99, against the same request sent directly; (2) throughput
// through the recorder against direct: one large download, and many small requests on 8 keep-alive
// connections at once; (3) a PostgreSQL workload's queries per second against the real server,
// through the recorder, and answered by the replayer.
//
// Three processes, as when debugkit records a program: the origin HTTP server (a child), the capture
// proxy with the recorder and the replayer (a child: debugkit's side), and the client (this process:
// the program). The children are this file again, forked with `--bench-mocks-child <role>`. (2) also
// goes through bench/splice-relay.c, compiled with gcc at start: a zero-copy relay that records
// nothing, the least any out-of-process hop costs on this machine.
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { isHttpCandidate, recordIntercepted, replayIntercepted } from '../src/toolsets/mocks/http/intercept.js';
import { HttpMatcher } from '../src/toolsets/mocks/http/matcher.js';
import { HttpReplayer } from '../src/toolsets/mocks/http/replayer.js';
import { dial as connectTcp } from '../src/toolsets/mocks/dial.js';
import { numberMocks } from '../src/toolsets/mocks/keploy/serialize.js';
import { MockStore } from '../src/toolsets/mocks/keploy/store.js';
import type { HttpMock, Mock, PostgresMock } from '../src/toolsets/mocks/keploy/types.js';
import { ReplayIndex } from '../src/toolsets/mocks/postgres/matcher.js';
import { recordPostgres } from '../src/toolsets/mocks/postgres/recorder.js';
import { replayPostgres } from '../src/toolsets/mocks/postgres/replayer.js';
import { findPostgresBin, startPostgres, type RunningPostgres } from '../src/toolsets/mocks/postgres/testing.js';
import { newProxyCredential, type ProxyCredential } from '../src/toolsets/mocks/proxy/auth.js';
import { startCaptureProxy, type CaptureProxy, type InterceptedConnection } from '../src/toolsets/mocks/proxy/proxy.js';
import { tunnel } from '../src/toolsets/mocks/proxy/tunnel.js';
import { DebugkitCa } from '../src/toolsets/mocks/tls/ca.js';
import {
  drain,
  envInt,
  isAlive,
  killPid,
  ms,
  percentile,
  releaseTempDir,
  summarize,
  track,
  trackTempDir,
  untrack,
  waitExit,
  withTimeout,
  type BenchModule,
  type BenchResult,
  type Summary,
  type Table,
} from './util.js';

const THIS_FILE = fileURLToPath(import.meta.url);
/** The zero-copy relay of (2)'s diagnostic row, compiled into the run's temporary directory. */
const SPLICE_RELAY_C = path.join(path.dirname(THIS_FILE), 'splice-relay.c');
const CHILD_FLAG = '--bench-mocks-child';
/** tsx by URL: the children run in the run's temporary directory, where `--import tsx` would not resolve. */
const TSX = import.meta.resolve('tsx');
/** BENCH_MOCKS_PROFILE_DIR: the proxy process writes a V8 CPU profile there (`--cpu-prof`), to see where its time goes. */
const PROFILE_DIR = process.env.BENCH_MOCKS_PROFILE_DIR;

/** (1): sequential requests per way, after WARMUP untimed ones; ROUND per way before the next takes over. */
const REQUESTS = envInt('BENCH_MOCKS_REQUESTS', 2000);
const WARMUP = envInt('BENCH_MOCKS_WARMUP', 200);
const ROUND = envInt('BENCH_MOCKS_ROUND', 100);
/** Distinct URLs: request i asks for /items/((i mod KEYS) + 1). */
const KEYS = 100;
/**
 * The replay ways answer some 40 ms per request (see the report), so they take only the first
 * REPLAY_ROUND requests of each round (and REPLAY_WARMUP untimed): enough for p50 and p99.
 */
const REPLAY_ROUND = envInt('BENCH_MOCKS_REPLAY_ROUND', 10);
const REPLAY_WARMUP = 10;
/** (2): the large download, its runs per way; the parallel small requests: connections, time per run, runs per way. */
const BIG_MB = envInt('BENCH_MOCKS_BIG_MB', 100);
const BIG_RUNS = envInt('BENCH_MOCKS_BIG_RUNS', 7);
const PARALLEL = envInt('BENCH_MOCKS_PARALLEL', 8);
const PARALLEL_MS = envInt('BENCH_MOCKS_PARALLEL_MS', 1000);
const PARALLEL_RUNS = envInt('BENCH_MOCKS_PARALLEL_RUNS', 8);
/** (3): SELECTs per run (one INSERT after every INSERT_EVERY of them), runs per way, rows in the table. */
const PG_SELECTS = envInt('BENCH_MOCKS_PG_QUERIES', 2000);
const PG_RUNS = envInt('BENCH_MOCKS_PG_RUNS', 15);
/** Replay runs once the server is stopped. */
const PG_STOPPED_RUNS = 3;
const PG_ROWS = 1000;
const INSERT_EVERY = 100;

/**
 * BENCH_MOCKS_PARTS=throughput runs only (2), the recorder's throughput rows, and prints them
 * (with BENCH_NO_WRITE=1: a partial run must not replace the mocks section of BENCHMARKS.md).
 */
const PARTS = process.env.BENCH_MOCKS_PARTS?.split(',')
  .map((p) => p.trim())
  .filter(Boolean);

const REQUEST_TIMEOUT_MS = 20_000;
const BIG_TIMEOUT_MS = 60_000;
const CHILD_START_TIMEOUT_MS = 30_000;
const CALL_TIMEOUT_MS = 30_000;
const PG_START_TIMEOUT_MS = 150_000;
const PG_RUN_TIMEOUT_MS = 60_000;

const LATENCY_GOAL_MS = 1;
/**
 * Issue 22, restated: on this 2-CPU machine even a zero-copy C relay reaches only ~0.6-0.7x of
 * direct, so no relay can meet 0.8x of direct; the recorder is held to 0.9x of that relay, measured
 * in the same run (the worse of the download and the small requests). "vs direct" stays in the table.
 */
const THROUGHPUT_GOAL = 0.8;
const RELAY_GOAL = 0.9;
/** Issue 12: a 2,200-mock set loads in under 200 ms; a replayed request takes under 0.5 ms at p50; PostgreSQL replay 1.5x the server. */
const LOAD_GOAL_MS = 200;
const REPLAY_P50_GOAL_MS = 0.5;
const PG_REPLAY_GOAL = 1.5;

// ---------------------------------------------------------------- shared by the processes

/** The origin's answer for /items/<k>: a small JSON object (about 95 bytes). */
function itemBody(k: number): string {
  return JSON.stringify({ id: k, name: `item-${k}`, price: Number((k * 1.25).toFixed(2)), currency: 'EUR', tags: ['bench', k % 2 === 0 ? 'even' : 'odd'], in_stock: k % 3 !== 0 });
}

const itemPath = (i: number) => `/items/${(i % KEYS) + 1}`;

interface Ports {
  socks: number;
  http: number;
}

/** A message between the bench and a child: a call, its answer, or the child's first word. */
type ChildMessage =
  { type: 'ready'; value: unknown } | { type: 'call'; id: number; op: string; args: Record<string, unknown> } | { type: 'answer'; id: number; ok: boolean; value?: unknown; error?: string };

// ---------------------------------------------------------------- child: the origin server

type Handlers = Record<string, (args: Record<string, unknown>) => unknown>;

async function originMain(): Promise<{ ready: unknown; handlers: Handlers }> {
  const chunk = Buffer.alloc(64 * 1024);
  for (let i = 0; i < chunk.length; i++) chunk[i] = (i * 31 + (i >> 12)) & 255;
  const server = http.createServer((req, res) => {
    const url = req.url ?? '/';
    const item = /^\/items\/(\d+)$/.exec(url);
    if (item) {
      const body = itemBody(Number(item[1]));
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
      return void res.end(body);
    }
    const big = /^\/big\?bytes=(\d+)$/.exec(url);
    if (big) {
      const total = Number(big[1]);
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': total });
      let sent = 0;
      const pump = () => {
        while (sent < total) {
          const n = Math.min(chunk.length, total - sent);
          const ok = res.write(n === chunk.length ? chunk : chunk.subarray(0, n));
          sent += n;
          if (!ok) return void res.once('drain', pump);
        }
        res.end();
      };
      return pump();
    }
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    res.end('not found\n');
  });
  // The bench keeps its connections between phases: never let the server close them meanwhile.
  server.keepAliveTimeout = 600_000;
  const port = await listenLocal(server);
  const handlers: Handlers = {
    cpu: () => cpuMicros(),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return { ready: { port }, handlers };
}

// ---------------------------------------------------------------- child: the capture proxies

interface Captured {
  at: number;
  order: number;
  mock: Mock;
  protocol: string;
}

/** A replaying capture proxy: what one `replayMocks` call runs (set anew by `reset`, as a new program run would get). */
interface Replaying {
  proxy: CaptureProxy;
  set: string;
  replayer: HttpReplayer;
  pgIndex: ReplayIndex;
  counts: { httpMocks: number; pgMocks: number; pgReplayed: number; pgMissed: number };
  misses: string[];
}

/**
 * debugkit's side: capture proxies wired as src/toolsets/mocks/record.ts and replay.ts wire them:
 * `tunnel` (pass-through: the proxy alone), `record` (record.ts's handler), and replaying ones.
 */
async function proxyMain(dir: string, password: string): Promise<{ ready: unknown; handlers: Handlers }> {
  // As debugkit's proxies do, each requires the call's credential (SOCKS5 username/password, Proxy-Authorization).
  const credential: ProxyCredential = { user: PROXY_USER, password };
  const ca = await DebugkitCa.load(path.join(dir, 'ca'));
  const store = new MockStore(path.join(dir, 'mocks'), { cacheDir: path.join(dir, 'cache') });
  const warnings: string[] = [];
  const warn = (message: string) => void (warnings.length < 20 && warnings.push(message));

  // record.ts's handler, unchanged but for `warn` and the CA.
  let captured: Captured[] = [];
  let order = 0;
  const keep = (protocol: string) => (mock: Mock) => captured.push({ at: Date.now(), order: order++, mock, protocol });
  const pending = new Set<Promise<unknown>>();
  const record = await startCaptureProxy({
    credential,
    onConnection: (conn) => {
      const work = (async () => {
        if (isHttpCandidate(conn)) {
          const result = await recordIntercepted(conn, { ca, onMock: keep('HTTP'), insecureUpstream: false });
          if (result.error) warn(`recording ${conn.target.host}:${conn.target.port}: ${result.error.message}`);
          return;
        }
        if (conn.protocol === 'postgres') {
          const upstream = await connectTcp(conn.target, 10_000);
          const result = await recordPostgres(conn, upstream, { onMock: keep('Postgres') });
          if (result.error) warn(`recording PostgreSQL at ${conn.target.host}:${conn.target.port}: ${result.error.message}`);
          return;
        }
        await tunnel(conn);
      })().catch((err: unknown) => warn(`recording ${conn.target.host}:${conn.target.port}: ${String(err)}`));
      pending.add(work);
      void work.finally(() => pending.delete(work));
      return work;
    },
  });
  const pass = await startCaptureProxy({ credential, onConnection: async (conn) => void (await tunnel(conn)) });

  const replaying = new Map<string, Replaying>();
  /** Each set as read back from its file (once: reading is untimed, and slow for large sets), and how long that took. */
  const sets = new Map<string, { mocks: Mock[]; readMs: number; parseMs: number }>();
  const read = async (set: string) => {
    let got = sets.get(set);
    if (!got) {
      // The YAML parsed (as a set Keploy wrote is read the first time), then the set loaded as
      // keploy_mock_test loads it (from the cache of parsed sets that writing the set filled).
      let t = performance.now();
      await store.read(set);
      const parseMs = performance.now() - t;
      t = performance.now();
      const mocks = await store.read(set, { cached: true });
      got = { mocks, readMs: performance.now() - t, parseMs };
      sets.set(set, got);
    }
    return got;
  };
  /** replay.ts's state for one program run: a replayer over the set's HTTP mocks, one index over its PostgreSQL mocks. */
  const load = async (r: Pick<Replaying, 'set' | 'misses'>) => {
    const { mocks } = await read(r.set);
    const httpMocks = mocks.filter((m): m is HttpMock => m.kind === 'Http');
    const pgMocks = mocks.filter((m): m is PostgresMock => m.kind === 'Postgres');
    const replayer = new HttpReplayer({
      matcher: new HttpMatcher(httpMocks),
      fallBackOnMiss: false,
      onEvent: (event) => {
        if (event.kind === 'missed' && r.misses.length < 20) r.misses.push(`${event.method} ${event.url}: closest ${event.mock ?? '-'}: ${(event.differences ?? []).join('; ')}`);
      },
    });
    return { replayer, pgIndex: new ReplayIndex(pgMocks), counts: { httpMocks: httpMocks.length, pgMocks: pgMocks.length, pgReplayed: 0, pgMissed: 0 } };
  };
  /** `noDelay`: a diagnostic variant that sets TCP_NODELAY on the intercepted socket first (replay.ts does not). */
  const startReplay = async (name: string, set: string, noDelay: boolean): Promise<Replaying> => {
    const r = { set, misses: [] as string[] } as Replaying;
    Object.assign(r, await load(r));
    // replay.ts's handler (no fallback): every connection is answered from the state current when it opens.
    r.proxy = await startCaptureProxy({
      credential,
      onConnection: async (conn: InterceptedConnection) => {
        try {
          if (noDelay && conn.client instanceof net.Socket) conn.client.setNoDelay(true);
          if (isHttpCandidate(conn)) return await replayIntercepted(conn, r.replayer, { ca });
          if (conn.protocol === 'postgres') {
            const counts = r.counts;
            await replayPostgres(conn, r.pgIndex, {
              onMatch: () => void counts.pgReplayed++,
              onMiss: (miss) => {
                counts.pgMissed++;
                if (r.misses.length < 20) r.misses.push(miss.message);
              },
            });
            return;
          }
          r.misses.push(`${conn.protocol} connection to ${conn.target.host}:${conn.target.port}: no ${conn.protocol} mocks can answer it`);
          conn.client.destroy();
        } catch (err) {
          warn(`replaying ${conn.target.host}:${conn.target.port}: ${String(err)}`);
        }
      },
    });
    replaying.set(name, r);
    return r;
  };
  const replayStats = (r: Replaying) => ({ ...r.counts, ...r.replayer.counters, misses: r.misses, readMs: sets.get(r.set)?.readMs ?? 0, parseMs: sets.get(r.set)?.parseMs ?? 0 });

  const ready = { record: { socks: record.socksPort, http: record.httpPort }, tunnel: { socks: pass.socksPort, http: pass.httpPort } };
  const handlers: Handlers = {
    cpu: () => cpuMicros(),
    /** What the recorder captured since the last save or discard, by protocol. */
    captured: () => countBy(captured.map((c) => c.protocol)),
    /** record.ts's ending: the captured mocks, in order, numbered, written as a mock set (then forgotten here). */
    save: async (args) => {
      await Promise.race([Promise.allSettled([...pending]), new Promise((r) => setTimeout(r, 2000).unref())]);
      const mocks = numberMocks(captured.sort((a, b) => a.at - b.at || a.order - b.order).map((c) => c.mock));
      const counts = countBy(captured.map((c) => c.protocol));
      captured = [];
      const file = await store.write(String(args.name), mocks);
      return { file, bytes: statSync(file).size, counts };
    },
    /** Another set holding the first `count` mocks of set `from`, renumbered. */
    saveFirst: async (args) => {
      const mocks = numberMocks((await store.read(String(args.from))).slice(0, Number(args.count)));
      const file = await store.write(String(args.name), mocks);
      return { file, bytes: statSync(file).size, counts: countBy(mocks.map((m) => (m.kind === 'Http' ? 'HTTP' : m.kind))) };
    },
    discard: () => {
      const counts = countBy(captured.map((c) => c.protocol));
      captured = [];
      return counts;
    },
    replayStart: async (args) => {
      const r = await startReplay(String(args.name), String(args.set), args.noDelay === true);
      return { socks: r.proxy.socksPort, http: r.proxy.httpPort, ...replayStats(r) };
    },
    /** A new program run: fresh replayer and index (as a new replayMocks call builds), for connections opened from now on. */
    replayReset: async (args) => {
      const r = replaying.get(String(args.name))!;
      r.misses = [];
      Object.assign(r, await load(r));
      return replayStats(r);
    },
    replayStats: (args) => replayStats(replaying.get(String(args.name))!),
    warnings: () => warnings,
    close: async () => {
      await Promise.all([record.close(), pass.close(), ...[...replaying.values()].map((r) => r.proxy.close())]);
    },
  };
  return { ready, handlers };
}

function countBy(items: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const item of items) out[item] = (out[item] ?? 0) + 1;
  return out;
}

/** This process's CPU time so far (user + system), µs. */
function cpuMicros(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

function listenLocal(server: net.Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0 }, () => resolve((server.address() as net.AddressInfo).port));
  });
}

/** A child's entry: answers the bench's calls until `close`; ends when the bench goes away. */
async function childMain(role: string, args: string[]): Promise<void> {
  process.on('disconnect', () => process.exit(0));
  const started = role === 'origin' ? await originMain() : role === 'proxy' ? await proxyMain(args[0]!, args[1]!) : undefined;
  if (!started) throw new Error(`unknown role ${role}`);
  const { handlers } = started;
  process.on('message', (message: ChildMessage) => {
    if (message.type !== 'call') return;
    const answer = (m: Omit<Extract<ChildMessage, { type: 'answer' }>, 'type' | 'id'>, then?: () => void) =>
      process.send!({ type: 'answer', id: message.id, ...m } satisfies ChildMessage, undefined, {}, () => then?.());
    const handler = handlers[message.op];
    if (!handler) return answer({ ok: false, error: `no op ${message.op}` });
    Promise.resolve()
      .then(() => handler(message.args))
      .then(
        (value) => answer({ ok: true, value: value ?? null }, message.op === 'close' ? () => process.exit(0) : undefined),
        (err: unknown) => answer({ ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
      );
  });
  process.send!({ type: 'ready', value: started.ready } satisfies ChildMessage);
}

// ---------------------------------------------------------------- the bench's side of a child

class Child {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  private exited: Error | undefined;

  private constructor(
    readonly role: string,
    private readonly proc: ChildProcess,
    private readonly log: { text: string },
  ) {
    proc.on('message', (m: ChildMessage) => {
      if (m.type !== 'answer') return;
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.ok) p?.resolve(m.value);
      else p?.reject(new Error(`${role} ${m.error}`));
    });
    proc.once('exit', (code, signal) => {
      this.exited = new Error(`the ${role} process exited (${code ?? signal}): ${this.log.text.slice(-2000)}`);
      for (const p of this.pending.values()) p.reject(this.exited);
      this.pending.clear();
    });
  }

  /** Forks this file as `role` in `cwd` (its own process group) and waits for its ready message. */
  static async start(role: 'origin' | 'proxy', cwd: string, args: string[] = []): Promise<{ child: Child; ready: any }> {
    const profile = role === 'proxy' && PROFILE_DIR ? ['--cpu-prof', '--cpu-prof-dir', path.resolve(PROFILE_DIR)] : [];
    const execArgv = ['--import', TSX, ...profile];
    const proc = fork(THIS_FILE, [CHILD_FLAG, role, ...args], { cwd, execArgv, detached: true, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    track(proc.pid, `mocks bench ${role}`, true);
    const log = { text: '' };
    drain(proc.stdout, log);
    drain(proc.stderr, log);
    const child = new Child(role, proc, log);
    const ready = new Promise<unknown>((resolve, reject) => {
      const onMessage = (m: ChildMessage) => {
        if (m.type !== 'ready') return;
        proc.off('message', onMessage);
        resolve(m.value);
      };
      proc.on('message', onMessage);
      proc.once('exit', () => reject(child.exited));
      proc.once('error', reject);
    });
    try {
      return { child, ready: await withTimeout(ready, CHILD_START_TIMEOUT_MS, `starting the ${role} process`) };
    } catch (err) {
      await child.close();
      throw new Error(`${String(err)}\n${log.text.slice(-2000)}`, { cause: err });
    }
  }

  call<T = any>(op: string, args: Record<string, unknown> = {}, timeoutMs = CALL_TIMEOUT_MS): Promise<T> {
    if (this.exited) return Promise.reject(this.exited);
    const id = this.nextId++;
    const answer = new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.proc.send({ type: 'call', id, op, args } satisfies ChildMessage, (err) => {
        if (err) {
          this.pending.delete(id);
          reject(err);
        }
      });
    });
    return withTimeout(answer, timeoutMs, `${this.role} ${op}`).finally(() => this.pending.delete(id));
  }

  /** Asks it to close (bounded), then makes sure its whole group is gone. */
  async close(): Promise<void> {
    const pid = this.proc.pid;
    if (!this.exited) {
      await this.call('close', {}, 10_000).catch(() => undefined);
      await waitExit(this.proc, 5000);
    }
    if (pid !== undefined && isAlive(pid)) killPid(pid, true);
    await waitExit(this.proc, 5000);
    untrack(pid);
  }
}

// ---------------------------------------------------------------- the zero-copy relay

/** Compiles bench/splice-relay.c into `dir` with gcc (argv, no shell); a missing gcc fails the run with what to install. */
function buildSpliceRelay(dir: string): string {
  const out = path.join(dir, 'splice-relay');
  try {
    execFileSync('gcc', ['-O2', '-Wall', '-o', out, SPLICE_RELAY_C], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: Buffer };
    if (e.code === 'ENOENT') {
      throw new Error('the mocks bench compiles bench/splice-relay.c (its zero-copy relay row) with gcc, and gcc is not on PATH: install it (scripts/install-deps.sh, or apt-get install gcc)', {
        cause: err,
      });
    }
    throw new Error(`gcc could not compile ${SPLICE_RELAY_C}: ${e.stderr?.toString() ?? e.message}`, { cause: err });
  }
  return out;
}

/** The running relay: its port and pid; `close` ends it (its stdin closes, then SIGKILL if it lingers). */
interface SpliceRelay {
  port: number;
  pid: number;
  close: () => Promise<void>;
}

/** Starts the compiled relay in front of the origin and reads the port it printed. */
async function startSpliceRelay(binary: string, cwd: string, originPort: number): Promise<SpliceRelay> {
  const proc = spawn(binary, [String(originPort)], { cwd, stdio: ['pipe', 'pipe', 'pipe'] });
  track(proc.pid, 'mocks bench splice relay', false);
  const log = { text: '' };
  drain(proc.stderr!, log);
  proc.stdin!.on('error', () => {}); // EPIPE when it is already gone: close() then only waits
  const close = async () => {
    proc.stdin!.end();
    if (!(await waitExit(proc, 5000)) && proc.pid !== undefined) killPid(proc.pid, false);
    await waitExit(proc, 5000);
    untrack(proc.pid);
  };
  try {
    const port = await withTimeout(
      new Promise<number>((resolve, reject) => {
        let out = '';
        proc.stdout!.on('data', (b: Buffer) => {
          out += b.toString();
          if (out.includes('\n')) resolve(Number(out.trim()));
        });
        proc.once('exit', (code, signal) => reject(new Error(`the splice relay exited (${code ?? signal}): ${log.text.slice(-2000)}`)));
        proc.once('error', reject);
      }),
      CHILD_START_TIMEOUT_MS,
      'starting the splice relay',
    );
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`the splice relay printed no port: ${log.text.slice(-2000)}`);
    return { port, pid: proc.pid!, close };
  } catch (err) {
    await close();
    throw err;
  }
}

// ---------------------------------------------------------------- clients

/** Reads exactly `n` bytes from a socket in paused mode (nothing more is consumed). */
function readExactly(socket: net.Socket, n: number, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const done = (err: Error | undefined, value?: Buffer) => {
      clearTimeout(timer);
      socket.off('readable', onReadable);
      socket.off('error', done);
      socket.off('close', onClose);
      if (err) reject(err);
      else resolve(value!);
    };
    const onReadable = () => {
      const b = socket.read(n) as Buffer | null;
      if (b) done(undefined, b);
    };
    const onClose = () => done(new Error('the SOCKS5 proxy closed the connection during the handshake'));
    const timer = setTimeout(() => done(new Error(`SOCKS5 handshake: no answer within ${timeoutMs} ms`)), timeoutMs);
    socket.on('readable', onReadable);
    socket.once('error', done);
    socket.once('close', onClose);
  });
}

/** The user of the bench's proxy credential (the password is new each run: CREDENTIAL). */
const PROXY_USER = 'debugkit';
/** The credential the bench's proxies require, as debugkit hands one to each call's program (its password new each run). */
const CREDENTIAL: ProxyCredential = { ...newProxyCredential(), user: PROXY_USER };

/**
 * What proxychains does for each connect() of the recorded program: a SOCKS5 CONNECT (the
 * credential as username/password, RFC 1929; IPv4 target) to the capture proxy. Resolves with the
 * socket once the proxy has replied, ready to carry the program's bytes.
 */
async function socks5Connect(proxyPort: number, target: { host: string; port: number }, timeoutMs = 10_000): Promise<net.Socket> {
  const socket = net.connect({ host: '127.0.0.1', port: proxyPort });
  socket.setNoDelay(true);
  try {
    await withTimeout(
      new Promise<void>((resolve, reject) => {
        socket.once('connect', () => resolve());
        socket.once('error', reject);
      }),
      timeoutMs,
      `connecting to the SOCKS5 proxy on ${proxyPort}`,
    );
    socket.write(Buffer.from([5, 1, 2]));
    const method = await readExactly(socket, 2, timeoutMs);
    if (method[0] !== 5 || method[1] !== 2) throw new Error(`SOCKS5: the proxy chose method ${method[1]}, not username/password`);
    const user = Buffer.from(CREDENTIAL.user);
    const password = Buffer.from(CREDENTIAL.password);
    socket.write(Buffer.concat([Buffer.from([1, user.length]), user, Buffer.from([password.length]), password]));
    const auth = await readExactly(socket, 2, timeoutMs);
    if (auth[1] !== 0) throw new Error(`SOCKS5: the proxy refused the credential (status ${auth[1]})`);
    const request = Buffer.alloc(10);
    request.set([5, 1, 0, 1, ...target.host.split('.').map(Number)]);
    request.writeUInt16BE(target.port, 8);
    socket.write(request);
    const reply = await readExactly(socket, 10, timeoutMs);
    if (reply[1] !== 0) throw new Error(`SOCKS5: the proxy refused ${target.host}:${target.port} (reply ${reply[1]})`);
    return socket;
  } catch (err) {
    socket.destroy();
    throw err;
  }
}

/** A keep-alive agent whose connections go through a SOCKS5 proxy (one handshake per connection). */
class SocksAgent extends http.Agent {
  constructor(
    private readonly proxyPort: number,
    options: http.AgentOptions,
  ) {
    super(options);
  }

  override createConnection(options: http.ClientRequestArgs, callback?: (err: Error | null, stream: Duplex) => void): Duplex | null | undefined {
    socks5Connect(this.proxyPort, { host: String(options.host), port: Number(options.port) }).then(
      (socket) => callback?.(null, socket),
      (err: Error) => callback?.(err, undefined as unknown as Duplex),
    );
    return undefined;
  }
}

/** How requests of one way reach the origin: the agent, where to connect, and the request target's prefix. */
interface Route {
  agent: http.Agent;
  host: string;
  port: number;
  /** '' (origin form), or `http://host:port` for a plain HTTP proxy (absolute form). */
  prefix: string;
  /** The Host header: the origin's authority whatever the route. */
  authority: string;
  /** Proxy-Authorization, through the HTTP proxy port. */
  proxyAuthorization?: string;
}

interface Got {
  ms: number;
  status: number;
  bytes: number;
  body: string;
}

/** One GET, timed from the request to the end of its body. */
function get(route: Route, target: string, keep: boolean, timeoutMs = REQUEST_TIMEOUT_MS): Promise<Got> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const r = http.request(
      {
        host: route.host,
        port: route.port,
        path: route.prefix + target,
        agent: route.agent,
        headers: { Host: route.authority, ...(route.proxyAuthorization ? { 'Proxy-Authorization': route.proxyAuthorization } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let bytes = 0;
        res.on('data', (b: Buffer) => {
          bytes += b.length;
          if (keep) chunks.push(b);
        });
        res.on('end', () => resolve({ ms: performance.now() - started, status: res.statusCode ?? 0, bytes, body: keep ? Buffer.concat(chunks).toString('utf8') : '' }));
        res.on('error', reject);
      },
    );
    r.setTimeout(timeoutMs, () => r.destroy(new Error(`GET ${target}: no answer within ${timeoutMs} ms`)));
    r.on('error', reject);
    r.end();
  });
}

// ---------------------------------------------------------------- (1) latency

type Way = 'direct' | 'tunnel' | 'record' | 'recordHttp' | 'replay' | 'replayKeys' | 'replayNoDelay' | 'splice';
const WAYS: Way[] = ['direct', 'tunnel', 'record', 'recordHttp', 'replay', 'replayKeys', 'replayNoDelay'];
const REPLAY_WAYS = ['replay', 'replayKeys', 'replayNoDelay'] as const;
const isReplay = (way: Way) => (REPLAY_WAYS as readonly Way[]).includes(way);
/** The ways the throughput phase compares (replay answers from memory: its throughput says nothing about the recorder). */
const THROUGHPUT_WAYS: Way[] = ['direct', 'splice', 'tunnel', 'record', 'recordHttp'];

interface Setup {
  originPort: number;
  record: Ports;
  tunnel: Ports;
  /** Replaying the whole recording, a set of its first KEYS mocks (each URL once), and that set with TCP_NODELAY. */
  replay: Ports;
  replayKeys: Ports;
  replayNoDelay: Ports;
  /** bench/splice-relay.c's port (the client connects to it directly) and its pid (for its CPU time). */
  splice: { port: number; pid: number };
}

function routeFor(way: Way, s: Setup, maxSockets: number): Route {
  const authority = `127.0.0.1:${s.originPort}`;
  const options = { keepAlive: true, maxSockets };
  const socks = (port: number): Route => ({ agent: new SocksAgent(port, options), host: '127.0.0.1', port: s.originPort, prefix: '', authority });
  switch (way) {
    case 'direct':
      return { agent: new http.Agent(options), host: '127.0.0.1', port: s.originPort, prefix: '', authority };
    case 'tunnel':
      return socks(s.tunnel.socks);
    case 'record':
      return socks(s.record.socks);
    case 'recordHttp':
      return {
        agent: new http.Agent(options),
        host: '127.0.0.1',
        port: s.record.http,
        prefix: `http://${authority}`,
        authority,
        proxyAuthorization: `Basic ${Buffer.from(`${CREDENTIAL.user}:${CREDENTIAL.password}`).toString('base64')}`,
      };
    case 'replay':
      return socks(s.replay.socks);
    case 'replayKeys':
      return socks(s.replayKeys.socks);
    case 'replayNoDelay':
      return socks(s.replayNoDelay.socks);
    case 'splice':
      return { agent: new http.Agent(options), host: '127.0.0.1', port: s.splice.port, prefix: '', authority };
  }
}

/** A request's answer must be the origin's for that URL, whichever way it went. */
function checkItem(way: Way, i: number, got: Got): void {
  const want = itemBody((i % KEYS) + 1);
  if (got.status !== 200 || got.body !== want) throw new Error(`${way}: GET ${itemPath(i)} answered ${got.status} ${got.body.slice(0, 300)}; expected ${want}`);
}

interface LatencyData {
  samples: Record<Way, number[]>;
  /** Proxy-process CPU per request, µs (mean over the timed rounds). */
  cpuPerRequest: Record<Way, number>;
  /** The replayed sets: mocks, bytes of YAML, and the time reading each back took. */
  sets: Record<'replay' | 'replayKeys', { mocks: number; bytes: number; readMs: number; parseMs: number }>;
  seconds: number;
}

/** Per latency way (the splice relay is in (2) only). */
function emptyByWay<T>(make: () => T): Record<Way, T> {
  return Object.fromEntries(WAYS.map((w) => [w, make()])) as Record<Way, T>;
}

async function measureLatency(proxy: Child, routes: Record<Way, Route>, sets: LatencyData['sets']): Promise<LatencyData> {
  const started = performance.now();
  const samples = emptyByWay<number[]>(() => []);
  const cpu = emptyByWay(() => 0);
  const issued = emptyByWay(() => 0);
  for (const way of WAYS) {
    for (let i = 0; i < (isReplay(way) ? REPLAY_WARMUP : WARMUP); i++) checkItem(way, i, await get(routes[way], itemPath(i), true));
    issued[way] += isReplay(way) ? REPLAY_WARMUP : WARMUP;
  }
  const rounds = Math.ceil(REQUESTS / ROUND);
  for (let round = 0; round < rounds; round++) {
    const first = WARMUP + round * ROUND;
    for (let k = 0; k < WAYS.length; k++) {
      const way = WAYS[(round + k) % WAYS.length]!;
      const last = Math.min(WARMUP + REQUESTS, first + (isReplay(way) ? REPLAY_ROUND : ROUND));
      const before = await proxy.call<number>('cpu');
      for (let i = first; i < last; i++) {
        const got = await get(routes[way], itemPath(i), true);
        samples[way].push(got.ms);
        checkItem(way, i, got);
      }
      cpu[way] += (await proxy.call<number>('cpu')) - before;
      issued[way] += last - first;
    }
  }
  const captured = await proxy.call<Record<string, number>>('discard');
  for (const way of REPLAY_WAYS) {
    const stats = await proxy.call<{ replayed: number; missed: number; misses: string[] }>('replayStats', { name: way });
    if (stats.missed !== 0 || stats.replayed !== issued[way]) {
      throw new Error(`${way} answered ${stats.replayed} of ${issued[way]} requests from mocks, missed ${stats.missed}: ${stats.misses.join('\n')}`);
    }
  }
  // Both recording ways went to the same recorder: one mock per request each.
  const want = issued.record + issued.recordHttp;
  if (captured.HTTP !== want) throw new Error(`the recorder captured ${captured.HTTP} mocks for ${want} requests`);
  const perRequest = Object.fromEntries(WAYS.map((w) => [w, cpu[w] / samples[w].length])) as Record<Way, number>;
  return { samples, cpuPerRequest: perRequest, sets, seconds: (performance.now() - started) / 1000 };
}

// ---------------------------------------------------------------- (2) throughput

interface ThroughputData {
  /** Per way: MB/s of each download. */
  big: Record<string, number[]>;
  /** Per way: requests/s of each run, and the proxy's CPU per request (µs). */
  small: Record<string, number[]>;
  smallCpu: Record<string, number>;
  seconds: number;
}

async function measureThroughput(proxy: Child, s: Setup, routes: Record<Way, Route>): Promise<ThroughputData> {
  const started = performance.now();
  const bytes = BIG_MB * 1_000_000;
  const big: Record<string, number[]> = {};
  for (const way of THROUGHPUT_WAYS) big[way] = [];
  // One untimed download per way first: the first one of a process (JIT, buffer pools) ran at a
  // fraction of the later ones', and always fell to direct, the first way of the rotation.
  for (const way of THROUGHPUT_WAYS) await get(routes[way], `/big?bytes=${bytes}`, false, BIG_TIMEOUT_MS);
  for (let run = 0; run < BIG_RUNS; run++) {
    for (let k = 0; k < THROUGHPUT_WAYS.length; k++) {
      const way = THROUGHPUT_WAYS[(run + k) % THROUGHPUT_WAYS.length]!;
      const got = await get(routes[way], `/big?bytes=${bytes}`, false, BIG_TIMEOUT_MS);
      if (got.status !== 200 || got.bytes !== bytes) throw new Error(`${way}: the download answered ${got.status} with ${got.bytes} of ${bytes} bytes`);
      big[way]!.push(bytes / 1e6 / (got.ms / 1000));
    }
  }
  const bigMocks = await proxy.call<Record<string, number>>('discard');
  const recordedBig = 2 * (BIG_RUNS + 1);
  if (bigMocks.HTTP !== recordedBig) throw new Error(`the recorder captured ${bigMocks.HTTP} mocks for ${recordedBig} downloads`);

  // PARALLEL keep-alive connections per way, each issuing requests back to back for PARALLEL_MS.
  const parallel = Object.fromEntries(THROUGHPUT_WAYS.map((w) => [w, routeFor(w, s, PARALLEL)])) as Record<Way, Route>;
  const small: Record<string, number[]> = {};
  const cpuSum: Record<string, { micros: number; requests: number }> = {};
  for (const way of THROUGHPUT_WAYS) {
    small[way] = [];
    cpuSum[way] = { micros: 0, requests: 0 };
  }
  try {
    for (const way of THROUGHPUT_WAYS) {
      // Open every connection (and warm it) untimed.
      await Promise.all(
        Array.from({ length: PARALLEL }, async (_, c) => {
          for (let i = 0; i < 20; i++) checkItem(way, c + i, await get(parallel[way], itemPath(c + i), true));
        }),
      );
    }
    // An untimed round per way (the first timed run of direct used to come out at a quarter of the rest).
    for (const way of THROUGHPUT_WAYS) {
      const deadline = performance.now() + PARALLEL_MS / 2;
      await Promise.all(
        Array.from({ length: PARALLEL }, async (_, c) => {
          for (let i = c; performance.now() < deadline; i += PARALLEL) await get(parallel[way], itemPath(i), false);
        }),
      );
    }
    await proxy.call('discard');
    for (let run = 0; run < PARALLEL_RUNS; run++) {
      for (let k = 0; k < THROUGHPUT_WAYS.length; k++) {
        const way = THROUGHPUT_WAYS[(run + k) % THROUGHPUT_WAYS.length]!;
        // The relay's CPU from /proc (10 ms ticks: fine over a run of thousands of requests).
        const cpuNow = () => (way === 'splice' ? Promise.resolve(processCpuMicros(s.splice.pid)) : proxy.call<number>('cpu'));
        const before = await cpuNow();
        let done = 0;
        const t = performance.now();
        const deadline = t + PARALLEL_MS;
        await Promise.all(
          Array.from({ length: PARALLEL }, async (_, c) => {
            for (let i = c; performance.now() < deadline; i += PARALLEL) {
              const got = await get(parallel[way], itemPath(i), false);
              if (got.status !== 200) throw new Error(`${way}: GET ${itemPath(i)} answered ${got.status}`);
              done++;
            }
          }),
        );
        const elapsed = performance.now() - t;
        cpuSum[way]!.micros += (await cpuNow()) - before;
        cpuSum[way]!.requests += done;
        small[way]!.push(done / (elapsed / 1000));
        const captured = await proxy.call<Record<string, number>>('discard');
        const want = way === 'record' || way === 'recordHttp' ? done : 0;
        if ((captured.HTTP ?? 0) !== want) throw new Error(`${way}: the recorder captured ${captured.HTTP ?? 0} mocks for ${want} requests`);
      }
    }
  } finally {
    for (const r of Object.values(parallel)) r.agent.destroy();
  }
  const smallCpu = Object.fromEntries(THROUGHPUT_WAYS.map((w) => [w, cpuSum[w]!.micros / Math.max(1, cpuSum[w]!.requests)]));
  return { big, small, smallCpu, seconds: (performance.now() - started) / 1000 };
}

// ---------------------------------------------------------------- (3) PostgreSQL

type PgWay = 'direct' | 'record' | 'replay' | 'replayStopped';

interface PgRun {
  connectMs: number;
  workMs: number;
  queries: number;
  /** Each query's round trip, ms. */
  latencies: number[];
  /** Proxy-process CPU during the workload, µs. */
  cpu: number;
  /** Direct: the PostgreSQL backend's CPU during the workload, µs (from /proc, in clock ticks). */
  serverCpu?: number;
}

/** CPU time (user + system) of a process so far, µs, from /proc/<pid>/stat (clock ticks: 10 ms steps). */
function processCpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the line, 12 and 13 after "pid (comm) ".
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS;
}

/** USER_HZ: 100 on Linux (getconf CLK_TCK). */
const CLOCK_TICKS = 100;

interface PgData {
  runs: Record<PgWay, PgRun[]>;
  /** The recorded set: mocks, bytes of YAML, and the time reading it back took. */
  set: { mocks: number; bytes: number; readMs: number };
  replayed: number;
  seconds: number;
}

/**
 * The workload, on a fresh connection: PG_SELECTS parameterized SELECTs by primary key (ids in a
 * fixed order), an INSERT after every INSERT_EVERY of them. Every answer is checked. `stream`
 * (through a proxy) is a socket the SOCKS5 handshake already went through.
 */
async function pgWorkload(server: { port: number; user: string; password: string }, proxy: Child, viaSocks: number | undefined): Promise<PgRun> {
  const socket = viaSocks === undefined ? undefined : await socks5Connect(viaSocks, { host: '127.0.0.1', port: server.port });
  if (socket) {
    // pg calls connect() on the stream it is given: this one is connected already.
    Object.assign(socket, { connect: () => (process.nextTick(() => socket.emit('connect')), socket) });
  }
  const client = new pg.Client({
    host: '127.0.0.1',
    port: server.port,
    user: server.user,
    password: server.password,
    database: 'postgres',
    connectionTimeoutMillis: 10_000,
    query_timeout: 10_000,
    ...(socket ? { stream: () => socket } : {}),
  });
  client.on('error', () => {});
  try {
    let t = performance.now();
    await client.connect();
    const connectMs = performance.now() - t;
    // Direct: the server's side of the connection, whose CPU time the run reads from /proc.
    const backend = viaSocks === undefined ? Number((await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid) : undefined;
    const serverBefore = backend === undefined ? 0 : processCpuMicros(backend);
    const before = await proxy.call<number>('cpu');
    const latencies: number[] = [];
    t = performance.now();
    for (let i = 0; i < PG_SELECTS; i++) {
      const id = ((i * 37) % PG_ROWS) + 1;
      let q = performance.now();
      const r = await client.query('SELECT id, name, price FROM items WHERE id = $1', [id]);
      latencies.push(performance.now() - q);
      if (r.rows.length !== 1 || r.rows[0].name !== `item-${id}`) throw new Error(`SELECT id = ${id} returned ${JSON.stringify(r.rows).slice(0, 300)}`);
      if (i % INSERT_EVERY === INSERT_EVERY - 1) {
        q = performance.now();
        const w = await client.query('INSERT INTO events (item, note) VALUES ($1, $2)', [id, `bench-note-${i}`]);
        latencies.push(performance.now() - q);
        if (w.rowCount !== 1) throw new Error(`INSERT returned rowCount ${w.rowCount}`);
      }
    }
    const workMs = performance.now() - t;
    const cpu = (await proxy.call<number>('cpu')) - before;
    const serverCpu = backend === undefined ? undefined : processCpuMicros(backend) - serverBefore;
    return { connectMs, workMs, queries: latencies.length, latencies, cpu, ...(serverCpu === undefined ? {} : { serverCpu }) };
  } finally {
    await withTimeout(client.end(), 5000, 'closing the pg client').catch(() => socket?.destroy());
  }
}

/** The postmaster of the connection's server (the parent of its backend), so an abort can kill it. */
async function postmasterOf(client: pg.Client): Promise<{ pid: number; dataDir: string }> {
  const backend = Number((await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
  const status = readFileSync(`/proc/${backend}/status`, 'utf8');
  const pid = Number(/^PPid:\s+(\d+)/m.exec(status)?.[1]);
  return { pid, dataDir: readlinkSync(`/proc/${pid}/cwd`) };
}

async function measurePostgres(proxy: Child, s: Setup): Promise<PgData> {
  const started = performance.now();
  let server: RunningPostgres | undefined;
  let postmaster: { pid: number; dataDir: string } | undefined;
  const phase = (what: string) => process.stdout.write(`mocks:   ${what}\n`);
  try {
    server = await withTimeout(startPostgres(), PG_START_TIMEOUT_MS, 'starting PostgreSQL');
    const admin = new pg.Client({ host: '127.0.0.1', port: server.port, user: server.user, password: server.password, database: 'postgres', connectionTimeoutMillis: 10_000, query_timeout: 30_000 });
    admin.on('error', () => {});
    await admin.connect();
    try {
      postmaster = await postmasterOf(admin);
      track(postmaster.pid, 'postgres', false);
      // Its temporary directory (the data directory's parent): removed on an abort too.
      trackTempDir(path.dirname(postmaster.dataDir));
      await admin.query('CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, price numeric(10, 2) NOT NULL, tags text[] NOT NULL)');
      await admin.query(`INSERT INTO items SELECT g, 'item-' || g, g * 1.25, ARRAY['bench', CASE WHEN g % 2 = 0 THEN 'even' ELSE 'odd' END] FROM generate_series(1, ${PG_ROWS}) g`);
      await admin.query('CREATE TABLE events (id serial PRIMARY KEY, item int NOT NULL, note text NOT NULL, at timestamptz NOT NULL DEFAULT now())');
      await admin.query('ANALYZE items');
    } finally {
      await withTimeout(admin.end(), 5000, 'closing the pg client').catch(() => undefined);
    }
    const pgServer = server;

    // The recording: the workload once through the recorder, saved as a set, then replayed from the file.
    phase('recording the workload once');
    await proxy.call('discard');
    await withTimeout(pgWorkload(pgServer, proxy, s.record.socks), PG_RUN_TIMEOUT_MS, 'the recorded workload');
    const saved = await proxy.call<{ bytes: number; counts: Record<string, number> }>('save', { name: 'pg-workload' });
    const replayStart = await proxy.call<{ socks: number; readMs: number }>('replayStart', { name: 'pg', set: 'pg-workload' });
    const replayPort = replayStart.socks;

    const ways: PgWay[] = ['direct', 'record', 'replay'];
    const runs: Record<PgWay, PgRun[]> = { direct: [], record: [], replay: [], replayStopped: [] };
    let replayed = 0;
    const once = async (way: PgWay) => {
      const via = way === 'direct' ? undefined : way === 'record' ? s.record.socks : replayPort;
      if (way !== 'direct' && way !== 'record') await proxy.call('replayReset', { name: 'pg' });
      const run = await withTimeout(pgWorkload(pgServer, proxy, via), PG_RUN_TIMEOUT_MS, `the workload (${way})`);
      if (way === 'record') await proxy.call('discard');
      if (way === 'replay' || way === 'replayStopped') {
        const st = await proxy.call<{ pgReplayed: number; pgMissed: number; misses: string[] }>('replayStats', { name: 'pg' });
        if (st.pgMissed !== 0) throw new Error(`the replayer missed ${st.pgMissed} queries: ${st.misses.join('\n')}`);
        replayed += st.pgReplayed;
      }
      return run;
    };
    phase(`${PG_RUNS} runs per way (${ways.join(', ')}), the order rotating`);
    for (const way of ways) await once(way); // warm-up, untimed
    for (let round = 0; round < PG_RUNS; round++) {
      for (let k = 0; k < ways.length; k++) {
        const way = ways[(round + k) % ways.length]!;
        runs[way].push(await once(way));
      }
    }
    // The replay needs no server: stop it, and replay once more.
    phase(`PostgreSQL stopped; replaying ${PG_STOPPED_RUNS} more times`);
    await withTimeout(pgServer.stop(), 60_000, 'stopping PostgreSQL');
    server = undefined;
    for (let i = 0; i < PG_STOPPED_RUNS; i++) runs.replayStopped.push(await once('replayStopped'));
    const set = { mocks: saved.counts.Postgres ?? 0, bytes: saved.bytes, readMs: replayStart.readMs };
    return { runs, set, replayed, seconds: (performance.now() - started) / 1000 };
  } finally {
    if (server) await withTimeout(server.stop(), 60_000, 'stopping PostgreSQL').catch(() => undefined);
    if (postmaster) {
      if (isAlive(postmaster.pid)) killPid(postmaster.pid, false);
      untrack(postmaster.pid);
      releaseTempDir(path.dirname(postmaster.dataDir));
    }
  }
}

// ---------------------------------------------------------------- run

/** BENCH_MOCKS_PARTS=throughput: (2) alone, its table and verdict. */
async function throughputOnly(p: Child, setup: Setup, routes: Partial<Record<Way, Route>>, phase: (what: string) => void, load: number[]): Promise<BenchResult> {
  if (PARTS!.join(',') !== 'throughput') throw new Error(`BENCH_MOCKS_PARTS=${PARTS!.join(',')}: the only part that runs alone is throughput`);
  if (process.env.BENCH_NO_WRITE !== '1') throw new Error('BENCH_MOCKS_PARTS runs part of the mocks bench: set BENCH_NO_WRITE=1 too (BENCHMARKS.md keeps whole runs)');
  for (const way of THROUGHPUT_WAYS) routes[way] = routeFor(way, setup, 1);
  phase(`(2) throughput: ${BIG_RUNS} downloads of ${BIG_MB} MB per way; ${PARALLEL_RUNS} runs of ${PARALLEL} connections for ${PARALLEL_MS} ms per way`);
  const throughput = await measureThroughput(p, setup, routes as Record<Way, Route>);
  const warnings = await p.call<string[]>('warnings');
  if (warnings.length > 0) throw new Error(`the capture proxy warned: ${warnings.join('\n')}`);
  const { bigMed, smallMed, table } = throughputReport(throughput);
  const worst = Math.min(bigMed.record! / bigMed.splice!, smallMed.record! / smallMed.splice!);
  return {
    name: 'mocks',
    date: new Date(),
    machine: [['load average (1 min) before/after', `${load[0]!.toFixed(2)} / ${load[1]!.toFixed(2)}`]],
    summary: "The recorder's throughput rows alone (BENCH_MOCKS_PARTS=throughput).",
    method: [],
    tables: [table],
    verdicts: [{ goal: `the recorder at least ${RELAY_GOAL}x of the zero-copy C relay`, met: worst >= RELAY_GOAL, detail: `worst ${worst.toFixed(2)}x: ${throughputDetail(bigMed, smallMed)}` }],
  };
}

async function run(): Promise<BenchResult> {
  const loadBefore = os.loadavg()[0]!;
  const pgVersionLine = execFileSync(path.join(findPostgresBin(), 'postgres'), ['--version'], { encoding: 'utf8', timeout: 10_000 }).trim();
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'debugkit-bench-mocks-')));
  trackTempDir(root);
  const children: Child[] = [];
  const routes: Partial<Record<Way, Route>> = {};
  const phase = (what: string) => process.stdout.write(`mocks: ${what}\n`);
  let relay: SpliceRelay | undefined;
  try {
    const t = performance.now();
    const relayBinary = buildSpliceRelay(root);
    const origin = await Child.start('origin', root);
    children.push(origin.child);
    const proxy = await Child.start('proxy', root, [root, CREDENTIAL.password]);
    children.push(proxy.child);
    const p = proxy.child;
    relay = await startSpliceRelay(relayBinary, root, origin.ready.port);
    const none = { socks: 0, http: 0 };
    const setup: Setup = {
      originPort: origin.ready.port,
      record: proxy.ready.record,
      tunnel: proxy.ready.tunnel,
      replay: none,
      replayKeys: none,
      replayNoDelay: none,
      splice: { port: relay.port, pid: relay.pid },
    };
    if (PARTS) return await throughputOnly(p, setup, routes, phase, [loadBefore, os.loadavg()[0]!]);

    // The recording the replay way answers from: the latency sequence once through the recorder
    // (SOCKS5, its own connection, like a program run under keploy_mock_record), saved to a file.
    phase(`recording ${WARMUP + REQUESTS} requests for the replay set`);
    const recorder = routeFor('record', setup, 1);
    try {
      for (let i = 0; i < WARMUP + REQUESTS; i++) checkItem('record', i, await get(recorder, itemPath(i), true));
    } finally {
      recorder.agent.destroy();
    }
    const saved = await p.call<{ bytes: number; counts: Record<string, number> }>('save', { name: 'http-latency' });
    if (saved.counts.HTTP !== WARMUP + REQUESTS) throw new Error(`the recording holds ${saved.counts.HTTP} mocks for ${WARMUP + REQUESTS} requests`);
    const keys = await p.call<{ bytes: number; counts: Record<string, number> }>('saveFirst', { from: 'http-latency', name: 'http-keys', count: KEYS });
    const readMs = { replay: 0, replayKeys: 0, replayNoDelay: 0 };
    const parseMs = { replay: 0, replayKeys: 0, replayNoDelay: 0 };
    for (const [way, set] of [
      ['replay', 'http-latency'],
      ['replayKeys', 'http-keys'],
      ['replayNoDelay', 'http-keys'],
    ] as const) {
      const replay = await p.call<{ socks: number; http: number; readMs: number; parseMs: number }>('replayStart', { name: way, set, noDelay: way === 'replayNoDelay' });
      parseMs[way] = replay.parseMs;
      setup[way] = { socks: replay.socks, http: replay.http };
      readMs[way] = replay.readMs;
    }
    for (const way of [...WAYS, 'splice'] as const) routes[way] = routeFor(way, setup, 1);
    const setupSeconds = (performance.now() - t) / 1000;

    phase(`(1) latency: ${WARMUP} + ${REQUESTS} sequential requests per way (${REPLAY_WARMUP} + ${Math.ceil(REQUESTS / ROUND) * REPLAY_ROUND} replayed), rounds of ${ROUND}`);
    const sets = {
      replay: { mocks: saved.counts.HTTP!, bytes: saved.bytes, readMs: readMs.replay, parseMs: parseMs.replay },
      replayKeys: { mocks: keys.counts.HTTP!, bytes: keys.bytes, readMs: readMs.replayKeys, parseMs: parseMs.replayKeys },
    };
    const latency = await measureLatency(p, routes as Record<Way, Route>, sets);
    phase(`(2) throughput: ${BIG_RUNS} downloads of ${BIG_MB} MB per way; ${PARALLEL_RUNS} runs of ${PARALLEL} connections for ${PARALLEL_MS} ms per way`);
    const throughput = await measureThroughput(p, setup, routes as Record<Way, Route>);
    phase(`(3) PostgreSQL: ${PG_SELECTS} SELECTs + ${Math.floor(PG_SELECTS / INSERT_EVERY)} INSERTs per run`);
    const pgData = await measurePostgres(p, setup);
    const warnings = await p.call<string[]>('warnings');
    if (warnings.length > 0) throw new Error(`the capture proxy warned: ${warnings.join('\n')}`);
    return report({ latency, throughput, pg: pgData, pgVersionLine, setupSeconds, load: [loadBefore, os.loadavg()[0]!] });
  } finally {
    for (const r of Object.values(routes)) r.agent.destroy();
    await relay?.close();
    for (const child of children.reverse()) await child.close();
    const killed = releaseTempDir(root);
    if (killed.length > 0) process.stderr.write(`bench: killed leftover processes: ${killed.join(', ')}\n`);
  }
}

// ---------------------------------------------------------------- report

const median = (samples: number[]) =>
  percentile(
    [...samples].sort((a, b) => a - b),
    50,
  );
const sum = (values: number[]) => values.reduce((s, v) => s + v, 0);
const ratio = (a: number, b: number) => (Number.isFinite(a / b) ? `${(a / b).toFixed(2)}x` : 'n/a');
const us = (micros: number) => (Number.isFinite(micros) ? micros.toFixed(0) : 'n/a');
const fixed = (v: number, digits = 0) => (Number.isFinite(v) ? v.toFixed(digits) : 'n/a');

interface RunData {
  latency: LatencyData;
  throughput: ThroughputData;
  pg: PgData;
  pgVersionLine: string;
  setupSeconds: number;
  load: [number, number];
}

const WAY_LABELS: Record<Way, string> = {
  direct: 'direct to the origin (baseline)',
  tunnel: 'capture proxy, pass-through only (SOCKS5, `tunnel()`)',
  record: '**recorder** (SOCKS5, as proxychains connects)',
  recordHttp: '**recorder** via the HTTP proxy port (absolute-form requests)',
  replay: '**replay**: HttpReplayer (SOCKS5)',
  replayKeys: '**replay**: HttpReplayer (SOCKS5)',
  replayNoDelay: 'replay as the row above, TCP_NODELAY set on the intercepted socket first (diagnostic: the proxy now sets it on every accepted socket, so this matches the row above)',
  splice: 'zero-copy relay in C, no recording (diagnostic: the least any hop costs; no SOCKS5, the client connects to it directly)',
};

/** The throughput verdict's detail: the recorder against direct, and what even the C relay reaches. */
function throughputDetail(bigMed: Record<string, number>, smallMed: Record<string, number>): string {
  const spliceWorst = Math.min(bigMed.splice! / bigMed.direct!, smallMed.splice! / smallMed.direct!);
  return (
    `against the relay ${ratio(bigMed.record!, bigMed.splice!)} on the download and ${ratio(smallMed.record!, smallMed.splice!)} on small requests; against direct ` +
    `${ratio(bigMed.record!, bigMed.direct!)} on the ${BIG_MB} MB download (${fixed(bigMed.record!)} vs ${fixed(bigMed.direct!)} MB/s), ` +
    `${ratio(smallMed.record!, smallMed.direct!)} on small requests over ${PARALLEL} connections (${fixed(smallMed.record!)} vs ${fixed(smallMed.direct!)} req/s); ` +
    `via the HTTP proxy port ${ratio(bigMed.recordHttp!, bigMed.direct!)} and ${ratio(smallMed.recordHttp!, smallMed.direct!)}; ` +
    `the pass-through proxy alone ${ratio(bigMed.tunnel!, bigMed.direct!)} and ${ratio(smallMed.tunnel!, smallMed.direct!)}; ` +
    // Worded from this run's figures: the relay does not always stay under the goal.
    (spliceWorst < THROUGHPUT_GOAL ? 'even a zero-copy C relay (splice, no SOCKS5, no recording) reaches only ' : 'a zero-copy C relay (splice, no SOCKS5, no recording) reaches ') +
    `${ratio(bigMed.splice!, bigMed.direct!)} / ${ratio(smallMed.splice!, smallMed.direct!)} (download / small requests) with ${os.cpus().length} CPUs for three processes`
  );
}

/** The throughput table, and the medians per way (MB/s of the download, requests/s of the small requests). */
function throughputReport(throughput: ThroughputData): { bigMed: Record<string, number>; smallMed: Record<string, number>; table: Table } {
  const bigMed = Object.fromEntries(THROUGHPUT_WAYS.map((w) => [w, median(throughput.big[w]!)]));
  const smallMed = Object.fromEntries(THROUGHPUT_WAYS.map((w) => [w, median(throughput.small[w]!)]));
  const table: Table = {
    title: 'Throughput through the recorder',
    columns: ['way', `${BIG_MB} MB download, MB/s`, 'vs direct', `small requests, ${PARALLEL} connections, req/s`, 'vs direct', 'proxy CPU per small request, µs'],
    rows: THROUGHPUT_WAYS.map((w) => [
      WAY_LABELS[w],
      `${fixed(bigMed[w]!)} (${throughput.big[w]!.map((v) => fixed(v)).join(', ')})`,
      w === 'direct' ? '—' : ratio(bigMed[w]!, bigMed.direct!),
      `${fixed(smallMed[w]!)} (${throughput.small[w]!.map((v) => fixed(v)).join(', ')})`,
      w === 'direct' ? '—' : ratio(smallMed[w]!, smallMed.direct!),
      w === 'direct' ? '—' : us(throughput.smallCpu[w]!),
    ]),
    note:
      `Medians, each run in parentheses (MB = 10^6 bytes). "vs direct": the way's median over direct's (the goal for the recorder: at least ${RELAY_GOAL}x of the C relay's, since no hop reaches ${THROUGHPUT_GOAL}x of direct here). ` +
      `The client, the proxy and the origin share this machine's ${os.cpus().length} CPUs: direct has two busy processes, the other ways three, so ` +
      "the proxy's CPU per request comes out of the client's and the origin's share.",
  };
  return { bigMed, smallMed, table };
}

function report({ latency, throughput, pg: pgData, pgVersionLine, setupSeconds, load }: RunData): BenchResult {
  const stats = Object.fromEntries(WAYS.map((w) => [w, summarize(latency.samples[w])])) as Record<Way, Summary>;
  const d = stats.direct;
  const latencyTable: Table = {
    title: 'Latency per HTTP request (sequential, one keep-alive connection per way), ms',
    columns: ['way', 'n', 'p50', 'p99', 'mean', '+p50 vs direct', '+p99 vs direct', '+mean vs direct', 'proxy CPU per request, µs'],
    rows: WAYS.map((w) => {
      const x = stats[w];
      const label =
        w === 'replay'
          ? `${WAY_LABELS[w]} over the whole recording (${latency.sets.replay.mocks} mocks)`
          : w === 'replayKeys'
            ? `${WAY_LABELS[w]} over its first ${latency.sets.replayKeys.mocks} mocks (each URL once)`
            : WAY_LABELS[w];
      const plus = (v: number) => (w === 'direct' ? '—' : ms(v, true));
      return [label, String(x.n), ms(x.p50), ms(x.p99), ms(x.mean), plus(x.p50 - d.p50), plus(x.p99 - d.p99), plus(x.mean - d.mean), w === 'direct' ? '—' : us(latency.cpuPerRequest[w])];
    }),
    note:
      'Each "+" figure is a difference of the two distributions\' percentiles (or means), not a percentile of per-request differences. ' +
      '"proxy CPU": user + system CPU time of the capture-proxy process (debugkit\'s side) over the timed requests of that way, per request. ' +
      `p99 is the slowest 1% (${Math.ceil(stats.direct.n / 100)} of ${stats.direct.n} requests, ${Math.ceil(stats.replay.n / 100)} of ${stats.replay.n} replayed): ` +
      "on this VM scheduling stalls dominate it, and a negative figure means the way's tail happened to be quieter than direct's. " +
      "Replay: the replayer's node:http answer leaves through the StreamBridge in separate writes (head, then body), and replay.ts leaves " +
      "Nagle's algorithm on the intercepted socket (`tunnel()` and `connectTcp` set TCP_NODELAY on theirs), so the body waits for the " +
      "client's delayed ACK of the head, some 40 ms on Linux; the TCP_NODELAY row is the same replay without that wait. The rest grows " +
      'with the set: `HttpMatcher.match` scores each request against every mock of the set (compare the proxy CPU of the first two replay rows).',
  };

  const { bigMed, smallMed, table: throughputTable } = throughputReport(throughput);

  const pgWays: Array<[PgWay, string]> = [
    ['direct', 'the real server, directly (baseline)'],
    ['record', '**recorder** (SOCKS5 to the capture proxy, `recordPostgres` to the server)'],
    ['replay', `**replay**: \`replayPostgres\` over the ${pgData.set.mocks} recorded mocks (SOCKS5)`],
    ['replayStopped', '**replay**, the server stopped'],
  ];
  const qps = (r: PgRun) => r.queries / (r.workMs / 1000);
  const pgQps = Object.fromEntries(pgWays.map(([w]) => [w, median(pgData.runs[w].map(qps))])) as Record<PgWay, number>;
  // Each round runs every way once, back to back: the ratio within a round cancels the machine's drift between rounds.
  const pairedRatios = pgData.runs.replay.map((r, i) => qps(r) / qps(pgData.runs.direct[i]!));
  const pgPaired = { median: median(pairedRatios), min: Math.min(...pairedRatios), max: Math.max(...pairedRatios) };
  const queriesPerRun = pgData.runs.direct[0]?.queries ?? 0;
  const pgTable: Table = {
    title: `PostgreSQL workload: ${queriesPerRun} queries per run on one connection`,
    columns: ['way', 'runs', 'connect, ms', 'workload, ms', 'queries/s', 'min', 'max', 'vs direct', 'query p50, ms', 'query p99, ms', 'CPU per query, µs'],
    rows: pgWays.map(([w, label]) => {
      const rs = pgData.runs[w];
      const q = rs.map(qps);
      const lat = summarize(rs.flatMap((r) => r.latencies));
      return [
        label,
        String(rs.length),
        ms(median(rs.map((r) => r.connectMs))),
        fixed(median(rs.map((r) => r.workMs)), 1),
        fixed(pgQps[w]),
        fixed(Math.min(...q)),
        fixed(Math.max(...q)),
        w === 'direct' ? '—' : ratio(pgQps[w], pgQps.direct),
        ms(lat.p50),
        ms(lat.p99),
        w === 'direct' ? `${us(sum(rs.map((r) => r.serverCpu ?? NaN)) / sum(rs.map((r) => r.queries)))} (server)` : us(median(rs.map((r) => r.cpu / r.queries))),
      ];
    }),
    note:
      '"queries/s": the run\'s queries over the time from the first query to the last answer (connecting is apart, in "connect"); medians over the runs. ' +
      '"query p50/p99": each query\'s round trip in node-postgres (`await client.query`), pooled over the runs. ' +
      '"CPU per query": the capture-proxy process\'s CPU time during the workload, per query (median over the runs); for direct, the ' +
      "PostgreSQL backend's (the process serving the connection, from /proc in 10 ms clock ticks, summed over the runs).",
  };

  const rec = stats.record;
  const recHttp = stats.recordHttp;
  const worstVsRelay = Math.min(bigMed.record! / bigMed.splice!, smallMed.record! / smallMed.splice!);
  const cpu = os.cpus();
  const pgVersion = JSON.parse(readFileSync(path.resolve(import.meta.dirname, '..', 'node_modules/pg/package.json'), 'utf8')) as { version: string };
  return {
    name: 'mocks',
    date: new Date(),
    machine: [
      ['CPU', `${cpu[0]?.model.trim() ?? 'unknown'}, ${cpu.length} cores`],
      ['OS', `${os.type()} ${os.release()} ${os.arch()}`],
      ['Node', process.version],
      ['PostgreSQL', `${pgVersionLine}; node-postgres ${pgVersion.version}`],
      ['load average (1 min) before/after', `${load[0].toFixed(2)} / ${load[1].toFixed(2)}`],
    ],
    summary:
      'What the mocks toolset costs the traffic of the program it records or replays: the latency one HTTP request gains through the recorder ' +
      '(and when answered by the replayer), throughput through the recorder against direct (a large download, many small requests in parallel), ' +
      'and the queries per second of a PostgreSQL workload against the real server, through the recorder, and answered by the replayer.',
    method: [
      'Three processes, as when debugkit records a program: the origin (a node:http server in a child process: `/items/<k>` answers ' +
        `${Buffer.byteLength(itemBody(1))} bytes of JSON with Content-Length, \`/big\` streams 64 KiB writes), debugkit's side (a child process with ` +
        'capture proxies from `startCaptureProxy`: a pass-through one whose handler is `tunnel()`; a recording one with the handler of ' +
        'src/toolsets/mocks/record.ts — `recordIntercepted` for HTTP, `connectTcp` + `recordPostgres` for PostgreSQL, mocks kept in memory; and ' +
        'replaying ones with the handler of replay.ts, no fallback), and the client, the program, in the bench process. The children are bench/mocks.ts ' +
        'forked with `--import tsx`, in their own temporary directory with a fresh debugkit CA.',
      'Through a proxy the client does what proxychains4 (how `keploy_mock_record` captures a program) does on each connect(): a SOCKS5 CONNECT ' +
        '(no authentication, IPv4 target 127.0.0.1:<port>) to the capture proxy, once per connection, then its HTTP or PostgreSQL bytes. ' +
        'HTTP clients honouring HTTP_PROXY (curl, Python) reach the proxy\'s HTTP port instead: the "via the HTTP proxy port" row sends absolute-form ' +
        'requests (`GET http://127.0.0.1:<port>/items/1`) there, which the proxy rewrites to origin form for the recorder.',
      `(1) latency: node:http with a keep-alive Agent (maxSockets 1) per way, ${WARMUP} untimed then ${REQUESTS} timed sequential GETs ` +
        `\`/items/<k>\` (${KEYS} distinct URLs in a fixed order), timed from \`http.request\` to the end of the body; in rounds of ${ROUND} per way, ` +
        "the order rotating each round. Every answer is checked equal to the origin's. The replay sets: the same request sequence recorded once " +
        `(untimed, before the rounds) through the recorder and written with \`MockStore\` as record.ts does (${latency.sets.replay.mocks} mocks, ` +
        `${(latency.sets.replay.bytes / 1e6).toFixed(1)} MB of YAML, read back in ${(latency.sets.replay.readMs / 1000).toFixed(2)} s), and a set of ` +
        `its first ${latency.sets.replayKeys.mocks} mocks (${(latency.sets.replayKeys.bytes / 1e3).toFixed(0)} kB); each answered by ` +
        '`replayIntercepted` + `HttpReplayer` ' +
        '(one replayer per set for the whole phase, as for one program run); every request replayed, none missed. The replay ways take only the ' +
        `first ${REPLAY_ROUND} requests of each round (after ${REPLAY_WARMUP} untimed), as each costs some 40 ms. The recorder captured one mock ` +
        `per request on both of its ways. Took ${latency.seconds.toFixed(1)} s (set-up, including the recording, ${setupSeconds.toFixed(1)} s).`,
      `(2) throughput: ${BIG_RUNS} downloads of ${BIG_MB} MB per way (after one untimed each) on the keep-alive connections of (1), the order rotating, bytes counted; the ` +
        `recorder keeps 1 MiB of the body in the mock (\`body_skipped\` beyond). Small requests: ${PARALLEL} keep-alive connections per way ` +
        `(opened and warmed untimed, then an untimed half-run per way), each issuing \`/items/<k>\` GETs back to back for ${PARALLEL_MS} ms; ${PARALLEL_RUNS} runs per way, the order ` +
        "rotating; requests/s = requests completed over the elapsed time. The recorder's mocks are counted (one per request) and dropped between " +
        `runs. Took ${throughput.seconds.toFixed(1)} s.`,
      "(2) also goes through a diagnostic hop: bench/splice-relay.c, compiled with gcc (-O2) into the run's temporary directory at start, " +
        'a fourth process (C, one thread, edge-triggered epoll, nonblocking sockets with TCP_NODELAY, each direction moved socket → pipe → socket ' +
        'with splice(2), so the bytes never enter user space; no SOCKS5: the client connects to it directly, and it connects to the origin; ' +
        'nothing parsed or recorded). It is the least any out-of-process hop costs here: client, hop and origin are three busy processes ' +
        `on ${os.cpus().length} CPUs. Its CPU per request is its own, from /proc (10 ms clock ticks, summed over the runs).`,
      `(3) PostgreSQL: \`startPostgres()\` (src/toolsets/mocks/postgres/testing.ts: initdb in a temporary directory, fsync off, SCRAM-SHA-256 over ` +
        `TCP), a table of ${PG_ROWS} rows (int primary key, text, numeric, text[]) and an empty \`events\` table. One run = node-postgres \`Client\` on a ` +
        `new connection, then ${PG_SELECTS} \`SELECT id, name, price FROM items WHERE id = $1\` (ids in a fixed order) and an ` +
        `\`INSERT INTO events (item, note) VALUES ($1, $2)\` after every ${INSERT_EVERY}, one at a time, each answer checked. Through a proxy ` +
        'node-postgres gets the socket after the SOCKS5 handshake as its `stream`; a direct run first asks `SELECT pg_backend_pid()` (untimed) ' +
        "to read its backend's CPU time. The replay set: one run recorded through the recorder, saved as " +
        `a set (${pgData.set.mocks} mocks, ${(pgData.set.bytes / 1e6).toFixed(1)} MB of YAML) and read back (in ${(pgData.set.readMs / 1000).toFixed(2)} s, ` +
        'once); each replay run gets a fresh `ReplayIndex`, as ' +
        `each \`keploy_mock_test\` run does (${pgData.replayed} queries replayed in all, none missed). One untimed run per way, then ${PG_RUNS} ` +
        `rounds, the order rotating; then the server is stopped and the replay runs ${PG_STOPPED_RUNS} more times. Took ` +
        `${pgData.seconds.toFixed(1)} s, starting the server included.`,
      'p50/p99: nearest rank. The children, the PostgreSQL server and the temporary directories are gone at the end. `BENCH_MOCKS_*` ' +
        'variables set the sizes (REQUESTS, WARMUP, ROUND, REPLAY_ROUND, BIG_MB, BIG_RUNS, PARALLEL, PARALLEL_MS, PARALLEL_RUNS, PG_QUERIES, ' +
        'PG_RUNS); `BENCH_MOCKS_PROFILE_DIR=<dir>` makes the proxy process write a V8 CPU profile there (`--cpu-prof`); ' +
        '`BENCH_MOCKS_PARTS=throughput` (with `BENCH_NO_WRITE=1`) runs and prints the throughput rows alone.',
    ],
    tables: [latencyTable, throughputTable, pgTable],
    verdicts: [
      {
        goal: `under ${LATENCY_GOAL_MS} ms added per HTTP request through the recorder at p50 (SOCKS5)`,
        met: rec.p50 - d.p50 < LATENCY_GOAL_MS,
        detail:
          `${ms(rec.p50 - d.p50, true)} ms at p50 (${ms(rec.p50)} vs ${ms(d.p50)}), ${ms(rec.p99 - d.p99, true)} ms at p99; ` +
          `via the HTTP proxy port ${ms(recHttp.p50 - d.p50, true)} at p50, ${ms(recHttp.p99 - d.p99, true)} at p99; ` +
          `the pass-through proxy alone ${ms(stats.tunnel.p50 - d.p50, true)} at p50; replay ${ms(stats.replay.p50 - d.p50, true)} at p50 ` +
          `(${ms(stats.replayNoDelay.p50 - d.p50, true)} with TCP_NODELAY on a ${latency.sets.replayKeys.mocks}-mock set)`,
      },
      {
        goal: `the recorder (SOCKS5) at least ${RELAY_GOAL}x of the zero-copy C relay's throughput in the same run`,
        met: worstVsRelay >= RELAY_GOAL,
        detail: throughputDetail(bigMed, smallMed),
      },
      {
        goal: `a ${latency.sets.replay.mocks}-mock HTTP set loads in under ${LOAD_GOAL_MS} ms (as keploy_mock_test loads it)`,
        met: latency.sets.replay.readMs < LOAD_GOAL_MS,
        detail:
          `${fixed(latency.sets.replay.readMs)} ms from the cache of parsed sets (filled when the set was written); parsing its ` +
          `${(latency.sets.replay.bytes / 1e6).toFixed(1)} MB of YAML, as for a set Keploy wrote, read the first time: ${fixed(latency.sets.replay.parseMs)} ms`,
      },
      {
        goal: `a request replayed in under ${REPLAY_P50_GOAL_MS} ms at p50 from a ${latency.sets.replay.mocks}-mock set (as the program sees it)`,
        met: stats.replay.p50 < REPLAY_P50_GOAL_MS,
        detail: `${ms(stats.replay.p50)} ms at p50, ${ms(stats.replay.p99)} at p99 (direct to the origin: ${ms(d.p50)} at p50)`,
      },
      {
        goal: `replaying PostgreSQL at least ${PG_REPLAY_GOAL}x the real server's queries/s (paired by round, median)`,
        met: pgPaired.median >= PG_REPLAY_GOAL,
        detail:
          `${ratio(pgQps.replay, pgQps.direct)}: ${fixed(pgQps.replay)} vs ${fixed(pgQps.direct)} queries/s (paired by round, replay over that round's direct run: ` +
          `median ${pgPaired.median.toFixed(2)}x, ${pgPaired.min.toFixed(2)}-${pgPaired.max.toFixed(2)}x); with the server stopped ${fixed(pgQps.replayStopped)}; ` +
          `through the recorder ${fixed(pgQps.record)} (${ratio(pgQps.record, pgQps.direct)})`,
      },
    ],
  };
}

export const mocksBench: BenchModule = { name: 'mocks', run };

// ---------------------------------------------------------------- entry of a forked child

if (process.argv[2] === CHILD_FLAG && process.argv[1] !== undefined && pathToFileURL(process.argv[1]).href === import.meta.url) {
  childMain(process.argv[3] ?? '', process.argv.slice(4)).catch((err: unknown) => {
    process.stderr.write(`mocks bench child: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
