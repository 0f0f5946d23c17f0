import type { ServerResponse } from 'node:http';
import type { TimeSlice } from '../../../core/wait.js';
import { indexAfter } from './bundle.js';
import { nameOf, namespaceOf, type K8sObject } from './json.js';
import { badRequest, failure, type Status } from './status.js';

/**
 * List chunking as the real API server does it: `limit` answers at most that many items, with
 * an opaque `metadata.continue` token when more remain, and `continue` resumes after the last
 * item the token names. kubectl asks for 500 at a time (--chunk-size), so no list request handles
 * more than that; an unchunked list (curl, older clients) is written in slices that give other
 * requests their turns (attack 18m F3: 150,000 pods held the loop 1-2 s a request).
 */

const TOKEN_VERSION = 'meta.k8s.io/v1';

/** Where a page starts: after the object at namespace/name (listings are sorted by both). */
export interface PageStart {
  namespace: string;
  name: string;
}

export interface PageQuery {
  /** 0: no limit. */
  limit: number;
  start?: PageStart;
}

/** The page asked for by `limit`/`continue`, or the Status refusing them. */
export function parsePageQuery(q: URLSearchParams, resourceVersion: string): PageQuery | Status {
  const rawLimit = q.get('limit');
  let limit = 0;
  if (rawLimit !== null && rawLimit !== '') {
    if (!/^-?\d+$/.test(rawLimit)) return badRequest(`limit: Invalid value: "${rawLimit}": must be an integer`);
    limit = Number(rawLimit);
    if (limit < 0) return badRequest(`limit: Invalid value: ${rawLimit}: must be greater than or equal to 0`);
  }
  const token = q.get('continue');
  if (token === null || token === '') return { limit };
  const start = decodeContinue(token);
  if (!start) return badRequest('invalid continue token: continue key is not valid');
  if (start.resourceVersion !== resourceVersion) {
    return failure(410, 'Expired', 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.');
  }
  return { limit, start: { namespace: start.namespace, name: start.name } };
}

/** base64url of {v, rv, ns, name}: the last object a page returned. Deterministic, and opaque to clients. */
export function encodeContinue(last: K8sObject, resourceVersion: string): string {
  return Buffer.from(JSON.stringify({ v: TOKEN_VERSION, rv: resourceVersion, ns: namespaceOf(last), name: nameOf(last) })).toString('base64url');
}

function decodeContinue(token: string): (PageStart & { resourceVersion: string }) | undefined {
  if (!/^[A-Za-z0-9_-]+={0,2}$/.test(token)) return undefined;
  try {
    const t = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown;
    if (typeof t !== 'object' || t === null) return undefined;
    const { v, rv, ns, name } = t as Record<string, unknown>;
    if (v !== TOKEN_VERSION || typeof rv !== 'string' || typeof ns !== 'string' || typeof name !== 'string' || name === '') return undefined;
    return { resourceVersion: rv, namespace: ns, name };
  } catch {
    return undefined;
  }
}

export interface Page {
  items: K8sObject[];
  /** The token for the next page, when more items match. */
  continue?: string;
  /** How many items follow this page (unfiltered listings only, as the API server). */
  remainingItemCount?: number;
}

/** How many items are checked between looks at the slice's clock. */
const CHECK_EVERY = 256;

/** A list request's main-thread time (TimeSlice) and the signal that aborts when its answer will not be read (server.ts). */
export interface RequestSlices {
  slice: TimeSlice;
  signal: AbortSignal;
}

/**
 * The slice's pause, then a stop (the abort thrown) when the request was given up: matched and
 * written to the end, a list nobody read kept a CPU busy for minutes (attack 18r L3).
 */
async function pause({ slice, signal }: RequestSlices): Promise<void> {
  await slice.pause();
  signal.throwIfAborted();
}

/**
 * The page of `sorted` that `page` asks for, keeping only what `matches` (selectors apply before
 * paging). Matching runs in slices; `filtered` says whether `matches` can drop anything.
 */
export async function selectPage(sorted: readonly K8sObject[], matches: (o: K8sObject) => boolean, filtered: boolean, page: PageQuery, resourceVersion: string, slices: RequestSlices): Promise<Page> {
  const from = page.start ? indexAfter(sorted, page.start) : 0;
  const limit = page.limit > 0 ? page.limit : Infinity;
  const items: K8sObject[] = [];
  let i = from;
  let more = false;
  for (; i < sorted.length; i++) {
    if (i % CHECK_EVERY === 0) await pause(slices);
    const o = sorted[i]!;
    if (filtered && !matches(o)) continue;
    if (items.length === limit) {
      more = true;
      break;
    }
    items.push(o);
  }
  if (!more) return { items };
  return { items, continue: encodeContinue(items[items.length - 1]!, resourceVersion), ...(filtered ? {} : { remainingItemCount: sorted.length - i }) };
}

/** Bytes of JSON gathered before they are written out. */
const FLUSH_BYTES = 256 * 1024;

/**
 * Writes `head` with `items` (each through `toJson`) as its last field, exactly as
 * JSON.stringify({...head, [field]: items.map(toJson)}) would, in slices. An answer that fits
 * in one write goes out with its Content-Length; a longer one is sent chunked as it is made.
 */
export async function sendListJson(res: ServerResponse, head: K8sObject, field: string, items: K8sObject[], toJson: (o: K8sObject) => unknown, slices: RequestSlices): Promise<void> {
  const opening = JSON.stringify(head);
  const parts: string[] = [`${opening.slice(0, -1)}${opening.length > 2 ? ',' : ''}${JSON.stringify(field)}:[`];
  let buffered = parts[0]!.length;
  let started = false;
  const flush = async (): Promise<boolean> => {
    if (!started) {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      started = true;
    }
    const ok = res.write(parts.join(''));
    parts.length = 0;
    buffered = 0;
    if (!ok && !res.destroyed) await drained(res);
    return !res.destroyed;
  };
  for (let i = 0; i < items.length; i++) {
    if (i % CHECK_EVERY === 0 && i > 0) await pause(slices);
    const text = JSON.stringify(toJson(items[i]!));
    parts.push(i === 0 ? text : `,${text}`);
    buffered += text.length + 1;
    if (buffered >= FLUSH_BYTES && !(await flush())) return;
  }
  parts.push(']}');
  if (started) {
    res.end(parts.join(''));
    return;
  }
  const text = parts.join('');
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
