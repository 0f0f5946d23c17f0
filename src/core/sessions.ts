import { randomUUID } from 'node:crypto';
import { DebugkitError, SessionNotFoundError } from './errors.js';

/** What a registry holds: anything that can be ended and release its processes. */
export interface SessionResource {
  dispose(reason: string): Promise<void>;
}

export interface SessionInfo {
  id: string;
  created: Date;
  lastUsed: Date;
  owner: string;
  timeoutMs: number;
}

interface Entry<S> extends SessionInfo {
  session: S;
  /** The key (API key id) the owner acted for when it created the session: the per-key cap counts by it. */
  key: string;
  /** Where the entry lives in the maps: the id itself, or owner and id for an id the caller chose. */
  slot: string;
  busy: number;
  timer: NodeJS.Timeout | undefined;
}

/** A slot reserved before the factory's first await, so the caps and a chosen id hold while it starts. */
interface Reservation {
  owner: string;
  key: string;
  /** Set when the owner was released while the session was starting: it is ended as soon as it exists. */
  cancelled?: string;
}

/** Why a session ended, kept for a late call; a chosen id's reason is told only to its owner. */
interface Tombstone {
  id: string;
  owner: string;
  chosen: boolean;
  reason: string;
}

export interface RegistryOptions<S = unknown> {
  /** Used in messages: "gdb session", "python session". */
  kind: string;
  /** Most sessions one client (owner: an MCP session or the REST key) may hold at once. */
  maxSessions: number;
  /** Most sessions all clients together may hold at once (default: no global cap). */
  maxSessionsTotal?: number;
  /** Most sessions all clients of one key may hold together (default: no per-key cap). */
  maxSessionsPerKey?: number;
  /**
   * Called when a session ended by itself, without its client: its idle timeout, or its engine
   * exiting (`forget`). Owners log it, and the server forgets what it recorded for the session
   * elsewhere (the row that routes it between nodes).
   */
  onExpire?: (info: SessionInfo, reason: string) => void;
  /**
   * The message refusing a chosen id the owner already uses: `session` is the one holding it, or
   * undefined while another create of that id is still starting.
   */
  describeTaken?: (id: string, session: S | undefined) => string;
}

export interface CreateOptions {
  /**
   * The id the caller chose (unique per owner: two owners may both have "default", and neither
   * sees the other's). Default: a random UUID.
   */
  id?: string;
  /** The key the owner acts for (see `clientKey`); default: the owner itself. */
  key?: string;
  /**
   * The signal of the call that asks for the session: once it is aborted (the client went away, its
   * MCP session was deleted, the request or its task was cancelled) no session is made, and one that
   * was starting is ended as soon as it exists. Nobody could reach it: its id would never be answered.
   */
  signal?: AbortSignal;
}

/** The key a client acts for, as the per-key cap counts it: its principal's id ('local' on stdio and under the one --api-key). */
export function clientKey(client: { principal?: { id: string } }): string {
  return client.principal?.id ?? 'local';
}

/**
 * Ids, ownership, idle timeouts and the concurrency limits for one toolset's sessions. A session
 * is idle only while no call is using it; `use()` marks it busy so long calls never expire.
 * Creation is atomic: the slot (and a chosen id) is reserved before the factory runs, so a
 * concurrent create of the same id is refused instead of starting a second engine.
 */
export class SessionRegistry<S extends SessionResource> {
  private readonly entries = new Map<string, Entry<S>>();
  /** Why recently ended sessions ended, so a late call learns more than "not found". */
  private readonly ended = new Map<string, Tombstone>();
  /** Sessions being created, by slot: they count against every cap while they start. */
  private readonly pending = new Map<string, Reservation>();
  private closed = false;

  constructor(private readonly options: RegistryOptions<S>) {}

  get size(): number {
    return this.entries.size;
  }

  async create(owner: string, timeoutMs: number, factory: (id: string) => Promise<S>, options: CreateOptions = {}): Promise<SessionInfo> {
    if (this.closed) throw new DebugkitError('SESSION_CLOSED', 'the server is shutting down; no new sessions');
    const chosen = options.id !== undefined;
    const id = options.id ?? randomUUID();
    const key = options.key ?? owner;
    const slot = slotOf(owner, id, chosen);
    if (chosen) this.checkFree(slot, id);
    const { signal } = options;
    if (signal?.aborted) throw new DebugkitError('SESSION_CLOSED', `no ${this.options.kind} was started: ${abandoned(signal)}`);
    this.checkCaps(owner, key);
    // Reserved before the first await: from here on the id is taken and the slot counted.
    const reservation: Reservation = { owner, key };
    this.pending.set(slot, reservation);
    const onAbort = () => (reservation.cancelled ??= abandoned(signal!));
    signal?.addEventListener('abort', onAbort, { once: true });
    let session: S;
    try {
      session = await factory(id);
    } finally {
      this.pending.delete(slot);
      signal?.removeEventListener('abort', onAbort);
    }
    if (this.closed || reservation.cancelled !== undefined) {
      const reason = this.closed ? 'server shutting down' : reservation.cancelled!;
      await session.dispose(reason);
      throw new DebugkitError('SESSION_CLOSED', this.closed ? 'the server is shutting down; no new sessions' : `the ${this.options.kind} was ended while it started: ${reason}`);
    }
    const now = new Date();
    const entry: Entry<S> = { id, created: now, lastUsed: now, owner, timeoutMs, session, key, slot, busy: 0, timer: undefined };
    this.entries.set(slot, entry);
    this.ended.delete(slot);
    this.arm(entry);
    return this.info(entry);
  }

  /** Refuses a chosen id the owner already holds, or that another create of the owner is starting. */
  private checkFree(slot: string, id: string): void {
    const existing = this.entries.get(slot);
    if (!existing && !this.pending.has(slot)) return;
    const message = this.options.describeTaken?.(id, existing?.session) ?? `${this.options.kind} "${id}" ${existing ? 'already exists' : 'is starting'}: close it first, or choose another id`;
    throw new DebugkitError('INVALID_ARGUMENT', message);
  }

  /** Refuses a new session over the per-client, per-key or global cap, naming the cap that was hit. */
  private checkCaps(owner: string, key: string): void {
    const { kind, maxSessions, maxSessionsTotal = Number.POSITIVE_INFINITY, maxSessionsPerKey = Number.POSITIVE_INFINITY } = this.options;
    let mine = 0;
    let ofKey = 0;
    for (const held of [...this.entries.values(), ...this.pending.values()]) {
      if (held.owner === owner) mine++;
      if (held.key === key) ofKey++;
    }
    if (mine >= maxSessions) {
      throw new DebugkitError('SESSION_LIMIT', `too many ${kind}s for this client: it has ${maxSessions} open, the per-client limit (--max-sessions). Close one with its close tool first.`);
    }
    if (ofKey >= maxSessionsPerKey) {
      throw new DebugkitError(
        'SESSION_LIMIT',
        `too many ${kind}s for this key: its clients have ${maxSessionsPerKey} open together, the per-key limit (--max-sessions-per-key). Close one (its close tool, in the MCP session that opened it), or end an MCP session of this key that holds some.`,
      );
    }
    if (this.entries.size + this.pending.size >= maxSessionsTotal) {
      throw new DebugkitError(
        'SESSION_LIMIT',
        `too many ${kind}s on this server: ${maxSessionsTotal} are open over all clients, the server-wide limit (--max-sessions-total). Close one of yours, or try again later.`,
      );
    }
  }

  /** Runs `fn` with the session, keeping it from expiring meanwhile. */
  async use<T>(owner: string, id: string, fn: (session: S) => Promise<T>): Promise<T> {
    const entry = this.lookup(owner, id);
    entry.busy++;
    this.disarm(entry);
    try {
      return await fn(entry.session);
    } finally {
      entry.busy--;
      entry.lastUsed = new Date();
      if (this.entries.get(entry.slot) === entry) this.arm(entry);
    }
  }

  get(owner: string, id: string): S {
    return this.lookup(owner, id).session;
  }

  /** The session, or undefined when this owner has none by that id. */
  find(owner: string, id: string): S | undefined {
    try {
      return this.lookup(owner, id).session;
    } catch {
      return undefined;
    }
  }

  /** Every live session with the key it was opened for (the live view; never an answer to a client). */
  all(): Array<SessionInfo & { key: string }> {
    return [...this.entries.values()].map((e) => ({ ...this.info(e), key: e.key }));
  }

  list(owner: string): SessionInfo[] {
    return [...this.entries.values()].filter((e) => e.owner === owner).map((e) => this.info(e));
  }

  async close(owner: string, id: string, reason = 'closed by client'): Promise<void> {
    const entry = this.lookup(owner, id);
    await this.end(entry, reason);
  }

  /**
   * Forgets a session whose engine ended on its own (it has already released its processes).
   * A session with a chosen id is named with its owner.
   */
  forget(id: string, reason: string, owner?: string): void {
    const entry = this.entries.get(owner === undefined ? id : slotOf(owner, id, true)) ?? this.entries.get(id);
    if (!entry || entry.id !== id || (owner !== undefined && entry.owner !== owner)) return;
    this.disarm(entry);
    this.entries.delete(entry.slot);
    this.remember(entry, reason);
    this.options.onExpire?.(this.info(entry), reason);
  }

  /** Ends the owner's sessions, and those it is still starting as soon as they exist. */
  async closeOwnedBy(owner: string, reason: string): Promise<void> {
    for (const reservation of this.pending.values()) {
      if (reservation.owner === owner) reservation.cancelled ??= reason;
    }
    const mine = [...this.entries.values()].filter((e) => e.owner === owner);
    await Promise.all(mine.map((e) => this.end(e, reason)));
  }

  async closeAll(reason: string): Promise<void> {
    this.closed = true;
    await Promise.all([...this.entries.values()].map((e) => this.end(e, reason)));
  }

  /** The owner's session `id`: a chosen id is looked up under the owner, a random one by itself. */
  private lookup(owner: string, id: string): Entry<S> {
    const entry = this.entries.get(slotOf(owner, id, true)) ?? this.entries.get(id);
    // Another client's session is reported exactly like a missing one: ids are not an oracle.
    if (!entry || entry.owner !== owner || entry.id !== id) throw new SessionNotFoundError(id, this.endedReason(owner, id));
    return entry;
  }

  /**
   * Why the owner's session `id` ended, if it did recently: only to its owner. To anyone else an
   * ended session reads exactly like one that never existed (ids are not an oracle, even of the past).
   */
  private endedReason(owner: string, id: string): string | undefined {
    const ended = this.ended.get(slotOf(owner, id, true)) ?? this.ended.get(id);
    return ended && ended.owner === owner && ended.id === id ? ended.reason : undefined;
  }

  private async end(entry: Entry<S>, reason: string): Promise<void> {
    this.disarm(entry);
    this.entries.delete(entry.slot);
    this.remember(entry, reason);
    await entry.session.dispose(reason);
  }

  private remember(entry: Entry<S>, reason: string): void {
    this.ended.delete(entry.slot);
    this.ended.set(entry.slot, { id: entry.id, owner: entry.owner, chosen: entry.slot !== entry.id, reason });
    if (this.ended.size > 256) this.ended.delete(this.ended.keys().next().value!);
  }

  private arm(entry: Entry<S>): void {
    this.disarm(entry);
    if (entry.busy > 0 || entry.timeoutMs <= 0) return;
    entry.timer = setTimeout(() => {
      if (this.entries.get(entry.slot) !== entry || entry.busy > 0) return;
      const reason = `idle for ${Math.round(entry.timeoutMs / 1000)} s (session timeout)`;
      this.options.onExpire?.(this.info(entry), reason);
      // Nobody awaits this: a failing dispose must not become an unhandled rejection (a crash).
      this.end(entry, reason).catch(() => undefined);
    }, entry.timeoutMs);
    entry.timer.unref();
  }

  private disarm(entry: Entry<S>): void {
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = undefined;
  }

  private info(entry: Entry<S>): SessionInfo {
    const { id, created, lastUsed, owner, timeoutMs } = entry;
    return { id, created, lastUsed, owner, timeoutMs };
  }
}

/** Why a call's session is not made: its signal's reason, in words. */
function abandoned(signal: AbortSignal): string {
  const reason = signal.reason as { message?: unknown } | undefined;
  const why = typeof reason?.message === 'string' && reason.message !== 'This operation was aborted' ? `: ${reason.message}` : '';
  return `the call that asked for it was cancelled or its client went away${why}`;
}

/**
 * The map key of a session: a random id is unique by itself; a chosen id only per owner, so it is
 * keyed by both (JSON keeps any owner and id apart, and never looks like a UUID).
 */
function slotOf(owner: string, id: string, chosen: boolean): string {
  return chosen ? JSON.stringify([owner, id]) : id;
}
