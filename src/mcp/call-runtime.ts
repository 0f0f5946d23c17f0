/** One finished tool call, for logs and the audit seam. */
export interface ToolCallEvent {
  owner: string;
  principal?: string;
  tool: string;
  args: unknown;
  isError: boolean;
  durationMs: number;
  requestId?: string | number;
  truncated: boolean;
  /** The result's structuredContent (e.g. the id of a session a call opened). */
  result?: unknown;
}

/** A tool call about to run, for the pre-call seam (the audit entry written before the call). */
export interface ToolCallStart {
  owner: string;
  tool: string;
  args: unknown;
  requestId?: string | number;
  /** The W3C trace context the request carried (HTTP `traceparent` header, or `_meta.traceparent`). */
  traceparent?: string;
}

/** What a pre-call seam hands back: called once the call ended (its errors are swallowed). */
/** How a call ended: `cancelled` when its request was cancelled (notifications/cancelled, tasks/cancel, the client gone) before it answered. */
export type CallOutcome = { ok: boolean; error?: string; cancelled?: boolean };
export type EndToolCall = (outcome: CallOutcome) => void | Promise<void>;

/** A refused call: the JSON-RPC error the client gets (-32003 permission denied, with the scope in `data`). */
export interface CallDenial {
  code?: number;
  message: string;
  data?: unknown;
}

/**
 * What the registration wrapper needs from the server around it, set per MCP server instance on
 * its ClientContext (`calls`). Absent: defaults (the ceiling, no audit, no log).
 */
export interface CallRuntime {
  /** The ceiling for one result, in tokens. */
  maxResultTokens?: number;
  /** false (--no-redact): answers keep what looks like a credential (redact-answers.ts); default: hidden. */
  redact?: boolean;
  /**
   * The name a tool is listed and called by (`--tool-prefix`); default: its contract name. Every
   * other name here (mayCall, the audit's `tool`) is this one, as clients see it.
   */
  toolName?(tool: string): string;
  /** May this caller call this tool? Tools it may not are never registered (so never listed). */
  mayCall?(tool: string): boolean;
  /**
   * May this caller make this call, which needs these capability scopes (never empty)? Asked
   * before the audit entry is written; a denial is answered as a JSON-RPC error and the call never runs.
   */
  authorize?(start: ToolCallStart, scopes: string[]): Promise<true | CallDenial>;
  /**
   * Called before every tool call, once its arguments are valid. Throwing refuses the call (it
   * never runs; the client gets an error result naming why), e.g. when the audit cannot be written.
   */
  beforeToolCall?(start: ToolCallStart): Promise<EndToolCall | void> | EndToolCall | void;
  /** Called after every tool call (logs, audit). Its errors are swallowed. */
  onToolCall?(event: ToolCallEvent): void | Promise<void>;
}

/** JSON-RPC error: the caller's key may not do this (the kindly contract's -32003). */
export const PERMISSION_DENIED = -32003;
