import { homedir, hostname } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { ControlPlane, type ControlPlaneOptions } from './plane.js';
import type { Store } from './store.js';

/** debugkit's data directory (XDG): where the embedded control database lives. */
export function defaultDataDir(): string {
  const data = process.env.XDG_DATA_HOME || path.join(homedir(), '.local', 'share');
  return path.join(data, 'debugkit');
}

/**
 * Opens the store `spec` names: "postgres://..." (or postgresql://), "sqlite:PATH", or nothing
 * for control.db in the data directory.
 */
export async function openStore(spec: string | undefined, dataDir = defaultDataDir()): Promise<Store> {
  if (spec && /^postgres(ql)?:\/\//i.test(spec)) {
    const { PostgresStore } = await import('./postgres.js');
    try {
      return await PostgresStore.open(spec);
    } catch (err) {
      throw new Error(`cannot open the PostgreSQL store: ${(err as Error).message}`, { cause: err });
    }
  }
  if (spec && !spec.startsWith('sqlite:')) throw new Error(`--store "${spec}" is not valid: give postgres://USER:PASSWORD@HOST:PORT/DB or sqlite:PATH`);
  const file = spec ? path.resolve(spec.slice('sqlite:'.length)) : path.join(dataDir, 'control.db');
  const { SqliteStore } = await import('./sqlite.js');
  try {
    return new SqliteStore(file);
  } catch (err) {
    throw new Error(`cannot open the control database ${file}: ${(err as Error).message}`, { cause: err });
  }
}

export function defaultNodeId(): string {
  return `${hostname()}-${randomBytes(3).toString('hex')}`;
}

export async function openControlPlane(spec: string | undefined, dataDir: string | undefined, opts: Omit<ControlPlaneOptions, 'store'>): Promise<ControlPlane> {
  return new ControlPlane({ ...opts, store: await openStore(spec, dataDir) });
}
