import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, startHttpServer, type HttpServer, type TestClient } from './helpers/client.js';
import { cgroupsWritable, isRunning, pidFrom, waitFor } from './helpers/procs.js';
import { compileC, tempDir } from './helpers/programs.js';
import { RawStdioServer } from './helpers/raw-stdio.js';

/**
 * Issue 18: a program under gdb or the debugger that forks does not leave its children behind.
 * `escape forker PREFIX` (test/programs/escape.c) forks a child (PREFIX.a) and a daemon that
 * starts a session of its own and forks again (PREFIX.c), each writing its pid, then waits. Both
 * must be gone after close, MCP DELETE, idle timeout, detach of a launched program, and server
 * SIGTERM; a process the session attached to, and what it forked, are left running. Both ways
 * debugkit tracks trees are run: the cgroup (where the machine allows it) and the environment
 * marker (DEBUGKIT_CGROUP=off).
 */

const MODES = [
  { mode: 'cgroup', env: {}, available: cgroupsWritable() },
  { mode: 'environment marker', env: { DEBUGKIT_CGROUP: 'off' }, available: true },
] as const;

let root: string;
let escape: string;
let prefixes = 0;
const servers: RawStdioServer[] = [];
const httpServers: HttpServer[] = [];
/** Processes a test started itself (attach targets): ended after the tests. */
const strays: number[] = [];

beforeAll(() => {
  root = tempDir('debugkit-lifetime-dbg-');
  escape = compileC(root, 'escape');
});
afterAll(async () => {
  // SIGTERM: a server ends its children and removes its cgroups on the way out.
  const open = servers.filter((s) => s.proc.exitCode === null && s.proc.signalCode === null);
  for (const s of open) s.proc.kill('SIGTERM');
  await Promise.all(open.map((s) => s.exited().catch(() => s.proc.kill('SIGKILL'))));
  await Promise.all(httpServers.map((s) => s.stop()));
  for (const pid of strays) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
});

function prefix(): string {
  return path.join(root, `forker-${++prefixes}`);
}

/** The pids of the forker's child and daemon, once both wrote them; both must be running. */
async function children(prefix: string): Promise<number[]> {
  const pids = [await pidFrom(`${prefix}.a`), await pidFrom(`${prefix}.c`)];
  expect(pids.filter((p) => !isRunning(p))).toEqual([]);
  return pids;
}

function running(pids: number[]): number[] {
  return pids.filter(isRunning);
}

async function stdioServer(env: NodeJS.ProcessEnv): Promise<RawStdioServer> {
  const server = new RawStdioServer(['--root', root, '--toolsets', 'gdb,debugger', '--data-dir', tempDir('debugkit-lifetime-data-')], env);
  servers.push(server);
  await server.initialize();
  return server;
}

/** A debugger tool's structured result (the debugger answers without gdb's envelope). */
async function debuggerTool(server: RawStdioServer, name: string, args: Record<string, unknown>): Promise<any> {
  const msg = await server.request('tools/call', { name, arguments: args }, 60_000);
  if (msg.result?.isError || !msg.result?.structuredContent) throw new Error(`${name} failed: ${JSON.stringify(msg)}`);
  return msg.result.structuredContent;
}

/** A gdb session running the forker; the forker's children's pids. */
async function gdbForker(server: RawStdioServer, timeout = 300): Promise<{ id: string; pids: number[] }> {
  const p = prefix();
  const { id } = await server.tool('open', { program: 'escape', args: ['forker', p], timeout });
  await server.tool('call', { id, command: 'run', wait: 0.5 });
  return { id, pids: await children(p) };
}

/** A debugger session (launched, recorded) running the forker; the forker's children's pids. */
async function debuggerForker(server: RawStdioServer, session_id: string, timeout = 1800): Promise<number[]> {
  const p = prefix();
  await debuggerTool(server, 'debugger_launch', { program: 'escape', args: ['forker', p], session_id, timeout });
  await debuggerTool(server, 'debugger_continue', { session_id, wait: 0.5 });
  return children(p);
}

/** The forker started by the test itself (not by debugkit): its pid and its children's. */
async function strayForker(): Promise<{ pid: number; pids: number[] }> {
  const p = prefix();
  const proc = spawn(escape, ['forker', p], { stdio: 'ignore', detached: true });
  proc.unref();
  strays.push(proc.pid!);
  const pids = await children(p);
  strays.push(...pids);
  return { pid: proc.pid!, pids };
}

for (const { mode, env, available } of MODES) {
  describe.skipIf(!available)(`gdb and the debugger, ${mode}: a program's children end with its session`, () => {
    let server: RawStdioServer;
    beforeAll(async () => {
      server = await stdioServer(env);
    });

    it("gdb: close ends the program's children", async () => {
      const { id, pids } = await gdbForker(server);
      await server.tool('close', { id });
      expect(running(pids)).toEqual([]);
    });

    it('gdb: detach of the program the session started ends its children; the session goes on', async () => {
      const { id, pids } = await gdbForker(server);
      await server.tool('call', { id, command: '-exec-interrupt', wait: 5 });
      await server.tool('call', { id, command: 'detach' });
      expect(running(pids)).toEqual([]);
      expect((await server.tool('call', { id, command: 'info inferiors' })).output).toMatch(/<null>/);
      await server.tool('close', { id });
    });

    it("gdb: the idle timeout ends the program's children", async () => {
      const { pids } = await gdbForker(server, 2);
      expect(await waitFor(() => running(pids).length === 0, 15_000)).toBe(true);
    });

    it('gdb: an attached process and its children are left running at detach and close', async () => {
      const stray = await strayForker();
      const { id } = await server.tool('open', {});
      await server.tool('call', { id, command: `attach ${stray.pid}`, wait: 5 });
      await server.tool('call', { id, command: 'detach' });
      await server.tool('call', { id, command: `attach ${stray.pid}`, wait: 5 });
      await server.tool('close', { id });
      expect(running([stray.pid, ...stray.pids])).toEqual([stray.pid, ...stray.pids]);
    });

    it('debugger: detach of a launched program ends its children', async () => {
      const pids = await debuggerForker(server, 'detach');
      expect(await debuggerTool(server, 'debugger_detach', { session_id: 'detach' })).toMatchObject({ action: 'killed' });
      expect(running(pids)).toEqual([]);
    });

    it("debugger: the idle timeout ends the program's children", async () => {
      const pids = await debuggerForker(server, 'idle', 2);
      expect(await waitFor(() => running(pids).length === 0, 15_000)).toBe(true);
    });

    it('debugger: an attached process and its children are left running at detach', async () => {
      const stray = await strayForker();
      await debuggerTool(server, 'debugger_attach', { pid: stray.pid, session_id: 'attached' });
      expect(await debuggerTool(server, 'debugger_detach', { session_id: 'attached' })).toMatchObject({ action: 'detached' });
      expect(running([stray.pid, ...stray.pids])).toEqual([stray.pid, ...stray.pids]);
    });

    it("gdb and the debugger: MCP DELETE of the client's session ends the programs' children", async () => {
      const http = await startHttpServer(['--root', root, '--toolsets', 'gdb,debugger', '--api-key', 'lifetime-key-0123456789'], env);
      httpServers.push(http);
      const client: TestClient = await connectHttp(http.url, http.key);
      const p1 = prefix();
      const { id } = await client.ok('open', { program: 'escape', args: ['forker', p1] });
      await client.ok('call', { id, command: 'run', wait: 0.5 });
      const p2 = prefix();
      expect((await client.tool('debugger_launch', { program: 'escape', args: ['forker', p2] })).isError).toBe(false);
      expect((await client.tool('debugger_continue', { wait: 0.5 })).isError).toBe(false);
      const pids = [...(await children(p1)), ...(await children(p2))];
      const transport = client.client.transport as unknown as { terminateSession(): Promise<void> };
      await transport.terminateSession();
      expect(await waitFor(() => running(pids).length === 0, 15_000)).toBe(true);
      await client.close().catch(() => undefined);
    });

    it("gdb and the debugger: server SIGTERM ends the programs' children", async () => {
      const doomed = await stdioServer(env);
      const { pids: viaGdb } = await gdbForker(doomed);
      const viaDebugger = await debuggerForker(doomed, 'default');
      doomed.proc.kill('SIGTERM');
      await doomed.exited();
      const pids = [...viaGdb, ...viaDebugger];
      expect(await waitFor(() => running(pids).length === 0, 10_000)).toBe(true);
    });

    // SIGKILL runs no code in the server: gdb ends its program on EOF, but what the program forked
    // is ended by the next server on the machine, from the dead server's cgroups. Without cgroups
    // nothing names them (SECURITY.md), so the environment mode has no such test (none skipped).
    if (mode === 'cgroup')
      it('gdb: after a server SIGKILL, the next server to start ends what the programs left', async () => {
        const killed = await stdioServer(env);
        const { pids } = await gdbForker(killed);
        killed.proc.kill('SIGKILL');
        await killed.exited();
        const next = await stdioServer(env);
        const { id } = await next.tool('open', {});
        expect(await waitFor(() => running(pids).length === 0, 10_000)).toBe(true);
        await next.tool('close', { id });
      });
  });
}
