import { randomUUID } from 'node:crypto';
import { PERMISSION_DENIED } from '../mcp/call-runtime.js';
import { bearerChallenge, KEY_HINT } from '../server/auth.js';
import {
  AuditRedactionError,
  boundField,
  canonicalJson,
  cleanTraceparent,
  debugSessionOf,
  firstChangedEntry,
  redact,
  redactForAudit,
  sha256Hex,
  type AuditRecord,
  type ChainAnchor,
  type ChainState,
  type RunsCode,
} from './audit.js';
import { bearerToken, hashKey, sameSecret, type KeyContext } from './keys.js';
import { windowAt, type Limit } from './limits.js';
import { hasScope, requiredScopes, type ToolInfo } from './scopes.js';
import { TimeSlice } from '../core/wait.js';
import { AUDIT_SLICE_MS, type AuditQuery, type KeyRecord, type SessionLocation, type Store } from './store.js';

/** How long a node trusts a key it looked up in a shared (PostgreSQL) store. */
export const KEY_CACHE_MS = 1000;

export const AUTH_FAILED = -32001;
export const QUOTA_EXCEEDED = -32002;
// -32003: one constant, the tool wrapper's (a capability refusal is answered there too).
export { PERMISSION_DENIED };
export const LICENSE_EXPIRED = -32010;

/** Tool names a batch's refusal entry names one by one (recordDeniedBatch); calls of further names are counted. */
export const MAX_BATCH_TOOLS = 32;

/** A refusal in the contract's terms: JSON-RPC code, message, data, and the HTTP status. */
export interface Refusal {
  code: number;
  message: string;
  data?: Record<string, unknown>;
  status: number;
  headers?: Record<string, string>;
}

export interface Admission {
  ok: boolean;
  /** Rate-limit fields to put on the HTTP answer (empty for a key without limits). */
  headers: Record<string, string>;
  refusal?: Refusal;
}

export interface LimitStatus {
  limit: number;
  used: number;
  remaining: number;
  period: string;
  reset_at: string;
}

/** quota_status: what a key has used of its rate limit and quota. */
export interface QuotaStatus {
  key_id: string;
  key_name: string;
  rate: LimitStatus | null;
  quota: LimitStatus | null;
}

/** What the audit learns about the caller of one call. */
export interface CallInfo {
  tool: string;
  args: unknown;
  client: string;
  transport: 'http' | 'stdio' | 'rest';
  session?: string | null;
  traceparent?: unknown;
  /** The debug session the call acts on, where the transport knows it better than the arguments do (a REST route's path); else read from `args`. */
  debugSession?: string | null;
  /**
   * A REST route's toolset and whether it only reads (GET): its audit reads its arguments as the
   * toolset's tools' are (`POST /sessions` runs a Python program, as python_start_session does:
   * attack 18al u1-3). A tool call's come from the catalog.
   */
  route?: { toolset: string; readOnly: boolean };
}

/** Ends an audited call: records its outcome and duration. */
export type FinishCall = (outcome: { ok: boolean; error?: string; cancelled?: boolean }) => Promise<void>;

export interface AuditReport {
  entries: AuditRecord[];
  verification: ChainState;
  /** Matching entries not shown, older than those shown (`maxChars`). */
  left_out?: number;
}

/** The newest of `entries` (in order) whose JSON fits in `maxChars` in all; at least the newest one. */
function newestWithin(entries: readonly AuditRecord[], maxChars: number): AuditRecord[] {
  let used = 0;
  let from = entries.length;
  while (from > 0) {
    const size = JSON.stringify(entries[from - 1]).length;
    if (from < entries.length && used + size > maxChars) break;
    used += size;
    from--;
  }
  return entries.slice(from);
}

export const LOCAL_KEY: KeyContext = { id: 'local', name: 'local user (stdio)', scopes: ['*'], rate: null, quota: null };

export interface ControlPlaneOptions {
  store: Store;
  node: { id: string; url?: string };
  /** The single full-scope key of `--api-key` (or the generated one). */
  apiKey?: string;
  noAuth?: boolean;
  warn?: (message: string) => void;
  /** How often an audit query walks the whole chain; in between it checks on from the last verified entry. */
  fullVerifyEveryMs?: number;
}

/**
 * The control plane behind a narrow interface: authenticate, authorizeTool, admit, audit,
 * visibleTools. Knows no toolset and no transport; the server calls it at a few marked places.
 */
export class ControlPlane {
  private readonly tools = new Map<string, ToolInfo>();
  private secret: string | undefined;
  private readonly keyCache = new Map<string, { record: KeyRecord | undefined; at: number }>();
  readonly store: Store;
  readonly node: { id: string; url?: string };

  constructor(private readonly opts: ControlPlaneOptions) {
    this.store = opts.store;
    this.node = opts.node;
  }

  /** The tools the server serves, with their toolset and read-only flag. */
  setCatalog(tools: ToolInfo[]): void {
    this.tools.clear();
    for (const t of tools) this.tools.set(t.name, t);
  }

  /** Whether a tool runs code its arguments give (a debugger's toolset): the audit reads their code fields as code. Unknown tools do not. */
  private runsCode(call: CallInfo): RunsCode {
    const toolset = call.route?.toolset ?? this.tool(call.tool)?.toolset;
    return toolset === 'gdb' ? 'gdb' : toolset === 'python' || toolset === 'debugger';
  }

  /** Whether the call runs something (a debugger's code, a mocks command line): its audit record is kept whole, or the call refused. */
  private runs(call: CallInfo): boolean {
    return this.runsCode(call) !== false || (call.route?.readOnly ?? this.tool(call.tool)?.readOnly) === false;
  }

  tool(name: string): ToolInfo | undefined {
    return this.tools.get(name) ?? this.tools.get(name.replace(/\//g, '_')) ?? this.tools.get(name.replace(/\//g, '.'));
  }

  async authenticate(authorization: string | undefined): Promise<{ key: KeyContext } | { refusal: Refusal }> {
    const fail = (error: 'invalid_request' | 'invalid_token', detail?: string): { refusal: Refusal } => ({
      // The body stays kindly-debugger's; the reason, and how to authenticate, go in the RFC 6750 challenge.
      refusal: { code: AUTH_FAILED, message: 'Authentication failed', status: 401, headers: { 'WWW-Authenticate': bearerChallenge(error, detail ? `${detail}: ${KEY_HINT}` : KEY_HINT) } },
    });
    if (this.opts.noAuth) return { key: { ...LOCAL_KEY, id: 'anonymous', name: 'anonymous (--no-auth)' } };
    const token = bearerToken(authorization);
    if (!token) return fail('invalid_request');
    if (this.opts.apiKey && sameSecret(token, this.opts.apiKey)) return { key: { id: 'api-key', name: '--api-key', scopes: ['*'], rate: null, quota: null } };
    const hash = hashKey(token);
    const record = await this.lookup(hash);
    if (!record) return fail('invalid_token', 'invalid API key');
    if (record.revoked_at) return fail('invalid_token', `API key ${record.id} was revoked at ${record.revoked_at}`);
    if (record.expires_at && Date.parse(record.expires_at) <= Date.now()) {
      // kindly-debugger's own code for a key past its end: -32010 "License expired", with when.
      return { refusal: { code: LICENSE_EXPIRED, message: 'License expired', status: 403, data: { key_id: record.id, expired_at: record.expires_at } } };
    }
    return { key: { id: record.id, name: record.name, scopes: record.scopes, rate: record.rate, quota: record.quota, expires_at: record.expires_at, hash } };
  }

  /**
   * Why a key authenticated before a wait may no longer be used (revoked or expired since), or
   * undefined. A call whose audit waited for the redaction threads ran seconds after its key was
   * revoked (attack 18ab C4).
   */
  private async stillValid(key: KeyContext): Promise<string | undefined> {
    if (key.hash === undefined) return undefined;
    const record = await this.lookup(key.hash);
    if (!record) return `API key ${key.id} no longer exists`;
    if (record.revoked_at) return `API key ${record.id} was revoked at ${record.revoked_at}`;
    if (record.expires_at && Date.parse(record.expires_at) <= Date.now()) return `API key ${record.id} expired at ${record.expires_at}`;
    return undefined;
  }

  /**
   * A shared store costs a round trip per lookup: PostgreSQL lookups are kept for KEY_CACHE_MS, so
   * a revocation reaches every node within that time. SQLite is asked every time (microseconds).
   */
  private async lookup(hash: string): Promise<KeyRecord | undefined> {
    if (this.store.kind !== 'postgres') return this.store.keyByHash(hash);
    const now = Date.now();
    const hit = this.keyCache.get(hash);
    if (hit && now - hit.at < KEY_CACHE_MS) return hit.record;
    const record = await this.store.keyByHash(hash);
    if (this.keyCache.size >= 10_000) this.keyCache.clear();
    this.keyCache.set(hash, { record, at: now });
    return record;
  }

  /** Null when the key may call this tool at all; otherwise -32003 naming the scope it lacks (-32602 for an unknown tool). */
  authorizeTool(key: KeyContext, toolName: string): Refusal | null {
    const info = this.tool(toolName);
    // Fail closed: a name the catalog does not know is never passed on to be resolved elsewhere.
    if (!info) {
      return { code: -32602, message: `Unknown tool: ${toolName.slice(0, 200)} (tools/list names the tools this key may call)`, data: { tool: toolName.slice(0, 200) }, status: 200 };
    }
    return this.authorizeScopes(key, toolName, requiredScopes(info));
  }

  /**
   * Null when the key holds every scope in `needed`; otherwise -32003 naming the ones it lacks.
   * The one refusal for scopes: a tool's own (authorizeTool) and the capability scopes a call's
   * arguments reach for, as its toolset reads them.
   */
  authorizeScopes(key: KeyContext, toolName: string, needed: readonly string[]): Refusal | null {
    const missing = needed.filter((s) => !hasScope(key.scopes, s));
    if (missing.length === 0) return null;
    return {
      code: PERMISSION_DENIED,
      message: `Permission denied: ${toolName} needs scope ${missing.join(' and ')}; this key (${key.id}) has ${key.scopes.join(', ')}`,
      data: { tool: toolName, required_scope: missing[0], required_scopes: missing, key_id: key.id, granted_scopes: key.scopes },
      status: 403,
    };
  }

  /** The subset of `names` the key may call at all (capabilities its arguments might need aside). */
  visibleTools(key: KeyContext, names: string[]): string[] {
    return names.filter((name) => {
      const info = this.tool(name);
      return !info || requiredScopes(info).every((s) => hasScope(key.scopes, s));
    });
  }

  /**
   * Rate limit and quota for one request. `count.rate`: count it on the rate limit (every
   * authenticated request); `count.quota`: count it on the quota too (a tool call, or a REST route).
   * A counter not asked for is only reported. The rate is counted first and on its own: a request
   * refused by the rate limit uses nothing, and a tool call refused by its quota still used its unit
   * of rate (it was a request). Counters are atomic in the store, shared by every node.
   */
  async admit(key: KeyContext, count: { rate: boolean; quota: boolean }): Promise<Admission> {
    const now = Date.now();
    const windows = limitWindows(key, now);
    if (windows.length === 0) return { ok: true, headers: {} };
    const counts: Array<number | undefined> = windows.map(() => undefined);
    let refused = -1;
    for (const [i, x] of windows.entries()) {
      if (!count[x.kind]) continue;
      const r = await this.store.bump(key.id, [{ bucket: x.bucket, limit: x.l.limit, expiresAt: x.w.end }]);
      counts[i] = r.counts[0] ?? 0;
      if (r.refused >= 0) {
        refused = i;
        break;
      }
    }
    // Counters not counted (not asked for, or after the refused one): show what they hold.
    const rest = windows.map((x, i) => (counts[i] === undefined ? i : -1)).filter((i) => i >= 0);
    if (rest.length > 0) {
      const held = await this.store.peek(
        key.id,
        rest.map((i) => windows[i]!.bucket),
      );
      rest.forEach((i, j) => (counts[i] = held[j] ?? 0));
    }
    return limitAdmission(windows, counts as number[], refused, now);
  }

  /**
   * The refusal a key's next request gets when it is already at its rate limit, found by reading
   * its counters (nothing is counted), or undefined. The HTTP edge asks before it reads a body, so
   * a key past its limit is not served a parse of up to --max-body bytes first (attack e1-2).
   */
  async overRate(key: KeyContext): Promise<Admission | undefined> {
    if (!key.rate) return undefined;
    const now = Date.now();
    const windows = limitWindows(key, now);
    const counts = await this.store.peek(
      key.id,
      windows.map((x) => x.bucket),
    );
    const refused = windows.findIndex((x, i) => x.kind === 'rate' && (counts[i] ?? 0) >= x.l.limit);
    if (refused < 0) return undefined;
    return limitAdmission(
      windows,
      windows.map((_, i) => counts[i] ?? 0),
      refused,
      now,
    );
  }

  async quotaStatus(key: KeyContext): Promise<QuotaStatus> {
    const now = Date.now();
    const one = async (kind: 'rate' | 'quota', l: Limit | null): Promise<LimitStatus | null> => {
      if (!l) return null;
      const w = windowAt(l.unit, now);
      const [used = 0] = await this.store.peek(key.id, [`${kind}:${w.id}`]);
      return { limit: l.limit, used, remaining: Math.max(0, l.limit - used), period: l.unit, reset_at: new Date(w.end).toISOString() };
    };
    return { key_id: key.id, key_name: key.name, rate: await one('rate', key.rate), quota: await one('quota', key.quota) };
  }

  /**
   * The control plane's part of the live view (/ui) for `key`: its own rate limit and quota; for
   * the operator's key (every scope), every live key's, and the audit's last entries (arguments cut
   * to a preview) with the chain's verification (the walk is shared and goes on from its anchor).
   */
  async liveControl(key: KeyContext): Promise<{ keys: QuotaStatus[]; audit?: { entries: Array<Omit<AuditRecord, 'prev_hash' | 'hash'>>; verification: ChainState } }> {
    if (!key.scopes.includes('*')) return { keys: [await this.quotaStatus(key)] };
    const live = (await this.store.listKeys()).filter((k) => !k.revoked_at && (!k.expires_at || Date.parse(k.expires_at) > Date.now())).slice(0, 200);
    const keys = await Promise.all(live.map((k) => this.quotaStatus(k)));
    const tail = await this.queryAudit({ limit: 20, preview: 200, maxChars: 20_000 });
    const entries = tail.entries.map(({ prev_hash: _prev, hash: _hash, ...entry }) => entry).sort((a, b) => b.seq - a.seq);
    return { keys, audit: { entries, verification: tail.verification } };
  }

  /**
   * Records a call before it runs and returns the function that records its end. Throws when the
   * entry cannot be written: the caller must then refuse the call.
   */
  async beginCall(key: KeyContext, call: CallInfo): Promise<FinishCall> {
    const callId = randomUUID();
    const started = performance.now();
    const base = { call_id: callId, node: this.node.id, key_id: key.id, ...this.callFields(call) };
    let args: unknown;
    try {
      args = await redactForAudit(call.args ?? {}, key.id, false, this.runsCode(call), this.runs(call));
    } catch (err) {
      if (!(err instanceof AuditRedactionError)) throw err;
      // Not run unaudited: the refusal is what the audit keeps, and the caller refuses the call.
      const why = `its arguments could not be redacted for the audit (${err.message}); the call was not run: send fewer or shorter arguments`;
      await this.store.appendAudit({ ...base, ts: new Date().toISOString(), event: 'denied', args: { '[not kept]': err.message }, outcome: 'refused', error: boundField(why, 2000), duration_ms: 0 });
      throw new Error(why, { cause: err });
    }
    // The redaction may have waited its turn: the key is checked again just before the call is recorded and run.
    const gone = await this.stillValid(key);
    if (gone) {
      await this.store.appendAudit({ ...base, ts: new Date().toISOString(), event: 'denied', args, outcome: 'refused', error: boundField(gone, 2000), duration_ms: 0 });
      throw new Error(`${gone}; the call was not run`);
    }
    await this.store.appendAudit({ ...base, ts: new Date().toISOString(), event: 'call', args, outcome: null, error: null, duration_ms: null });
    this.warnAnchor();
    return async (outcome) => {
      const duration = Math.round((performance.now() - started) * 1000) / 1000;
      try {
        await this.store.appendAudit({
          ...base,
          ts: new Date().toISOString(),
          event: 'result',
          args: {},
          outcome: outcome.cancelled ? 'cancelled' : outcome.ok ? 'ok' : 'error',
          error: outcome.error ? String(redact(outcome.error.slice(0, 500))) : null,
          duration_ms: duration,
        });
      } catch (err) {
        this.opts.warn?.(`audit: the result of call ${callId} (${call.tool}) could not be recorded: ${String(err)}`);
      }
    };
  }

  /**
   * What an entry says of the caller, every client-chosen text bounded (a tool name, a client
   * name or a session id past 512 characters is kept cut, with its length and SHA-256).
   */
  private callFields(call: CallInfo) {
    const session = call.debugSession !== undefined ? call.debugSession : debugSessionOf(call.args);
    return {
      client: boundField(call.client),
      transport: call.transport,
      session: call.session == null ? null : boundField(call.session),
      debug_session: session === null ? null : boundField(session),
      tool: boundField(call.tool),
      traceparent: cleanTraceparent(call.traceparent),
    };
  }

  private readonly anchorWarned = new Set<string>();

  /** Says once when the checkpoint file shows the chain was cut or rewritten behind the server's back, and once when it cannot be written. */
  private warnAnchor(): void {
    const checkpoint = this.store.auditAnchor?.checkpoint;
    if (checkpoint?.problem && !this.anchorWarned.has('problem')) {
      this.anchorWarned.add('problem');
      this.opts.warn?.(`audit: ${checkpoint.problem}; the checkpoint file is left as it is, for debugkit audit verify to report`);
    }
    if (checkpoint?.writeError && !this.anchorWarned.has('write')) {
      this.anchorWarned.add('write');
      this.opts.warn?.(`audit: ${checkpoint.writeError}`);
    }
  }

  /** Records a call refused before it ran (scope, rate limit, quota); `args`: what the entry keeps of its arguments. */
  async recordDenied(key: KeyContext, call: CallInfo, refusal: Refusal, kept?: unknown): Promise<void> {
    const args = kept ?? (await redactForAudit(call.args ?? {}, key.id, true, this.runsCode(call)));
    await this.store.appendAudit({
      ts: new Date().toISOString(),
      event: 'denied',
      call_id: randomUUID(),
      node: this.node.id,
      key_id: key.id,
      ...this.callFields(call),
      args,
      outcome: refusal.code === PERMISSION_DENIED ? 'permission_denied' : refusal.code === QUOTA_EXCEEDED ? 'limited' : 'refused',
      error: boundField(refusal.message, 2000),
      duration_ms: 0,
    });
    this.warnAnchor();
  }

  /**
   * Records the calls of one request (a JSON-RPC batch) the rate limit or quota refused as ONE
   * entry: a key past its limit must not grow the audit by a batch's worth of entries a request.
   * The entry still says what the key tried: how many calls, each tool named and how often (at
   * most MAX_BATCH_TOOLS names, the rest counted), and the SHA-256 of the calls as audited one by
   * one would have shown them (redacted: no digest of a secret), in order.
   */
  async recordDeniedBatch(key: KeyContext, calls: readonly CallInfo[], refusal: Refusal): Promise<void> {
    const first = calls[0];
    if (!first) return;
    if (calls.length === 1) return this.recordDenied(key, first, refusal);
    // A Map: tool names are the client's text ("__proto__" included).
    const tools = new Map<string, number>();
    let others = 0;
    for (const call of calls) {
      const name = boundField(call.tool, 128);
      if (tools.has(name) || tools.size < MAX_BATCH_TOOLS) tools.set(name, (tools.get(name) ?? 0) + 1);
      else others++;
    }
    // Each call redacted in turn, the loop free between them (redactForAudit gives it a turn before each).
    const redacted: unknown[] = [];
    for (const c of calls) redacted.push([c.tool, await redactForAudit(c.args ?? {}, key.id, true, this.runsCode(c))]);
    const digest = sha256Hex(canonicalJson(redacted));
    const summary = { refused_calls: calls.length, tools: Object.fromEntries(tools), ...(others > 0 ? { other_tools_calls: others } : {}), calls_sha256: digest };
    await this.recordDenied(key, { ...first, tool: `batch of ${calls.length} calls`, debugSession: null }, refusal, summary);
  }

  /**
   * The audit query API: entries matching the filter (newest `limit`, in order) and the chain's
   * state. The chain is walked whole at most every `fullVerifyEveryMs` (default 10 minutes); in
   * between, a query checks on from the last verified entry (which must be unchanged) and re-hashes
   * every entry it returns, so a query costs what was appended since, not the whole history.
   * Queries at the same time share one walk, and every walk and re-hash works in slices of the main
   * thread's time (a chain any key can grow never holds the loop). With `preview`, the entries'
   * arguments are cut in the store's query for display, and with `maxChars`, entries stop (newest
   * kept) once their JSON would pass that many characters: what is left out is counted, never read
   * whole. `debugkit audit verify` always walks the whole chain.
   */
  async queryAudit(q: AuditQuery & { maxChars?: number }): Promise<AuditReport> {
    const { maxChars, ...query } = q;
    const [found, chain] = await Promise.all([this.store.queryAudit({ ...query, limit: Math.min(q.limit ?? 100, 1000) }), this.verifyChain()]);
    const entries = maxChars === undefined ? found : newestWithin(found, maxChars);
    const changed = chain.ok ? await this.firstChanged(entries, q.preview !== undefined, chain.keyed_from) : undefined;
    const report: AuditReport = { entries, verification: changed ? { ...chain, ok: false, first_broken: changed } : chain };
    return found.length > entries.length ? { ...report, left_out: found.length - entries.length } : report;
  }

  /** The first of `entries` changed since written: each read whole again when it is a preview, one at a time, in slices. */
  private async firstChanged(entries: readonly AuditRecord[], previews: boolean, keyedFrom: number | undefined): Promise<ChainState['first_broken']> {
    const key = this.store.auditAnchor?.key;
    const slice = new TimeSlice(AUDIT_SLICE_MS);
    for (const shown of entries) {
      const whole = previews ? await this.store.auditEntry(shown.seq) : shown;
      if (!whole) return { seq: shown.seq, reason: 'the entry was removed while it was being read' };
      const changed = firstChangedEntry([whole], key, keyedFrom);
      if (changed) return changed;
      await slice.pause();
    }
    return undefined;
  }

  private anchor: (ChainAnchor & { fullAt: number }) | undefined;
  /** The walk under way: queries that come meanwhile wait for it rather than start their own. */
  private verifying: Promise<ChainState> | undefined;

  private verifyChain(): Promise<ChainState> {
    this.verifying ??= this.walkChain().finally(() => (this.verifying = undefined));
    return this.verifying;
  }

  private async walkChain(): Promise<ChainState> {
    const now = Date.now();
    const anchor = this.anchor && now - this.anchor.fullAt < (this.opts.fullVerifyEveryMs ?? 600_000) ? this.anchor : undefined;
    const state = await this.store.verifyAudit(anchor);
    // A broken chain is walked whole again next time; a sound one is the next pass's anchor.
    this.anchor =
      state.ok && state.head && state.head_seq > 0
        ? { seq: state.head_seq, hash: state.head, ...(state.keyed_from !== undefined ? { keyed_from: state.keyed_from } : {}), fullAt: anchor?.fullAt ?? now }
        : undefined;
    return state;
  }

  /** Sessions this node claimed and has not released: found here without asking the store. */
  private readonly heldHere = new Set<string>();

  /** Records that this node holds session `id` for `key`; a row another key holds is never taken over. */
  async claimSession(id: string, key: KeyContext): Promise<void> {
    if (!this.node.url) return;
    await this.store.claimSession(id, { node: this.node.id, url: this.node.url, key_id: key.id });
    if (this.heldHere.size >= 100_000) this.heldHere.clear(); // a bound: forgetting only costs a lookup
    this.heldHere.add(id);
  }

  /** The node holding a session, when it is another one. */
  async locateSession(id: string): Promise<SessionLocation | undefined> {
    if (this.heldHere.has(id)) return undefined;
    const where = await this.store.locateSession(id);
    return where && where.node !== this.node.id ? where : undefined;
  }

  /** Drops the row of session `id` (only `key`'s row, when a key is given). */
  async releaseSession(id: string, key?: KeyContext): Promise<void> {
    this.heldHere.delete(id);
    await this.store.releaseSession(id, key?.id).catch(() => undefined);
  }

  /** The value a forwarded request carries so the receiving node trusts it. */
  async forwardToken(): Promise<string> {
    this.secret ??= await this.store.nodeSecret();
    return this.secret;
  }

  async isForwarded(value: string | undefined): Promise<boolean> {
    return value !== undefined && sameSecret(value, await this.forwardToken());
  }

  async close(): Promise<void> {
    if (this.node.url) await this.store.releaseNode(this.node.id).catch(() => undefined);
    await this.store.close();
  }
}

interface WindowUse {
  kind: 'rate' | 'quota';
  limit: number;
  used: number;
  start: number;
  end: number;
}

interface LimitWindow {
  kind: 'rate' | 'quota';
  l: Limit;
  w: ReturnType<typeof windowAt>;
  bucket: string;
}

/** The key's rate limit and quota (those it has) in their windows at `now`, with their counters' names. */
function limitWindows(key: KeyContext, now: number): LimitWindow[] {
  const limits = (
    [
      ['rate', key.rate],
      ['quota', key.quota],
    ] as const
  ).filter((l): l is readonly ['rate' | 'quota', Limit] => l[1] !== null);
  return limits.map(([kind, l]) => ({ kind, l, w: windowAt(l.unit, now), bucket: `${kind}:${windowAt(l.unit, now).id}` }));
}

/** The answer to a request once its counters are known: the rate-limit fields, and the refusal of window `refused` (-1: none). */
function limitAdmission(windows: LimitWindow[], counts: number[], refused: number, now: number): Admission {
  const headers = rateHeaders(
    windows.map((x, i) => ({ kind: x.kind, limit: x.l.limit, used: counts[i]!, start: x.w.start, end: x.w.end })),
    now,
  );
  if (refused < 0) return { ok: true, headers };
  const hit = windows[refused]!;
  const retryAfter = Math.max(1, Math.ceil((hit.w.end - now) / 1000));
  const resetAt = new Date(hit.w.end).toISOString();
  return {
    ok: false,
    headers: { ...headers, 'Retry-After': String(retryAfter) },
    refusal: {
      code: QUOTA_EXCEEDED,
      message:
        hit.kind === 'rate'
          ? `Rate limit exceeded: ${hit.l.limit} requests per ${hit.l.unit}; retry after ${retryAfter} s`
          : `Quota exceeded: ${hit.l.limit} calls per ${hit.l.unit}, resets at ${resetAt}`,
      data: { limit: hit.l.limit, used: counts[refused]!, reset_at: resetAt, kind: hit.kind, retry_after: retryAfter },
      status: 429,
    },
  };
}

/**
 * kindly-debugger's X-RateLimit-* fields (for the first policy: the rate limit when there is one) and the
 * IETF RateLimit-Policy / RateLimit fields for every policy.
 */
export function rateHeaders(uses: WindowUse[], now: number): Record<string, string> {
  const first = uses[0]!;
  const policy = (u: WindowUse) => `"${u.kind}";q=${u.limit};w=${Math.round((u.end - u.start) / 1000)}`;
  const state = (u: WindowUse) => `"${u.kind}";r=${Math.max(0, u.limit - u.used)};t=${Math.max(0, Math.ceil((u.end - now) / 1000))}`;
  return {
    'X-RateLimit-Limit': String(first.limit),
    'X-RateLimit-Remaining': String(Math.max(0, first.limit - first.used)),
    'X-RateLimit-Reset': String(Math.ceil(first.end / 1000)),
    'RateLimit-Policy': uses.map(policy).join(', '),
    RateLimit: uses.map(state).join(', '),
  };
}
