import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAlive, processTable, waitFor } from './helpers/procs.js';
import { compileC, tempDir } from './helpers/programs.js';
import { RawStdioServer } from './helpers/raw-stdio.js';

let root: string;
const servers: RawStdioServer[] = [];

beforeAll(() => {
  root = tempDir();
  compileC(root, 'spin');
});
afterAll(() => {
  for (const s of servers) if (s.proc.exitCode === null) s.proc.kill('SIGKILL');
});

/** The pid the spin program printed to its stderr (it may take a moment on a loaded machine). */
async function spinnerPid(server: RawStdioServer, id: string): Promise<number> {
  let text = '';
  await waitFor(
    () => /started pid \d+/.test(text),
    15_000,
    50,
    async () => {
      text = (await server.tool('gdb_program_output', { id, stream: 'stderr' })).text;
    },
  );
  const pid = Number(/started pid (\d+)/.exec(text)?.[1]);
  if (!pid) throw new Error(`spin printed no pid: ${JSON.stringify(text)}`);
  return pid;
}

/** A server with two gdb sessions, each running the spin program; returns every pid involved. */
async function busyServer() {
  const server = new RawStdioServer(['--root', root]);
  servers.push(server);
  await server.initialize();
  const pids: number[] = [];
  for (let i = 0; i < 2; i++) {
    const { id } = await server.tool('open', { program: 'spin' });
    await server.tool('call', { id, command: 'run', wait: 0.5 });
    const debuggee = await spinnerPid(server, id);
    const gdb = processTable().find((p) => p.pid === debuggee)!.ppid;
    pids.push(debuggee, gdb);
  }
  expect(pids.every(isAlive)).toBe(true);
  return { server, pids };
}

describe('no process outlives the server', () => {
  for (const [how, end] of [
    ['SIGTERM', (s: RawStdioServer) => s.proc.kill('SIGTERM')],
    ['SIGINT', (s: RawStdioServer) => s.proc.kill('SIGINT')],
    ['stdin EOF', (s: RawStdioServer) => s.proc.stdin!.end()],
    ['SIGKILL', (s: RawStdioServer) => s.proc.kill('SIGKILL')],
    [
      'two SIGTERMs at once',
      (s: RawStdioServer) => {
        s.proc.kill('SIGTERM');
        s.proc.kill('SIGTERM');
      },
    ],
  ] as const) {
    it(`on ${how}: gdb and the debuggees are gone`, async () => {
      const { server, pids } = await busyServer();
      end(server);
      await server.exited();
      // On SIGKILL nothing in the server runs: gdb sees EOF on its input and takes its program down.
      expect(await waitFor(() => pids.every((pid) => !isAlive(pid)), 10_000)).toBe(true);
    });
  }

  it("on close: that session's gdb and program end, the other session lives on", async () => {
    const server = new RawStdioServer(['--root', root]);
    servers.push(server);
    await server.initialize();
    const a = await server.tool('open', { program: 'spin' });
    const b = await server.tool('open', { program: 'spin' });
    await server.tool('call', { id: a.id, command: 'run', wait: 0.5 });
    await server.tool('call', { id: b.id, command: 'run', wait: 0.5 });
    const pidA = await spinnerPid(server, a.id);
    const pidB = await spinnerPid(server, b.id);
    await server.tool('close', { id: a.id });
    expect(isAlive(pidA)).toBe(false);
    expect(isAlive(pidB)).toBe(true);
    server.proc.stdin!.end();
    await server.exited();
    expect(await waitFor(() => !isAlive(pidB))).toBe(true);
  });
});
