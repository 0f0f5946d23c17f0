import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listeningPorts, loopbackListeners } from '../src/core/sockets.js';
import { pollUntil } from '../src/core/wait.js';
import { connectStdio, type TestClient } from './helpers/client.js';
import { plainCall, startKeyedServer, stopKeyedServers, type KeyedServer } from './helpers/attack.js';
import { descendants, isAlive } from './helpers/procs.js';
import { pyFails, pyOk } from './helpers/python.js';

// Issue 24: attaching to a Node.js program debugkit did not start (`node --inspect`), when the
// operator allows attach (--allow-attach; keys need python:attach). The program is this
// repository's own (test/programs/node/attach), started here as a user would start it.
const NODE_ROOT = path.resolve(import.meta.dirname, 'programs/node');

/** `node --inspect=127.0.0.1:0 FILE` with its stdout kept, once its inspector says where it listens. */
async function startInspected(file: string): Promise<{ child: ChildProcess; port: number; stdout: () => string }> {
  const child = spawn(process.execPath, ['--inspect=127.0.0.1:0', file], { cwd: NODE_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const listening = () => /Debugger listening on ws:\/\/127\.0\.0\.1:(\d+)\//.exec(err);
  expect(await pollUntil(() => listening() !== null || child.exitCode !== null, { timeoutMs: 15_000, intervalMs: 20 }), err).toBe(true);
  return { child, port: Number(listening()![1]), stdout: () => out };
}

let dk: TestClient;
let ticker: Awaited<ReturnType<typeof startInspected>>;
let keyed: KeyedServer | undefined;
let closed: KeyedServer | undefined;

beforeAll(async () => {
  ticker = await startInspected('attach/ticker.js');
  dk = await connectStdio({ root: NODE_ROOT });
  [keyed, closed] = await Promise.all([
    startKeyedServer(NODE_ROOT, { python: 'python', attacher: 'python,python:attach' }, ['--allow-attach']),
    startKeyedServer(NODE_ROOT, { attacher: 'python,python:attach' }, []),
  ]);
});
afterAll(async () => {
  await dk?.close();
  await stopKeyedServers([keyed, closed]);
  ticker?.child.kill('SIGKILL');
});

describe('attaching to a running node --inspect', () => {
  it('stops at a breakpoint in the running program, with its locals and console output; ending the session leaves it running', async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'attach/ticker.js', attach: ticker.port });
    const stop = await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: 'attach/ticker.js', line: 5, timeout: 10 });
    expect(stop).toMatchObject({ hit: true, status: 'paused', function: 'reading', frameInfo: { line: 5 } });
    expect(stop.frameInfo.file).toMatch(/attach\/ticker\.js$/);
    const n = Number(stop.locals.n.repr);
    expect(n).toBeGreaterThan(0);
    expect((await pyOk(dk, 'python_evaluate', { sessionId, expression: 'n * 3' })).repr).toBe(String(n * 3));
    // Paused: the program logs nothing more until it goes on.
    const before = ticker.stdout();
    const again = await pyOk(dk, 'python_continue', { sessionId, timeout: 10 });
    expect(again).toMatchObject({ hit: true, frameInfo: { line: 5 } });
    expect(Number(again.locals.n.repr)).toBe(n + 1);
    expect(ticker.stdout().split('\n').length - before.split('\n').length).toBeLessThanOrEqual(1);
    // What it logs through console while attached is its output here too.
    const out = (await dk.tool('python_get_output', { sessionId })).structured.text as string;
    expect(out).toMatch(new RegExp(`^tick ${n}: ${(n * 3) % 7}$`, 'm'));
    await pyOk(dk, 'python_end_session', { sessionId });
    // Detached, not ended: it runs on, and its breakpoint is gone.
    const lines = ticker.stdout().split('\n').length;
    expect(await pollUntil(() => ticker.stdout().split('\n').length > lines + 3, { timeoutMs: 10_000, intervalMs: 20 })).toBe(true);
    expect(isAlive(ticker.child.pid!)).toBe(true);
  });

  it('refuses what cannot be attached to, saying why: another language, launch arguments, no listener, a listener that is no inspector', async () => {
    expect(await pyFails(dk, 'python_start_session', { entry: 'parse.js', attach: ticker.port, args: ['x'] })).toMatch(/args is for programs debugkit starts, not for one it attaches to/);
    const idle = http.createServer((_req, res) => res.writeHead(404).end());
    await new Promise<void>((resolve) => idle.listen(0, '127.0.0.1', resolve));
    const port = (idle.address() as AddressInfo).port;
    try {
      expect(await pyFails(dk, 'python_start_session', { entry: 'parse.js', attach: port })).toMatch(new RegExp(`127\\.0\\.0\\.1:${port} is not a Node\\.js inspector .*HTTP 404`));
    } finally {
      await new Promise((resolve) => idle.close(resolve));
    }
    expect(await pyFails(dk, 'python_start_session', { entry: 'parse.js', attach: port })).toMatch(new RegExp(`nothing listens on 127\\.0\\.0\\.1:${port}`));
  });

  it("a program debugkit runs for a session is never attached to (another key's program would be reached that way)", async () => {
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'orders.js' });
    await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: 'lib/pricing.js', line: 7 });
    const program = descendants(dk.serverPid!).find((p) => p.args.includes('--inspect-brk=127.0.0.1:0'));
    expect(program).toBeDefined();
    const [port] = [...(await listeningPorts([program!.pid]))];
    expect(port).toBeDefined();
    expect(await pyFails(dk, 'python_start_session', { entry: 'orders.js', attach: port })).toMatch(new RegExp(`process ${program!.pid} on port ${port} runs for a debugkit session`));
    await pyOk(dk, 'python_end_session', { sessionId });
  });
});

describe('attach, attacked (m2)', () => {
  it("m2-1: a listener on ::1 at the port of a session's program on 127.0.0.1 does not stand in for it", async () => {
    // A port, a decoy of this user's on ::1 there (started first: the lower pid), then a program a session runs on 127.0.0.1 there.
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const decoy = spawn(process.execPath, ['-e', `require('net').createServer().listen({ host: '::1', port: ${port}, ipv6Only: true }, () => console.log('up'))`], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'attach/spawner.js', args: [String(port)] });
    try {
      await once(decoy.stdout!, 'data');
      expect(await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: 'attach/spawner.js', line: 6 })).toMatchObject({ hit: true });
      // The session's program has started its child under --inspect on 127.0.0.1:port (a process of the session's tree).
      expect(await pollUntil(async () => (await loopbackListeners(port)).pids.length > 0, { timeoutMs: 15_000, intervalMs: 50 })).toBe(true);
      const [victim] = (await loopbackListeners(port)).pids;
      expect(victim).not.toBe(decoy.pid);
      expect(await pyFails(dk, 'python_start_session', { entry: 'attach/ticker.js', attach: port })).toMatch(new RegExp(`process ${victim} on port ${port} runs for a debugkit session`));
    } finally {
      decoy.kill('SIGKILL');
      await pyOk(dk, 'python_end_session', { sessionId });
    }
  });

  it('m2-2: attached again and again to a program whose workers come and go, each run stops and the program runs on', async () => {
    const churn = await startInspected('attach/churn.js');
    try {
      for (let cycle = 0; cycle < 4; cycle++) {
        const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'attach/churn.js', attach: churn.port });
        const stop = await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: 'attach/churn.js', line: 6, timeout: 10 });
        expect(stop, `cycle ${cycle}`).toMatchObject({ hit: true, function: 'tick', frameInfo: { line: 6 } });
        await pyOk(dk, 'python_end_session', { sessionId });
      }
      expect(churn.child.exitCode).toBe(null);
      expect(isAlive(churn.child.pid!)).toBe(true);
    } finally {
      churn.child.kill('SIGKILL');
    }
  });

  it('o2-2: one session at a time is attached to a process: a second is refused until the first ends', async () => {
    const first = await pyOk(dk, 'python_start_session', { entry: 'attach/ticker.js', attach: ticker.port });
    expect(await pyOk(dk, 'python_run_to_breakpoint', { sessionId: first.sessionId, file: 'attach/ticker.js', line: 5, timeout: 10 })).toMatchObject({ hit: true });
    expect(await pyFails(dk, 'python_start_session', { entry: 'attach/ticker.js', attach: ticker.port })).toMatch(/is being debugged by another debugkit session: end that one first/);
    await pyOk(dk, 'python_end_session', { sessionId: first.sessionId });
    const second = await pyOk(dk, 'python_start_session', { entry: 'attach/ticker.js', attach: ticker.port });
    expect(await pyOk(dk, 'python_run_to_breakpoint', { sessionId: second.sessionId, file: 'attach/ticker.js', line: 5, timeout: 10 })).toMatchObject({ hit: true });
    await pyOk(dk, 'python_end_session', { sessionId: second.sessionId });
  });

  it("m2-3: a session's hit counts are its own: a program attached to again counts from 0, and keeps nothing of them", async () => {
    for (let session = 0; session < 2; session++) {
      const { sessionId } = await pyOk(dk, 'python_start_session', { entry: 'attach/ticker.js', attach: ticker.port });
      const stop = await pyOk(dk, 'python_run_to_breakpoint', { sessionId, file: 'attach/ticker.js', line: 5, hitCondition: '3', timeout: 10 });
      expect(stop, `session ${session}`).toMatchObject({ hit: true });
      const symbols = await pyOk(dk, 'python_evaluate', { sessionId, expression: "Object.getOwnPropertySymbols(globalThis).map(String).filter((s) => s.includes('debugkit')).length" });
      expect(symbols.repr).toBe('1');
      await pyOk(dk, 'python_end_session', { sessionId });
    }
  });
});

describe("attach is the operator's and the key's to allow", () => {
  it('a key without python:attach is refused, before anything is reached; one with it attaches', async () => {
    const denied = await plainCall(keyed!, keyed!.keys.python!.key, 'python_start_session', { entry: 'attach/ticker.js', attach: ticker.port });
    expect(denied.error?.code).toBe(-32003);
    expect(denied.error?.message).toContain('python:attach');
    const allowed = await plainCall(keyed!, keyed!.keys.attacher!.key, 'python_start_session', { entry: 'attach/ticker.js', attach: ticker.port });
    expect(allowed.result?.isError, JSON.stringify(allowed)).toBeFalsy();
    const sessionId = allowed.result.structuredContent.sessionId as string;
    const ended = await plainCall(keyed!, keyed!.keys.attacher!.key, 'python_end_session', { sessionId });
    expect(ended.result?.isError, JSON.stringify(ended)).toBeFalsy();
  });

  it('m2-4: REST POST /sessions takes no attach: refused, rather than dropped and a second copy of the program started', async () => {
    const res = await fetch(new URL('/sessions', keyed!.node.url), {
      method: 'POST',
      headers: { Authorization: `Bearer ${keyed!.keys.attacher!.key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ entry: 'attach/ticker.js', attach: ticker.port }),
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/attach is not part of the REST API/);
  });

  it('without --allow-attach, a serving debugkit refuses to attach, whatever the key', async () => {
    const refused = await plainCall(closed!, closed!.keys.attacher!.key, 'python_start_session', { entry: 'attach/ticker.js', attach: ticker.port });
    expect(refused.result?.isError).toBe(true);
    expect(refused.result.content[0].text).toMatch(/attaching is disabled on this server \(the operator did not give --allow-attach\)/);
  });
});
