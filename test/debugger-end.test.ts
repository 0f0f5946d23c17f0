// Ending a launched session whose history switched to fork checkpoints (record full gives up at
// clone3) once the program has a second thread: GDB 13's kill then waits for the checkpoint fork
// forever, so the session must not wait for gdb's answer. Finding d1-2.
import { readFileSync } from 'node:fs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectStdio, type TestClient } from './helpers/client.js';
import { descendants, isRunning } from './helpers/procs.js';
import { compileC, tempDir } from './helpers/programs.js';

let root: string;
const clients: TestClient[] = [];

beforeAll(() => {
  root = tempDir('debugkit-dbgend-');
  compileC(root, 'dbg_threads');
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
});

describe('ending a launched session with checkpoints and threads', () => {
  it('debugger_detach kills the program and every checkpoint fork before it answers', async () => {
    const dk = await connectStdio({ root, args: ['--toolsets', 'debugger'] });
    clients.push(dk);
    const launched = await dk.tool('debugger_launch', { program: 'dbg_threads', session_id: 'end' });
    expect(launched.isError).toBe(false);
    const pid = launched.structured.pid as number;
    // record full gives up at clone3; the stop there is checkpointed (one thread still).
    const stopped = await dk.tool('debugger_continue', { session_id: 'end', wait: 30 });
    expect(stopped.isError).toBe(false);
    expect(stopped.structured.reason).toBe('record-stopped');
    expect(stopped.structured.note).toMatch(/history now: checkpoint/);
    // One step finishes clone3: the second thread exists now.
    expect((await dk.tool('debugger_step_forward', { session_id: 'end' })).isError).toBe(false);
    expect(Number(/^Threads:\s*(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1])).toBe(2);
    // The program and its checkpoint fork(s): every process below the server running the program.
    const programProcs = descendants(dk.serverPid!).filter((p) => p.args.includes('dbg_threads') && !/\bgdb\b/.test(p.args));
    expect(programProcs.map((p) => p.pid)).toContain(pid);
    expect(programProcs.length).toBeGreaterThan(1);

    // The reference: the same program's session ended at main (no checkpoint, one thread), measured in this test.
    expect((await dk.tool('debugger_launch', { program: 'dbg_threads', session_id: 'plain' })).isError).toBe(false);
    let since = performance.now();
    expect((await dk.tool('debugger_detach', { session_id: 'plain' })).isError).toBe(false);
    const plainMs = performance.now() - since;

    since = performance.now();
    const detached = await dk.tool('debugger_detach', { session_id: 'end' });
    const endMs = performance.now() - since;
    console.log(`detach at main ${plainMs.toFixed(0)} ms, with checkpoints and 2 threads ${endMs.toFixed(0)} ms`);
    expect(detached.isError).toBe(false);
    // Promptly: in the same order of cost as the plain detach (tens of times it, measured ~14x),
    // not gdb's 30 s reply timeout (hundreds of times it).
    expect(endMs).toBeLessThan(plainMs * 100);
    // Right after the answer: none of them runs code any more (killed, not left to init).
    expect(programProcs.filter((p) => isRunning(p.pid)).map((p) => p.pid)).toEqual([]);
    expect(descendants(dk.serverPid!).filter((p) => /\bgdb\b.*--interpreter=mi3/.test(p.args))).toEqual([]);
  });
});
