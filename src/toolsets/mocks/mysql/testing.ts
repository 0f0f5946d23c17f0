import { execFile, spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { chown, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../free-port.js';
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

function run(command: string, args: readonly string[], timeoutMs = 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: timeoutMs }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${command} ${args.join(' ')} failed: ${err.message}\n${stdout}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

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
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr!.on('data', (d) => (log = (log + String(d)).slice(-4000)));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const stop = async () => {
    // runuser passes SIGTERM on to mariadbd, which shuts down cleanly.
    const pid = Number((await readFile(path.join(dir, 'pid'), 'utf8').catch(() => '')).trim());
    if (pid > 0) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        /* gone */
      }
    }
    child.kill('SIGTERM');
    const t = setTimeout(() => {
      if (pid > 0) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
      child.kill('SIGKILL');
    }, 10_000);
    await exited;
    clearTimeout(t);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`mariadbd exited with code ${child.exitCode}: ${log}`);
      try {
        await run(CLIENT, ['--no-defaults', '-S', socket, '-u', 'root', '-e', 'SELECT 1'], 5000);
        break;
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`mariadbd did not start within 30 s: ${(err as Error).message}\n${log}`, { cause: err });
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    const sql = `CREATE USER 'app'@'%' IDENTIFIED BY '${password}'; GRANT ALL ON *.* TO 'app'@'%'; CREATE DATABASE shop;`;
    await run(CLIENT, ['--no-defaults', '-S', socket, '-u', 'root', '-e', sql], 10_000);
  } catch (err) {
    await stop();
    throw err;
  }
  return { port, user: 'app', password, database: 'shop', ...(tls ? { caPem: tls.caPem } : {}), stop };
}
