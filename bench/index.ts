// `npm run bench`: runs each benchmark module, prints its tables, and rewrites BENCHMARKS.md
// (atomically) with one `## <name>` section per module that ran; sections other modules wrote
// earlier are kept as they are.
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gdbBench } from './gdb.js';
import { killTrackedSync, type BenchModule, type BenchResult, type Table } from './util.js';

const MODULES: BenchModule[] = [gdbBench];
const OUTPUT = path.resolve(import.meta.dirname, '..', 'BENCHMARKS.md');
/** The whole run is bounded even if some wait inside a module is not. */
const WATCHDOG_MS = Number(process.env.BENCH_TIMEOUT_MS ?? 300_000);

const PREAMBLE = `# Benchmarks

Written by \`npm run bench\` (bench/index.ts). Each \`## <toolset>\` section is rewritten by the run that measures it;
sections a run did not produce are kept as they are. Figures depend on the machine: compare them within a section, and
rerun before and after a change rather than across machines.
`;

// ---------------------------------------------------------------- rendering

function consoleTable(t: Table): string {
  const cells = [t.columns, ...t.rows].map((row) => row.map((c) => c.replace(/\*\*|`/g, '')));
  const widths = t.columns.map((_, i) => Math.max(...cells.map((row) => row[i]!.length)));
  const line = (row: string[]) => row.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  const out = [t.title, line(cells[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)];
  if (t.note) out.push(t.note);
  return out.join('\n');
}

function markdownTable(t: Table): string {
  const row = (cells: string[]) => `| ${cells.join(' | ')} |`;
  const align = t.columns.map((_, i) => (i === 0 ? ':---' : '---:'));
  const out = [`### ${t.title}`, '', row(t.columns), row(align), ...t.rows.map(row)];
  if (t.note) out.push('', t.note);
  return out.join('\n');
}

function verdictLine(v: BenchResult['verdicts'][number]): string {
  return `${v.met ? 'met' : 'NOT met'}: ${v.goal}: ${v.detail}`;
}

function markdownSection(r: BenchResult): string {
  const out = [
    `## ${r.name}`,
    '',
    `Last run: ${r.date.toISOString().replace(/\.\d+Z$/, 'Z')}. ${r.machine.map(([k, v]) => `${k}: ${v}`).join('; ')}.`,
    '',
    r.summary,
    '',
    ...r.verdicts.map((v) => `**Goal ${v.met ? 'met' : 'NOT met'}**: ${v.goal}: ${v.detail}.`),
    '',
    ...r.tables.flatMap((t) => [markdownTable(t), '']),
    '### Method',
    '',
    ...r.method.map((m) => `- ${m}`),
  ];
  return `${out.join('\n').trimEnd()}\n`;
}

// ---------------------------------------------------------------- BENCHMARKS.md

interface Document {
  preamble: string;
  sections: Array<{ name: string; text: string }>;
}

/** Splits a Markdown file at its `## ` headings (outside code fences). */
function parseDocument(text: string): Document {
  const doc: Document = { preamble: '', sections: [] };
  let fenced = false;
  let current: { name: string; lines: string[] } | undefined;
  const preamble: string[] = [];
  const flush = () => {
    if (current) doc.sections.push({ name: current.name, text: `${current.lines.join('\n').trimEnd()}\n` });
  };
  for (const line of text.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^## +(.+?)\s*#*\s*$/.exec(line);
    if (heading) {
      flush();
      current = { name: heading[1]!, lines: [line] };
    } else if (current) current.lines.push(line);
    else preamble.push(line);
  }
  flush();
  doc.preamble = preamble.join('\n').trim() ? `${preamble.join('\n').trimEnd()}\n` : '';
  return doc;
}

/** Replaces the sections this run produced (in place), keeps the others, appends new ones. */
function mergeDocument(existing: string | undefined, results: BenchResult[]): string {
  const doc = parseDocument(existing ?? '');
  const fresh = new Map(results.map((r) => [r.name, markdownSection(r)]));
  const sections = doc.sections.map((s) => {
    const text = fresh.get(s.name);
    fresh.delete(s.name);
    return text ?? s.text;
  });
  sections.push(...fresh.values());
  return [doc.preamble || PREAMBLE, ...sections].join('\n');
}

/** Writes `file` through a temporary file in the same directory and a rename: never half written. */
function writeAtomically(file: string, text: string): void {
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  try {
    writeFileSync(temp, text);
    renameSync(temp, file);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
}

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

  const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
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
