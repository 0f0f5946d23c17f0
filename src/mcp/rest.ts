import type { ServerResponse } from 'node:http';
import { DebugkitError, describeError } from '../core/errors.js';

/** The answers of REST routes (RestRoute, served beside /mcp): JSON bodies and error bodies. */

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

const STATUS: Partial<Record<DebugkitError['code'], number>> = {
  INVALID_ARGUMENT: 400,
  PATH_OUTSIDE_ROOT: 400,
  SESSION_NOT_FOUND: 404,
  NOT_FOUND: 404,
  SESSION_BUSY: 409,
  SESSION_LIMIT: 429,
  ENGINE_MISSING: 503,
  TIMEOUT: 504,
};

/**
 * A REST error body: `{"error": {"code", "message"}}` with the status the code implies, or the
 * error's own `httpStatus` where it has one (a body over the size limit: 413).
 */
export function sendRestError(res: ServerResponse, err: unknown): void {
  if (err instanceof DebugkitError) {
    const own = (err as { httpStatus?: unknown }).httpStatus;
    const status = typeof own === 'number' ? own : (STATUS[err.code] ?? 500);
    sendJson(res, status, { error: { code: err.code, message: err.message } });
    return;
  }
  sendJson(res, 500, { error: { code: 'INTERNAL', message: describeError(err) } });
}
