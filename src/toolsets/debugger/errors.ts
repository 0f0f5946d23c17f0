import { DebugkitError } from '../../core/errors.js';

/** kindly-debugger's custom JSON-RPC error codes, with the contract's message texts. */
export const RPC_CODES = {
  QUOTA_EXCEEDED: { code: -32002, message: 'Quota exceeded' },
  PERMISSION_DENIED: { code: -32003, message: 'Permission denied' },
  PROCESS_NOT_FOUND: { code: -32004, message: 'Process not found' },
  NOT_ATTACHED: { code: -32005, message: 'Not attached' },
  BREAKPOINT_FAILED: { code: -32006, message: 'Breakpoint failed' },
  HISTORY_UNAVAILABLE: { code: -32007, message: 'History unavailable' },
  LICENSE_EXPIRED: { code: -32010, message: 'License expired' },
} as const;

export type RpcKind = keyof typeof RPC_CODES;

/**
 * A failure the contract answers with a JSON-RPC error: `message` is the contract's text, `data`
 * says what failed and what would work (`details`) plus any fields the contract shows.
 */
export class DebuggerRpcError extends DebugkitError {
  override name = 'DebuggerRpcError';
  readonly rpcCode: number;
  readonly data: Record<string, unknown>;

  constructor(kind: RpcKind, details: string, extra: Record<string, unknown> = {}) {
    super('INVALID_ARGUMENT', `${RPC_CODES[kind].message}: ${details}`);
    this.rpcCode = RPC_CODES[kind].code;
    this.data = { details, ...extra };
  }

  get contractMessage(): string {
    return Object.values(RPC_CODES).find((c) => c.code === this.rpcCode)!.message;
  }
}

export const notAttached = (sessionId: string, endedBecause?: string) =>
  new DebuggerRpcError('NOT_ATTACHED', `no process in session "${sessionId}"${endedBecause ? ` (it ended: ${endedBecause})` : ''}: call debugger_attach {pid} or debugger_launch {program} first`);
