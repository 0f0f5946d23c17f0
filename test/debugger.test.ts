import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, connectStdio, startHttpServer, type TestClient } from './helpers/client.js';
import { descendants, isAlive, procState, runsAgain, waitFor } from './helpers/procs.js';
import { compileCInside, tempDir } from './helpers/programs.js';

let root: string;
let dataDir: string;
let dk: TestClient;
const children: ChildProcess[] = [];

/** Calls a debugger tool; answers structuredContent, text and the raw content items. */
async function call(name: string, args: Record<string, unknown> = {}) {
  const r = await dk.client.callTool({ name, arguments: args });
  if (r.isError) throw new Error(`${name} failed: ${JSON.stringify(r.content)}`);
  const content = r.content as Array<{ type: string; text?: string; resource?: { blob?: string; mimeType?: string } }>;
  return { value: r.structuredContent as any, text: content.map((c) => c.text ?? '').join(''), content };
}

/**
 * Calls a tool that must fail with one of the contract's codes: by a contract name (`debugger/attach`)
 * a JSON-RPC error, answered as it is; by an MCP name (`debugger_attach`) a tool result the model
 * sees (isError), "Message (code N): details", answered in the same shape.
 */
async function rpcError(name: string, args: Record<string, unknown> = {}): Promise<{ code: number; message: string; data?: unknown }> {
  let r;
  try {
    r = await dk.client.callTool({ name, arguments: args });
  } catch (err) {
    if (!(err instanceof McpError) || !name.includes('/')) throw err;
    return err;
  }
  const text = (r.content as Array<{ text?: string }>).map((c) => c.text ?? '').join('');
  const visible = /^(.+?) \(code (-\d+)\): ([\s\S]*)$/.exec(text);
  if (name.includes('/') || !r.isError || !visible) throw new Error(`${name} should have failed with a contract code: ${JSON.stringify(r)}`);
  return { code: Number(visible[2]), message: visible[1]!, data: { details: visible[3] } };
}

function startLoop(uid?: number): ChildProcess {
  const child = uid === undefined ? spawn(path.join(root, 'dbg_loop'), [], { stdio: ['ignore', 'ignore', 'pipe'] }) : spawn('sleep', ['120'], { stdio: 'ignore', uid, gid: uid });
  children.push(child);
  return child;
}

beforeAll(async () => {
  root = tempDir();
  dataDir = tempDir('debugkit-data-');
  // Sources are compiled inside the root: stops show source lines only for files under it.
  for (const name of ['dbg_timetravel', 'dbg_loop', 'dbg_crash', 'dbg_pointer', 'dbg_clock', 'dbg_bigmem', 'dbg_longnames', 'dbg_midmem', 'dbg_filemap']) compileCInside(root, name);
  dk = await connectStdio({ root, args: ['--toolsets', 'debugger', '--data-dir', dataDir] });
}, 60_000);
afterAll(async () => {
  await dk?.close();
  for (const c of children) c.kill('SIGKILL');
});

describe('debugger toolset over stdio', () => {
  it('lists SEP-986 names and accepts the contract names in tools/call', async () => {
    const { tools } = await dk.client.listTools();
    const names = tools.map((t) => t.name);
    for (const n of [
      'attach',
      'set_breakpoint',
      'continue',
      'step_forward',
      'step_backward',
      'get_stack_trace',
      'get_variables',
      'find_similar_bugs',
      'export_trace',
      'quota_status',
      'license_info',
      'get_comprehensive_audit',
    ]) {
      expect(names).toContain(`debugger_${n}`);
    }
    expect(names.every((n) => /^[A-Za-z0-9._-]{1,128}$/.test(n))).toBe(true);
    // Over stdio the caller is the local user: every scope, no limits, and its calls are audited.
    const quota = await call('debugger/quota_status');
    expect(quota.value.limit).toBe('unlimited');
    const license = await call('debugger/license_info');
    expect(license.value.key).toMatchObject({ id: 'local', scopes: ['*'], expired: false });
    const audit = await call('debugger/get_comprehensive_audit', {});
    expect(audit.value).toMatchObject({ configured: true, verified: true });
    expect(audit.value.entries.map((e: { tool: string }) => e.tool)).toContain('debugger_license_info');
  });

  it('launches recorded, sets breakpoints by line, function (with a condition) and address, and steps both ways', async () => {
    const launch = await call('debugger_launch', { program: 'dbg_timetravel', session_id: 'tt' });
    expect(launch.value.history).toBe('record');
    expect(launch.value.stop.function).toBe('main');

    const line = await call('debugger/set_breakpoint', { address: 'dbg_timetravel.c:23', session_id: 'tt' });
    expect(line.value.line).toBe(23);
    let stop = (await call('debugger_continue', { session_id: 'tt' })).value;
    expect(stop).toMatchObject({ state: 'stopped', reason: 'breakpoint-hit', line: 23 });
    expect(stop.changed.x).toBe('20');
    expect(stop.source.some((l: string) => l.startsWith('>23'))).toBe(true);

    const fn = await call('debugger_set_breakpoint', { address: 'bump', condition: 'by == 3', session_id: 'tt' });
    expect(fn.value.function).toBe('bump');
    stop = (await call('debugger_continue', { session_id: 'tt' })).value;
    expect(stop).toMatchObject({ function: 'bump', reason: 'breakpoint-hit' });
    expect(stop.changed.by).toBe('3');
    expect(stop.frames.map((f: any) => f.function)).toEqual(['bump', 'main']);
    const trace = (await call('debugger_get_stack_trace', { session_id: 'tt' })).value;
    expect(trace.frames.map((f: any) => f.function)).toEqual(['bump', 'main']);
    await call('debugger_bookmark', { name: 'third-bump', session_id: 'tt' });

    // By address: the first instruction of fill_name.
    const addr = execFileSync('gdb', ['-batch', '-nx', '-ex', 'info address fill_name', path.join(root, 'dbg_timetravel')], { encoding: 'utf8' });
    // gdb runs the PIE without address randomization: it loads at 0x555555554000.
    const hex = `0x${(0x555555554000 + Number(/(0x[0-9a-f]+)/.exec(addr)![1]!)).toString(16)}`;
    const byAddr = await call('debugger_set_breakpoint', { address: hex, session_id: 'tt' });
    expect(byAddr.value.number).toBeGreaterThan(0);
    stop = (await call('debugger_continue', { session_id: 'tt' })).value;
    expect(stop.function).toBe('fill_name');
  });

  it('records a program that reads the clock: its clock calls are system calls (through the vDSO they never returned under record full)', async () => {
    const launch = await call('debugger_launch', { program: 'dbg_clock', session_id: 'clock' });
    expect(launch.value.history).toBe('record');
    expect(launch.text).toMatch(/clock calls go to the kernel/);
    await call('debugger_set_breakpoint', { address: 'dbg_clock.c:13', session_id: 'clock' });
    // Before: still "running" at the first clock_gettime, however long the wait.
    let stop = (await call('debugger_continue', { session_id: 'clock', wait: 60 })).value;
    expect(stop).toMatchObject({ state: 'stopped', reason: 'breakpoint-hit', line: 13 });
    expect(stop.locals?.ok ?? stop.changed?.ok).toBe('1');
    // Back across the three clock calls, and forward again: the recording holds them.
    stop = (await call('debugger_step_backward', { session_id: 'clock', count: 4 })).value;
    expect(stop.line).toBeLessThan(13);
    stop = (await call('debugger_continue', { session_id: 'clock' })).value;
    expect(stop).toMatchObject({ state: 'stopped', line: 13 });
    await call('debugger_detach', { session_id: 'clock' });
  });

  it('finds the write that corrupted a struct with debugger_last_change', async () => {
    await call('debugger_set_breakpoint', { address: 'dbg_timetravel.c:26', session_id: 'tt' });
    await call('debugger_continue', { session_id: 'tt' });
    const change = await call('debugger_last_change', { expression: 'rec.checksum', session_id: 'tt' });
    expect(change.value.found).toBe(true);
    expect(change.value.old_value).toBe('1234');
    expect(change.value.new_value).not.toBe('1234');
    expect(change.value.stop.frames.map((f: any) => f.function)).toContain('fill_name');
    expect(change.text).toMatch(/fill_name .*dbg_timetravel\.c:13/);
  });

  it('debugger_last_change watches the location an expression has now: through a local pointer, a cast, an address', async () => {
    // Issue 21: watching `j->payload[8]` watched j too, and answered main's prologue that stored j.
    await call('debugger_launch', { program: 'dbg_pointer', session_id: 'ptr' });
    await call('debugger_set_breakpoint', { address: 'dbg_pointer.c:23', session_id: 'ptr' });
    await call('debugger_continue', { session_id: 'ptr' });
    const change = await call('debugger_last_change', { expression: 'j->payload[8]', session_id: 'ptr' });
    expect(change.value).toMatchObject({ found: true, new_value: "90 'Z'", old_value: "105 'i'" });
    expect(change.text).toMatch(/^j->payload\[8\] \(at 0x[0-9a-f]+\) was last written at p\d+ in corrupt .*dbg_pointer\.c:14: 105 'i' -> 90 'Z'/);
    // Earlier: fill wrote it, over what memset put there.
    const earlier = await call('debugger_last_change', { expression: 'j->payload[8]', session_id: 'ptr' });
    expect(earlier.value).toMatchObject({ found: true, old_value: "17 '\\021'", new_value: "105 'i'" });
    expect(earlier.text).toMatch(/in fill .*dbg_pointer\.c:10/);
    // A cast of an address names the same location: before fill, memset filled it (in libc, called from main).
    const filled = await call('debugger_last_change', { expression: '*(char *)&j->payload[8]', session_id: 'ptr' });
    expect(filled.value).toMatchObject({ found: true, old_value: "0 '\\000'", new_value: "17 '\\021'" });
    expect(filled.value.stop.frames.map((f: any) => f.function)).toContain('main');
    // Before that (from memset's frame, where j is not a name: its address is), nothing wrote it since the recording began at main: said so.
    const never = await call('debugger_last_change', { expression: `*(char *)${change.value.address}`, session_id: 'ptr' });
    expect(never.value.found).toBe(false);
    expect(never.text).toMatch(/^no write to \*\(char \*\)0x[0-9a-f]+ \(at 0x[0-9a-f]+\) in the recorded history \(it is 0 '\\000' since recording began\)/);
    await call('debugger_detach', { session_id: 'ptr' });
  });

  it('a condition or watched expression that writes memory is refused, and nothing is written (attack 18p)', async () => {
    await call('debugger_launch', { program: 'dbg_timetravel', session_id: 'w' });
    const cond = await rpcError('debugger_set_breakpoint', { address: 'bump', condition: 'counter = 31337', session_id: 'w' });
    expect(cond.code).toBe(-32006);
    expect((cond.data as any).details).toMatch(/assignments and side effects/);
    const watched = await dk.client.callTool({ name: 'debugger_last_change', arguments: { expression: 'counter--', session_id: 'w' } });
    expect(watched.isError).toBe(true);
    expect((watched.content as Array<{ text: string }>)[0]!.text).toMatch(/not a watchable expression: assignments and side effects/);
    await call('debugger_set_breakpoint', { address: 'bump', condition: 'by == 2', session_id: 'w' });
    await call('debugger_continue', { session_id: 'w' });
    expect((await call('debugger_evaluate', { expression: 'counter', session_id: 'w' })).value.value).toBe('1');
    await call('debugger_detach', { session_id: 'w' });
  });

  it('exports the trace as json, text and a binary GDB can record restore', async () => {
    const json = await call('debugger/export_trace', { format: 'json', session_id: 'tt' });
    expect(json.value.positions.length).toBeGreaterThan(5);
    expect(json.value.positions.find((p: any) => p.bookmark === 'third-bump').function).toBe('bump');
    // Each position's instruction number, asked of gdb without holding up the stop's answer, is there.
    expect(json.value.positions.filter((p: any) => typeof p.insn !== 'number')).toEqual([]);
    const ranged = await call('debugger_export_trace', { format: 'json', start_snapshot: 'p2', end_snapshot: 'third-bump', session_id: 'tt' });
    expect(ranged.value.positions[0].id).toBe('p2');
    expect(ranged.value.positions.at(-1).bookmark).toBe('third-bump');
    const text = await call('debugger_export_trace', { format: 'text', session_id: 'tt' });
    expect(text.text).toMatch(/^p1 .* main /);
    const file = path.join(root, 'trace.gdbrec');
    writeFileSync(file, await binaryTrace('tt'));
    const restored = execFileSync('gdb', ['-batch', '-nx', '-ex', `target core ${file}`, '-ex', `record restore ${file}`, '-ex', 'info record', path.join(root, 'dbg_timetravel')], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(restored).toMatch(/Log contains \d+ instructions/);

    // x = 30 overwrites 20; stepping back over it really restores 20.
    let stop = (await call('debugger_step_backward', { session_id: 'tt', to: 'p2' })).value;
    expect(stop.line).toBe(23);
    stop = (await call('debugger_step_forward', { session_id: 'tt' })).value;
    expect(stop.line).toBe(24);
    expect(stop.changed.x).toBe('30');
    const back = await call('debugger_step_backward', { session_id: 'tt' });
    expect(back.value).toMatchObject({ state: 'stopped', line: 23 });
    expect(back.value.changed.x).toBe('20');
    expect(back.text.length).toBeLessThan(1600); // a compact stop: well under 400 tokens
    expect(back.text).not.toMatch(/record target|instruction number/); // gdb's `info record` lines stay out of answers

    // Back across printf and memcpy: buf is empty again, as before memcpy ran.
    stop = (await call('debugger_step_backward', { session_id: 'tt', count: 2 })).value;
    expect(stop.line).toBe(21);
    const vars = (await call('debugger_get_variables', { scope: 'local', filter: 'buf', session_id: 'tt' })).value.variables;
    expect(vars[0].value).not.toContain('abcdefghij');
    stop = (await call('debugger_step_forward', { session_id: 'tt' })).value;
    expect(stop.changed.buf).toContain('abcdefghij');
    await call('debugger_detach', { session_id: 'tt' });
  });

  it("shows a segfault's stack and finds the right earlier crash among 24 and in a core dump", async () => {
    const others = [
      ['SIGSEGV', ['parse_header', 'read_request', 'main']],
      ['SIGSEGV', ['walk_tree', 'main']],
      ['SIGFPE', ['divide', 'main']],
      ['SIGBUS', ['walk', 'main']],
      ['SIGSEGV', ['main']],
      ['SIGABRT', ['check', 'main']],
      ['SIGSEGV', ['lookup', 'walk', 'run']],
    ] as const;
    const signatures = [];
    for (let i = 0; i < 24; i++) {
      const [failure, frames] = others[i % others.length]!;
      const f = i === 0 ? frames : [...frames.slice(0, 1), `helper_${i}`, ...frames.slice(1)];
      signatures.push({
        id: `old-${i}`,
        time: '2026-01-01T00:00:00Z',
        failure,
        pattern: failure === 'SIGABRT' ? 'logic' : 'crash',
        frames: f,
        signature: [failure, ...f].join(' | '),
        source: `import ${i}`,
      });
    }
    signatures.splice(13, 0, {
      id: 'the-one',
      time: '2026-02-02T00:00:00Z',
      failure: 'SIGSEGV',
      pattern: 'crash',
      frames: ['walk', 'main'],
      signature: 'SIGSEGV | walk | main',
      source: 'earlier crash',
    });
    // Earlier crashes live in the control store (control.db in the data directory), each the key's
    // that had it: these are the stdio user's ('local').
    const db = new Database(path.join(dataDir, 'control.db'));
    try {
      const insert = db.prepare('INSERT INTO signatures (id, time, body, key_id) VALUES (?, ?, ?, ?)');
      for (const sig of signatures) insert.run(sig.id, sig.time, JSON.stringify(sig), 'local');
    } finally {
      db.close();
    }
    // A fresh server reads the store; a core dump of the same crash lies under search_path.
    await dk.close();
    dk = await connectStdio({ root, args: ['--toolsets', 'debugger', '--data-dir', dataDir] });
    mkdirSync(path.join(root, 'cores'));
    execFileSync('gdb', ['-batch', '-nx', '-ex', 'run', '-ex', `gcore ${path.join(root, 'cores', 'core.1234')}`, '--args', path.join(root, 'dbg_crash'), 'walk'], {
      stdio: 'ignore',
      env: { ...process.env, GLIBC_TUNABLES: '' },
    });

    await call('debugger_launch', { program: 'dbg_crash', args: ['walk'], session_id: 'crash' });
    const stop = (await call('debugger_continue', { session_id: 'crash' })).value;
    expect(stop).toMatchObject({ state: 'stopped', reason: 'signal-received', function: 'walk' });
    const trace = (await call('debugger_get_stack_trace', { session_id: 'crash' })).value;
    expect(trace.frames.map((f: any) => f.function)).toEqual(['walk', 'main']);

    const similar = await call('debugger/find_similar_bugs', { pattern_type: 'crash', session_id: 'crash' });
    expect(similar.value.reference.signature).toBe('SIGSEGV | walk | main');
    expect(similar.value.matches[0].source).toBe('earlier crash');
    expect(similar.value.matches[0].why).toMatch(/same failure SIGSEGV/);
    const withCores = await call('debugger_find_similar_bugs', { pattern_type: 'crash', search_path: 'cores', session_id: 'crash' });
    const sources = withCores.value.matches.slice(0, 2).map((m: any) => m.source);
    expect(sources).toContain('core cores/core.1234');
    await call('debugger_detach', { session_id: 'crash' });
  });

  it("attaches to a running process, records until glibc's EVEX string code, falls back to checkpoints, and detaches leaving it running", async () => {
    const loop = startLoop();
    // Attached once it runs its loop.
    expect(await runsAgain(loop.pid!)).toBe(true);
    const attached = await call('debugger/attach', { pid: loop.pid, session_id: 'live' });
    expect(attached.text).toContain(`Successfully attached to process ${loop.pid}`);
    expect(attached.value.history).toBe('record');
    await call('debugger_set_breakpoint', { address: 'step', session_id: 'live' });
    const iNow = async () => (await call('debugger_get_variables', { session_id: 'live', filter: 'i' })).value.variables.find((v: any) => v.name === 'i')?.value;
    // Run until the snprintf in step(): record full cannot record it, and history switches to checkpoints.
    let stop = (await call('debugger_continue', { session_id: 'live' })).value;
    for (let n = 0; n < 3 && !/history now/.test(stop.note ?? ''); n++) stop = (await call('debugger_continue', { session_id: 'live' })).value;
    expect(stop.note).toMatch(/recording stopped here .*history now: checkpoint/);
    stop = (await call('debugger_continue', { session_id: 'live' })).value;
    expect(stop.function).toBe('step');
    const i1 = await iNow();
    stop = (await call('debugger_continue', { session_id: 'live' })).value;
    expect(stop.function).toBe('step');
    expect(await iNow()).not.toBe(i1);
    const back = (await call('debugger_step_backward', { session_id: 'live' })).value;
    expect(back.function).toBe('step');
    expect(await iNow()).toBe(i1);
    const err = await rpcError('debugger_last_change', { expression: 'ticks', session_id: 'live' });
    expect(err.code).toBe(-32007);
    expect((err.data as any).details).toMatch(/debugger_launch/);
    await call('debugger_detach', { session_id: 'live' });
    // Detached, it runs on (its CPU time grows).
    expect(await runsAgain(loop.pid!)).toBe(true);
    expect(procState(loop.pid!)).not.toMatch(/[Tt]/);
    // The checkpoint forks (children of the process) ended with the session.
    await waitFor(() => descendants(loop.pid!).length === 0, 5000);
    expect(descendants(loop.pid!)).toEqual([]);
  });

  it('never blocks on a long run: bounded wait, "running", then interrupt', async () => {
    await call('debugger_launch', { program: 'dbg_loop', session_id: 'long' });
    const started = Date.now();
    const run = await call('debugger_continue', { session_id: 'long', wait: 1 });
    expect(run.value.state).toBe('running');
    expect(run.text).toMatch(/debugger_interrupt/);
    expect(Date.now() - started).toBeLessThan(15_000);
    const stop = (await call('debugger_interrupt', { session_id: 'long' })).value;
    expect(stop.state).toBe('stopped');
    await call('debugger_detach', { session_id: 'long' });
  });

  it("answers the contract's error codes", async () => {
    let err = await rpcError('debugger/attach', { pid: 4_000_000 });
    expect(err.code).toBe(-32004);
    expect(err.message).toContain('Process not found');
    err = await rpcError('debugger_step_forward', { session_id: 'nothing' });
    expect(err.code).toBe(-32005);
    err = await rpcError('debugger/get_stack_trace', {});
    expect(err.code).toBe(-32005);
    const other = startLoop(65534);
    await waitFor(() => isAlive(other.pid!), 5000);
    err = await rpcError('debugger_attach', { pid: other.pid });
    expect(err.code).toBe(-32003);
    expect((err.data as any).details).toMatch(/uid 65534/);
    await call('debugger_launch', { program: 'dbg_timetravel', session_id: 'errs' });
    err = await rpcError('debugger_set_breakpoint', { address: 'no_such_function', session_id: 'errs' });
    expect(err.code).toBe(-32006);
    err = await rpcError('debugger_set_breakpoint', { address: 'main; shell id', session_id: 'errs' });
    expect(err.code).toBe(-32006);
    err = await rpcError('debugger_set_breakpoint', { address: 'main', condition: 'unlink(0) == 0', session_id: 'errs' });
    expect(err.code).toBe(-32006);
    // Not a history matter: a call in an expression is a bad argument, said as one.
    const watched = await dk.client.callTool({ name: 'debugger_last_change', arguments: { expression: 'abort()', session_id: 'errs' } });
    expect(watched.isError).toBe(true);
    expect((watched.content as Array<{ text: string }>)[0]!.text).toMatch(/INVALID_ARGUMENT.*"abort\(\)" is not a watchable expression/);
    err = await rpcError('debugger_set_breakpoint', { address: '0x10', session_id: 'errs' });
    expect(err.code).toBe(-32006);
    expect((err.data as any).details).toMatch(/not mapped/);
    // Run to the end: record full holds the program at its exit call, history intact.
    const end = (await call('debugger_continue', { session_id: 'errs' })).value;
    expect(end.reason).toBe('exit-pending');
    const back = (await call('debugger_step_backward', { session_id: 'errs', to: 'p1' })).value;
    expect(back.function).toBe('main');
    err = await rpcError('debugger_step_backward', { session_id: 'errs', to: 'p999' });
    expect(err.code).toBe(-32007);
    await call('debugger_detach', { session_id: 'errs' });
  });

  it('answers the variables of a caller frame and evaluates expressions in a frame, refusing calls, writes and quotes', async () => {
    await call('debugger_launch', { program: 'dbg_timetravel', session_id: 'frames' });
    await call('debugger_set_breakpoint', { address: 'bump', condition: 'by == 2', session_id: 'frames' });
    await call('debugger_continue', { session_id: 'frames' });
    const names = async (frame?: number) => (await call('debugger_get_variables', { session_id: 'frames', ...(frame === undefined ? {} : { frame }) })).value.variables.map((v: any) => v.name).sort();
    expect(await names()).toEqual(['by']);
    expect(await names(0)).toEqual(['by']);
    expect(await names(1)).toEqual(['buf', 'i', 'rec', 'x']);
    const past = await dk.client.callTool({ name: 'debugger_get_variables', arguments: { frame: 5, session_id: 'frames' } });
    expect(past.isError).toBe(true);
    expect((past.content as Array<{ text: string }>)[0]!.text).toMatch(/INVALID_ARGUMENT.*frame 5 is past the stack: it has 2 frames/);

    const by = await call('debugger_evaluate', { expression: 'by', session_id: 'frames' });
    expect(by.value).toMatchObject({ expression: 'by', value: '2', type: 'int' });
    expect(by.text).toBe('by = 2 (int)');
    const caller = await call('debugger_evaluate', { expression: 'x * 2 + i', frame: 1, session_id: 'frames' });
    expect(caller.value).toMatchObject({ value: '62', type: 'int' });
    expect((await call('debugger_evaluate', { expression: 'rec.checksum >= 1234 && counter == 1', frame: 1, session_id: 'frames' })).value.value).toBe('1');
    expect((await call('debugger_evaluate', { expression: '$pc', session_id: 'frames' })).value.value).toMatch(/^(\(void \(\*\)\(\)\) )?0x[0-9a-f]+ <bump\+\d+>$/);
    // x is main's, not bump's: in frame 0 gdb does not know it.
    const notHere = await dk.client.callTool({ name: 'debugger_evaluate', arguments: { expression: 'x', session_id: 'frames' } });
    expect((notHere.content as Array<{ text: string }>)[0]!.text).toMatch(/INVALID_ARGUMENT.*cannot evaluate x in frame 0: .*No symbol "x"/);
    const refused = async (expression: string) => {
      const r = await dk.client.callTool({ name: 'debugger_evaluate', arguments: { expression, frame: 1, session_id: 'frames' } });
      expect(r.isError).toBe(true);
      return (r.content as Array<{ text: string }>)[0]!.text;
    };
    expect(await refused('abort()')).toMatch(/INVALID_ARGUMENT.*"abort\(\)" is not evaluated: function calls are refused/);
    expect(await refused('x = 5')).toMatch(/assignments and side effects .* are refused/);
    expect(await refused('x += 1')).toMatch(/assignments and side effects/);
    expect(await refused('x <<= 1')).toMatch(/assignments and side effects/);
    expect(await refused('x++')).toMatch(/assignments and side effects/);
    expect(await refused('--x')).toMatch(/assignments and side effects/);
    expect(await refused('"abc"')).toMatch(/quotes, backslashes, ";" and newlines are refused/);
    expect(await refused("'a'")).toMatch(/quotes/);
    expect(await refused('x; shell id')).toMatch(/quotes, backslashes, ";"/);
    expect(await refused('$_strlen')).toMatch(/"\$" is taken only as a register name/);
    expect(await refused('{int} &x')).toMatch(/only names, numbers, spaces and the C operators/);
    // Nothing was written: x is still 30.
    expect((await call('debugger_evaluate', { expression: 'x', frame: 1, session_id: 'frames' })).value.value).toBe('30');
    await call('debugger_detach', { session_id: 'frames' });
  });

  it('lists the breakpoints set with their hit counts, and deletes one so the next continue does not stop there', async () => {
    await call('debugger_launch', { program: 'dbg_timetravel', session_id: 'bps' });
    expect((await call('debugger_breakpoints', { session_id: 'bps' })).text).toBe('no breakpoints');
    const bump = (await call('debugger_set_breakpoint', { address: 'bump', session_id: 'bps' })).value.number;
    const end = (await call('debugger_set_breakpoint', { address: 'dbg_timetravel.c:26', condition: 'x == 30', session_id: 'bps' })).value.number;
    await call('debugger_continue', { session_id: 'bps' });
    await call('debugger_continue', { session_id: 'bps' });
    const list = await call('debugger_breakpoints', { session_id: 'bps' });
    expect(list.value.breakpoints).toEqual([
      { number: bump, location: 'bump', function: 'bump', file: expect.stringContaining('dbg_timetravel.c'), line: 9, hits: 2, enabled: true },
      {
        number: end,
        location: expect.stringContaining('dbg_timetravel.c:26'),
        function: 'main',
        file: expect.stringContaining('dbg_timetravel.c'),
        line: 26,
        condition: 'x == 30',
        hits: 0,
        enabled: true,
      },
    ]);
    expect(list.text).toMatch(new RegExp(`^#${bump} bump \\(bump .*dbg_timetravel\\.c:9\\): hit 2 times\\n#${end} .*dbg_timetravel\\.c:26.* if x == 30: hit 0 times$`));

    // Only this session's own breakpoints: another number is refused, naming the session's, and nothing is deleted.
    const err = await rpcError('debugger_breakpoints', { delete: [bump, end + 50], session_id: 'bps' });
    expect(err.code).toBe(-32006);
    expect((err.data as any).details).toMatch(new RegExp(`has no breakpoint ${end + 50}: its breakpoints are ${bump}, ${end}`));
    const deleted = await call('debugger_breakpoints', { delete: [bump], session_id: 'bps' });
    expect(deleted.value.deleted).toEqual([bump]);
    expect(deleted.value.breakpoints.map((b: any) => b.number)).toEqual([end]);
    expect(deleted.text).toMatch(new RegExp(`^deleted #${bump}\\n#${end} `));
    // bump runs three more times, but the next stop is line 26.
    const stop = (await call('debugger_continue', { session_id: 'bps' })).value;
    expect(stop).toMatchObject({ reason: 'breakpoint-hit', function: 'main', line: 26 });
    expect((await call('debugger_breakpoints', { session_id: 'bps' })).value.breakpoints[0].hits).toBe(1);
    await call('debugger_detach', { session_id: 'bps' });
  });

  it("a crash inside libc answers the program's own frame as where it crashed, keeping the frames", async () => {
    compileCInside(root, 'dbg_libc');
    await call('debugger_launch', { program: 'dbg_libc', session_id: 'libc' });
    let crash = await call('debugger_continue', { session_id: 'libc' });
    // record full may give up inside libc first; the next continue reaches the crash.
    for (let n = 0; n < 3 && crash.value.reason !== 'signal-received'; n++) crash = await call('debugger_continue', { session_id: 'libc' });
    expect(crash.value).toMatchObject({ state: 'stopped', reason: 'signal-received' });
    expect(crash.value.function).not.toBe('parse_line');
    expect(crash.value.frames[0].function).toBe(crash.value.function);
    expect(crash.value.user_frame).toMatchObject({ function: 'parse_line', file: expect.stringContaining('dbg_libc.c'), line: 6, crashed_in: expect.stringContaining('strlen') });
    expect(crash.value.user_frame.level).toBeGreaterThan(0);
    expect(crash.value.source.some((l: string) => l.startsWith('>6 ') && l.includes('strlen(line)'))).toBe(true);
    expect(crash.text).toMatch(/\ncrashed in \S*strlen\S*( in libc\.so\.6)?, called from parse_line at dbg_libc\.c:6 \(frame \d+\)\n/);
    // A crash in the program's own code names no other frame.
    await call('debugger_launch', { program: 'dbg_crash', args: ['walk'], session_id: 'own' });
    const own = (await call('debugger_continue', { session_id: 'own' })).value;
    expect(own).toMatchObject({ reason: 'signal-received', function: 'walk' });
    expect(own.user_frame).toBeUndefined();
    await call('debugger_detach', { session_id: 'own' });
    await call('debugger_detach', { session_id: 'libc' });
  });
});

describe('debugger toolset over HTTP with a key', () => {
  it('serves the contract names and error codes, and steps back', async () => {
    const server = await startHttpServer(['--toolsets', 'debugger', '--root', root, '--data-dir', dataDir]);
    const http = await connectHttp(server.url, server.key);
    try {
      const err = await http.client.callTool({ name: 'debugger/attach', arguments: { pid: 4_000_001 } }).catch((e: unknown) => e);
      expect((err as McpError).code).toBe(-32004);
      await http.client.callTool({ name: 'debugger_launch', arguments: { program: 'dbg_timetravel' } });
      await http.client.callTool({ name: 'debugger/set_breakpoint', arguments: { address: 'dbg_timetravel.c:24' } });
      const at24 = await http.client.callTool({ name: 'debugger/continue', arguments: {} });
      expect((at24.structuredContent as any).changed.x).toBe('30');
      const back = await http.client.callTool({ name: 'debugger/step_backward', arguments: {} });
      expect(back.structuredContent as any).toMatchObject({ line: 23, changed: { x: '20' } });
      // Forward again: replay reaches the breakpoint at the end of the recording, then recording
      // goes on live past it (GDB needs debugkit to step off the breakpoint first).
      const again = await http.client.callTool({ name: 'debugger/continue', arguments: {} });
      expect((again.structuredContent as any).line).toBe(24);
      const end = await http.client.callTool({ name: 'debugger/continue', arguments: {} });
      expect((end.structuredContent as any).reason).toBe('exit-pending');
    } finally {
      await http.close();
      await server.stop();
    }
  });
});

// Attack u2-1: the whole trace was built before the answer ceiling cut it; with names of 2,560
// characters in every position, 600 positions held the loop 2.5 s (another key's ping).
describe('debugger_export_trace of a long trace: a page per call, each within an answer, names clipped', () => {
  it('pages json and text by next_snapshot, the pages together are every position once, in order', async () => {
    await call('debugger_launch', { program: 'dbg_longnames', session_id: 'long' });
    await call('debugger_step_forward', { session_id: 'long', count: 120 });
    const seen: string[] = [];
    let start: string | undefined;
    let total = 0;
    let pages = 0;
    let widest = 0;
    for (;;) {
      const r = await dk.client.callTool({ name: 'debugger_export_trace', arguments: { format: 'json', session_id: 'long', ...(start ? { start_snapshot: start } : {}) } });
      expect(r.isError).toBeFalsy();
      // Within the answer ceiling: not cut by it.
      expect(r._meta?.['debugkit/truncated']).toBeUndefined();
      const v = r.structuredContent as { count: number; total: number; positions: Array<{ id: string; changed: Record<string, string> }>; next_snapshot?: string; note?: string };
      expect(v.count).toBe(v.positions.length);
      if (pages === 0) total = v.total;
      for (const p of v.positions) {
        widest = Math.max(widest, Object.keys(p.changed).length);
        // The name's head and tail (80 characters), never the 2,560 of the program's.
        for (const name of Object.keys(p.changed)) expect(name.length, name).toBeLessThanOrEqual(84);
      }
      seen.push(...v.positions.map((p) => p.id));
      pages++;
      if (!v.next_snapshot) break;
      expect(v.note).toMatch(/^\d+ of \d+ positions .*: export again with start_snapshot "p\d+" for the rest$/);
      start = v.next_snapshot;
    }
    expect(total).toBeGreaterThan(120);
    expect(pages).toBeGreaterThan(1);
    expect(seen.length).toBe(total);
    expect(new Set(seen).size).toBe(total);
    // Twelve locals changed at one position, each under a name of its own.
    expect(widest).toBe(12);
    const text = await call('debugger_export_trace', { format: 'text', session_id: 'long' });
    expect(text.value.next_snapshot).toMatch(/^p\d+$/);
    expect(text.text).toMatch(/export again with start_snapshot "p\d+" for the rest$/);
    await call('debugger_detach', { session_id: 'long' });
  }, 120_000);
});

/** A session's binary trace, its pages fetched with next_offset and joined (each page is pushed onto `pages`). */
async function binaryTrace(session_id: string, pages: Buffer[] = []): Promise<Buffer> {
  let offset: number | undefined = 0;
  let total = 0;
  while (offset !== undefined) {
    const r = await call('debugger_export_trace', { format: 'binary', offset, session_id });
    const resource = r.content.find((c) => c.type === 'resource')!.resource!;
    expect(resource.mimeType).toBe('application/octet-stream');
    const blob = Buffer.from(resource.blob!, 'base64');
    expect(blob.length).toBeLessThanOrEqual(256 * 1024);
    total = r.value.bytes;
    pages.push(blob);
    if (r.value.next_offset !== undefined) {
      expect(r.value.next_offset).toBe(offset + blob.length);
      expect(r.text).toContain(`next_offset ${r.value.next_offset}`);
    }
    offset = r.value.next_offset;
  }
  const whole = Buffer.concat(pages);
  expect(whole.length).toBe(total);
  return whole;
}

// Attack w2-2: a binary trace of 29 MB went out as one answer, its base64 built, written and checked on
// the loop (about 2 s). It now goes out 256 KiB a call; the pages, joined, are the file GDB restores.
describe('debugger_export_trace binary of a recording of several pages', () => {
  it('comes a page a call, with next_offset, and the pages joined restore in gdb', async () => {
    await call('debugger_launch', { program: 'dbg_midmem', session_id: 'midmem' });
    await call('debugger_step_forward', { session_id: 'midmem', count: 3 });
    const refused = await dk.client.callTool({ name: 'debugger_export_trace', arguments: { format: 'binary', offset: 5, session_id: 'midmem' } });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toContain('no binary trace of session midmem to go on with: export it again without offset');
    const pages: Buffer[] = [];
    const whole = await binaryTrace('midmem', pages);
    expect(pages.length).toBeGreaterThan(4);
    const file = path.join(root, 'midmem.gdbrec');
    writeFileSync(file, whole);
    const total = whole.length;
    const restored = execFileSync('gdb', ['-batch', '-nx', '-ex', `target core ${file}`, '-ex', `record restore ${file}`, '-ex', 'info record', path.join(root, 'dbg_midmem')], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(restored).toMatch(/Log contains \d+ instructions/);
    const past = await dk.client.callTool({ name: 'debugger_export_trace', arguments: { format: 'binary', offset: total, session_id: 'midmem' } });
    expect(past.isError).toBe(true);
    expect(JSON.stringify(past.content)).toContain(`offset ${total} is past the trace's end (${total} bytes)`);
    await call('debugger_detach', { session_id: 'midmem' });
  }, 120_000);
});

// Attack 18am x1-2: GDB writes the program's memory with a recording; a program that reserved 1 GiB
// made a 1.29 GB file on disk, on every call, before its size was refused.
describe('debugger_export_trace binary of a program holding much memory', () => {
  it('is refused before anything is written, saying how much memory GDB would write', async () => {
    await call('debugger_launch', { program: 'dbg_bigmem', session_id: 'bigmem' });
    await call('debugger_step_forward', { session_id: 'bigmem', count: 2 });
    const refused = await dk.client.callTool({ name: 'debugger_export_trace', arguments: { format: 'binary', session_id: 'bigmem' } });
    const text = (refused.content as Array<{ text?: string }>).map((c) => c.text ?? '').join('');
    expect(refused.isError).toBe(true);
    expect(text).toMatch(/GDB writes the program's memory with a recording: this one would be over (\d+) bytes, over the 33554432-byte limit of a binary trace: export json or text instead/);
    expect(Number(/would be over (\d+)/.exec(text)![1])).toBeGreaterThan(256 * 1024 * 1024);
    // json still answers.
    expect((await call('debugger_export_trace', { format: 'json', session_id: 'bigmem' })).value.positions.length).toBeGreaterThan(0);
    await call('debugger_detach', { session_id: 'bigmem' });
  }, 60_000);

  // Attack z2-1: GDB also writes a private mapping of a file once the program wrote a page of it, whole. The estimate
  // counted anonymous mappings only, and a 2 GiB sparse file mapped so made GDB write 2.15 GB before the size was checked.
  it('counts a written private mapping of a file, and refuses it before anything is written', async () => {
    await call('debugger_launch', { program: 'dbg_filemap', session_id: 'filemap' });
    const stop = (await call('debugger_step_forward', { session_id: 'filemap', count: 5 })).value;
    expect(stop.line).toBe(15); // past the write into the mapping
    const refused = await dk.client.callTool({ name: 'debugger_export_trace', arguments: { format: 'binary', session_id: 'filemap' } });
    const text = (refused.content as Array<{ text?: string }>).map((c) => c.text ?? '').join('');
    expect(refused.isError).toBe(true);
    expect(text).toMatch(/GDB writes the program's memory with a recording: this one would be over (\d+) bytes/);
    expect(Number(/would be over (\d+)/.exec(text)![1])).toBeGreaterThan(256 * 1024 * 1024);
    await call('debugger_detach', { session_id: 'filemap' });
  }, 60_000);
});
