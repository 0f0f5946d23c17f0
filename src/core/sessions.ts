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
  busy: number;
  timer: NodeJS.Timeout | undefined;
}

export interface RegistryOptions {
  /** Used in messages: "gdb session", "python session". */
  kind: string;
  /** Most sessions one client (owner: an MCP session or the REST key) may hold at once. */
  maxSessions: number;
  /** Most sessions all clients together may hold at once (default: no global cap). */
  maxSessionsTotal?: number;
  /** Called after a session ended by itself (idle timeout) so owners can log it. */
  onExpire?: (info: SessionInfo) => void;
}

/**
 * Ids, ownership, idle timeouts and the concurrency limit for one toolset's sessions. A session
 * is idle only while no call is using it; `use()` marks it busy so long calls never expire.
 */
export class SessionRegistry<S extends SessionResource> {
  private readonly entries = new Map<string, Entry<S>>();
  /** Why recently ended sessions ended, so a late call learns more than "not found". */
  private readonly ended = new Map<string, string>();
  /** Sessions being created, per owner: they count against both caps while they start. */
  private readonly creating = new Map<string, number>();
  private closed = false;

  constructor(private readonly options: RegistryOptions) {}

  get size(): number {
    return this.entries.size;
  }

  async create(owner: string, timeoutMs: number, factory: (id: string) => Promise<S>): Promise<SessionInfo> {
    if (this.closed) throw new DebugkitError('SESSION_CLOSED', 'the server is shutting down; no new sessions');
    this.checkCaps(owner);
    const id = randomUUID();
    this.creating.set(owner, (this.creating.get(owner) ?? 0) + 1);
    let session: S;
    try {
      session = await factory(id);
    } finally {
      const left = this.creating.get(owner)! - 1;
      if (left > 0) this.creating.set(owner, left);
      else this.creating.delete(owner);
    }
    if (this.closed) {
      await session.dispose('server shutting down');
      throw new DebugkitError('SESSION_CLOSED', 'the server is shutting down; no new sessions');
    }
    const now = new Date();
    const entry: Entry<S> = { id, created: now, lastUsed: now, owner, timeoutMs, session, busy: 0, timer: undefined };
    this.entries.set(id, entry);
    this.arm(entry);
    return this.info(entry);
  }

  /** Refuses a new session over the per-client cap or the global one, naming the cap that was hit. */
  private checkCaps(owner: string): void {
    const { kind, maxSessions, maxSessionsTotal = Number.POSITIVE_INFINITY } = this.options;
    const mine = this.list(owner).length + (this.creating.get(owner) ?? 0);
    if (mine >= maxSessions) {
      throw new DebugkitError(
        'SESSION_LIMIT',
        `too many ${kind}s for this client: it has ${maxSessions} open, the per-client limit (--max-sessions). Close one with its close tool first.`,
      );
    }
    let creating = 0;
    for (const n of this.creating.values()) creating += n;
    if (this.entries.size + creating >= maxSessionsTotal) {
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
      if (this.entries.get(id) === entry) this.arm(entry);
    }
  }

  get(owner: string, id: string): S {
    return this.lookup(owner, id).session;
  }

  list(owner: string): SessionInfo[] {
    return [...this.entries.values()].filter((e) => e.owner === owner).map((e) => this.info(e));
  }

  async close(owner: string, id: string, reason = 'closed by client'): Promise<void> {
    const entry = this.lookup(owner, id);
    await this.end(entry, reason);
  }

  /** Forgets a session whose engine ended on its own (it has already released its processes). */
  forget(id: string, reason: string): void {
    const entry = this.entries.get(id);
    if (!entry) return;
    this.disarm(entry);
    this.entries.delete(id);
    this.remember(id, reason);
  }

  async closeOwnedBy(owner: string, reason: string): Promise<void> {
    const mine = [...this.entries.values()].filter((e) => e.owner === owner);
    await Promise.all(mine.map((e) => this.end(e, reason)));
  }

  async closeAll(reason: string): Promise<void> {
    this.closed = true;
    await Promise.all([...this.entries.values()].map((e) => this.end(e, reason)));
  }

  private lookup(owner: string, id: string): Entry<S> {
    const entry = this.entries.get(id);
    // Another client's session is reported exactly like a missing one: ids are not an oracle.
    if (!entry || entry.owner !== owner) throw new SessionNotFoundError(id, this.ended.get(id));
    return entry;
  }

  private async end(entry: Entry<S>, reason: string): Promise<void> {
    this.disarm(entry);
    this.entries.delete(entry.id);
    this.remember(entry.id, reason);
    await entry.session.dispose(reason);
  }

  private remember(id: string, reason: string): void {
    this.ended.set(id, reason);
    if (this.ended.size > 256) this.ended.delete(this.ended.keys().next().value!);
  }

  private arm(entry: Entry<S>): void {
    this.disarm(entry);
    if (entry.busy > 0 || entry.timeoutMs <= 0) return;
    entry.timer = setTimeout(() => {
      if (this.entries.get(entry.id) !== entry || entry.busy > 0) return;
      this.options.onExpire?.(this.info(entry));
      // Nobody awaits this: a failing dispose must not become an unhandled rejection (a crash).
      this.end(entry, `idle for ${Math.round(entry.timeoutMs / 1000)} s (session timeout)`).catch(() => undefined);
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
