import { DebugkitError, type ErrorCode } from '../../core/errors.js';

/**
 * The error types the support-bundle contract names. Each keeps the contract's name (agents
 * and existing clients match on it) and maps to one of debugkit's stable codes.
 */
export type BundleErrorType =
  | 'NoBundleInitializedError'
  | 'PathNotFoundError'
  | 'NotADirectoryError'
  | 'FileNotFoundError'
  | 'NotAFileError'
  | 'SecurityError'
  | 'KubectlError'
  | 'CommandNotSupportedError'
  | 'BundleNotFoundError'
  | 'BundleExtractionError'
  | 'StorageError'
  | 'AuthenticationError'
  | 'InvalidPatternError'
  | 'ApiError'
  | 'BundleBudgetError';

const CODES: Record<BundleErrorType, ErrorCode> = {
  NoBundleInitializedError: 'INVALID_ARGUMENT',
  PathNotFoundError: 'NOT_FOUND',
  NotADirectoryError: 'INVALID_ARGUMENT',
  FileNotFoundError: 'NOT_FOUND',
  NotAFileError: 'INVALID_ARGUMENT',
  SecurityError: 'PATH_OUTSIDE_ROOT',
  KubectlError: 'ENGINE_FAILED',
  CommandNotSupportedError: 'INVALID_ARGUMENT',
  BundleNotFoundError: 'NOT_FOUND',
  BundleExtractionError: 'INVALID_ARGUMENT',
  StorageError: 'INTERNAL',
  AuthenticationError: 'INVALID_ARGUMENT',
  InvalidPatternError: 'INVALID_ARGUMENT',
  ApiError: 'ENGINE_FAILED',
  // A key's share of the bundle budget has no room for a bundle it would join: a limit, as too many sessions are.
  BundleBudgetError: 'SESSION_LIMIT',
};

export class BundleError extends DebugkitError {
  override name: BundleErrorType;

  constructor(type: BundleErrorType, message: string, options?: { cause?: unknown }) {
    super(CODES[type], message, options);
    this.name = type;
  }

  get type(): BundleErrorType {
    return this.name;
  }
}
