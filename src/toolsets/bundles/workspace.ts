import { randomBytes } from 'node:crypto';
import { access, lstat, mkdir, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { writeFileAtomic } from '../../core/files.js';
import { removeAtExit, removeNow } from '../../core/paths.js';
import { oneAtATime } from '../../core/wait.js';
import { BUNDLE_MODEL_BOUNDS, KeyShares, mb, SharedCharge, type ModelBudget } from './apiserver/budget.js';
import type { BundleApiServer } from './apiserver/server.js';
import { BundleError } from './errors.js';
import { BundleStore, LOCAL_OWNER, type AddProgress, type AddResult, type BundleEntry } from './store/store.js';

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
  /** What its model holds, charged to the share of every key using it (budget.ts SharedCharge). */
  charge: SharedCharge;
  /** The bytes of its resource files on disk (what its model may come to hold), once a second key asks to join. */
  resourceBytes?: Promise<number>;
}

/**
 * The bytes of the JSON files under a bundle's cluster-resources/ (what its model parses; pod logs
 * and the rest are never parsed, and counting them refused a 41 MB bundle of 1 MB of resources:
 * attack 18z Z8), read without following links, at most MAX_RESOURCE_ENTRIES entries (past them,
 * the bundle's bound).
 */
async function resourceBytes(root: string): Promise<number> {
  let dir: string;
  try {
    const { findBaseDir } = await import('./apiserver/bundle.js');
    dir = path.join(await findBaseDir(root), 'cluster-resources');
  } catch {
    return 0;
  }
  let bytes = 0;
  let entries = 0;
  const pending = [dir];
  while (pending.length > 0) {
    const at = pending.pop()!;
    const list = await readdir(at, { withFileTypes: true }).catch(() => []);
    for (const e of list) {
      if (++entries > MAX_RESOURCE_ENTRIES) return BUNDLE_MODEL_BOUNDS.bytes;
      const file = path.join(at, e.name);
      if (e.isDirectory()) pending.push(file);
      else if (e.isFile() && e.name.endsWith('.json')) bytes += (await lstat(file).catch(() => undefined))?.size ?? 0;
    }
  }
  return bytes;
}
const MAX_RESOURCE_ENTRIES = 100_000;

/** The fewest bytes of JSON one object of a bundle takes (a tiny event, ~110): a bundle's files on disk hold at most one object per this many. */
const SMALLEST_OBJECT = 100;

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
  /**
   * The served bundle (its root) each client is a user of: at most one. Release drops the client from it, not from the bundle
   * `active` names: an initialization that failed after the client joined left it a user of a bundle no release reached.
   */
  private readonly usingRoot = new Map<string, string>();
  /**
   * Each client's initializations and release, one at a time: two initialize_bundle in flight at once in one MCP session both
   * read "no previous bundle" and joined both bundles; the release dropped the client from the last one only, and the other
   * stayed served and charged to its key's share for the server's life (attack 18x V4).
   */
  private readonly turns = new Map<string, Promise<unknown>>();

  constructor(
    readonly store: BundleStore,
    /** Each key's share of the bundle models' budget: a bundle is charged to every key using it. */
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
  initialize(owner: string, source: string, options: { key: string; force: boolean; signal?: AbortSignal; onProgress?: (p: AddProgress) => void }): Promise<ActiveBundle> {
    return oneAtATime(this.turns, owner, () => this.initializeNow(owner, source, options));
  }

  private async initializeNow(owner: string, source: string, options: { key: string; force: boolean; signal?: AbortSignal; onProgress?: (p: AddProgress) => void }): Promise<ActiveBundle> {
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
    const previous = this.usingRoot.get(owner);
    const served = replaced?.served ?? this.serve(added, options.key);
    const leaving = previous !== undefined && previous !== added.root ? previous : undefined;
    // What it may come to hold (its resource files, read once): a key joining a bundle other keys use must have room for it;
    // a key alone on it may open it without, and is then not the one its later files are judged by (budget.ts SharedCharge).
    const potential = await (served.resourceBytes ??= resourceBytes(added.root));
    this.join(served, options.key, leaving, owner, potential);
    this.closeSummaryModel(owner);
    served.users.set(owner, options.key);
    this.usingRoot.set(owner, added.root);
    if (leaving) await this.dropUser(leaving, owner);
    try {
      const bundle = await this.ready(added, served, replaced);
      this.active.set(owner, bundle);
      return bundle;
    } catch (err) {
      // The client left its bundle for this one, which is not ready: it has none, and uses (and pays for) none.
      if (previous !== added.root) {
        this.active.delete(owner);
        await this.leave(owner);
      }
      throw err;
    }
  }

  /** `added`'s server answering and its kubeconfig present: what the client is told it now works on. */
  private async ready(added: AddResult, served: Served, replaced: { old: Served | undefined } | undefined): Promise<ActiveBundle> {
    const [server, kubeconfigPath] = await Promise.all([served.server, served.kubeconfigPath]);
    // Removed meanwhile (a temp cleaner, a person): initializing again puts it back, for every user.
    const present = await access(kubeconfigPath).then(
      () => true,
      () => false,
    );
    if (!present) await writeKubeconfig(kubeconfigPath, server.url);
    if (replaced) await this.repoint(added.root, served, replaced.old);
    return {
      name: added.name,
      path: added.path,
      root: added.root,
      source: added.source,
      kubeconfigPath,
      apiServerUrl: server.url,
      initializedAt: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
      reused: added.reused,
    };
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

  /** The client is gone: after its initializations in flight, it lets go of its bundle. */
  release(owner: string): Promise<void> {
    return oneAtATime(this.turns, owner, async () => {
      this.closeSummaryModel(owner);
      this.active.delete(owner);
      await this.leave(owner);
    });
  }

  /** Drops `owner` from the one served bundle it is a user of, if any. */
  private async leave(owner: string): Promise<void> {
    const root = this.usingRoot.get(owner);
    if (root === undefined) return;
    this.usingRoot.delete(owner);
    await this.dropUser(root, owner);
  }

  /** The share `key`'s use of bundles is charged to; none for the local user, whose bundles are charged to the server's budget alone. */
  private keyShare(key: string): ModelBudget | undefined {
    return key === LOCAL_OWNER ? undefined : this.shares.of(key);
  }

  /**
   * Charges `key` for the bundle `served` as it starts using it (budget.ts SharedCharge: every key using a bundle pays for all
   * it holds), or refuses: when the bundle holds more than that key's share has room for, counting as given back what the
   * client's bundle `leaving` costs the key if the client is its key's last one there. The join is refused, not the bundle's
   * files left out later for the others using it, and the client keeps its bundle.
   */
  private join(served: Served, key: string, leaving: string | undefined, owner: string, resourcesOnDisk: number): void {
    const share = this.keyShare(key);
    if (!share) return;
    const before = this.served.get(leaving ?? '');
    const freed = before && ![...before.users].some(([user, k]) => k === key && user !== owner) && before.charge.has(share) ? before.charge : { bytes: 0, objects: 0 };
    const holds = { bytes: served.charge.bytes, objects: served.charge.objects };
    // What it may come to hold: its resource files on disk (a bundle's bound at most; at least one object per SMALLEST_OBJECT bytes).
    const potential = Math.min(resourcesOnDisk, BUNDLE_MODEL_BOUNDS.bytes);
    const mayHold = {
      bytes: Math.max(holds.bytes, potential),
      objects: Math.max(holds.objects, Math.min(Math.ceil(potential / SMALLEST_OBJECT), BUNDLE_MODEL_BOUNDS.objects)),
    };
    const charged = served.charge.has(share);
    const othersUse = [...served.users.values()].some((k) => k !== key);
    // Charged already (the key that opened it, or another client of the key): what it holds is in the share.
    const own = charged ? holds : { bytes: 0, objects: 0 };
    const room = share.bytes - freed.bytes - own.bytes + mayHold.bytes <= share.bounds.bytes && share.objects - freed.objects - own.objects + mayHold.objects <= share.bounds.objects;
    if (charged) {
      // A key alone on a bundle opens it whatever its room, and is then not the one its later files are judged by.
      if (!othersUse) served.charge.judge(share, room);
      return;
    }
    // A bundle other keys use keeps a later file only when the users judged have room for it (SharedCharge): a key joining it
    // must afford all it may come to hold, or one whose share is full would leave every later file out for the others (attack
    // 18y X3: one key's sessions joined two unread bundles, and the keys using them got 0 of their events).
    const held = othersUse ? mayHold : holds;
    // A bundle holding nothing yet that no other key uses (a fresh server after a forced re-extraction) is joined whatever the share: nothing to pay.
    const empty = held.bytes === 0 && held.objects === 0;
    if (!empty && (share.bytes - freed.bytes + held.bytes > share.bounds.bytes || share.objects - freed.objects + held.objects > share.bounds.objects)) {
      const users = new Set(served.users.values()).size;
      const more = held.bytes > holds.bytes || held.objects > holds.objects ? ` (its files on disk may bring it to ${mb(held.bytes)} and ${held.objects} objects)` : '';
      throw new BundleError(
        'BundleBudgetError',
        `This bundle is not opened for this API key: its model holds ${mb(holds.bytes)} and ${holds.objects} objects for the ${users} other key(s) using it${more}, ` +
          `and every key using a bundle is charged for all it holds, but this key's share of the server's bundle budget (${share.describe()}) ` +
          `has ${mb(share.bytes - freed.bytes)} and ${share.objects - freed.objects} objects held by its other bundles; closing them ` +
          '(initializing another in their sessions, or ending those sessions) makes room',
      );
    }
    // Checked above with what leaving gives back: past the bound only until dropUser gives that back, in this same call.
    served.charge.join(share);
    served.charge.judge(share, room);
  }

  private async dropUser(root: string, owner: string): Promise<void> {
    const served = this.served.get(root);
    if (!served) return;
    const key = served.users.get(owner);
    served.users.delete(owner);
    if (served.users.size === 0) return this.stopServing(root);
    // The key's last client there gives its charge back; every other key's charge stays as it was.
    const share = key === undefined ? undefined : this.keyShare(key);
    if (share && ![...served.users.values()].includes(key!)) served.charge.leave(share);
  }

  async dispose(): Promise<void> {
    this.active.clear();
    this.usingRoot.clear();
    await Promise.all([...this.served.keys()].map((root) => this.stopServing(root)));
  }

  /** `key`: the key initializing it, charged for it first (budget.ts SharedCharge); each other key using it is charged as it joins. */
  private serve(entry: BundleEntry, key: string): Served {
    let served = this.served.get(entry.root);
    if (!served) {
      // The bundle's API server (resources, tables, kubectl's columns) loads when the first bundle is served.
      // Its token, in the kubeconfig's server URL only, keeps other local users (and browser pages) out.
      const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
      const charge = new SharedCharge(this.shares.server);
      const share = this.keyShare(key);
      if (share) charge.join(share);
      const server = import('./apiserver/server.js').then(({ startBundleApiServer }) => startBundleApiServer({ root: entry.root, token, model: charge }));
      const kubeconfigPath = server.then(async (s) => {
        const file = await kubeconfigFile(entry.name, s.url);
        await writeKubeconfig(file, s.url);
        return file;
      });
      served = { server, kubeconfigPath, users: new Map(), charge };
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
    for (const [user, userKey] of old?.users ?? []) {
      served.users.set(user, userKey);
      // The fresh model holds nothing yet: every key using it is charged for it from now on.
      const share = this.keyShare(userKey);
      if (share) served.charge.join(share);
    }
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
