import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectStdio, startHttpServer, type TestClient } from './helpers/client.js';
import { descendants } from './helpers/procs.js';
import { pyFails, pyOk, restApi } from './helpers/python.js';

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
    const out = (await dk.tool('python_get_output', { sessionId })).structured.text;
    expect(out).toBe('order a-1: 700\norder b-2: 4950\ngrand total 5650\n');
    const err = (await dk.tool('python_get_output', { sessionId, stream: 'stderr' })).structured.text;
    // The inspector's own lines ("Debugger listening on ...", "Waiting for the debugger to disconnect...") are not the program's.
    expect(err).toBe('priced 2 orders in eu\n');
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
    expect((await dk.tool('python_get_output', { sessionId })).structured.text).toBe('[4,0]\n');
    await pyOk(dk, 'python_end_session', { sessionId });
  });

  it('a compiled build with source maps: a breakpoint by the .ts line stops in the .js that runs, reported at the .ts line', async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'built/out/stock.js' });
    const stop = await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: 'built/src/stock.ts', line: 7 });
    expect(stop).toMatchObject({ hit: true, status: 'paused', function: 'low', frameInfo: { line: 7 } });
    expect(stop.frameInfo.file).toMatch(/built\/src\/stock\.ts$/);
    expect(stop.locals.bin.repr).toBe('{sku: "a", count: 1}');
    expect(stop.source).toMatch(/->\s+7\s+if \(bin\.count < under\)/);
    await pyOk(dk, 'python_end_session', { sessionId });
  });

  it('hit counts and logpoints: the third line priced stops; a logpoint logs without stopping', async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'orders.js' });
    await pyOk(dk, 'python_set_breakpoints', { sessionId, file: 'lib/pricing.js', breakpoints: [{ line: 6, logMessage: 'pricing {line.sku} x{line.qty}' }] });
    const stop = await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: 'lib/pricing.js', line: 10, hitCondition: '3' });
    expect(stop).toMatchObject({ hit: true, status: 'paused', function: 'lineTotal', frameInfo: { line: 10 } });
    expect(stop.locals.line.repr).toContain('"ink"');
    expect((await pyOk(dk, 'python_get_session', { sessionId })).lastBreakpoint).toEqual({ file: 'lib/pricing.js', line: 10, hitCount: 1 });
    const out = (await dk.tool('python_get_output', { sessionId })).structured.text as string;
    // (The logpoint's lines come from the adapter, the program's own from its stdout: only their own order is fixed.)
    expect(out.split('\n').filter((l) => l.startsWith('pricing'))).toEqual(['pricing pen x2', 'pricing pad x1', 'pricing ink x5']);
    await pyOk(dk, 'python_end_session', { sessionId });
  });

  it('a condition that throws stops there with the error, not taken as false; a condition that does not parse is refused', async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'orders.js' });
    const stop = await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: 'lib/pricing.js', line: 7, condition: 'nosuch.qty > 1' });
    expect(stop).toMatchObject({ hit: true, status: 'paused', reason: 'breakpoint', error: null, frameInfo: { line: 7 } });
    expect(stop.conditionError).toMatchObject({ condition: 'nosuch.qty > 1', error: 'ReferenceError: nosuch is not defined' });
    const refused = await pyFails(dk, 'python_run_to_breakpoint', { sessionId, file: 'lib/pricing.js', line: 7, condition: 'line.qty >' });
    expect(refused).toMatch(/condition "line\.qty >" does not compile: SyntaxError/);
    await pyOk(dk, 'python_set_breakpoints', { sessionId, file: 'lib/pricing.js', breakpoints: [] });
    const end = await pyOk(dk, 'python_continue', { sessionId });
    expect(end).toMatchObject({ completed: true, status: 'completed', exitCode: 0 });
    await pyOk(dk, 'python_end_session', { sessionId });
  });

  it('an exception the program catches does not stop it, unless stopOnRaisedExceptions asks', async () => {
    const plain = await pyOk(dk, 'python_start_session', { entry: 'parse.js' });
    expect(await pyOk(dk, 'python_continue', { sessionId: plain.sessionId })).toMatchObject({ completed: true, status: 'completed', exitCode: 0 });
    expect((await dk.tool('python_get_output', { sessionId: plain.sessionId })).structured.text).toContain('skipped {bad\nparsed 2');
    await pyOk(dk, 'python_end_session', { sessionId: plain.sessionId });
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'parse.js', stopOnRaisedExceptions: true });
    const stop = await pyOk(dk, 'python_continue', { sessionId });
    expect(stop).toMatchObject({ status: 'error', reason: 'exception', function: 'parse' });
    expect(stop.error.type).toBe('SyntaxError');
    expect(stop.error.message).toMatch(/JSON/);
    expect((await pyOk(dk, 'python_evaluate', { sessionId, expression: 'text' })).repr).toBe('"{bad"');
    await pyOk(dk, 'python_end_session', { sessionId });
  });

  it('ending the session ends the program: no node is left; the inspector publishes no address to connect to', async () => {
    const before = new Set(descendants(dk.serverPid!).map((p) => p.pid));
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'orders.js' });
    await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: 'lib/pricing.js', line: 7 });
    const started = descendants(dk.serverPid!).filter((p) => !before.has(p.pid));
    expect(started.map((p) => p.args)).toEqual([expect.stringMatching(/--inspect-brk=127\.0\.0\.1:0 --inspect-publish-uid=stderr .*node-hook\.cjs/)]);
    // The inspector's secret WebSocket id is not published on its HTTP listing: another local process that finds the port
    // cannot learn where to connect and take the program over.
    const listening = execFileSync('ss', ['-ltnpH'], { encoding: 'utf8' })
      .split('\n')
      .find((l) => l.includes(`pid=${started[0]!.pid},`));
    const port = /127\.0\.0\.1:(\d+)/.exec(listening ?? '')?.[1];
    expect(port).toBeDefined();
    for (const route of ['/json/list', '/json']) {
      const listing = await (await fetch(`http://127.0.0.1:${port}${route}`)).text();
      expect(listing).not.toMatch(/ws:\/\/|webSocketDebuggerUrl|devtoolsFrontendUrl/);
    }
    await pyOk(dk, 'python_end_session', { sessionId });
    const left = new Set(descendants(dk.serverPid!).map((p) => p.pid));
    expect(started.filter((p) => left.has(p.pid))).toEqual([]);
  });
});

describe('Node.js function breakpoints: on the first line of each function of that name, set before its module runs', () => {
  it('a function a CommonJS module defines stops on entry, even called as soon as the module is loaded', async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'orders.js' });
    const before = await pyOk(dk, 'python_set_function_breakpoints', { sessionId, names: ['lineTotal'] });
    expect(before.breakpoints).toEqual([{ name: 'lineTotal', verified: false, message: 'set when the program starts' }]);
    const stop = await pyOk(dk, 'python_continue', { sessionId });
    expect(stop).toMatchObject({ hit: true, status: 'paused', reason: 'function breakpoint', function: 'lineTotal', frameInfo: { line: 6 } });
    expect(stop.frameInfo.file).toMatch(/lib\/pricing\.js$/);
    expect(stop.locals.line.repr).toBe('{sku: "pen", qty: 2, cents: 150}');
    // Set now, where the module is loaded already: found in it, and said so.
    const set = await pyOk(dk, 'python_set_function_breakpoints', { sessionId, names: ['lineTotal', 'noSuchFunction'] });
    expect(set.breakpoints[0]).toEqual({ name: 'lineTotal', verified: true });
    expect(set.breakpoints[1]).toMatchObject({ name: 'noSuchFunction', verified: false, message: expect.stringMatching(/^no function named noSuchFunction in the program's scripts loaded so far/) });
    expect((await pyOk(dk, 'python_continue', { sessionId })).locals.line.repr).toBe('{sku: "pad", qty: 1, cents: 400}');
    await pyOk(dk, 'python_set_function_breakpoints', { sessionId, names: [] });
    const second = await pyOk(dk, 'python_continue', { sessionId });
    expect(second, JSON.stringify(second)).toMatchObject({ completed: true, exitCode: 0 });
    await pyOk(dk, 'python_end_session', { sessionId });
  });

  it('in an ES module: a class method by Class.name, an object method by object.name; a TypeScript function stops at its .ts line', async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'ledger.mjs' });
    await pyOk(dk, 'python_set_function_breakpoints', { sessionId, names: ['Account.withdraw', 'fees.monthly'] });
    const fee = await pyOk(dk, 'python_continue', { sessionId });
    expect(fee).toMatchObject({ reason: 'function breakpoint', function: 'monthly', frameInfo: { line: 16 } });
    const withdraw = await pyOk(dk, 'python_continue', { sessionId });
    expect(withdraw).toMatchObject({ reason: 'function breakpoint', function: 'withdraw', frameInfo: { line: 9 } });
    expect(withdraw.locals.cents.repr).toBe('250');
    await pyOk(dk, 'python_end_session', { sessionId });
    const ts = await pyOk(dk, 'python_start_session', { entry: 'ts/main.ts' });
    await pyOk(dk, 'python_set_function_breakpoints', { sessionId: ts.sessionId, names: ['restock'] });
    const restock = await pyOk(dk, 'python_continue', { sessionId: ts.sessionId });
    expect(restock).toMatchObject({ reason: 'function breakpoint', function: 'restock', frameInfo: { line: 8 } });
    expect(restock.frameInfo.file).toMatch(/ts\/inventory\.ts$/);
    await pyOk(dk, 'python_end_session', { sessionId: ts.sessionId });
  });
});

describe('Node.js stepping', () => {
  it("o2-3: stepping into an awaited call lands in the callee, not in node's promise hooks", async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'stepinto.mjs' });
    expect(await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: 'stepinto.mjs', line: 4 })).toMatchObject({ hit: true, function: 'load' });
    const into = await pyOk(dk, 'python_step', { sessionId, kind: 'into' });
    expect(into).toMatchObject({ status: 'paused', reason: 'step', function: '#badges', frameInfo: { line: 9 } });
    expect(into.frameInfo.file).toMatch(/stepinto\.mjs$/);
    await pyOk(dk, 'python_end_session', { sessionId });
  });
});

describe('Node.js function breakpoints, attacked (n2)', () => {
  it('n2-2: a module too deep to walk does not hold the program at its stop before it runs; the named function still stops', async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'fnbp/deep.js' });
    await pyOk(dk, 'python_set_function_breakpoints', { sessionId, names: ['tail'] });
    expect(await pyOk(dk, 'python_continue', { sessionId, timeout: 20 })).toMatchObject({ reason: 'function breakpoint', function: 'tail', frameInfo: { line: 2 } });
    expect(await pyOk(dk, 'python_continue', { sessionId, timeout: 20 })).toMatchObject({ completed: true, exitCode: 0 });
    await pyOk(dk, 'python_end_session', { sessionId });
  });

  it('n2-3: a function never called never stops, though V8 moves its breakpoint into the next function', async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'fnbp/unused.js' });
    await pyOk(dk, 'python_set_function_breakpoints', { sessionId, names: ['helper'] });
    expect(await pyOk(dk, 'python_continue', { sessionId })).toMatchObject({ completed: true, exitCode: 0 });
    expect((await dk.tool('python_get_output', { sessionId })).structured.text).toBe('other 2\n');
    await pyOk(dk, 'python_end_session', { sessionId });
  });
});

describe('Node.js worker threads: each a thread of its own, set up as the main one before it runs', () => {
  it('a conditional breakpoint in a worker stops in that worker, named; evaluate runs in it; the program then ends', async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'workers/pool.js' });
    const stop = await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: 'workers/shard.js', line: 6, condition: 'v < 0' });
    expect(stop).toMatchObject({ hit: true, status: 'paused', function: 'sumPositive', frameInfo: { line: 6 } });
    expect(stop.frameInfo.file).toMatch(/workers\/shard\.js$/);
    expect(stop.thread).toBe('worker 2 (shard.js)');
    expect(stop.locals.v.repr).toBe('-4');
    expect(stop.locals.total.repr).toBe('10');
    expect((await pyOk(dk, 'python_evaluate', { sessionId, expression: 'values.join()' })).repr).toBe('"10,-4,7"');
    const text = (await dk.tool('python_inspect', { sessionId })).text;
    expect(text).toMatch(/^paused \(inspect\) in sumPositive at shard\.js:6 on thread worker 2 \(shard\.js\)/);
    const end = await pyOk(dk, 'python_continue', { sessionId });
    expect(end).toMatchObject({ completed: true, status: 'completed', exitCode: 0 });
    expect((await dk.tool('python_get_output', { sessionId })).structured.text).toBe('sums 6,17\n');
    await pyOk(dk, 'python_end_session', { sessionId });
  });

  it("two workers on one breakpoint: every hit of each is told, one stop at a time, none lost while another's is looked at", async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'workers/pool.js' });
    const seen: Record<string, string[]> = {};
    let stop = await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: 'workers/shard.js', line: 6 });
    while (!stop.completed) {
      expect(stop).toMatchObject({ hit: true, status: 'paused', frameInfo: { line: 6 } });
      (seen[stop.thread] ??= []).push(stop.locals.v.repr);
      stop = await pyOk(dk, 'python_continue', { sessionId });
    }
    expect(seen).toEqual({ 'worker 1 (shard.js)': ['3', '1', '2'], 'worker 2 (shard.js)': ['10', '-4', '7'] });
    expect(stop).toMatchObject({ status: 'completed', exitCode: 0 });
    expect((await dk.tool('python_get_output', { sessionId })).structured.text).toBe('sums 6,17\n');
    await pyOk(dk, 'python_end_session', { sessionId });
  });

  it('a run that times out pauses the thread that runs JavaScript (a busy worker, its main thread idle), and says so', async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'workers/spin.js' });
    const stop = await pyOk(dk, 'python_continue', { sessionId, timeout: 1 });
    expect(stop).toMatchObject({ status: 'paused', reason: 'pause', thread: 'worker 1' });
    expect(stop.error).toMatchObject({ type: 'TimeoutError' });
    expect(Number(stop.locals.spins.repr)).toBeGreaterThan(0);
    // Paused, the worker's count holds still.
    const first = (await pyOk(dk, 'python_evaluate', { sessionId, expression: 'spins' })).repr;
    expect((await pyOk(dk, 'python_evaluate', { sessionId, expression: 'spins' })).repr).toBe(first);
    await pyOk(dk, 'python_end_session', { sessionId });
  });

  it('more workers at once than are debugged (64): the rest run undebugged, and the program ends as it would', async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'workers/crowd.js', args: ['70'] });
    const end = await pyOk(dk, 'python_continue', { sessionId, timeout: 120 });
    expect(end).toMatchObject({ completed: true, status: 'completed', exitCode: 0 });
    expect((await dk.tool('python_get_output', { sessionId })).structured.text).toBe('all 70 answered\n');
    await pyOk(dk, 'python_end_session', { sessionId });
  });

  it('l2-1: a timed-out run with several busy workers tells one pause; the others are not stops told at the next runs', async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'workers/spinners.js' });
    const first = await pyOk(dk, 'python_continue', { sessionId, timeout: 1 });
    expect(first).toMatchObject({ status: 'paused', reason: 'pause', error: { type: 'TimeoutError' } });
    // Before: each continue came back at once with another worker's pause, no error, one a worker.
    for (let run = 0; run < 3; run++) expect(await pyOk(dk, 'python_continue', { sessionId, timeout: 1 })).toMatchObject({ reason: 'pause', error: { type: 'TimeoutError' } });
    await pyOk(dk, 'python_end_session', { sessionId });
  });

  it('l2-2: a worker blocked in a synchronous call does not hold the session: breakpoints set for it at once, bound when it runs again', async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'workers/sleeper.js' });
    const main = await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: 'workers/sleeper.js', line: 9 });
    expect(main).toMatchObject({ hit: true, frameInfo: { line: 9 } });
    // Before: 30 s, then TIMEOUT (the worker reads the inspector only once execFileSync returns).
    const set = await pyOk(dk, 'python_set_breakpoints', { sessionId, file: 'workers/sleeper-worker.js', breakpoints: [{ line: 6 }] });
    expect(set.breakpoints[0]).toMatchObject({ verified: true });
    const worker = await pyOk(dk, 'python_continue', { sessionId });
    expect(worker).toMatchObject({ hit: true, thread: 'worker 1 (sleeper-worker.js)', frameInfo: { line: 6 } });
    expect(worker.locals.woke.repr).toBe('"awake"');
    await pyOk(dk, 'python_end_session', { sessionId });
  });

  it('o2-1: a TypeScript worker started with its own loader (no debugkit hook in it): a .ts line binds as its script loads', async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'ts/quotes.ts' });
    const stop = await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: 'ts/quote-worker.ts', line: 10, condition: 'qty < 2' });
    expect(stop).toMatchObject({ hit: true, thread: expect.stringMatching(/^worker \d+ \(quote-worker\.ts\)$/), function: 'price', frameInfo: { line: 10 } });
    expect(stop.frameInfo.file).toMatch(/ts\/quote-worker\.ts$/);
    expect(stop.locals.qty.repr).toBe('1');
    await pyOk(dk, 'python_end_session', { sessionId });
  });

  // Under load this hung 1-2 runs in 6 (stop 44): clearing the function breakpoints sets the module stop's flag with an
  // evaluate, which paused the main thread at its own instrumentation breakpoint while requests to the paused workers
  // passed through it; the main thread's inspector then never answered again. Such evaluates now run without breaks.
  it("o2-5: a worker's stop held at a function breakpoint cleared since is not told: it goes on", async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'workers/pool.js' });
    await pyOk(dk, 'python_set_function_breakpoints', { sessionId, names: ['sumPositive'] });
    const first = await pyOk(dk, 'python_continue', { sessionId });
    expect(first).toMatchObject({ reason: 'function breakpoint', function: 'sumPositive' });
    await pyOk(dk, 'python_set_function_breakpoints', { sessionId, names: [] });
    const second = await pyOk(dk, 'python_continue', { sessionId });
    expect(second, JSON.stringify(second)).toMatchObject({ completed: true, exitCode: 0 });
    expect((await dk.tool('python_get_output', { sessionId })).structured.text).toBe('sums 6,17\n');
    await pyOk(dk, 'python_end_session', { sessionId });
  });

  it("an uncaught error in an ES-module worker's async code stops in the worker, with its stack; the program's own handling decides the end", async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'workers/rates.mjs' });
    const stop = await pyOk(dk, 'python_continue', { sessionId });
    expect(stop).toMatchObject({ status: 'error', reason: 'exception', function: 'toUsd', thread: 'worker 1 (convert.mjs)' });
    expect(stop.error.type).toBe('TypeError');
    expect(stop.error.message).toBe("Cannot read properties of undefined (reading 'usd')");
    expect(stop.error.traceback).toMatch(/at toUsd \(.*convert\.mjs:7\)/);
    expect((await pyOk(dk, 'python_evaluate', { sessionId, expression: 'currency' })).repr).toBe('"chf"');
    const end = await pyOk(dk, 'python_continue', { sessionId });
    expect(end).toMatchObject({ completed: true, exitCode: 1 });
    expect((await dk.tool('python_get_output', { sessionId, stream: 'stderr' })).structured.text).toBe("worker failed: Cannot read properties of undefined (reading 'usd')\n");
    await pyOk(dk, 'python_end_session', { sessionId });
  });
});

describe('Node.js: what the program does stays its own, and answers stay true (attack 18aq j2)', () => {
  it('j2-2: a child the program forks runs as it would without debugkit, neither waiting for a debugger nor serving an inspector', async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'forker.js' });
    const end = await pyOk(dk, 'python_continue', { sessionId, timeout: 20 });
    expect(end).toMatchObject({ completed: true, status: 'completed', exitCode: 0 });
    expect((await dk.tool('python_get_output', { sessionId })).structured.text).toBe('child ran with []\nchild exited 0\n');
    await pyOk(dk, 'python_end_session', { sessionId });
  });

  it('j2-9: a source map naming a file outside the root is not believed: the stop is reported where it is, and shows none of that file', async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'outside.js' });
    const stop = await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: 'outside.js', line: 4 });
    expect(stop).toMatchObject({ hit: true, frameInfo: { line: 4 } });
    expect(stop.frameInfo.file).toMatch(/outside\.js$/);
    expect(stop.source).toMatch(/->\s+4\s+console\.log\(value\);/);
    expect(stop.stack.map((f: { file: string }) => f.file)).toEqual(['outside.js']);
    expect(JSON.stringify(stop)).not.toMatch(/\/etc\/passwd|root:x:0/);
    await pyOk(dk, 'python_end_session', { sessionId });
  });

  it("j2-5: a long stderr line without a newline that starts like the inspector's own is the program's, whole", async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'noisy.js' });
    expect(await pyOk(dk, 'python_continue', { sessionId })).toMatchObject({ completed: true, exitCode: 0 });
    const err = await pyOk(dk, 'python_get_output', { sessionId, stream: 'stderr', maxChars: 30000 });
    expect(err.text).toBe(`W${'word '.repeat(4000)}`);
    await pyOk(dk, 'python_end_session', { sessionId });
  });

  it('k2-1, k2-2: in ES modules, a rejection an async try does not catch stops; one Promise.allSettled handles does not', async () => {
    const returned = await pyOk(dk, 'python_start_session', { entry: 'returned.mjs' });
    const stop = await pyOk(dk, 'python_continue', { sessionId: returned.sessionId });
    expect(stop).toMatchObject({ status: 'error', reason: 'exception', function: 'fail', error: { type: 'Error', message: 'not caught by the try' } });
    await pyOk(dk, 'python_end_session', { sessionId: returned.sessionId });
    const settled = await pyOk(dk, 'python_start_session', { entry: 'settled.mjs' });
    expect(await pyOk(dk, 'python_continue', { sessionId: settled.sessionId })).toMatchObject({ completed: true, status: 'completed', exitCode: 0 });
    expect((await dk.tool('python_get_output', { sessionId: settled.sessionId })).structured.text).toBe('rejected\n');
    await pyOk(dk, 'python_end_session', { sessionId: settled.sessionId });
  });

  it("l2-3: a line longer than the inspector's largest message, logged by the program, is its output only: the session goes on", async () => {
    // Before: V8 sent every console.log's arguments to debugkit whole; 130 MB passed the WebSocket's bound and closed the session.
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'workers/loud.js' });
    const stop = await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: 'workers/loud.js', line: 5, timeout: 120 });
    expect(stop).toMatchObject({ hit: true, frameInfo: { line: 5 } });
    expect(stop.locals.after.repr).toBe('130000000');
    expect(await pyOk(dk, 'python_continue', { sessionId })).toMatchObject({ completed: true, exitCode: 0 });
    await pyOk(dk, 'python_end_session', { sessionId });
  });

  it('j2-6: a 40 MB string local is shown cut, read from a copy cut in the program; the others whole', async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'bigstr.js' });
    const stop = await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: 'bigstr.js', line: 5 });
    expect(stop.locals.big).toMatchObject({ type: 'string', isTruncated: true });
    expect(stop.locals.big.repr).toMatch(/^"x{100}/);
    expect(stop.locals.small).toEqual({ type: 'string', repr: '"ok"', isTruncated: false });
    expect((await pyOk(dk, 'python_evaluate', { sessionId, expression: 'big.length' })).repr).toBe(String(40 * 1024 * 1024));
    await pyOk(dk, 'python_end_session', { sessionId });
  });
});

describe('JavaScript over the REST contract, unchanged', () => {
  it('POST /sessions with a .js entry, a breakpoint, continue to the next, GET, DELETE', async () => {
    const key = 'node-rest-key-abcdef';
    const server = await startHttpServer(['--root', NODE_ROOT, '--api-key', key]);
    const base = new URL(server.url).origin;
    const api = restApi(base, key);
    try {
      const created = await api('POST', '/sessions', { entry: 'orders.js' });
      expect(created.status).toBe(200);
      const id = created.json.sessionId as string;
      const hit = await api('POST', `/sessions/${id}/breakpoint`, { file: 'lib/pricing.js', line: 7 });
      expect(hit.status).toBe(200);
      expect(Object.keys(hit.json).sort()).toEqual(['completed', 'error', 'frameInfo', 'hit', 'locals']);
      expect(hit.json).toMatchObject({ hit: true, completed: false, error: null, frameInfo: { file: path.join(NODE_ROOT, 'lib/pricing.js'), line: 7 } });
      expect(hit.json.locals.line.repr).toBe('{sku: "pen", qty: 2, cents: 150}');
      const state = await api('GET', `/sessions/${id}`);
      expect(state.json).toMatchObject({ status: 'paused', lastBreakpoint: { file: 'lib/pricing.js', line: 7, hitCount: 1 } });
      // The contract's continue adds a breakpoint and runs to the next stop: line 10 of the same call.
      const next = await api('POST', `/sessions/${id}/continue`, { file: 'lib/pricing.js', line: 10 });
      expect(next.json).toMatchObject({ hit: true, completed: false, frameInfo: { line: 10 } });
      expect(next.json.locals.cents.repr).toBe('300');
      expect(await api('DELETE', `/sessions/${id}`)).toEqual({ status: 200, json: { ended: true } });
    } finally {
      await server.stop();
    }
  });
});
