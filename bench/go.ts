// Go under the python tools (issue 24): start to the first breakpoint hit through debugkit
// (python_start_session on a .go entry, then python_run_to_breakpoint) against the same engine
// driven directly (go build, dlv dap, the DAP launch sequence, the stop's stack and locals), in
// the same run, alternating. Goal: within 1.15x, as for Python.
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, realpathSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { DapConnection } from '../src/core/dap/connection.js';
import { firstHitThroughDebugkit } from './first-hit.js';
import { envInt, ms, releaseTempDir, summarize, track, trackTempDir, untrack, withTimeout, type BenchModule, type BenchResult, type Summary } from './util.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CLI = path.join(ROOT, 'dist/cli.js');
const PROGRAM = path.join(ROOT, 'test/programs/go/pricing');
const STARTS = envInt('BENCH_GO_STARTS', 8);
const TIMEOUT_MS = 120_000;
const GOAL = 1.15;
/** The breakpoint: lineTotal's discount test (price.go line 19), hit on the first call. */
const FILE = 'pricing/price.go';
const LINE = 19;

function version(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8' }).split('\n')[0]!.trim();
  } catch {
    return 'missing';
  }
}

/** go build as debugkit builds (no optimizations), then dlv dap, launch, breakpoint, first stop, its stack and locals. */
async function directOnce(root: string, out: string): Promise<number> {
  const started = performance.now();
  const dir = path.join(root, 'pricing');
  execFileSync('go', ['build', '-gcflags=all=-N -l', '-o', out, 'main.go', 'price.go'], { cwd: dir, env: { ...process.env, GOFLAGS: '-buildvcs=false' } });
  const dlv = spawn('dlv', ['dap', '--listen=127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'], cwd: root });
  track(dlv.pid, 'dlv (direct)', false);
  try {
    const port = await withTimeout(
      new Promise<number>((resolve) => {
        let seen = '';
        dlv.stdout!.on('data', (chunk: Buffer) => {
          seen += chunk.toString();
          const m = /listening at: [^\n]*:(\d+)/.exec(seen);
          if (m) resolve(Number(m[1]));
        });
      }),
      TIMEOUT_MS,
      'dlv to listen',
    );
    dlv.stderr!.resume();
    const socket = net.connect(port, '127.0.0.1');
    await withTimeout(new Promise((resolve) => socket.once('connect', resolve)), TIMEOUT_MS, 'connect');
    socket.setNoDelay(true);
    const dap = new DapConnection(socket, socket, { name: 'dlv' });
    await dap.request('initialize', { adapterID: 'go', linesStartAt1: true, columnsStartAt1: true, pathFormat: 'path', supportsVariableType: true });
    const initialized = dap.waitForEvent('initialized', { timeoutMs: TIMEOUT_MS });
    const launched = dap.request('launch', { mode: 'exec', program: out, args: [], cwd: root, stopOnEntry: false });
    await Promise.race([initialized, launched.then(() => initialized)]);
    await dap.request('setBreakpoints', { source: { path: path.join(root, FILE) }, breakpoints: [{ line: LINE }] });
    const stopped = dap.waitForEvent('stopped', { timeoutMs: TIMEOUT_MS });
    await dap.request('configurationDone');
    await launched;
    const stop = await stopped;
    const trace = await dap.request('stackTrace', { threadId: stop.body.threadId ?? 1, startFrame: 0, levels: 20 });
    const { scopes } = await dap.request('scopes', { frameId: trace.stackFrames[0]!.id });
    await dap.request('variables', { variablesReference: scopes[0]!.variablesReference });
    const elapsed = performance.now() - started;
    await dap.request('disconnect', { terminateDebuggee: true }, { timeoutMs: 3000 }).catch(() => undefined);
    socket.destroy();
    return elapsed;
  } finally {
    dlv.kill('SIGKILL');
    untrack(dlv.pid);
  }
}

async function run(): Promise<BenchResult> {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'debugkit-bench-go-')));
  trackTempDir(root);
  cpSync(PROGRAM, path.join(root, 'pricing'), { recursive: true });
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, '--root', root, '--toolsets', 'python'], stderr: 'ignore' });
  const client = new Client({ name: 'debugkit-bench-go', version: '1.0.0' });
  await client.connect(transport);
  const direct: number[] = [];
  const viaDebugkit: number[] = [];
  try {
    // One start each first: the Go build cache holds the standard library built without optimizations after it.
    await directOnce(root, path.join(root, 'direct-bin'));
    await firstHitThroughDebugkit(client, 'pricing/main.go', FILE, LINE, TIMEOUT_MS);
    for (let i = 0; i < STARTS; i++) {
      direct.push(await directOnce(root, path.join(root, 'direct-bin')));
      viaDebugkit.push(await firstHitThroughDebugkit(client, 'pricing/main.go', FILE, LINE, TIMEOUT_MS));
    }
  } finally {
    await client.close();
    releaseTempDir(root);
  }
  const d: Summary = summarize(direct);
  const k: Summary = summarize(viaDebugkit);
  const ratio = k.p50 / d.p50;
  return {
    name: 'go',
    date: new Date(),
    machine: [
      ['go', version('go', ['version'])],
      ['delve', version('dlv', ['version']).replace('Delve Debugger', '') || version('dlv', ['version'])],
    ],
    summary:
      'Start to the first breakpoint hit of a Go program (test/programs/go/pricing, a breakpoint in a function called on the first order), through debugkit ' +
      "against Delve driven directly. Both build the package without optimizations (`go build -gcflags=all=-N -l`, the build cache warm), start `dlv dap`, launch the binary, set the breakpoint and read the stop's stack and locals.",
    method: [
      `${STARTS} starts per way after one warm-up each, alternating direct and debugkit; p50 compared.`,
      '**direct**: `go build`, `dlv dap --listen=127.0.0.1:0`, DAP initialize, launch (`mode: exec`), setBreakpoints, configurationDone, the stopped event, stackTrace, scopes, variables.',
      '**debugkit**: MCP SDK client over stdio to `node dist/cli.js --toolsets python`: `python_start_session {entry: "pricing/main.go"}` then `python_run_to_breakpoint`, to its answer (the compact stop: source, stack, locals).',
    ],
    tables: [
      {
        title: 'Start to the first hit',
        columns: ['way', 'p50', 'mean', 'n'],
        rows: [
          ['Delve directly', ms(d.p50), ms(d.mean), String(d.n)],
          ['debugkit', ms(k.p50), ms(k.mean), String(k.n)],
        ],
        note: `debugkit / direct at p50: ${ratio.toFixed(2)}x`,
      },
    ],
    verdicts: [{ goal: `start to the first hit within ${GOAL}x of Delve driven directly (p50)`, met: ratio <= GOAL, detail: `${ratio.toFixed(2)}x (${ms(k.p50)} against ${ms(d.p50)})` }],
  };
}

export const goBench: BenchModule = { name: 'go', run: () => withTimeout(run(), 600_000, 'the go benchmark') };
