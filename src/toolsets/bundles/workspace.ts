import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { writeFileAtomic } from '../../core/files.js';
import { removeAtExit, removeNow } from '../../core/paths.js';
import type { BundleApiServer } from './apiserver/server.js';
import { BundleError } from './errors.js';
import { BundleStore, LOCAL_OWNER, type AddProgress, type BundleEntry } from './store/store.js';

export interface ActiveBundle {
  name: string;
  /** The bundle's directory in the store (or the directory used in place). */
  path: string;
  /** Where its files start: the directory holding cluster-resources/. */
  root: string;
  source: string;
  kubeconfigPath: string;
  apiServerUrl: string;
  initializedAt: string;
  reused: boolean;
}

interface Served {
  server: Promise<BundleApiServer>;
  kubeconfigPath: Promise<string>;
  users: Set<string>;
}

/** The key a client acts for, which owns the bundles it adds: its principal's id ('local' on stdio). */
export function keyIdOf(client: { principal?: { id: string } }): string {
  return client.principal?.id ?? LOCAL_OWNER;
}

/**
 * Which bundle each client works on, and the API servers behind them: one per bundle, shared by
 * the clients using it and closed when the last one lets go.
 */
export class BundleWorkspace {
  private readonly active = new Map<string, ActiveBundle>();
  private readonly served = new Map<string, Served>();

  constructor(readonly store: BundleStore) {}

  /**
   * Opens `source` for the client `owner`; `key` (the caller's key id) owns what it adds to the
   * store, and only its own bundles and the shared ones can be opened by name or path.
   */
  async initialize(owner: string, source: string, options: { key: string; force: boolean; signal?: AbortSignal; onProgress?: (p: AddProgress) => void }): Promise<ActiveBundle> {
    const added = await this.store.add(source, { owner: options.key, force: options.force, signal: options.signal, onProgress: options.onProgress });
    if (!added.valid) {
      // A failed initialization leaves nothing behind: a bundle it just added goes again.
      if (!added.reused) await this.store.remove(added.name, options.key);
      throw new BundleError('BundleExtractionError', `Failed to extract bundle: ${added.reason ?? 'it holds no cluster data'} (${added.path})`);
    }
    // A forced re-extraction replaced the files under a running server: start a fresh one.
    if (!added.reused) await this.stopServing(added.root);
    const previous = this.active.get(owner);
    const served = this.serve(added);
    served.users.add(owner);
    if (previous && previous.root !== added.root) await this.dropUser(previous.root, owner);
    const [server, kubeconfigPath] = await Promise.all([served.server, served.kubeconfigPath]);
    const bundle: ActiveBundle = {
      name: added.name,
      path: added.path,
      root: added.root,
      source: added.source,
      kubeconfigPath,
      apiServerUrl: server.url,
      initializedAt: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
      reused: added.reused,
    };
    this.active.set(owner, bundle);
    return bundle;
  }

  current(owner: string): ActiveBundle {
    const bundle = this.active.get(owner);
    if (!bundle) throw new BundleError('NoBundleInitializedError', 'No bundle initialized. Use initialize_bundle first (list_available_bundles shows the ones in the store)');
    return bundle;
  }

  activeName(owner: string): string | undefined {
    return this.active.get(owner)?.name;
  }

  async release(owner: string): Promise<void> {
    const bundle = this.active.get(owner);
    if (!bundle) return;
    this.active.delete(owner);
    await this.dropUser(bundle.root, owner);
  }

  private async dropUser(root: string, owner: string): Promise<void> {
    const served = this.served.get(root);
    served?.users.delete(owner);
    if (served && served.users.size === 0) await this.stopServing(root);
  }

  async dispose(): Promise<void> {
    this.active.clear();
    await Promise.all([...this.served.keys()].map((root) => this.stopServing(root)));
  }

  private serve(entry: BundleEntry): Served {
    let served = this.served.get(entry.root);
    if (!served) {
      // The bundle's API server (resources, tables, kubectl's columns) loads when the first bundle is served.
      const server = import('./apiserver/server.js').then(({ startBundleApiServer }) => startBundleApiServer({ root: entry.root }));
      const kubeconfigPath = server.then((s) => writeKubeconfig(entry.name, s.url));
      served = { server, kubeconfigPath, users: new Set() };
      this.served.set(entry.root, served);
      server.catch(() => this.served.delete(entry.root));
    }
    return served;
  }

  private async stopServing(root: string): Promise<void> {
    const served = this.served.get(root);
    if (!served) return;
    this.served.delete(root);
    await served.server.then((s) => s.close()).catch(() => undefined);
    await served.kubeconfigPath.then(removeNow).catch(() => undefined);
  }
}

/** A kubeconfig pointing at the bundle's API server, private to this user, written atomically. */
async function writeKubeconfig(name: string, url: string): Promise<string> {
  const dir = path.join(tmpdir(), `debugkit-${process.getuid?.() ?? 'user'}`);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, `kubeconfig-${name}-${new URL(url).port}`);
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'bundle', cluster: { server: url } }],
    users: [{ name: 'bundle', user: { token: 'support-bundle' } }],
    contexts: [{ name: 'bundle', context: { cluster: 'bundle', user: 'bundle', namespace: 'default' } }],
    'current-context': 'bundle',
  };
  await writeFileAtomic(file, JSON.stringify(config, null, 2), { mode: 0o600 });
  // Gone with the bundle's server, or with this process (a server stopped by a signal left them).
  removeAtExit(file);
  return file;
}
