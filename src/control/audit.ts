import { createHash } from 'node:crypto';

/** One audit record as stored. `hash` links it to the record before it. */
export interface AuditRecord {
  seq: number;
  ts: string;
  /** call: a tool call admitted (written before it runs); result: how it ended; denied: refused before running. */
  event: 'call' | 'result' | 'denied';
  call_id: string;
  node: string;
  key_id: string;
  client: string;
  transport: string;
  /** The MCP session (HTTP) and the debug session the arguments name, when there are. */
  session: string | null;
  debug_session: string | null;
  tool: string;
  args: unknown;
  outcome: string | null;
  error: string | null;
  duration_ms: number | null;
  traceparent: string | null;
  prev_hash: string;
  hash: string;
}

export type AuditBody = Omit<AuditRecord, 'seq' | 'prev_hash' | 'hash'>;

export const GENESIS = '0'.repeat(64);

/** JSON with object keys sorted at every level and no whitespace: one text per value. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * A record's hash: SHA-256 over "prev_hash:seq:digest", where digest is SHA-256 over the
 * canonical JSON of the body. The same formula runs inside PostgreSQL (sha256()), so a node
 * appends with one round trip.
 */
export function chainHash(prevHash: string, seq: number, bodyDigest: string): string {
  return sha256Hex(`${prevHash}:${seq}:${bodyDigest}`);
}

export function bodyOf(record: AuditRecord): AuditBody {
  const { seq: _s, prev_hash: _p, hash: _h, ...body } = record;
  return body;
}

export interface ChainState {
  ok: boolean;
  /** Entries checked in this pass. */
  checked: number;
  /** The first entry this pass checked from: 1 for the whole chain, more when it went on from an anchor. */
  from_seq: number;
  /** The newest entry checked (0 for an empty chain). */
  head_seq: number;
  /** The first record whose hash or link does not match, and why. */
  first_broken?: { seq: number; reason: string };
  head?: string;
}

/** An entry already verified, with its hash: where a later pass can go on from. */
export interface ChainAnchor {
  seq: number;
  hash: string;
}

/** Checks records in seq order, from the start of the chain or on from an anchor. */
export class ChainVerifier {
  private prev: string;
  private expectSeq: number | undefined;
  private readonly fromSeq: number;
  checked = 0;
  broken: ChainState['first_broken'];

  constructor(anchor?: ChainAnchor) {
    this.prev = anchor?.hash ?? GENESIS;
    this.expectSeq = anchor ? anchor.seq + 1 : undefined;
    this.fromSeq = anchor ? anchor.seq + 1 : 1;
  }

  /** The anchor's own entry, read again: it must still be there with the hash it had. */
  checkAnchor(anchor: ChainAnchor, stored: AuditRecord | undefined): boolean {
    if (stored && stored.hash === anchor.hash && entryHashOk(stored)) return true;
    this.broken = { seq: anchor.seq, reason: stored ? 'the entry changed since it was last verified' : 'the entry was removed since it was last verified' };
    return false;
  }

  add(record: AuditRecord): boolean {
    if (this.broken) return false;
    this.checked++;
    const fail = (reason: string) => ((this.broken = { seq: record.seq, reason }), false);
    if (this.expectSeq !== undefined && record.seq !== this.expectSeq) return fail(`expected entry ${this.expectSeq} next, found ${record.seq} (entries missing)`);
    if (record.prev_hash !== this.prev) return fail(`prev_hash does not match the hash of the entry before it`);
    if (!entryHashOk(record)) return fail(CHANGED);
    this.prev = record.hash;
    this.expectSeq = record.seq + 1;
    return true;
  }

  state(): ChainState {
    return { ok: !this.broken, checked: this.checked, from_seq: this.fromSeq, head_seq: (this.expectSeq ?? 1) - 1, ...(this.broken ? { first_broken: this.broken } : {}), head: this.prev };
  }
}

const CHANGED = 'hash does not match the entry (its content was changed)';

/** Whether an entry's hash is the hash of its own content and link. */
export function entryHashOk(record: AuditRecord): boolean {
  return record.hash === chainHash(record.prev_hash, record.seq, sha256Hex(canonicalJson(bodyOf(record))));
}

/** The first of these entries whose content does not match its hash, as a broken state's reason. */
export function firstChangedEntry(records: readonly AuditRecord[]): ChainState['first_broken'] {
  const bad = records.find((r) => !entryHashOk(r));
  return bad ? { seq: bad.seq, reason: CHANGED } : undefined;
}

const SECRET_NAME = /pass(word|wd|phrase)?|secret|token|api[_-]?key|authori[sz]ation|credential|private[_-]?key|cookie|session[_-]?key|^auth$|^key$/i;
const SECRET_IN_TEXT = [
  /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi,
  /\bdk_[A-Za-z0-9_-]{16,}/g,
  /\b([A-Z0-9_]*(PASS(WORD)?|SECRET|TOKEN|API_?KEY|CREDENTIALS?|PRIVATE_?KEY)[A-Z0-9_]*)=("[^"]*"|'[^']*'|[^\s"']+)/gi,
  /(\w+:\/\/[^/\s:@]+:)[^@\s/]+@/g,
];
const MAX_STRING = 2000;
const MAX_DEPTH = 8;

/**
 * A copy of tool arguments safe to keep: values under secret-looking names, bearer keys,
 * NAME=secret pairs and URL passwords become "[REDACTED]"; long strings are cut.
 */
export function redact(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') {
    let text = value;
    text = text.replace(SECRET_IN_TEXT[0]!, '$1 [REDACTED]');
    text = text.replace(SECRET_IN_TEXT[1]!, '[REDACTED]');
    text = text.replace(SECRET_IN_TEXT[2]!, '$1=[REDACTED]');
    text = text.replace(SECRET_IN_TEXT[3]!, '$1[REDACTED]@');
    return text.length > MAX_STRING ? `${text.slice(0, MAX_STRING)}...[${text.length - MAX_STRING} more characters]` : text;
  }
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_DEPTH) return '[nested too deep]';
  if (Array.isArray(value)) return value.slice(0, 200).map((v) => redact(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    out[k] = SECRET_NAME.test(k) && v !== null && v !== undefined && v !== '' ? '[REDACTED]' : redact(v, depth + 1);
  }
  return out;
}

/** The debug session an argument list names (gdb `id`, python `session_id`, ...), if any. */
export function debugSessionOf(args: unknown): string | null {
  if (!args || typeof args !== 'object') return null;
  const a = args as Record<string, unknown>;
  for (const name of ['session_id', 'sessionId', 'id']) {
    if (typeof a[name] === 'string' || typeof a[name] === 'number') return String(a[name]);
  }
  return null;
}

const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** A W3C traceparent worth recording, or null (malformed values are not kept). */
export function cleanTraceparent(value: unknown): string | null {
  return typeof value === 'string' && TRACEPARENT.test(value.trim().toLowerCase()) ? value.trim().toLowerCase() : null;
}
