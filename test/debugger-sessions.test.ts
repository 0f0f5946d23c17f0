// The debugger toolset's sessions live in the one registry (core/sessions.ts) with every other
// toolset's: creating one cannot race (the session_id is reserved before gdb starts), they end when
// idle, and they count against --max-sessions-total.
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectStdio, type TestClient } from './helpers/client.js';
import { descendants, waitFor } from './helpers/procs.js';
import { compileC, tempDir } from './helpers/programs.js';

let root: string;
const clients: TestClient[] = [];

beforeAll(() => {
  root = tempDir('debugkit-dbgsessions-');
  compileC(root, 'dbg_timetravel');
  compileC(root, 'dbg_loop');
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
});

async function server(args: string[] = []): Promise<TestClient> {
  const dk = await connectStdio({ root, args: ['--toolsets', 'debugger', ...args] });
  clients.push(dk);
  return dk;
}

/** The gdb processes below the server (one per live debugger session). */
function gdbsOf(dk: TestClient) {
  return descendants(dk.serverPid!).filter((p) => /\bgdb\b.*--interpreter=mi3/.test(p.args));
}

describe('debugger sessions in the one registry', () => {
  it('two concurrent launches of one session_id: exactly one succeeds, the other is refused, and no gdb is left without an owner', async () => {
    const dk = await server();
    const launch = () => dk.tool('debugger_launch', { program: 'dbg_timetravel', session_id: 'race' });
    const answers = await Promise.all([launch(), launch()]);
    const won = answers.filter((a) => !a.isError);
    const refused = answers.filter((a) => a.isError);
    expect(won).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(refused[0]!.text).toMatch(/session "race" (is starting|already has process \d+).*debugger_detach \{session_id: "race"\}.*pass another session_id/);
    // One gdb, and it is the session's: detaching ends it, and none is left.
    expect(gdbsOf(dk)).toHaveLength(1);
    const pid = won[0]!.structured.pid as number;
    expect(descendants(gdbsOf(dk)[0]!.pid).map((p) => p.pid)).toContain(pid);
    const again = await dk.tool('debugger_launch', { program: 'dbg_timetravel', session_id: 'race' });
    expect(again.isError).toBe(true);
    expect(again.text).toContain(`session "race" already has process ${pid}: call debugger_detach {session_id: "race"} first, or pass another session_id`);
    expect(gdbsOf(dk)).toHaveLength(1);
    const detached = await dk.tool('debugger_detach', { session_id: 'race' });
    expect(detached.structured).toMatchObject({ session_id: 'race', pid, action: 'killed' });
    expect(await waitFor(() => gdbsOf(dk).length === 0, 10_000)).toBe(true);
    // The id is free again.
    const relaunch = await dk.tool('debugger_launch', { program: 'dbg_timetravel', session_id: 'race' });
    expect(relaunch.isError).toBe(false);
    await dk.tool('debugger_detach', { session_id: 'race' });
  });

  it('ends a session left idle for its timeout (gdb and program gone), but never during a call', async () => {
    const dk = await server();
    const launched = await dk.tool('debugger_launch', { program: 'dbg_loop', session_id: 'idle', timeout: 1 });
    expect(launched.isError).toBe(false);
    const pid = launched.structured.pid as number;
    // A call longer than the timeout holds the session: it is still there when the call ends.
    const run = await dk.tool('debugger_continue', { session_id: 'idle', wait: 3 });
    expect(run.structured.state).toBe('running');
    const stop = await dk.tool('debugger_interrupt', { session_id: 'idle' });
    expect(stop.isError).toBe(false);
    expect(stop.structured.state).toBe('stopped');
    // Then, without calls, it ends with its gdb and its program.
    expect(await waitFor(() => gdbsOf(dk).length === 0, 15_000)).toBe(true);
    expect(descendants(dk.serverPid!).some((p) => p.pid === pid)).toBe(false);
    // By its MCP name, the contract's error is a tool result the model sees, its code and details in the text.
    const late = await dk.tool('debugger_get_stack_trace', { session_id: 'idle' });
    expect(late.isError).toBe(true);
    expect(late.text).toBe('Not attached (code -32005): no process in session "idle" (it ended: idle for 1 s (session timeout)): call debugger_attach {pid} or debugger_launch {program} first');
  });

  it('counts against --max-sessions-total, naming the cap, without starting a gdb for the refused one', async () => {
    const dk = await server(['--max-sessions-total', '1']);
    expect((await dk.tool('debugger_launch', { program: 'dbg_timetravel', session_id: 'a' })).isError).toBe(false);
    const refused = await dk.tool('debugger_launch', { program: 'dbg_timetravel', session_id: 'b' });
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain('too many debugger sessions on this server: 1 are open over all clients, the server-wide limit (--max-sessions-total)');
    expect(gdbsOf(dk)).toHaveLength(1);
    await dk.tool('debugger_detach', { session_id: 'a' });
    expect((await dk.tool('debugger_launch', { program: 'dbg_timetravel', session_id: 'b' })).isError).toBe(false);
    await dk.tool('debugger_detach', { session_id: 'b' });
    expect(await waitFor(() => gdbsOf(dk).length === 0, 10_000)).toBe(true);
  });
});
