// The time the control plane adds to one tool call: (1) its own work per call (authenticate,
// authorize, count against the rate limit and quota, write the audit entries before and after),
// with the embedded SQLite store and with PostgreSQL; (2) a whole tools/call over HTTP against
// three servers in this process, side by side: no control plane (the single --api-key check),
// SQLite, PostgreSQL. Calls go round-robin over the three so machine noise falls on all alike.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultConfig } from '../src/config.js';
import { makeKey } from '../src/control/keys.js';
import { ControlPlane } from '../src/control/plane.js';
import { PostgresStore } from '../src/control/postgres.js';
import { SqliteStore } from '../src/control/sqlite.js';
import type { Store } from '../src/control/store.js';
import { controlHooks } from '../src/control/hooks.js';
import { createDebugkit } from '../src/server/createServer.js';
import { serveHttp, type HttpHandle } from '../src/server/http.js';
import { createLogger } from '../src/mcp/log.js';
import { toolsetFactories } from '../src/toolsets/index.js';
import { startPostgres } from '../src/toolsets/mocks/postgres/testing.js';
import { envInt, ms, summarize, type BenchModule, type BenchResult, type Summary, type Table } from './util.js';

const CALLS = envInt('BENCH_CONTROL_CALLS', 600);
const WARMUP = 50;

interface Variant {
  name: string;
  plane?: ControlPlane;
  key: string;
}

async function makePlane(store: Store): Promise<{ plane: ControlPlane; key: string }> {
  const made = makeKey({ name: 'bench', scopes: '*', rate: '1000000/min', quota: '100000000/month' });
  await store.createKey(made.record, made.hash);
  const plane = new ControlPlane({ store, node: { id: 'bench' } });
  // createDebugkit sets the full catalog later; the direct measurement needs the one tool it calls.
  plane.setCatalog([{ name: 'list_sessions', toolset: 'gdb', readOnly: true, scopes: [] }]);
  return { plane, key: made.secret };
}

/** The control plane's work for one call, as the HTTP edge and the tool wrapper do it. */
async function planeWork(plane: ControlPlane, key: string): Promise<number> {
  const started = performance.now();
  const auth = await plane.authenticate(`Bearer ${key}`);
  if (!('key' in auth)) throw new Error('bench key refused');
  if (plane.authorizeTool(auth.key, 'list_sessions')) throw new Error('bench key not authorized');
  const admission = await plane.admit(auth.key, { rate: true, quota: true });
  if (!admission.ok) throw new Error('bench key limited');
  const finish = await plane.beginCall(auth.key, { tool: 'list_sessions', args: {}, client: 'bench/1', transport: 'http', session: 'http:bench' });
  await finish({ ok: true });
  return performance.now() - started;
}

async function openSession(url: string, key: string): Promise<string> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } }),
  });
  await res.text();
  const sid = res.headers.get('mcp-session-id')!;
  await (
    await fetch(url, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18' },
      body: '{"jsonrpc":"2.0","method":"notifications/initialized"}',
    })
  ).text();
  return sid;
}

async function timedCall(url: string, key: string, sid: string, id: number): Promise<number> {
  const started = performance.now();
  const res = await fetch(url, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18' },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'list_sessions', arguments: {} } }),
  });
  const text = await res.text();
  if (res.status !== 200 || !text.includes('"result"')) throw new Error(`tools/call failed: HTTP ${res.status} ${text.slice(0, 200)}`);
  return performance.now() - started;
}

export const controlBench: BenchModule = {
  name: 'control',
  async run(): Promise<BenchResult> {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'debugkit-bench-control-'));
    const pg = await startPostgres();
    const handles: HttpHandle[] = [];
    const closers: Array<() => Promise<void>> = [];
    try {
      const sqlite = await makePlane(new SqliteStore(path.join(dir, 'control.db')));
      const postgres = await makePlane(await PostgresStore.open(`postgres://${pg.user}:${pg.password}@127.0.0.1:${pg.port}/postgres`));
      const variants: Variant[] = [
        { name: 'no control plane', key: 'bench-api-key' },
        { name: 'SQLite', ...sqlite },
        { name: 'PostgreSQL', ...postgres },
      ];

      // (1) The control plane's own work per call.
      const own = new Map<string, number[]>();
      for (const v of variants.slice(1)) {
        for (let i = 0; i < WARMUP; i++) await planeWork(v.plane!, v.key);
        own.set(v.name, []);
      }
      for (let i = 0; i < CALLS; i++) for (const v of variants.slice(1)) own.get(v.name)!.push(await planeWork(v.plane!, v.key));

      // (2) Whole tools/call round trips over HTTP, round-robin over the three servers.
      const servers = [];
      for (const v of variants) {
        const config = defaultConfig({ toolsets: ['gdb'], logLevel: 'error' });
        config.http = { ...config.http, port: 0, apiKey: 'bench-api-key' };
        const dk = createDebugkit(config, { toolsets: toolsetFactories, log: createLogger('error'), ...(v.plane ? { hooks: controlHooks(v.plane) } : {}) });
        const handle = await serveHttp(dk);
        handles.push(handle);
        closers.push(() => dk.close());
        servers.push({ v, url: handle.url, sid: await openSession(handle.url, v.key), samples: [] as number[] });
      }
      let id = 1;
      for (let i = 0; i < WARMUP; i++) for (const s of servers) await timedCall(s.url, s.v.key, s.sid, id++);
      for (let i = 0; i < CALLS; i++) for (const s of servers) s.samples.push(await timedCall(s.url, s.v.key, s.sid, id++));

      const ownStats = new Map([...own].map(([k, v]) => [k, summarize(v)]));
      const e2e = new Map(servers.map((s) => [s.v.name, summarize(s.samples)]));
      const base = e2e.get('no control plane')!;
      const row = (name: string, s: Summary) => [name, String(s.n), ms(s.p50), ms(s.p99), ms(s.mean)];
      const tables: Table[] = [
        {
          title: "The control plane's own work per call, ms",
          columns: ['store', 'n', 'p50', 'p99', 'mean'],
          rows: [...ownStats].map(([k, s]) => row(k, s)),
          note: 'authenticate (key lookup by hash) + scope check + rate limit and quota counters + audit entry before the call + audit entry after it.',
        },
        {
          title: 'A whole tools/call over HTTP (list_sessions), ms',
          columns: ['server', 'n', 'p50', 'p99', 'mean', '+p50 vs none', '+mean vs none'],
          rows: [...e2e].map(([k, s]) => [...row(k, s), ms(s.p50 - base.p50, true), ms(s.mean - base.mean, true)]),
          note: 'Client and the three servers share this process; each "+" figure is a difference of percentiles (or means).',
        },
      ];
      const sqliteOwn = ownStats.get('SQLite')!.p50;
      const pgOwn = ownStats.get('PostgreSQL')!.p50;
      const cpu = os.cpus();
      return {
        name: 'control',
        date: new Date(),
        machine: [
          ['CPU', `${cpu[0]?.model.trim() ?? 'unknown'}, ${cpu.length} cores`],
          ['OS', `${os.type()} ${os.release()} ${os.arch()}`],
          ['Node', process.version],
          ['PostgreSQL', 'local server on loopback (fsync off, as in the tests)'],
          ['load average (1 min)', os.loadavg()[0]!.toFixed(2)],
        ],
        summary:
          'The time the control plane (API keys, scopes, rate limits and quotas, the hash-chained audit) adds to one tool call, ' +
          'with the embedded SQLite store and with a PostgreSQL store shared by several nodes, side by side with no control plane.',
        method: [
          `${CALLS} calls per variant after ${WARMUP} warm-up calls; variants interleaved call by call.`,
          'Each key has a rate limit and a quota, so every call bumps two counters and writes two audit entries (before and after the call).',
          'SQLite: WAL, synchronous=NORMAL. PostgreSQL: one round trip for the key, one for both counters (a PL/pgSQL function), one per audit entry (under an advisory lock).',
        ],
        tables,
        verdicts: [
          {
            goal: 'under 0.5 ms added per call at p50 with SQLite',
            met: sqliteOwn < 0.5,
            detail: `${ms(sqliteOwn)} ms (control plane work); ${ms(e2e.get('SQLite')!.p50 - base.p50, true)} ms on a whole HTTP call`,
          },
          {
            goal: 'under 2 ms added per call at p50 with PostgreSQL',
            met: pgOwn < 2,
            detail: `${ms(pgOwn)} ms (control plane work); ${ms(e2e.get('PostgreSQL')!.p50 - base.p50, true)} ms on a whole HTTP call`,
          },
        ],
      };
    } finally {
      for (const h of handles) await h.close().catch(() => undefined);
      for (const c of closers) await c().catch(() => undefined);
      await pg.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
