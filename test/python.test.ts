import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectStdio, type TestClient } from './helpers/client.js';
import { descendants, isAlive, waitFor } from './helpers/procs.js';
import { PY_ROOT, pyFails, pyOk } from './helpers/python.js';

let dk: TestClient;
const CALC = 'src/calculator.py';
const FEATURES = 'src/features.py';

beforeAll(async () => {
  dk = await connectStdio({ root: PY_ROOT });
});
afterAll(async () => {
  await dk?.close();
});

async function start(entry: string, extra: Record<string, unknown> = {}): Promise<string> {
  const { sessionId } = await pyOk(dk, 'python_start_session', { entry, ...extra });
  expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);
  return sessionId;
}

describe('python toolset: the contract flows through MCP', () => {
  it('hits a breakpoint with x, y and result, then continues to the second one and to the end', async () => {
    const id = await start(CALC);
    expect(await pyOk(dk, 'python_get_session', { sessionId: id })).toEqual({ status: 'idle', lastBreakpoint: null, timings: null });

    const hit = await pyOk(dk, 'python_run_to_breakpoint', { sessionId: id, file: CALC, line: 11 });
    expect(hit).toMatchObject({ hit: true, completed: false, error: null, status: 'paused', frameInfo: { file: `${PY_ROOT}/${CALC}`, line: 11 } });
    expect(hit.locals).toEqual({
      x: { type: 'int', repr: '10', isTruncated: false },
      y: { type: 'int', repr: '20', isTruncated: false },
      result: { type: 'int', repr: '30', isTruncated: false },
    });
    // The snapshot an agent reads at a glance: the code around the stop and the stack.
    expect(hit.source).toContain('-> 11      return result');
    expect(hit.stack.map((f: { name: string }) => f.name)).toEqual(['add', 'main', '<module>']);
    expect(hit.stack[1]).toMatchObject({ file: CALC, line: 17 });
    expect(JSON.stringify(hit).length).toBeLessThan(1600); // about 400 tokens

    const state = await pyOk(dk, 'python_get_session', { sessionId: id });
    expect(state.status).toBe('paused');
    expect(state.lastBreakpoint).toEqual({ file: CALC, line: 11, hitCount: 1 });
    expect(state.timings.lastRunMs).toBeGreaterThan(0);
    expect(state.timings.totalCpuTimeMs).toBeGreaterThan(0);

    const second = await pyOk(dk, 'python_continue', { sessionId: id, file: CALC, line: 19 });
    expect(second).toMatchObject({ hit: true, completed: false, frameInfo: { line: 19 } });
    expect(second.locals.final_result).toEqual({ type: 'float', repr: '42.5', isTruncated: false });

    const end = await pyOk(dk, 'python_continue', { sessionId: id });
    expect(end).toMatchObject({ hit: false, completed: true, frameInfo: null, locals: null, error: null, status: 'completed', exitCode: 0 });
    const out = await pyOk(dk, 'python_get_output', { sessionId: id });
    expect(out.text).toBe('final 42.5\n');
    expect((await pyOk(dk, 'python_get_session', { sessionId: id })).status).toBe('completed');
    expect(await pyFails(dk, 'python_step', { sessionId: id })).toMatch(/the program has completed: start a new session/);
    expect(await pyOk(dk, 'python_end_session', { sessionId: id })).toEqual({ ended: true });
  });

  it('completes without a hit when the breakpoint line never runs', async () => {
    const id = await start(CALC);
    const run = await pyOk(dk, 'python_run_to_breakpoint', { sessionId: id, file: CALC, line: 21 });
    expect(run).toMatchObject({ hit: false, completed: true, frameInfo: null, locals: null, error: null });
    await pyOk(dk, 'python_end_session', { sessionId: id });
  });

  it('reports an uncaught exception before the breakpoint with its traceback', async () => {
    const id = await start(CALC, { args: ['--divide-by-zero'] });
    const run = await pyOk(dk, 'python_run_to_breakpoint', { sessionId: id, file: CALC, line: 22 });
    expect(run).toMatchObject({ hit: false, completed: false, frameInfo: null, locals: null, status: 'error' });
    expect(run.error.type).toBe('ZeroDivisionError');
    expect(run.error.message).toBe('division by zero');
    expect(run.error.traceback).toBe(
      [
        'Traceback (most recent call last):',
        `  File "${PY_ROOT}/${CALC}", line 26, in <module>`,
        '    sys.exit(main(sys.argv[1:]))',
        `  File "${PY_ROOT}/${CALC}", line 21, in main`,
        '    print(divide(1, 0))',
        `  File "${PY_ROOT}/${CALC}", line 6, in divide`,
        '    return a / b',
        'ZeroDivisionError: division by zero',
      ].join('\n'),
    );
    expect((await pyOk(dk, 'python_get_session', { sessionId: id })).status).toBe('error');
    // Letting it go on ends the program; the verdict stays "error".
    const end = await pyOk(dk, 'python_continue', { sessionId: id });
    expect(end).toMatchObject({ completed: true, status: 'error' });
    const stderr = await pyOk(dk, 'python_get_output', { sessionId: id, stream: 'stderr' });
    expect(stderr.text).toContain('ZeroDivisionError: division by zero');
    await pyOk(dk, 'python_end_session', { sessionId: id });
  });
});

describe('python toolset: beyond the contract', () => {
  it('steps over, into and out, evaluates in a chosen frame and inspects the caller', async () => {
    const id = await start(CALC);
    await pyOk(dk, 'python_run_to_breakpoint', { sessionId: id, file: CALC, line: 17 });
    const into = await pyOk(dk, 'python_step', { sessionId: id, kind: 'into' });
    expect(into).toMatchObject({ reason: 'step', hit: false, function: 'add', frameInfo: { line: 10 } });
    const over = await pyOk(dk, 'python_step', { sessionId: id, kind: 'over' });
    expect(over.frameInfo.line).toBe(11);
    expect(over.locals.result.repr).toBe('30');
    expect(await pyOk(dk, 'python_evaluate', { sessionId: id, expression: 'result * 2 + x' })).toEqual({ type: 'int', repr: '70', isTruncated: false, expandable: false });
    expect((await pyOk(dk, 'python_evaluate', { sessionId: id, expression: 'argv', frame: 1 })).repr).toBe('[]');
    const caller = await pyOk(dk, 'python_inspect', { sessionId: id, frame: 1 });
    expect(caller).toMatchObject({ function: 'main', frameInfo: { line: 17 } });
    expect(Object.keys(caller.locals).sort()).toEqual(['argv', 'x', 'y']);
    const out = await pyOk(dk, 'python_step', { sessionId: id, kind: 'out' });
    expect(out).toMatchObject({ function: 'main', frameInfo: { line: 17 } });
    expect(await pyFails(dk, 'python_evaluate', { sessionId: id, expression: 'nope + 1' })).toMatch(/NameError.*nope/);
    expect(await pyFails(dk, 'python_evaluate', { sessionId: id, expression: 'x', frame: 9 })).toMatch(/no frame 9: the stack has 2 frames/);
    await pyOk(dk, 'python_end_session', { sessionId: id });
  });

  it('supports conditional and hit-count breakpoints and logpoints', async () => {
    const id = await start(FEATURES);
    const set = await pyOk(dk, 'python_set_breakpoints', {
      sessionId: id,
      file: FEATURES,
      breakpoints: [
        { line: 16, condition: 'i == 7' },
        { line: 17, logMessage: 'squares done: {len(out)}' },
      ],
    });
    expect(set.breakpoints).toEqual([
      { file: FEATURES, line: 16, verified: false, message: 'set when the program starts' },
      { file: FEATURES, line: 17, verified: false, message: 'set when the program starts' },
    ]);
    const cond = await pyOk(dk, 'python_continue', { sessionId: id });
    expect(cond).toMatchObject({ hit: true, frameInfo: { line: 16 }, function: 'squares' });
    expect(cond.locals.i.repr).toBe('7');
    expect(cond.locals.out.repr).toBe('[0, 1, 4, 9, 16, 25, 36]');
    // Replacing the breakpoint on line 16 with "stop on its 2nd hit": i = 8 is the 1st, 9 the 2nd.
    const counted = await pyOk(dk, 'python_run_to_breakpoint', { sessionId: id, file: FEATURES, line: 16, hitCondition: '2' });
    expect(counted).toMatchObject({ hit: true, frameInfo: { line: 16 } });
    expect(counted.locals.i.repr).toBe('9');
    // The logpoint never stops the program; its message lands in the program's output.
    const done = await pyOk(dk, 'python_continue', { sessionId: id });
    expect(done.completed).toBe(true);
    const out = await pyOk(dk, 'python_get_output', { sessionId: id });
    expect(out.text).toContain('squares done: 10\n');
    await pyOk(dk, 'python_end_session', { sessionId: id });
  });

  it('stops in functions by name, in threads and in async code', async () => {
    const id = await start(FEATURES);
    const fb = await pyOk(dk, 'python_set_function_breakpoints', { sessionId: id, names: ['worker'] });
    expect(fb.breakpoints).toEqual([{ name: 'worker', verified: false, message: 'set when the program starts' }]);
    const inThread = await pyOk(dk, 'python_run_to_breakpoint', { sessionId: id, file: FEATURES, line: 27 });
    expect(inThread).toMatchObject({ hit: true, function: 'worker' });
    const inAsync = await pyOk(dk, 'python_continue', { sessionId: id });
    expect(inAsync).toMatchObject({ hit: true, function: 'fetch', frameInfo: { line: 27 } });
    expect(inAsync.locals.n.repr).toBe('21');
    const done = await pyOk(dk, 'python_continue', { sessionId: id });
    expect(done.completed).toBe(true);
    const out = await pyOk(dk, 'python_get_output', { sessionId: id });
    expect(out.text).toContain("stdin: ''"); // stdin reads EOF, never hangs
    expect(out.text).toContain('thread: 285 async: 42 owner: ada 5000 300');
    await pyOk(dk, 'python_end_session', { sessionId: id });
  });

  it('lets child Python processes run (undebugged) instead of hanging', async () => {
    const id = await start('src/spawns.py');
    const run = await pyOk(dk, 'python_run_to_breakpoint', { sessionId: id, file: 'src/spawns.py', line: 6 });
    expect(run).toMatchObject({ hit: true, error: null });
    expect(run.locals.child.repr).toContain("stdout='child says hi\\n'");
    await pyOk(dk, 'python_end_session', { sessionId: id });
  });

  it("leaves the program's own sockets alone and still runs the user's sitecustomize", async () => {
    const id = await start('src/sockets.py', { env: { PYTHONPATH: `${PY_ROOT}/usersite` } });
    expect(await pyOk(dk, 'python_continue', { sessionId: id })).toMatchObject({ completed: true, exitCode: 0 });
    const out = await pyOk(dk, 'python_get_output', { sessionId: id });
    expect(out.text).toBe('user sitecustomize ran\nclient nodelay 0\naccepted nodelay 0\n');
    await pyOk(dk, 'python_end_session', { sessionId: id });
  });

  it('bounds reprs and the number of locals, and says so', async () => {
    const id = await start(FEATURES);
    const run = await pyOk(dk, 'python_run_to_breakpoint', { sessionId: id, file: FEATURES, line: 35, maxReprLength: 50, maxLocals: 2 });
    expect(Object.keys(run.locals)).toHaveLength(2);
    expect(run.localsOmitted).toBe(1);
    const wide = await pyOk(dk, 'python_inspect', { sessionId: id, maxReprLength: 40 });
    expect(wide.locals.big).toEqual({ type: 'str', repr: `'${'x'.repeat(39)}...`, isTruncated: true });
    expect(wide.locals.account.type).toBe('Account');
    // Nested values: members as deep as asked, each level bounded.
    const account = await pyOk(dk, 'python_evaluate', { sessionId: id, expression: 'account', depth: 1 });
    expect(account.members).toMatchObject({ owner: { type: 'str', repr: "'ada'" }, balance: { type: 'int', repr: '100' } });
    const many = await pyOk(dk, 'python_evaluate', { sessionId: id, expression: 'many', depth: 1, maxReprLength: 20 });
    expect(Object.keys(many.members)).toHaveLength(25);
    expect(many.membersOmitted).toBeGreaterThanOrEqual(275);
    expect(many.isTruncated).toBe(true);
    await pyOk(dk, 'python_end_session', { sessionId: id });
  });

  it('pauses a program that runs past the time bound and reports a TimeoutError', async () => {
    const id = await start('src/busy.py');
    const run = await pyOk(dk, 'python_run_to_breakpoint', { sessionId: id, file: 'src/busy.py', line: 11, timeout: 1.5 });
    expect(run).toMatchObject({ hit: false, completed: false, status: 'paused', reason: 'pause' });
    expect(run.error.type).toBe('TimeoutError');
    expect(run.error.message).toMatch(/no breakpoint was hit within 1.5 s; the program is paused at .*busy\.py:\d+/);
    expect((await pyOk(dk, 'python_get_session', { sessionId: id })).status).toBe('paused');
    const counter = await pyOk(dk, 'python_evaluate', { sessionId: id, expression: 'counter > 0' });
    expect(counter.repr).toBe('True');
    await pyOk(dk, 'python_end_session', { sessionId: id });
  });

  it('reports a breakpoint that debugpy moves, loudly', async () => {
    const id = await start(CALC);
    const run = await pyOk(dk, 'python_run_to_breakpoint', { sessionId: id, file: CALC, line: 12 });
    expect(run.breakpointWarnings).toEqual([expect.objectContaining({ file: `${PY_ROOT}/${CALC}`, line: 12, message: expect.stringMatching(/moved this breakpoint from line 12|could not verify/) })]);
    await pyOk(dk, 'python_end_session', { sessionId: id });
  });
});

describe('python toolset: errors, interpreters and processes', () => {
  it('refuses bad paths and lines with clear errors', async () => {
    expect(await pyFails(dk, 'python_start_session', { entry: '../../../etc/passwd' })).toMatch(/outside the workspace root/);
    expect(await pyFails(dk, 'python_start_session', { entry: '/etc/passwd' })).toMatch(/outside the workspace root/);
    expect(await pyFails(dk, 'python_start_session', { entry: 'src/nope.py' })).toMatch(/entry not found: src\/nope.py/);
    expect(await pyFails(dk, 'python_start_session', { entry: 'src' })).toMatch(/entry src is not a file/);
    expect(await pyFails(dk, 'python_start_session', { entry: CALC, pythonPath: 'python3' })).toMatch(/pythonPath must be an absolute path/);
    const id = await start(CALC);
    expect(await pyFails(dk, 'python_run_to_breakpoint', { sessionId: id, file: CALC, line: 999 })).toMatch(/line 999 is past the end of src\/calculator.py, which has 26 lines/);
    expect(await pyFails(dk, 'python_run_to_breakpoint', { sessionId: id, file: CALC, line: 0 })).toMatch(/line/);
    expect(await pyFails(dk, 'python_run_to_breakpoint', { sessionId: id, file: '../x.py', line: 1 })).toMatch(/outside the workspace root/);
    expect(await pyFails(dk, 'python_step', { sessionId: id })).toMatch(/the program has not started/);
    expect(await pyFails(dk, 'python_get_session', { sessionId: 'nope' })).toMatch(/Session not found: nope/);
    await pyOk(dk, 'python_end_session', { sessionId: id });
  });

  it('works with /usr/bin/python3 and with the python3 on PATH, and fails fast without debugpy', async () => {
    for (const pythonPath of [undefined, '/usr/bin/python3']) {
      const id = await start(CALC, pythonPath ? { pythonPath } : {});
      const run = await pyOk(dk, 'python_run_to_breakpoint', { sessionId: id, file: CALC, line: 11 });
      expect(run.hit).toBe(true);
      await pyOk(dk, 'python_end_session', { sessionId: id });
    }
    const started = Date.now();
    expect(await pyFails(dk, 'python_start_session', { entry: CALC, pythonPath: '/bin/false' })).toMatch(
      /debugpy is not importable by \/bin\/false: install it with "apt-get install -y python3-debugpy"/,
    );
    expect(await pyFails(dk, 'python_start_session', { entry: CALC, pythonPath: '/no/such/python' })).toMatch(/Python interpreter not found: \/no\/such\/python/);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('runs two sessions at once, and ending one mid-run leaves no python or adapter behind', async () => {
    const a = await start('src/busy.py');
    const b = await start(CALC);
    const [ra, rb] = await Promise.all([
      pyOk(dk, 'python_run_to_breakpoint', { sessionId: a, file: 'src/busy.py', line: 11, timeout: 1 }),
      pyOk(dk, 'python_run_to_breakpoint', { sessionId: b, file: CALC, line: 11 }),
    ]);
    expect(ra.error.type).toBe('TimeoutError');
    expect(rb.hit).toBe(true);
    const busyPid = Number(/busy: pid (\d+)/.exec((await pyOk(dk, 'python_get_output', { sessionId: a })).text)?.[1]);
    expect(isAlive(busyPid)).toBe(true);
    // This server's debugpy processes (not another test's, running at the same time).
    const before = descendants(dk.serverPid!)
      .filter((p) => /debugpy/.test(p.args))
      .map((p) => p.pid);
    expect(before.length).toBeGreaterThan(0);
    await pyOk(dk, 'python_continue', { sessionId: a, timeout: 0.5 }); // running again, then paused by the bound
    expect(await pyOk(dk, 'python_end_session', { sessionId: a })).toEqual({ ended: true });
    expect(await waitFor(() => !isAlive(busyPid), 5000)).toBe(true);
    await pyOk(dk, 'python_end_session', { sessionId: b });
    expect(await waitFor(() => before.every((pid) => !isAlive(pid)), 5000)).toBe(true);
  });
});
