import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../free-port.js';

/** Test helpers: a throwaway redis-server on a free 127.0.0.1 port, with a password. */

export interface RunningRedis {
  port: number;
  password: string;
  stop(): Promise<void>;
}

export const REDIS_SERVER = '/usr/bin/redis-server';

/** Answers once a connection to the port works (bounded). */
async function waitForPort(port: number, child: ChildProcess, timeoutMs: number, log: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with code ${child.exitCode}: ${log()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`redis-server did not listen on ${port} within ${timeoutMs} ms: ${log()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts redis-server (no persistence) in a private temporary directory; tries again on a port race. */
export async function startRedis(password = 'redis-test-secret'): Promise<RunningRedis> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'debugkit-redis-'));
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--requirepass', password, '--daemonize', 'no'];
    const child = spawn(REDIS_SERVER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (d) => (output = (output + String(d)).slice(-4000)));
    child.stderr!.on('data', (d) => (output = (output + String(d)).slice(-4000)));
    const spawnError = new Promise<never>((_, reject) => child.once('error', (err) => reject(new Error(`${REDIS_SERVER} cannot start (apt-get install -y redis-server): ${err.message}`))));
    try {
      await Promise.race([waitForPort(port, child, 10_000, () => output), spawnError]);
      const exited = new Promise<void>((r) => (child.exitCode !== null ? r() : child.once('exit', () => r())));
      return {
        port,
        password,
        async stop() {
          child.kill('SIGTERM');
          const t = setTimeout(() => child.kill('SIGKILL'), 3000);
          await exited;
          clearTimeout(t);
          await rm(dir, { recursive: true, force: true });
        },
      };
    } catch (err) {
      lastError = err;
      child.kill('SIGKILL');
    }
  }
  await rm(dir, { recursive: true, force: true });
  throw lastError;
}
