import { accessSync, constants, existsSync, readdirSync } from 'node:fs';
import { chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { PostgresMock } from '../keploy/types.js';
import type { ReplayIndex } from './matcher.js';
import { recordPostgres, type PostgresConnection } from './recorder.js';
import { replayPostgres } from './replayer.js';
import type { ReplayMatch, ReplayMiss } from './session.js';
import { freePort } from '../free-port.js';
import { spawnChild, terminate } from '../../../core/process.js';
import { runBounded } from '../../../core/run.js';
import { runChecked } from '../../../core/testkit.js';
import { pollUntil } from '../../../core/wait.js';

/** Test helpers: a throwaway PostgreSQL server, recording and replaying listeners, psycopg2. */

export const PYTHON = '/usr/bin/python3';

/** The newest /usr/lib/postgresql/<version>/bin with the server programs (or $PG_BIN). */
export function findPostgresBin(): string {
  const candidates = process.env.PG_BIN ? [process.env.PG_BIN] : [];
  if (existsSync('/usr/lib/postgresql')) {
    const versions = readdirSync('/usr/lib/postgresql').filter((v) => /^\d+$/.test(v));
    candidates.push(...versions.sort((a, b) => Number(b) - Number(a)).map((v) => `/usr/lib/postgresql/${v}/bin`));
  }
  for (const dir of candidates) {
    try {
      for (const tool of ['initdb', 'postgres', 'pg_isready']) accessSync(path.join(dir, tool), constants.X_OK);
      return dir;
    } catch {
      /* next */
    }
  }
  throw new Error('PostgreSQL server binaries (initdb, postgres, pg_isready) were not found in /usr/lib/postgresql/*/bin; install them with: apt-get install -y postgresql');
}

export interface RunningPostgres {
  port: number;
  user: string;
  password: string;
  stop(): Promise<void>;
}

/**
 * Starts a PostgreSQL server in a temporary directory on a free 127.0.0.1 port: TCP clients
 * authenticate with SCRAM-SHA-256 as `postgres` / `password`, the Unix socket (in the directory)
 * trusts. initdb refuses to run as root, so as root the server runs as the `postgres` user
 * (which the postgresql package creates) through `runuser`, the directory chowned to it.
 * `stop()` ends the server (and every process it started) and removes the directory.
 */
export async function startPostgres(): Promise<RunningPostgres> {
  const bin = findPostgresBin();
  const root = await mkdtemp(path.join(os.tmpdir(), 'debugkit-pg-'));
  const data = path.join(root, 'data');
  const password = 'debugkit-test-password';
  const prefix = await runAsPostgres(root);
  const pg = (tool: string, args: string[], timeoutMs?: number) => {
    const [command, ...rest] = [...prefix, path.join(bin, tool), ...args];
    return runChecked(command!, rest, { cwd: root, timeoutMs });
  };
  try {
    const pwfile = path.join(root, 'pwfile');
    await writeFile(pwfile, `${password}\n`, { mode: 0o600 });
    if (prefix.length) await chownToPostgres(pwfile);
    await pg('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--auth-host=scram-sha-256', `--pwfile=${pwfile}`, '-E', 'UTF8', '--locale=C', '--no-sync']);
    const port = await freePort();
    // The server runs in the foreground, a child of the one spawner: it ends with stop() or with
    // the test process, never left behind as pg_ctl's daemon would be.
    const settings = ['-c', 'listen_addresses=127.0.0.1', '-p', String(port), '-k', root, '-c', 'fsync=off', '-c', 'full_page_writes=off', '-c', 'synchronous_commit=off'];
    const [command, ...rest] = [...prefix, path.join(bin, 'postgres'), '-D', data, ...settings];
    const owned = await spawnChild(command!, rest, { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    owned.child.stderr!.on('data', (d) => (log = (log + String(d)).slice(-8000)));
    const exited = () => owned.child.exitCode !== null || owned.child.signalCode !== null;
    const ready = async () => (await runBounded({ command: path.join(bin, 'pg_isready'), args: ['-h', '127.0.0.1', '-p', String(port), '-t', '2'], timeoutMs: 5000 })).code === 0;
    if (!(await pollUntil(async () => exited() || (await ready()), { timeoutMs: 60_000, intervalMs: 50 })) || exited()) {
      await terminate(owned, { graceMs: 0 });
      throw new Error(`PostgreSQL did not start within 60 s${exited() ? ` (it exited with code ${owned.child.exitCode})` : ''}:\n${log}`);
    }
    return {
      port,
      user: 'postgres',
      password,
      stop: async () => {
        await terminate(owned, { graceMs: 2000 });
        await rm(root, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(root, { recursive: true, force: true });
    throw err;
  }
}

/** `[]` when not root; as root `runuser -u postgres --`, with `dir` handed to that user. */
async function runAsPostgres(dir: string): Promise<string[]> {
  if (process.getuid?.() !== 0) return [];
  await chownToPostgres(dir);
  return ['runuser', '-u', 'postgres', '--'];
}

async function chownToPostgres(file: string): Promise<void> {
  let ids: [number, number];
  try {
    ids = [Number((await runChecked('id', ['-u', 'postgres'])).stdout.trim()), Number((await runChecked('id', ['-g', 'postgres'])).stdout.trim())];
  } catch {
    throw new Error(
      "initdb refuses to run as root and there is no 'postgres' user to run it as; install the server with: apt-get install -y postgresql (it creates the user), or run the tests as a non-root user",
    );
  }
  await chown(file, ids[0], ids[1]);
}

export interface Listener {
  port: number;
  /** Waits for every connection's handler to finish, then stops listening. */
  close(): Promise<void>;
}

/** A local listener that hands each connection, paused, to `handle` (as the capture proxy would). */
export async function listen(handle: (conn: PostgresConnection) => Promise<unknown>): Promise<Listener> {
  const running: Array<Promise<unknown>> = [];
  let next = 1;
  const server = net.createServer({ pauseOnConnect: true, allowHalfOpen: true }, (socket) => {
    running.push(handle({ id: `conn-${next++}`, target: { host: '127.0.0.1', port: 0 }, client: socket }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: async () => {
      await Promise.all(running);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A listener recording every connection to the server at `port`. */
export async function recordingListener(port: number): Promise<Listener & { mocks: PostgresMock[]; errors: unknown[] }> {
  const mocks: PostgresMock[] = [];
  const errors: unknown[] = [];
  const listener = await listen(async (conn) => {
    conn.target.port = port;
    const upstream = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    const result = await recordPostgres(conn, upstream, { onMock: (m) => mocks.push(m), onError: (e) => errors.push(e) });
    if (result.error) errors.push(result.error);
  });
  return { ...listener, mocks, errors };
}

/** A listener replaying `mocks` to every connection. */
export async function replayingListener(mocks: readonly PostgresMock[] | ReplayIndex): Promise<Listener & { matches: ReplayMatch[]; misses: ReplayMiss[] }> {
  const matches: ReplayMatch[] = [];
  const misses: ReplayMiss[] = [];
  const listener = await listen((conn) => replayPostgres(conn, mocks, { onMatch: (m) => matches.push(m), onMiss: (m) => misses.push(m) }));
  return { ...listener, matches, misses };
}

/** Fails (never skips) when psycopg2 is missing, naming the package. */
export async function requirePsycopg2(): Promise<void> {
  await runChecked(PYTHON, ['-c', 'import psycopg2']).catch(() => {
    throw new Error(`psycopg2 is not importable by ${PYTHON}; install it with: apt-get install -y python3-psycopg2`);
  });
}

/** Runs a Python script with arguments; resolves with its stdout. */
export async function runPython(script: string, args: readonly string[]): Promise<string> {
  return (await runChecked(PYTHON, ['-c', script, ...args], { timeoutMs: 30_000 })).stdout;
}
