import { generateKeyPairSync } from 'node:crypto';
import { chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../free-port.js';
import { spawnChild, terminate } from '../../../core/process.js';
import { runChecked } from '../../../core/testkit.js';
import { pollUntil } from '../../../core/wait.js';
import { createCertificate } from '../tls/x509.js';

/**
 * Test helpers: a throwaway MariaDB server (Debian's mariadb-server) on a free 127.0.0.1 port.
 * mariadbd refuses to run as root, so as root it runs as the `mysql` user (which the package
 * creates) through `runuser`, its directory chowned to it. A user `app` with a password can
 * connect over TCP (mysql_native_password); the database `shop` exists.
 */

export const MARIADBD = '/usr/sbin/mariadbd';
export const INSTALL_DB = '/usr/bin/mariadb-install-db';
export const CLIENT = '/usr/bin/mariadb';

export interface RunningMariadb {
  port: number;
  user: string;
  password: string;
  database: string;
  /** With `tls`: the PEM of the CA that issued the server's certificate (for 127.0.0.1). */
  caPem?: string;
  stop(): Promise<void>;
}

export interface MariadbOptions {
  /** Serve TLS (a throwaway CA and a server certificate for 127.0.0.1, made in the server's directory). */
  tls?: boolean;
}

/** A CA and a server certificate for 127.0.0.1 (ECDSA P-256), written into `dir`; the options that make mariadbd use them. */
async function serverTls(dir: string, owner?: { u: number; g: number }): Promise<{ args: string[]; caPem: string }> {
  const day = 86_400_000;
  const [notBefore, notAfter] = [new Date(Date.now() - day), new Date(Date.now() + 30 * day)];
  const caKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const caName = 'debugkit test MariaDB CA';
  const caPem = createCertificate({ subjectCommonName: caName, issuerCommonName: caName, issuerKey: caKeys.privateKey, publicKey: caKeys.publicKey, notBefore, notAfter, ca: true });
  const keys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const cert = createCertificate({
    subjectCommonName: '127.0.0.1',
    issuerCommonName: caName,
    issuerKey: caKeys.privateKey,
    publicKey: keys.publicKey,
    notBefore,
    notAfter,
    ca: false,
    altNames: ['127.0.0.1'],
  });
  const files = { ca: path.join(dir, 'ca.pem'), cert: path.join(dir, 'server-cert.pem'), key: path.join(dir, 'server-key.pem') };
  await writeFile(files.ca, caPem);
  await writeFile(files.cert, cert);
  await writeFile(files.key, keys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, { mode: 0o600 });
  if (owner) for (const f of Object.values(files)) await chown(f, owner.u, owner.g);
  return { args: [`--ssl-ca=${files.ca}`, `--ssl-cert=${files.cert}`, `--ssl-key=${files.key}`], caPem };
}

/** The command's output (through the one spawner), or an error saying how it failed. */
const run = async (command: string, args: readonly string[], timeoutMs = 60_000): Promise<string> => (await runChecked(command, args, { timeoutMs })).stdout;

const asRoot = process.getuid?.() === 0;
/** The command as the server's user: `runuser -u mysql --` when root. */
const asServer = (command: string, args: string[]): [string, string[]] => (asRoot ? ['/usr/sbin/runuser', ['-u', 'mysql', '--', command, ...args]] : [command, args]);

export async function startMariadb(password = 'maria-test-secret', options: MariadbOptions = {}): Promise<RunningMariadb> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'debugkit-mariadb-'));
  let owner: { u: number; g: number } | undefined;
  if (asRoot) {
    const u = Number((await run('/usr/bin/id', ['-u', 'mysql'])).trim());
    const g = Number((await run('/usr/bin/id', ['-g', 'mysql'])).trim());
    await chown(dir, u, g);
    owner = { u, g };
  }
  const tls = options.tls ? await serverTls(dir, owner) : undefined;
  const data = path.join(dir, 'data');
  const socket = path.join(dir, 'sock');
  try {
    await run(...asServer(INSTALL_DB, ['--no-defaults', `--datadir=${data}`, '--auth-root-authentication-method=socket', '--skip-test-db']));
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw new Error(`MariaDB could not be set up (apt-get install -y mariadb-server): ${(err as Error).message}`, { cause: err });
  }
  const port = await freePort();
  const [cmd, args] = asServer(MARIADBD, [
    '--no-defaults',
    `--datadir=${data}`,
    `--port=${port}`,
    '--bind-address=127.0.0.1',
    `--socket=${socket}`,
    `--pid-file=${path.join(dir, 'pid')}`,
    '--skip-log-bin',
    '--innodb-buffer-pool-size=16M',
    '--skip-name-resolve',
    ...(tls?.args ?? []),
  ]);
  const owned = await spawnChild(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  owned.child.stderr!.on('data', (d) => (log = (log + String(d)).slice(-4000)));
  // runuser and the mariadbd it starts are one tree: SIGTERM first (mariadbd shuts down cleanly), then the rest.
  const stop = async () => {
    await terminate(owned, { graceMs: 10_000 });
    await rm(dir, { recursive: true, force: true });
  };
  try {
    let refused = '';
    const ready = await pollUntil(
      async () => {
        if (owned.child.exitCode !== null) throw new Error(`mariadbd exited with code ${owned.child.exitCode}: ${log}`);
        return run(CLIENT, ['--no-defaults', '-S', socket, '-u', 'root', '-e', 'SELECT 1'], 5000).then(
          () => true,
          (err: Error) => ((refused = err.message), false),
        );
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    if (!ready) throw new Error(`mariadbd did not start within 30 s: ${refused}\n${log}`);
    const sql = `CREATE USER 'app'@'%' IDENTIFIED BY '${password}'; GRANT ALL ON *.* TO 'app'@'%'; CREATE DATABASE shop;`;
    await run(CLIENT, ['--no-defaults', '-S', socket, '-u', 'root', '-e', sql], 10_000);
  } catch (err) {
    await stop();
    throw err;
  }
  return { port, user: 'app', password, database: 'shop', ...(tls ? { caPem: tls.caPem } : {}), stop };
}
