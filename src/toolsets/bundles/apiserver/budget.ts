/**
 * What the parsed bundle models may hold on the main thread. The per-file bound (loader.ts
 * MAX_RESOURCE_FILE_BYTES) does not bound a bundle: every parsed object is kept for the bundle's
 * lifetime, so a bundle of three 237 MB event files (2 million tiny events each) took the server
 * past the V8 heap limit through kubectl or bundle_summary (attack 18r L1). Each file's objects
 * are charged here as they arrive, to their bundle's budget, to its key's share (KeyShares) and to
 * the server's; a file past any is left out (loader.ts, a Status naming the bound and the file).
 */

/** A bound on a parsed model: v8-serialized bytes of its objects (about their JSON size) and how many objects. */
export interface ModelBounds {
  bytes: number;
  objects: number;
}

/**
 * One bundle's bound. Measured on the main thread: a deserialized object takes about 2.7 times its
 * serialized bytes of heap (tiny events: 108 bytes serialized, 297 of heap; pods: 716 and 1,840),
 * and a served bundle holds more than its objects (its listings, a request's sort and answer), so a
 * bundle at 512 MB costs about 1.5-2 GB of RSS. Tiny objects reach the object bound first: 2 million
 * events of 110 bytes are 220 MB of JSON and about 1 GB of RSS once listed.
 */
export const BUNDLE_MODEL_BOUNDS: ModelBounds = { bytes: 512 * 1024 * 1024, objects: 1_500_000 };

/** All bundles open on this server together: with the V8 heap at about 4 GB, what is left serves requests and the other toolsets. */
export const SERVER_MODEL_BOUNDS: ModelBounds = { bytes: 768 * 1024 * 1024, objects: 3_000_000 };

/** How much a budget holds and may hold; `parent` is charged too (a bundle's budget within its key's, a key's within the server's). */
export class ModelBudget {
  bytes = 0;
  objects = 0;

  /** Set by close(): what this budget held is given back, and it takes nothing more. */
  private closed = false;

  constructor(
    readonly bounds: ModelBounds,
    /** What the budget is for, in messages: "this support bundle", "all bundles open on this server". */
    readonly what: string,
    private parent?: ModelBudget,
    /** What gives room back, when that is not simply other bundles closing (messages end with it). */
    readonly remedy?: string,
  ) {}

  /** Charges `bytes` and `objects` here and to the parent, or charges nothing and returns the budget they would exceed. */
  charge(bytes: number, objects: number): ModelBudget | undefined {
    if (this.closed) return NOT_SERVED;
    if (this.bytes + bytes > this.bounds.bytes || this.objects + objects > this.bounds.objects) return this;
    const refused = this.parent?.charge(bytes, objects);
    if (refused) return refused;
    this.bytes += bytes;
    this.objects += objects;
    return undefined;
  }

  /** This budget or its parent when already at its bound (nothing more fits), else undefined. */
  full(): ModelBudget | undefined {
    if (this.closed) return NOT_SERVED;
    return this.bytes >= this.bounds.bytes || this.objects >= this.bounds.objects ? this : this.parent?.full();
  }

  /** Whether `bytes` and `objects` more fit this budget's own bound (not asking its parent), while it is open. */
  fits(bytes: number, objects: number): boolean {
    return !this.closed && this.bytes + bytes <= this.bounds.bytes && this.objects + objects <= this.bounds.objects;
  }

  /**
   * Counts `bytes` and `objects` here only (negative: gives them back), whatever the bound: a shared bundle's charge to one of
   * the keys using it, the server's budget charged once for all of them (SharedCharge).
   */
  count(bytes: number, objects: number): void {
    this.bytes = Math.max(0, this.bytes + bytes);
    this.objects = Math.max(0, this.objects + objects);
  }

  /**
   * Gives back to the parent all this budget holds, once (a second call does nothing), and refuses
   * every later charge: the bundle it was for is no longer served, and what a request still running
   * on it would parse is not parsed.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    released.unregister(this);
    this.parent?.release(this.bytes, this.objects);
    this.bytes = 0;
    this.objects = 0;
  }

  /** Gives back what charge() took, here and to the parent. */
  release(bytes: number, objects: number): void {
    this.bytes = Math.max(0, this.bytes - bytes);
    this.objects = Math.max(0, this.objects - objects);
    this.parent?.release(bytes, objects);
  }

  /** "512 MB or 2000000 objects": the bound as messages name it. */
  describe(): string {
    return `${Math.round(this.bounds.bytes / (1024 * 1024))} MB or ${this.bounds.objects} objects`;
  }
}

/** Bytes as the budget's messages show them: whole MB. */
export function mb(bytes: number): string {
  return `${Math.round(bytes / (1024 * 1024))} MB`;
}

/** The server's budget, shared by every bundle opened in this process. */
export const serverModel = new ModelBudget(SERVER_MODEL_BOUNDS, 'all support bundles open on this server');

/** Of the server's budget, the percent one key's bundles may hold together by default (--bundle-budget-per-key): no one key takes all of it. */
export const KEY_SHARE_PERCENT = 50;

/**
 * Each API key's share of the server's budget. The server's alone was first come, first served:
 * one key's two bundles of 1.47 million tiny events each held 2.94 of its 3 million objects, and
 * every other key's bundles were then served with their files left out for as long as that key's
 * sessions lived (attack 18t N4). Every bundle a key uses (the ones it initialized, those of other
 * keys it joined, and its bundle_summary models) is charged to its share in full (SharedCharge),
 * so another key always finds the rest of the server's.
 */
export class KeyShares {
  /** One budget per key id, kept for the process's life: there are as many as keys that opened a bundle, each a few numbers. */
  private readonly keys = new Map<string, ModelBudget>();
  readonly bounds: ModelBounds;

  constructor(
    percent = KEY_SHARE_PERCENT,
    readonly server: ModelBudget = serverModel,
  ) {
    if (!Number.isInteger(percent) || percent < 1 || percent > 100) throw new RangeError(`A key's share of the bundle budget is a whole percent from 1 to 100, not ${percent}`);
    this.bounds = { bytes: Math.floor((server.bounds.bytes * percent) / 100), objects: Math.floor((server.bounds.objects * percent) / 100) };
  }

  /** The budget `key`'s bundles are charged to: its share, within the server's. No key (the one local user): the server's whole. */
  of(key: string | undefined): ModelBudget {
    if (key === undefined) return this.server;
    let share = this.keys.get(key);
    if (!share) {
      share = new ModelBudget(
        this.bounds,
        // Said of a key using the bundle: every one is charged for it (SharedCharge).
        "the support bundles charged to an API key using this one (each key using a bundle is charged for all it holds; that key's share of this server's bundle budget)",
        this.server,
        'closing the other bundles charged to that key (initializing another in their sessions, or ending those sessions) gives its share back',
      );
      this.keys.set(key, share);
    }
    return share;
  }
}

/**
 * What one served bundle holds, charged to the share of every key using it, and to the server's budget once.
 *
 * Charged to one key at a time, a shared bundle was a way to make another key pay: the key paying could leave and join again at
 * once, its charge moved to the other user for good, and it then used that bundle and one more on a share that holds one, while
 * the other key's next bundle was left out (attack R4; before, P4: the key that left kept paying for the other's use). Every
 * order of leaving and joining ends the same way here, since a key pays exactly for the bundles it uses now:
 * - a key joining a bundle another key uses is charged at once for all the bundle holds, and a key whose share has no room for
 *   it is refused the join (workspace.ts);
 * - a key's last client leaving gives that key's charge back, and no other key's charge changes;
 * - a file parsed later is judged as a join is: kept only when it fits the server's budget and the share of every key using
 *   the bundle, and then charged to all of them; else it is left out, for all, naming a share without room. Kept while one
 *   key had room (and charged to all, past a full share's bound), a file let key A, its share full, join key B's bundle while
 *   it held little and read its events on B's room: B's next bundle was left out for A's use (attack 18x V3). A key without
 *   room now holds back a shared bundle's later files from the others while it uses it; it never makes them pay for its use.
 * The server's budget counts the bundle once, whatever the number of keys: its bound on the process's memory is unchanged.
 */
export class SharedCharge extends ModelBudget {
  private readonly shares = new Set<ModelBudget>();
  /**
   * Keys using the bundle whose share had no room for what it may come to hold when they joined (a key alone on a bundle may
   * still open it, and get its files while they fit): a later file is judged by the others' room, and charged to these past
   * their bound. Judged by every share, a key with a full share that opened a shared bundle first left every later file out
   * for the keys that joined after it (attack 18z Z7).
   */
  private readonly unjudged = new Set<ModelBudget>();

  constructor(private readonly server: ModelBudget) {
    super(server.bounds, server.what, undefined, server.remedy);
  }

  /** Whether the key `share` is charged for this bundle (a key using it). */
  has(share: ModelBudget): boolean {
    return this.shares.has(share);
  }

  /**
   * Charges the key `share` (also using the bundle now) for all it holds, whatever its room: the caller (workspace.ts join)
   * refuses the join of a key without room, counting what that key gives back in the same call.
   */
  join(share: ModelBudget): void {
    if (this.shares.has(share)) return;
    share.count(this.bytes, this.objects);
    this.shares.add(share);
  }

  /** Says whether the key `share`, using the bundle, had room for what it may come to hold (see `unjudged`). */
  judge(share: ModelBudget, room: boolean): void {
    if (room || !this.shares.has(share)) this.unjudged.delete(share);
    else this.unjudged.add(share);
  }

  /** Gives the key `share` (no longer using the bundle) back all it was charged for it. */
  leave(share: ModelBudget): void {
    this.unjudged.delete(share);
    if (this.shares.delete(share)) share.count(-this.bytes, -this.objects);
  }

  /** The shares a later file must fit: those of the keys that had room when they joined, else (none had) every one. */
  private judged(): ModelBudget[] {
    const judged = [...this.shares].filter((s) => !this.unjudged.has(s));
    return judged.length > 0 ? judged : [...this.shares];
  }

  override charge(bytes: number, objects: number): ModelBudget | undefined {
    const full = this.judged().find((s) => !s.fits(bytes, objects));
    if (full) return full;
    const refused = this.server.charge(bytes, objects);
    if (refused) return refused;
    for (const s of this.shares) s.count(bytes, objects);
    this.count(bytes, objects);
    return undefined;
  }

  override full(): ModelBudget | undefined {
    return this.judged().find((s) => !s.fits(1, 1)) ?? this.server.full();
  }

  override release(bytes: number, objects: number): void {
    this.count(-bytes, -objects);
    this.server.release(bytes, objects);
    for (const s of this.shares) s.count(-bytes, -objects);
  }
}

/**
 * What a closed budget's refusals name: a request still running on a bundle whose server was closed
 * (its users left, or its charge moved to a fresh model) gets nothing more parsed.
 */
const NOT_SERVED = new ModelBudget({ bytes: 0, objects: 0 }, 'this support bundle, no longer served (its server was closed or replaced),');

/**
 * A bundle's budget is closed (its charge given back) when the bundle stops being served
 * (Bundle.close): waiting for V8 to collect its model left a key's share full for minutes on an idle
 * server (attack P5). This registry is only the backstop for a model dropped without close() (a
 * bundle_summary model); close() unregisters, and closes only once.
 */
const released = new FinalizationRegistry<ModelBudget>((budget) => budget.close());

/** A fresh budget for one bundle, within `server`, given back by its close() or, failing that, when `owner` (its file cache) is collected. */
export function bundleBudget(owner: object, bounds: ModelBounds = BUNDLE_MODEL_BOUNDS, server: ModelBudget = serverModel): ModelBudget {
  const budget = new ModelBudget(bounds, 'this support bundle', server);
  released.register(owner, budget, budget);
  return budget;
}
