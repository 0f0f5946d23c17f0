import { randomBytes } from 'node:crypto';
import { link, lstat, mkdir, open, readdir, readFile, rename, rmdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import { DebugkitError, describeError } from '../../../core/errors.js';
import { cacheDir, cachedMocks, cacheMocks } from './cache.js';
import { appendedText, describeSet, loadSet, type SetJobOptions } from './describe.js';
import { validateSetName } from './naming.js';
import { parseMockSet } from './parse.js';
import { serializeMockSet } from './serialize.js';
import { MODELED_KINDS, ZERO_TIME, type KindCounts, type Mock, type MockSetInfo } from './types.js';

export { nameFor, validateSetName } from './naming.js';

/** Keploy's file name for a mock set: `<path>/<mock-set>/mocks.yaml`. */
export const MOCKS_FILE = 'mocks.yaml';
/** A mock set bigger than this is refused rather than read into memory. */
export const MAX_MOCKSET_BYTES = 256 * 1024 * 1024;

/** The file operations `write` uses, replaceable in tests to simulate a failure at any step. */
export interface StoreIo {
  /** Creates `file` (must not exist), writes `data`, flushes it to disk, closes it. */
  writeNew(file: string, data: string): Promise<void>;
  /** Hard-links `existing` as `newPath`; fails with EEXIST when `newPath` exists. */
  link(existing: string, newPath: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  unlink(file: string): Promise<void>;
}

const defaultIo: StoreIo = {
  async writeNew(file, data) {
    const handle = await open(file, 'wx', 0o644);
    try {
      await handle.writeFile(data, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
  },
  link: (existing, newPath) => link(existing, newPath),
  rename: (from, to) => rename(from, to),
  unlink: (file) => unlink(file),
};

const errno = (err: unknown) => (err as NodeJS.ErrnoException | undefined)?.code;

/**
 * The mock sets under one directory (the tools' `path`, `./keploy` by default, resolved by the
 * caller): each set is `<dir>/<name>/mocks.yaml`.
 *
 * Sets are write-once. `write` creates a new set and refuses, with INVALID_ARGUMENT, when the
 * set already has a `mocks.yaml` (valid or corrupt): nothing is ever overwritten. Callers take a
 * free name from `uniqueName` first. The file appears atomically and complete: the YAML is
 * written to a temporary file in the set's directory, flushed, and hard-linked into place (a
 * link never replaces an existing file, so two writers racing for one name cannot clobber each
 * other); on any failure the temporary file (and a set directory this call created) is removed.
 *
 * Symbolic links are not followed inside `dir`: a set whose directory or `mocks.yaml` is a link is
 * not listed, and reading or writing it is refused.
 */
export class MockStore {
  private readonly io: StoreIo;

  /** Where parsed sets are cached (keploy/cache.ts). */
  private readonly cacheDir: string;

  constructor(
    readonly dir: string,
    options: { io?: Partial<StoreIo>; cacheDir?: string } = {},
  ) {
    this.io = { ...defaultIo, ...options.io };
    this.cacheDir = options.cacheDir ?? cacheDir();
  }

  /** `<dir>/<name>/mocks.yaml` (the name is validated). */
  pathOf(name: string): string {
    return path.join(this.dir, validateSetName(name), MOCKS_FILE);
  }

  /**
   * Every mock set, newest first (ties by name). A set whose file cannot be read or parsed is
   * listed with `error` set and no mocks, so one corrupt set never hides the others. A missing
   * `dir` has no sets. Each set is described on a worker thread, bounded (describe.ts, scan.ts): a
   * big set is counted by a scan rather than parsed (`note` says so), and one that takes too long
   * or too much memory is listed with an error saying that. `owner`: whose listing (an API key's
   * id), for sharing the threads fairly.
   */
  async list(owner?: string): Promise<MockSetInfo[]> {
    let entries;
    try {
      entries = await readdir(this.dir, { withFileTypes: true });
    } catch (err) {
      if (errno(err) === 'ENOENT' || errno(err) === 'ENOTDIR') return [];
      throw new DebugkitError('INTERNAL', `Cannot list mock sets in ${this.dir}: ${describeError(err)}`, { cause: err });
    }
    const infos: MockSetInfo[] = [];
    for (const entry of entries) {
      if (!entry.isDirectory() || !isSetName(entry.name)) continue;
      const file = path.join(this.dir, entry.name, MOCKS_FILE);
      let mtime: Date;
      try {
        const st = await lstat(file);
        if (!st.isFile()) continue;
        mtime = st.mtime;
      } catch {
        continue; // a directory without mocks.yaml (reports/, a test set with tests only) is no mock set
      }
      infos.push(await this.describe(entry.name, file, mtime, owner));
    }
    return infos.sort((a, b) => (a.created === b.created ? (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) : a.created < b.created ? 1 : -1));
  }

  /** The newest set that reads without error and holds mocks (what replay uses when no set is named). `owner` as for list. */
  async latest(owner?: string): Promise<MockSetInfo | undefined> {
    return (await this.list(owner)).find((info) => info.error === undefined && info.mocks > 0);
  }

  private async describe(name: string, file: string, mtime: Date, owner?: string): Promise<MockSetInfo> {
    const d = await describeSet(file, MAX_MOCKSET_BYTES, owner);
    return {
      name,
      path: file,
      mocks: d.mocks,
      kinds: d.kinds,
      created: (d.error === undefined ? d.created : undefined) ?? mtime.toISOString(),
      ...(d.error !== undefined ? { error: d.error } : {}),
      ...(d.note !== undefined ? { note: d.note } : {}),
    };
  }

  /**
   * The mocks of set `name`, parsed on the calling thread (tests, the bench; the server's request
   * paths use `load`); NOT_FOUND (naming the sets there are) when it does not exist. `cached`: the
   * parsed set may come from the cache of parsed sets (keploy/cache.ts: same bytes, no YAML
   * parsing); it lacks style marks, so it is not for rewriting the file.
   */
  async read(name: string, options: { cached?: boolean } = {}): Promise<Mock[]> {
    const file = this.pathOf(name);
    await this.refuseLinks(name, file);
    try {
      return await this.readFile(file, options.cached === true);
    } catch (err) {
      throw await this.notFound(name, err);
    }
  }

  /**
   * The mocks of set `name` for replay, parsed on the mock-set worker threads (or taken from the
   * cache of parsed sets) and within their bounds (describe.ts): never on the event loop. A set
   * past them is refused with MockSetBoundError, naming the bound; NOT_FOUND as for `read`.
   * `owner`: whose replay (an API key's id), for sharing the threads fairly; `signal` cancels it.
   */
  async load(name: string, options: SetJobOptions = {}): Promise<Mock[]> {
    const file = this.pathOf(name);
    await this.refuseLinks(name, file);
    try {
      if (!(await lstat(file)).isFile()) throw new DebugkitError('INVALID_ARGUMENT', `${file} is not a regular file`);
    } catch (err) {
      throw await this.notFound(name, err);
    }
    return loadSet(name, file, this.cacheDir, options);
  }

  /** NOT_FOUND naming the sets there are, for a set that does not exist (`err` from reading it); other errors as they are. */
  private async notFound(name: string, err: unknown): Promise<unknown> {
    if (errno(err) !== 'ENOENT' && errno(err) !== 'ENOTDIR') return err;
    const names = (await this.list().catch(() => [])).map((s) => s.name);
    const available = names.length ? `available: ${names.slice(0, 20).join(', ')}${names.length > 20 ? ', ...' : ''}` : 'there are none';
    return new DebugkitError('NOT_FOUND', `Mock set '${name}' not found in ${this.dir} (${available})`, { cause: err });
  }

  private async readFile(file: string, cached = false): Promise<Mock[]> {
    const st = await lstat(file);
    if (!st.isFile()) throw new DebugkitError('INVALID_ARGUMENT', `${file} is not a regular file`);
    if (st.size > MAX_MOCKSET_BYTES) {
      throw new DebugkitError('INVALID_ARGUMENT', `${file} is ${st.size} bytes; mock sets over ${MAX_MOCKSET_BYTES} bytes are not read`);
    }
    const text = await readFile(file, 'utf8');
    if (!cached) return parseMockSet(text, file);
    const hit = await cachedMocks(text, this.cacheDir);
    if (hit) return hit;
    const mocks = parseMockSet(text, file);
    await cacheMocks(text, mocks, this.cacheDir);
    return mocks;
  }

  /**
   * Writes a new set `name` and returns its file's path. Refuses (INVALID_ARGUMENT) when the set
   * already has a `mocks.yaml`, or when a mock cannot be written or would not read back (they are
   * serialized, checked and parsed again before anything touches the disk).
   */
  async write(name: string, mocks: readonly Mock[]): Promise<string> {
    const file = this.pathOf(name);
    let text: string;
    try {
      text = serializeMockSet(mocks);
      const back = parseMockSet(text, file);
      if (back.length !== mocks.length) throw new Error(`the mocks do not read back: ${mocks.length} mocks written, ${back.length} read back`);
    } catch (err) {
      throw new DebugkitError('INVALID_ARGUMENT', `Mock set '${name}' not written: ${describeError(err)}`, { cause: err });
    }

    const setDir = path.dirname(file);
    try {
      await mkdir(this.dir, { recursive: true });
    } catch (err) {
      throw storageError(`cannot create ${this.dir}`, err);
    }
    let createdDir = false;
    try {
      await mkdir(setDir);
      createdDir = true;
    } catch (err) {
      if (errno(err) !== 'EEXIST') throw storageError(`cannot create ${setDir}`, err);
    }
    await this.refuseLinks(name, file);
    if (await exists(file)) throw alreadyExists(name, file);

    const temp = path.join(setDir, `.${MOCKS_FILE}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
    let committed = false;
    try {
      await this.io.writeNew(temp, text);
      try {
        await this.io.link(temp, file);
      } catch (err) {
        if (errno(err) === 'EEXIST') throw alreadyExists(name, file);
        if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV', 'EMLINK'].includes(errno(err) ?? '')) throw err;
        // No hard links on this file system: check, then rename (atomic, but not race-free).
        if (await exists(file)) throw alreadyExists(name, file);
        await this.io.rename(temp, file);
      }
      committed = true;
      await syncDir(setDir);
      await cacheMocks(text, mocks, this.cacheDir);
      return file;
    } catch (err) {
      if (err instanceof DebugkitError) throw err;
      throw storageError(`cannot write ${file}`, err);
    } finally {
      await this.io.unlink(temp).catch(() => {});
      if (!committed && createdDir) await rmdir(setDir).catch(() => {});
    }
  }

  /**
   * Adds mocks to the end of an existing set (`onMiss: record` completing a set), named on from
   * the set's count (`mock-N`). The file's existing text is kept byte for byte; the new text is
   * worked out and checked to read back on the mock-set worker threads (describe.ts, within their
   * bounds: a set that would grow past them is refused, MockSetBoundError), then written beside
   * the old file, flushed, and renamed over it (atomic: a reader sees the old set or the new one,
   * never a part). Returns the new number of mocks. `options` as for `load`.
   */
  async append(name: string, mocks: readonly Mock[], options: SetJobOptions = {}): Promise<number> {
    const file = this.pathOf(name);
    await this.refuseLinks(name, file);
    await lstat(file).catch((err: unknown) => {
      throw new DebugkitError('INVALID_ARGUMENT', `Mock set not found: ${file} (${describeError(err)})`);
    });
    const { text, total } = await appendedText(name, file, mocks, this.cacheDir, options);
    const temp = path.join(path.dirname(file), `.${MOCKS_FILE}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
    try {
      await this.io.writeNew(temp, text);
      await this.io.rename(temp, file);
      await syncDir(path.dirname(file));
      return total;
    } catch (err) {
      await this.io.unlink(temp).catch(() => {});
      throw storageError(`cannot write ${file}`, err);
    }
  }

  /** `base` if no set (or other entry) of that name exists in `dir`, else `base-2`, `base-3`, ... */
  async uniqueName(base: string): Promise<string> {
    validateSetName(base, 'base name');
    for (let n = 1; n <= 10_000; n++) {
      const suffix = n === 1 ? '' : `-${n}`;
      const candidate = validateSetName(`${base.slice(0, 200 - suffix.length)}${suffix}`);
      if (!(await exists(path.join(this.dir, candidate)))) return candidate;
    }
    throw new DebugkitError('INVALID_ARGUMENT', `No free mock set name for '${base}' in ${this.dir}`);
  }

  private async refuseLinks(name: string, file: string): Promise<void> {
    for (const p of [path.dirname(file), file]) {
      try {
        if ((await lstat(p)).isSymbolicLink()) {
          throw new DebugkitError('INVALID_ARGUMENT', `Mock set '${name}': ${p} is a symbolic link; mock sets must be plain directories and files`);
        }
      } catch (err) {
        if (err instanceof DebugkitError) throw err;
        // missing: nothing to refuse
      }
    }
  }
}

/** Makes the new directory entry durable (best effort: not every platform can fsync a directory). */
async function syncDir(dir: string): Promise<void> {
  try {
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // not supported here: the data itself was already flushed
  }
}

function isSetName(name: string): boolean {
  try {
    validateSetName(name);
    return true;
  } catch {
    return false;
  }
}

async function exists(p: string): Promise<boolean> {
  try {
    await lstat(p);
    return true;
  } catch (err) {
    if (errno(err) === 'ENOENT') return false;
    throw storageError(`cannot check ${p}`, err);
  }
}

function alreadyExists(name: string, file: string): DebugkitError {
  return new DebugkitError(
    'INVALID_ARGUMENT',
    `Mock set '${name}' already exists (${file}); mock sets are never overwritten: pick a new name (MockStore.uniqueName)`,
  );
}

function storageError(what: string, err: unknown): DebugkitError {
  return new DebugkitError('INTERNAL', `Mock store: ${what}: ${describeError(err)}`, { cause: err });
}

function emptyCounts(): KindCounts {
  const counts = {} as KindCounts;
  for (const kind of MODELED_KINDS) counts[kind] = 0;
  return counts;
}

/**
 * When a set was recorded: its newest `created` (Unix seconds; a value that can only be
 * milliseconds, as some Keploy versions wrote, is read as such), else its newest response
 * timestamp. Undefined when the mocks carry neither.
 */
export function createdOf(mocks: readonly Mock[]): string | undefined {
  let newest: number | undefined;
  const consider = (ms: number | undefined) => {
    if (ms !== undefined && Number.isFinite(ms) && (newest === undefined || ms > newest)) newest = ms;
  };
  for (const mock of mocks) {
    if (mock.kind === 'Http' && mock.spec.created) consider(mock.spec.created > 1e11 ? mock.spec.created : mock.spec.created * 1000);
  }
  if (newest === undefined) {
    for (const mock of mocks) {
      if (mock.kind === 'Http') consider(timeMs(mock.spec.resTimestampMock ?? mock.spec.reqTimestampMock));
      else if (mock.kind === 'Postgres' || mock.kind === 'Generic' || mock.kind === 'Redis') consider(timeMs(mock.spec.restimestampmock));
    }
  }
  return newest === undefined ? undefined : new Date(newest).toISOString();
}

/** Milliseconds of a Keploy timestamp (nanoseconds cut to milliseconds); undefined for the zero time. */
export function timeMs(ts: string | undefined): number | undefined {
  if (!ts || ts === ZERO_TIME) return undefined;
  const m = /^(\d{4})-(\d{1,2})-(\d{1,2})[Tt ](\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})?$/.exec(ts);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac = '', zone = 'Z'] = m;
  const pad = (v: string) => v!.padStart(2, '0');
  const iso = `${y}-${pad(mo!)}-${pad(d!)}T${pad(h!)}:${pad(mi!)}:${pad(s!)}.${frac.slice(0, 3).padEnd(3, '0')}${zone.toUpperCase()}`;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) || Number(y) < 1970 ? undefined : ms;
}
