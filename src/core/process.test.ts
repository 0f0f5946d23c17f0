import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { endMarkedProcesses, ownCgroupDir, OWNER_VAR, processTracking, spawnChild, terminate } from './process.js';
import { runBounded } from './run.js';
import { pollUntil } from './wait.js';

/** Runs code still: exists, not a zombie, memory not yet released. */
function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (/^[ZXx]/.test(stat.slice(stat.lastIndexOf(')') + 2))) return false;
    return readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[0] !== '0';
  } catch {
    return false;
  }
}

/** The first `n` lines a child prints. */
function lines(stream: NodeJS.ReadableStream, n: number): Promise<string[]> {
  return new Promise((resolve) => {
    let text = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      text += chunk;
      const got = text.split('\n').filter(Boolean);
      if (got.length >= n) resolve(got.slice(0, n));
    });
  });
}

describe('spawnChild: every process a child starts belongs to it', () => {
  it('tracks trees with a cgroup or the environment marker, and says which', async () => {
    const tracking = await processTracking();
    if (tracking.kind === 'cgroup') expect(tracking.dir).toMatch(/\/debugkit-\d+-\d+-\d+$/);
    else expect(tracking.reason).toBeTruthy();
  });

  it('gives each child a token of its own in DEBUGKIT_OWNER, replacing an inherited one', async () => {
    const run = (env?: NodeJS.ProcessEnv) => runBounded({ command: 'sh', args: ['-c', `echo "$${OWNER_VAR}"`], env, timeoutMs: 10_000 });
    const [a, b, c] = await Promise.all([run(), run(), run({ ...process.env, [OWNER_VAR]: 'inherited' })]);
    for (const r of [a, b, c]) expect(r.stdout.trim()).toMatch(/^[0-9a-f]{32}$/);
    expect(new Set([a.stdout, b.stdout, c.stdout]).size).toBe(3);
  });

  it('a background job, a setsid daemon and a process group of its own end with the child', async () => {
    const script = ['sleep 1000 & echo $!', "setsid -f sh -c 'echo $$; exec sleep 1001'", 'set -m', "sh -c 'echo $$; exec sleep 1002' &", 'read -r _ || true'].join('\n');
    const child = await spawnChild('bash', ['-c', script], { stdio: ['pipe', 'pipe', 'ignore'] });
    const pids = (await lines(child.child.stdout!, 3)).map(Number);
    expect(pids.filter(isRunning)).toEqual(pids);
    child.child.stdin!.end();
    expect(await child.ended).toEqual({ code: 0, signal: null });
    expect(pids.filter(isRunning)).toEqual([]);
  });

  // Attack q2-1: a program wrote its own pid into the server's cgroup and called setsid; killing
  // the tree's group and process group missed it, and its `sleep` outlived the call, the session
  // and the server. It still carries the tree's marks: the token, and the limit where prlimit works.
  it('a process that leaves its cgroup and its process group, and one that clears its environment too, end with the child', async () => {
    const tracking = await processTracking();
    const own = ownCgroupDir();
    const leave = tracking.kind === 'cgroup' ? `echo \\$\\$ > '${own}/cgroup.procs' || exit 3; ` : '';
    const script = [
      `setsid -f sh -c "${leave}echo kept \\$\\$; exec sleep 1003"`,
      `setsid -f sh -c "${leave}exec env -u ${OWNER_VAR} sh -c 'echo cleared \\$\\$; exec sleep 1004'"`,
      'read -r _ || true',
    ].join('\n');
    const child = await spawnChild('bash', ['-c', script], { stdio: ['pipe', 'pipe', 'ignore'] });
    const printed = await lines(child.child.stdout!, 2);
    const pids = printed.map((l) => Number(l.split(' ')[1]));
    expect(pids.filter(isRunning)).toEqual(pids);
    const cleared = pids[printed.findIndex((l) => l.startsWith('cleared '))]!;
    expect(readFileSync(`/proc/${cleared}/environ`, 'latin1')).not.toContain(`${OWNER_VAR}=`);
    // They did leave: in the group of the process that started the child, no longer in the child's.
    if (tracking.kind === 'cgroup') for (const pid of pids) expect(readFileSync(`/proc/${pid}/cgroup`, 'utf8')).not.toMatch(/debugkit-/);
    child.child.stdin!.end();
    expect(await child.ended).toEqual({ code: 0, signal: null });
    expect(pids.filter(isRunning)).toEqual([]);
  });

  // Attack s2-1: gdb gives its program a process group of its own, so a program that left its
  // cgroup, cleared its environment and set its own RLIMIT_LOCKS, without setsid, outlived the
  // session and the server. It is still in the child's session.
  it('a process that leaves its cgroup, its process group, its environment and its limit, but not the session, ends with the child', async () => {
    const tracking = await processTracking();
    const own = ownCgroupDir();
    const leave = tracking.kind === 'cgroup' ? `open(${JSON.stringify(`${own}/cgroup.procs`)}, "w").write(str(os.getpid()))` : 'None';
    const python = [
      'import os, subprocess',
      leave,
      'subprocess.run(["prlimit", "--pid", str(os.getpid()), "--locks=7:"], check=True)',
      'os.setpgid(0, 0)',
      'os.execve("/bin/sh", ["sh", "-c", "echo left $$; exec sleep 1005"], {})',
    ].join('; ');
    const child = await spawnChild('bash', ['-c', `python3 -c '${python}' & read -r _ || true`], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    try {
      // Printed by the shell it became (empty environment), which then becomes sleep.
      expect(await pollUntil(() => /^left \d+\n/m.test(out), { timeoutMs: 30_000, intervalMs: 5 }), `stdout ${out}, stderr ${err}`).toBe(true);
      const pid = Number(/^left (\d+)\n/m.exec(out)![1]);
      const asleep = () => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'latin1').startsWith('sleep');
        } catch {
          return false;
        }
      };
      expect(await pollUntil(asleep, { timeoutMs: 30_000, intervalMs: 5 })).toBe(true);
      // It did leave all four: no token, another limit, a process group of its own, and (cgroup mode) the child's group.
      expect(readFileSync(`/proc/${pid}/environ`, 'latin1')).not.toContain(`${OWNER_VAR}=`);
      expect(readFileSync(`/proc/${pid}/limits`, 'latin1')).toMatch(/^Max file locks +7 /m);
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1]!.split(' ');
      expect(Number(stat[2])).toBe(pid);
      expect(Number(stat[3])).toBe(child.child.pid);
      if (tracking.kind === 'cgroup') expect(readFileSync(`/proc/${pid}/cgroup`, 'utf8')).not.toMatch(/debugkit-/);
      child.child.stdin!.end();
      expect(await child.ended).toEqual({ code: 0, signal: null });
      expect(isRunning(pid)).toBe(false);
    } finally {
      await terminate(child, { graceMs: 100 });
    }
  });

  it('endMarkedProcesses ends the processes carrying the mark, and only them', async () => {
    const script = [
      "DEBUGKIT_INFERIOR=7 setsid -f sh -c 'echo marked $$; exec sleep 1000'",
      "DEBUGKIT_INFERIOR=77 sh -c 'echo other $$; exec sleep 1001' &",
      'sleep 1002 & echo other $!',
      'wait',
    ].join('\n');
    const child = await spawnChild('bash', ['-c', script], { stdio: ['ignore', 'pipe', 'ignore'] });
    const printed = await lines(child.child.stdout!, 3);
    const marked = Number(printed.find((l) => l.startsWith('marked '))!.split(' ')[1]);
    const others = printed.filter((l) => l.startsWith('other ')).map((l) => Number(l.split(' ')[1]));
    await endMarkedProcesses(child, 'DEBUGKIT_INFERIOR', '7');
    expect(isRunning(marked)).toBe(false);
    expect(others.filter(isRunning)).toEqual(others);
    await terminate(child, { graceMs: 100 });
    expect(others.filter(isRunning)).toEqual([]);
  });

  it('a missing program is still ENGINE_MISSING, found on the PATH of its own environment or relative to its cwd', async () => {
    await expect(spawnChild('debugkit-no-such-program', [])).rejects.toMatchObject({
      code: 'ENGINE_MISSING',
      message: 'cannot start debugkit-no-such-program: spawn debugkit-no-such-program ENOENT (is debugkit-no-such-program installed and on PATH?)',
    });
    await expect(runBounded({ command: 'sh', args: ['-c', 'true'], env: { PATH: '/nonexistent' }, timeoutMs: 10_000 })).rejects.toMatchObject({ code: 'ENGINE_MISSING' });
    const dir = mkdtempSync(path.join(tmpdir(), 'debugkit-process-'));
    writeFileSync(path.join(dir, 'tool'), '#!/bin/sh\necho "$0 $*"\n');
    chmodSync(path.join(dir, 'tool'), 0o755);
    expect((await runBounded({ command: './tool', args: ['a b'], cwd: dir, timeoutMs: 10_000 })).stdout).toMatch(/tool a b\n$/);
    expect((await runBounded({ command: 'tool', args: [], env: { PATH: dir }, timeoutMs: 10_000 })).code).toBe(0);
  });
});
