/**
 * One error base for the whole server. `code` is stable and machine-readable; the message says
 * what failed and what is valid instead. Handlers throw these; one wrapper in server/ turns them
 * into tool results, JSON-RPC errors or HTTP responses.
 */
export type ErrorCode =
  | 'INVALID_ARGUMENT'
  | 'SESSION_NOT_FOUND'
  | 'SESSION_LIMIT'
  | 'SESSION_BUSY'
  | 'SESSION_CLOSED'
  | 'ENGINE_MISSING'
  | 'ENGINE_FAILED'
  | 'TIMEOUT'
  | 'CANCELLED'
  | 'PATH_OUTSIDE_ROOT'
  | 'NOT_FOUND'
  | 'INTERNAL';

export class DebugkitError extends Error {
  override name = 'DebugkitError';
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

export class SessionNotFoundError extends DebugkitError {
  override name = 'SessionNotFoundError';
  constructor(
    id: string,
    /** Why the session ended, when it existed and ended recently. */
    readonly endedBecause?: string,
  ) {
    super('SESSION_NOT_FOUND', `Session not found: ${id}${endedBecause ? ` (it ended: ${endedBecause})` : ''}`);
  }
}

export class TimeoutError extends DebugkitError {
  override name = 'TimeoutError';
  constructor(message: string) {
    super('TIMEOUT', message);
  }
}

export class CancelledError extends DebugkitError {
  override name = 'CancelledError';
  constructor(message = 'The request was cancelled') {
    super('CANCELLED', message);
  }
}

/** The message an agent should see for any thrown value; never a stack trace. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
