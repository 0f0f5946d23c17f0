import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { isStillReal } from '../../../core/paths.js';
import { TimeSlice } from '../../../core/wait.js';
import { BundleError } from '../errors.js';
import { customResourceTypes, MAX_CUSTOM_TYPES } from './crds.js';
import { isRecord, nameOf, namespaceOf, type K8sObject } from './json.js';
import { FileCache, isDirectory, type FileCacheBounds, type LoadedFile } from './loader.js';
import { Registry } from './registry.js';
import { builtinTypes, groupVersion, type ResourceType, type Source } from './resources.js';

const DATA_EXT = ['.json', '.yaml', '.yml'];

/** A listing's share of the loop per turn, and how many objects go between looks at the clock (a few hundred µs of work). */
const SLICE_MS = 10;
const STEP = 1024;

/** An object of a listing with its sort keys. */
interface Keyed {
  namespace: string;
  name: string;
  object: K8sObject;
}

/** A file's objects of one type; `transient` when the server's budget left them out for now. */
interface Normalized {
  objects: K8sObject[];
  transient: boolean;
}

/** One source file, with the namespace its name stands for (dir layout only). */
interface SourceFile {
  file: string;
  namespace?: string;
}

/** A directory source's files: by the namespace each stands for, and all of them in the directory's order. */
interface DirFiles {
  byNamespace: Map<string, SourceFile>;
  all: SourceFile[];
}

/** A listing as kept: its objects, and an index by name made on the first get that needs one (get()). */
interface Listing {
  objects: K8sObject[];
  byName?: Promise<Map<string, K8sObject>>;
}

/** Most Warning headers one answer carries; past it, one more says how many files were not named. */
export const MAX_WARNINGS = 50;

/**
 * An extracted support bundle seen as Kubernetes objects: finds `cluster-resources/`, works
 * out which resource types it holds, and lists or gets objects with their type fields fixed.
 */
export class Bundle {
  private readonly listed = new Map<string, Promise<Listing>>();
  /** Each directory source's files, walked once (a bundle never changes). */
  private readonly dirFiles = new Map<string, Promise<DirFiles>>();
  /** Each listing's warnings, as they were at a count of the files' problems' changes (FileCache.problems). */
  private readonly warned = new Map<string, { changes: number; warnings: Promise<string[]> }>();
  /** Aborted when the bundle's server closes: a listing still being made (shared, so no one request's signal ends it) stops at its next slice. */
  private readonly closing = new AbortController();

  private constructor(
    /** The directory holding cluster-resources/, cluster-info/, version.yaml... */
    readonly baseDir: string,
    readonly clusterDir: string,
    readonly cache: FileCache,
    readonly registry: Registry,
    /** Files' objects by type, normalized (objects()); the probe's are the real bundle's, so its CRDs are neither parsed nor charged twice. */
    private readonly normalized = new Map<string, Promise<Normalized>>(),
  ) {}

  /** `bounds`: the file cache's (the parse's time, the model's budget), by default loader.ts's and budget.ts's. */
  static async open(root: string, bounds?: FileCacheBounds): Promise<Bundle> {
    // The root as initialize_bundle found it, never resolved again: files leading out of it are not read (core/paths isStillReal).
    const realRoot = path.resolve(root);
    if (!isStillReal(realRoot)) {
      throw new BundleError(
        'NoBundleInitializedError',
        `The bundle directory ${root} is missing, or it or a directory above it was replaced by a link since it was found: initialize the bundle again`,
      );
    }
    const baseDir = await findBaseDir(realRoot);
    const clusterDir = path.join(baseDir, 'cluster-resources');
    const cache = new FileCache(realRoot, bounds);
    const builtins = builtinTypes();
    const crdType = builtins.find((t) => t.plural === 'customresourcedefinitions')!;
    // The registry depends on the bundle's own CRDs, so a first Bundle reads them; it shares
    // the file cache with the real one, so nothing is parsed twice.
    const probe = new Bundle(baseDir, clusterDir, cache, new Registry(builtins, []));
    const held: ResourceType[] = [];
    for (const t of builtins) if (await probe.holds(t)) held.push(t);
    // Every CRD's kind is served, collected objects or not: troubleshoot collects all custom
    // resources and simply writes no file for a kind that has none.
    const crds = await probe.list(crdType);
    const { types: customs, leftOut } = customResourceTypes(crds);
    const notice =
      leftOut > 0
        ? `this support bundle has ${crds.length} CustomResourceDefinitions; the last ${leftOut} of them (by name) are left out: their kinds are not served, as at most ${MAX_CUSTOM_TYPES} custom resource types (a CRD's served versions) are`
        : undefined;
    const registry = new Registry([...builtins, ...customs], [...held, ...customs], notice);
    return new Bundle(baseDir, clusterDir, cache, registry, probe.normalized);
  }

  /**
   * Stops the listings in progress; the bundle serves nothing more, and its model's charge goes
   * back to its key's share and the server's now, not when V8 collects the model (budget.ts).
   */
  close(): void {
    this.closing.abort();
    this.listed.clear();
    this.cache.budget.close();
  }

  private async holds(t: ResourceType): Promise<boolean> {
    for (const s of t.sources) {
      if ('dir' in s ? await isDirectory(path.join(this.clusterDir, s.dir)) : (await this.singleFile(s.file)) !== undefined) return true;
    }
    return false;
  }

  /**
   * Objects of a type, in one namespace or across all, sorted by namespace then name like etcd.
   * A bundle does not change: each listing is made once (de-duplicating and sorting 60,000 pods
   * held the loop 200-300 ms a request) and shared, read-only, by every caller: a copy per call of
   * a million objects, with get()'s scan of it, held the loop 130-240 ms a get (attack 18an Z3).
   */
  async list(t: ResourceType, namespace?: string): Promise<readonly K8sObject[]> {
    return (await this.listing(t, namespace)).objects;
  }

  private listing(t: ResourceType, namespace: string | undefined): Promise<Listing> {
    this.closing.signal.throwIfAborted();
    const key = listingKey(t, namespace);
    let listed = this.listed.get(key);
    if (!listed) {
      const listing = this.listOnce(t, namespace);
      const made: Promise<Listing> = listing.then((l) => ({ objects: l.objects }));
      listed = made;
      this.listed.set(key, made);
      const forget = () => {
        if (this.listed.get(key) === made) this.listed.delete(key);
      };
      // A listing missing a file the server's budget left out for now is made again next time.
      listing.then((l) => l.transient && forget(), forget);
    }
    return listed;
  }

  /**
   * De-duplicates and sorts in time slices: done in one go, 1.5 million pods held the event loop 15 s on the first listing
   * (10 namespace files; one file of them, with the collection-time walk, 51 s on a loaded 2-CPU machine), and every other
   * client with it (attack 18o F2). Now its longest block is ~0.1 s. Each object's namespace and name are read once, not at
   * every comparison, which made the sliced listing quicker in all (5.6 s of CPU, not 15).
   */
  private async listOnce(t: ResourceType, namespace?: string): Promise<{ objects: K8sObject[]; transient: boolean }> {
    const slice = new TimeSlice(SLICE_MS);
    const seen = new Set<string>();
    const keyed: Keyed[] = [];
    let transient = false;
    for (const source of t.sources) {
      for (const sf of await this.sourceFiles(source, t.namespaced ? namespace : undefined)) {
        const normalized = await this.objects(t, sf);
        transient ||= normalized.transient;
        const objects = normalized.objects;
        for (let i = 0; i < objects.length; i++) {
          if (i % STEP === 0) await this.pause(slice);
          const o = objects[i]!;
          const ns = namespaceOf(o);
          const name = nameOf(o);
          const key = `${ns}/${name}`;
          if (seen.has(key)) continue;
          if (t.namespaced && namespace !== undefined && ns !== namespace) continue;
          seen.add(key);
          keyed.push({ namespace: ns, name, object: o });
        }
      }
    }
    const sorted = await sortInSlices(keyed, (a, b) => compareListed(a.namespace, a.name, b.namespace, b.name), slice, this.closing.signal);
    const out: K8sObject[] = new Array<K8sObject>(sorted.length);
    for (let i = 0; i < sorted.length; i++) {
      if (i % STEP === 0) await this.pause(slice);
      out[i] = sorted[i]!.object;
    }
    return { objects: out, transient };
  }

  /** The listing's next share of the loop, unless the bundle was closed meanwhile (then it ends). */
  private async pause(slice: TimeSlice): Promise<void> {
    await slice.pause();
    this.closing.signal.throwIfAborted();
  }

  /**
   * Problems met reading the files behind a listing (shown by kubectl as "Warning: ..."), at most MAX_WARNINGS and a line
   * saying how many more. Worked out again only when the files' problems have changed since: walked per request, the
   * files of 190,000 namespaces held the loop 0.6-2.7 s on every page of a `kubectl get pods -A` (attack 18an Z1).
   */
  warnings(t: ResourceType, namespace?: string): Promise<string[]> {
    this.closing.signal.throwIfAborted();
    const key = listingKey(t, namespace);
    const problems = this.cache.problems;
    if (problems.size === 0 && this.registry.notice === undefined) return Promise.resolve([]);
    const known = this.warned.get(key);
    if (known && known.changes === problems.changes) return known.warnings;
    const warnings = this.warningsOnce(t, namespace);
    const entry = { changes: problems.changes, warnings };
    this.warned.set(key, entry);
    warnings.catch(() => {
      if (this.warned.get(key) === entry) this.warned.delete(key);
    });
    return warnings;
  }

  private async warningsOnce(t: ResourceType, namespace: string | undefined): Promise<string[]> {
    const slice = new TimeSlice(SLICE_MS);
    const out: string[] = [];
    let more = 0;
    for (const source of t.sources) {
      const files = await this.sourceFiles(source, t.namespaced ? namespace : undefined);
      for (let i = 0; i < files.length; i++) {
        if (i % STEP === 0) await this.pause(slice);
        const problem = this.cache.problems.get(files[i]!.file);
        if (problem === undefined) continue;
        if (out.length < MAX_WARNINGS) out.push(problem);
        else more++;
      }
    }
    if (more > 0) out.push(`${more} more files behind this listing have problems, not named here (at most ${MAX_WARNINGS} are)`);
    if (this.registry.notice !== undefined && t.group === 'apiextensions.k8s.io' && t.plural === 'customresourcedefinitions') out.push(this.registry.notice);
    return out;
  }

  /**
   * The object of a type with this name, in `namespace` (namespaced types) or the first of its name across the listing. In
   * one namespace by a binary search of the sorted listing; else by an index by name made in slices on the first such get.
   */
  async get(t: ResourceType, namespace: string | undefined, name: string): Promise<K8sObject | undefined> {
    const listing = await this.listing(t, namespace);
    if (t.namespaced && namespace !== undefined) {
      // Every object of a one-namespace listing is in that namespace (listOnce), so the name decides.
      const i = indexAfter(listing.objects, { namespace, name });
      const o = listing.objects[i - 1];
      return o !== undefined && nameOf(o) === name && namespaceOf(o) === namespace ? o : undefined;
    }
    listing.byName ??= this.indexByName(listing.objects);
    return (await listing.byName).get(name);
  }

  private async indexByName(objects: readonly K8sObject[]): Promise<Map<string, K8sObject>> {
    const slice = new TimeSlice(SLICE_MS);
    const byName = new Map<string, K8sObject>();
    for (let i = 0; i < objects.length; i++) {
      if (i % STEP === 0) await this.pause(slice);
      const name = nameOf(objects[i]);
      // The first of a name in the listing's order, as a scan would find it.
      if (!byName.has(name)) byName.set(name, objects[i]!);
    }
    return byName;
  }

  private async sourceFiles(source: Source, namespace: string | undefined): Promise<SourceFile[]> {
    if ('file' in source) {
      const file = await this.singleFile(source.file);
      return file ? [{ file }] : [];
    }
    const files = await this.filesOf(path.join(this.clusterDir, source.dir));
    if (namespace === undefined) return files.all;
    const one = files.byNamespace.get(namespace);
    return one ? [one] : [];
  }

  /** A directory source's files by namespace, walked once and in slices (a directory used in place has no bound on its entries). */
  private filesOf(dir: string): Promise<DirFiles> {
    let p = this.dirFiles.get(dir);
    if (!p) {
      p = this.walkDir(dir);
      this.dirFiles.set(dir, p);
      const made = p;
      made.catch(() => {
        if (this.dirFiles.get(dir) === made) this.dirFiles.delete(dir);
      });
    }
    return p;
  }

  private async walkDir(dir: string): Promise<DirFiles> {
    const slice = new TimeSlice(SLICE_MS);
    const names = await this.cache.listDir(dir);
    const byName = new Map<string, string>();
    for (let i = 0; i < names.length; i++) {
      if (i % STEP === 0) await this.pause(slice);
      const name = names[i]!;
      const ext = DATA_EXT.find((e) => name.endsWith(e));
      if (!ext) continue;
      const ns = name.slice(0, -ext.length);
      // When a namespace has both .json and .yaml, the JSON is exact and quicker to parse.
      const current = byName.get(ns);
      if (!current || (ext === '.json' && !current.endsWith('.json'))) byName.set(ns, name);
    }
    const byNamespace = new Map<string, SourceFile>();
    const all: SourceFile[] = [];
    let i = 0;
    for (const [ns, name] of byName) {
      if (i++ % STEP === 0) await this.pause(slice);
      const sf = { file: path.join(dir, name), namespace: ns };
      byNamespace.set(ns, sf);
      all.push(sf);
    }
    return { byNamespace, all };
  }

  /** `<base>.json`, else `<base>.yaml`/`.yml`, relative to cluster-resources/. */
  private async singleFile(base: string): Promise<string | undefined> {
    const full = path.join(this.clusterDir, base);
    const names = await this.cache.listDir(path.dirname(full));
    for (const ext of DATA_EXT) if (names.includes(path.basename(full) + ext)) return full + ext;
    return undefined;
  }

  /**
   * A file's objects of type `t`, normalized. The normalized copy is what is kept: the file cache
   * lets go of the parsed file once it is made (FileCache.claim), so each object is held once, not
   * twice (every object lacking kind or apiVersion was copied while the parsed one stayed cached;
   * attack 18r L1). `transient`: the server's budget left the file out for now; not kept.
   */
  private objects(t: ResourceType, sf: SourceFile): Promise<Normalized> {
    const key = `${groupVersion(t)}/${t.plural}|${sf.file}`;
    let p = this.normalized.get(key);
    if (!p) {
      const made = this.cache.load(sf.file).then(async (loaded): Promise<Normalized> => {
        const objects = await normalize(t, loaded, sf.namespace);
        const problem = this.cache.claim(sf.file, loaded, objects.length > 0);
        if (problem !== undefined) {
          this.cache.problems.set(sf.file, problem);
          return { objects: [], transient: false };
        }
        return { objects, transient: loaded.transient === true };
      });
      p = made;
      this.normalized.set(key, p);
      const forget = () => {
        if (this.normalized.get(key) === made) this.normalized.delete(key);
      };
      made.then((n) => n.transient && forget(), forget);
    }
    return p;
  }

  /** `cluster-info/cluster_version.json`'s `info` object (the /version answer), if collected. */
  async version(): Promise<unknown> {
    const loaded = await this.cache.loadRaw(path.join(this.baseDir, 'cluster-info', 'cluster_version.json'));
    return isRecord(loaded) && isRecord(loaded.info) ? loaded.info : undefined;
  }
}

/**
 * Fills in what bundle lists leave out so each item stands alone (kubectl -o json/yaml and
 * Table rows need kind and apiVersion per item), and drops files or items of another kind
 * (a file in a mis-named directory).
 */
async function normalize(t: ResourceType, loaded: LoadedFile, fileNamespace: string | undefined): Promise<K8sObject[]> {
  if (loaded.listKind && loaded.listKind !== `${t.kind}List` && loaded.listKind !== 'List') return [];
  const apiVersion = groupVersion(t);
  const out: K8sObject[] = [];
  // In slices too: one file of 1.5 million pods without kind and apiVersion held the loop 1.4 s here (attack 18o F2).
  const slice = new TimeSlice(SLICE_MS);
  for (let i = 0; i < loaded.items.length; i++) {
    if (i % STEP === 0) await slice.pause();
    const o = loaded.items[i]!;
    if (typeof o.kind === 'string' && o.kind !== t.kind) continue;
    if (!isRecord(o.metadata) || typeof o.metadata.name !== 'string') continue;
    const fixNamespace = t.namespaced && fileNamespace !== undefined && typeof o.metadata.namespace !== 'string';
    if (o.apiVersion === apiVersion && o.kind === t.kind && !fixNamespace) {
      out.push(o);
      continue;
    }
    const metadata = fixNamespace ? { ...o.metadata, namespace: fileNamespace } : o.metadata;
    // Key order as the API server writes it: kind and apiVersion first.
    const fixed: K8sObject = { kind: t.kind, apiVersion, ...o };
    fixed.kind = t.kind;
    fixed.apiVersion = apiVersion;
    fixed.metadata = metadata;
    out.push(fixed);
  }
  return out;
}

/**
 * The order of every listing, namespace then name by code unit (as etcd orders keys): Bundle.list
 * sorts by it and a `continue` token resumes by it (paging.ts), so the two cannot disagree.
 */
/** The key of a listing: a type, and a namespace or all. */
function listingKey(t: ResourceType, namespace: string | undefined): string {
  return `${t.group}/${t.plural}/${namespace ?? ''}`;
}

/** The first index of `sorted` (a listing: by namespace, then name) past `start`: a binary search. */
export function indexAfter(sorted: readonly K8sObject[], start: { namespace: string; name: string }): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const o = sorted[mid]!;
    const c = compareListed(namespaceOf(o), nameOf(o), start.namespace, start.name);
    if (c <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function compareListed(namespaceA: string, nameA: string, namespaceB: string, nameB: string): number {
  return compareCodeUnits(namespaceA, namespaceB) || compareCodeUnits(nameA, nameB);
}

/** Strings by UTF-16 code unit, as `<` orders them (no locale collation, which localeCompare does on every call). */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * A stable sort that gives the loop back between slices: runs of STEP items sorted at once (well under a millisecond each),
 * then merged pairwise, a pause every STEP items written. The same order as one `items.sort(compare)`, which held the loop
 * for seconds on a million items. Returns a new array.
 */
export async function sortInSlices<T>(items: readonly T[], compare: (a: T, b: T) => number, slice: TimeSlice, signal?: AbortSignal): Promise<T[]> {
  const n = items.length;
  let src: T[] = [];
  for (let lo = 0; lo < n; lo += STEP) {
    await slice.pause();
    signal?.throwIfAborted();
    for (const item of items.slice(lo, lo + STEP).sort(compare)) src.push(item);
  }
  let dst = new Array<T>(n);
  for (let width = STEP; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(lo + width, n);
      const hi = Math.min(lo + 2 * width, n);
      let i = lo;
      let j = mid;
      for (let k = lo; k < hi; k++) {
        if (k % STEP === 0) {
          await slice.pause();
          signal?.throwIfAborted();
        }
        // Ties take the left run first: stable, as Array.prototype.sort is.
        dst[k] = j >= hi || (i < mid && compare(src[i]!, src[j]!) <= 0) ? src[i++]! : src[j++]!;
      }
    }
    [src, dst] = [dst, src];
  }
  return src;
}

/**
 * The directory holding `cluster-resources/`: the root itself, or one level down, since
 * bundle archives usually wrap everything in a `<bundle-name>/` folder.
 */
export async function findBaseDir(root: string): Promise<string> {
  if (await isDirectory(path.join(root, 'cluster-resources'))) return root;
  const entries = await readdir(root, { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    if (e.isDirectory() && (await isDirectory(path.join(root, e.name, 'cluster-resources')))) return path.join(root, e.name);
  }
  throw new BundleError('PathNotFoundError', `no cluster-resources/ directory under ${root} or one level below it: this bundle has no cluster resources to serve`);
}
