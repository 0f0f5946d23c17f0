import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DebugkitError, SessionNotFoundError } from './errors.js';
import { clientKey, SessionRegistry, type SessionInfo, type SessionResource } from './sessions.js';
import { sleep } from './wait.js';

class FakeSession implements SessionResource {
  readonly disposeCalls: string[] = [];
  constructor(
    readonly id: string,
    private readonly failDispose = false,
  ) {}
  async dispose(reason: string): Promise<void> {
    this.disposeCalls.push(reason);
    if (this.failDispose) throw new Error(`dispose of ${this.id} failed`);
  }
}

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const T0 = new Date('2030-01-02T03:04:05.000Z');
const LIMIT_MESSAGE = (n: number) => `too many gdb sessions for this client: it has ${n} open, the per-client limit (--max-sessions). Close one with its close tool first.`;
const TOTAL_MESSAGE = (n: number) => `too many gdb sessions on this server: ${n} are open over all clients, the server-wide limit (--max-sessions-total). Close one of yours, or try again later.`;
const CLOSED_MESSAGE = 'the server is shutting down; no new sessions';

let sessions: Map<string, FakeSession>;
let expired: SessionInfo[];

function makeRegistry(maxSessions = 4, maxSessionsTotal?: number) {
  return new SessionRegistry<FakeSession>({ kind: 'gdb session', maxSessions, maxSessionsTotal, onExpire: (info) => expired.push(info) });
}

const factory = async (id: string) => {
  const session = new FakeSession(id);
  sessions.set(id, session);
  return session;
};

/** Creates a session for `owner` and returns its id and the fake behind it. */
async function open(registry: SessionRegistry<FakeSession>, owner = 'alice', timeoutMs = 0) {
  const info = await registry.create(owner, timeoutMs, factory);
  return { id: info.id, session: sessions.get(info.id)!, info };
}

/** The error `fn` throws (sync or async); fails when it throws none. */
async function caught(fn: () => unknown): Promise<DebugkitError> {
  try {
    await fn();
  } catch (err) {
    expect(err).toBeInstanceOf(DebugkitError);
    return err as DebugkitError;
  }
  throw new Error('expected an error');
}

async function expectNotFound(fn: () => unknown, id: string, endedBecause?: string) {
  const err = await caught(fn);
  expect(err).toBeInstanceOf(SessionNotFoundError);
  expect(err.code).toBe('SESSION_NOT_FOUND');
  expect(err.message).toBe(`Session not found: ${id}${endedBecause ? ` (it ended: ${endedBecause})` : ''}`);
}

/** Lets queued promise callbacks run (dispose chains) without moving fake time. */
async function flush() {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(T0);
  sessions = new Map();
  expired = [];
});

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('SessionRegistry create/list/get', () => {
  it('creates a session with a fresh uuid passed to the factory, and returns its info', async () => {
    const registry = makeRegistry();
    const seen: string[] = [];
    const info = await registry.create('alice', 30_000, async (id) => {
      seen.push(id);
      return new FakeSession(id);
    });
    expect(info.id).toMatch(UUID);
    expect(seen).toEqual([info.id]);
    expect(info).toEqual({ id: info.id, created: T0, lastUsed: T0, owner: 'alice', timeoutMs: 30_000 });
    expect(registry.size).toBe(1);
  });

  it('returns info without the session or internal state', async () => {
    const registry = makeRegistry();
    const { info } = await open(registry);
    expect(Object.keys(info).sort()).toEqual(['created', 'id', 'lastUsed', 'owner', 'timeoutMs']);
  });

  it('gives every session its own id', async () => {
    const registry = makeRegistry(10);
    const ids = new Set<string>();
    for (let i = 0; i < 10; i++) ids.add((await open(registry)).id);
    expect(ids.size).toBe(10);
  });

  it('get returns the very session the factory made', async () => {
    const registry = makeRegistry();
    const { id, session } = await open(registry);
    expect(registry.get('alice', id)).toBe(session);
  });

  it("lists only the owner's sessions, in creation order", async () => {
    const registry = makeRegistry();
    const a1 = await open(registry, 'alice', 1000);
    const b1 = await open(registry, 'bob');
    const a2 = await open(registry, 'alice', 2000);
    expect(registry.list('alice')).toEqual([
      { id: a1.id, created: T0, lastUsed: T0, owner: 'alice', timeoutMs: 1000 },
      { id: a2.id, created: T0, lastUsed: T0, owner: 'alice', timeoutMs: 2000 },
    ]);
    expect(registry.list('bob').map((s) => s.id)).toEqual([b1.id]);
    expect(registry.list('carol')).toEqual([]);
  });

  it('reports an unknown id as not found', async () => {
    const registry = makeRegistry();
    await expectNotFound(() => registry.get('alice', 'nope'), 'nope');
  });

  it('propagates a factory failure and does not leak a slot', async () => {
    const registry = makeRegistry(1);
    const boom = new Error('gdb not installed');
    await expect(registry.create('alice', 0, async () => Promise.reject(boom))).rejects.toBe(boom);
    expect(registry.size).toBe(0);
    expect(registry.list('alice')).toEqual([]);
    // The one slot is free again.
    const { id } = await open(registry);
    expect(registry.get('alice', id)).toBeInstanceOf(FakeSession);
  });

  it('does not leak a slot when the factory throws synchronously', async () => {
    const registry = makeRegistry(1);
    await expect(
      registry.create('alice', 0, () => {
        throw new Error('sync boom');
      }),
    ).rejects.toThrow('sync boom');
    await expect(open(registry)).resolves.toBeDefined();
  });
});

describe('SessionRegistry owner isolation', () => {
  it("reports another owner's session exactly like a missing one", async () => {
    const registry = makeRegistry();
    const { id, session } = await open(registry, 'alice');
    await expectNotFound(() => registry.get('mallory', id), id);
    await expectNotFound(() => registry.use('mallory', id, async () => 'x'), id);
    await expectNotFound(() => registry.close('mallory', id), id);
    // Nothing happened to it.
    expect(session.disposeCalls).toEqual([]);
    expect(registry.get('alice', id)).toBe(session);
    expect(registry.size).toBe(1);
  });

  it('does not run the callback of a use() by another owner', async () => {
    const registry = makeRegistry();
    const { id } = await open(registry, 'alice');
    const fn = vi.fn(async () => 1);
    await expectNotFound(() => registry.use('mallory', id, fn), id);
    expect(fn).not.toHaveBeenCalled();
  });

  it("closeOwnedBy only ends the given owner's sessions", async () => {
    const registry = makeRegistry();
    const a1 = await open(registry, 'alice');
    const a2 = await open(registry, 'alice');
    const b = await open(registry, 'bob');
    await registry.closeOwnedBy('alice', 'the client disconnected');
    expect(a1.session.disposeCalls).toEqual(['the client disconnected']);
    expect(a2.session.disposeCalls).toEqual(['the client disconnected']);
    expect(b.session.disposeCalls).toEqual([]);
    expect(registry.size).toBe(1);
    expect(registry.list('alice')).toEqual([]);
    expect(registry.get('bob', b.id)).toBe(b.session);
    await expectNotFound(() => registry.get('alice', a1.id), a1.id, 'the client disconnected');
  });

  it('closeOwnedBy with no sessions is a no-op', async () => {
    const registry = makeRegistry();
    const b = await open(registry, 'bob');
    await registry.closeOwnedBy('alice', 'bye');
    expect(b.session.disposeCalls).toEqual([]);
    expect(registry.size).toBe(1);
  });
});

describe('SessionRegistry limit', () => {
  it('refuses a session beyond the limit with SESSION_LIMIT, without calling the factory', async () => {
    const registry = makeRegistry(2);
    await open(registry);
    await open(registry);
    const fn = vi.fn(factory);
    const err = await caught(() => registry.create('alice', 0, fn));
    expect(err.code).toBe('SESSION_LIMIT');
    expect(err.message).toBe(LIMIT_MESSAGE(2));
    expect(fn).not.toHaveBeenCalled();
    expect(registry.size).toBe(2);
  });

  it('counts the per-client limit per owner: one client at its cap does not starve another', async () => {
    const registry = makeRegistry(1);
    await open(registry, 'alice');
    expect((await caught(() => open(registry, 'alice'))).message).toBe(LIMIT_MESSAGE(1));
    await expect(open(registry, 'bob')).resolves.toBeDefined();
  });

  it('counts the server-wide limit across owners, and names it', async () => {
    const registry = makeRegistry(2, 3);
    await open(registry, 'alice');
    await open(registry, 'alice');
    await open(registry, 'bob');
    const err = await caught(() => open(registry, 'carol'));
    expect(err.code).toBe('SESSION_LIMIT');
    expect(err.message).toBe(TOTAL_MESSAGE(3));
  });

  it('counts creations still in flight (two concurrent creates with limit 1)', async () => {
    const registry = makeRegistry(1, 1);
    const slow = deferred<FakeSession>();
    const first = registry.create('alice', 0, () => slow.promise);
    const secondFactory = vi.fn(factory);
    const second = registry.create('bob', 0, secondFactory);
    const err = await caught(() => second);
    expect(err.code).toBe('SESSION_LIMIT');
    expect(err.message).toBe(TOTAL_MESSAGE(1));
    expect(secondFactory).not.toHaveBeenCalled();
    slow.resolve(new FakeSession('slow'));
    const info = await first;
    expect(registry.list('alice').map((s) => s.id)).toEqual([info.id]);
    expect((await caught(() => open(registry, 'bob'))).code).toBe('SESSION_LIMIT');
  });

  it('frees the in-flight slot when the slow factory fails', async () => {
    const registry = makeRegistry(1, 1);
    const slow = deferred<FakeSession>();
    const first = registry.create('alice', 0, () => slow.promise);
    expect((await caught(() => open(registry, 'bob'))).code).toBe('SESSION_LIMIT');
    slow.reject(new Error('spawn failed'));
    await expect(first).rejects.toThrow('spawn failed');
    await expect(open(registry, 'bob')).resolves.toBeDefined();
  });

  it('frees a slot when a session is closed, forgotten or expires', async () => {
    const registry = makeRegistry(1);
    const a = await open(registry);
    await registry.close('alice', a.id);
    const b = await open(registry);
    registry.forget(b.id, 'engine exited');
    await open(registry, 'alice', 1000);
    vi.advanceTimersByTime(1000);
    await flush();
    expect(registry.size).toBe(0);
    await expect(open(registry)).resolves.toBeDefined();
  });
});

describe('SessionRegistry close', () => {
  it('disposes with "closed by client" by default and leaves a tombstone', async () => {
    const registry = makeRegistry();
    const { id, session } = await open(registry);
    await registry.close('alice', id);
    expect(session.disposeCalls).toEqual(['closed by client']);
    expect(registry.size).toBe(0);
    expect(registry.list('alice')).toEqual([]);
    await expectNotFound(() => registry.get('alice', id), id, 'closed by client');
    await expectNotFound(() => registry.use('alice', id, async () => 1), id, 'closed by client');
  });

  it('uses the given reason', async () => {
    const registry = makeRegistry();
    const { id, session } = await open(registry);
    await registry.close('alice', id, 'replaced');
    expect(session.disposeCalls).toEqual(['replaced']);
    await expectNotFound(() => registry.get('alice', id), id, 'replaced');
  });

  it('a second close reports the session as ended and does not dispose again', async () => {
    const registry = makeRegistry();
    const { id, session } = await open(registry);
    await registry.close('alice', id);
    await expectNotFound(() => registry.close('alice', id), id, 'closed by client');
    expect(session.disposeCalls).toEqual(['closed by client']);
  });

  it('cancels the idle timer of a closed session', async () => {
    const registry = makeRegistry();
    const { id, session } = await open(registry, 'alice', 1000);
    expect(vi.getTimerCount()).toBe(1);
    await registry.close('alice', id);
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(5000);
    await flush();
    expect(expired).toEqual([]);
    expect(session.disposeCalls).toEqual(['closed by client']);
  });

  it('keeps at most 256 tombstones, forgetting the oldest', async () => {
    const registry = makeRegistry(1);
    const ids: string[] = [];
    for (let i = 0; i < 257; i++) {
      const { id } = await open(registry);
      ids.push(id);
      await registry.close('alice', id, `reason ${i}`);
    }
    await expectNotFound(() => registry.get('alice', ids[0]!), ids[0]!);
    await expectNotFound(() => registry.get('alice', ids[1]!), ids[1]!, 'reason 1');
    await expectNotFound(() => registry.get('alice', ids[256]!), ids[256]!, 'reason 256');
  });
});

describe('SessionRegistry idle timeout', () => {
  it('disposes an idle session after timeoutMs, calls onExpire, and leaves a tombstone', async () => {
    const registry = makeRegistry();
    const { id, session } = await open(registry, 'alice', 30_000);
    vi.advanceTimersByTime(29_999);
    expect(registry.get('alice', id)).toBe(session);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(1);
    await flush();
    expect(expired).toEqual([{ id, created: T0, lastUsed: T0, owner: 'alice', timeoutMs: 30_000 }]);
    expect(session.disposeCalls).toEqual(['idle for 30 s (session timeout)']);
    expect(registry.size).toBe(0);
    await expectNotFound(() => registry.get('alice', id), id, 'idle for 30 s (session timeout)');
  });

  it('rounds the idle time in the reason to whole seconds', async () => {
    const registry = makeRegistry();
    const { id, session } = await open(registry, 'alice', 1500);
    vi.advanceTimersByTime(1500);
    await flush();
    expect(session.disposeCalls).toEqual(['idle for 2 s (session timeout)']);
    await expectNotFound(() => registry.get('alice', id), id, 'idle for 2 s (session timeout)');
  });

  it('the tombstone is told only to the owner: to another an ended session reads like one that never was', async () => {
    const registry = makeRegistry();
    const { id } = await open(registry, 'alice', 1000);
    vi.advanceTimersByTime(1000);
    await flush();
    await expectNotFound(() => registry.get('alice', id), id, 'idle for 1 s (session timeout)');
    await expectNotFound(() => registry.get('bob', id), id);
  });

  it.each([0, -1])('timeoutMs %d never expires', async (timeoutMs) => {
    const registry = makeRegistry();
    const { id, session } = await open(registry, 'alice', timeoutMs);
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(7 * 24 * 3600 * 1000);
    await flush();
    expect(registry.get('alice', id)).toBe(session);
    expect(session.disposeCalls).toEqual([]);
  });

  it('expires sessions independently', async () => {
    const registry = makeRegistry();
    const short = await open(registry, 'alice', 1000);
    const long = await open(registry, 'alice', 5000);
    vi.advanceTimersByTime(1000);
    await flush();
    expect(short.session.disposeCalls).toEqual(['idle for 1 s (session timeout)']);
    expect(long.session.disposeCalls).toEqual([]);
    expect(registry.list('alice').map((s) => s.id)).toEqual([long.id]);
  });

  it('get() does not count as use and does not postpone expiry', async () => {
    const registry = makeRegistry();
    const { id, session } = await open(registry, 'alice', 1000);
    vi.advanceTimersByTime(900);
    registry.get('alice', id);
    vi.advanceTimersByTime(100);
    await flush();
    expect(session.disposeCalls).toEqual(['idle for 1 s (session timeout)']);
  });

  it('does not turn a failing dispose on expiry into an unhandled rejection', async () => {
    const unhandled = vi.fn();
    process.on('unhandledRejection', unhandled);
    try {
      const registry = makeRegistry();
      const info = await registry.create('alice', 1000, async (id) => new FakeSession(id, true));
      vi.advanceTimersByTime(1000);
      await flush();
      // Unhandled rejections are reported after the microtask queue drains: give real time a turn.
      vi.useRealTimers();
      await new Promise((resolve) => setImmediate(resolve));
      await sleep(10); // a pause, not a wait: proving no rejection is reported
      expect(unhandled).not.toHaveBeenCalled();
      expect(registry.size).toBe(0);
      await expectNotFound(() => registry.get('alice', info.id), info.id, 'idle for 1 s (session timeout)');
    } finally {
      process.off('unhandledRejection', unhandled);
    }
  });

  it('the idle timer does not keep the process alive (unref)', async () => {
    vi.useRealTimers();
    const timers: NodeJS.Timeout[] = [];
    const real = globalThis.setTimeout;
    vi.spyOn(globalThis, 'setTimeout').mockImplementation(((fn: () => void, ms?: number) => {
      const t = real(fn, ms);
      timers.push(t);
      return t;
    }) as typeof setTimeout);
    const registry = makeRegistry();
    await open(registry, 'alice', 60_000);
    expect(timers).toHaveLength(1);
    expect(timers[0]!.hasRef()).toBe(false);
    await registry.closeAll('test over');
  });
});

describe('SessionRegistry use()', () => {
  it("passes the session, returns the callback's value and updates lastUsed", async () => {
    const registry = makeRegistry();
    const { id, session } = await open(registry, 'alice', 10_000);
    vi.advanceTimersByTime(3000);
    const result = await registry.use('alice', id, async (s) => {
      expect(s).toBe(session);
      return 42;
    });
    expect(result).toBe(42);
    expect(registry.list('alice')[0]).toEqual({
      id,
      created: T0,
      lastUsed: new Date(T0.getTime() + 3000),
      owner: 'alice',
      timeoutMs: 10_000,
    });
  });

  it('keeps a busy session from expiring, however long the call takes', async () => {
    const registry = makeRegistry();
    const { id, session } = await open(registry, 'alice', 1000);
    const call = deferred<string>();
    const using = registry.use('alice', id, () => call.promise);
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(60_000);
    await flush();
    expect(session.disposeCalls).toEqual([]);
    expect(expired).toEqual([]);
    expect(registry.get('alice', id)).toBe(session);
    call.resolve('done');
    await expect(using).resolves.toBe('done');
  });

  it('re-arms the idle timer from the end of the call', async () => {
    const registry = makeRegistry();
    const { id, session } = await open(registry, 'alice', 1000);
    vi.advanceTimersByTime(900);
    const call = deferred<void>();
    const using = registry.use('alice', id, () => call.promise);
    vi.advanceTimersByTime(5000);
    call.resolve();
    await using;
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(999);
    await flush();
    expect(session.disposeCalls).toEqual([]);
    vi.advanceTimersByTime(1);
    await flush();
    expect(session.disposeCalls).toEqual(['idle for 1 s (session timeout)']);
    expect(expired.map((e) => e.lastUsed)).toEqual([new Date(T0.getTime() + 5900)]);
  });

  it('re-arms after a failing call too, and passes the error through', async () => {
    const registry = makeRegistry();
    const { id, session } = await open(registry, 'alice', 1000);
    const boom = new DebugkitError('INVALID_ARGUMENT', 'bad command');
    await expect(registry.use('alice', id, async () => Promise.reject(boom))).rejects.toBe(boom);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(1000);
    await flush();
    expect(session.disposeCalls).toEqual(['idle for 1 s (session timeout)']);
  });

  it('stays busy until the last of overlapping calls finishes', async () => {
    const registry = makeRegistry();
    const { id, session } = await open(registry, 'alice', 1000);
    const a = deferred<void>();
    const b = deferred<void>();
    const ua = registry.use('alice', id, () => a.promise);
    const ub = registry.use('alice', id, () => b.promise);
    a.resolve();
    await ua;
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(10_000);
    await flush();
    expect(session.disposeCalls).toEqual([]);
    b.resolve();
    await ub;
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(1000);
    await flush();
    expect(session.disposeCalls).toEqual(['idle for 1 s (session timeout)']);
  });

  it('does not re-arm a session closed during the call', async () => {
    const registry = makeRegistry();
    const { id, session } = await open(registry, 'alice', 1000);
    const call = deferred<string>();
    const using = registry.use('alice', id, () => call.promise);
    await registry.close('alice', id, 'closed meanwhile');
    call.resolve('finished anyway');
    await expect(using).resolves.toBe('finished anyway');
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(5000);
    await flush();
    expect(session.disposeCalls).toEqual(['closed meanwhile']);
    expect(expired).toEqual([]);
  });

  it('does not re-arm a session forgotten during the call', async () => {
    const registry = makeRegistry();
    const { id, session } = await open(registry, 'alice', 1000);
    const using = registry.use('alice', id, async () => {
      registry.forget(id, 'gdb exited');
      return 'ok';
    });
    await expect(using).resolves.toBe('ok');
    expect(vi.getTimerCount()).toBe(0);
    expect(session.disposeCalls).toEqual([]);
  });
});

describe('SessionRegistry forget', () => {
  it('drops the entry without disposing it and leaves a tombstone', async () => {
    const registry = makeRegistry();
    const { id, session } = await open(registry, 'alice', 1000);
    registry.forget(id, 'gdb exited with code 1');
    expect(session.disposeCalls).toEqual([]);
    expect(registry.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    await expectNotFound(() => registry.get('alice', id), id, 'gdb exited with code 1');
    vi.advanceTimersByTime(5000);
    await flush();
    // Told once, as an idle expiry is, so what routes the session elsewhere goes too (attack 18k:
    // the rows of sessions whose gdb crashed stayed in the shared store); the idle timer is gone.
    expect(expired.map((e) => e.id)).toEqual([id]);
  });

  it('ignores an unknown id and leaves no tombstone for it', async () => {
    const registry = makeRegistry();
    const { id } = await open(registry);
    registry.forget('unknown', 'whatever');
    expect(registry.size).toBe(1);
    await expectNotFound(() => registry.get('alice', 'unknown'), 'unknown');
    expect(registry.get('alice', id)).toBeInstanceOf(FakeSession);
  });

  it('does not overwrite the reason of an already ended session', async () => {
    const registry = makeRegistry();
    const { id } = await open(registry);
    await registry.close('alice', id, 'closed by client');
    registry.forget(id, 'late engine exit');
    await expectNotFound(() => registry.get('alice', id), id, 'closed by client');
  });
});

describe('SessionRegistry closeAll', () => {
  it('disposes every session of every owner with the reason', async () => {
    const registry = makeRegistry();
    const a = await open(registry, 'alice', 1000);
    const b = await open(registry, 'bob');
    await registry.closeAll('the server is shutting down');
    expect(a.session.disposeCalls).toEqual(['the server is shutting down']);
    expect(b.session.disposeCalls).toEqual(['the server is shutting down']);
    expect(registry.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    await expectNotFound(() => registry.get('bob', b.id), b.id, 'the server is shutting down');
  });

  it('refuses new sessions afterwards with SESSION_CLOSED, without calling the factory', async () => {
    const registry = makeRegistry();
    await registry.closeAll('bye');
    const fn = vi.fn(factory);
    const err = await caught(() => registry.create('alice', 0, fn));
    expect(err.code).toBe('SESSION_CLOSED');
    expect(err.message).toBe(CLOSED_MESSAGE);
    expect(fn).not.toHaveBeenCalled();
  });

  it('disposes a session whose creation was in flight and refuses it', async () => {
    const registry = makeRegistry(1);
    const slow = deferred<FakeSession>();
    const creating = registry.create('alice', 1000, () => slow.promise);
    await registry.closeAll('bye');
    const late = new FakeSession('late');
    slow.resolve(late);
    const err = await caught(() => creating);
    expect(err.code).toBe('SESSION_CLOSED');
    expect(err.message).toBe(CLOSED_MESSAGE);
    expect(late.disposeCalls).toEqual(['server shutting down']);
    expect(registry.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('is safe to call twice', async () => {
    const registry = makeRegistry();
    const { session } = await open(registry);
    await registry.closeAll('first');
    await registry.closeAll('second');
    expect(session.disposeCalls).toEqual(['first']);
  });
});

describe('SessionRegistry chosen ids (unique per owner)', () => {
  const TAKEN = (id: string, session: FakeSession | undefined) => (session ? `"${id}" is held by ${session.id}` : `"${id}" is starting`);
  const chosenRegistry = (maxSessions = 4) => new SessionRegistry<FakeSession>({ kind: 'debugger session', maxSessions, describeTaken: TAKEN, onExpire: (info) => expired.push(info) });
  const named = (registry: SessionRegistry<FakeSession>, owner: string, id: string, make = factory, timeoutMs = 0) => registry.create(owner, timeoutMs, make, { id });

  it('creates with the id the caller chose, passes it to the factory, and finds the session by it', async () => {
    const registry = chosenRegistry();
    const seen: string[] = [];
    const info = await named(registry, 'alice', 'default', async (id) => {
      seen.push(id);
      return factory(id);
    });
    expect(info).toEqual({ id: 'default', created: T0, lastUsed: T0, owner: 'alice', timeoutMs: 0 });
    expect(seen).toEqual(['default']);
    expect(registry.get('alice', 'default')).toBe(sessions.get('default'));
    await expect(registry.use('alice', 'default', async (s) => s.id)).resolves.toBe('default');
    expect(registry.list('alice').map((s) => s.id)).toEqual(['default']);
  });

  it('two owners may both have "default"; neither sees, uses or closes the other\'s', async () => {
    const registry = chosenRegistry();
    const a = new FakeSession('alice-default');
    const b = new FakeSession('bob-default');
    await named(registry, 'alice', 'default', async () => a);
    await named(registry, 'bob', 'default', async () => b);
    expect(registry.size).toBe(2);
    expect(registry.get('alice', 'default')).toBe(a);
    expect(registry.get('bob', 'default')).toBe(b);
    await registry.close('bob', 'default', 'bob is done');
    expect(b.disposeCalls).toEqual(['bob is done']);
    expect(a.disposeCalls).toEqual([]);
    expect(registry.get('alice', 'default')).toBe(a);
    await expectNotFound(() => registry.get('carol', 'default'), 'default');
  });

  it("refuses an id the owner already holds, with describeTaken's message, without calling the factory", async () => {
    const registry = chosenRegistry();
    const first = new FakeSession('first');
    await named(registry, 'alice', 'tt', async () => first);
    const fn = vi.fn(factory);
    const err = await caught(() => named(registry, 'alice', 'tt', fn));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toBe('"tt" is held by first');
    expect(fn).not.toHaveBeenCalled();
    expect(registry.get('alice', 'tt')).toBe(first);
  });

  it('says so in its own words without describeTaken', async () => {
    const registry = new SessionRegistry<FakeSession>({ kind: 'debugger session', maxSessions: 4 });
    await named(registry, 'alice', 'tt');
    expect((await caught(() => named(registry, 'alice', 'tt'))).message).toBe('debugger session "tt" already exists: close it first, or choose another id');
    const slow = deferred<FakeSession>();
    const starting = named(registry, 'alice', 'other', () => slow.promise);
    expect((await caught(() => named(registry, 'alice', 'other'))).message).toBe('debugger session "other" is starting: close it first, or choose another id');
    slow.resolve(new FakeSession('other'));
    await starting;
  });

  it('reserves the id before the factory awaits: a concurrent create of it is refused at once, and only one engine starts', async () => {
    const registry = chosenRegistry();
    const slow = deferred<FakeSession>();
    const factoryCalls: string[] = [];
    const first = named(registry, 'alice', 'default', (id) => {
      factoryCalls.push(id);
      return slow.promise;
    });
    const err = await caught(() =>
      named(registry, 'alice', 'default', async (id) => {
        factoryCalls.push(id);
        return factory(id);
      }),
    );
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toBe('"default" is starting');
    expect(factoryCalls).toEqual(['default']);
    // Still starting: not listed or found yet, but another owner's "default" is its own.
    expect(registry.list('alice')).toEqual([]);
    await expectNotFound(() => registry.get('alice', 'default'), 'default');
    await expect(named(registry, 'bob', 'default')).resolves.toMatchObject({ id: 'default', owner: 'bob' });
    const won = new FakeSession('won');
    slow.resolve(won);
    await first;
    expect(registry.get('alice', 'default')).toBe(won);
    expect((await caught(() => named(registry, 'alice', 'default'))).message).toBe('"default" is held by won');
  });

  it('frees the id when the factory fails, so it can be created again', async () => {
    const registry = chosenRegistry();
    const slow = deferred<FakeSession>();
    const first = named(registry, 'alice', 'default', () => slow.promise);
    slow.reject(new Error('gdb could not start'));
    await expect(first).rejects.toThrow('gdb could not start');
    expect(registry.size).toBe(0);
    await expect(named(registry, 'alice', 'default')).resolves.toMatchObject({ id: 'default' });
  });

  it('frees the id when the session is closed or expires, and the next one of that id starts clean', async () => {
    const registry = chosenRegistry();
    await named(registry, 'alice', 'default', factory, 1000);
    vi.advanceTimersByTime(1000);
    await flush();
    expect(expired.map((e) => [e.owner, e.id])).toEqual([['alice', 'default']]);
    await expectNotFound(() => registry.get('alice', 'default'), 'default', 'idle for 1 s (session timeout)');
    const again = new FakeSession('again');
    await named(registry, 'alice', 'default', async () => again);
    expect(registry.get('alice', 'default')).toBe(again);
    await registry.close('alice', 'default');
    expect(again.disposeCalls).toEqual(['closed by client']);
    await expectNotFound(() => registry.get('alice', 'default'), 'default', 'closed by client');
  });

  it('tells why a chosen id ended only to its owner: another owner\'s "default" reads as never seen', async () => {
    const registry = chosenRegistry();
    await named(registry, 'alice', 'default');
    await registry.close('alice', 'default', 'alice detached');
    await expectNotFound(() => registry.get('alice', 'default'), 'default', 'alice detached');
    await expectNotFound(() => registry.get('bob', 'default'), 'default');
    await expectNotFound(() => registry.use('bob', 'default', async () => 1), 'default');
  });

  it("an id spelled like another owner's map key finds nothing", async () => {
    const registry = chosenRegistry();
    await named(registry, 'alice', 'default');
    await registry.close('alice', 'default', 'gone');
    await named(registry, 'alice', 'live');
    for (const probe of [JSON.stringify(['alice', 'live']), JSON.stringify(['alice', 'default'])]) {
      await expectNotFound(() => registry.get('alice', probe), probe);
      await expectNotFound(() => registry.get('bob', probe), probe);
    }
  });

  it('chosen and random ids live side by side', async () => {
    const registry = chosenRegistry();
    const random = await open(registry, 'alice');
    await named(registry, 'alice', 'default');
    expect(registry.list('alice').map((s) => s.id)).toEqual([random.id, 'default']);
    expect(registry.get('alice', random.id)).toBe(random.session);
    // A chosen id equal to someone's random id is still the chooser's own.
    const mine = new FakeSession('mine');
    await named(registry, 'bob', random.id, async () => mine);
    expect(registry.get('bob', random.id)).toBe(mine);
    expect(registry.get('alice', random.id)).toBe(random.session);
  });

  it('forget names a chosen id with its owner', async () => {
    const registry = chosenRegistry();
    const a = new FakeSession('a');
    const b = new FakeSession('b');
    await named(registry, 'alice', 'default', async () => a);
    await named(registry, 'bob', 'default', async () => b);
    registry.forget('default', 'gdb exited', 'bob');
    expect(registry.get('alice', 'default')).toBe(a);
    await expectNotFound(() => registry.get('bob', 'default'), 'default', 'gdb exited');
    registry.forget('default', 'without an owner: not a random id, nothing happens');
    expect(registry.get('alice', 'default')).toBe(a);
    expect(a.disposeCalls).toEqual([]);
    expect(b.disposeCalls).toEqual([]);
  });

  it('a chosen id counts against the caps like any other, while starting too', async () => {
    const registry = chosenRegistry(1);
    const slow = deferred<FakeSession>();
    const first = named(registry, 'alice', 'one', () => slow.promise);
    expect((await caught(() => named(registry, 'alice', 'two'))).message).toBe(
      'too many debugger sessions for this client: it has 1 open, the per-client limit (--max-sessions). Close one with its close tool first.',
    );
    slow.resolve(new FakeSession('one'));
    await first;
  });
});

describe('SessionRegistry per-key cap', () => {
  const KEY_MESSAGE = (n: number) =>
    `too many gdb sessions for this key: its clients have ${n} open together, the per-key limit (--max-sessions-per-key). Close one (its close tool, in the MCP session that opened it), or end an MCP session of this key that holds some.`;
  const keyed = (maxSessions: number, maxSessionsPerKey: number, maxSessionsTotal?: number) =>
    new SessionRegistry<FakeSession>({ kind: 'gdb session', maxSessions, maxSessionsPerKey, maxSessionsTotal });
  const openAs = (registry: SessionRegistry<FakeSession>, owner: string, key: string, make: (id: string) => Promise<FakeSession> = factory) => registry.create(owner, 0, make, { key });

  it('counts the sessions of every client of one key together, and names the cap', async () => {
    const registry = keyed(2, 3, 10);
    await openAs(registry, 'http:mcp-1', 'key-a');
    await openAs(registry, 'http:mcp-1', 'key-a');
    await openAs(registry, 'http:mcp-2', 'key-a');
    const fn = vi.fn(factory);
    const err = await caught(() => openAs(registry, 'http:mcp-2', 'key-a', fn));
    expect(err.code).toBe('SESSION_LIMIT');
    expect(err.message).toBe(KEY_MESSAGE(3));
    expect(fn).not.toHaveBeenCalled();
    // A third MCP session of the same key is refused too; another key is not.
    expect((await caught(() => openAs(registry, 'http:mcp-3', 'key-a'))).message).toBe(KEY_MESSAGE(3));
    await expect(openAs(registry, 'http:mcp-4', 'key-b')).resolves.toMatchObject({ owner: 'http:mcp-4' });
  });

  it('names the per-client cap first when both are hit', async () => {
    const registry = keyed(1, 1);
    await openAs(registry, 'c1', 'k');
    expect((await caught(() => openAs(registry, 'c1', 'k'))).message).toBe(LIMIT_MESSAGE(1));
    expect((await caught(() => openAs(registry, 'c2', 'k'))).message).toBe(KEY_MESSAGE(1));
  });

  it("counts the key's creations still in flight", async () => {
    const registry = keyed(5, 1);
    const slow = deferred<FakeSession>();
    const first = openAs(registry, 'c1', 'k', () => slow.promise);
    expect((await caught(() => openAs(registry, 'c2', 'k'))).message).toBe(KEY_MESSAGE(1));
    slow.reject(new Error('spawn failed'));
    await expect(first).rejects.toThrow('spawn failed');
    await expect(openAs(registry, 'c2', 'k')).resolves.toBeDefined();
  });

  it("frees the key's slot when one of its sessions ends", async () => {
    const registry = keyed(5, 2);
    const one = await openAs(registry, 'c1', 'k');
    await openAs(registry, 'c2', 'k');
    expect((await caught(() => openAs(registry, 'c3', 'k'))).code).toBe('SESSION_LIMIT');
    await registry.close('c1', one.id);
    await expect(openAs(registry, 'c3', 'k')).resolves.toBeDefined();
    await registry.closeOwnedBy('c2', 'the client disconnected');
    await expect(openAs(registry, 'c3', 'k')).resolves.toBeDefined();
  });

  it("without a key, a session counts as its owner's own key", async () => {
    const registry = keyed(5, 1);
    await open(registry, 'alice');
    expect((await caught(() => open(registry, 'alice'))).message).toBe(KEY_MESSAGE(1));
    await expect(open(registry, 'bob')).resolves.toBeDefined();
  });

  it('still applies the server-wide cap over all keys', async () => {
    const registry = keyed(5, 5, 2);
    await openAs(registry, 'c1', 'k1');
    await openAs(registry, 'c2', 'k2');
    expect((await caught(() => openAs(registry, 'c3', 'k3'))).message).toBe(TOTAL_MESSAGE(2));
  });

  it('clientKey is the principal\'s id, and "local" without one', () => {
    expect(clientKey({ principal: { id: 'k_123' } })).toBe('k_123');
    expect(clientKey({})).toBe('local');
  });
});

describe('SessionRegistry closeOwnedBy while a session starts', () => {
  it('ends the session as soon as it exists, refuses the create, and frees the slot', async () => {
    const registry = makeRegistry(1);
    const slow = deferred<FakeSession>();
    const creating = registry.create('alice', 1000, () => slow.promise);
    await registry.closeOwnedBy('alice', 'the client disconnected');
    const late = new FakeSession('late');
    slow.resolve(late);
    const err = await caught(() => creating);
    expect(err.code).toBe('SESSION_CLOSED');
    expect(err.message).toBe('the gdb session was ended while it started: the client disconnected');
    expect(late.disposeCalls).toEqual(['the client disconnected']);
    expect(registry.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    await expect(open(registry, 'alice')).resolves.toBeDefined();
  });

  it("leaves other owners' starting sessions alone", async () => {
    const registry = makeRegistry(1);
    const slow = deferred<FakeSession>();
    const creating = registry.create('bob', 0, () => slow.promise);
    await registry.closeOwnedBy('alice', 'bye');
    const bobs = new FakeSession('bobs');
    slow.resolve(bobs);
    await creating;
    expect(bobs.disposeCalls).toEqual([]);
    expect(registry.list('bob')).toHaveLength(1);
  });
});

describe('SessionRegistry and the call that asks for a session (attack 18an y1-1)', () => {
  it('makes no session for a call already cancelled (its client gone): the factory never runs', async () => {
    const registry = makeRegistry();
    const gone = new AbortController();
    gone.abort(new Error('Connection closed'));
    let started = 0;
    await expect(
      registry.create(
        'alice',
        30_000,
        async (id) => {
          started++;
          return new FakeSession(id);
        },
        { signal: gone.signal },
      ),
    ).rejects.toThrow(/no gdb session was started: the call that asked for it was cancelled or its client went away: Connection closed/);
    expect(started).toBe(0);
    expect(registry.size).toBe(0);
  });

  it('ends the session a call was starting when the call is cancelled meanwhile, and frees its slot', async () => {
    const registry = makeRegistry();
    const call = new AbortController();
    const made = deferred<FakeSession>();
    const creating = registry.create('alice', 30_000, () => made.promise, { signal: call.signal });
    call.abort();
    const session = new FakeSession('s1');
    made.resolve(session);
    await expect(creating).rejects.toThrow(/was ended while it started: the call that asked for it was cancelled or its client went away/);
    expect(session.disposeCalls).toEqual(['the call that asked for it was cancelled or its client went away']);
    expect(registry.size).toBe(0);
    expect(registry.list('alice')).toEqual([]);
  });
});
