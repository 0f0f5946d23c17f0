import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectStdio, type TestClient } from './helpers/client.js';
import { isAlive, processTable, waitFor } from './helpers/procs.js';
import { compileC, tempDir } from './helpers/programs.js';

let root: string;
let dk: TestClient;

beforeAll(async () => {
  root = tempDir();
  for (const name of ['basic', 'segv', 'spin']) compileC(root, name);
  dk = await connectStdio({ root });
});
afterAll(async () => {
  await dk?.close();
});

/** Runs the spin program in session `id`; returns its process (the program prints its pid). */
async function runSpinner(id: string) {
  const run = await dk.ok('call', { id, command: 'run', wait: 0.5 });
  expect(run.state).toBe('running');
  let text = '';
  await waitFor(
    () => /started pid \d+/.test(text),
    15_000,
    50,
    async () => {
      text = (await dk.ok('gdb_program_output', { id, stream: 'stderr' })).text;
    },
  );
  const pid = Number(/started pid (\d+)/.exec(text)?.[1]);
  const proc = processTable().find((p) => p.pid === pid);
  if (!proc) throw new Error(`spin did not report a live pid: ${JSON.stringify(text)}`);
  return proc;
}

async function openWith(program: string, extra: Record<string, unknown> = {}): Promise<string> {
  const { id } = await dk.ok('open', { program, ...extra });
  expect(id).toMatch(/^[0-9a-f-]{36}$/);
  return id;
}

describe('gdb toolset over stdio', () => {
  it('lists the contract tools with schemas and the four documentation resources', async () => {
    const { tools } = await dk.client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['open', 'call', 'close', 'list_sessions']));
    const call = tools.find((t) => t.name === 'call')!;
    // `command`, as the contract has it, or `commands` (several in one answer): one of them, checked when called.
    expect(call.inputSchema.required).toEqual(['id']);
    expect(Object.keys(call.inputSchema.properties ?? {})).toEqual(expect.arrayContaining(['id', 'command', 'commands']));
    // Output schemas are listed only with --output-schemas (test/contract.test.ts checks every result against them).
    expect(call.outputSchema).toBeUndefined();
    expect(tools.find((t) => t.name === 'list_sessions')!.annotations?.readOnlyHint).toBe(true);

    const { resources } = await dk.client.listResources();
    const uris = resources.map((r) => r.uri).sort();
    // The contract's four, the playbook's skills (issue 23: skill://<name>/SKILL.md, test/skills.test.ts) and the MCP Apps view (test/app-view.test.ts).
    expect(uris.filter((u) => !u.startsWith('skill://'))).toEqual(['gdb://commands/cli', 'gdb://commands/mapping', 'gdb://commands/mi', 'gdb://commands/reference', 'ui://debugkit/stop.html']);
    expect(uris).toContain('skill://gdb/SKILL.md');
    for (const uri of uris.filter((u) => u.startsWith('gdb://'))) {
      const doc = await dk.client.readResource({ uri });
      const text = (doc.contents[0] as { text: string }).text;
      expect(doc.contents[0]!.mimeType).toBe('text/markdown');
      expect(text).toMatch(/^# /);
      expect(text.length).toBeGreaterThan(3000);
    }
  });

  it('follows the gdb contract flow: file, break, run, print, with the ok envelope', async () => {
    const { id } = await dk.ok('open', {});
    const file = await dk.ok('call', { id, command: `file ${root}/basic` });
    expect(file.output).toContain('Reading symbols from');
    const brk = await dk.ok('call', { id, command: 'break add' });
    expect(brk.result.class).toBe('done');
    expect(brk.output).toMatch(/Breakpoint 1 at 0x[0-9a-f]+: file .*basic\.c, line \d+/);

    const run = await dk.ok('call', { id, command: 'run' });
    expect(run.result.class).toBe('running');
    expect(run.state).toBe('stopped');
    expect(run.stopped.reason).toBe('breakpoint-hit');
    expect(run.stopped.frame.func).toBe('add');
    expect(run.stopped.frame.args).toEqual([
      { name: 'a', value: '0' },
      { name: 'b', value: '0' },
    ]);

    const printed = await dk.ok('call', { id, command: 'print a + b + 40' });
    expect(printed.output).toBe('$1 = 40\n');

    // The text is GDB's console output (the envelope, as JSON, with --gdb-text json: gdb-answers.test.ts).
    const raw = await dk.tool('call', { id, command: 'print 6 * 7' });
    expect(raw.text).toBe('$2 = 42');
    await dk.ok('close', { id });
  });

  it('returns structured MI results: breakpoints, backtrace, locals, stepping', async () => {
    const id = await openWith('basic', { args: ['first arg'] });
    const bp = await dk.ok('call', { id, command: '-break-insert add' });
    expect(bp.result.bkpt).toMatchObject({ number: '1', type: 'breakpoint', func: 'add', file: expect.stringMatching(/basic\.c$/) });

    await dk.ok('call', { id, command: '-exec-run' });
    await dk.ok('call', { id, command: 'continue' }); // second call of add: total=0, i=1
    const frames = await dk.ok('call', { id, command: '-stack-list-frames' });
    expect(frames.result.stack.map((f: { func: string }) => f.func)).toEqual(['add', 'main']);

    const bt = await dk.ok('call', { id, command: 'bt' });
    expect(bt.output).toMatch(/#0 +add \(a=0, b=1\) at .*basic\.c:\d+/);
    expect(bt.output).toMatch(/#1 +0x[0-9a-f]+ in main \(argc=2, argv=/);

    const up = await dk.ok('call', { id, command: '-stack-list-variables --simple-values' });
    expect(up.result.variables).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'a', value: '0' })]));

    const finish = await dk.ok('call', { id, command: 'finish' });
    expect(finish.stopped.reason).toBe('function-finished');
    expect(finish.stopped['return-value']).toBe('1');
    expect(finish.stopped.frame.func).toBe('main');

    const next = await dk.ok('call', { id, command: 'next' });
    expect(next.stopped.reason).toBe('end-stepping-range');

    const locals = await dk.ok('call', { id, command: 'info locals' });
    expect(locals.output).toMatch(/origin = \{x = 3, y = 4\}/);
    expect(locals.output).toMatch(/greeting = 0x[0-9a-f]+ "hello"/);

    const step = await dk.ok('call', { id, command: 'step' });
    expect(step.stopped.frame.func === 'add' || step.stopped.frame.func === 'main').toBe(true);

    await dk.ok('call', { id, command: 'delete' });
    const done = await dk.ok('call', { id, command: 'continue' });
    expect(done.state).toBe('exited');
    expect(done.stopped.reason).toBe('exited-normally');
    // The program's own output comes back apart from GDB's, stdout and stderr separately.
    expect(done.program_output.stdout).toBe('total=3 argc=2 first=first arg\n');
    expect(done.program_output.stderr).toBe('to stderr hello 7\n');
    expect(done.output).not.toContain('total=3');
    await dk.ok('close', { id });
  });

  it('reports a segfault with its stack', async () => {
    const id = await openWith('segv');
    const run = await dk.ok('call', { id, command: 'run' });
    expect(run.state).toBe('stopped');
    expect(run.stopped).toMatchObject({ reason: 'signal-received', 'signal-name': 'SIGSEGV' });
    expect(run.stopped.frame.func).toBe('sum_list');
    const bt = await dk.ok('call', { id, command: '-stack-list-frames' });
    expect(bt.result.stack.map((f: { func: string }) => f.func)).toEqual(['sum_list', 'main']);
    const head = await dk.ok('call', { id, command: 'print head' });
    expect(head.output).toBe('$1 = (struct node *) 0x0\n');
    await dk.ok('close', { id });
  });

  it('bounds a run that does not stop, then interrupts it', async () => {
    const id = await openWith('spin');
    const started = Date.now();
    const run = await dk.ok('call', { id, command: 'run', wait: 1 });
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(run.state).toBe('running');
    expect(run.stopped).toBeUndefined();

    // GDB reads memory of a running process; commands that need a stopped thread say what to do.
    const live = await dk.ok('call', { id, command: 'print counter' });
    expect(live.output).toMatch(/^\$1 = \d+\n$/);
    const busy = await dk.fails('call', { id, command: 'bt' });
    expect(busy).toMatch(/Selected thread is running/);
    expect(busy).toContain('-exec-interrupt');

    const waited = await dk.ok('gdb_wait', { id, timeout: 0.5 });
    expect(waited.state).toBe('running');

    const stop = await dk.ok('call', { id, command: '-exec-interrupt' });
    expect(stop.state).toBe('stopped');
    expect(stop.stopped.reason).toBe('signal-received');
    const counter = await dk.ok('call', { id, command: '-data-evaluate-expression counter' });
    expect(Number(counter.result.value)).toBeGreaterThan(0);
    let err = { text: '' };
    await waitFor(
      () => err.text.length > 0,
      15_000,
      50,
      async () => {
        err = await dk.ok('gdb_program_output', { id, stream: 'stderr' });
      },
    );
    expect(err.text).toMatch(/^spin: started pid \d+\n$/);
    await dk.ok('close', { id });
  });

  it('keeps two sessions isolated, and lists them', async () => {
    const a = await openWith('basic');
    const b = await openWith('segv');
    await dk.ok('call', { id: a, command: 'break add' });
    const [ra, rb] = await Promise.all([dk.ok('call', { id: a, command: 'run' }), dk.ok('call', { id: b, command: 'run' })]);
    expect(ra.stopped.frame.func).toBe('add');
    expect(rb.stopped['signal-name']).toBe('SIGSEGV');
    const pa = await dk.ok('call', { id: a, command: 'info breakpoints' });
    const pb = await dk.ok('call', { id: b, command: 'info breakpoints' });
    expect(pa.output).toContain('add at');
    expect(pb.output).toContain('No breakpoints');

    const { sessions } = await dk.ok('list_sessions');
    const mine = sessions.filter((s: { id: string }) => s.id === a || s.id === b);
    expect(mine).toHaveLength(2);
    for (const s of mine) expect(new Date(s.created).getTime()).toBeGreaterThan(Date.now() - 120_000);
    await dk.ok('close', { id: a });
    await dk.ok('close', { id: b });
    const after = await dk.ok('list_sessions');
    expect(after.sessions.map((s: { id: string }) => s.id)).not.toContain(a);
  });

  it('turns bad input into clear errors and keeps serving', async () => {
    const unknown = '123e4567-e89b-12d3-a456-426614174000';
    expect(await dk.fails('call', { id: unknown, command: 'bt' })).toBe(`Session not found: ${unknown}`);
    expect(await dk.fails('close', { id: unknown })).toBe(`Session not found: ${unknown}`);

    const missing = await dk.fails('open', { program: 'no-such-program' });
    expect(missing).toMatch(/program not found: no-such-program/);
    const outside = await dk.fails('open', { program: '../../etc/passwd' });
    expect(outside).toMatch(/outside the workspace root/);

    const id = await openWith('basic');
    expect(await dk.fails('call', { id, command: '   ' })).toMatch(/command is empty/);
    expect(await dk.fails('call', { id, command: 'print 1\nprint 2' })).toMatch(/single line/);
    expect(await dk.fails('call', { id, command: 'frobnicate' })).toMatch(/Undefined command: "frobnicate"/);
    expect(await dk.fails('call', { id, command: 'file /no/such/file' })).toMatch(/No such file or directory/);
    const noTimeout = await dk.tool('open', { timeout: -5 });
    expect(noTimeout.isError).toBe(true);
    expect(noTimeout.text).toMatch(/timeout/);
    // Still fine after all that.
    expect((await dk.ok('call', { id, command: 'print 2 + 2' })).output).toBe('$1 = 4\n');
    await dk.ok('close', { id });
  });

  it('survives gdb dying mid-session: that session errors, others keep working', async () => {
    const victim = await openWith('spin');
    const other = await openWith('basic');
    const spinner = await runSpinner(victim);
    const victimGdb = processTable().find((p) => p.pid === spinner.ppid)!;
    expect(victimGdb.args).toMatch(/^gdb --interpreter=mi3/);
    process.kill(victimGdb.pid, 'SIGKILL');
    await waitFor(() => !isAlive(victimGdb.pid));

    const err = await dk.fails('call', { id: victim, command: 'bt' });
    expect(err).toMatch(/gdb exited unexpectedly \(signal SIGKILL\)|Session not found/);
    expect((await dk.ok('call', { id: other, command: 'print 1' })).output).toBe('$1 = 1\n');
    // The debuggee of the dead gdb does not outlive it.
    expect(await waitFor(() => !isAlive(spinner.pid))).toBe(true);
    await dk.ok('close', { id: other });
  });

  it('ends an idle session with its gdb and program after its timeout', async () => {
    const id = await openWith('spin', { timeout: 2 });
    const spinner = await runSpinner(id);
    const gdb = processTable().find((p) => p.pid === spinner.ppid)!;
    expect(await waitFor(() => !isAlive(gdb.pid) && !isAlive(spinner.pid), 10_000)).toBe(true);
    expect(await dk.fails('call', { id, command: 'bt' })).toMatch(new RegExp(`^Session not found: ${id} \\(it ended: idle`));
  });

  it('refuses sessions over the limit with a clear error', async () => {
    const limited = await connectStdio({ root, args: ['--max-sessions', '2'] });
    try {
      await limited.ok('open');
      await limited.ok('open');
      expect(await limited.fails('open')).toMatch(/too many gdb sessions for this client: it has 2 open, the per-client limit \(--max-sessions\)/);
    } finally {
      await limited.close();
    }
  });
});

describe('a program rebuilt while its session is open', () => {
  /** Builds DIR/version (DIR relative to the root) printing `v`, with a breakpoint-worthy function. */
  function build(dir: string, v: number): void {
    const src = path.join(root, dir, 'version.c');
    mkdirSync(path.dirname(src), { recursive: true });
    writeFileSync(src, `#include <stdio.h>\nint version(void) { return ${v}; }\nint main(void) { printf("version %d\\n", version()); return 0; }\n`);
    execFileSync('gcc', ['-g', '-O0', '-o', path.join(root, dir, 'version'), src]);
  }

  /** Builds, opens, rebuilds between runs; `said` is what the output of the run after a rebuild must hold (none: debugkit says nothing). */
  async function rebuildBetweenRuns(dir: string, said?: RegExp): Promise<void> {
    const note = /changed since it was loaded/;
    build(dir, 1);
    const id = await openWith(`${dir}/version`);
    const first = await dk.ok('call', { id, command: 'run' });
    expect(first.program_output.stdout).toBe('version 1\n');
    // Unchanged: the same build runs, nothing said.
    const again = await dk.ok('call', { id, command: 'run' });
    expect(again.program_output.stdout).toBe('version 1\n');
    expect(again.output).not.toMatch(note);

    build(dir, 2);
    await dk.ok('call', { id, command: 'break version' });
    const rebuilt = await dk.ok('call', { id, command: 'run' });
    if (said) expect(rebuilt.output).toMatch(said);
    else expect(rebuilt.output).not.toMatch(note);
    expect(rebuilt.stopped).toMatchObject({ reason: 'breakpoint-hit' });
    expect(rebuilt.stopped.frame.func).toBe('version');
    const finish = await dk.ok('call', { id, command: 'continue' });
    expect(finish.program_output.stdout).toBe('version 2\n');

    // Rebuilt while stopped in the old build: the restart runs the newest (-exec-run, MI).
    build(dir, 3);
    await dk.ok('call', { id, command: 'delete' });
    await dk.ok('call', { id, command: 'break version' });
    const mi = await dk.ok('call', { id, command: '-exec-run' });
    if (said) expect(mi.output).toMatch(said);
    expect(mi.stopped.frame.func).toBe('version');
    const done = await dk.ok('call', { id, command: 'continue' });
    expect(done.program_output.stdout).toBe('version 3\n');
    await dk.ok('close', { id });
  }

  it("where only debugkit's user can write, gdb runs a private copy too (its debug links are judged on it) and a rebuild is loaded at run, breakpoints kept", async () => {
    await rebuildBetweenRuns('own', /changed since it was loaded \(rebuilt\?\): this run starts the new build/);
  });

  it('where others can write (gdb runs a private copy), debugkit loads a fresh copy of the rebuild at run and says so', async () => {
    mkdirSync(path.join(root, 'shared'), { recursive: true });
    chmodSync(path.join(root, 'shared'), 0o777);
    await rebuildBetweenRuns('shared', /changed since it was loaded \(rebuilt\?\): this run starts the new build/);
  });
});
