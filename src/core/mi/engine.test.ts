import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DebugkitError } from '../errors.js';
import { MiEngine } from './engine.js';

/**
 * A stand-in for gdb: answers each MI command by its token, logs the commands it got, and resumes
 * and stops the way gdb's asynchronous mode does (a step's stop comes in the chunk of its "^running").
 */
const FAKE_GDB = `#!/usr/bin/env node
const fs = require('fs');
const rl = require('readline').createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const [, token, command] = /^(\\d*)(.*)$/.exec(line);
  fs.appendFileSync(process.env.FAKE_GDB_LOG, command + '\\n');
  const out = (s) => process.stdout.write(s + '\\n');
  if (command === '-gdb-set bad') return out(token + '^error,msg="bad setting"');
  if (command === '-exec-next') return out(token + '^running\\n*running,thread-id="all"\\n*stopped,reason="end-stepping-range"');
  if (command === '-exec-continue') return out(token + '^running\\n*running,thread-id="all"');
  if (command === '-exec-interrupt') return out(token + '^done\\n*stopped,reason="signal-received"');
  if (command.startsWith('-slow ')) return setTimeout(() => out(token + '^done,n="' + command.slice(6) + '"'), 30);
  out(token + '^done');
});
`;

const engines: MiEngine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.end(new Error('test over'), 200)));
});

function fakeGdb(): { gdbPath: string; log: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'debugkit-mi-engine-'));
  const gdbPath = path.join(dir, 'gdb');
  writeFileSync(gdbPath, FAKE_GDB);
  chmodSync(gdbPath, 0o755);
  return { gdbPath, log: path.join(dir, 'commands.log') };
}

async function start(setup: string[] = ['-gdb-set a', '-gdb-set b']): Promise<{ engine: MiEngine; log: string }> {
  const { gdbPath, log } = fakeGdb();
  const engine = await MiEngine.start(
    { gdbPath, cwd: tmpdir(), env: { ...process.env, FAKE_GDB_LOG: log }, setup, replyTimeoutMs: 5000 },
    (e) => e,
    (e) => e.end(new Error('abandoned'), 200),
  );
  engines.push(engine);
  return { engine, log };
}

const sent = (log: string) => readFileSync(log, 'utf8').trim().split('\n');

describe('MiEngine', () => {
  it('runs the setup commands in order before handing the engine over', async () => {
    const { engine, log } = await start();
    expect(sent(log)).toEqual(['-gdb-set a', '-gdb-set b']);
    expect(engine.state).toBe('not started');
  });

  it('ends the owner and fails naming the setup command gdb refused', async () => {
    const { gdbPath, log } = fakeGdb();
    let abandoned = false;
    const started = MiEngine.start(
      { gdbPath, cwd: tmpdir(), env: { ...process.env, FAKE_GDB_LOG: log }, setup: ['-gdb-set a', '-gdb-set bad', '-gdb-set never'], replyTimeoutMs: 5000 },
      (e) => e,
      async (e) => {
        abandoned = true;
        await e.end(new Error('abandoned'), 200);
      },
    );
    const err = await started.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DebugkitError);
    expect((err as DebugkitError).code).toBe('ENGINE_FAILED');
    expect((err as Error).message).toBe('gdb refused "-gdb-set bad": bad setting');
    expect(abandoned).toBe(true);
    expect(sent(log)).toEqual(['-gdb-set a', '-gdb-set bad']);
  });

  it('counts a stop that came in the chunk of "^running": no wait, the target is stopped', async () => {
    const { engine } = await start();
    const before = engine.stopCount;
    const reply = await engine.send('-exec-next');
    expect(reply.resultClass).toBe('running');
    const began = Date.now();
    await engine.awaitResumed(before, { waitMs: 10_000 });
    expect(Date.now() - began).toBeLessThan(1000);
    expect(engine.stopCount).toBe(before + 1);
    expect(engine.state).toBe('stopped');
    expect(engine.latestStop?.reason).toBe('end-stepping-range');
  });

  it('waits for a resumed target within the bound, then its stop ends a later wait', async () => {
    const { engine } = await start();
    const before = engine.stopCount;
    await engine.send('-exec-continue');
    await engine.awaitResumed(before, { waitMs: 50 });
    expect(engine.state).toBe('running');
    expect(engine.stopCount).toBe(before);
    const waiting = engine.waitForStop(before, { waitMs: 10_000 });
    await engine.send('-exec-interrupt');
    await waiting;
    expect(engine.state).toBe('stopped');
    expect(engine.latestStop?.reason).toBe('signal-received');
  });

  it('ends every wait for a stop when the engine is closed, and waits no more after', async () => {
    const { engine } = await start();
    await engine.send('-exec-continue');
    await engine.awaitResumed(engine.stopCount, { waitMs: 0 });
    const waiting = engine.waitForStop(engine.stopCount, { waitMs: 60_000 });
    engine.close(new DebugkitError('SESSION_CLOSED', 'closed by the test'));
    await waiting;
    const began = Date.now();
    await engine.waitForStop(engine.stopCount, { waitMs: 60_000 });
    expect(Date.now() - began).toBeLessThan(1000);
    await expect(engine.send('-gdb-set c')).rejects.toThrow(/no longer running/);
  });

  it('runs serial calls one after another, in order', async () => {
    const { engine } = await start();
    const order: string[] = [];
    const call = (n: string) =>
      engine.serial(async () => {
        order.push(`start ${n}`);
        const reply = await engine.send(`-slow ${n}`);
        order.push(`end ${reply.results.n}`);
      });
    await Promise.all([call('1'), call('2'), call('3')]);
    expect(order).toEqual(['start 1', 'end 1', 'start 2', 'end 2', 'start 3', 'end 3']);
  });

  it('stops waiting for a reply when the call is cancelled', async () => {
    const { engine } = await start();
    const abort = new AbortController();
    const reply = engine.send('-slow 1', { signal: abort.signal });
    abort.abort();
    await expect(reply).rejects.toMatchObject({ code: 'CANCELLED' });
  });
});
