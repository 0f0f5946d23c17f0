// Start-up: from spawning the server to the first tools/list answer over stdio, as an MCP client
// sees it (spawn, initialize, notifications/initialized, tools/list), for debugkit with every
// toolset side by side with a bare server made with the same SDK package and one tool
// (bench/bare-server.mjs), spawned the same way in the same run, alternately.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { envInt, ms, percentile, releaseTempDir, track, trackTempDir, untrack, waitExit, withTimeout, type BenchModule, type BenchResult } from './util.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CLI = path.join(ROOT, 'dist/cli.js');
const BARE = path.join(ROOT, 'bench/bare-server.mjs');
const RUNS = envInt('BENCH_STARTUP_RUNS', 40);
const WARMUP = envInt('BENCH_STARTUP_WARMUP', 3);
const GOAL_MS = 300;
const START_TIMEOUT_MS = 30_000;
/** BENCH_STARTUP_BEFORE=/path/to/an/older/dist/cli.js adds that build as a third server (its label: BENCH_STARTUP_BEFORE_LABEL). */
const BEFORE = process.env.BENCH_STARTUP_BEFORE;
const BEFORE_LABEL = process.env.BENCH_STARTUP_BEFORE_LABEL ?? 'debugkit, an older build';

interface Server {
  name: string;
  args: string[];
  initialize: number[];
  list: number[];
  cpu: number[];
  tools: number;
  chars: number;
}

interface Start {
  initialize: number;
  list: number;
  /** The server's CPU time (user + system) when its tools/list answer arrived, ms; NaN where /proc is not there. */
  cpu: number;
  tools: number;
  chars: number;
}

/** Clock ticks per second of /proc/<pid>/stat's times. */
const TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** A live process's CPU time so far (user + system), ms; NaN when it cannot be read. */
function cpuTime(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS;
  } catch {
    return Number.NaN;
  }
}

const INITIALIZE = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench-startup', version: '1' } } };

/** One start: spawn, initialize, tools/list; the times from spawn to each answer, ms. */
async function startOnce(args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<Start> {
  const spawned = performance.now();
  const child = spawn(process.execPath, args, { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
  track(child.pid, `server ${args.join(' ')}`, false);
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d: string) => (stderr = (stderr + d).slice(-4000)));
  try {
    const answered = new Promise<Start>((resolve, reject) => {
      let buffer = '';
      let initialize = 0;
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk: string) => {
        buffer += chunk;
        for (let nl = buffer.indexOf('\n'); nl !== -1; nl = buffer.indexOf('\n')) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          const message = JSON.parse(line) as { id?: number; result?: { tools?: unknown[] }; error?: unknown };
          if (message.error) reject(new Error(`answer ${message.id}: ${JSON.stringify(message.error)}`));
          if (message.id === 1) {
            initialize = performance.now() - spawned;
            child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n');
          } else if (message.id === 2) {
            const list = performance.now() - spawned;
            resolve({ initialize, list, cpu: cpuTime(child.pid), tools: message.result?.tools?.length ?? 0, chars: line.length });
          }
        }
      });
      child.once('exit', (code, signal) => reject(new Error(`the server exited (${signal ?? code}) before answering tools/list: ${stderr.trim()}`)));
    });
    // A client writes its initialize at once, before the server reads anything.
    child.stdin.write(`${JSON.stringify(INITIALIZE)}\n`);
    return await withTimeout(answered, START_TIMEOUT_MS, `${args.join(' ')}: tools/list`);
  } finally {
    child.kill('SIGTERM');
    if (!(await waitExit(child, 10_000))) child.kill('SIGKILL');
    untrack(child.pid);
  }
}

const p50 = (samples: number[]) =>
  percentile(
    [...samples].sort((a, b) => a - b),
    50,
  );

/** A table row: n, p50, p90, min, max, and the p50's difference from `base`'s. */
const row = (s: Server, samples: number[], base: number[]) => {
  const sorted = [...samples].sort((a, b) => a - b);
  return [s.name, String(sorted.length), ms(percentile(sorted, 50)), ms(percentile(sorted, 90)), ms(sorted[0]!), ms(sorted.at(-1)!), ms(p50(samples) - p50(base), true)];
};
const COLUMNS = ['server', 'n', 'p50', 'p90', 'min', 'max', '+p50 vs bare'];

export const startupBench: BenchModule = {
  name: 'startup',
  async run(): Promise<BenchResult> {
    // A fresh data directory (the default store, opened after start) and workspace root for debugkit.
    const home = mkdtempSync(path.join(os.tmpdir(), 'debugkit-bench-startup-'));
    trackTempDir(home);
    const env = { ...process.env, XDG_DATA_HOME: path.join(home, 'data'), XDG_CACHE_HOME: path.join(home, 'cache'), DEBUGKIT_STORE: '' };
    const servers: Server[] = [
      { name: 'debugkit, every toolset (dist/cli.js)', args: [CLI], initialize: [], list: [], cpu: [], tools: 0, chars: 0 },
      { name: 'bare SDK server, one tool (bench/bare-server.mjs)', args: [BARE], initialize: [], list: [], cpu: [], tools: 0, chars: 0 },
      ...(BEFORE ? [{ name: BEFORE_LABEL, args: [BEFORE], initialize: [], list: [], cpu: [], tools: 0, chars: 0 }] : []),
    ];
    try {
      for (let i = 0; i < WARMUP; i++) for (const s of servers) await startOnce(s.args, env, home);
      // Alternately, the order rotating each round, so the machine's drift falls on all alike.
      for (let i = 0; i < RUNS; i++) {
        for (let j = 0; j < servers.length; j++) {
          const s = servers[(i + j) % servers.length]!;
          const start = await startOnce(s.args, env, home);
          s.initialize.push(start.initialize);
          s.list.push(start.list);
          if (Number.isFinite(start.cpu)) s.cpu.push(start.cpu);
          s.tools = start.tools;
          s.chars = start.chars;
        }
      }
    } finally {
      releaseTempDir(home);
    }
    const debugkit = servers[0]!;
    const bare = servers[1]!;
    const cpu = os.cpus();
    return {
      name: 'startup',
      date: new Date(),
      machine: [
        ['CPU', `${cpu[0]?.model.trim() ?? 'unknown'}, ${cpu.length} cores`],
        ['OS', `${os.type()} ${os.release()} ${os.arch()}`],
        ['Node', process.version],
        ['load average (1 min)', os.loadavg()[0]!.toFixed(2)],
      ],
      summary:
        'How long an MCP client waits from spawning debugkit over stdio to its first tools/list answer (every toolset), side by side with a bare ' +
        'server made with the same SDK package and one tool, spawned the same way in the same run. Toolsets load their engines on first use; ' +
        'the catalog (names, descriptions, input schemas) is listed at once. dist/ is bundled (scripts/bundle.mjs), so a start loads some thirty modules, not two hundred.',
      method: [
        `${RUNS} starts of each server after ${WARMUP} warm-up starts of each; the servers take turns, the order rotating each round.`,
        'Each start: spawn `node <server>`, write initialize at once, on its answer write notifications/initialized and tools/list; timed from spawn to each answer; then SIGTERM.',
        "debugkit runs as a client's configuration runs it: no options, a fresh data directory (XDG_DATA_HOME), so its control store (SQLite) is the default one, opened after start and before the first tool call is admitted.",
        'A row for an older build is there when the run was given one (BENCH_STARTUP_BEFORE=<its dist/cli.js>, BENCH_STARTUP_BEFORE_LABEL).',
        'Percentiles nearest rank.',
      ],
      tables: [
        {
          title: 'Spawn to the first tools/list answer, ms',
          columns: COLUMNS,
          rows: servers.map((s) => row(s, s.list, bare.list)),
          note: servers.map((s) => `${s.name}: ${s.tools} tool${s.tools === 1 ? '' : 's'}, ${s.chars.toLocaleString('en-US')} characters listed.`).join(' '),
        },
        {
          title: "The server's CPU time (user + system) when its tools/list answer arrives, ms",
          columns: COLUMNS,
          rows: servers.filter((s) => s.cpu.length > 0).map((s) => row(s, s.cpu, bare.cpu)),
          note: `From /proc/<pid>/stat, in steps of ${1000 / TICKS} ms: the work a start costs, which the machine's load changes less than the wall-clock times above.`,
        },
        {
          title: 'Spawn to the initialize answer, ms',
          columns: COLUMNS,
          rows: servers.map((s) => row(s, s.initialize, bare.initialize)),
        },
      ],
      verdicts: [
        {
          goal: `under ${GOAL_MS} ms from spawn to the first tools/list answer at p50`,
          met: p50(debugkit.list) < GOAL_MS,
          detail:
            `${ms(p50(debugkit.list))} ms (the bare SDK server: ${ms(p50(bare.list))} ms, so debugkit's own share ${ms(p50(debugkit.list) - p50(bare.list), true)} ms; ` +
            `CPU time ${ms(p50(debugkit.cpu))} ms against ${ms(p50(bare.cpu))} ms)`,
        },
      ],
    };
  },
};
