import type { IncomingMessage } from 'node:http';
import { DebugkitError, describeError } from '../core/errors.js';
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

/** Reads and parses a JSON body, refusing more than `limit` bytes. */
export async function readBody(
  req: IncomingMessage,
  limit: number,
  { emptyAs, stallMs }: { emptyAs?: unknown; stallMs?: number } = {},
): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) throw new BodyTooLargeError(`request body too large: ${declared} bytes, the limit is ${limit}`);
  const chunks: Buffer[] = [];
  let size = 0;
  // A body that stalls (no bytes for stallMs) is dropped: the connection is closed, nothing answered.
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    if (!stallMs) return;
    clearTimeout(timer);
    timer = setTimeout(() => req.destroy(new BodyStalledError(`request body stalled for ${stallMs} ms`)), stallMs);
    timer.unref();
  };
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
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return emptyAs;
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
