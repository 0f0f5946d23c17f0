import { randomBytes } from 'node:crypto';
import { constants, fstatSync, fsyncSync, realpathSync, type BigIntStats } from 'node:fs';
import { link, lstat, mkdir, open, readdir, rename, rmdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import { DebugkitError, describeError } from '../../../core/errors.js';
import { cacheDir, cachedMocks, cacheMocks } from './cache.js';
import { appendedText, describeSet, loadSet, MockSetBoundError, writtenText, type SetJobOptions } from './describe.js';
import type { SetDescription } from './scan.js';
import { validateSetName } from './naming.js';
import { parseMockSet } from './parse.js';
import { openChildDir, openDirAsGiven, openDirFromRoot, type OpenDir } from './setdir.js';
import { ZERO_TIME, type Mock, type MockSetInfo } from './types.js';
import type { SetNarrowing } from './narrow.js';
import { oneAtATime } from '../../../core/wait.js';

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
 * not listed, and reading or writing it is refused. What is checked is what is used (SECURITY.md,
 * "Open what was checked"; setdir.ts): `dir` is opened from `root` one component at a time without
 * following a link, each set's directory is opened from `dir`'s descriptor the same way, both are
 * judged inside the root by what the kernel says they are, and the set's files are read, written
 * and renamed only through the set directory's descriptor (`/proc/self/fd/N/mocks.yaml`, on the
 * worker threads too), so a directory swapped for a link out of the root meanwhile is never
 * followed. Without `root` (tests, the bench), `dir` is trusted as given.
 */
export class MockStore {
  private readonly io: StoreIo;

  /** Where parsed sets are cached (keploy/cache.ts). */
  private readonly cacheDir: string;

  /** The workspace root `dir` was resolved in (a real path: mocks/paths.ts), walked from when `dir` is opened. */
  private readonly root: string | undefined;

  constructor(
    readonly dir: string,
    options: { io?: Partial<StoreIo>; cacheDir?: string; root?: string } = {},
  ) {
    this.io = { ...defaultIo, ...options.io };
    this.cacheDir = options.cacheDir ?? cacheDir();
    this.root = options.root;
  }

  /**
   * `dir` opened and checked (setdir.ts); undefined when it does not exist (and `create` is not
   * set). `within`: where its sets' directories must be, as the kernel names them.
   */
  private openDir(create: boolean): { dir: OpenDir; within: string } | undefined {
    if (this.root !== undefined) {
      const realRoot = realpathSync.native(this.root);
      const dir = openDirFromRoot(realRoot, this.dir, { create });
      return dir === 'missing' ? undefined : { dir, within: realRoot };
    }
    const dir = openDirAsGiven(this.dir, { create });
    if (dir === 'missing') return undefined;
    try {
      return { dir, within: realpathSync.native(dir.at) };
    } catch (err) {
      dir.close();
      throw err;
    }
  }

  /** Set `name`'s directory, opened from `opened` without following a link and checked; undefined when it is not there (or no directory). */
  private openSet(name: string, opened: { dir: OpenDir; within: string }): OpenDir | undefined {
    const set = openChildDir(opened.dir, name, opened.within);
    if (set === 'missing') return undefined;
    if (set === 'link') throw linkError(name, path.join(this.dir, name));
    if (set === 'outside') throw new DebugkitError('INVALID_ARGUMENT', `Mock set '${name}': ${path.join(this.dir, name)} leads out of ${opened.within} now (it changed after it was checked)`);
    return set;
  }

  /**
   * Runs `use` with set `name`'s `mocks.yaml` as `/proc/self/fd/N/mocks.yaml` (N: the set's
   * directory, opened and checked, closed once `use` has settled); the file is a regular file
   * then (a link is refused). NOT_FOUND (naming the sets there are) when the set does not exist.
   */
  private async withSet<T>(name: string, use: (file: string, set: OpenDir, shown: string) => Promise<T>): Promise<T> {
    const shown = this.pathOf(name);
    const opened = this.openDir(false);
    if (!opened) throw await this.notFound(name, missing(this.dir));
    try {
      const set = this.openSet(name, opened);
      if (!set) throw await this.notFound(name, missing(path.dirname(shown)));
      try {
        const file = `${set.at}/${MOCKS_FILE}`;
        let st;
        try {
          st = await lstat(file);
        } catch (err) {
          throw await this.notFound(name, err);
        }
        if (st.isSymbolicLink()) throw linkError(name, shown);
        if (!st.isFile()) throw new DebugkitError('INVALID_ARGUMENT', `${shown} is not a regular file`);
        return await use(file, set, shown);
      } finally {
        set.close();
      }
    } finally {
      opened.dir.close();
    }
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
    let opened;
    let entries;
    try {
      opened = this.openDir(false);
      if (!opened) return [];
      entries = await readdir(opened.dir.at, { withFileTypes: true });
    } catch (err) {
      opened?.dir.close();
      if (err instanceof DebugkitError) throw err;
      throw new DebugkitError('INTERNAL', `Cannot list mock sets in ${this.dir}: ${describeError(err)}`, { cause: err });
    }
    const infos: MockSetInfo[] = [];
    try {
      for (const entry of entries) {
        if (!entry.isDirectory() || !isSetName(entry.name)) continue;
        // Opened from the listed directory's descriptor, no link followed; gone or a link by now: not listed.
        const set = openChildDir(opened.dir, entry.name, opened.within);
        if (typeof set === 'string') continue;
        try {
          const file = `${set.at}/${MOCKS_FILE}`;
          let mtime: Date;
          let version: string;
          try {
            const st = await lstat(file, { bigint: true });
            if (!st.isFile()) continue;
            // As a plain lstat gives it (rounded to the millisecond): a set without times is dated by it.
            mtime = new Date(Math.round(Number(st.mtimeNs) / 1e6));
            version = versionOf(st);
          } catch {
            continue; // a directory without mocks.yaml (reports/, a test set with tests only) is no mock set
          }
          infos.push(await this.describe(entry.name, file, mtime, version, owner));
        } finally {
          set.close();
        }
      }
    } finally {
      opened.dir.close();
    }
    return infos.sort((a, b) => (a.created === b.created ? (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) : a.created < b.created ? 1 : -1));
  }

  /** The newest set that reads without error and holds mocks (what replay uses when no set is named). `owner` as for list. */
  async latest(owner?: string): Promise<MockSetInfo | undefined> {
    return (await this.list(owner)).find((info) => info.error === undefined && info.mocks > 0);
  }

  /** `file`: the set's `/proc/self/fd/N/mocks.yaml` (its directory kept open by the caller until this returns). */
  private async describe(name: string, file: string, mtime: Date, version: string, owner?: string): Promise<MockSetInfo> {
    const shown = path.join(this.dir, name, MOCKS_FILE);
    const d = await describedOnce(`${version}\u0000${shown}`, () => describeSet(file, MAX_MOCKSET_BYTES, owner, shown));
    return {
      name,
      path: shown,
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
    return this.withSet(name, (file, _set, shown) => this.readFile(file, shown, options.cached === true));
  }

  /**
   * The mocks of set `name` for replay, parsed on the mock-set worker threads (or taken from the
   * cache of parsed sets) and within their bounds (describe.ts): never on the event loop. A set
   * past them is refused with MockSetBoundError, naming the bound; NOT_FOUND as for `read`.
   * `owner`: whose replay (an API key's id), for sharing the threads fairly; `signal` cancels it.
   */
  async load(name: string, options: SetJobOptions = {}): Promise<Mock[]> {
    // The worker opens `/proc/self/fd/N/mocks.yaml` (O_NOFOLLOW); N stays open until the job has ended, timed out or been cancelled.
    return this.withSet(name, (file, _set, shown) => loadSet(name, file, this.cacheDir, options, shown));
  }

  /** NOT_FOUND naming the sets there are, for a set that does not exist (`err` from reading it); other errors as they are. */
  private async notFound(name: string, err: unknown): Promise<unknown> {
    if (errno(err) !== 'ENOENT' && errno(err) !== 'ENOTDIR') return err;
    const names = (await this.list().catch(() => [])).map((s) => s.name);
    const available = names.length ? `available: ${names.slice(0, 20).join(', ')}${names.length > 20 ? ', ...' : ''}` : 'there are none';
    return new DebugkitError('NOT_FOUND', `Mock set '${name}' not found in ${this.dir} (${available})`, { cause: err });
  }

  /** `file` (a set's `/proc/self/fd/N/mocks.yaml`) opened without following a link and read through its descriptor. */
  private async readFile(file: string, shown: string, cached = false): Promise<Mock[]> {
    const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    let text: string;
    try {
      const st = await handle.stat();
      if (!st.isFile()) throw new DebugkitError('INVALID_ARGUMENT', `${shown} is not a regular file`);
      if (st.size > MAX_MOCKSET_BYTES) {
        throw new DebugkitError('INVALID_ARGUMENT', `${shown} is ${st.size} bytes; mock sets over ${MAX_MOCKSET_BYTES} bytes are not read`);
      }
      text = await handle.readFile('utf8');
    } finally {
      await handle.close();
    }
    if (!cached) return parseMockSet(text, shown);
    const hit = await cachedMocks(text, this.cacheDir);
    if (hit) return hit;
    const mocks = parseMockSet(text, shown);
    await cacheMocks(text, mocks, this.cacheDir);
    return mocks;
  }

  /**
   * Writes a new set `name` and returns its file's path. Refuses (INVALID_ARGUMENT) when the set
   * already has a `mocks.yaml`, or when a mock cannot be written or would not read back (they are
   * serialized, checked and parsed again before anything touches the disk, on the mock-set worker
   * threads: describe.ts), or when the set would be past the bounds keploy_mock_test replays to
   * (MockSetBoundError: such a set could not be replayed). `options` as for `load`.
   */
  async write(name: string, mocks: readonly Mock[], options: SetJobOptions = {}): Promise<string> {
    return (await this.writeNew(name, mocks, false, options)).file;
  }

  /**
   * As `write`, but a set past the replay bounds is not refused: the first of `mocks` that fit are
   * written (a recording keeps what a set may hold). `written`: how many; the rest were left out.
   */
  async writeWithin(name: string, mocks: readonly Mock[], options: SetJobOptions = {}): Promise<{ file: string; written: number }> {
    return this.writeNew(name, mocks, true, options);
  }

  private async writeNew(name: string, mocks: readonly Mock[], fit: boolean, options: SetJobOptions): Promise<{ file: string; written: number }> {
    const file = this.pathOf(name);
    let text: string;
    let written: number;
    try {
      ({ text, written } = await writtenText(name, file, mocks, this.cacheDir, fit, options));
    } catch (err) {
      if (err instanceof MockSetBoundError) throw err;
      throw new DebugkitError('INVALID_ARGUMENT', `Mock set '${name}' not written: ${describeError(err)}`, { cause: err });
    }

    const setDir = path.dirname(file);
    // The mocks directory made and opened from the root, no link followed (setdir.ts); the set's
    // directory made and opened from its descriptor; the file written and linked into place only
    // through the set directory's descriptor (`/proc/self/fd/N/...`).
    let opened;
    try {
      opened = this.openDir(true);
    } catch (err) {
      if (err instanceof DebugkitError) throw err;
      throw storageError(`cannot create ${this.dir}`, err);
    }
    if (!opened) throw storageError(`cannot create ${this.dir}`, new Error('a component of it is not a directory'));
    try {
      let createdDir = false;
      try {
        await mkdir(`${opened.dir.at}/${name}`);
        createdDir = true;
      } catch (err) {
        if (errno(err) !== 'EEXIST') throw storageError(`cannot create ${setDir}`, err);
      }
      let set: OpenDir | undefined;
      let temp: string | undefined;
      let committed = false;
      try {
        set = this.openSet(name, opened);
        if (!set) throw storageError(`cannot create ${setDir}`, new Error('it is not a directory'));
        const target = `${set.at}/${MOCKS_FILE}`;
        if (await exists(target, file)) throw alreadyExists(name, file);
        temp = `${set.at}/.${MOCKS_FILE}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
        await this.io.writeNew(temp, text);
        try {
          await this.io.link(temp, target);
        } catch (err) {
          if (errno(err) === 'EEXIST') throw alreadyExists(name, file);
          if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV', 'EMLINK'].includes(errno(err) ?? '')) throw err;
          // No hard links on this file system: check, then rename (atomic, but not race-free).
          if (await exists(target, file)) throw alreadyExists(name, file);
          await this.io.rename(temp, target);
        }
        committed = true;
        syncDir(set);
        // The parsed set was cached on the worker thread, as it was checked.
        return { file, written };
      } catch (err) {
        if (err instanceof DebugkitError) throw err;
        throw storageError(`cannot write ${file}`, err);
      } finally {
        if (temp !== undefined) await this.io.unlink(temp).catch(() => {});
        set?.close();
        if (!committed && createdDir) await rmdir(`${opened.dir.at}/${name}`).catch(() => {});
      }
    } finally {
      opened.dir.close();
    }
  }

  /**
   * Adds mocks to the end of an existing set (`onMiss: record` completing a set), named on from
   * the set's count (`mock-N`). The file's existing text is kept byte for byte; the new text is
   * worked out and checked to read back on the mock-set worker threads (describe.ts, within their
   * bounds: a set that would grow past them is refused, MockSetBoundError), then written beside
   * the old file, flushed, and renamed over it (atomic: a reader sees the old set or the new one,
   * never a part). Returns the new number of mocks. `options` as for `load`.
   *
   * Appends to one set take turns in this process, and one finding the file changed since it was
   * read (another process appended) works its text out again: three calls at once kept 12 of 17
   * mocks, each renaming over the others' (attack 18r K5).
   */
  async append(name: string, mocks: readonly Mock[], options: SetJobOptions = {}): Promise<number> {
    return (await this.extend(name, mocks, options)).total;
  }

  /**
   * Re-records one test: the set's mocks of that test (`test`, as keploy_mock_test `only` narrows a
   * set; its start-up mocks stay) are taken out and `mocks` added, every other mock kept byte for
   * byte; written as `append` writes. Returns the new number of mocks and how many were replaced.
   */
  replace(name: string, mocks: readonly Mock[], test: SetNarrowing, options: SetJobOptions = {}): Promise<{ total: number; replaced: number }> {
    return this.extend(name, mocks, options, test);
  }

  private async extend(name: string, mocks: readonly Mock[], options: SetJobOptions, replace?: SetNarrowing): Promise<{ total: number; replaced: number }> {
    // Read (on the worker), written and renamed only through the set directory's descriptor, opened and checked.
    return this.withSet(name, (file, set, shown) =>
      oneWriterPerSet(set, async () => {
        for (let attempt = 1; ; attempt++) {
          const read = await fileVersion(file);
          const { text, total, replaced } = await appendedText(name, file, mocks, this.cacheDir, options, shown, replace);
          const temp = `${set.at}/.${MOCKS_FILE}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
          let renamed = false;
          try {
            await this.io.writeNew(temp, text);
            if ((await fileVersion(file)) !== read) {
              if (attempt < APPEND_ATTEMPTS) continue;
              throw new Error(`it was changed by others ${APPEND_ATTEMPTS} times while it was being extended`);
            }
            await this.io.rename(temp, file);
            renamed = true;
            syncDir(set);
            return { total, replaced };
          } catch (err) {
            throw storageError(`cannot write ${shown}`, err);
          } finally {
            if (!renamed) await this.io.unlink(temp).catch(() => {});
          }
        }
      }),
    );
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
}

function linkError(name: string, p: string): DebugkitError {
  return new DebugkitError('INVALID_ARGUMENT', `Mock set '${name}': ${p} is a symbolic link; mock sets must be plain directories and files`);
}

/**
 * Descriptions of sets already listed, by the version of their file (device, inode, size and
 * times: a write in place or a rename over it is a new version) and the name shown: a listing
 * describes each version once. A planted set that takes a thread 20-60 s to run out of its time or
 * memory was parsed again by every listing of every key sharing the workspace (11 such sets: 98 s a
 * listing, the server at 977 MB: attack 18al v1-1). Bounded: the oldest entries go first.
 */
const described = new Map<string, Promise<SetDescription>>();
const DESCRIBED_MAX = 2000;

function describedOnce(key: string, describe: () => Promise<SetDescription>): Promise<SetDescription> {
  const known = described.get(key);
  if (known) return known;
  if (described.size >= DESCRIBED_MAX) described.delete(described.keys().next().value!);
  const fresh = describe();
  described.set(key, fresh);
  // A failure of the pool itself (not of the set) is not remembered.
  fresh.catch(() => described.delete(key));
  return fresh;
}

/** How many times an append works its text out again when the set keeps changing under it. */
const APPEND_ATTEMPTS = 5;

/** The appends running, per set directory (device and inode, however it was named): each waits for the one before. */
const appending = new Map<string, Promise<unknown>>();

function oneWriterPerSet<T>(set: OpenDir, append: () => Promise<T>): Promise<T> {
  const { dev, ino } = fstatSync(set.fd);
  return oneAtATime(appending, `${dev}:${ino}`, append);
}

/** Which version of a file this is: a rename over it changes the inode, a write in place the size or times. */
async function fileVersion(file: string): Promise<string> {
  return versionOf(await lstat(file, { bigint: true }));
}

function versionOf(st: BigIntStats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

/** An ENOENT for `p`, for notFound. */
function missing(p: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`ENOENT: no such file or directory, ${p}`), { code: 'ENOENT' });
}

/** Makes the new directory entry durable (best effort: not every platform can fsync a directory). */
function syncDir(dir: OpenDir): void {
  try {
    fsyncSync(dir.fd);
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

/** Whether `p` exists (a link counts); `shown`: its name in an error. */
async function exists(p: string, shown: string = p): Promise<boolean> {
  try {
    await lstat(p);
    return true;
  } catch (err) {
    if (errno(err) === 'ENOENT') return false;
    throw storageError(`cannot check ${shown}`, err);
  }
}

function alreadyExists(name: string, file: string): DebugkitError {
  return new DebugkitError('INVALID_ARGUMENT', `Mock set '${name}' already exists (${file}); mock sets are never overwritten: pick a new name (MockStore.uniqueName)`);
}

function storageError(what: string, err: unknown): DebugkitError {
  return new DebugkitError('INTERNAL', `Mock store: ${what}: ${describeError(err)}`, { cause: err });
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
