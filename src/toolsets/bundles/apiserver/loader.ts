import { closeSync, readFile as readFd, type Stats } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { deserialize } from 'node:v8';
import { openInside } from '../../../core/paths.js';
import { workerEntry, WorkerJobError, WorkerPool, WorkerStalledError } from '../../../core/workers.js';
import { bundleBudget, mb, type ModelBounds, type ModelBudget } from './budget.js';
import type { K8sObject } from './json.js';
import { MAX_OBJECT_BYTES, MAX_OBJECT_KEYS, parseResourceText, STOP, type ItemBatch, type LoadedFile, type OversizedObject, type ParseJob, type ParseResult } from './parse.js';
import { failure, type Status } from './status.js';

export { toLoadedFile, type LoadedFile } from './parse.js';

/**
 * Files up to these sizes are parsed on the event loop (no thread round trip for kubectl to
 * wait on); bigger ones on the parse thread. Measured on pod lists: JSON parses at about 10 µs
 * a KB (240 KB in 2-3 ms), YAML (the yaml package) at about 1 ms a KB (4 KB in 3-7 ms, 20 KB in
 * 21-27 ms, 240 KB in 210-345 ms), so YAML goes to the thread from a few KB.
 */
export const INLINE_BYTES = { json: 256 * 1024, yaml: 4 * 1024 };
/** Longest a parse may take, of its thread's CPU time (a 12 MB YAML of 60,000 pods takes 12-22 s, a 222 MB JSON about 2.5 s). */
export const PARSE_TIMEOUT_MS = 60_000;
/**
 * Heap a parse thread may use. Measured: a 12 MB YAML of 60,000 pods needs about 1.2 GB (the yaml
 * package builds a document model first; under 1.5 GB it runs out) and parses in 12 s with 3 GB,
 * 20-22 s with 1.5-2 GB (the collector runs near the bound); a 222 MB JSON of 400,000 pods needs
 * about 200 MB. A parse past it ends its thread only, not the server.
 */
export const PARSE_HEAP_MB = 3072;
/** Largest resource file parsed at all (V8 strings stop at 512 MB; the parsed objects take several times the text). */
export const MAX_RESOURCE_FILE_BYTES = 256 * 1024 * 1024;

let pool: WorkerPool | null = null;

/** The parse threads (core/workers.ts; started on first use, kept for the next files). */
function parsePool(): WorkerPool {
  pool ??= new WorkerPool({ name: 'bundle resource files', entry: workerEntry(import.meta.url, 'parse-worker'), resourceLimits: { maxOldGenerationSizeMb: PARSE_HEAP_MB } });
  return pool;
}

/**
 * A resource file that was not parsed because it is past a bound (size, the parse's time or
 * memory): the request that needs it is answered `status`, a Kubernetes Status kubectl prints.
 */
export class ResourceFileError extends Error {
  override name = 'ResourceFileError';
  constructor(readonly status: Status) {
    super(status.message);
  }
}

/** `pods/default.yaml`: a resource file as named in messages (its directory says the resource). */
function shownName(file: string): string {
  return `${path.basename(path.dirname(file))}/${path.basename(file)}`;
}

export interface FileCacheBounds {
  /** PARSE_TIMEOUT_MS by default. */
  parseTimeoutMs?: number;
  /** What this bundle's parsed objects may hold (budget.ts BUNDLE_MODEL_BOUNDS by default). */
  model?: ModelBounds;
  /** The budget shared with the server's other bundles, or with its key's (budget.ts KeyShares; serverModel by default). */
  serverModel?: ModelBudget;
}

/** What a file's objects were charged (budget.ts), kept by its LoadedFile until a normalized copy takes them over (claim). */
interface Charge {
  bytes: number;
  objects: number;
}

/**
 * Reads and parses bundle files at most once each. Bundles can be hundreds of megabytes, so
 * nothing is read until a request needs it, and concurrent requests share one parse.
 */
export class FileCache {
  private readonly files = new Map<string, Promise<LoadedFile>>();
  private readonly dirs = new Map<string, Promise<string[]>>();
  /** Why a file yielded nothing (a parse error), by path: sent to clients as warnings. */
  readonly problems = new Problems();
  /** What this bundle's parsed objects hold on the main thread, within the server's budget (budget.ts). */
  readonly budget: ModelBudget;
  /** What each parsed file was charged, until a normalized copy takes it over (claim). */
  private readonly charges = new WeakMap<LoadedFile, Charge>();
  /** Each parsed file's serialized bytes (or its text's, parsed on the event loop), to charge a second copy of it. */
  private readonly sizes = new WeakMap<LoadedFile, number>();

  /** `realRoot`: the bundle's real path; files whose path leads out of it (links) are never read. */
  constructor(
    private readonly realRoot?: string,
    private readonly bounds: FileCacheBounds = {},
  ) {
    this.budget = bundleBudget(this, bounds.model, bounds.serverModel);
  }

  /**
   * A bundle file or directory opened and checked inside the bundle (core/paths openInside), or
   * undefined: what was checked is what is read, through `fd` (close it), never the path again.
   */
  open(file: string, type: 'file' | 'directory' | 'any' = 'any'): { fd: number; stats: Stats } | undefined {
    const opened = openInside(this.realRoot ?? '/', file, { type });
    return opened.kind === 'inside' ? { fd: opened.fd, stats: opened.stats } : undefined;
  }

  /**
   * A file's objects, parsed once and charged to the bundle's budget. A file past the budget yields
   * none and a problem (kubectl's Warning, bundle_summary's "unreadable"): left out for good when
   * past this bundle's budget, which only grows; past the server's, `transient` and not kept, so a
   * later request tries again once other bundles are gone.
   */
  load(file: string): Promise<LoadedFile> {
    let p = this.files.get(file);
    if (!p) {
      const loading = this.parse(file);
      p = loading;
      this.files.set(file, p);
      void loading.then(
        (loaded) => {
          if (loaded.transient && this.files.get(file) === loading) this.files.delete(file);
        },
        () => undefined,
      );
    }
    return p;
  }

  /**
   * Called by each user of a loaded file (Bundle's normalized listing) once it holds its own copy
   * of the objects, `kept` or not (none of the type asked for): the first takes the file's charge
   * over and the cache lets go of the parsed file, so each object is held once; a later user's copy
   * is charged anew. Returns the problem when that copy is past the budget (then it keeps nothing).
   */
  claim(file: string, loaded: LoadedFile, kept: boolean): string | undefined {
    const charge = this.charges.get(loaded);
    if (charge === undefined) {
      if (!kept || loaded.items.length === 0) return undefined;
      const bytes = this.sizes.get(loaded) ?? 0;
      const refused = this.budget.charge(bytes, loaded.items.length);
      return refused ? budgetProblem(file, refused, bytes, loaded.items.length) : undefined;
    }
    this.charges.delete(loaded);
    if (this.files.has(file)) this.files.delete(file);
    if (!kept) this.budget.release(charge.bytes, charge.objects);
    return undefined;
  }

  /**
   * A file's items. A file that does not parse yields none and a problem (a warning to clients);
   * one past a bound rejects with ResourceFileError, and stays rejected (the file never changes).
   */
  private async parse(file: string): Promise<LoadedFile> {
    const json = file.endsWith('.json');
    // A bundle already at its budget reads no more files.
    const full = this.budget.full();
    if (full) return this.leftOut(file, budgetProblem(file, full, 0, 0), full !== this.budget);
    let bytes: Buffer;
    try {
      bytes = await this.readBytes(file);
    } catch (err) {
      if (err instanceof ResourceFileError) throw err;
      return this.skipped(file, err);
    }
    if (bytes.length <= (json ? INLINE_BYTES.json : INLINE_BYTES.yaml)) {
      let loaded: LoadedFile;
      try {
        loaded = parseResourceText(bytes.toString('utf8'), json);
      } catch (err) {
        return this.skipped(file, err);
      }
      // The text's size stands for the serialized one (they are close for JSON; YAML's text is bigger).
      return this.charged(file, loaded, bytes.length) ?? this.kept(file, loaded, bytes.length);
    }
    return this.parseOffThread(file, bytes, json);
  }

  /** Charges a file parsed on the event loop; the file left out when past the budget. */
  private charged(file: string, loaded: LoadedFile, bytes: number): LoadedFile | undefined {
    const refused = this.budget.charge(bytes, loaded.items.length);
    return refused ? this.leftOut(file, budgetProblem(file, refused, bytes, loaded.items.length), refused !== this.budget) : undefined;
  }

  /** A file whose objects the budget holds now: its charge kept for claim(), its earlier problem (a refusal by the server's budget) gone. */
  private kept(file: string, loaded: LoadedFile, bytes: number): LoadedFile {
    this.charges.set(loaded, { bytes, objects: loaded.items.length });
    this.sizes.set(loaded, bytes);
    if (this.problems.get(file)?.includes(BUDGET_MARK)) this.problems.delete(file);
    return loaded;
  }

  /** A file left out for the budget: no objects, and why as its problem; `transient` when the server's budget refused it. */
  private leftOut(file: string, problem: string, transient: boolean): LoadedFile {
    this.problems.set(file, problem);
    return { items: [], ...(transient ? { transient } : {}) };
  }

  private skipped(file: string, err: unknown): LoadedFile {
    this.problems.set(file, `${path.basename(file)} skipped: ${err instanceof Error ? err.message : String(err)}`);
    return { items: [] };
  }

  /** A bundle file's bytes, read through a checked descriptor; throws when it is missing or leads out, ResourceFileError past MAX_RESOURCE_FILE_BYTES. */
  private async readBytes(file: string): Promise<Buffer> {
    const opened = this.open(file, 'file');
    if (opened === undefined) throw new Error('it is missing, or a link leading out of the bundle');
    try {
      if (opened.stats.size > MAX_RESOURCE_FILE_BYTES) {
        throw new ResourceFileError(
          failure(
            500,
            'InternalError',
            `${shownName(file)} of this support bundle is ${opened.stats.size} bytes, over the ${mb(MAX_RESOURCE_FILE_BYTES)} a resource file is parsed to: it is not served`,
          ),
        );
      }
      return await readFdBytes(opened.fd);
    } finally {
      closeSync(opened.fd);
    }
  }

  /**
   * Parses `bytes` on the parse thread: the items come back in batches, each deserialized here as
   * it arrives, so no one step holds the event loop long. Bounded in CPU time and heap; past
   * either, ResourceFileError.
   */
  private async parseOffThread(file: string, bytes: Buffer, json: boolean): Promise<LoadedFile> {
    const timeoutMs = this.bounds.parseTimeoutMs ?? PARSE_TIMEOUT_MS;
    const items: K8sObject[] = [];
    let bytesIn = 0;
    let refused: ModelBudget | undefined;
    // Moved to the thread when the memory is the buffer's own (a big file's always is), else copied.
    const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
    const job: ParseJob = { bytes: own ? bytes : new Uint8Array(bytes), json };
    let result: ParseResult;
    try {
      result = await parsePool().run<ParseResult>(job, {
        timeoutMs,
        transfer: [job.bytes.buffer as ArrayBuffer],
        onRequest: async (request) => {
          const batch = (request as ItemBatch).bytes;
          const count = (request as ItemBatch).count;
          // Charged before it is deserialized: past the budget, the thread is told to stop and the file is left out.
          refused ??= this.budget.charge(batch.length, count);
          if (refused) return { value: STOP };
          bytesIn += batch.length;
          for (const item of deserialize(batch) as K8sObject[]) items.push(item);
          return { value: null };
        },
      });
    } catch (err) {
      this.budget.release(bytesIn, items.length);
      if (err instanceof WorkerJobError) return this.skipped(file, err);
      const shown = shownName(file);
      if (err instanceof WorkerStalledError) {
        throw new ResourceFileError(failure(504, 'Timeout', `${shown} of this support bundle took longer than ${timeoutMs / 1000} s of CPU time to parse and was stopped: it is not served`));
      }
      if (err instanceof Error && err.name === 'WorkerDiedError') {
        throw new ResourceFileError(
          failure(500, 'InternalError', `${shown} of this support bundle needed more than the ${PARSE_HEAP_MB} MB its parse may use and was stopped: it is not served (${err.message})`),
        );
      }
      throw err;
    }
    if (refused) {
      this.budget.release(bytesIn, items.length);
      return this.leftOut(file, budgetProblem(file, refused, bytesIn, items.length, true), refused !== this.budget);
    }
    if (items.length !== result.count) throw new Error(`${shownName(file)}: ${result.count} objects parsed, ${items.length} received`);
    if (result.oversized.length > 0) this.problems.set(file, oversizedProblem(file, result.oversized));
    return this.kept(file, { ...(result.listKind !== undefined ? { listKind: result.listKind } : {}), items }, bytesIn);
  }

  /**
   * A JSON file's parsed content as is (not as a list), or undefined when absent, invalid, or
   * bigger than INLINE_BYTES.json (parsed on the event loop; such files, cluster_version.json,
   * are a few hundred bytes).
   */
  async loadRaw(file: string): Promise<unknown> {
    const opened = this.open(file, 'file');
    if (opened === undefined) return undefined;
    try {
      if (opened.stats.size > INLINE_BYTES.json) return undefined;
      return JSON.parse(await readFdText(opened.fd, 'utf8')) as unknown;
    } catch {
      return undefined;
    } finally {
      closeSync(opened.fd);
    }
  }

  /** Regular files of a directory (no subdirectories), or [] when it is absent. */
  listDir(dir: string): Promise<string[]> {
    let p = this.dirs.get(dir);
    if (!p) {
      const opened = this.open(dir, 'directory');
      // Read through the checked descriptor (/proc/self/fd/N is the directory that was checked).
      p =
        opened === undefined
          ? Promise.resolve([])
          : readdir(`/proc/self/fd/${opened.fd}`, { withFileTypes: true })
              .then(
                (entries) =>
                  entries
                    .filter((e) => e.isFile())
                    .map((e) => e.name)
                    .sort(),
                () => [],
              )
              .finally(() => closeSync(opened.fd));
      this.dirs.set(dir, p);
    }
    return p;
  }
}

/**
 * Files' problems by path, counting its changes: what is worked out from them (Bundle.warnings, per listing) is kept until
 * they change, not worked out again on every request.
 */
export class Problems extends Map<string, string> {
  changes = 0;

  override set(file: string, problem: string): this {
    if (this.get(file) !== problem) this.changes++;
    return super.set(file, problem);
  }

  override delete(file: string): boolean {
    const had = super.delete(file);
    if (had) this.changes++;
    return had;
  }

  override clear(): void {
    if (this.size > 0) this.changes++;
    super.clear();
  }
}

/** Every budget problem says it, so a later load that fits can tell its own problem from a parse's. */
const BUDGET_MARK = 'its parsed objects may hold';

/**
 * The problem of a file left out for the budget (budget.ts), said as the per-file bound says it:
 * the file, the bound, what is held; `more` when the file was refused part way through (its size unknown).
 */
function budgetProblem(file: string, budget: ModelBudget, bytes: number, objects: number, more = false): string {
  const adding = bytes > 0 || objects > 0 ? `${more ? 'at least ' : ''}${mb(bytes)} and ${objects} objects more` : 'anything more';
  return (
    `${shownName(file)} of this support bundle was left out: ${adding} would take ${budget.what} past the ${budget.describe()} ${BUDGET_MARK} ` +
    `(${mb(budget.bytes)} and ${budget.objects} objects held): it is not served${budget.remedy ? `; ${budget.remedy}` : ''}`
  );
}

/** The warning for objects left out of a file for their size: how many, the first few by name and size. */
function oversizedProblem(file: string, oversized: OversizedObject[]): string {
  const big = oversized.filter((o) => o.keys === undefined);
  const wide = oversized.filter((o) => o.keys !== undefined);
  const count = (objects: OversizedObject[]) => (objects.length === 1 ? '1 object' : `${objects.length} objects`);
  const parts: string[] = [];
  if (big.length > 0) {
    parts.push(`${count(big)} left out, bigger than the ${mb(MAX_OBJECT_BYTES)} any object served may be (no cluster stores one over 3 MB): ${names(big, (o) => `${o.name} (${mb(o.bytes)})`)}`);
  }
  if (wide.length > 0) {
    parts.push(`${count(wide)} left out, with a map of more than the ${MAX_OBJECT_KEYS} keys any object served may have in one: ${names(wide, (o) => `${o.name} (${o.keys} keys)`)}`);
  }
  return `${path.basename(file)}: ${parts.join('; ')}`;
}

/** The first three objects as `shown` gives each, and how many more. */
function names(objects: OversizedObject[], shown: (o: OversizedObject) => string): string {
  const first = objects.slice(0, 3).map(shown);
  return `${first.join(', ')}${objects.length > first.length ? ` and ${objects.length - first.length} more` : ''}`;
}

const readFdText = promisify(readFd) as (fd: number, encoding: 'utf8') => Promise<string>;
const readFdBytes = promisify(readFd) as (fd: number) => Promise<Buffer>;

export async function isDirectory(p: string): Promise<boolean> {
  return stat(p).then(
    (s) => s.isDirectory(),
    () => false,
  );
}
