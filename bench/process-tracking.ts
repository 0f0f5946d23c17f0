// What tracking child process trees costs (src/core/process.ts), with N processes on the machine:
//
//   node --import tsx bench/process-tracking.ts [N ...]                      (cgroup where available)
//   DEBUGKIT_CGROUP=off node --import tsx bench/process-tracking.ts [N ...]  (the environment marker)
//
// For each N it starts idle processes until the machine has about N, then times 20 bounded runs of
// `true` (spawn, exit, and ending its tree: the cgroup kill, or the /proc scan for its marker), and
// 20 lookups of a marker no process carries (endMarkedProcesses: in the environment mode one scan
// of every process, in the cgroup mode of the tree's group), each with the longest the event loop
// waited meanwhile. Not part of `npm run bench`: it fills the process table.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { endMarkedProcesses, processTracking, spawnChild, terminate } from '../src/core/process.js';
import { runBounded } from '../src/core/run.js';

const RUNS = 20;

function processCount(): number {
  return readdirSync('/proc').filter((n) => /^\d+$/.test(n)).length;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function measure(once: () => Promise<unknown>): Promise<{ median: number; p95: number; lag: number }> {
  let lag = 0;
  let last = performance.now();
  const probe = setInterval(() => {
    const now = performance.now();
    lag = Math.max(lag, now - last - 1);
    last = now;
  }, 1);
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    await once();
    times.push(performance.now() - started);
  }
  clearInterval(probe);
  return { median: percentile(times, 50), p95: percentile(times, 95), lag };
}

async function main(): Promise<void> {
  const targets = process.argv
    .slice(2)
    .map(Number)
    .filter((n) => n > 0);
  const tracking = await processTracking();
  process.stdout.write(`tracking: ${tracking.kind}${tracking.kind === 'environment' ? ` (${tracking.reason})` : ` (${tracking.dir})`}\n`);
  process.stdout.write(
    '| processes | run of `true`: median ms | p95 ms | event-loop wait ms | marker lookup: median ms | p95 ms | event-loop wait ms | event-loop wait, idle ms |\n' +
      '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n',
  );
  const idle: ChildProcess[] = [];
  const holder = await spawnChild('sleep', ['3600'], { stdio: 'ignore' });
  const f = (n: number) => n.toFixed(1);
  try {
    for (const target of [0, ...targets]) {
      while (processCount() < target) {
        for (let i = 0; i < 100; i++) idle.push(spawn('sleep', ['3600'], { stdio: 'ignore' }));
        await new Promise((r) => setTimeout(r, 100));
      }
      await runBounded({ command: 'true', args: [], timeoutMs: 10_000 }); // warm-up
      const run = await measure(() => runBounded({ command: 'true', args: [], timeoutMs: 10_000 }));
      const scan = await measure(() => endMarkedProcesses(holder, 'DEBUGKIT_BENCH', 'nobody'));
      // What the machine's load alone makes the event loop wait, for comparison.
      const idleLag = await measure(() => new Promise((r) => setTimeout(r, scan.median)));
      process.stdout.write(`| ${processCount()} | ${f(run.median)} | ${f(run.p95)} | ${f(run.lag)} | ${f(scan.median)} | ${f(scan.p95)} | ${f(scan.lag)} | ${f(idleLag.lag)} |\n`);
    }
  } finally {
    for (const p of idle) p.kill('SIGKILL');
    await terminate(holder, { graceMs: 100 });
  }
}

await main();
process.exit(0);
