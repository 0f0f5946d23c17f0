import { serialize } from 'node:v8';
import type { JobContext } from '../../../core/workers-side.js';
import { DebugkitError } from '../../../core/errors.js';
import { cachedMocks, cacheMocks } from './cache.js';
import { parseMockDocuments, parseMockSet, type MockDocument } from './parse.js';
import { PARSE_BOUNDS, pastBounds, readBounded } from './scan.js';
import { serializeMockSet } from './serialize.js';
import { restyle } from './style.js';
import { MAX_MOCKSET_BYTES } from './store.js';
import type { HttpBody, HttpMock, Mock } from './types.js';
import { isStartup, narrowSet, shownName, type SetNarrowing } from './narrow.js';

/**
 * Replay's side of the mock-set worker threads (describe.ts runs these jobs): loading a set for
 * keploy_mock_test (MockStore.load) and extending one with the calls recorded on a miss
 * (MockStore.append). A set is parsed only within the bounds listing parses to (scan.ts
 * PARSE_BOUNDS); past them the job answers which bound, and nothing is parsed.
 */

/** Load `file` for replay: its mocks go to the main thread in batches (`MockBatch` requests), then the count. */
export interface LoadJob {
  op: 'load';
  /** What is opened: `/proc/self/fd/N/mocks.yaml`, N the set's directory opened and checked by the main thread (setdir.ts). */
  file: string;
  /** The file's name in messages (default `file`). */
  shown?: string;
  /** The cache of parsed sets (cache.ts) the store uses. */
  cacheDir: string;
}

/** Extend set `name` (its `file`) with `mocks`: the new text, checked to read back, for the main thread to write. */
export interface AppendJob {
  op: 'append';
  name: string;
  /** As LoadJob's. */
  file: string;
  shown?: string;
  cacheDir: string;
  mocks: Mock[];
  /** The mocks' collection styles (style.ts stylesOf): the clone sent here lost them. */
  styles: Uint8Array;
  /** Re-recording one test: the set's mocks of that test (narrow.ts narrowSet; its start-up mocks stay) are dropped first, `mocks` take their place. */
  replace?: SetNarrowing;
}

/**
 * A new set of `mocks` (MockStore.write): its text, checked to read back and to be within the
 * bounds. `fit`: past them, the longest run of the first mocks within them is written instead (a
 * recording keeps what a set may hold; `written` says how many), else the set is refused.
 */
export interface WriteJob {
  op: 'write';
  name: string;
  /** The set's file in messages. */
  shown: string;
  cacheDir: string;
  mocks: Mock[];
  /** The mocks' collection styles (style.ts stylesOf): the clone sent here lost them. */
  styles: Uint8Array;
  fit: boolean;
}

/** A set past the parse bounds: which, as "200000 documents, over the 20000" (scan.ts pastBounds). */
export interface PastBounds {
  past: string;
}

/** Mocks handed to the main thread: an array of them, v8-serialized (node:v8), deserialized there in one go. */
export interface MockBatch {
  bytes: Uint8Array;
}

/**
 * A batch aims at about BATCH_BYTES serialized and holds at most BATCH_MOCKS mocks: deserializing
 * it holds the main thread's event loop a few ms at most (about a µs per small mock, plus the
 * bytes), however big the set. One mock bigger than BATCH_BYTES goes alone.
 */
const BATCH_BYTES = 512 * 1024;
const BATCH_MOCKS = 2000;

export async function loadSetFile(job: LoadJob, ctx: JobContext): Promise<{ mocks: number } | PastBounds> {
  const shown = job.shown ?? job.file;
  const set = readBounded(job.file, MAX_MOCKSET_BYTES, ctx.progress, undefined, shown);
  if ('error' in set) throw new Error(set.error);
  if ('past' in set) return { past: set.past };
  let mocks = await cachedMocks(set.text, job.cacheDir);
  if (!mocks) {
    mocks = parseMockSet(set.text, shown);
    await cacheMocks(set.text, mocks, job.cacheDir);
  }
  await handOver(mocks, ctx);
  return { mocks: mocks.length };
}

/**
 * Sends `mocks` to the main thread in batches, one at a time (each taken before the next is
 * sent): each batch's size is picked from the bytes per mock of the one before, to come near
 * BATCH_BYTES without passing BATCH_MOCKS.
 */
async function handOver(mocks: readonly Mock[], ctx: JobContext): Promise<void> {
  let take = 64;
  for (let at = 0; at < mocks.length;) {
    const batch = mocks.slice(at, at + take).map(longBodiesAsBytes);
    const bytes = serialize(batch);
    await ctx.request({ bytes } satisfies MockBatch);
    ctx.progress();
    at += batch.length;
    take = Math.max(1, Math.min(BATCH_MOCKS, Math.floor((BATCH_BYTES * batch.length) / bytes.length)));
  }
}

/**
 * An Http body longer than this many characters goes to the main thread as its UTF-8 bytes, the
 * same body (types.ts HttpBody): bytes are what replay matches and sends, and a long string would
 * cost the main thread twice, once copied out of the batch and once encoded (a 28 MB body held its
 * event loop about 100 ms each time; its bytes take well under 1 ms).
 */
const LONG_BODY = 64 * 1024;

/** `mock` with its long Http bodies as bytes (LONG_BODY); any other mock as it is. */
function longBodiesAsBytes(mock: Mock): Mock {
  if (mock.kind !== 'Http') return mock;
  const { req, resp } = (mock as HttpMock).spec;
  if (!isLong(req.body) && !isLong(resp.body)) return mock;
  return { ...mock, spec: { ...mock.spec, req: { ...req, body: asBytes(req.body) }, resp: { ...resp, body: asBytes(resp.body) } } } as HttpMock;
}

const isLong = (body: HttpBody): body is string => typeof body === 'string' && body.length > LONG_BODY;
const asBytes = (body: HttpBody): HttpBody => (isLong(body) ? new TextEncoder().encode(body) : body);

/**
 * The text of set `file` with `mocks` added at its end, named on from its count (`mock-N`, none the set has): the
 * file's text kept byte for byte, the whole checked to read back and to stay within the bounds
 * (a set past them could not be replayed again). The parsed result goes into the cache.
 */
export async function appendSetText(job: AppendJob, ctx: JobContext): Promise<{ text: string; total: number; replaced: number } | PastBounds> {
  const shown = job.shown ?? job.file;
  const set = readBounded(job.file, MAX_MOCKSET_BYTES, ctx.progress, undefined, shown);
  if ('error' in set) throw new Error(set.error);
  if ('past' in set) return { past: set.past };
  const old = set.text;
  let existing: Mock[];
  let kept = old;
  /** Each kept mock's document as it was (a replace); undefined for an append, which keeps the old text as the new one's start. */
  let keptDocuments: string[] | undefined;
  let replaced = 0;
  const verb = job.replace ? 're-recorded' : 'extended';
  if (job.replace) {
    // The test's mocks go, their documents cut out of the text where the parser found them; every other document is kept byte for byte.
    const { mocks: all, documents } = parseMockDocuments(old, shown);
    refuseDirectives(job.name, verb, documents, Infinity);
    const dropped = new Set(narrowSet(all, job.replace).filter((m) => !isStartup(m)));
    kept = withoutDocuments(old, documents, (i) => dropped.has(all[i]!));
    existing = all.filter((m) => !dropped.has(m));
    keptDocuments = documents.filter((d) => d.mock !== undefined && !dropped.has(all[d.mock]!)).map((d) => old.slice(d.start, d.end));
    replaced = dropped.size;
  } else {
    existing = (await cachedMocks(old, job.cacheDir)) ?? parseMockSet(old, shown);
  }
  const before = existing.length;
  restyle(job.mocks, job.styles);
  // Named on from the count, past any name the set has (a set with mock-1 removed holds mock-2 among 2 mocks): two mocks of
  // one name could not be told apart by the usage a replay reports (attack 18y W7).
  const taken = new Set(existing.map((m) => m.name));
  let next = before;
  const added = job.mocks.map((mock) => {
    while (taken.has(`mock-${next}`)) next++;
    const name = `mock-${next++}`;
    taken.add(name);
    return { ...mock, name };
  });
  const keptEnd = kept.length + (kept === '' || kept.endsWith('\n') ? 0 : 1);
  const text = `${kept}${keptEnd > kept.length ? '\n' : ''}${kept === '' ? '' : '---\n'}${serializeMockSet(added)}`;
  const past = pastBounds(Buffer.byteLength(text), set.scan.documents + added.length);
  if (past !== undefined) return { past };
  const parsed = parseMockDocuments(text, shown);
  // An append's old set may come from the cache, unparsed here: its directives are found in the new text, where the old
  // text comes first byte for byte (so its documents keep their numbers); one after its last document applies to the new ones.
  refuseDirectives(job.name, verb, parsed.documents, keptEnd);
  const wrong = readBackError(text, parsed, { existing, added, documents: keptDocuments, keptEnd });
  if (wrong !== undefined) {
    throw new DebugkitError(
      'INVALID_ARGUMENT',
      `Mock set '${job.name}' not ${verb}, its file left as it was: the new text does not read back as the set's kept mocks followed by the new ones: ${wrong}`,
    );
  }
  await cacheMocks(text, parsed.mocks, job.cacheDir);
  return { text, total: parsed.mocks.length, replaced };
}

/**
 * Refuses a set with YAML directives in force (parse.ts MockDocument.directives): the parser keeps
 * a `%YAML 1.1` directive for every later document, so cutting documents out or adding some after
 * them changes how other documents read (under 1.1, `!!binary` is its base64 text, not bytes: attack
 * 18ad g1-3, g1-4). Keploy writes no directives, so a set is refused rather than its directives moved.
 * `keptEnd`: where the set's own text ends in `documents`' text; a document from there on is a new one.
 */
function refuseDirectives(name: string, verb: string, documents: readonly MockDocument[], keptEnd: number): void {
  const at = documents.findIndex((d) => d.directives);
  if (at < 0) return;
  const where = documents[at]!.start < keptEnd ? `at its document ${at + 1}` : 'after its last document';
  throw new DebugkitError(
    'INVALID_ARGUMENT',
    `Mock set '${name}' not ${verb}, its file left as it was: it holds YAML directives (%YAML, %TAG) in force ${where}, which change how the documents after them read (under %YAML 1.1, !!binary is text, not bytes); Keploy writes no directives: remove them and try again`,
  );
}

/**
 * `text` without the documents `drop` picks (by mock index), the rest byte for byte: each document
 * where the parser found it (parse.ts parseMockDocuments: its `---`, content, comments and `...`),
 * what lies between documents (comments, a byte order mark) kept. A kept document that opened
 * bare (the first, or one after a `...`) gets a `---` line when a document now comes before it.
 * The set holds no directives (refuseDirectives): none need moving.
 */
export function withoutDocuments(text: string, documents: readonly MockDocument[], drop: (mock: number) => boolean): string {
  const newline = text.includes('\r\n') ? '\r\n' : '\n';
  let out = '';
  let at = 0;
  let kept = false;
  for (const doc of documents) {
    out += text.slice(at, doc.start);
    at = doc.end;
    if (doc.mock !== undefined && drop(doc.mock)) continue;
    if (kept && !doc.explicitStart) out += `${out === '' || out.endsWith('\n') ? '' : newline}---${newline}`;
    out += text.slice(doc.start, doc.end);
    kept = true;
  }
  return out + text.slice(at);
}

/** What a set's changed text should read back as: `existing` kept mocks, then `added`. */
export interface ReadBackExpected {
  existing: readonly Mock[];
  added: readonly Mock[];
  /** Each kept mock's document text as it was (after a replace); a kept document may now open with a `---` line it did not have. */
  documents?: readonly string[];
  /** Where the kept text ends (with the line end put after it), and the `---` before the new documents starts: every kept document lies before it, every new one after. */
  keptEnd: number;
}

/**
 * What is wrong with `parsed`, `text` read back after a change, for it to be the kept mocks (each
 * from the same bytes as before, so each parses as it did) followed by the new ones (by name and
 * kind), or undefined when nothing is. The check compares document text, never the mocks whole,
 * so it costs little beside the parse (a 30 MB set is read back within the write's bound).
 *
 * Same bytes read the same, and a new document is serializeMockSet's text of its mock, because
 * nothing outside a document changes how it reads once directives are refused (refuseDirectives):
 * the other context, a document swallowing the next, shows in where each one starts and ends.
 * So the new mocks are not compared whole with those written.
 */
export function readBackError(text: string, parsed: { mocks: readonly Mock[]; documents: readonly MockDocument[] }, expected: ReadBackExpected): string | undefined {
  const { existing, added } = expected;
  const { mocks } = parsed;
  if (mocks.length !== existing.length + added.length) return `${mocks.length} mocks read back, expected ${existing.length} kept and ${added.length} new`;
  const holding = parsed.documents.filter((d) => d.mock !== undefined);
  const named = (m: Mock) => `'${shownName(m.name)}' (${m.kind})`;
  for (let i = 0; i < existing.length; i++) {
    const got = mocks[i]!;
    const doc = holding[i]!;
    const was = expected.documents?.[i];
    const same = doc.end <= expected.keptEnd && (was === undefined || sameDocument(text.slice(doc.start, doc.end), was));
    if (!same || got.name !== existing[i]!.name || got.kind !== existing[i]!.kind) return `mock ${i + 1} reads back as ${named(got)}, not as the kept ${named(existing[i]!)} from the same text`;
  }
  for (let j = 0; j < added.length; j++) {
    const got = mocks[existing.length + j]!;
    const doc = holding[existing.length + j]!;
    if (doc.start < expected.keptEnd || got.name !== added[j]!.name || got.kind !== added[j]!.kind) {
      return `mock ${existing.length + j + 1} reads back as ${named(got)}, not as the new ${named(added[j]!)}`;
    }
  }
  return undefined;
}

/** Whether a kept document reads `now` as it read `was`: the same text, or the same with a `---` line before it (it opened bare and now follows a document). */
function sameDocument(now: string, was: string): boolean {
  if (now === was) return true;
  const head = /^---\r?\n/.exec(now)?.[0].length ?? 0;
  return head > 0 && now.length === head + was.length && now.endsWith(was);
}

/**
 * The text of a new set of `job.mocks`, worked out here rather than on the event loop (a 32 MB set
 * took 3.4 s to serialize and 17.4 s to parse back there): serialized, within the bounds (a set
 * past them could not be replayed: keploy_mock_test refuses it), and checked to read back. The
 * parsed result goes into the cache, as a replay would parse it.
 */
export async function newSetText(job: WriteJob, ctx: JobContext): Promise<{ text: string; written: number } | PastBounds> {
  restyle(job.mocks, job.styles);
  let text = serializeMockSet(job.mocks);
  let written = job.mocks.length;
  ctx.progress();
  const past = pastBounds(Buffer.byteLength(text), written);
  if (past !== undefined) {
    // Not even the first mock fits (one Postgres group may be 64 MiB): no set, the bound is said.
    const fit = job.fit ? fitted(job.mocks) : undefined;
    if (!fit || fit.written === 0) return { past };
    ({ text, written } = fit);
  }
  const parsed = parseMockSet(text, job.shown);
  ctx.progress();
  // The caller says which set was not written (MockStore.write).
  if (parsed.length !== written) throw new Error(`the mocks do not read back: ${written} mocks written, ${parsed.length} read back`);
  await cacheMocks(text, parsed, job.cacheDir);
  return { text, written };
}

/** The first of `mocks` that fit the parse bounds, as a set's text (each document as serializeMockSet writes it, joined as it joins them). */
function fitted(mocks: readonly Mock[]): { text: string; written: number } {
  const docs: string[] = [];
  let bytes = 0;
  for (const mock of mocks.slice(0, PARSE_BOUNDS.documents)) {
    const doc = serializeMockSet([mock]);
    const more = Buffer.byteLength(doc) + (docs.length > 0 ? SEPARATOR.length : 0);
    if (bytes + more > PARSE_BOUNDS.bytes) break;
    bytes += more;
    docs.push(doc);
  }
  return { text: docs.join(SEPARATOR), written: docs.length };
}

/** What serializeMockSet puts between documents. */
const SEPARATOR = '---\n';
