import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { procStat } from './process.js';

/**
 * Attack g1-5: in the environment mode, a server that is not root cannot read /proc/PID/environ of
 * a process that is not dumpable, so the marker in its environment was never seen and the process
 * outlived its tree. The server runs here as an ordinary user (as root, the test runs it as
 * `nobody` through setpriv), with DEBUGKIT_CGROUP=off, in a process of its own (a driver run by
 * tsx) that starts one command through spawnChild and waits for its tree to end.
 */

/**
 * Forks; the child calls setsid and forks again; the grandchild makes itself non-dumpable, prints
 * its pid and sleeps (at most 60 s). The parent exits once the middle process has.
 */
const NODUMP_C = `#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void) {
  pid_t middle = fork();
  if (middle == 0) {
    setsid();
    if (fork() == 0) {
      prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
      printf("%d\\n", (int)getpid());
      fflush(stdout);
      for (int i = 0; i < 600; i++) usleep(100000);
    }
    _exit(0);
  }
  waitpid(middle, NULL, 0);
  return 0;
}
`;

/** Run by tsx as the server's user: spawnChild(argv[3], argv[4..]) with stdout to argv[2]; prints the mode and the exit. */
const DRIVER = `import { openSync } from 'node:fs';
import { processTracking, spawnChild } from ${JSON.stringify(path.join(path.dirname(fileURLToPath(import.meta.url)), 'process.ts'))};
const [out, command, ...args] = process.argv.slice(2);
const owned = await spawnChild(command, args, { stdio: ['ignore', openSync(out, 'w'), 'ignore'] });
const exit = await owned.ended;
console.log(JSON.stringify({ tracking: (await processTracking()).kind, exit }));
`;

const tsx = path.resolve('node_modules/.bin/tsx');
let dir: string;
let nodump: string;
/** Processes the commands left, killed at the end whatever the outcome. */
const left = new Set<number>();
/** ssh-agent's socket directories, removed at the end. */
const sockets = new Set<string>();

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'debugkit-nodump-'));
  chmodSync(dir, 0o777);
  writeFileSync(path.join(dir, 'nodump.c'), NODUMP_C);
  nodump = path.join(dir, 'nodump');
  execFileSync('gcc', ['-O2', '-o', nodump, path.join(dir, 'nodump.c')]);
  writeFileSync(path.join(dir, 'driver.mts'), DRIVER, { mode: 0o644 });
});

afterAll(() => {
  for (const pid of left) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  for (const socket of sockets) rmSync(socket, { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
});

/** The prefix that runs a command as the server's user: `nobody` when the test runs as root. */
function asServerUser(): string[] {
  return process.getuid?.() === 0 ? ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups', '--'] : [];
}

/** Runs the driver as an ordinary user; resolves its report once it exited (the command's tree ended, as it says). */
function runServer(out: string, command: string, args: string[]): Promise<{ tracking: string; exit: unknown }> {
  const [file, ...argv] = [...asServerUser(), tsx, path.join(dir, 'driver.mts'), out, command, ...args];
  return new Promise((resolve, reject) => {
    const driver = spawn(file!, argv, { cwd: dir, env: { ...process.env, DEBUGKIT_CGROUP: 'off' }, stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    driver.stdout.setEncoding('utf8');
    driver.stdout.on('data', (chunk: string) => (text += chunk));
    driver.once('error', reject);
    driver.once('close', (code) => (code === 0 ? resolve(JSON.parse(text) as { tracking: string; exit: unknown }) : reject(new Error(`driver exited with ${code}: ${text}`))));
  });
}

/** Whether `pid` is a live process (a zombie is not: it is dead, awaiting its reaper). */
function alive(pid: number): boolean {
  const state = procStat(pid)?.[0];
  return state !== undefined && state !== 'Z' && state !== 'X';
}

describe('environment tracking as an ordinary user: a non-dumpable process of the tree is ended too (attack g1-5)', () => {
  it('a double-forked, setsid, prctl(PR_SET_DUMPABLE, 0) daemon', async () => {
    const out = path.join(dir, 'nodump.out');
    const report = await runServer(out, nodump, []);
    expect(report).toEqual({ tracking: 'environment', exit: { code: 0, signal: null } });
    const pid = Number(readFileSync(out, 'utf8').trim());
    expect(pid).toBeGreaterThan(0);
    left.add(pid);
    // Before the fix the daemon was still sleeping here, its environment unreadable to the server.
    expect(alive(pid)).toBe(false);
  });

  it.runIf(existsSync('/usr/bin/ssh-agent'))('ssh-agent -s (setgid: not dumpable; its child calls setsid, the parent prints and exits)', async () => {
    const out = path.join(dir, 'agent.out');
    const report = await runServer(out, '/usr/bin/ssh-agent', ['-s']);
    expect(report).toEqual({ tracking: 'environment', exit: { code: 0, signal: null } });
    const said = readFileSync(out, 'utf8');
    const pid = Number(/SSH_AGENT_PID=(\d+)/.exec(said)?.[1]);
    const socket = /SSH_AUTH_SOCK=([^;]+);/.exec(said)?.[1];
    if (socket) sockets.add(path.dirname(socket));
    expect(pid).toBeGreaterThan(0);
    left.add(pid);
    expect(alive(pid)).toBe(false);
  });

  it("the spelling holds, and a stranger's non-dumpable process of the same user is left alone", async () => {
    // The cases above test the unreadable environment, not a readable marker: the same daemon,
    // started outside any tree as the server's user, whose environment that user cannot read.
    // The server's sweep reads its limits too, and must leave it running.
    const [file, ...argv] = [...asServerUser(), nodump];
    const stranger = spawn(file!, argv, { stdio: ['ignore', 'pipe', 'ignore'] });
    stranger.stdout.setEncoding('utf8');
    const other = await new Promise<number>((resolve) => stranger.stdout.once('data', (line: string) => resolve(Number(line.trim()))));
    left.add(other);
    try {
      const [sh, ...shArgs] = [...asServerUser(), 'sh', '-c', `cat /proc/${other}/environ >/dev/null 2>&1 && echo readable || echo hidden`];
      expect(execFileSync(sh!, shArgs, { encoding: 'utf8' }).trim()).toBe('hidden');
      const out = path.join(dir, 'beside.out');
      expect(await runServer(out, nodump, [])).toEqual({ tracking: 'environment', exit: { code: 0, signal: null } });
      const pid = Number(readFileSync(out, 'utf8').trim());
      left.add(pid);
      expect(alive(pid)).toBe(false);
      expect(alive(other)).toBe(true);
    } finally {
      process.kill(other, 'SIGKILL');
      stranger.stdout.destroy();
    }
  });
});
