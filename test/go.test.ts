import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectStdio, startHttpServer, type TestClient } from './helpers/client.js';
import { descendants } from './helpers/procs.js';
import { pyFails, pyOk, restApi } from './helpers/python.js';

// Issue 24: Go programs behind the python toolset's tools, through Delve's DAP server (`dlv dap`):
// the same tools, the same compact stop. The programs are this repository's own (test/programs/go).
const GO_ROOT = path.resolve(import.meta.dirname, 'programs/go');
let dk: TestClient;

beforeAll(async () => {
  dk = await connectStdio({ root: GO_ROOT });
  await dk.client.listTools();
});
afterAll(async () => {
  await dk?.close();
});

/** A first build compiles Go's standard library without optimizations: up to a minute on a cold cache. */
const BUILD = 180_000;

describe('Go under Delve, through the python tools', () => {
  it(
    'a conditional breakpoint finds the line that gets no bulk discount; locals, evaluate, step, output, the end',
    async () => {
      const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'pricing/main.go', env: ['PRICING_REGION=eu'] });
      const stop = await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: 'pricing/price.go', line: 19, condition: 'l.Qty == bulkFrom', timeout: 60 });
      expect(stop).toMatchObject({ hit: true, completed: false, status: 'paused', error: null, function: 'main.lineTotal' });
      expect(stop.frameInfo.file).toMatch(/pricing\/price\.go$/);
      expect(stop.frameInfo.line).toBe(19);
      expect(stop.locals.l.repr).toContain('SKU: "ink"');
      expect(stop.locals.l.repr).toContain('Qty: 5');
      expect(stop.source).toMatch(/-> 19\s+if l\.Qty > bulkFrom/);
      expect(stop.stack.map((f: { name: string }) => f.name).slice(0, 3)).toEqual(['main.lineTotal', 'main.total', 'main.main']);
      expect(stop.stackDepth).toBeGreaterThanOrEqual(4);
      const cents = await pyOk(dk, 'python_evaluate', { sessionId, expression: 'l.Qty * l.Cents' });
      expect(cents.repr).toBe('4500');
      const bad = await pyFails(dk, 'python_evaluate', { sessionId, expression: 'nosuch + 1' });
      expect(bad).toMatch(/cannot evaluate "nosuch \+ 1": .*could not find symbol value for nosuch/);
      // 5 is not above 5: the step goes past the discount.
      const stepped = await pyOk(dk, 'python_step', { sessionId, kind: 'over' });
      expect(stepped).toMatchObject({ status: 'paused', reason: 'step', frameInfo: { line: 22 } });
      expect(stepped.locals.cents.repr).toBe('4500');
      const state = await pyOk(dk, 'python_get_session', { sessionId });
      expect(state).toMatchObject({ status: 'paused', lastBreakpoint: { file: 'pricing/price.go', line: 19, hitCount: 1 } });
      await pyOk(dk, 'python_set_breakpoints', { sessionId, file: 'pricing/price.go', breakpoints: [] });
      const end = await pyOk(dk, 'python_continue', { sessionId });
      expect(end).toMatchObject({ completed: true, status: 'completed', error: null, exitCode: 0 });
      const out = await dk.tool('python_get_output', { sessionId });
      expect(out.text).toContain('order b-2: 5850');
      expect(out.text).toContain('grand total 7750');
      const err = await dk.tool('python_get_output', { sessionId, stream: 'stderr' });
      expect(err.text).toContain('priced 3 orders in eu');
      await pyOk(dk, 'python_end_session', { sessionId });
    },
    BUILD,
  );

  it(
    'a panic in a goroutine is an error with its goroutine, stack and source line, at the program own frame; then the run ends in error',
    async () => {
      const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'workers/main.go' });
      const stop = await pyOk(dk, 'python_continue', { sessionId, timeout: 60 });
      expect(stop).toMatchObject({ hit: false, completed: false, status: 'error', reason: 'exception', function: 'main.count', frameInfo: null, locals: null });
      expect(stop.error.type).toBe('panic');
      expect(stop.error.message).toBe('assignment to entry in nil map');
      expect(stop.error.traceback).toMatch(/^panic: assignment to entry in nil map\n\ngoroutine \d+ \[running\]:\nmain\.count\n\t.*workers\/main\.go:28\n\t\ts\.counts\[w\]\+\+\n/);
      expect(stop.error.traceback).not.toMatch(/runtime\.gopanic/);
      expect(stop.stack.map((f: { name: string }) => f.name)).toContain('main.count');
      // The shard whose map was never made, seen from the program's own frame.
      const frame = stop.stack.find((f: { name: string }) => f.name === 'main.count').index;
      const shard = await pyOk(dk, 'python_evaluate', { sessionId, expression: 's.name', frame });
      expect(shard.repr).toBe('"s2"');
      const end = await pyOk(dk, 'python_continue', { sessionId });
      expect(end).toMatchObject({ completed: true, status: 'error' });
      await pyOk(dk, 'python_end_session', { sessionId });
    },
    BUILD,
  );

  it(
    'a function breakpoint by Go name stops in it; one that names no function says so',
    async () => {
      const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'pricing/main.go' });
      const before = await pyOk(dk, 'python_set_function_breakpoints', { sessionId, names: ['main.total'] });
      expect(before.breakpoints).toEqual([{ name: 'main.total', verified: false, message: 'set when the program starts' }]);
      const stop = await pyOk(dk, 'python_continue', { sessionId, timeout: 60 });
      expect(stop).toMatchObject({ status: 'paused', reason: 'function breakpoint', function: 'main.total' });
      const set = await pyOk(dk, 'python_set_function_breakpoints', { sessionId, names: ['main.total', 'main.nothere'] });
      expect(set.breakpoints[0]).toMatchObject({ name: 'main.total', verified: true });
      expect(set.breakpoints[1]).toMatchObject({ name: 'main.nothere', verified: false, message: expect.stringMatching(/not found/) });
      await pyOk(dk, 'python_end_session', { sessionId });
    },
    BUILD,
  );

  it(
    'a program that does not build is the answer to starting it: the compiler errors, no session',
    async () => {
      const text = await pyFails(dk, 'python_start_session', { entry: 'broken/main.go' });
      expect(text).toMatch(/the Go program does not build/);
      expect(text).toMatch(/main\.go:7:\d+: undefined: totl/);
      expect(await pyFails(dk, 'python_start_session', { entry: 'pricing/main.go', pythonPath: '/usr/bin/python3' })).toMatch(/pythonPath is for Python entries/);
    },
    BUILD,
  );

  it(
    'Delve starts while the package builds; a session ended before it ran ends it too',
    async () => {
      const before = new Set(descendants(dk.serverPid!).map((p) => p.pid));
      const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'pricing/main.go' });
      const started = descendants(dk.serverPid!).filter((p) => !before.has(p.pid));
      expect(started.map((p) => p.args)).toEqual([expect.stringMatching(/\bdlv dap\b/)]);
      await pyOk(dk, 'python_end_session', { sessionId });
      const left = new Set(descendants(dk.serverPid!).map((p) => p.pid));
      expect(started.filter((p) => left.has(p.pid))).toEqual([]);
    },
    BUILD,
  );

  it(
    'ending the session ends Delve and the program',
    async () => {
      const before = new Set(descendants(dk.serverPid!).map((p) => p.pid));
      const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'pricing/main.go' });
      await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: 'pricing/price.go', line: 26, timeout: 60 });
      const started = descendants(dk.serverPid!).filter((p) => !before.has(p.pid));
      expect(started.map((p) => p.args)).toEqual([expect.stringMatching(/\bdlv dap\b/), expect.stringMatching(/debugkit-go-.*\/program$/)]);
      await pyOk(dk, 'python_end_session', { sessionId });
      const left = new Set(descendants(dk.serverPid!).map((p) => p.pid));
      expect(started.filter((p) => left.has(p.pid))).toEqual([]);
    },
    BUILD,
  );

  it(
    "hit counts and logpoints are Delve's: the third line priced stops; a logpoint logs without stopping",
    async () => {
      const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'pricing/main.go' });
      await pyOk(dk, 'python_set_breakpoints', { sessionId, file: 'pricing/price.go', breakpoints: [{ line: 18, logMessage: 'pricing {l.SKU} x{l.Qty}' }] });
      const stop = await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: 'pricing/price.go', line: 26, hitCondition: '3', timeout: 60 });
      expect(stop).toMatchObject({ hit: true, status: 'paused', function: 'main.total', frameInfo: { line: 26 } });
      expect(stop.locals.o.repr).toContain('ID: "c-3"');
      expect((await pyOk(dk, 'python_get_session', { sessionId })).lastBreakpoint).toEqual({ file: 'pricing/price.go', line: 26, hitCount: 1 });
      await pyOk(dk, 'python_end_session', { sessionId });
    },
    BUILD,
  );
});

describe('Go: what runs is the entry, and answers stay true (attack 18ap i2)', () => {
  it(
    'i2-3: a generator left out by //go:build ignore runs alone; the package leaves it out; a _test.go entry is refused',
    async () => {
      const run = async (entry: string) => {
        const { sessionId } = await pyOk(dk, 'python_start_session', { entry });
        const end = await pyOk(dk, 'python_continue', { sessionId, timeout: 60 });
        const out = await dk.tool('python_get_output', { sessionId });
        await pyOk(dk, 'python_end_session', { sessionId });
        return { end, out: out.structured.text as string };
      };
      const program = await run('gen/main.go');
      expect(program.end).toMatchObject({ completed: true, status: 'completed', exitCode: 0 });
      expect(program.out).toBe('the program\n');
      expect((await run('gen/gen.go')).out).toBe('the generator\n');
      expect(await pyFails(dk, 'python_start_session', { entry: 'gen/main_test.go' })).toMatch(/main_test\.go is a test file, which go test runs, not a program/);
    },
    BUILD,
  );

  it(
    'i2-2: a condition Delve cannot evaluate is the breakpoint condition error, not a crash; the run then ends completed',
    async () => {
      const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'pricing/main.go' });
      const stop = await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: 'pricing/price.go', line: 19, condition: 'nosuch == 3', timeout: 60 });
      expect(stop).toMatchObject({ hit: true, status: 'paused', reason: 'breakpoint', error: null, frameInfo: { line: 19 } });
      expect(stop.conditionError).toMatchObject({ condition: 'nosuch == 3', error: expect.stringMatching(/^error evaluating expression: .*nosuch/) });
      expect(stop.locals.l.repr).toContain('SKU: "pen"');
      await pyOk(dk, 'python_set_breakpoints', { sessionId, file: 'pricing/price.go', breakpoints: [] });
      const end = await pyOk(dk, 'python_continue', { sessionId });
      expect(end).toMatchObject({ completed: true, status: 'completed', error: null, exitCode: 0 });
      await pyOk(dk, 'python_end_session', { sessionId });
    },
    BUILD,
  );

  it(
    'i2-3: a breakpoint that could never stop is said in the answer that ends the run',
    async () => {
      const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'pricing/main.go' });
      await pyOk(dk, 'python_set_breakpoints', { sessionId, file: 'pricing/price.go', breakpoints: [{ line: 14 }] });
      const end = await pyOk(dk, 'python_continue', { sessionId, timeout: 60 });
      expect(end).toMatchObject({ completed: true, status: 'completed' });
      expect(end.breakpointWarnings).toEqual([expect.objectContaining({ file: expect.stringMatching(/price\.go$/), line: 14, verified: false })]);
      await pyOk(dk, 'python_end_session', { sessionId });
    },
    BUILD,
  );
});

describe('Go over the REST contract, unchanged', () => {
  it(
    'POST /sessions with a .go entry, a breakpoint, continue to the next, GET, DELETE',
    async () => {
      const key = 'go-rest-key-abcdef';
      const server = await startHttpServer(['--root', GO_ROOT, '--api-key', key]);
      const base = new URL(server.url).origin;
      const api = restApi(base, key);
      try {
        const created = await api('POST', '/sessions', { entry: 'pricing/main.go', env: { PRICING_REGION: 'us' } });
        expect(created.status).toBe(200);
        const id = created.json.sessionId as string;
        const hit = await api('POST', `/sessions/${id}/breakpoint`, { file: 'pricing/price.go', line: 19 });
        expect(hit.status).toBe(200);
        expect(Object.keys(hit.json).sort()).toEqual(['completed', 'error', 'frameInfo', 'hit', 'locals']);
        expect(hit.json).toMatchObject({ hit: true, completed: false, error: null, frameInfo: { file: path.join(GO_ROOT, 'pricing/price.go'), line: 19 } });
        expect(hit.json.locals.l.repr).toContain('SKU: "pen"');
        const state = await api('GET', `/sessions/${id}`);
        expect(state.json).toMatchObject({ status: 'paused', lastBreakpoint: { file: 'pricing/price.go', line: 19, hitCount: 1 } });
        const next = await api('POST', `/sessions/${id}/continue`, { file: 'pricing/price.go', line: 26 });
        // The breakpoint at 19 stays: the next stop is its second hit, the order's second line.
        expect(next.json).toMatchObject({ hit: true, completed: false, frameInfo: { line: 19 } });
        expect(next.json.locals.l.repr).toContain('SKU: "pad"');
        expect(await api('DELETE', `/sessions/${id}`)).toEqual({ status: 200, json: { ended: true } });
      } finally {
        await server.stop();
      }
    },
    BUILD,
  );
});
