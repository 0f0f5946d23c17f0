// `npm run bench`: runs each benchmark module, prints its tables, and rewrites BENCHMARKS.md
// (atomically) with one `## <name>` section per module that ran; sections other modules wrote
// earlier are kept as they are.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { bundlesBench } from './bundles.js';
import { catalogBench } from './catalog.js';
import { controlBench } from './control.js';
import { debuggerBench } from './debugger.js';
import { gdbBench } from './gdb.js';
import { goBench } from './go.js';
import { nodeBench } from './node.js';
import { livenessBench } from './liveness.js';
import { consoleTable, mergeDocument, verdictLine, writeAtomically } from './markdown.js';
import { mocksBench } from './mocks.js';
import { pythonBench } from './python.js';
import { redactionBench } from './redaction.js';
import { startupBench } from './startup.js';
import { killTrackedSync, type BenchModule, type BenchResult } from './util.js';

const MODULES: BenchModule[] = [gdbBench, pythonBench, goBench, nodeBench, bundlesBench, mocksBench, debuggerBench, controlBench, livenessBench, startupBench, catalogBench, redactionBench];
const OUTPUT = path.resolve(import.meta.dirname, '..', 'BENCHMARKS.md');
/**
 * The whole run (every module: gdb takes some 15 s, python some 2.5 min, bundles some 2 to 4 min,
 * mocks some 1 to 2 min) is bounded even if some wait inside a module is not.
 */
const WATCHDOG_MS = Number(process.env.BENCH_TIMEOUT_MS ?? 720_000);

// ---------------------------------------------------------------- main

function abort(reason: string, code: number): never {
  const killed = killTrackedSync();
  process.stderr.write(`bench: ${reason}${killed.length > 0 ? `; killed ${killed.join(', ')}` : ''}\n`);
  process.exit(code);
}

async function main(): Promise<number> {
  const watchdog = setTimeout(() => abort(`still running after ${WATCHDOG_MS} ms; giving up`, 1), WATCHDOG_MS);
  watchdog.unref();
  process.once('SIGINT', () => abort('interrupted', 130));
  process.once('SIGTERM', () => abort('terminated', 143));

  // BENCH_ONLY=python (or gdb,python) runs only those modules; other sections of BENCHMARKS.md are kept.
  const only = process.env.BENCH_ONLY?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = only?.filter((name) => !MODULES.some((m) => m.name === name)) ?? [];
  if (unknown.length > 0) {
    process.stderr.write(`bench: BENCH_ONLY names no module ${unknown.join(', ')} (there are: ${MODULES.map((m) => m.name).join(', ')})\n`);
    return 2;
  }
  const results: BenchResult[] = [];
  let failed = false;
  for (const module of MODULES) {
    if (only && !only.includes(module.name)) continue;
    process.stdout.write(`\n== ${module.name} ==\n`);
    const started = Date.now();
    try {
      const result = await module.run();
      results.push(result);
      for (const t of result.tables) process.stdout.write(`\n${consoleTable(t)}\n`);
      process.stdout.write(`\n${result.verdicts.map(verdictLine).join('\n')}\n`);
      process.stdout.write(`(${module.name}: ${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
    } catch (err) {
      failed = true;
      process.stderr.write(`bench ${module.name} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    }
  }
  clearTimeout(watchdog);

  if (results.length > 0 && process.env.BENCH_NO_WRITE !== '1') {
    const existing = existsSync(OUTPUT) ? readFileSync(OUTPUT, 'utf8') : undefined;
    writeAtomically(OUTPUT, mergeDocument(existing, results));
    process.stdout.write(`\nwrote ${path.relative(process.cwd(), OUTPUT) || OUTPUT} (${results.map((r) => `## ${r.name}`).join(', ')})\n`);
  }
  return failed ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => abort(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`, 1),
);
