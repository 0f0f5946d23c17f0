import { rm } from 'node:fs/promises';
import { DebugkitError } from '../../core/errors.js';
import { privateTempDir } from '../../core/paths.js';
import { runBounded } from '../../core/run.js';
import { listeningPorts } from '../../core/sockets.js';
import { boundPromise } from '../../core/wait.js';
import { MockStore } from './keploy/store.js';
import { mocksDir } from './paths.js';
import { findProxychains, proxiedCommand, writeProxychainsConfig } from './proxy/proxychains.js';
import { MISS_LINES, ReplaySession, type ReplayTally } from './replay.js';
import { loadCa } from './session.js';
import { setPlace, type MocksOption, type ReplayAtStop } from './option.js';

/**
 * Debugging under a mock set (issue 22): a debug session's program (Python under debugpy, C under
 * gdb) runs with its outgoing calls answered from a recorded set, exactly as keploy_mock_test runs
 * a command (the same proxy, CA and environment), the debugger attached. A ReplaySession serves
 * the set for the session's life; each stop says what replay did since the last one, and a miss
 * can pause the program where it asked.
 */

/** The longest a miss's answer waits for the debugger to pause the program. */
const MISS_HOLD_MS = 3000;

/** Miss lines a stop shows: the stop is a few hundred tokens, and the session's state has the rest. */
export const MISSES_AT_STOP = 5;

export interface DebugReplayOptions {
  /** The workspace root, where the set's directory is found. */
  root: string;
  option: MocksOption;
  /** Whose replay: the API key's id (its share of the proxies' descriptors, of the mock-set threads). */
  owner?: string;
  /** debugkit's own ports: connections to them are never replayed. */
  ownPorts: number[];
  /** The debugger's own processes: their listening ports on loopback are its own connections (debugpy's adapter), passed through. */
  debuggerPids?: () => number[];
  signal?: AbortSignal;
  warn: (message: string) => void;
  /**
   * Names resolved through the proxy (proxychains' proxy_dns, the default). Off for a program
   * recorded by GDB's record full: proxychains resolves names on a thread of its own that waits in
   * a read, and record full never comes back from stepping it (measured on GDB 13: the program
   * never reached the next breakpoint, and gdb answered no command). The program's own resolver
   * then reads /etc/hosts and DNS.
   */
  proxyDns?: boolean;
}

const LOOPBACK = /^(?:127\.|::1$|localhost$)/;

/** A mock set served for one debug session's program: its environment, what replay did, a miss's pause. */
export class DebugReplay {
  /** The variables that route the program through the replay (proxychains' preload and config, proxy URLs, the CA). */
  env: Record<string, string> = {};
  private last = { replayed: 0, missed: 0 };
  private pending: string[] = [];
  private missListener: ((message: string) => Promise<void> | void) | undefined;
  /** What the listener does about the last miss (a debugger's pause), which that miss's answer waits for. */
  private holding: Promise<void> | undefined;
  private dir: string | undefined;
  private closed: Promise<string> | undefined;

  private constructor(
    readonly set: string,
    private readonly store: MockStore,
    private readonly owner: string | undefined,
    readonly stopOnMiss: boolean,
    private readonly recording: boolean,
  ) {}

  private session!: ReplaySession;

  static async start(o: DebugReplayOptions): Promise<DebugReplay> {
    const place = setPlace(o.option.set);
    const store = new MockStore(mocksDir(o.root, place.path), { root: o.root });
    const onPool = { ...(o.owner !== undefined ? { owner: o.owner } : {}), ...(o.signal ? { signal: o.signal } : {}) };
    const mocks = await store.load(place.name, onPool);
    const { ca, env: caEnv } = await loadCa(o.warn);
    const onMiss = o.option.onMiss ?? 'fail';
    const replay = new DebugReplay(place.name, store, o.owner, o.option.stopOnMiss === true, onMiss === 'record');
    const debuggerPorts = o.debuggerPids ? new DebuggerPorts(o.debuggerPids) : undefined;
    replay.session = await ReplaySession.start({
      mocks,
      ca,
      onMiss,
      ownPorts: o.ownPorts,
      ...(o.owner !== undefined ? { owner: o.owner } : {}),
      exclude: debuggerPorts ? (host, port) => LOOPBACK.test(host) && debuggerPorts.has(port) : undefined,
      onMissed: (message) => replay.missed(message),
      holdMiss: () => replay.holdMiss(),
      warn: o.warn,
    });
    try {
      replay.dir = privateTempDir('debugkit-proxychains-');
      const { proxy } = replay.session;
      const credential = proxy.credential ? { credential: proxy.credential } : {};
      const configPath = writeProxychainsConfig(replay.dir, proxy.socksPort, { httpPort: proxy.httpPort, proxyDns: o.proxyDns ?? true, ...credential });
      // The proxy variables as keploy_mock_test gives them (proxiedCommand), then the preload that
      // proxychains4 would set before running the program: a debugger starts the program itself.
      const proxied = proxiedCommand(['true'], { socksPort: proxy.socksPort, httpPort: proxy.httpPort, configPath, env: {}, ...credential });
      const vars = Object.fromEntries(Object.entries(proxied.env).filter((e): e is [string, string] => e[1] !== undefined));
      replay.env = { ...caEnv, ...vars, LD_PRELOAD: await proxychainsPreload(configPath), PROXYCHAINS_CONF_FILE: configPath, PROXYCHAINS_QUIET_MODE: '1' };
    } catch (err) {
      await replay.close();
      throw err;
    }
    return replay;
  }

  /**
   * Called on each miss with its line (stopOnMiss: the session pauses the program); the miss's
   * answer waits for what it returns, MISS_HOLD_MS at most, so the program stops where the answer
   * comes back (HTTP and HTTP/2; the other protocols answer at once and the pause lands later).
   */
  onMiss(listener: (message: string) => Promise<void> | void): void {
    this.missListener = listener;
  }

  private missed(message: string): void {
    if (this.pending.length < MISSES_AT_STOP) this.pending.push(message);
    const acting = this.missListener?.(message);
    this.holding = acting ? acting.catch(() => undefined) : undefined;
  }

  private async holdMiss(): Promise<void> {
    const holding = this.holding;
    this.holding = undefined;
    if (holding) await boundPromise(holding, { timeoutMs: MISS_HOLD_MS });
  }

  /** What replay did since the last stop (and marks this one); undefined when it did nothing. */
  sinceLastStop(): ReplayAtStop | undefined {
    const now = this.session.counts();
    const replayed = now.replayed - this.last.replayed;
    const missed = now.missed - this.last.missed;
    this.last = { replayed: now.replayed, missed: now.missed };
    const misses = this.pending;
    this.pending = [];
    if (replayed === 0 && missed === 0) return undefined;
    return { set: this.set, replayed, missed, ...(misses.length > 0 ? { misses } : {}) };
  }

  /** What replay did in the whole session so far: the session's state shows it. */
  totals(): ReplayAtStop & { fellBack: number } {
    const c = this.session.counts();
    const misses = this.session.missLines.slice(0, MISS_LINES);
    return { set: this.set, replayed: c.replayed, missed: c.missed, fellBack: c.fellBack, ...(misses.length > 0 ? { misses: [...misses] } : {}) };
  }

  /**
   * Stops serving the set (every connection of the program through it ends) and says what replay
   * did in all; with `onMiss: record`, the calls recorded on a miss are added to the set. Once.
   */
  close(): Promise<string> {
    this.closed ??= this.finish();
    return this.closed;
  }

  private async finish(): Promise<string> {
    let tally: ReplayTally | undefined;
    try {
      tally = await this.session?.close();
    } finally {
      if (this.dir) await rm(this.dir, { recursive: true, force: true });
    }
    if (!tally) return '';
    const parts = [replaySummary(this.set, tally)];
    if (this.recording && tally.recorded.length > 0) {
      try {
        const total = await this.store.append(this.set, tally.recorded, this.owner !== undefined ? { owner: this.owner } : {});
        parts.push(`${tally.recorded.length} calls recorded on a miss added (now ${total} mocks)`);
      } catch (err) {
        parts.push(`the ${tally.recorded.length} calls recorded on a miss could not be added: ${(err as Error).message}`);
      }
    }
    return parts.join(', ');
  }
}

/** What a debug session's replay did in all, as its end says it: served, missed, never used, reused, and matched unverified. */
export function replaySummary(set: string, tally: Pick<ReplayTally, 'replayed' | 'missed' | 'usage' | 'unverified' | 'unverifiedLines'>): string {
  const parts = [`mock set '${set}': ${tally.replayed} replayed, ${tally.missed} missed`];
  if (tally.usage.unused > 0) parts.push(`${tally.usage.unused} never used`);
  if (tally.usage.reused > 0) parts.push(`${tally.usage.reused} answered more often than recorded`);
  // As keploy_mock_test says it (attack 18ac f1-3): a body the recording kept neither whole nor as its digest was matched by its size alone.
  if (tally.unverified > 0) parts.push(`${tally.unverified} matched by body size only, unverified (first: ${tally.unverifiedLines[0] ?? '?'})`);
  return parts.join(', ');
}

/**
 * The loopback ports the debugger's own processes listen on, read from /proc when a connection asks
 * for a port not known yet, at most every REREAD_MS: a program making many loopback connections
 * costs one read a while, not one each (attack 18z Y2: 18,000 sockets made each connection read
 * 1.5 MB of /proc tables on the loop, 69 ms a connection). The debugger listens before its program
 * starts, so the first read finds it.
 */
export class DebuggerPorts {
  private ports = new Set<number>();
  private readAt = -Infinity;
  private reading: Promise<void> | undefined;
  constructor(private readonly pids: () => number[]) {}

  async has(port: number): Promise<boolean> {
    if (this.ports.has(port)) return true;
    if (!this.reading && performance.now() - this.readAt >= REREAD_MS) {
      this.readAt = performance.now();
      this.reading = listeningPorts(this.pids())
        .then((ports) => void (this.ports = ports))
        .finally(() => (this.reading = undefined));
    }
    await this.reading;
    return this.ports.has(port);
  }
}
const REREAD_MS = 1000;

let preload: Promise<string> | undefined;

/**
 * The LD_PRELOAD value proxychains4 gives a program (its library, found where it was built to look),
 * read once by running `env` under it: a debugger cannot run its program under proxychains4, so
 * it is given what proxychains4 would set.
 */
function proxychainsPreload(configPath: string): Promise<string> {
  preload ??= (async () => {
    const run = await runBounded({ command: findProxychains(), args: ['-q', '-f', configPath, 'env'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, timeoutMs: 10_000 });
    const line = run.stdout.split('\n').find((l) => l.startsWith('LD_PRELOAD='));
    if (run.code !== 0 || !line) throw new DebugkitError('ENGINE_MISSING', `proxychains4 did not say which library it preloads (exit ${run.code}): ${run.stderr.trim().slice(0, 200)}`);
    return line.slice('LD_PRELOAD='.length);
  })();
  preload.catch(() => (preload = undefined));
  return preload;
}
