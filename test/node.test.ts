import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectStdio, type TestClient } from './helpers/client.js';
import { pyFails, pyOk } from './helpers/python.js';

// Issue 24: Node.js and TypeScript programs behind the python toolset's tools, through the V8
// inspector node ships (debugkit's own DAP adapter over CDP): the same tools, the same compact
// stop. The programs are this repository's own (test/programs/node).
const NODE_ROOT = path.resolve(import.meta.dirname, 'programs/node');
let dk: TestClient;

beforeAll(async () => {
  dk = await connectStdio({ root: NODE_ROOT });
  await dk.client.listTools();
});
afterAll(async () => {
  await dk?.close();
});

describe('Node.js under the V8 inspector, through the python tools', () => {
  it('a conditional breakpoint finds the line that gets no bulk discount; locals, evaluate, step, output, the end', async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'orders.js', env: { PRICING_REGION: 'eu' } });
    const stop = await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: 'lib/pricing.js', line: 7, condition: 'line.qty === BULK_FROM' });
    expect(stop).toMatchObject({ hit: true, completed: false, status: 'paused', error: null, function: 'lineTotal' });
    expect(stop.frameInfo.file).toMatch(/lib\/pricing\.js$/);
    expect(stop.frameInfo.line).toBe(7);
    expect(stop.locals.line.repr).toBe('{sku: "ink", qty: 5, cents: 900}');
    expect(stop.locals.cents).toMatchObject({ type: 'number', repr: '4500', isTruncated: false });
    expect(stop.source).toMatch(/-> 7\s+if \(line\.qty > BULK_FROM\)/);
    expect(stop.stack.map((f: { name: string }) => f.name).slice(0, 2)).toEqual(['lineTotal', '<anonymous>']);
    const cents = await pyOk(dk, 'python_evaluate', { sessionId, expression: 'line.qty * line.cents' });
    expect(cents.repr).toBe('4500');
    const bad = await pyFails(dk, 'python_evaluate', { sessionId, expression: 'nosuch + 1' });
    expect(bad).toMatch(/nosuch is not defined/);
    const stepped = await pyOk(dk, 'python_step', { sessionId, kind: 'over' });
    expect(stepped).toMatchObject({ status: 'paused', reason: 'step', frameInfo: { line: 10 } });
    await pyOk(dk, 'python_set_breakpoints', { sessionId, file: 'lib/pricing.js', breakpoints: [] });
    const end = await pyOk(dk, 'python_continue', { sessionId });
    expect(end).toMatchObject({ completed: true, status: 'completed', error: null, exitCode: 0 });
    const out = await dk.tool('python_get_output', { sessionId });
    expect(out.text).toContain('order b-2: 4950');
    const err = await dk.tool('python_get_output', { sessionId, stream: 'stderr' });
    expect(err.text).toContain('priced 2 orders in eu');
    expect(err.text).not.toMatch(/Debugger|inspector/);
    await pyOk(dk, 'python_end_session', { sessionId });
  });

  it('an exception deep in async code stops where it is thrown, with its async callers and a JavaScript stack', async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'limits.mjs' });
    const stop = await pyOk(dk, 'python_continue', { sessionId });
    expect(stop).toMatchObject({ hit: false, completed: false, status: 'error', reason: 'exception', function: 'dailyLimit' });
    expect(stop.error.type).toBe('TypeError');
    expect(stop.error.message).toBe("Cannot read properties of undefined (reading 'daily')");
    expect(stop.error.traceback).toMatch(/^TypeError: Cannot read properties of undefined \(reading 'daily'\)\n {4}at dailyLimit \(.*limits\.mjs:11\)\n {4}at async summarize \(.*limits\.mjs:16\)/);
    const name = await pyOk(dk, 'python_evaluate', { sessionId, expression: 'name' });
    expect(name.repr).toBe('"apac"');
    const end = await pyOk(dk, 'python_continue', { sessionId });
    expect(end).toMatchObject({ completed: true, status: 'error' });
    await pyOk(dk, 'python_end_session', { sessionId });
  });

  it('TypeScript through tsx: a breakpoint by its .ts line stops there, reported in the .ts file', async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'ts/main.ts' });
    const stop = await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: 'ts/inventory.ts', line: 9 });
    expect(stop).toMatchObject({ hit: true, status: 'paused', function: 'restock' });
    expect(stop.frameInfo.file).toMatch(/ts\/inventory\.ts$/);
    expect(stop.frameInfo.line).toBe(9);
    expect(stop.locals.short.repr).toBe('2');
    expect(stop.source).toMatch(/->\s+9\s+const order = short > 0/);
    expect(stop.stack.slice(0, 2)).toMatchObject([
      { name: 'restock', file: 'ts/inventory.ts', line: 9 },
      { file: 'ts/main.ts', line: 7 },
    ]);
    // The second item: the same .ts line, hit again.
    const again = await pyOk(dk, 'python_continue', { sessionId });
    expect(again).toMatchObject({ hit: true, frameInfo: { line: 9 } });
    expect(again.locals.item.repr).toContain('"nut"');
    await pyOk(dk, 'python_set_breakpoints', { sessionId, file: 'ts/inventory.ts', breakpoints: [] });
    const end = await pyOk(dk, 'python_continue', { sessionId });
    expect(end).toMatchObject({ completed: true, status: 'completed', exitCode: 0 });
    expect((await dk.tool('python_get_output', { sessionId })).text).toContain('[4,0]');
    await pyOk(dk, 'python_end_session', { sessionId });
  });
});
