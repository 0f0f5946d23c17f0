// The debugger toolset: time debugkit adds to one step forward and one step backward over driving
// gdb/MI directly (same gdb, same tunables, same recording), the slowdown of `record full` over a
// native run, and find_similar_bugs over 10,000 stored signatures.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { openStore } from '../src/control/open.js';
import { MiConnection } from '../src/core/mi/connection.js';
import { RECORD_TUNABLES } from '../src/toolsets/debugger/session.js';
import { envInt, ms, releaseTempDir, summarize, track, trackTempDir, untrack, withTimeout, type BenchModule, type BenchResult, type Summary } from './util.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CLI = path.join(ROOT, 'dist/cli.js');
const STEPS = envInt('BENCH_DEBUGGER_STEPS', 60);
const SIGNATURES = 10_000;
const LOOKUPS = envInt('BENCH_DEBUGGER_LOOKUPS', 20);
const RECORD_LOOP = envInt('BENCH_DEBUGGER_RECORD_LOOP', 2_000);
const TIMEOUT_MS = 30_000;

const SOURCE = `#include <stdio.h>
#include <stdlib.h>
long total = 0;
static long work(long i) { long r = i * 3; r ^= i >> 2; return r; }
int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000;
  for (long i = 0; i < n; i++) {
    total += work(i);
  }
  printf("%ld\\n", total);
  return 0;
}
`;

function compile(dir: string): string {
  writeFileSync(path.join(dir, 'bench_steps.c'), SOURCE);
  const out = path.join(dir, 'bench_steps');
  execFileSync('gcc', ['-g', '-O0', '-o', out, path.join(dir, 'bench_steps.c')]);
  return out;
}

/** Raw gdb/MI: next and reverse-next round trips until their *stopped, under record full. */
async function rawSteps(program: string): Promise<{ forward: Summary; backward: Summary }> {
  const gdb = spawn('gdb', ['--interpreter=mi3', '-q', '-nx', '--args', program, '100000'], { stdio: ['pipe', 'pipe', 'ignore'], env: { ...process.env, GLIBC_TUNABLES: RECORD_TUNABLES } });
  track(gdb.pid, 'gdb (raw MI)', false);
  const mi = new MiConnection(gdb.stdin!, gdb.stdout!);
  let stopped: (() => void) | undefined;
  mi.on('record', (r) => {
    if (r.kind === 'exec' && r.asyncClass === 'stopped') stopped?.();
  });
  const exec = async (command: string) => {
    const done = new Promise<void>((resolve) => (stopped = resolve));
    await mi.send(command, TIMEOUT_MS);
    await withTimeout(done, TIMEOUT_MS, command);
  };
  try {
    for (const c of ['-gdb-set mi-async on', '-gdb-set pagination off', '-gdb-set confirm off', '-gdb-set startup-with-shell off', '-break-insert -t main']) await mi.send(c, TIMEOUT_MS);
    await exec('-exec-run');
    await mi.send('-interpreter-exec console "record full"', TIMEOUT_MS);
    const time = async (command: string) => {
      const samples: number[] = [];
      for (let i = 0; i < STEPS; i++) {
        const t = performance.now();
        await exec(command);
        samples.push(performance.now() - t);
      }
      return summarize(samples);
    };
    const forward = await time('-exec-next');
    const backward = await time('-exec-next --reverse');
    return { forward, backward };
  } finally {
    mi.close(new Error('done'));
    gdb.kill('SIGKILL');
    untrack(gdb.pid);
  }
}

async function connect(dir: string, dataDir: string): Promise<{ client: Client; close: () => Promise<void> }> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, '--toolsets', 'debugger', '--root', dir, '--data-dir', dataDir], stderr: 'ignore' });
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(transport);
  track(transport.pid ?? undefined, 'debugkit', false);
  return {
    client,
    close: async () => {
      untrack(transport.pid ?? undefined);
      await client.close();
    },
  };
}

async function debugkitSteps(dir: string, dataDir: string): Promise<{ forward: Summary; backward: Summary; tokens: number }> {
  const { client, close } = await connect(dir, dataDir);
  try {
    await client.callTool({ name: 'debugger_launch', arguments: { program: 'bench_steps', args: ['100000'] } });
    let longest = 0;
    const time = async (name: string) => {
      const samples: number[] = [];
      for (let i = 0; i < STEPS; i++) {
        const t = performance.now();
        const r = await client.callTool({ name, arguments: {} });
        samples.push(performance.now() - t);
        const text = (r.content as Array<{ text?: string }>).map((c) => c.text ?? '').join('');
        longest = Math.max(longest, text.length);
        if (r.isError) throw new Error(`${name}: ${text}`);
      }
      return summarize(samples);
    };
    const forward = await time('debugger_step_forward');
    const backward = await time('debugger_step_backward');
    return { forward, backward, tokens: Math.ceil(longest / 4) };
  } finally {
    await close();
  }
}

function timeRun(args: string[], env: NodeJS.ProcessEnv): number {
  const t = performance.now();
  execFileSync(args[0]!, args.slice(1), { env, stdio: 'ignore', timeout: 600_000 });
  return performance.now() - t;
}

async function similarBugs(dir: string, dataDir: string): Promise<Summary> {
  const frames = ['parse', 'read_header', 'walk', 'lookup', 'insert', 'main', 'run', 'handle', 'decode', 'flush'];
  const signatures = Array.from({ length: SIGNATURES }, (_, i) => {
    const f = [frames[i % 10]!, frames[(i * 7) % 10]!, `fn_${i % 500}`, 'main'];
    const failure = ['SIGSEGV', 'SIGBUS', 'SIGFPE'][i % 3]!;
    return { id: `s${i}`, time: '2026-01-01T00:00:00Z', failure, pattern: 'crash', frames: f, signature: [failure, ...f].join(' | '), source: `bench ${i}` };
  });
  // Into the control store, where the server keeps them (control.db in the data directory).
  const store = await openStore(undefined, dataDir);
  try {
    // The stdio user's own (the key 'local'): a key sees only its own signatures.
    for (const sig of signatures) await store.addSignature('local', sig.id, sig.time, sig);
  } finally {
    await store.close();
  }
  const { client, close } = await connect(dir, dataDir);
  try {
    await client.callTool({ name: 'debugger_find_similar_bugs', arguments: { pattern_type: 'crash' } }); // loads the store
    const samples: number[] = [];
    for (let i = 0; i < LOOKUPS; i++) {
      const t = performance.now();
      await client.callTool({ name: 'debugger_find_similar_bugs', arguments: { pattern_type: 'crash' } });
      samples.push(performance.now() - t);
    }
    return summarize(samples);
  } finally {
    await close();
  }
}

export const debuggerBench: BenchModule = {
  name: 'debugger',
  async run(): Promise<BenchResult> {
    const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'debugkit-bench-dbg-')));
    trackTempDir(dir);
    const dataDir = path.join(dir, 'data');
    execFileSync('mkdir', ['-p', dataDir]);
    try {
      const program = compile(dir);
      const raw = await rawSteps(program);
      const dk = await debugkitSteps(dir, dataDir);
      const native = timeRun([program, String(RECORD_LOOP)], process.env);
      const recorded = timeRun(
        [
          'gdb',
          '-batch',
          '-nx',
          '-ex',
          'break main',
          '-ex',
          'run',
          '-ex',
          'record full',
          '-ex',
          'set record full insn-number-max unlimited',
          '-ex',
          'continue',
          '--args',
          program,
          String(RECORD_LOOP),
        ],
        { ...process.env, GLIBC_TUNABLES: RECORD_TUNABLES },
      );
      const plainGdb = timeRun(['gdb', '-batch', '-nx', '-ex', 'break main', '-ex', 'run', '-ex', 'continue', '--args', program, String(RECORD_LOOP)], {
        ...process.env,
        GLIBC_TUNABLES: RECORD_TUNABLES,
      });
      const similar = await similarBugs(dir, dataDir);
      const addedF = dk.forward.p50 - raw.forward.p50;
      const addedB = dk.backward.p50 - raw.backward.p50;
      return {
        name: 'debugger',
        date: new Date(),
        machine: [
          ['CPU cores', String(os.cpus().length)],
          ['Node', process.version],
          ['gdb', execFileSync('gdb', ['--version'], { encoding: 'utf8' }).split('\n')[0]!],
        ],
        summary:
          'Time debugkit adds to one step forward and one step backward (the compact stop: frames, changed locals, source lines, position id) over the same gdb/MI command sent directly; the cost of GDB record full over a native run; find_similar_bugs over 10,000 stored signatures.',
        method: [
          `${STEPS} steps each way on a recorded program (record full from main, debugkit's glibc tunables), debugkit over stdio through the SDK client vs raw \`-exec-next\` / \`-exec-next --reverse\` round trips on MI.`,
          `record full: a ${RECORD_LOOP}-iteration loop run natively, under gdb without recording, and under gdb with record full (unlimited log), wall time including gdb start-up.`,
          `find_similar_bugs: ${SIGNATURES} signatures in the control store (SQLite), ${LOOKUPS} calls over stdio after one warm-up.`,
        ],
        tables: [
          {
            title: 'Step latency (ms)',
            columns: ['way', 'raw MI p50', 'debugkit p50', 'added p50', 'raw p99', 'debugkit p99'],
            rows: [
              ['step forward', ms(raw.forward.p50), ms(dk.forward.p50), ms(addedF, true), ms(raw.forward.p99), ms(dk.forward.p99)],
              ['step backward', ms(raw.backward.p50), ms(dk.backward.p50), ms(addedB, true), ms(raw.backward.p99), ms(dk.backward.p99)],
            ],
            note: `largest stop answer seen: about ${dk.tokens} tokens (text content, 4 characters a token)`,
          },
          {
            title: 'record full slowdown',
            columns: ['run', 'wall ms', 'vs native'],
            rows: [
              ['native', ms(native), '1x'],
              ['gdb, no recording', ms(plainGdb), `${(plainGdb / native).toFixed(0)}x`],
              ['gdb, record full', ms(recorded), `${(recorded / native).toFixed(0)}x (${((recorded - plainGdb) / Math.max(1, native)).toFixed(0)}x net of gdb start-up)`],
            ],
          },
          { title: 'find_similar_bugs over 10,000 signatures (ms)', columns: ['p50', 'p99', 'mean'], rows: [[ms(similar.p50), ms(similar.p99), ms(similar.mean)]] },
        ],
        verdicts: [
          { goal: 'under 1 ms added per step forward at p50 (stdio)', met: addedF < 1, detail: `${ms(addedF, true)} ms` },
          { goal: 'under 1 ms added per step backward at p50 (stdio)', met: addedB < 1, detail: `${ms(addedB, true)} ms` },
          { goal: 'find_similar_bugs over 10,000 signatures under 100 ms at p50', met: similar.p50 < 100, detail: `${ms(similar.p50)} ms` },
        ],
      };
    } finally {
      releaseTempDir(dir);
    }
  },
};
