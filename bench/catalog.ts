// What an agent reads before its first call: tools/list with every toolset, over stdio from the
// built CLI, as a client gets it by default and with --output-schemas; its size in characters
// (about 4 a token) and what it is made of.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { machineBasics, type BenchModule, type BenchResult, type Table } from './util.js';

const CLI = path.resolve(import.meta.dirname, '..', 'dist', 'cli.js');
/** The goal (issue 19): half of the 64,357 characters tools/list had before. */
const GOAL_CHARS = 32_000;
const BEFORE_CHARS = 64_357;

interface Listed {
  name: string;
  title?: string;
  description?: string;
  inputSchema: unknown;
  outputSchema?: unknown;
  annotations?: unknown;
}

async function listTools(args: string[]): Promise<Listed[]> {
  const data = mkdtempSync(path.join(os.tmpdir(), 'debugkit-bench-catalog-'));
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, '--data-dir', data, ...args], stderr: 'ignore' });
  const client = new Client({ name: 'bench-catalog', version: '1' });
  try {
    await client.connect(transport);
    return (await client.listTools()).tools as Listed[];
  } finally {
    await client.close().catch(() => undefined);
    rmSync(data, { recursive: true, force: true });
  }
}

const size = (value: unknown) => (value === undefined ? 0 : JSON.stringify(value).length);

function row(way: string, tools: Listed[]): string[] {
  const total = size({ tools });
  const sum = (part: (t: Listed) => unknown) => tools.reduce((n, t) => n + size(part(t)), 0);
  const pct = (n: number) => `${((100 * n) / total).toFixed(0)}%`;
  const inputs = sum((t) => t.inputSchema);
  const descriptions = sum((t) => t.description);
  const outputs = sum((t) => t.outputSchema);
  return [
    way,
    String(tools.length),
    total.toLocaleString('en-US'),
    Math.round(total / 4).toLocaleString('en-US'),
    pct(inputs),
    pct(descriptions),
    pct(outputs),
    `${((100 * total) / BEFORE_CHARS).toFixed(0)}%`,
  ];
}

export const catalogBench: BenchModule = {
  name: 'catalog',
  async run(): Promise<BenchResult> {
    const listed = await listTools([]);
    const full = await listTools(['--output-schemas']);
    const chars = size({ tools: listed });
    const table: Table = {
      title: 'tools/list, every toolset (43 tools), characters',
      columns: ['listing', 'tools', 'characters', '~tokens', 'input schemas', 'descriptions', 'output schemas', 'vs before (64,357)'],
      rows: [row('default', listed), row('`--output-schemas`', full)],
      note: "Shares are of the listing's characters; the rest is names, titles, annotations and JSON keys.",
    };
    return {
      name: 'catalog',
      date: new Date(),
      machine: machineBasics(),
      summary:
        'What an agent reads before its first call: the tools/list answer with every toolset on, as a client gets it by default ' +
        '(output schemas not listed) and with `--output-schemas`. Before issue 19 it was 64,357 characters (about 16,000 tokens), 42% of it ' +
        'output schemas, one session_id description repeated 17 times and a 700-character date-time pattern.',
      verdicts: [{ goal: `tools/list under ${GOAL_CHARS.toLocaleString('en-US')} characters with every toolset`, met: chars < GOAL_CHARS, detail: `${chars.toLocaleString('en-US')} characters` }],
      tables: [table],
      method: [
        'The built CLI (`dist/cli.js`) over stdio with every toolset and a fresh `--data-dir`, listed by the MCP SDK client; the size is `JSON.stringify({tools})`, as `test/contract.test.ts` measures it (it fails over 32,000).',
        'Tokens are estimated at 4 characters each.',
      ],
    };
  },
};
