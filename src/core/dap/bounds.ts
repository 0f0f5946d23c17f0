import { DebugkitError } from '../errors.js';
import { MAX_TIMEOUT_MS } from '../wait.js';

/** Every wait needs a real bound: no timeout would let a silent adapter hang a tool call. */
export function checkTimeout(ms: number, what: string): number {
  if (!Number.isFinite(ms) || ms <= 0 || ms > MAX_TIMEOUT_MS) {
    throw new DebugkitError('INVALID_ARGUMENT', `${what} must be a number of milliseconds in 1..${MAX_TIMEOUT_MS}, got ${ms}`);
  }
  return ms;
}

/** Runs `abort` when `signal` fires; returns how to stop listening. */
export function onAbort(signal: AbortSignal | undefined, abort: () => void): () => void {
  if (!signal) return () => {};
  signal.addEventListener('abort', abort, { once: true });
  return () => signal.removeEventListener('abort', abort);
}
