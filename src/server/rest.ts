import type { IncomingMessage } from 'node:http';
import { DebugkitError, describeError } from '../core/errors.js';
import { jsonShape } from '../core/json-shape.js';
import { nextShare } from '../core/wait.js';
import type { RestRoute } from '../mcp/toolset.js';

/** A request body over the configured limit: HTTP 413. */
export class BodyTooLargeError extends DebugkitError {
  override name = 'BodyTooLargeError';
  /** sendRestError answers it 413 (its code, INVALID_ARGUMENT, would be 400). */
  readonly httpStatus = 413;
  constructor(message: string) {
    super('INVALID_ARGUMENT', message);
  }
}

/** A request body that stopped arriving: the connection is dropped. */
export class BodyStalledError extends DebugkitError {
  override name = 'BodyStalledError';
  constructor(message: string) {
    super('TIMEOUT', message);
  }
}

/**
 * A request refused before it is served: the key (or the server) already has as many of something
 * at once as it may: bodies still arriving (--max-pending-bodies-per-key, --max-pending-bodies) or
 * requests in progress (--max-requests-per-key). HTTP 429 for a key's bound, 503 for the server's;
 * the connection is closed after the answer.
 */
export class TooManyAtOnceError extends DebugkitError {
  override name = 'TooManyAtOnceError';
  constructor(
    message: string,
    readonly httpStatus: 429 | 503,
  ) {
    super('SESSION_LIMIT', message);
  }
}

/**
 * Slots counted per key and in all: `take` one, or be refused past either bound (the error
 * `refuse` makes); the function it returns gives the slot back (once, however often called).
 */
export class KeyedSlots {
  private readonly perKey = new Map<string, number>();
  private total = 0;

  constructor(
    private readonly bounds: { perKey: number; total: number },
    private readonly refuse: (over: 'key' | 'server', held: number) => Error,
  ) {}

  take(keyId: string): () => void {
    const mine = this.perKey.get(keyId) ?? 0;
    if (mine >= this.bounds.perKey) throw this.refuse('key', mine);
    if (this.total >= this.bounds.total) throw this.refuse('server', this.total);
    this.perKey.set(keyId, mine + 1);
    this.total++;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.total--;
      const left = (this.perKey.get(keyId) ?? 1) - 1;
      if (left > 0) this.perKey.set(keyId, left);
      else this.perKey.delete(keyId);
    };
  }
}

/** The request bodies still arriving, per key and in all: one past either bound is refused (TooManyAtOnceError) before it is read. */
export class PendingBodies {
  private readonly slots: KeyedSlots;

  constructor(bounds: { perKey: number; total: number }) {
    this.slots = new KeyedSlots(bounds, (over, held) =>
      over === 'key'
        ? new TooManyAtOnceError(
            `Too many request bodies still arriving for this key: ${held} of the ${bounds.perKey} one key may send at once (--max-pending-bodies-per-key); ` +
              'send each body whole, at once, and wait for earlier requests to be read',
            429,
          )
        : new TooManyAtOnceError(`Too many request bodies still arriving on this server: ${held} of ${bounds.total} (--max-pending-bodies); retry shortly`, 503),
    );
  }

  /** What `read` returned, the body counted while it arrives. */
  async receive<T>(keyId: string, read: () => Promise<T>): Promise<T> {
    const release = this.slots.take(keyId);
    try {
      return await read();
    } finally {
      release();
    }
  }
}

/** A body of more than this many bytes waits for a share of the loop of its own before it is parsed. */
const OWN_SHARE_BYTES = 256 * 1024;

/**
 * Reads and parses a JSON body, refusing more than `limit` bytes. A body that stalls (no bytes for
 * `stallMs`) or is not complete within `deadlineMs` of this call (however steadily it drips) is
 * dropped: the connection is closed, nothing answered.
 */
export async function readBody(
  req: IncomingMessage,
  limit: number,
  { emptyAs, stallMs, deadlineMs, beforeParse }: { emptyAs?: unknown; stallMs?: number; deadlineMs?: number; beforeParse?: (bytes: number) => Promise<void> } = {},
): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) throw new BodyTooLargeError(`request body too large: ${declared} bytes, the limit is ${limit}`);
  const chunks: Buffer[] = [];
  let size = 0;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    if (!stallMs) return;
    clearTimeout(timer);
    timer = setTimeout(() => req.destroy(new BodyStalledError(`request body stalled for ${stallMs} ms`)), stallMs);
    timer.unref();
  };
  // The stall timer restarts on every byte; the deadline does not.
  const deadline = deadlineMs ? setTimeout(() => req.destroy(new BodyStalledError(`request body not complete within ${deadlineMs} ms (${size} bytes arrived)`)), deadlineMs) : undefined;
  deadline?.unref();
  arm();
  try {
    for await (const chunk of req) {
      arm();
      size += (chunk as Buffer).length;
      if (size > limit) throw new BodyTooLargeError(`request body too large: over ${limit} bytes`);
      chunks.push(chunk as Buffer);
    }
  } finally {
    clearTimeout(timer);
    clearTimeout(deadline);
  }
  // The caller's last word before the parse (it may throw: a request refused before its body is parsed).
  await beforeParse?.(size);
  // A big body is decoded, scanned and parsed in a share of the loop of its own (core/wait.ts): one
  // key's 16 bodies of 4 MiB arriving together were parsed back to back, some 17 ms each, and held
  // another key's ping 224-395 ms (attack q2-2). Now other I/O runs between two of them.
  if (size > OWN_SHARE_BYTES) await nextShare();
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return emptyAs;
  // Before JSON.parse and the schemas behind it: a body's shape is bounded (a few MiB nested a
  // million levels deep, or one object of 300,000 keys, held the event loop for seconds).
  const shape = jsonShapeProblem(text);
  if (shape) throw new DebugkitError('INVALID_ARGUMENT', `request body refused: ${shape}`);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new DebugkitError('INVALID_ARGUMENT', `request body is not valid JSON: ${describeError(err)}`);
  }
}

export function matchRoute<R extends RestRoute>(routes: R[], method: string, pathname: string) {
  const parts = pathname.split('/').filter(Boolean);
  for (const route of routes) {
    if (route.method !== method) continue;
    const pattern = route.path.split('/').filter(Boolean);
    if (pattern.length !== parts.length) continue;
    const params: Record<string, string> = {};
    const ok = pattern.every((p, i) => {
      if (p.startsWith(':')) {
        params[p.slice(1)] = decodePathPart(parts[i]!);
        return true;
      }
      return p === parts[i];
    });
    if (ok) return { route, params };
  }
  return undefined;
}

/** A path segment, percent-decoded; a malformed escape (`%E0%A4%A`) is the client's error: 400. */
function decodePathPart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new DebugkitError('INVALID_ARGUMENT', `malformed percent-escape in the path segment "${part.slice(0, 100)}"`);
  }
}

/** The deepest nesting a JSON body may have, and the most members one of its arrays or objects may hold. */
export const MAX_JSON_DEPTH = 64;
export const MAX_JSON_MEMBERS = 10_000;
/**
 * The most values (arrays, objects, strings, numbers, true/false/null, wherever they stand, and
 * object keys, counted as values: core/json-shape.ts) a JSON body may hold in all. JSON.parse
 * costs far more for containers and keys than for numbers: 4 MiB of 1.37 M empty arrays held the
 * event loop ~500 ms (attack e1-2). At 200,000, with no container of more than MAX_JSON_MEMBERS,
 * 200,000 `[]` parse in ~40-50 ms, 10 objects of 9,999 distinct keys with `{}` values in ~95-130
 * ms, 66,666 objects of one distinct key each (the worst shape found) in ~105-145 ms.
 * No tool takes more: the longest list an argument holds is one array (argv, mock names) of at
 * most MAX_JSON_MEMBERS, and 200,000 is 20 of them, or a batch of 100 calls of 2,000 values each.
 */
export const MAX_JSON_VALUES = 200_000;

/**
 * What is wrong with the shape of JSON text (too deep, a container with too many members, too many
 * values in all), or undefined: the scan of core/json-shape.ts with the bounds of a request body.
 */
export function jsonShapeProblem(text: string): string | undefined {
  const shape = jsonShape(text, { depth: MAX_JSON_DEPTH, members: MAX_JSON_MEMBERS, values: MAX_JSON_VALUES });
  if (shape.ok) return undefined;
  if (shape.bound !== 'values') return shape.problem;
  const max = MAX_JSON_VALUES.toLocaleString('en');
  return `${shape.problem}; a body may hold at most ${max}: send fewer, or split a batch into several requests`;
}
