import { dialFor } from './dial.js';
import { isStartup, shownName } from './keploy/narrow.js';

export { narrowSet, type SetNarrowing } from './keploy/narrow.js';
import type { MatcherOptions } from './http/matcher.js';
import type { OnMiss } from './http/replayer.js';
import { PARSE_MAX_BYTES, PARSE_MAX_DOCS } from './keploy/scan.js';
import type { Mock } from './keploy/types.js';
import { PROTOCOLS } from './protocols.js';
import { replayersFor } from './replayers.js';
import { describeRefusals, describeUnauthenticated, startCaptureProxy, UNAUTHENTICATED, type CaptureProxy, type InterceptedConnection } from './proxy/proxy.js';
import type { ProtocolReplayer, ReplayCounts } from './protocol.js';
import { tunnel } from './proxy/tunnel.js';
import { keptBudget } from './kept.js';
import { runThroughProxy, type RunResult } from './runner.js';
import { isOwnServer } from './session.js';
import type { DebugkitCa } from './tls/index.js';

export interface ReplayRequest {
  command: string;
  mocks: Mock[];
  cwd: string;
  ca: DebugkitCa;
  caEnv: Record<string, string>;
  /** The tool's `env` argument. */
  env?: Record<string, string>;
  fallBackOnMiss: boolean;
  /** What a miss does (default: `passthrough` with fallBackOnMiss, else `fail`). */
  onMiss?: OnMiss;
  /** Fields that never decide an HTTP match. */
  ignore?: Pick<MatcherOptions, 'ignoreHeaders' | 'ignoreQuery' | 'ignoreJsonPaths'>;
  /** PEM CAs to trust for real servers reached on a miss (else the system's). */
  upstreamCa?: string;
  timeoutMs: number;
  /** What is kept of the calls recorded on a miss (default, and at most, what a set may hold: RECORDED_MAX_MOCKS mocks, RECORDED_MAX_BYTES); smaller in tests. */
  maxMocks?: number;
  maxBytes?: number;
  ownPorts: number[];
  /** The API key the call runs for (core/sessions.ts clientKey): its proxy connections count against that key's share. */
  owner?: string;
  signal?: AbortSignal;
  onTick?: (elapsedMs: number, replayed: number, missed: number) => void;
  warn: (message: string) => void;
}

export interface ReplayOutcome {
  replayed: number;
  missed: number;
  fellBack: number;
  /** Exchanges captured on a miss (`onMiss: record`), in the order they happened: as many as a set may hold (RECORDED_MAX_*). */
  recorded: Mock[];
  /** Exchanges captured on a miss past what a set may hold: counted, not kept. */
  recordedDropped: number;
  /**
   * One line per miss, for the first MISS_LINES misses: what was asked, and the closest mock (`missed`
   * counts them all). An HTTP/1 call that fell back to the real service has its line too; a
   * connection or command of another protocol that did is counted in `fellBack` only.
   */
  misses: string[];
  /** Lines said but not kept in `misses` (past MISS_LINES). */
  missesOmitted: number;
  /**
   * Calls answered from a mock whose request body could only be compared by its size: the
   * recording kept neither the body nor its digest (a body over the recording limit in a set
   * without `body_sha256`, as Keploy writes them). Counted in `replayed` too; `strict` fails them.
   */
  unverified: number;
  /** One line each, for the first MISS_LINES of them. */
  unverifiedLines: string[];
  /** What the set's mocks did in the run (usage): those never used and those answered more often than recorded. */
  usage: MockUsage;
  run: RunResult;
}

/**
 * The set's mocks by what the run made of them. A mock is one recorded exchange: one never used
 * is a call the program did not make this time (a skipped step, a call that went elsewhere), and
 * one answered more than once answered a request the recording saw once (a retry, a poll, a loop
 * that ran longer); both let a run look clean while the program saw something other than what was
 * recorded. Start-up mocks (`metadata.type: config`, a connection's handshake) answer every
 * connection and are never counted as reused. Names are kept for the first USAGE_NAMES of each.
 */
export interface MockUsage {
  unused: number;
  unusedNames: string[];
  reused: number;
  /** "name (answered N times)". */
  reusedNames: string[];
}

/** Names kept of the mocks never used and of those reused (the counts say how many in all; keploy_mock_test's descriptions say 50). */
export const USAGE_NAMES = 50;

/**
 * Counts what answered, by mock name; `usage()` says what the set's mocks did. The replayers name
 * the mock they serve: a name a set holds k times (a hand-edited set) stands for k exchanges, used
 * in full when it answered k times (attack 18y W4: three mocks of one name passed strict with two
 * never used).
 */
export class UsageCounter {
  private readonly times = new Map<string, number>();
  constructor(private readonly mocks: readonly Mock[]) {}
  served(name: string): void {
    this.times.set(name, (this.times.get(name) ?? 0) + 1);
  }
  usage(): MockUsage {
    const out: MockUsage = { unused: 0, unusedNames: [], reused: 0, reusedNames: [] };
    const recorded = new Map<string, { count: number; startup: boolean }>();
    for (const mock of this.mocks) {
      const r = recorded.get(mock.name);
      if (r) r.count++;
      else recorded.set(mock.name, { count: 1, startup: isStartup(mock) });
    }
    for (const [name, { count, startup }] of recorded) {
      const times = this.times.get(name) ?? 0;
      const shown = shownName(name);
      if (times < count) {
        const never = count - times;
        out.unused += never;
        if (out.unusedNames.length < USAGE_NAMES) out.unusedNames.push(count > 1 ? `${shown} (${never} of ${count} never used)` : shown);
      } else if (times > count && !startup) {
        out.reused++;
        if (out.reusedNames.length < USAGE_NAMES) out.reusedNames.push(`${shown} (answered ${times} times${count > 1 ? `, recorded ${count}` : ''})`);
      }
    }
    return out;
  }
}

/**
 * The miss lines kept (the answer shows them; the rest are counted): a program that misses
 * millions of times must not hold millions of lines in the server until its run ends.
 */
export const MISS_LINES = 50;
/** With nothing in the set to greet it, how long a connected client may take before its first write. */
export const SILENT_CLIENT_MS = 10_000;
/** What is kept of the calls recorded on a miss: no more than a set is parsed to (keploy/scan.ts PARSE_BOUNDS), since they are added to the set. */
export const RECORDED_MAX_MOCKS = PARSE_MAX_DOCS;
export const RECORDED_MAX_BYTES = PARSE_MAX_BYTES;

/** What a replay serves from and how: everything of a ReplayRequest but the command to run. */
export interface ReplaySetup {
  mocks: Mock[];
  ca: DebugkitCa;
  /** What a miss does. */
  onMiss: OnMiss;
  ignore?: ReplayRequest['ignore'];
  upstreamCa?: string;
  maxMocks?: number;
  maxBytes?: number;
  ownPorts: number[];
  owner?: string;
  /** More targets passed straight through, never replayed (a debugger's own connections on loopback). */
  exclude?: (host: string, port: number) => boolean | Promise<boolean>;
  /** Each miss as it happens, its line as the answer words it (what makes a debugged program stop on a miss). */
  onMissed?: (message: string) => void;
  /** What a miss's answer waits for (ReplayersOptions.holdMiss). */
  holdMiss?: () => Promise<void>;
  warn: (message: string) => void;
}

/** What a replay did, once it is closed (ReplayOutcome without the run). */
export type ReplayTally = Omit<ReplayOutcome, 'run'>;

/**
 * The set's mocks served on a capture proxy of their own, for as long as a program runs through
 * it: keploy_mock_test runs a command through it (replayMocks), a debug session its program.
 * `counts()` says what it did so far; `close()` stops the proxy and says what it did in all.
 */
export class ReplaySession {
  private readonly misses: string[] = [];
  private missesOmitted = 0;
  private readonly unverified: string[] = [];
  private unverifiedCount = 0;
  private readonly recorded: Array<{ at: number; order: number; mock: Mock }> = [];
  private order = 0;
  private recordedBytes = 0;
  private recordedDropped = 0;
  /** Connections no replayer took. */
  private readonly other = { missed: 0, fellBack: 0 };
  private replayers: ProtocolReplayer[] = [];
  private proxyServer: CaptureProxy | undefined;
  private closed: Promise<ReplayTally> | undefined;
  private readonly usage: UsageCounter;

  private constructor(private readonly setup: ReplaySetup) {
    this.usage = new UsageCounter(setup.mocks);
  }

  static async start(setup: ReplaySetup): Promise<ReplaySession> {
    const session = new ReplaySession(setup);
    await session.open();
    return session;
  }

  /** Where the program's connections go, and the credential it shows there. */
  get proxy(): CaptureProxy {
    return this.proxyServer!;
  }

  /** Mocks served and missed so far (a fallback is a miss too), as the answers count them. */
  counts(): ReplayCounts {
    const total = { replayed: 0, missed: this.other.missed + this.other.fellBack, fellBack: this.other.fellBack };
    for (const r of this.replayers) {
      total.replayed += r.counts.replayed;
      total.missed += r.counts.missed;
      total.fellBack += r.counts.fellBack;
    }
    return total;
  }

  /** The miss lines so far (the first MISS_LINES). */
  get missLines(): readonly string[] {
    return this.misses;
  }

  /** Stops the proxy (every connection through it ends) and says what the replay did; once. */
  close(): Promise<ReplayTally> {
    this.closed ??= this.tally();
    return this.closed;
  }

  private miss(message: string): void {
    this.missLine(message);
    this.setup.onMissed?.(message);
  }

  /** A miss's line, kept while there is room (`missesOmitted` counts the rest). */
  private missLine(message: string): void {
    if (this.misses.length < MISS_LINES) this.misses.push(message);
    else this.missesOmitted++;
  }

  /**
   * Keeps a call recorded on a miss, while the set may hold it; false when not (counted). The one
   * decision for the replay indexes too: a protocol adds a recorded call to its index only when it
   * was kept, so past the caps a repeat misses and is relayed again, and memory stays bounded.
   */
  private keep(mock: Mock): boolean {
    const maxMocks = Math.min(this.setup.maxMocks ?? RECORDED_MAX_MOCKS, RECORDED_MAX_MOCKS);
    const maxBytes = Math.min(this.setup.maxBytes ?? RECORDED_MAX_BYTES, RECORDED_MAX_BYTES);
    const bytes = mockBytes(mock);
    if (this.recorded.length >= maxMocks || this.recordedBytes + bytes > maxBytes) return (this.recordedDropped++, false);
    this.recordedBytes += bytes;
    this.recorded.push({ at: Date.now(), order: this.order++, mock });
    return true;
  }

  private async open(): Promise<void> {
    const { setup } = this;
    const { onMiss } = setup;
    // One budget for what the replay keeps of calls not finished yet: request bodies being read, calls recorded on a miss (kept.ts).
    const kept = keptBudget();
    const replayers = await replayersFor(setup.mocks, {
      ca: setup.ca,
      onMiss,
      kept,
      served: (name) => this.usage.served(name),
      ...(setup.holdMiss ? { holdMiss: setup.holdMiss } : {}),
      ...(setup.ignore ? { ignore: setup.ignore } : {}),
      ...(setup.upstreamCa ? { upstreamCa: setup.upstreamCa } : {}),
      missed: (message) => this.miss(message),
      // A call that fell back is a miss of the set with its line, but not one a debugger stops on (stopOnMiss).
      fellBack: (message) => this.missLine(message),
      unverified: (message) => {
        this.unverifiedCount++;
        if (this.unverified.length < MISS_LINES) this.unverified.push(message);
      },
      recorded: (mock) => this.keep(mock),
      dropped: () => void this.recordedDropped++,
      warn: setup.warn,
    });
    this.replayers = replayers;
    /**
     * A connection no replayer took (HTTP and HTTP/2 ones always are): to the real destination,
     * recorded by its protocol with `onMiss: record`.
     */
    const passOn = async (conn: InterceptedConnection) => {
      const protocol = onMiss === 'record' ? PROTOCOLS.find((p) => p.recorder.accepts(conn)) : undefined;
      if (!protocol) {
        this.other.fellBack++;
        return void (await tunnel(conn));
      }
      await protocol.recorder.record(conn, {
        ca: setup.ca,
        ...(setup.upstreamCa ? { upstreamCa: setup.upstreamCa } : {}),
        dial: (c) =>
          dialFor(c).catch((err: unknown) => {
            this.other.fellBack++;
            throw err;
          }),
        onMock: (mock) => this.keep(mock),
        onDropped: () => void this.recordedDropped++,
        kept,
        warn: setup.warn,
      });
    };
    this.proxyServer = await startCaptureProxy({
      exclude: async (host, port) => isOwnServer(host, port, setup.ownPorts) || ((await setup.exclude?.(host, port)) ?? false),
      ...(setup.owner !== undefined ? { owner: setup.owner } : {}),
      // A client silent at first is taken for one waiting to be greeted (MySQL, SMTP). When a miss
      // fails and no mock here greets, it can only be one still busy before its first write (a
      // 200,000-command pipeline being built on a loaded machine was answered as a Generic miss).
      sniffIdleMs: (target) => (onMiss === 'fail' && !replayers.some((r) => r.greets?.(target)) ? SILENT_CLIENT_MS : undefined),
      onRefused: (why) => setup.warn(why === UNAUTHENTICATED ? describeUnauthenticated(1) : `a connection was refused by the capture proxy: ${why}`),
      onCut: ({ target, bytes, why }) => {
        this.other.missed++;
        this.miss(`a connection to ${target.host}:${target.port} sent ${bytes} bytes and was cut (${why}) before debugkit could tell its protocol: a request sent and never answered`);
      },
      onConnection: async (conn) => {
        try {
          const replayer = replayers.find((r) => r.accepts(conn));
          if (replayer) return await replayer.serve(conn);
          if (onMiss !== 'fail') return void (await passOn(conn));
          this.other.missed++;
          this.miss(`${conn.protocol} connection to ${conn.target.host}:${conn.target.port}: no ${conn.protocol} mocks can answer it`);
          conn.client.destroy();
        } catch (err) {
          setup.warn(`replaying ${conn.target.host}:${conn.target.port}: ${String(err)}`);
        }
      },
    });
  }

  private async tally(): Promise<ReplayTally> {
    const proxy = this.proxyServer!;
    await proxy.close();
    const { misses } = this;
    // A refused connection is a call the set did not answer: counted as missed, and said first (the likely cause of what else failed).
    const refused = proxy.refused;
    if (refused.length > 0) {
      this.other.missed += refused.reduce((n, r) => n + r.count, 0);
      misses.unshift(describeRefusals(refused));
      this.trimMisses();
    }
    // Said, not counted as missed: any local process can knock on the ports, and must not fail another's replay.
    if (proxy.unauthenticated > 0) {
      misses.unshift(describeUnauthenticated(proxy.unauthenticated));
      this.trimMisses();
    }
    const captured = this.recorded.sort((a, b) => a.at - b.at || a.order - b.order).map((r) => r.mock);
    return {
      ...this.counts(),
      recorded: captured,
      recordedDropped: this.recordedDropped,
      misses: [...misses],
      missesOmitted: this.missesOmitted,
      unverified: this.unverifiedCount,
      unverifiedLines: [...this.unverified],
      usage: this.usage.usage(),
    };
  }

  /** Back to MISS_LINES lines, those cut counted. */
  private trimMisses(): void {
    const over = this.misses.length - MISS_LINES;
    if (over <= 0) return;
    this.missesOmitted += over;
    this.misses.length = MISS_LINES;
  }
}

/** Runs the command with every outgoing call answered from the mock set. */
export async function replayMocks(req: ReplayRequest): Promise<ReplayOutcome> {
  const session = await ReplaySession.start({
    mocks: req.mocks,
    ca: req.ca,
    onMiss: req.onMiss ?? (req.fallBackOnMiss ? 'passthrough' : 'fail'),
    ...(req.ignore ? { ignore: req.ignore } : {}),
    ...(req.upstreamCa ? { upstreamCa: req.upstreamCa } : {}),
    ...(req.maxMocks !== undefined ? { maxMocks: req.maxMocks } : {}),
    ...(req.maxBytes !== undefined ? { maxBytes: req.maxBytes } : {}),
    ownPorts: req.ownPorts,
    ...(req.owner !== undefined ? { owner: req.owner } : {}),
    warn: req.warn,
  });
  let run: RunResult;
  try {
    run = await runThroughProxy(req, session.proxy, (ms) => {
      const c = session.counts();
      req.onTick?.(ms, c.replayed, c.missed);
    });
  } finally {
    await session.close();
  }
  return { ...(await session.close()), run };
}

/** About how many bytes `mock` holds: its strings and byte arrays (plain data, as parsed or recorded). */
export function mockBytes(mock: Mock): number {
  let bytes = 0;
  const stack: unknown[] = [mock];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') bytes += v.length;
    else if (v instanceof Uint8Array) bytes += v.byteLength;
    else if (Array.isArray(v)) for (const item of v) stack.push(item);
    else if (v && typeof v === 'object') for (const item of Object.values(v)) stack.push(item);
    else bytes += 8;
  }
  return bytes;
}
