import { closeSync, fstatSync, openSync, readSync, constants } from 'node:fs';
import { describeError } from '../../../core/errors.js';
import { cachedMocks } from './cache.js';
import { parseMockSet } from './parse.js';
import { createdOf, timeMs } from './store.js';
import { MODELED_KINDS, type KindCounts, type Mock } from './types.js';

/**
 * What listing a mock set needs to know of it (MockStore.list): how many mocks of which kinds,
 * when it was recorded, and whether it reads. Worked out on a worker thread (describe-worker.ts),
 * never on the server's event loop, and bounded:
 *
 * - a set within PARSE_BOUNDS (at most PARSE_MAX_BYTES and PARSE_MAX_DOCS documents) is parsed as
 *   replay parses it (or taken from the cache of parsed sets), so a corrupt set is listed with its
 *   error;
 * - a bigger set is not parsed: a streaming scan of its lines (1 MiB at a time, only the first
 *   bytes of each line looked at, so one 100 MB scalar costs what 100 MB of reading costs) counts
 *   its documents and their kinds and finds its times; the description says so (`note`). Replay
 *   refuses such a set (load.ts): the same bounds say what is parsed at all;
 * - a set over MAX_MOCKSET_BYTES is not read at all (`error`).
 */

/**
 * The most a mock set is parsed to, for listing and for replay (about half a second of a worker
 * thread per MB of YAML, and as much again to hand the mocks to the main thread): a bigger set is
 * only scanned when listed, and refused for replay.
 */
export const PARSE_MAX_BYTES = 32 * 1024 * 1024;
/** The most documents a mock set is parsed to, whatever its size (a document costs more than its bytes). */
export const PARSE_MAX_DOCS = 20_000;

export interface ParseBounds {
  bytes: number;
  documents: number;
}
export const PARSE_BOUNDS: ParseBounds = { bytes: PARSE_MAX_BYTES, documents: PARSE_MAX_DOCS };

export interface SetDescription {
  mocks: number;
  kinds: KindCounts;
  /** ISO time from the mocks (see createdOf); absent when they carry none (the caller uses the file's time). */
  created?: string;
  /** The set could not be read: why. */
  error?: string;
  /** The set was counted by a scan, not parsed: why (its mocks were not checked). */
  note?: string;
}

const CHUNK = 1024 * 1024;
/** Bytes of a line that are looked at: `kind: ...`, `    created: ...` and the timestamps fit. */
const HEAD = 200;

export function emptyCounts(): KindCounts {
  const counts = {} as KindCounts;
  for (const kind of MODELED_KINDS) counts[kind] = 0;
  return counts;
}

export const mb = (bytes: number) => `${Number((bytes / (1024 * 1024)).toFixed(bytes < 10 * 1024 * 1024 ? 1 : 0))} MiB`;

/** Which bound a set of `bytes` and `documents` is past, as "200000 documents, over the 20000" (documents first); undefined within them. */
export function pastBounds(bytes: number, documents: number, bounds: ParseBounds = PARSE_BOUNDS): string | undefined {
  if (documents > bounds.documents) return `${documents} documents, over the ${bounds.documents}`;
  if (bytes > bounds.bytes) return `${mb(bytes)}, over the ${mb(bounds.bytes)}`;
  return undefined;
}

/** A set file as bounded reading finds it: unreadable, past the parse bounds (scanned only), or its text. */
export type BoundedSet = { error: string } | { past: string; scan: Scan } | { text: string; scan: Scan };

/**
 * Opens `file` (a regular file: links are not followed), refuses it over `maxBytes`, scans it
 * (documents, kinds, times: `progress` is called once per chunk) and reads its text when it is
 * within `bounds`. `file` is what is opened: for a set of a MockStore, `/proc/self/fd/N/mocks.yaml`
 * with N the set's directory, opened and checked by the main thread (setdir.ts), so only the last
 * component is looked up by name, and not followed if it is a link; `shown` is the name messages
 * give it.
 */
export function readBounded(file: string, maxBytes: number, progress: () => void, bounds: ParseBounds = PARSE_BOUNDS, shown: string = file): BoundedSet {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    return { error: describeError(err).split(file).join(shown) };
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { error: `${shown} is not a regular file` };
    if (st.size > maxBytes) return { error: `${shown} is ${st.size} bytes; mock sets over ${maxBytes} bytes are not read` };
    const scan = scanSet(fd, progress);
    const past = pastBounds(st.size, scan.documents, bounds);
    if (past !== undefined) return { past, scan };
    const buf = Buffer.allocUnsafe(st.size);
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, got);
      if (n === 0) break;
      got += n;
    }
    return { text: buf.toString('utf8', 0, got), scan };
  } finally {
    closeSync(fd);
  }
}

/**
 * Describes the set in `file` (a regular file: links are not followed), within the bounds above.
 * `maxBytes`: the size past which a set is not read at all. `progress` is called once per chunk.
 * `shown`: the name messages give the file (readBounded).
 */
export async function describeSetFile(file: string, maxBytes: number, progress: () => void = () => undefined, parseBounds: ParseBounds = PARSE_BOUNDS, shown: string = file): Promise<SetDescription> {
  const set = readBounded(file, maxBytes, progress, parseBounds, shown);
  if ('error' in set) return { mocks: 0, kinds: emptyCounts(), error: set.error };
  if ('text' in set) {
    try {
      const mocks = (await cachedMocks(set.text)) ?? parseMockSet(set.text, shown);
      return { mocks: mocks.length, kinds: countKinds(mocks), ...optionalCreated(createdOf(mocks)) };
    } catch (err) {
      return { mocks: 0, kinds: emptyCounts(), error: describeError(err) };
    }
  }
  const { scan } = set;
  return {
    mocks: scan.mocks,
    kinds: scan.kinds,
    ...optionalCreated(scan.newestCreated ?? scan.newestTimestamp),
    note: `counted by a scan of its lines, not parsed (${set.past} a listed set is parsed to); its mocks were not checked`,
  };
}

function optionalCreated(ms: number | string | undefined): { created?: string } {
  if (ms === undefined) return {};
  return { created: typeof ms === 'string' ? ms : new Date(ms).toISOString() };
}

function countKinds(mocks: readonly Mock[]): KindCounts {
  const kinds = emptyCounts();
  for (const mock of mocks) kinds[mock.kind] = (kinds[mock.kind] ?? 0) + 1;
  return kinds;
}

export interface Scan {
  /** Documents (separated by `---` lines) holding anything but blank lines and comments. */
  documents: number;
  /** Documents with a top-level `kind:`. */
  mocks: number;
  kinds: KindCounts;
  /** The newest Http `created` (ms), as createdOf reads it. */
  newestCreated?: number;
  /** The newest response (else request) timestamp, as createdOf reads it when no mock has `created`. */
  newestTimestamp?: number;
}

/**
 * One pass over the file, line by line, looking only at each line's first HEAD bytes: `---`
 * starts a document, a top-level `kind: X` names its kind, and spec-level (indented 2 or 4)
 * `created:` and timestamp lines give its time, the way Keploy writes them.
 */
function scanSet(fd: number, progress: () => void): Scan {
  const scan: Scan = { documents: 0, mocks: 0, kinds: emptyCounts() };
  const buf = Buffer.allocUnsafe(CHUNK);
  const head = Buffer.allocUnsafe(HEAD);
  let headLen = 0;
  let lineLen = 0;
  let kind: string | null = null;
  let content = false;
  let docCreated: number | undefined;
  const stamps: Record<string, string | undefined> = {};
  const endDocument = () => {
    if (kind !== null) {
      scan.mocks++;
      scan.kinds[kind as keyof KindCounts] = (scan.kinds[kind as keyof KindCounts] ?? 0) + 1;
      if (kind === 'Http' && docCreated !== undefined) scan.newestCreated = Math.max(scan.newestCreated ?? -Infinity, docCreated);
      const stamp = kind === 'Http' ? (stamps.resTimestampMock ?? stamps.reqTimestampMock) : ['Postgres', 'Generic', 'Redis'].includes(kind) ? stamps.restimestampmock : undefined;
      const ms = timeMs(stamp);
      if (ms !== undefined) scan.newestTimestamp = Math.max(scan.newestTimestamp ?? -Infinity, ms);
    }
    if (content) scan.documents++;
    content = false;
    kind = null;
    docCreated = undefined;
    for (const k of Object.keys(stamps)) delete stamps[k];
  };
  const endLine = () => {
    const line = head.toString('utf8', 0, headLen).replace(/\r$/, '');
    headLen = 0;
    lineLen = 0;
    if (line === '---' || line.startsWith('--- ') || line.startsWith('---\t')) {
      endDocument();
      return;
    }
    if (!content && line.trim() !== '' && !line.trimStart().startsWith('#') && line !== '...') content = true;
    const top = /^kind:[ \t]*["']?([A-Za-z0-9]+)["']?[ \t]*$/.exec(line);
    if (top) {
      kind = top[1]!;
      return;
    }
    const spec = /^ {2}(?: {2})?(created|resTimestampMock|reqTimestampMock|restimestampmock):[ \t]*["']?([^"'#]*?)["']?[ \t]*$/.exec(line);
    if (!spec) return;
    if (spec[1] === 'created') {
      const n = Number(spec[2]);
      if (n > 0 && /^\d+$/.test(spec[2]!)) docCreated = n > 1e11 ? n : n * 1000;
    } else {
      stamps[spec[1]!] = spec[2];
    }
  };
  for (let position = 0; ;) {
    progress();
    const n = readSync(fd, buf, 0, CHUNK, position);
    if (n === 0) break;
    position += n;
    let from = 0;
    while (from < n) {
      const nl = buf.indexOf(10, from);
      const end = nl === -1 || nl >= n ? n : nl;
      const take = Math.min(end - from, HEAD - headLen);
      if (take > 0) {
        buf.copy(head, headLen, from, from + take);
        headLen += take;
      }
      lineLen += end - from;
      if (end === n) break;
      endLine();
      from = end + 1;
    }
  }
  if (lineLen > 0 || headLen > 0) endLine();
  endDocument();
  return scan;
}
