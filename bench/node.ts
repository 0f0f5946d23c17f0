// JavaScript under the python tools (issue 24): start to the first breakpoint hit through debugkit
// (python_start_session on a .js entry, then python_run_to_breakpoint) against the same engine
// driven directly (node --inspect-brk, the V8 inspector over CDP: breakpoint, run, the stop's
// locals), in the same run, alternating. Goal: within 1.15x, as for Python.
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CdpConnection } from '../src/core/cdp.js';
import { firstHitThroughDebugkit } from './first-hit.js';
import { envInt, ms, releaseTempDir, summarize, track, trackTempDir, untrack, withTimeout, type BenchModule, type BenchResult, type Summary } from './util.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CLI = path.join(ROOT, 'dist/cli.js');
const PROGRAM = path.join(ROOT, 'test/programs/node');
const STARTS = envInt('BENCH_NODE_STARTS', 10);
const TIMEOUT_MS = 60_000;
const GOAL = 1.15;
/** The breakpoint: lineTotal's discount test (lib/pricing.js line 7), hit on the first line priced. */
const FILE = 'lib/pricing.js';
const LINE = 7;

type Paused = { reason: string; callFrames: Array<{ scopeChain: Array<{ type: string; object: { objectId?: string } }> }> };

/** node --inspect-brk, connect, enable, the breakpoint by URL, run, the first hit (past the start's pause), its locals. */
async function directOnce(root: string): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, ['--inspect-brk=127.0.0.1:0', 'orders.js'], { stdio: ['ignore', 'ignore', 'pipe'], cwd: root });
  track(child.pid, 'node (direct)', false);
  try {
    const url = await withTimeout(
      new Promise<string>((resolve) => {
        let seen = '';
        child.stderr!.on('data', (chunk: Buffer) => {
          seen += chunk.toString();
          const m = /Debugger listening on (ws:\/\/\S+)/.exec(seen);
          if (m) resolve(m[1]!);
        });
      }),
      TIMEOUT_MS,
      'node to listen',
    );
    const cdp = await CdpConnection.connect(url, TIMEOUT_MS);
    const hit = new Promise<Paused>((resolve) => {
      cdp.on('Debugger.paused', (p) => {
        const paused = p as unknown as Paused;
        if (paused.reason === 'Break on start') void cdp.send('Debugger.resume');
        else resolve(paused);
      });
    });
    await cdp.send('Runtime.enable');
    await cdp.send('Debugger.enable');
    const file = path.join(root, FILE);
    await cdp.send('Debugger.setBreakpointByUrl', { urlRegex: `^(?:${pathToFileURL(file).href}|${file})$`.replace(/[.]/g, '\\.'), lineNumber: LINE - 1 });
    await cdp.send('Runtime.runIfWaitingForDebugger');
    const paused = await withTimeout(hit, TIMEOUT_MS, 'the first hit');
    const local = paused.callFrames[0]!.scopeChain.find((s) => s.type === 'local')!;
    await cdp.send('Runtime.getProperties', { objectId: local.object.objectId!, ownProperties: true, generatePreview: true });
    const elapsed = performance.now() - started;
    cdp.close();
    return elapsed;
  } finally {
    child.kill('SIGKILL');
    untrack(child.pid);
  }
}

async function run(): Promise<BenchResult> {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'debugkit-bench-node-')));
  trackTempDir(root);
  cpSync(PROGRAM, root, { recursive: true });
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, '--root', root, '--toolsets', 'python'], stderr: 'ignore' });
  const client = new Client({ name: 'debugkit-bench-node', version: '1.0.0' });
  await client.connect(transport);
  const direct: number[] = [];
  const viaDebugkit: number[] = [];
  try {
    await directOnce(root);
    await firstHitThroughDebugkit(client, 'orders.js', FILE, LINE, TIMEOUT_MS);
    for (let i = 0; i < STARTS; i++) {
      direct.push(await directOnce(root));
      viaDebugkit.push(await firstHitThroughDebugkit(client, 'orders.js', FILE, LINE, TIMEOUT_MS));
    }
  } finally {
    await client.close();
    releaseTempDir(root);
  }
  const d: Summary = summarize(direct);
  const k: Summary = summarize(viaDebugkit);
  const ratio = k.p50 / d.p50;
  return {
    name: 'node',
    date: new Date(),
    machine: [['node', process.version]],
    summary:
      'Start to the first breakpoint hit of a JavaScript program (test/programs/node/orders.js, a breakpoint in a function its first order calls), through debugkit ' +
      "against node's V8 inspector driven directly. Both start `node --inspect-brk=127.0.0.1:0`, set the breakpoint, run, and read the stop's locals.",
    method: [
      `${STARTS} starts per way after one warm-up each, alternating direct and debugkit; p50 compared.`,
      '**direct**: `node --inspect-brk=127.0.0.1:0 orders.js`, a CDP client over its WebSocket: Runtime.enable, Debugger.enable, setBreakpointByUrl, runIfWaitingForDebugger, resume past the start, the paused event, getProperties of the local scope.',
      '**debugkit**: MCP SDK client over stdio to `node dist/cli.js --toolsets python`: `python_start_session {entry: "orders.js"}` then `python_run_to_breakpoint`, to its answer (the compact stop: source, stack, locals).',
    ],
    tables: [
      {
        title: 'Start to the first hit',
        columns: ['way', 'p50', 'mean', 'n'],
        rows: [
          ['the inspector directly', ms(d.p50), ms(d.mean), String(d.n)],
          ['debugkit', ms(k.p50), ms(k.mean), String(k.n)],
        ],
        note: `debugkit / direct at p50: ${ratio.toFixed(2)}x`,
      },
    ],
    verdicts: [{ goal: `start to the first hit within ${GOAL}x of the inspector driven directly (p50)`, met: ratio <= GOAL, detail: `${ratio.toFixed(2)}x (${ms(k.p50)} against ${ms(d.p50)})` }],
  };
}

export const nodeBench: BenchModule = { name: 'node', run: () => withTimeout(run(), 600_000, 'the node benchmark') };
