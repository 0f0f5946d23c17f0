import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectStdio, type TestClient } from './helpers/client.js';
import { descendants, isAlive, runsAgain, waitFor } from './helpers/procs.js';
import { PY_ROOT, pyFails, pyOk } from './helpers/python.js';

let dk: TestClient;

beforeAll(async () => {
  dk = await connectStdio({ root: PY_ROOT });
  // Listed tools make the SDK client validate every result against its output schema.
  await dk.client.listTools();
});
afterAll(async () => {
  await dk?.close();
});

async function start(entry: string): Promise<string> {
  return (await pyOk(dk, 'python_start_session', { entry })).sessionId;
}

/** Pauses busy.py in its loop, then continues it (python_continue, in flight); returns its pids and the call. */
async function busyRunning(): Promise<{ id: string; debuggee: number; adapter: number; run: Promise<any> }> {
  const id = await start('src/busy.py');
  await pyOk(dk, 'python_run_to_breakpoint', { sessionId: id, file: 'src/busy.py', line: 8 });
  await pyOk(dk, 'python_set_breakpoints', { sessionId: id, file: 'src/busy.py', breakpoints: [] });
  const out = await pyOk(dk, 'python_get_output', { sessionId: id });
  const debuggee = Number(/busy: pid (\d+)/.exec(out.text)?.[1] ?? 0);
  expect(debuggee).toBeGreaterThan(0);
  const adapter = descendants(dk.serverPid!).find((p) => p.args.includes('debugpy.adapter'))?.pid ?? 0;
  expect(adapter).toBeGreaterThan(0);
  const run = dk.tool('python_continue', { sessionId: id, timeout: 60 });
  // The continue has reached debugpy once the program runs again.
  expect(await runsAgain(debuggee)).toBe(true);
  return { id, debuggee, adapter, run };
}

describe('python answers that are true', () => {
  it('reports an uncaught exception debugpy does not stop on (RecursionError) as the error it is', async () => {
    const id = await start('src/recursion.py');
    const end = await pyOk(dk, 'python_continue', { sessionId: id });
    expect(end.completed).toBe(true);
    expect(end.status).toBe('error');
    expect(end.error.type).toBe('RecursionError');
    expect(end.error.message).toMatch(/maximum recursion depth exceeded/);
    expect(end.error.traceback).toMatch(/^Traceback \(most recent call last\):/);
    expect(end.error.traceback).toMatch(/in depth\n/);
    expect(end.error.traceback.length).toBeLessThan(5000);
    expect((await pyOk(dk, 'python_get_session', { sessionId: id })).status).toBe('error');
    await pyOk(dk, 'python_end_session', { sessionId: id });
  });

  it('reports a RecursionError whose traceback is longer than the stderr kept for it (two functions in turn: nothing folded)', async () => {
    const id = await start('src/mutual.py');
    const end = await pyOk(dk, 'python_continue', { sessionId: id });
    expect(end.completed).toBe(true);
    expect(end.status).toBe('error');
    expect(end.error.type).toBe('RecursionError');
    expect(end.error.message).toMatch(/maximum recursion depth exceeded/);
    expect(end.error.traceback).toMatch(/in (ping|pong)\n/);
    expect(end.error.traceback.length).toBeLessThan(5000);
    await pyOk(dk, 'python_end_session', { sessionId: id });
  });

  it('stops where a breakpoint condition raises and says so, instead of taking it as false for the whole run', async () => {
    const id = await start('src/condition.py');
    const stop = await pyOk(dk, 'python_run_to_breakpoint', { sessionId: id, file: 'src/condition.py', line: 7, condition: 'itme > 2' });
    expect(stop).toMatchObject({ hit: true, completed: false, status: 'paused', error: null, frameInfo: { line: 7 } });
    expect(stop.conditionError).toEqual({
      condition: 'itme > 2',
      error: "NameError: name 'itme' is not defined",
      message: expect.stringMatching(/^the condition "itme > 2" of the breakpoint at .*src\/condition\.py:7 raised NameError: name 'itme' is not defined: the program stopped here/),
    });
    expect(stop.locals.item.repr).toBe('1');
    // Fixed, the condition holds from the third item on; a stop without a failing condition says nothing of one.
    await pyOk(dk, 'python_set_breakpoints', { sessionId: id, file: 'src/condition.py', breakpoints: [{ line: 7, condition: 'item > 2' }] });
    const next = await pyOk(dk, 'python_continue', { sessionId: id });
    expect(next).toMatchObject({ hit: true, frameInfo: { line: 7 } });
    expect(next.locals.item.repr).toBe('3');
    expect(next.conditionError).toBeUndefined();
    await pyOk(dk, 'python_end_session', { sessionId: id });
  });

  it('gives the real depth of a deep stack, and reaches every frame: inspect pages through it, evaluate runs in any of them', async () => {
    const id = await start('src/deep.py');
    const stop = await pyOk(dk, 'python_run_to_breakpoint', { sessionId: id, file: 'src/deep.py', line: 7 });
    // down(0) .. down(60), main, <module>: before, the answer held 20 frames and called that the stack.
    expect(stop.stackDepth).toBe(63);
    expect(stop.stack.map((f: any) => f.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    const outer = await pyOk(dk, 'python_inspect', { sessionId: id, frame: 61 });
    expect(outer).toMatchObject({ function: 'main', frameInfo: { line: 13 }, stackDepth: 63 });
    expect(outer.locals.start.repr).toBe('60');
    expect(outer.stack.map((f: any) => [f.index, f.name])).toEqual([
      [59, 'down'],
      [60, 'down'],
      [61, 'main'],
      [62, '<module>'],
    ]);
    expect((await pyOk(dk, 'python_evaluate', { sessionId: id, expression: 'n', frame: 40 })).repr).toBe('40');
    expect((await pyOk(dk, 'python_evaluate', { sessionId: id, expression: 'start * 2', frame: 61 })).repr).toBe('120');
    expect(await pyFails(dk, 'python_evaluate', { sessionId: id, expression: 'n', frame: 63 })).toMatch(/no frame 63: the stack has 63 frames/);
    expect(await pyFails(dk, 'python_inspect', { sessionId: id, frame: 70 })).toMatch(/no frame 70: the stack has 63 frames/);
    await pyOk(dk, 'python_end_session', { sessionId: id });
  });

  it('says at once that a breakpoint condition does not compile, and a function breakpoint that cannot bind', async () => {
    const id = await start('src/recursion.py');
    const set = await pyOk(dk, 'python_set_breakpoints', {
      sessionId: id,
      file: 'src/recursion.py',
      breakpoints: [
        { line: 5, condition: 'n >>> 3' },
        { line: 10, condition: 'len(items) > 1' },
      ],
    });
    expect(set.breakpoints[0]).toMatchObject({ line: 5, verified: false });
    expect(set.breakpoints[0].message).toMatch(/condition "n >>> 3" does not compile: SyntaxError/);
    expect(set.breakpoints[1]).toMatchObject({ line: 10 });
    expect(set.breakpoints[1].message ?? '').not.toMatch(/compile/);
    // run_to_breakpoint refuses such a condition outright.
    expect(await pyFails(dk, 'python_run_to_breakpoint', { sessionId: id, file: 'src/recursion.py', line: 5, condition: 'n >>> 3' })).toMatch(/condition "n >>> 3" does not compile: SyntaxError/);
    await pyOk(dk, 'python_run_to_breakpoint', { sessionId: id, file: 'src/recursion.py', line: 10 });
    const fns = await pyOk(dk, 'python_set_function_breakpoints', { sessionId: id, names: ['no_such_function', 'depth'] });
    expect(fns.breakpoints[0]).toMatchObject({ name: 'no_such_function', verified: false });
    expect(fns.breakpoints[0].message).toMatch(/no function named no_such_function/);
    expect(fns.breakpoints[1]).toEqual({ name: 'depth', verified: true });
    const stop = await pyOk(dk, 'python_continue', { sessionId: id });
    expect(stop).toMatchObject({ hit: true, function: 'depth' });
    await pyOk(dk, 'python_end_session', { sessionId: id });
  });

  it('marks a container debugpy abbreviates isTruncated', async () => {
    const id = await start('src/recursion.py');
    const hit = await pyOk(dk, 'python_run_to_breakpoint', { sessionId: id, file: 'src/recursion.py', line: 10, maxReprLength: 100_000 });
    // debugpy itself abbreviates big containers ("[0, 1, ..., ...]"): that is a cut too.
    expect(hit.locals.items.repr).toContain('...');
    expect(hit.locals.items.isTruncated).toBe(true);

    await pyOk(dk, 'python_end_session', { sessionId: id });
  });

  it("marks isTruncated every form of debugpy's own cuts inside a repr, and not a string that only holds '...'", async () => {
    const id = await start('src/shapes.py');
    const hit = await pyOk(dk, 'python_run_to_breakpoint', { sessionId: id, file: 'src/shapes.py', line: 18, maxReprLength: 100_000 });
    const { locals } = hit;
    expect(locals.nested_tuple).toEqual({ type: 'list', repr: '[(1, (...))]', isTruncated: true });
    expect(locals.nested_dict).toEqual({ type: 'dict', repr: "{'a': {'b': {...}}}", isTruncated: true });
    expect(locals.long_inner.repr).toMatch(/^\['x{20}\.\.\.x{10}'\]$/);
    expect(locals.long_inner.isTruncated).toBe(true);
    expect(locals.objects.repr).toBe("[Thing(name='abcdefgh...e=1234567)]");
    expect(locals.objects.isTruncated).toBe(true);
    expect(locals.many.isTruncated).toBe(true);
    expect(locals.plain).toEqual({ type: 'str', repr: "'wait... done'", isTruncated: false });
    expect(locals.short).toEqual({ type: 'list', repr: '[1, 2, 3]', isTruncated: false });
    await pyOk(dk, 'python_end_session', { sessionId: id });
  });

  it('says a syntax error in one line, and bounds a deep evaluation', async () => {
    const id = await start('src/recursion.py');
    await pyOk(dk, 'python_run_to_breakpoint', { sessionId: id, file: 'src/recursion.py', line: 10 });
    const syntax = await pyFails(dk, 'python_evaluate', { sessionId: id, expression: '1 +* 2' });
    expect(syntax).toMatch(/SyntaxError: invalid syntax/);
    expect(syntax).not.toMatch(/Traceback|pydevd/);
    expect(syntax.split('\n')).toHaveLength(1);

    const deep = await dk.tool('python_evaluate', { sessionId: id, expression: 'items', depth: 3, maxReprLength: 100_000 });
    expect(deep.isError).toBe(false);
    expect(deep.text.length).toBeLessThan(20_000);
    expect(deep.structured.membersTruncated).toBe(true);
    expect(deep.structured.hint).toMatch(/depth|expression/);
    await pyOk(dk, 'python_end_session', { sessionId: id });
  });
});

describe('a python engine that dies is an error on the call in flight', () => {
  it('the debugpy adapter killed during python_continue', async () => {
    const { id, adapter, debuggee, run } = await busyRunning();
    process.kill(adapter, 'SIGKILL');
    const r = await run;
    expect(r.isError).toBe(true);
    expect(r.text, r.text).toMatch(/debugpy adapter died \(killed by signal SIGKILL\).*session has ended/);
    expect(r.text).not.toMatch(/"completed":true/);
    // The program does not run on without its debugger, and the session says why it ended.
    expect(await waitFor(() => !isAlive(debuggee), 10_000)).toBe(true);
    expect(await pyFails(dk, 'python_continue', { sessionId: id })).toMatch(/debugpy adapter died/);
    await dk.tool('python_end_session', { sessionId: id });
  });

  it('the debuggee killed during python_continue', async () => {
    const { id, debuggee, run } = await busyRunning();
    process.kill(debuggee, 'SIGKILL');
    const r = await run;
    expect(r.isError).toBe(false);
    expect(r.structured.completed).toBe(true);
    expect(r.structured.status).toBe('error');
    expect(r.structured.error.type).toBe('ProgramKilled');
    expect(r.structured.error.message).toMatch(/^the program was killed by SIGKILL/);
    await pyOk(dk, 'python_end_session', { sessionId: id });
  });
});

describe('python output reads from the end', () => {
  it('takes a tail or a negative cursor, gives the end cursor and more, and never echoes a cursor past the end', async () => {
    const id = await start('src/recursion.py');
    await pyOk(dk, 'python_continue', { sessionId: id });
    const tail = await pyOk(dk, 'python_get_output', { sessionId: id, stream: 'stderr', tail: 200 });
    expect(tail.text).toMatch(/RecursionError: maximum recursion depth exceeded.*\n$/);
    expect(tail).toMatchObject({ cursor: tail.end, more: false });
    const past = await pyOk(dk, 'python_get_output', { sessionId: id, stream: 'stderr', cursor: tail.end + 5000 });
    expect(past).toMatchObject({ text: '', cursor: tail.end, more: false });
    const page = await pyOk(dk, 'python_get_output', { sessionId: id, stream: 'stderr', cursor: 0, maxChars: 10 });
    expect(page).toMatchObject({ cursor: 10, more: true });
    const negative = await pyOk(dk, 'python_get_output', { sessionId: id, stream: 'stderr', cursor: -10 });
    expect(negative.text).toBe(tail.text.slice(-10));
    await pyOk(dk, 'python_end_session', { sessionId: id });
  });
});
