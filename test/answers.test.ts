// The token report: what an agent pays for the answers it gets. For each toolset, the typical
// answers (a stop, a table, a grep, a log) and the largest answer we know how to provoke, measured
// through the SDK client as the whole tool result (text and structured content), and checked
// against the budgets: a typical answer a few hundred tokens, none over the 25,000-token ceiling.
// Tokens are estimated as characters / 4. The table is printed, so `npm test` shows the figures.
import { copyFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLE_2025 } from './helpers/bundles.js';
import { connectStdio, type TestClient } from './helpers/client.js';
import { compileC, compileCInside, tempDir } from './helpers/programs.js';
import { PY_ROOT, pyOk } from './helpers/python.js';

const CEILING_TOKENS = 25_000;
/** What a typical answer may cost: "a few hundred tokens" (a stop, a table, 20 log lines), text and structured content together. */
const TYPICAL_TOKENS = 1000;

interface Row {
  tool: string;
  what: string;
  kind: 'typical' | 'largest';
  tokens: number;
  cut: boolean;
}

const rows: Row[] = [];
let root: string;
let dk: TestClient;
let py: TestClient;

beforeAll(async () => {
  root = tempDir('debugkit-answers-');
  compileC(root, 'basic');
  dk = await connectStdio({ root, args: ['--bundle-dir', path.join(root, 'bundles')] });
  py = await connectStdio({ root: PY_ROOT });
}, 60_000);

afterAll(async () => {
  await Promise.all([dk?.close(), py?.close()]);
  const width = Math.max(...rows.map((r) => `${r.tool} ${r.what}`.length));
  const lines = rows.map((r) => `${`${r.tool} ${r.what}`.padEnd(width)}  ${r.kind.padEnd(8)} ${String(r.tokens).padStart(6)} tokens${r.cut ? '  (cut, with a hint)' : ''}`);
  console.log(`answer sizes (characters / 4, whole tool result):\n${lines.join('\n')}`);
});

/** Calls a tool and records the size of everything the client received. */
async function measure(client: TestClient, kind: Row['kind'], tool: string, what: string, args: Record<string, unknown>) {
  const r = await client.client.callTool({ name: tool, arguments: args });
  const tokens = Math.round(JSON.stringify({ content: r.content, structuredContent: r.structuredContent }).length / 4);
  const text = (r.content as Array<{ text?: string }>).map((c) => c.text ?? '').join('\n');
  const cut =
    JSON.stringify(r.structuredContent ?? {}).includes('"truncated":true') ||
    r._meta?.['debugkit/truncated'] !== undefined ||
    /"isTruncated":true|membersTruncated":true/.test(JSON.stringify(r.structuredContent ?? {}));
  rows.push({ tool, what, kind, tokens, cut });
  expect(tokens, `${tool} ${what}`).toBeLessThanOrEqual(kind === 'typical' ? TYPICAL_TOKENS : CEILING_TOKENS);
  return { result: r, text, tokens };
}

describe('answer sizes an agent pays for', () => {
  it('gdb: a stop is a few hundred tokens; the biggest listing stays under the ceiling', async () => {
    const { id } = await dk.ok('open', { program: 'basic' });
    await dk.ok('call', { id, command: 'break add' });
    await measure(dk, 'typical', 'call', '"run" to a breakpoint', { id, command: 'run' });
    await measure(dk, 'typical', 'call', '"bt"', { id, command: 'bt' });
    await measure(dk, 'typical', 'call', '"info locals"', { id, command: 'info locals' });
    // Every symbol of the program and of libc: the listing that once cost ~21k tokens.
    await measure(dk, 'largest', 'call', '"info functions" (libc loaded)', { id, command: 'info functions' });
    await measure(dk, 'largest', 'call', '"x/40000xb $sp"', { id, command: 'x/40000xb $sp' });
    await measure(dk, 'typical', 'gdb_program_output', 'tail', { id, stream: 'stdout', tail: 20 });
    await dk.ok('close', { id });
  }, 90_000);

  it('python: a stop is a few hundred tokens; a huge value is cut under the ceiling', async () => {
    const { sessionId } = await pyOk(py, 'python_start_session', { entry: 'src/calculator.py' });
    await measure(py, 'typical', 'python_run_to_breakpoint', 'stop with locals', { sessionId, file: 'src/calculator.py', line: 11 });
    await measure(py, 'typical', 'python_evaluate', 'x + y', { sessionId, expression: 'x + y' });
    // A 300 x 300 dict of lists, expanded two levels: once 3.18 million characters.
    await measure(py, 'largest', 'python_evaluate', '300x300 dict, depth 2', {
      sessionId,
      expression: '{i: list(range(300)) for i in range(300)}',
      depth: 2,
    });
    await measure(py, 'typical', 'python_get_output', 'tail', { sessionId, tail: 20 });
    await pyOk(py, 'python_end_session', { sessionId });
  }, 90_000);

  it('bundles: a table, a grep and a log are small; the largest reads are cut under the ceiling', async () => {
    copyFileSync(BUNDLE_2025, path.join(root, 'bundle.tar.gz')); // sources must be inside --root
    const init = await dk.tool('initialize_bundle', { source: 'bundle.tar.gz' });
    expect(init.isError, init.text).toBe(false);
    await measure(dk, 'typical', 'kubectl', 'get pods -A (table)', { command: 'get pods -A' });
    await measure(dk, 'typical', 'kubectl', 'logs --tail 20', { command: 'logs coredns-ff8999cc5-6rpll -n kube-system --tail 20' });
    await measure(dk, 'typical', 'grep_files', '"GOMAXPROCS" in logs', { pattern: 'GOMAXPROCS', path: '/cluster-resources/pods/logs', glob_pattern: '*.log' });
    await measure(dk, 'largest', 'kubectl', 'get all -A -o yaml', { command: 'get all -A -o yaml' });
    await measure(dk, 'largest', 'kubectl', 'get pods -A, json_output', { command: 'get pods -A', json_output: true });
    await measure(dk, 'largest', 'grep_files', '"." everywhere, max_results 100000', { pattern: '.', path: '/', max_results: 100_000 });
    await measure(dk, 'largest', 'list_files', 'recursive "/"', { path: '/', recursive: true });
    await measure(dk, 'typical', 'list_files', '"/cluster-resources", compact', { path: '/cluster-resources', compact: true });
    await measure(dk, 'largest', 'read_file', 'custom-resource-definitions.json whole', { path: '/cluster-resources/custom-resource-definitions.json' });
  }, 120_000);

  it('mocks: listing sets is small', async () => {
    await measure(dk, 'typical', 'keploy_list_mocks', 'no sets', {});
  });
});

/**
 * Issue 21's classes of bug, as an agent meets them: each answered in a counted number of calls,
 * its stops at most STOP_TEXT_TOKENS of text (what the model reads), and true.
 */
const STOP_TEXT_TOKENS = 250;
/** The bundle triage, in one call. */
const TRIAGE_TOKENS = 1500;

describe('issue 21 scenarios: calls to the answer, and the text of each stop', () => {
  const calls = new Map<string, number>();
  const ask = async (scenario: string, client: TestClient, tool: string, args: Record<string, unknown>) => {
    calls.set(scenario, (calls.get(scenario) ?? 0) + 1);
    const r = await client.tool(tool, args);
    expect(r.isError, `${scenario}: ${tool} ${r.text}`).toBe(false);
    return r;
  };
  const stopText = (scenario: string, text: string) => {
    rows.push({ tool: scenario, what: 'stop text only', kind: 'typical', tokens: Math.round(text.length / 4), cut: false });
    expect(text.length / 4, `${scenario}: ${text}`).toBeLessThanOrEqual(STOP_TEXT_TOKENS);
  };
  afterAll(() => console.log(`calls per scenario: ${[...calls].map(([k, n]) => `${k} ${n}`).join(', ')}`));

  it("gdb, a crash inside libc: two calls to the program's own frame", async () => {
    compileCInside(root, 'dbg_libc');
    const { structured } = await ask('gdb libc crash', dk, 'open', { program: 'dbg_libc' });
    const run = await ask('gdb libc crash', dk, 'call', { id: structured.content.id, command: 'run' });
    stopText('gdb libc crash', run.text);
    expect(run.structured.content.stopped.user_frame).toMatchObject({ func: 'parse_line', line: '6' });
    await dk.ok('close', { id: structured.content.id });
    expect(calls.get('gdb libc crash')).toBe(2);
  });

  it('python, a RecursionError with a traceback over 64 KiB: two calls to the error, never "completed, error: null"', async () => {
    const { structured } = await ask('python recursion', py, 'python_start_session', { entry: 'src/mutual.py' });
    const end = await ask('python recursion', py, 'python_continue', { sessionId: structured.sessionId });
    stopText('python recursion', end.text);
    expect(end.text).toMatch(/^completed[^\n]*\nerror: RecursionError: maximum recursion depth exceeded/);
    await pyOk(py, 'python_end_session', { sessionId: structured.sessionId });
    expect(calls.get('python recursion')).toBe(2);
  });

  it('python, a stop deeper than one answer shows: the real depth, in one call after the start', async () => {
    const { structured } = await ask('python deep stack', py, 'python_start_session', { entry: 'src/deep.py' });
    const stop = await ask('python deep stack', py, 'python_run_to_breakpoint', { sessionId: structured.sessionId, file: 'src/deep.py', line: 7 });
    stopText('python deep stack', stop.text);
    expect(stop.structured.stackDepth).toBe(63);
    expect(stop.text).toMatch(/, stack depth 63\n/);
    await pyOk(py, 'python_end_session', { sessionId: structured.sessionId });
  });

  it('bundles, "what is unhealthy here": one call', async () => {
    const summary = await ask('bundle triage', dk, 'bundle_summary', {});
    rows.push({ tool: 'bundle triage', what: 'bundle_summary', kind: 'typical', tokens: Math.round(summary.text.length / 4), cut: false });
    expect(summary.text.length / 4).toBeLessThanOrEqual(TRIAGE_TOKENS);
    expect(calls.get('bundle triage')).toBe(1);
  });
});
