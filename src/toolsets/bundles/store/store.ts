import { createHash, randomBytes } from 'node:crypto';
import type { Dirent, Stats } from 'node:fs';
import { lstat, mkdir, opendir, readdir, readFile, realpath, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { containment, isInside, isStillReal } from '../../../core/paths.js';
import { removeTree } from '../../../core/remove-tree.js';
import { writeFileAtomic } from '../../../core/files.js';
import { BundleError } from '../errors.js';
import type { DownloadOptions } from './download.js';
import type { ExtractOptions } from './extract.js';
import type { UrlPolicy } from './fetch.js';
import { redact, vendorPortalSlug } from './urls.js';

/** Written into each bundle's directory in the store once the bundle is complete. */
export const METADATA_FILE = '.debugkit-bundle.json';

export type BundleKind = 'archive' | 'url' | 'directory';

export interface BundleMetadata {
  version: 1;
  name: string;
  kind: BundleKind;
  /**
   * The archive's real path, the directory's real path, or the URL with its query string and
   * credentials redacted (signed URLs carry credentials: they are never written down or shown).
   */
  source: string;
  /** kind 'url': SHA-256 of the URL as given, to recognize the same source again. */
  source_sha256?: string;
  /**
   * The key that added the bundle (its principal id). Only that key sees it; a bundle without an
   * owner (placed in the store by the operator, or added before owners were recorded) is shared.
   */
  owner?: string;
  added_at: string;
  /** Bytes of file data in the bundle. */
  size_bytes: number;
  entries?: number;
  /** kind 'directory': the directory used in place. */
  path?: string;
  /** kind 'archive': to notice the archive changed since it was extracted. */
  archive_size?: number;
  archive_mtime_ms?: number;
}

export interface BundleEntry {
  name: string;
  /** The bundle's directory: the extraction in the store, or a directory source used in place. */
  path: string;
  /** Where the bundle's files start (the directory holding cluster-resources/); see bundleRoot. */
  root: string;
  source: string | null;
  kind: BundleKind | null;
  size_bytes: number;
  added_at: string;
  valid: boolean;
  reason?: string;
}

export interface AddProgress {
  phase: 'download' | 'extract';
  bytes: number;
  /** Download: Content-Length when known. */
  total: number | null;
  entries?: number;
}

export interface AddOptions {
  /** The key adding the bundle (see BundleOwner); default: none (the operator's, shared). */
  owner?: BundleOwner;
  /** Extract (or download) again even if the same source is already in the store. */
  force?: boolean;
  /** Replicated API token; default SBCTL_TOKEN (else REPLICATED_TOKEN) from the environment. */
  token?: string;
  signal?: AbortSignal;
  limits?: Omit<ExtractOptions, 'signal'>;
  download?: Omit<DownloadOptions, 'token' | 'signal' | 'onProgress'>;
  onProgress?: (progress: AddProgress) => void;
}

export interface AddResult extends BundleEntry {
  source: string;
  kind: BundleKind;
  /** True when the source was already in the store and nothing was extracted. */
  reused: boolean;
}

const NO_CLUSTER_DIR = 'no cluster-resources/ or cluster-info/ directory within two levels of the bundle directory';

/**
 * Whose bundles: the id of the key that adds them (the principal id: a stored key's id, `api-key`
 * for --api-key, `local` for the stdio user). Undefined: the operator, using the store directly.
 */
export type BundleOwner = string | undefined;

/** The stdio user: its bundles are kept at the top of the store, as every bundle was before owners. */
export const LOCAL_OWNER = 'local';

/** Each key's bundles are kept apart, in `<store>/.keys/<key id>/<name>`. */
export const KEYS_DIR = '.keys';

/** Where a path lies in the store for one owner (see placeInStore). */
type StorePlace = 'outside' | 'hidden' | { dir: string; name?: string };

/**
 * The bundle store: one directory holding a subdirectory per bundle, named after its source
 * (`support-bundle-2025-04-11T14_05_31`, `bundle-<slug>` for Vendor Portal URLs), each with a
 * `.debugkit-bundle.json` written (atomically) once the bundle is complete.
 *
 * Owners: a bundle belongs to the key that added it (`owner` in its metadata). Each key's bundles
 * live in a directory of their own (`.keys/<key id>/`; the stdio user's at the top of the store),
 * so names, listing, lookups by name or path and reuse by source only ever meet the key's own
 * bundles and the shared ones: bundles at the top of the store with no owner recorded (put there
 * by the operator, or added before owners were recorded). Another key's bundle, by name or by a
 * path into the store, is "not found" exactly as a missing one is.
 *
 * Sources: a local .tar.gz/.tgz (extracted safely, see extract.ts), an http(s) URL (downloaded,
 * then extracted; Vendor Portal URLs resolved through the Replicated API), or an extracted bundle
 * directory, which is used in place (resolved with realpath; only its metadata lives in the store,
 * nothing is copied and nothing is written into it). Adding a source that is already in the store
 * reuses it unless `force` (or, for an archive, unless the archive changed since). The name of a
 * bundle already in the store is accepted as a source too.
 */
export interface SourcePolicy {
  /**
   * The workspace root (--root): relative local sources resolve against it, and a local source
   * must be inside it or inside the store. Without it (tests of the store alone) any path is taken.
   */
  root?: string;
  /** Where downloads may go. Default: Replicated's hosts only. */
  urls?: UrlPolicy;
}

export class BundleStore {
  readonly dir: string;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    dir: string,
    private readonly policy: SourcePolicy = {},
  ) {
    this.dir = path.resolve(dir);
  }

  /**
   * Removes a bundle from the store: its directory there (for a directory used in place, only its
   * metadata; the directory itself is never touched). Used when an initialization fails, so that
   * nothing is left behind.
   */
  async remove(name: string, owner?: BundleOwner): Promise<void> {
    if (!isPlainName(name)) return;
    // A tree of up to the extraction's entry limit: removed a few calls at a time (core/remove-tree).
    await removeTree(path.join(this.home(owner), name)).catch(() => {});
  }

  /** Every bundle directory `owner` may see (its own and the shared ones), valid or not, newest first. */
  async list(owner?: BundleOwner): Promise<BundleEntry[]> {
    const home = this.home(owner);
    const entries: BundleEntry[] = [];
    for (const dir of home === this.dir ? [home] : [home, this.dir]) {
      let dirents: Dirent[];
      try {
        dirents = await readdir(dir, { withFileTypes: true });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw storageError(`Cannot read the bundle store ${this.dir}`, err);
      }
      for (const d of dirents) {
        if (d.name.startsWith('.') || !d.isDirectory()) continue;
        if (!this.visible(await readMetadata(path.join(dir, d.name)), owner)) continue;
        const entry = await this.describe(dir, d.name).catch(() => null);
        if (entry) entries.push(entry);
      }
    }
    return entries.sort((a, b) => (a.added_at === b.added_at ? a.name.localeCompare(b.name) : a.added_at < b.added_at ? 1 : -1));
  }

  /** One bundle by name that `owner` may see (its own first, then a shared one), or null. */
  async get(name: string, owner?: BundleOwner): Promise<BundleEntry | null> {
    if (!isPlainName(name)) return null;
    const home = this.home(owner);
    for (const dir of home === this.dir ? [home] : [home, this.dir]) {
      const st = await lstat(path.join(dir, name)).catch(() => null);
      if (!st?.isDirectory()) continue;
      if (!this.visible(await readMetadata(path.join(dir, name)), owner)) continue;
      return this.describe(dir, name);
    }
    return null;
  }

  /** Where `owner`'s bundles are kept: the top of the store (the stdio user, the operator) or `.keys/<id>/`. */
  private home(owner: BundleOwner): string {
    if (owner === undefined || owner === LOCAL_OWNER) return this.dir;
    return path.join(this.dir, KEYS_DIR, ownerDirName(owner));
  }

  /** May `owner` see a bundle with this metadata? Its own, and those without an owner (shared). */
  private visible(meta: BundleMetadata | null, owner: BundleOwner): boolean {
    return owner === undefined || meta?.owner === undefined || meta.owner === owner;
  }

  /**
   * Where a local source's real path lies in the store, for `owner`: 'outside' the store,
   * 'hidden' (another key's bundle or directory, or the store's own files: answered as missing),
   * or the bundle directory it is in (`name` undefined for the store itself or the owner's home).
   */
  private async placeInStore(real: string, owner: BundleOwner): Promise<StorePlace> {
    const storeReal = await realpath(this.dir).catch(() => null);
    if (storeReal === null || !isInside(storeReal, real)) return 'outside';
    const parts = path.relative(storeReal, real).split(path.sep).filter(Boolean);
    let base = this.dir;
    if (parts[0] === KEYS_DIR) {
      const home = this.home(owner);
      if (home === this.dir || parts[1] !== path.basename(home)) return 'hidden';
      base = home;
      parts.splice(0, 2);
    }
    const name = parts[0];
    if (name === undefined) return { dir: base };
    if (name.startsWith('.')) return 'hidden';
    if (!this.visible(await readMetadata(path.join(base, name)), owner)) return 'hidden';
    return { dir: base, name };
  }

  /** Adds a bundle from `source`: a URL (downloaded: see isUrlSource), a local archive or directory, or a stored bundle's name. */
  add(source: string, options: AddOptions = {}): Promise<AddResult> {
    const run = this.chain.then(() => this.addNow(source, options));
    this.chain = run.catch(() => {});
    return run;
  }

  private async addNow(source: string, options: AddOptions): Promise<AddResult> {
    if (typeof source !== 'string' || source.trim() === '') {
      throw new BundleError('BundleNotFoundError', 'Bundle source is empty: give a .tar.gz/.tgz file, an extracted bundle directory or an http(s) URL');
    }
    try {
      await mkdir(this.home(options.owner), { recursive: true });
    } catch (err) {
      throw storageError(`Cannot create the bundle store ${this.dir}`, err);
    }
    if (isUrlSource(source)) return this.addUrl(source, options);

    const local = await this.localSource(source, options.owner);
    const st = local === null ? null : await stat(local.real).catch(() => null);
    if (!local || !st) {
      const stored = await this.get(source, options.owner);
      if (stored?.source && stored.kind) return { ...stored, source: stored.source, kind: stored.kind, reused: true };
      // A bundle directory the operator put in the store (no metadata) opens by its name too.
      if (stored?.valid && stored.kind === null) return { ...stored, source: stored.path, kind: 'directory', reused: true };
      throw new BundleError('BundleNotFoundError', `Bundle '${source}' not found: give a .tar.gz/.tgz file, an extracted bundle directory, an http(s) URL, or the name of a bundle in ${this.dir}`);
    }
    // The real path the containment check found, not the path resolved again (a name swapped for a link in between).
    const real = local.real;
    if (st.isDirectory()) {
      if (real === path.parse(real).root || (typeof local.place === 'object' && local.place.name === undefined)) {
        throw new BundleError('SecurityError', `Bundle source ${source} is not a bundle directory: give the directory an extracted bundle is in`);
      }
      return this.addDirectory(real, typeof local.place === 'object' ? local.place : undefined, options);
    }
    if (st.isFile()) return this.addArchive(real, st, options);
    throw new BundleError('BundleNotFoundError', `Bundle source ${source} is neither a file nor a directory`);
  }

  /**
   * The absolute path of a local source, contained: inside the workspace root or the store (by
   * real path, so links cannot lead out), and inside the store only in the owner's own or a shared
   * bundle; null when it does not exist there, or is another key's (it may still be the name of a
   * bundle in the store). Outside both, missing or not, is a SecurityError.
   */
  private async localSource(source: string, owner: BundleOwner): Promise<{ real: string; place: StorePlace } | null> {
    if (source.includes('\0')) throw new BundleError('SecurityError', 'Bundle source contains a NUL byte');
    const expanded = source.startsWith('~/') ? path.join(os.homedir(), source.slice(2)) : source;
    const place = async (real: string) => {
      const where = await this.placeInStore(real, owner);
      return where === 'hidden' ? null : { real, place: where };
    };
    if (this.policy.root === undefined) {
      const real = await realpath(path.resolve(expanded)).catch(() => null);
      return real === null ? null : place(real);
    }
    const abs = path.resolve(this.policy.root, expanded);
    const roots: string[] = [];
    for (const r of [this.policy.root, this.dir]) {
      const real = await realpath(r).catch(() => null);
      if (real !== null) roots.push(real);
    }
    let missing = false;
    for (const r of roots) {
      const where = containment(r, abs);
      // Resolved once: what was found inside is what is added.
      if (where.kind === 'inside') return place(where.real);
      if (where.kind === 'missing') missing = true;
    }
    if (missing) return null;
    throw new BundleError(
      'SecurityError',
      `Bundle source ${source} is outside the workspace root ${roots[0] ?? this.policy.root} and the bundle store ${this.dir}: put the bundle inside one of them (relative paths start at the workspace root), or give an http(s) URL`,
    );
  }

  private async addArchive(archive: string, st: Stats, options: AddOptions): Promise<AddResult> {
    const { owner } = options;
    const existing = await this.findBySource(owner, 'archive', archive);
    const unchanged = existing && existing.meta.archive_size === st.size && existing.meta.archive_mtime_ms === st.mtimeMs;
    if (existing && unchanged && !options.force) return this.result(owner, existing.name, true);
    const name = existing?.name ?? (await this.uniqueName(owner, nameFromFile(path.basename(archive))));
    const extracted = await this.extract(archive, name, options);
    await this.writeMetadata(owner, name, {
      version: 1,
      name,
      ...ownerOf(existing, owner),
      kind: 'archive',
      source: archive,
      added_at: new Date().toISOString(),
      size_bytes: extracted.bytes,
      entries: extracted.entries,
      archive_size: st.size,
      archive_mtime_ms: st.mtimeMs,
    });
    return this.result(owner, name, false);
  }

  private async addUrl(url: string, options: AddOptions): Promise<AddResult> {
    const { owner } = options;
    const existing = await this.findBySource(owner, 'url', url);
    if (existing && !options.force) return this.result(owner, existing.name, true);
    const name = existing?.name ?? (await this.uniqueName(owner, nameFromUrl(url)));
    const file = path.join(this.home(owner), `.download-${name}-${randomBytes(4).toString('hex')}.tar.gz`);
    try {
      // Downloading (with the HTTP client) loads with the first URL, not at start.
      const { download, tokenFromEnv } = await import('./download.js');
      await download(url, file, {
        ...(this.policy.urls ? { policy: this.policy.urls } : {}),
        ...options.download,
        token: options.token ?? tokenFromEnv(),
        signal: options.signal,
        onProgress: options.onProgress && ((bytes, total) => options.onProgress!({ phase: 'download', bytes, total })),
      });
      const extracted = await this.extract(file, name, options);
      await this.writeMetadata(owner, name, {
        version: 1,
        name,
        ...ownerOf(existing, owner),
        kind: 'url',
        source: shownSource(url),
        source_sha256: sha256(url),
        added_at: new Date().toISOString(),
        size_bytes: extracted.bytes,
        entries: extracted.entries,
      });
    } finally {
      await rm(file, { force: true }).catch(() => {});
    }
    return this.result(owner, name, false);
  }

  private async addDirectory(dir: string, inStore: { dir: string; name?: string } | undefined, options: AddOptions): Promise<AddResult> {
    const { owner } = options;
    if (inStore?.name !== undefined) {
      // A directory inside the store (in a bundle the owner may see): the bundle it belongs to.
      const stored = await this.describe(inStore.dir, inStore.name);
      if (stored.source && stored.kind) return { ...stored, source: stored.source, kind: stored.kind, reused: true };
    }
    const existing = await this.findBySource(owner, 'directory', dir);
    if (existing && !options.force) return this.result(owner, existing.name, true);
    const name = existing?.name ?? (await this.uniqueName(owner, nameFromFile(path.basename(dir))));
    await mkdir(path.join(this.home(owner), name), { recursive: true });
    await this.writeMetadata(owner, name, {
      version: 1,
      name,
      ...ownerOf(existing, owner),
      kind: 'directory',
      source: dir,
      path: dir,
      added_at: new Date().toISOString(),
      size_bytes: await treeSize(dir),
    });
    return this.result(owner, name, false);
  }

  private async extract(archive: string, name: string, options: AddOptions) {
    try {
      // Extraction (with tar) loads with the first archive, not at start.
      const { extractBundle } = await import('./extract.js');
      return await extractBundle(
        archive,
        path.join(this.home(options.owner), name),
        { ...options.limits, signal: options.signal },
        options.onProgress && ((bytes, entries) => options.onProgress!({ phase: 'extract', bytes, total: null, entries })),
      );
    } catch (err) {
      if (err instanceof BundleError) throw err;
      throw storageError('Cannot store the bundle', err);
    }
  }

  private async result(owner: BundleOwner, name: string, reused: boolean): Promise<AddResult> {
    const entry = await this.describe(this.home(owner), name);
    return { ...entry, source: entry.source ?? '', kind: entry.kind ?? 'archive', reused };
  }

  /** The bundle `name` in the directory `home` (the top of the store or a key's). */
  private async describe(home: string, name: string): Promise<BundleEntry> {
    const dir = path.join(home, name);
    const meta = await readMetadata(dir);
    const bundlePath = meta?.kind === 'directory' && meta.path ? meta.path : dir;
    const base = {
      name,
      path: bundlePath,
      // Metadata written before sources were redacted may still hold a signed URL: never shown.
      source: meta?.source === undefined ? null : shownSource(meta.source),
      kind: meta?.kind ?? null,
      size_bytes: meta?.size_bytes ?? 0,
      added_at: meta?.added_at ?? (await stat(dir)).mtime.toISOString(),
    };
    const st = await stat(bundlePath).catch(() => null);
    if (!st?.isDirectory()) {
      return { ...base, root: bundlePath, valid: false, reason: `the bundle directory ${bundlePath} no longer exists` };
    }
    if (!meta) base.size_bytes = await treeSize(dir);
    const found = await findClusterRoot(bundlePath);
    if (found && meta?.kind === 'directory' && !isStillReal(found)) {
      // Recorded as a real path when added: a link now in its place (or above it) leads elsewhere.
      return { ...base, root: found, valid: false, reason: `the bundle directory ${found}, or a directory above it, was replaced by a link since the bundle was added: add it again` };
    }
    if (found) return { ...base, root: await realpath(found), valid: true };
    return { ...base, root: await bundleRoot(bundlePath), valid: false, reason: NO_CLUSTER_DIR };
  }

  /** The owner's bundle (in its own directory) added from this source, if any. */
  private async findBySource(owner: BundleOwner, kind: BundleKind, source: string): Promise<{ name: string; meta: BundleMetadata } | null> {
    const home = this.home(owner);
    let dirents: Dirent[];
    try {
      dirents = await readdir(home, { withFileTypes: true });
    } catch {
      return null;
    }
    const hash = kind === 'url' ? sha256(source) : undefined;
    for (const d of dirents) {
      if (d.name.startsWith('.') || !d.isDirectory()) continue;
      const meta = await readMetadata(path.join(home, d.name));
      if (!meta || meta.kind !== kind || !this.visible(meta, owner)) continue;
      if (hash !== undefined ? meta.source_sha256 === hash || (meta.source_sha256 === undefined && meta.source === source) : meta.source === source) return { name: d.name, meta };
    }
    return null;
  }

  /**
   * A free name in the owner's directory, also unlike the shared bundles it sees (never unlike
   * another key's: the name it gets tells nothing about what other keys hold).
   */
  private async uniqueName(owner: BundleOwner, base: string): Promise<string> {
    const home = this.home(owner);
    const taken = async (name: string) => {
      if (await lstat(path.join(home, name)).catch(() => null)) return true;
      if (home === this.dir) return false;
      const shared = await lstat(path.join(this.dir, name)).catch(() => null);
      return shared?.isDirectory() === true && this.visible(await readMetadata(path.join(this.dir, name)), owner);
    };
    for (let i = 1; ; i++) {
      const candidate = i === 1 ? base : `${base}-${i}`;
      if (!(await taken(candidate))) return candidate;
    }
  }

  private async writeMetadata(owner: BundleOwner, name: string, meta: BundleMetadata): Promise<void> {
    const file = path.join(this.home(owner), name, METADATA_FILE);
    try {
      await writeFileAtomic(file, `${JSON.stringify(meta, null, 2)}\n`);
    } catch (err) {
      throw storageError(`Cannot write the bundle metadata ${file}`, err);
    }
  }
}

async function readMetadata(dir: string): Promise<BundleMetadata | null> {
  try {
    const data = JSON.parse(await readFile(path.join(dir, METADATA_FILE), 'utf8')) as Partial<BundleMetadata>;
    if (typeof data !== 'object' || data === null || typeof data.source !== 'string' || typeof data.kind !== 'string') return null;
    return data as BundleMetadata;
  } catch {
    return null;
  }
}

/**
 * The directory a bundle's files start at: the one holding `cluster-resources/` (or
 * `cluster-info/`), which is `path` itself or one level down (archives usually nest everything in
 * `support-bundle-<date>/`). Without either, a lone subdirectory is descended into; otherwise
 * `path` itself. Always a real path.
 */
export async function bundleRoot(dir: string): Promise<string> {
  const found = await findClusterRoot(dir);
  if (found) return realpath(found);
  const visible = (await readdir(dir, { withFileTypes: true })).filter((d) => !d.name.startsWith('.'));
  if (visible.length === 1 && visible[0]!.isDirectory()) return realpath(path.join(dir, visible[0]!.name));
  return realpath(dir);
}

/** `dir` if it holds cluster-resources/ or cluster-info/, else the first subdirectory (by name) that does. */
async function findClusterRoot(dir: string): Promise<string | null> {
  if (await hasClusterDir(dir)) return dir;
  let dirents: Dirent[];
  try {
    dirents = await readdir(dir, { withFileTypes: true });
  } catch {
    return null;
  }
  const subdirs = dirents
    .filter((d) => d.isDirectory() && !d.name.startsWith('.'))
    .map((d) => d.name)
    .sort();
  for (const name of subdirs) {
    if (await hasClusterDir(path.join(dir, name))) return path.join(dir, name);
  }
  return null;
}

async function hasClusterDir(dir: string): Promise<boolean> {
  for (const name of ['cluster-resources', 'cluster-info']) {
    const st = await stat(path.join(dir, name)).catch(() => null);
    if (st?.isDirectory()) return true;
  }
  return false;
}

/** Bytes of regular files under `dir` (links not followed), counting at most 500,000 entries. */
async function treeSize(dir: string): Promise<number> {
  let total = 0;
  let seen = 0;
  const stack = [dir];
  while (stack.length > 0 && seen < 500_000) {
    const current = stack.pop()!;
    let handle;
    try {
      handle = await opendir(current);
    } catch {
      continue;
    }
    for await (const d of handle) {
      if (++seen >= 500_000) break;
      const p = path.join(current, d.name);
      if (d.isDirectory()) stack.push(p);
      else if (d.isFile()) total += (await lstat(p).catch(() => null))?.size ?? 0;
    }
  }
  return total;
}

/**
 * A source as answers show it: a URL without its query string, fragment and credentials (a
 * signed URL's query is a credential: `?…` marks that there was one); a path as it is.
 */
export function shownSource(source: string): string {
  if (!isUrlSource(source)) return source;
  try {
    return redact(new URL(source));
  } catch {
    return source.replace(/[?#].*$/s, '?…');
  }
}

/** The owner a bundle's metadata records: the existing bundle's (re-extracted in place), else the adder's. */
function ownerOf(existing: { meta: BundleMetadata } | null, owner: BundleOwner): { owner?: string } {
  const recorded = existing ? existing.meta.owner : owner;
  return recorded === undefined ? {} : { owner: recorded };
}

/** A key's directory name in `.keys/`: its id when that is a plain name, else a hash of it. */
function ownerDirName(owner: string): string {
  return /^[A-Za-z0-9_-]{1,64}$/.test(owner) ? owner : `~${sha256(owner).slice(0, 32)}`;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** `support-bundle-2025-04-11T14_05_31.tar.gz` -> `support-bundle-2025-04-11T14_05_31`. */
export function nameFromFile(basename: string): string {
  return sanitizeName(basename.replace(/\.(tar\.gz|tgz|tar)$/i, ''));
}

/** Vendor Portal URLs -> `bundle-<slug>`; other URLs -> the file name, else `bundle-<hash>`. */
export function nameFromUrl(url: string): string {
  const slug = vendorPortalSlug(url);
  if (slug !== null) return sanitizeName(`bundle-${slug}`);
  let base = '';
  try {
    base = path.posix.basename(new URL(url).pathname);
  } catch {
    // fall through to the hash
  }
  const name = nameFromFile(base);
  return name === 'bundle' ? `bundle-${createHash('sha256').update(url).digest('hex').slice(0, 8)}` : name;
}

function sanitizeName(raw: string): string {
  const name = raw
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^[.\-_]+/, '')
    .replace(/[.\-_]+$/, '')
    .slice(0, 100);
  return name === '' ? 'bundle' : name;
}

function isPlainName(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !name.includes('/') && !name.includes('\0') && !name.startsWith('.');
}

function storageError(what: string, err: unknown): BundleError {
  const e = err as NodeJS.ErrnoException;
  if (e?.code === 'ENOSPC' || e?.code === 'EDQUOT') return new BundleError('StorageError', `Insufficient disk space for the bundle store (${e.message})`, { cause: err });
  return new BundleError('StorageError', `${what}: ${e?.message ?? String(err)}`, { cause: err });
}

/** True when `add` downloads `source` (an http(s) URL) rather than reading a local path or a stored name. */
export function isUrlSource(source: string): boolean {
  return /^https?:\/\//i.test(source);
}
