// Rendering of benchmark results: console tables, and BENCHMARKS.md, one `## <name>` section per
// benchmark module, rewritten atomically with the sections other modules wrote kept as they are.
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { BenchResult, Table } from './util.js';

const PREAMBLE = `# Benchmarks

Written by \`npm run bench\` (bench/index.ts). Each \`## <toolset>\` section is rewritten by the run that measures it;
sections a run did not produce are kept as they are. Figures depend on the machine: compare them within a section, and
rerun before and after a change rather than across machines.
`;

// ---------------------------------------------------------------- rendering

export function consoleTable(t: Table): string {
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

export function verdictLine(v: BenchResult['verdicts'][number]): string {
  return `${v.met ? 'met' : 'NOT met'}: ${v.goal}: ${v.detail}`;
}

export function markdownSection(r: BenchResult): string {
  const out = [
    `## ${r.name}`,
    '',
    `Last run: ${r.date.toISOString().replace(/\.\d+Z$/, 'Z')}, on:`,
    '',
    ...r.machine.map(([k, v]) => `- ${k}: ${v}`),
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
export function parseDocument(text: string): Document {
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
export function mergeDocument(existing: string | undefined, results: BenchResult[]): string {
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
export function writeAtomically(file: string, text: string): void {
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  try {
    writeFileSync(temp, text);
    renameSync(temp, file);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
}
