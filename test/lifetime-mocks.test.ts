import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cgroupOf, cgroupsWritable, isRunning, ownCgroupDir, pidFrom, waitFor } from './helpers/procs.js';
import { compileC, tempDir } from './helpers/programs.js';
import { RawStdioServer } from './helpers/raw-stdio.js';

/**
 * Issue 18: no process a recorded or replayed command starts outlives its call, its timeout or
 * the server. Each spelling leaves a process behind (test/programs/escape.c writes its pid to a
 * file) in one of the ways programs do; the command waits until that pid is written, so the process
 * exists before the call can end. Both ways debugkit tracks trees are run: the cgroup (where the
 * machine allows it) and the environment marker (DEBUGKIT_CGROUP=off).
 */

type Spelling = readonly [name: string, snippet: (escape: string, pidFile: string) => string];

const SPELLINGS: Spelling[] = [
  ['a background job (cmd &)', (x, p) => `${x} linger ${p} &`],
  // A process group leader (set -m makes each job one), setsid forks and its parent exits.
  ['setsid (forks, the parent exits)', (x, p) => `set -m; setsid ${x} linger ${p}`],
  ['setsid -f', (x, p) => `setsid -f ${x} linger ${p}`],
  ['nohup ... &', (x, p) => `nohup ${x} linger ${p} >/dev/null 2>&1 &`],
  ['a job in a process group of its own (set -m)', (x, p) => `set -m; ${x} linger ${p} &`],
  ['a double fork with setsid ((setsid cmd &) &)', (x, p) => `(setsid ${x} linger ${p} &) &`],
  ['a daemon that double-forks', (x, p) => `${x} daemon ${p}`],
  ['a fork whose parent exits', (x, p) => `${x} fork ${p}`],
  ['a child that moves to a process group of its own', (x, p) => `${x} pgrp ${p}`],
];
/** Found by its cgroup, or by the resource limit that marks the tree too (prlimit): not by the environment it dropped (SECURITY.md). */
const ENV_CLEARING: Spelling = ['a child that starts a new session with an empty environment', (x, p) => `${x} envclear ${p}`];
/**
 * A child that leaves its call's cgroup for the server's own (its user may write that group) and
 * its process group (attack q2-1: it outlived the call, the session and the server); one that
 * also drops its environment; and one that leaves all but the session. Found by the tree's marks,
 * swept for after the group is killed.
 */
const GROUP_LEAVING: Spelling[] = [
  ["a child that moves itself into the server's cgroup and starts a new session", (x, p) => `${x} leavegroup ${p} ${ownCgroupDir()}`],
  ["a child that moves itself into the server's cgroup, starts a new session and clears its environment", (x, p) => `${x} leaveclear ${p} ${ownCgroupDir()}`],
  // Attack s2-1: all but the session (a process group of its own instead, as gdb gives its program): the session finds it.
  ["a child that moves itself into the server's cgroup and a process group of its own, sets its own RLIMIT_LOCKS and clears its environment", (x, p) => `${x} leaveall ${p} ${ownCgroupDir()}`],
];
const LEFT_GROUP = new Set(GROUP_LEAVING.map(([name]) => name));

const MODES = [
  { mode: 'cgroup', env: {}, available: cgroupsWritable(), spellings: [...SPELLINGS, ENV_CLEARING, ...GROUP_LEAVING] },
  { mode: 'environment marker', env: { DEBUGKIT_CGROUP: 'off' }, available: true, spellings: [...SPELLINGS, ENV_CLEARING] },
] as const;

let root: string;
let escape: string;
let api: Server;
let mockSet: Promise<string> | undefined;
const servers: RawStdioServer[] = [];
let files = 0;

beforeAll(async () => {
  root = tempDir('debugkit-lifetime-mocks-');
  escape = compileC(root, 'escape');
  api = createServer((_req, res) => res.end('pong'));
  await new Promise<void>((r) => api.listen(0, '127.0.0.1', () => r()));
});
afterAll(async () => {
  // SIGTERM: a server ends its children and removes its cgroups on the way out.
  const open = servers.filter((s) => s.proc.exitCode === null && s.proc.signalCode === null);
  for (const s of open) s.proc.kill('SIGTERM');
  await Promise.all(open.map((s) => s.exited().catch(() => s.proc.kill('SIGKILL'))));
  await new Promise((r) => api?.close(r));
});

async function startServer(env: NodeJS.ProcessEnv): Promise<RawStdioServer> {
  const server = new RawStdioServer(['--root', root, '--toolsets', 'mocks', '--data-dir', tempDir('debugkit-lifetime-data-')], env);
  servers.push(server);
  await server.initialize();
  return server;
}

async function callTool(server: RawStdioServer, name: string, args: Record<string, unknown>): Promise<any> {
  const msg = await server.request('tools/call', { name, arguments: args }, 120_000);
  if (!msg.result?.structuredContent) throw new Error(`${name} failed: ${JSON.stringify(msg)}`);
  return msg.result.structuredContent;
}

/** A mock set for keploy_mock_test to replay (one recorded HTTP call). */
function ensureMockSet(server: RawStdioServer): Promise<string> {
  mockSet ??= (async () => {
    const port = (api.address() as AddressInfo).port;
    const rec = await callTool(server, 'keploy_mock_record', { command: `curl -sS http://127.0.0.1:${port}/ping` });
    if (!rec.success || rec.mockCount !== 1) throw new Error(`recording the mock set failed: ${JSON.stringify(rec)}`);
    return /^\.\/keploy\/([^/]+)\/mocks\.yaml$/.exec(rec.mockFilePath)![1]!;
  })();
  return mockSet;
}

/** The bash command for a spelling: leave the process behind, wait until it wrote its pid, then `then`. */
function command(spelling: Spelling, pidFile: string, then = ''): string {
  const wait = `while [ ! -e ${pidFile} ]; do sleep 0.05; done`;
  return `bash -c '${spelling[1](escape, pidFile)}\n${wait}${then ? `\n${then}` : ''}'`;
}

function pidFile(): string {
  return path.join(root, `pid-${++files}`);
}

for (const { mode, env, available, spellings } of MODES) {
  describe.skipIf(!available)(`mocks, ${mode}: nothing a command starts outlives its call`, () => {
    let server: RawStdioServer;
    beforeAll(async () => {
      server = await startServer(env);
    });

    for (const tool of ['keploy_mock_record', 'keploy_mock_test'] as const) {
      const args = async (cmd: string, timeout: number) => (tool === 'keploy_mock_record' ? { command: cmd, timeout } : { command: cmd, timeout, mockName: await ensureMockSet(server) });

      it(`${tool}: every spelling's process is gone when the call returns`, async () => {
        const survivors = await Promise.all(
          spellings.map(async (spelling) => {
            const file = pidFile();
            const result = await callTool(server, tool, await args(command(spelling, file), 60));
            expect(result.appExitCode ?? 0).toBe(0);
            const pid = await pidFrom(file, 1);
            // At once: the call answers only after the command's whole tree has ended.
            return isRunning(pid) ? [spelling[0]] : [];
          }),
        );
        expect(survivors.flat()).toEqual([]);
      });

      it(`${tool}: every spelling's process is gone when the call times out`, async () => {
        const survivors = await Promise.all(
          spellings.map(async (spelling) => {
            const file = pidFile();
            const result = await callTool(server, tool, await args(command(spelling, file, 'sleep 120'), 4));
            expect(result.success).toBe(false);
            expect(result.message).toMatch(/ran longer than 4 s|stopped after 4 s/);
            const pid = await pidFrom(file, 1);
            return isRunning(pid) ? [spelling[0]] : [];
          }),
        );
        expect(survivors.flat()).toEqual([]);
      });
    }

    it("keploy_mock_record and keploy_mock_test: every spelling's process is gone after the server gets SIGTERM", async () => {
      const doomed = await startServer(env);
      const name = await ensureMockSet(server);
      const started = spellings.flatMap((spelling) =>
        (['keploy_mock_record', 'keploy_mock_test'] as const).map((tool) => {
          const file = pidFile();
          const cmd = command(spelling, file, 'sleep 300');
          // The calls never answer: the server ends under them.
          void doomed.request('tools/call', { name: tool, arguments: { command: cmd, timeout: 600, ...(tool === 'keploy_mock_test' ? { mockName: name } : {}) } }, 600_000).catch(() => undefined);
          return { what: `${tool}: ${spelling[0]}`, file, left: LEFT_GROUP.has(spelling[0]) };
        }),
      );
      const pids = await Promise.all(started.map(async (s) => ({ ...s, pid: await pidFrom(s.file, 30_000) })));
      expect(pids.filter((p) => !isRunning(p.pid)).map((p) => p.what)).toEqual([]);
      // The tracking under test is the one in use: each process in the cgroup of its call, or in none of debugkit's.
      const inCallGroup = (pid: number) => /\/debugkit-\d+-\d+-\d+\/\d+$/.test(cgroupOf(pid) ?? '');
      expect(pids.filter((p) => !p.left && inCallGroup(p.pid) !== (mode === 'cgroup')).map((p) => p.what)).toEqual([]);
      expect(pids.filter((p) => p.left && inCallGroup(p.pid)).map((p) => p.what)).toEqual([]);
      doomed.proc.kill('SIGTERM');
      await doomed.exited();
      await waitFor(() => pids.every((p) => !isRunning(p.pid)), 10_000);
      expect(pids.filter((p) => isRunning(p.pid)).map((p) => p.what)).toEqual([]);
    });
  });
}
