import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, connectStdio, startHttpServer, type HttpServer, type TestClient } from './helpers/client.js';
import { descendants, isAlive, runsAgain, waitFor } from './helpers/procs.js';
import { compileC, tempDir } from './helpers/programs.js';

let root: string;
let closed: TestClient;
const strays: ChildProcess[] = [];

beforeAll(async () => {
  root = tempDir();
  for (const name of ['basic', 'spin', 'chatty']) compileC(root, name);
  closed = await connectStdio({ root, args: ['--no-allow-gdb-shell', '--no-allow-attach'] });
  // Listed tools make the SDK client validate every result against its output schema.
  await closed.client.listTools();
});
afterAll(async () => {
  await closed?.close();
  for (const p of strays) if (p.pid && isAlive(p.pid)) p.kill('SIGKILL');
});

/** A process the test starts itself, outside debugkit: something to attach to. */
function startStray(): ChildProcess {
  const child = spawn(path.join(root, 'spin'), [], { stdio: 'ignore' });
  strays.push(child);
  return child;
}

/** Alive and not a zombie. */
function isRunning(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

const marker = () => path.join(root, `marker-${Math.random().toString(36).slice(2)}`);

describe('gdb stays in its box (--no-allow-gdb-shell --no-allow-attach over stdio)', () => {
  it('refuses every command family that leaves the debugger, names it and the flag, and runs nothing', async () => {
    const { id } = await closed.ok('open', { program: 'basic' });
    const file = marker();
    const hostile = [
      `shell touch ${file}`,
      `she touch ${file}`,
      `!touch ${file}`,
      `pipe print 1 | touch ${file}`,
      `| print 1 | touch ${file}`,
      `python import os; os.system("touch ${file}")`,
      `pyt import os`,
      `pi`,
      `source ${file}`,
      `cd /`,
      `dump memory /tmp/debugkit-dump-${Date.now()} 0 1`,
      `set logging file /tmp/debugkit-log`,
      `define evil`,
      `commands 1`,
      `eval "shell touch ${file}"`,
      `thread apply all shell touch ${file}`,
      `with print pretty -- shell touch ${file}`,
      `target remote | touch ${file}`,
      `run $(touch ${file})`,
      `file /bin/sh`,
      `-interpreter-exec console "shell touch ${file}"`,
      `-environment-cd /`,
      `-gdb-set exec-wrapper touch ${file}`,
      `-break-commands 1 "shell touch ${file}"`,
      `-target-select remote | touch ${file}`,
    ];
    for (const command of hostile) {
      const err = await closed.fails('call', { id, command });
      expect(err, command).toMatch(/^refused: /);
      expect(err, command).toContain('--allow-gdb-shell');
    }
    expect(existsSync(file)).toBe(false);
    // The session is unharmed and files inside the root are fine.
    await closed.ok('call', { id, command: 'break add' });
    const run = await closed.ok('call', { id, command: 'run' });
    expect(run.stopped.reason).toBe('breakpoint-hit');
    // Its own program's /proc is fine; the host's process table is not.
    expect((await closed.ok('call', { id, command: 'info proc' })).output).toMatch(/^process \d+\n/);
    expect(await closed.fails('call', { id, command: 'info os processes' })).toMatch(/^refused: "info os processes": it reads the host's process, file and socket tables.*--allow-gdb-shell/s);
    await closed.ok('call', { id, command: 'dump value inside.bin a' });
    expect(existsSync(path.join(root, 'inside.bin'))).toBe(true);
    await closed.ok('close', { id });
  });

  it('refuses attach to a process the session did not start, naming --allow-attach, and leaves it alone', async () => {
    const stray = startStray();
    const { id } = await closed.ok('open', {});
    // Attaching, and reading its /proc through gdb (command line, environment, maps).
    for (const command of [`attach ${stray.pid}`, `att ${stray.pid}`, `-target-attach ${stray.pid}`, `info proc cmdline ${stray.pid}`, `i proc mappings ${stray.pid}`]) {
      const err = await closed.fails('call', { id, command });
      expect(err).toMatch(/^refused: .*did not start/);
      expect(err).toContain('--allow-attach');
    }
    expect(isAlive(stray.pid!)).toBe(true);
    await closed.ok('close', { id });
  });

  it('refuses quit, saying to use close', async () => {
    const { id } = await closed.ok('open', {});
    for (const command of ['quit', 'q', 'exit', '-gdb-exit']) {
      expect(await closed.fails('call', { id, command })).toMatch(/use the close tool/);
    }
    expect((await closed.ok('call', { id, command: 'print 1' })).output).toBe('$1 = 1\n');
    await closed.ok('close', { id });
  });
});

describe('gdb over HTTP is closed by default', () => {
  let server: HttpServer;
  let open: HttpServer;
  beforeAll(async () => {
    server = await startHttpServer(['--root', root]);
    open = await startHttpServer(['--root', root, '--allow-gdb-shell']);
  });
  afterAll(async () => {
    await server?.stop();
    await open?.stop();
  });

  it('refuses shell by default and allows it with --allow-gdb-shell', async () => {
    const file = marker();
    const dk = await connectHttp(server.url, server.key);
    const { id } = await dk.ok('open', {});
    expect(await dk.fails('call', { id, command: `shell touch ${file}` })).toContain('--allow-gdb-shell');
    expect(await dk.fails('call', { id, command: `attach 1` })).toContain('--allow-attach');
    expect(existsSync(file)).toBe(false);
    await dk.close();

    const allowed = await connectHttp(open.url, open.key);
    const s = await allowed.ok('open', {});
    await allowed.ok('call', { id: s.id, command: `shell touch ${file}` });
    expect(existsSync(file)).toBe(true);
    await allowed.close();
  });

  it('says in --help which defaults apply where', async () => {
    const { execFileSync } = await import('node:child_process');
    const { CLI } = await import('./helpers/client.js');
    // Read as one line: where --help wraps its descriptions depends on its longest flag.
    const help = execFileSync(process.execPath, [CLI, '--help'], { encoding: 'utf8' }).replace(/\s+/g, ' ');
    expect(help).toMatch(/--allow-gdb-shell .*?default: on for stdio, off for serve/);
    expect(help).toMatch(/--allow-attach .*?default: on for stdio, off for serve/);
  });
});

describe('attach, detach and close leave processes as they should', () => {
  let dk: TestClient;
  beforeAll(async () => {
    dk = await connectStdio({ root, args: ['--allow-attach'] });
    await dk.client.listTools();
  });
  afterAll(async () => {
    await dk?.close();
  });

  it('attach answers with the stop it causes; detach and close leave the attached process running, and say so', async () => {
    const stray = startStray();
    const { id } = await dk.ok('open', {});
    const attached = await dk.ok('call', { id, command: `attach ${stray.pid}` });
    expect(attached.state).toBe('stopped');
    expect(attached.stopped).toBeDefined();
    const detached = await dk.ok('call', { id, command: 'detach' });
    expect(detached.output).toMatch(new RegExp(`process ${stray.pid} was attached.*left running`));
    expect(isAlive(stray.pid!)).toBe(true);
    // Attached again, a breakpoint in, left running, then the session closed: detached, not killed.
    await dk.ok('call', { id, command: `attach ${stray.pid}` });
    await dk.ok('call', { id, command: 'break main' });
    expect((await dk.ok('call', { id, command: 'continue', wait: 0.3 })).state).toBe('running');
    await dk.ok('close', { id });
    expect(isAlive(stray.pid!)).toBe(true);
    // It runs on, not stopped: its state in /proc is R (running), not t (traced) or T (stopped).
    expect(await waitFor(() => /^\d+ \(spin\) R/.test(readFileSync(`/proc/${stray.pid}/stat`, 'utf8')), 5000)).toBe(true);
  });

  it('detach of a program the session started ends it, and says so', async () => {
    const { id } = await dk.ok('open', { program: 'spin' });
    await dk.ok('call', { id, command: 'run', wait: 0.5 });
    let pid = 0;
    await waitFor(
      () => pid > 0,
      15_000,
      100,
      async () => {
        const text = (await dk.ok('gdb_program_output', { id, stream: 'stderr' })).text as string;
        pid = Number(/started pid (\d+)/.exec(text)?.[1] ?? 0);
      },
    );
    await dk.ok('call', { id, command: '-exec-interrupt' });
    const detached = await dk.ok('call', { id, command: 'detach' });
    expect(detached.output).toMatch(new RegExp(`process ${pid} was started by this session.*ended`));
    // Killed at once; it stays a zombie until gdb, its parent, reaps it or ends.
    expect(await waitFor(() => !isRunning(pid), 5000)).toBe(true);
    await dk.ok('close', { id });
    expect(await waitFor(() => !isAlive(pid), 5000)).toBe(true);
  });
});

describe('an engine that dies is an error on the call in flight', () => {
  it('gdb killed during run: the call answers an error naming the signal and that the session ended', async () => {
    const dk = await connectStdio({ root });
    try {
      const { id } = await dk.ok('open', { program: 'spin' });
      const inFlight = dk.tool('call', { id, command: 'run', wait: 60 });
      let gdbPid = 0;
      let spinPid = 0;
      await waitFor(
        () => gdbPid > 0,
        15_000,
        100,
        async () => {
          const tree = descendants(dk.serverPid!);
          const spin = tree.find((p) => p.args.endsWith('/spin'));
          gdbPid = spin ? spin.ppid : 0;
          spinPid = spin ? spin.pid : 0;
        },
      );
      process.kill(gdbPid, 'SIGKILL');
      const r = await inFlight;
      expect(r.isError).toBe(true);
      expect(r.text).toMatch(/gdb exited unexpectedly \(signal SIGKILL\); this session is closed/);
      expect(r.text).not.toMatch(/"state":"running"/);
      // The program gdb started does not run on without an owner (a tracee outlives its tracer).
      expect(await waitFor(() => !isRunning(spinPid), 5000)).toBe(true);
    } finally {
      await dk.close();
    }
  });

  it('gdb killed during continue: the same, and the next call says so too', async () => {
    const dk = await connectStdio({ root });
    try {
      const { id } = await dk.ok('open', { program: 'spin' });
      await dk.ok('call', { id, command: 'break main' });
      expect((await dk.ok('call', { id, command: 'run' })).state).toBe('stopped');
      const gdbPid = descendants(dk.serverPid!).find((p) => p.args.startsWith('gdb --interpreter=mi3'))!.pid;
      const spinPid = descendants(gdbPid).find((p) => p.args.includes('spin'))!.pid;
      const inFlight = dk.tool('call', { id, command: 'continue', wait: 60 });
      // gdb is killed with the continue in flight: once the program runs again.
      expect(await runsAgain(spinPid)).toBe(true);
      process.kill(gdbPid, 'SIGTERM');
      const r = await inFlight;
      expect(r.isError).toBe(true);
      expect(r.text).toMatch(/gdb exited unexpectedly \((signal SIGTERM|exit code \d+)\); this session is closed/);
      expect(await dk.fails('call', { id, command: 'bt' })).toMatch(/gdb exited unexpectedly|Session not found/);
    } finally {
      await dk.close();
    }
  });
});

describe('gdb answers that are true and small', () => {
  let dk: TestClient;
  beforeAll(async () => {
    dk = await connectStdio({ root });
    await dk.client.listTools();
  });
  afterAll(async () => {
    await dk?.close();
  });

  it('returns what gdb printed before an error with the error', async () => {
    const { id } = await dk.ok('open', { program: 'basic' });
    await dk.ok('call', { id, command: 'break main' });
    await dk.ok('call', { id, command: 'run' });
    const err = await dk.fails('call', { id, command: 'x/2x 0' });
    expect(err).toBe('0x0:\nCannot access memory at address 0x0');
    await dk.ok('close', { id });
  });

  it('cuts a huge listing with a flag and a hint naming the narrower command', async () => {
    const { id } = await dk.ok('open', { program: 'basic' });
    await dk.ok('call', { id, command: 'break main' });
    await dk.ok('call', { id, command: 'run' });
    // With the C library's symbols loaded, a bare "info functions" lists thousands of names.
    const listing = await dk.ok('call', { id, command: 'info functions' });
    expect(listing.truncated).toBe(true);
    expect(listing.output.length).toBeLessThan(45_000);
    expect(listing.output).toContain('"info functions REGEX"');
    await dk.ok('close', { id });
  });

  it("keeps the end of a program's output when it must cut, and the reader finds the end", async () => {
    const { id } = await dk.ok('open', { program: 'chatty' });
    const run = await dk.ok('call', { id, command: 'run' });
    expect(run.state).toBe('exited');
    expect(run.program_output.truncated).toBe(true);
    expect(run.program_output.stdout).toMatch(/line 4999 of noise\n$/);
    expect(run.program_output.stderr).toBe('THE END: exit 3\n');
    expect(run.program_output.hint).toMatch(/gdb_program_output/);

    const tail = await dk.ok('gdb_program_output', { id, stream: 'stdout', tail: 30 });
    expect(tail.text).toMatch(/line 4999 of noise\n$/);
    expect(tail.more).toBe(false);
    expect(tail.cursor).toBe(tail.end);
    const past = await dk.ok('gdb_program_output', { id, stream: 'stdout', cursor: tail.end + 1000 });
    expect(past).toMatchObject({ text: '', cursor: tail.end, end: tail.end, more: false });
    const first = await dk.ok('gdb_program_output', { id, stream: 'stdout', cursor: 0, max_chars: 100 });
    expect(first.text).toMatch(/^line 0 of noise\n/);
    expect(first.more).toBe(true);
    const negative = await dk.ok('gdb_program_output', { id, stream: 'stderr', cursor: -8 });
    expect(negative.text).toBe('THE END: exit 3\n'.slice(-8));
    await dk.ok('close', { id });
  });
});

describe('one client cannot starve another', () => {
  it('caps sessions per client and over all clients, naming the cap that was hit', async () => {
    const server = await startHttpServer(['--root', root, '--max-sessions', '1', '--max-sessions-total', '2']);
    const clients: TestClient[] = [];
    try {
      for (let i = 0; i < 3; i++) clients.push(await connectHttp(server.url, server.key));
      const [a, b, c] = clients as [TestClient, TestClient, TestClient];
      await a.ok('open', {});
      expect(await a.fails('open', {})).toMatch(/for this client: it has 1 open, the per-client limit \(--max-sessions\)/);
      await b.ok('open', {});
      expect(await c.fails('open', {})).toMatch(/on this server: 2 are open over all clients, the server-wide limit \(--max-sessions-total\)/);
    } finally {
      for (const client of clients) await client.close();
      await server.stop();
    }
  });
});
