import { serialize } from 'node:v8';
import { parse as parseYaml } from 'yaml';
import type { JobContext } from '../../../core/workers-side.js';
import { isRecord, nameOf, namespaceOf, type K8sObject } from './json.js';

/**
 * Turning a bundle's resource file into objects: done on the main thread for small files and on
 * the parse thread (parse-worker.ts) for the rest (loader.ts decides), by this one code either way,
 * so both give the same answer.
 */

/** What one bundle file holds once parsed. */
export interface LoadedFile {
  /** The list's own `kind` (e.g. "PodList") when it has one; older bundles omit it. */
  listKind?: string;
  items: K8sObject[];
  /** Left out for the server's budget (loader.ts): not kept, so a later request tries again. */
  transient?: boolean;
}

/** Turns whatever a bundle file contains into items: a List, a bare array, one object, or nothing. */
export function toLoadedFile(data: unknown): LoadedFile {
  if (Array.isArray(data)) return { items: data.filter(isRecord) };
  if (!isRecord(data)) return { items: [] };
  if ('items' in data) {
    // `"items": null` is common in bundles: an empty list.
    const items = Array.isArray(data.items) ? data.items.filter(isRecord) : [];
    return { listKind: typeof data.kind === 'string' ? data.kind : undefined, items };
  }
  // A single object has kind and metadata; anything else (an errors map) holds no objects.
  return isRecord(data.metadata) && typeof data.kind === 'string' ? { items: [data] } : { items: [] };
}

/** A file's text parsed as JSON (`json`) or YAML; throws the parser's error. */
export function parseResourceText(text: string, json: boolean): LoadedFile {
  if (json) return toLoadedFile(JSON.parse(text));
  // Custom resources in older bundles exist only as .yaml. Without aliases: troubleshoot writes
  // none, and each alias is the same object 100 times over after the parse, which the parse thread's
  // bounds never see and the main thread expanded whole when it wrote an answer (a 3 MB file became
  // 3.4 GB and stalled every client 11-12 s; attack 18n).
  try {
    return toLoadedFile(parseYaml(text, { maxAliasCount: 0 }));
  } catch (err) {
    if (/alias/i.test((err as Error).message))
      throw new Error('it uses YAML aliases (*name), which bundle files are not read with: one alias can stand for a large value many times over', { cause: err });
    throw err;
  }
}

/** One file for the parse thread: its bytes (moved there, not copied) and whether it is JSON. */
export interface ParseJob {
  bytes: Uint8Array;
  json: boolean;
}

/** What a parse job answers once every batch is handed over. */
export interface ParseResult {
  listKind?: string;
  /** Objects handed over (the oversized ones not counted). */
  count: number;
  /** Objects left out for their size (MAX_OBJECT_BYTES), as `namespace/name` and their serialized bytes. */
  oversized: OversizedObject[];
}

export interface OversizedObject {
  name: string;
  bytes: number;
  /** Set when it was left out for the keys of one object in it (MAX_OBJECT_KEYS), not for its bytes. */
  keys?: number;
}

/** Items handed to the main thread: an array of them, v8-serialized (node:v8), deserialized there in one go. */
export interface ItemBatch {
  bytes: Uint8Array;
  /** How many objects it holds, charged to the bundle's budget before they are deserialized. */
  count: number;
}

/** The main thread's answer to a batch when the file is past the bundle's budget (loader.ts): the thread sends no more. */
export const STOP = 'stop';

/**
 * A batch aims at about BATCH_BYTES serialized and holds at most BATCH_ITEMS objects: the main
 * thread deserializes one in a few ms (measured: 225 KB of pods in 2.2 ms), however big the file.
 * One object bigger than BATCH_BYTES goes alone.
 */
const BATCH_BYTES = 512 * 1024;
const BATCH_ITEMS = 2000;

/**
 * Largest object handed to the main thread (v8-serialized bytes). No cluster holds a bigger one:
 * etcd takes at most 1.5 MiB a request unless told otherwise, and the API server 3 MiB a body. A
 * bigger one in a bundle was made by hand, and deserializing and writing it whole held the event
 * loop (a ConfigMap of 2 million keys, 45 MB: 2 s to deserialize and 2 s to write, every request).
 */
export const MAX_OBJECT_BYTES = 4 * 1024 * 1024;

/**
 * Most keys of any one object (a map) within an object handed to the main thread. Listing a map's keys is one step that
 * cannot be sliced (Object.keys of a ConfigMap's 330,000 keys, under MAX_OBJECT_BYTES, took 150-250 ms on every get even
 * when the answer was written in slices; attack 18an Z2); 50,000 take about 30 ms. A real ConfigMap holds at most 1 MiB.
 */
export const MAX_OBJECT_KEYS = 50_000;

/** Batches at least this big (serialized) are looked at for a map past MAX_OBJECT_KEYS (which takes at least 4 bytes a key). */
const KEYS_CHECK_BYTES = MAX_OBJECT_KEYS * 4;

/** The most keys of any plain object in `value` (arrays walked, not counted), walked without recursion. */
export function widestObject(value: unknown): number {
  let widest = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object') continue;
    if (Array.isArray(v)) {
      for (const item of v) if (item !== null && typeof item === 'object') stack.push(item);
      continue;
    }
    const values = Object.values(v);
    if (values.length > widest) widest = values.length;
    for (const item of values) if (item !== null && typeof item === 'object') stack.push(item);
  }
  return widest;
}

/** The parse thread's job: parse, then send the items to the main thread in batches, one at a time (each taken before the next is sent). */
export async function parseJob(job: ParseJob, ctx: JobContext): Promise<ParseResult> {
  const text = Buffer.from(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength).toString('utf8');
  const loaded = parseResourceText(text, job.json);
  ctx.progress();
  const oversized: OversizedObject[] = [];
  let count = 0;
  let take = 64;
  for (let at = 0; at < loaded.items.length;) {
    const batch = loaded.items.slice(at, at + take);
    const bytes = serialize(batch);
    const widest = bytes.length <= MAX_OBJECT_BYTES && bytes.length >= KEYS_CHECK_BYTES ? Math.max(...batch.map(widestObject)) : 0;
    if (bytes.length > MAX_OBJECT_BYTES || widest > MAX_OBJECT_KEYS) {
      if (batch.length > 1) {
        // Some object in it may be past a bound: halve the batch until each is seen alone.
        take = Math.ceil(batch.length / 2);
        continue;
      }
      oversized.push({ name: shownObject(batch[0]!), bytes: bytes.length, ...(bytes.length <= MAX_OBJECT_BYTES ? { keys: widest } : {}) });
    } else {
      if ((await ctx.request({ bytes, count: batch.length } satisfies ItemBatch)) === STOP) break;
      count += batch.length;
    }
    ctx.progress();
    at += batch.length;
    // Sized from the bytes per item of the batch before, to come near BATCH_BYTES.
    take = Math.max(1, Math.min(BATCH_ITEMS, Math.floor((BATCH_BYTES * batch.length) / bytes.length)));
  }
  return { ...(loaded.listKind !== undefined ? { listKind: loaded.listKind } : {}), count, oversized };
}

/** `namespace/name` of an object, or its name alone (cluster-scoped), or "(unnamed)". */
function shownObject(o: K8sObject): string {
  const name = nameOf(o) || '(unnamed)';
  const namespace = namespaceOf(o);
  return namespace ? `${namespace}/${name}` : name;
}
