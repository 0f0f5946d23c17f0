import type { AuditBody, AuditRecord, ChainAnchor, ChainState, Checkpoint } from './audit.js';
import type { AuditAnchor } from './anchor.js';
import type { Limit } from './limits.js';

/** A key as stored: never the key itself, only its SHA-256. */
export interface KeyRecord {
  id: string;
  name: string;
  /** The first characters of the key, to recognize it in lists. */
  prefix: string;
  scopes: string[];
  rate: Limit | null;
  quota: Limit | null;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
}

/** One counter to bump: `bucket` names the key's window ("rate:minute:1700000000000"). */
export interface CounterBump {
  bucket: string;
  limit: number;
  /** When the window ends (ms since the epoch): the counter can be dropped after it. */
  expiresAt: number;
}

/**
 * Counts after a bump, in order; the walk stops at the first counter already at its limit and
 * gives back what the counters before it took (a refused call uses none of its limits).
 */
export interface BumpResult {
  counts: number[];
  /** Index of the counter that was full (nothing was added to it), or -1. */
  refused: number;
}

export interface AuditQuery {
  since?: string;
  until?: string;
  /** Matches the MCP session or the debug session an entry names. */
  session?: string;
  keyId?: string;
  tool?: string;
  limit?: number;
  /**
   * Show each entry's arguments as at most this many characters of their stored JSON (cut in the
   * query: a caller's large entries are never read whole to be shown). Such entries cannot be
   * re-hashed; auditEntry reads one whole.
   */
  preview?: number;
}

export interface SessionLocation {
  node: string;
  url: string;
  key_id: string;
}

/**
 * Where keys, counters, the audit chain and session locations live: SQLite for one node,
 * PostgreSQL shared by several. Every method is atomic on its own.
 */
export interface Store {
  readonly kind: 'sqlite' | 'postgres';
  /** Where it is, without credentials (for logs). */
  readonly location: string;
  createKey(key: KeyRecord, hash: string): Promise<void>;
  listKeys(): Promise<KeyRecord[]>;
  /** Marks a key (by id or name) revoked; returns it, or undefined when there is none. */
  revokeKey(idOrName: string, at: string): Promise<KeyRecord | undefined>;
  keyByHash(hash: string): Promise<KeyRecord | undefined>;
  bump(keyId: string, counters: CounterBump[]): Promise<BumpResult>;
  peek(keyId: string, buckets: string[]): Promise<number[]>;
  /** The audit key and checkpoint file the chain is appended and verified with (see anchor.ts); none: unkeyed. */
  readonly auditAnchor: AuditAnchor | undefined;
  useAudit(anchor: AuditAnchor): void;
  /** The id of the audit key the chain is keyed with, as the store records it; given `id`, records it when none is yet. */
  auditKeyId(id?: string): Promise<string | undefined>;
  /**
   * Appends one entry: its text stored as given after storedBody (what is hashed is what reads
   * back), hashed with the audit key when there is one.
   */
  appendAudit(body: AuditBody): Promise<AuditRecord>;
  queryAudit(q: AuditQuery): Promise<AuditRecord[]>;
  /** One entry, whole (to re-hash it), or undefined when there is none at `seq`. */
  auditEntry(seq: number): Promise<AuditRecord | undefined>;
  /**
   * Walks the chain from the first entry, or on from an anchor (an entry an earlier pass verified:
   * it is read again and must be unchanged, then every later entry is checked), with the audit key
   * and against the checkpoint file and the `checkpoints` given (each entry they name must be there
   * with their hash). A walk works in slices of the main thread's time (a chain may be large).
   */
  verifyAudit(from?: ChainAnchor, checkpoints?: readonly Checkpoint[]): Promise<ChainState>;
  /** Every entry from `since` on, in order, a batch at a time. */
  exportAudit(since: string | undefined, each: (r: AuditRecord) => void): Promise<number>;
  /** Records where session `id` lives; a row held by another key is left as it is (never taken over). */
  claimSession(id: string, where: SessionLocation): Promise<void>;
  locateSession(id: string): Promise<SessionLocation | undefined>;
  /** Drops the row of session `id`; with `keyId`, only if that key holds it. */
  releaseSession(id: string, keyId?: string): Promise<void>;
  releaseNode(node: string): Promise<void>;
  /** A random secret every node sharing this store knows: it marks requests one node forwards to another. */
  nodeSecret(): Promise<string>;
  /** Crash signatures (the debugger toolset's similar-bug search), as JSON documents by id. */
  addSignature(keyId: string, id: string, time: string, body: unknown): Promise<void>;
  /** The newest `limit` signatures of key `keyId`, oldest first. */
  listSignatures(keyId: string, limit: number): Promise<unknown[]>;
  close(): Promise<void>;
}

/** Main-thread time an audit walk or re-hash works before other requests get a turn (TimeSlice). */
export const AUDIT_SLICE_MS = 10;

/**
 * Rows of the audit (a key's, for a key's query) one SQLite statement of an audit query reads at
 * most, whatever its filter matches: a statement is one call the event loop cannot leave.
 */
export const AUDIT_QUERY_WINDOW = 2048;

export const AUDIT_COLUMNS = ['ts', 'event', 'call_id', 'node', 'key_id', 'client', 'transport', 'session', 'debug_session', 'tool', 'args', 'outcome', 'error', 'duration_ms', 'traceparent'] as const;
