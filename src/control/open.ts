import { hostname } from 'node:os';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { debugkitDataDir } from '../core/dirs.js';
import { CheckpointFile, loadOrCreateAuditKey, readAuditKey, type AuditAnchor } from './anchor.js';
import { ControlPlane, type ControlPlaneOptions } from './plane.js';
import type { Store } from './store.js';

export interface OpenStoreOptions {
  /**
   * What the store is opened for:
   * - 'append' (the default; the server): created when missing; audit entries are hashed with the
   *   audit key (created on first use) and the head is checkpointed to a file beside the store.
   * - 'admin' (`keys ...`): created when missing; no audit key (nothing is appended).
   * - 'inspect' (`audit verify`, `checkpoint`, `export`): an existing store only, nothing is created;
   *   the audit key and the checkpoint file are read when there are.
   */
  purpose?: 'append' | 'admin' | 'inspect';
  /** The audit key file (--audit-key-file); default: audit.key beside the SQLite database, or in the data directory for PostgreSQL. */
  auditKeyFile?: string;
}

function isPostgres(spec: string | undefined): boolean {
  return Boolean(spec && /^postgres(ql)?:\/\//i.test(spec));
}

/**
 * Where the audit key and the checkpoint file of a store are: beside the SQLite database
 * (audit.key, control.db-audit-head); for PostgreSQL in this node's data directory, the checkpoint
 * named after the database (host, port and name), so one data directory can serve several.
 */
export function auditFiles(spec: string | undefined, dataDir = debugkitDataDir(), keyFile?: string): { keyFile: string; checkpointFile: string } {
  if (isPostgres(spec)) {
    const u = new URL(spec!);
    const id = createHash('sha256')
      .update(`${u.hostname}:${u.port || '5432'}${u.pathname}`)
      .digest('hex')
      .slice(0, 12);
    return { keyFile: keyFile ?? path.join(dataDir, 'audit.key'), checkpointFile: path.join(dataDir, `audit-head-${id}.json`) };
  }
  const file = sqliteFile(spec, dataDir);
  return { keyFile: keyFile ?? path.join(path.dirname(file), 'audit.key'), checkpointFile: `${file}-audit-head` };
}

function sqliteFile(spec: string | undefined, dataDir: string): string {
  return spec ? path.resolve(spec.slice('sqlite:'.length)) : path.join(dataDir, 'control.db');
}

async function openRaw(spec: string | undefined, dataDir: string, mustExist: boolean): Promise<Store> {
  if (isPostgres(spec)) {
    const { PostgresStore } = await import('./postgres.js');
    try {
      return await PostgresStore.open(spec!, { mustExist });
    } catch (err) {
      throw new Error(`cannot open the PostgreSQL store: ${(err as Error).message}`, { cause: err });
    }
  }
  if (spec && !spec.startsWith('sqlite:')) throw new Error(`--store "${spec}" is not valid: give postgres://USER:PASSWORD@HOST:PORT/DB or sqlite:PATH`);
  const file = sqliteFile(spec, dataDir);
  const { SqliteStore } = await import('./sqlite.js');
  try {
    return new SqliteStore(file, { mustExist });
  } catch (err) {
    throw new Error(`cannot open the control database ${file}: ${(err as Error).message}`, { cause: err });
  }
}

/** The audit key and checkpoint file for appending: the key is made on first use, and must be the one the chain is keyed with. */
async function appendAnchor(store: Store, keyFile: string, checkpointFile: string): Promise<AuditAnchor> {
  const recorded = await store.auditKeyId();
  let key = readAuditKey(keyFile);
  if (!key) {
    if (recorded) {
      throw new Error(
        `the audit chain in ${store.location} is keyed (audit key ${recorded}), but the key file ${keyFile} is missing: restore it, ` +
          'or give this node the key the others use with --audit-key-file FILE (a new key would leave the chain unverifiable)',
      );
    }
    // A store with no entry yet is keyed from its first: the key's file says so, for every node that verifies with it.
    key = loadOrCreateAuditKey(keyFile, (await store.auditEntry(1)) === undefined ? { keyedFrom: 1 } : {}).key;
  }
  const chain = await store.auditKeyId(key.id);
  if (chain !== key.id) {
    throw new Error(
      `the audit key ${keyFile} (key ${key.id}) is not the one the audit chain in ${store.location} is keyed with (key ${chain}): ` +
        'every node sharing a store must use the same key file (copy it, or give it with --audit-key-file FILE)',
    );
  }
  return { key, keyFile, checkpoint: new CheckpointFile(checkpointFile) };
}

/** The audit key and checkpoint file for verifying: read only; a keyed chain without its key is a problem verify reports. */
async function inspectAnchor(store: Store, keyFile: string, checkpointFile: string): Promise<AuditAnchor> {
  const recorded = await store.auditKeyId();
  const anchor: AuditAnchor = { keyFile, checkpoint: new CheckpointFile(checkpointFile) };
  let key;
  try {
    key = readAuditKey(keyFile);
  } catch (err) {
    anchor.keyProblem = (err as Error).message; // export needs no key; verify says this
    return anchor;
  }
  if (recorded && !key)
    anchor.keyProblem = `the audit chain is keyed (audit key ${recorded}), but there is no key file ${keyFile}: give it with --audit-key-file FILE (or --data-dir where the server keeps it)`;
  else if (recorded && key && key.id !== recorded)
    anchor.keyProblem = `the audit key ${keyFile} (key ${key.id}) is not the one the chain is keyed with (key ${recorded}): give that one with --audit-key-file FILE`;
  else if (key) anchor.key = key;
  return anchor;
}

/**
 * Opens the store `spec` names: "postgres://..." (or postgresql://), "sqlite:PATH", or nothing
 * for control.db in the data directory; with its audit key and checkpoint file as `purpose` needs.
 */
export async function openStore(spec: string | undefined, dataDir = debugkitDataDir(), opts: OpenStoreOptions = {}): Promise<Store> {
  const purpose = opts.purpose ?? 'append';
  const store = await openRaw(spec, dataDir, purpose === 'inspect');
  if (purpose === 'admin') return store;
  try {
    const { keyFile, checkpointFile } = auditFiles(spec, dataDir, opts.auditKeyFile);
    store.useAudit(purpose === 'append' ? await appendAnchor(store, keyFile, checkpointFile) : await inspectAnchor(store, keyFile, checkpointFile));
    return store;
  } catch (err) {
    await store.close();
    throw err;
  }
}

export function defaultNodeId(): string {
  return `${hostname()}-${randomBytes(3).toString('hex')}`;
}

export async function openControlPlane(spec: string | undefined, dataDir: string | undefined, opts: Omit<ControlPlaneOptions, 'store'> & { auditKeyFile?: string }): Promise<ControlPlane> {
  const { auditKeyFile, ...rest } = opts;
  return new ControlPlane({ ...rest, store: await openStore(spec, dataDir, auditKeyFile ? { auditKeyFile } : {}) });
}
