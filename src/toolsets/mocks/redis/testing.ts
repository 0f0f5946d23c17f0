import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { spawnChild, terminate } from '../../../core/process.js';
import { pollUntil } from '../../../core/wait.js';
import { freePort } from '../free-port.js';

/** Test helpers: a throwaway redis-server on a free 127.0.0.1 port, with a password. */

export interface RunningRedis {
  port: number;
  password: string;
  stop(): Promise<void>;
}

export const REDIS_SERVER = '/usr/bin/redis-server';

/** Whether a connection to the port is accepted. */
function listens(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** Starts redis-server (no persistence) in a private temporary directory; tries again on a port race. */
export async function startRedis(password = 'redis-test-secret'): Promise<RunningRedis> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'debugkit-redis-'));
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--requirepass', password, '--daemonize', 'no'];
    const owned = await spawnChild(REDIS_SERVER, args, { stdio: ['ignore', 'pipe', 'pipe'] }).catch(async (err: Error) => {
      await rm(dir, { recursive: true, force: true });
      throw new Error(`${REDIS_SERVER} cannot start (apt-get install -y redis-server): ${err.message}`, { cause: err });
    });
    let output = '';
    owned.child.stdout!.on('data', (d) => (output = (output + String(d)).slice(-4000)));
    owned.child.stderr!.on('data', (d) => (output = (output + String(d)).slice(-4000)));
    const exited = () => owned.child.exitCode !== null || owned.child.signalCode !== null;
    if ((await pollUntil(async () => exited() || (await listens(port)), { timeoutMs: 10_000, intervalMs: 50 })) && !exited()) {
      return {
        port,
        password,
        async stop() {
          await terminate(owned, { graceMs: 3000 });
          await rm(dir, { recursive: true, force: true });
        },
      };
    }
    lastError = new Error(exited() ? `redis-server exited with code ${owned.child.exitCode}: ${output}` : `redis-server did not listen on ${port} within 10000 ms: ${output}`);
    await terminate(owned, { graceMs: 0 });
  }
  await rm(dir, { recursive: true, force: true });
  throw lastError;
}
