import { randomBytes } from 'node:crypto';
import { access, lstat, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { writeFileAtomic } from '../../core/files.js';
import { removeAtExit, removeNow } from '../../core/paths.js';
import { KeyShares, type ModelBudget } from './apiserver/budget.js';
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
  /** Each client using it, with the key it acts for. */
  users: Map<string, string>;
  /** The key whose share the bundle's model is charged to: always one of its users' while it has any. */
  payer: string;
  /** The charge's moves, one after another (chargeToUser). */
  charging: Promise<void>;
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
  /**
   * Each client's bundle_summary model: a second model of its bundle, charged to its key's share,
   * closed (its charge given back at once) when the client lets go of that bundle or initializes
   * another, not when the garbage collector gets to it.
   */
  private readonly summaryModels = new Map<string, { root: string; initializedAt: string; model: Promise<{ close(): void }> }>();
  private readonly served = new Map<string, Served>();

  constructor(
    readonly store: BundleStore,
    /** Each key's share of the bundle models' budget: a bundle is charged to the key that initialized it. */
    readonly shares: KeyShares = new KeyShares(),
  ) {}

  /** The budget `key`'s bundle models are charged to: its share; the local user (stdio, or HTTP without keys) is alone and has all of it. */
  modelBudget(key: string): ModelBudget {
    return this.shares.of(key === LOCAL_OWNER ? undefined : key);
  }

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
    // A forced re-extraction replaced the files under a running server: a fresh one serves them, to
    // every client using it (see restart). A directory used in place is never extracted: force
    // changes nothing there, and the server other clients (other keys too) use stays.
    const replaced = !added.reused && added.kind !== 'directory' ? this.restart(added, options.key) : undefined;
    const previous = this.active.get(owner);
    this.closeSummaryModel(owner);
    const served = replaced?.served ?? this.serve(added, options.key);
    served.users.set(owner, options.key);
    if (previous && previous.root !== added.root) await this.dropUser(previous.root, owner);
    const [server, kubeconfigPath] = await Promise.all([served.server, served.kubeconfigPath]);
    // Removed meanwhile (a temp cleaner, a person): initializing again puts it back, for every user.
    const present = await access(kubeconfigPath).then(
      () => true,
      () => false,
    );
    if (!present) await writeKubeconfig(kubeconfigPath, server.url);
    if (replaced) await this.repoint(added.root, served, replaced.old);
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

  /** The model bundle_summary reads for `owner`'s bundle: made once per initialization by `open`, closed with it. */
  summaryModel<M extends { close(): void }>(owner: string, open: (active: ActiveBundle) => Promise<M>): Promise<M> {
    const active = this.current(owner);
    const held = this.summaryModels.get(owner);
    if (held && held.root === active.root && held.initializedAt === active.initializedAt) return held.model as Promise<M>;
    this.closeSummaryModel(owner);
    const model = open(active);
    const entry = { root: active.root, initializedAt: active.initializedAt, model };
    this.summaryModels.set(owner, entry);
    model.catch(() => {
      if (this.summaryModels.get(owner) === entry) this.summaryModels.delete(owner);
    });
    return model;
  }

  private closeSummaryModel(owner: string): void {
    const held = this.summaryModels.get(owner);
    if (!held) return;
    this.summaryModels.delete(owner);
    held.model.then(
      (m) => m.close(),
      () => undefined,
    );
  }

  async release(owner: string): Promise<void> {
    this.closeSummaryModel(owner);
    const bundle = this.active.get(owner);
    if (!bundle) return;
    this.active.delete(owner);
    await this.dropUser(bundle.root, owner);
  }

  private async dropUser(root: string, owner: string): Promise<void> {
    const served = this.served.get(root);
    if (!served) return;
    served.users.delete(owner);
    if (served.users.size === 0) return this.stopServing(root);
    // A bundle that could not be opened again stays served, its charge forced onto the new payer (server.ts reopenWithin).
    served.charging = served.charging.then(() => this.chargeToUser(served)).catch(() => undefined);
    await served.charging;
  }

  /**
   * Keeps a shared bundle charged to a key using it. It is charged to one of its users' keys at a
   * time, not to each: charged to every key using it, a key whose share was full could have a
   * bundle's files left out for all its other users just by initializing the same directory. So a
   * key's share holds the bundles it opened and those whose charge it took over, and never one it
   * no longer uses: when the paying key's last client leaves, the charge moves to a key still using
   * it that has room for what it holds, or else (none has) to the first of them, with the bundle
   * opened afresh within that key's share (its files past it left out for that key, as usual).
   * Without this, the key that opened it first kept paying after leaving (attack P4): its next
   * bundle was left out for a share it did not use, and the other key used its own twice.
   */
  private async chargeToUser(served: Served): Promise<void> {
    const keys = new Set(served.users.values());
    if (keys.size === 0 || keys.has(served.payer)) return;
    const server = await served.server.catch(() => undefined);
    if (!server) return;
    for (const key of keys) {
      if (!server.moveCharge(this.modelBudget(key))) continue;
      served.payer = key;
      return;
    }
    const first = keys.values().next().value as string;
    served.payer = first;
    await server.reopenWithin(this.modelBudget(first));
  }

  async dispose(): Promise<void> {
    this.active.clear();
    await Promise.all([...this.served.keys()].map((root) => this.stopServing(root)));
  }

  /** `key`: the key initializing it, whose share its model is charged to while it is served (to all its users). */
  private serve(entry: BundleEntry, key: string): Served {
    let served = this.served.get(entry.root);
    if (!served) {
      // The bundle's API server (resources, tables, kubectl's columns) loads when the first bundle is served.
      // Its token, in the kubeconfig's server URL only, keeps other local users (and browser pages) out.
      const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
      const server = import('./apiserver/server.js').then(({ startBundleApiServer }) => startBundleApiServer({ root: entry.root, token, model: this.modelBudget(key) }));
      const kubeconfigPath = server.then(async (s) => {
        const file = await kubeconfigFile(entry.name, s.url);
        await writeKubeconfig(file, s.url);
        return file;
      });
      served = { server, kubeconfigPath, users: new Map(), payer: key, charging: Promise.resolve() };
      this.served.set(entry.root, served);
      server.catch(() => this.served.delete(entry.root));
    }
    return served;
  }

  /**
   * A new server for `entry.root` in place of the running one (if any), taking over its users;
   * the old one is closed by repoint once the new one answers.
   */
  private restart(entry: BundleEntry, key: string): { served: Served; old: Served | undefined } {
    const old = this.served.get(entry.root);
    this.served.delete(entry.root);
    const served = this.serve(entry, key);
    for (const [user, userKey] of old?.users ?? []) served.users.set(user, userKey);
    return { served, old };
  }

  /** Every client on `root` now uses the new server's kubeconfig; then the old server goes. */
  private async repoint(root: string, served: Served, old: Served | undefined): Promise<void> {
    const [server, kubeconfigPath] = await Promise.all([served.server, served.kubeconfigPath]);
    // Replaced again meanwhile (another forced initialization): that one re-points.
    if (this.served.get(root) !== served) return;
    for (const [owner, bundle] of this.active) {
      if (bundle.root === root) this.active.set(owner, { ...bundle, kubeconfigPath, apiServerUrl: server.url });
    }
    if (old) await closeServed(old);
  }

  private async stopServing(root: string): Promise<void> {
    const served = this.served.get(root);
    if (!served) return;
    this.served.delete(root);
    await closeServed(served);
  }
}

async function closeServed(served: Served): Promise<void> {
  await served.server.then((s) => s.close()).catch(() => undefined);
  await served.kubeconfigPath.then(removeNow).catch(() => undefined);
}

/** How a bundle API server's token starts (kubectl.ts keeps it out of kubectl's error messages). */
export const TOKEN_PREFIX = 'dk-';

/**
 * Where a server's kubeconfig goes: a directory private to this user (mode 0700, owned by this
 * user, never one another user made first).
 */
async function kubeconfigFile(name: string, url: string): Promise<string> {
  const dir = path.join(tmpdir(), `debugkit-${process.getuid?.() ?? 'user'}`);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const st = await lstat(dir);
  if (!st.isDirectory() || (process.getuid && st.uid !== process.getuid()) || (st.mode & 0o077) !== 0) {
    throw new BundleError('SecurityError', `The kubeconfig directory ${dir} is not a private directory of this user (mode 0700): remove it and initialize the bundle again`);
  }
  return path.join(dir, `kubeconfig-${name}-${new URL(url).port}`);
}

/** A kubeconfig pointing at the bundle's API server, its URL with the token, mode 0600, written atomically. */
async function writeKubeconfig(file: string, url: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'bundle', cluster: { server: url } }],
    users: [{ name: 'bundle', user: {} }],
    contexts: [{ name: 'bundle', context: { cluster: 'bundle', user: 'bundle', namespace: 'default' } }],
    'current-context': 'bundle',
  };
  await writeFileAtomic(file, JSON.stringify(config, null, 2), { mode: 0o600 });
  // Gone with the bundle's server, or with this process (a server stopped by a signal left them).
  removeAtExit(file);
}
