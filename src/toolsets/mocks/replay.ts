import { dialFor } from './dial.js';
import type { MatcherOptions } from './http/matcher.js';
import type { OnMiss } from './http/replayer.js';
import { PARSE_MAX_BYTES, PARSE_MAX_DOCS } from './keploy/scan.js';
import type { Mock } from './keploy/types.js';
import { PROTOCOLS } from './protocols.js';
import { replayersFor } from './replayers.js';
import { describeRefusals, describeUnauthenticated, startCaptureProxy, UNAUTHENTICATED, type InterceptedConnection } from './proxy/proxy.js';
import { tunnel } from './proxy/tunnel.js';
import { KeptBytes } from './kept.js';
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
  /** One line per miss, for the first MISS_LINES misses: what was asked, and the closest mock (`missed` counts them all). */
  misses: string[];
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

/** Counts what answered, by mock name; `usage()` says what the set's mocks did. */
export class UsageCounter {
  private readonly times = new Map<string, number>();
  constructor(private readonly mocks: readonly Mock[]) {}
  served(name: string): void {
    this.times.set(name, (this.times.get(name) ?? 0) + 1);
  }
  usage(): MockUsage {
    const out: MockUsage = { unused: 0, unusedNames: [], reused: 0, reusedNames: [] };
    const seen = new Set<string>();
    for (const mock of this.mocks) {
      // One name counted once, even when a hand-edited set repeats it.
      if (seen.has(mock.name)) continue;
      seen.add(mock.name);
      const times = this.times.get(mock.name) ?? 0;
      if (times === 0) {
        if (out.unused++ < USAGE_NAMES) out.unusedNames.push(mock.name);
      } else if (times > 1 && !isStartup(mock)) {
        if (out.reused++ < USAGE_NAMES) out.reusedNames.push(`${mock.name} (answered ${times} times)`);
      }
    }
    return out;
  }
}

/** A connection's start-up mock (Keploy's `metadata.type: config`): it answers each connection. */
function isStartup(mock: Mock): boolean {
  const spec = (mock as { spec?: { metadata?: Record<string, unknown> } }).spec;
  return spec?.metadata?.type === 'config';
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

/** Runs the command with every outgoing call answered from the mock set. */
export async function replayMocks(req: ReplayRequest): Promise<ReplayOutcome> {
  const onMiss: OnMiss = req.onMiss ?? (req.fallBackOnMiss ? 'passthrough' : 'fail');
  const misses: string[] = [];
  const miss = (message: string) => {
    if (misses.length < MISS_LINES) misses.push(message);
  };
  const recorded: Array<{ at: number; order: number; mock: Mock }> = [];
  let order = 0;
  let recordedBytes = 0;
  let recordedDropped = 0;
  const maxMocks = Math.min(req.maxMocks ?? RECORDED_MAX_MOCKS, RECORDED_MAX_MOCKS);
  const maxBytes = Math.min(req.maxBytes ?? RECORDED_MAX_BYTES, RECORDED_MAX_BYTES);
  /**
   * Keeps a call recorded on a miss, while the set may hold it; false when not (counted). The one
   * decision for the replay indexes too: a protocol adds a recorded call to its index only when it
   * was kept, so past the caps a repeat misses and is relayed again, and memory stays bounded.
   */
  const keep = (mock: Mock): boolean => {
    const bytes = mockBytes(mock);
    if (recorded.length >= maxMocks || recordedBytes + bytes > maxBytes) return (recordedDropped++, false);
    recordedBytes += bytes;
    recorded.push({ at: Date.now(), order: order++, mock });
    return true;
  };
  const usage = new UsageCounter(req.mocks);
  const replayers = await replayersFor(req.mocks, {
    ca: req.ca,
    onMiss,
    served: (name) => usage.served(name),
    ...(req.ignore ? { ignore: req.ignore } : {}),
    ...(req.upstreamCa ? { upstreamCa: req.upstreamCa } : {}),
    missed: miss,
    recorded: keep,
    dropped: () => void recordedDropped++,
    warn: req.warn,
  });
  /** Connections no replayer took. */
  const other = { missed: 0, fellBack: 0 };
  // One budget for the calls recorded on a miss and not finished yet (kept.ts).
  const kept = new KeptBytes();
  /**
   * A connection no replayer took (HTTP and HTTP/2 ones always are): to the real destination,
   * recorded by its protocol with `onMiss: record`.
   */
  const passOn = async (conn: InterceptedConnection) => {
    const protocol = onMiss === 'record' ? PROTOCOLS.find((p) => p.recorder.accepts(conn)) : undefined;
    if (!protocol) {
      other.fellBack++;
      return void (await tunnel(conn));
    }
    await protocol.recorder.record(conn, {
      ca: req.ca,
      ...(req.upstreamCa ? { upstreamCa: req.upstreamCa } : {}),
      dial: (c) =>
        dialFor(c).catch((err: unknown) => {
          other.fellBack++;
          throw err;
        }),
      onMock: keep,
      onDropped: () => void recordedDropped++,
      kept,
      warn: req.warn,
    });
  };
  const proxy = await startCaptureProxy({
    exclude: (host, port) => isOwnServer(host, port, req.ownPorts),
    ...(req.owner !== undefined ? { owner: req.owner } : {}),
    // A client silent at first is taken for one waiting to be greeted (MySQL, SMTP). When a miss
    // fails and no mock here greets, it can only be one still busy before its first write (a
    // 200,000-command pipeline being built on a loaded machine was answered as a Generic miss).
    sniffIdleMs: (target) => (onMiss === 'fail' && !replayers.some((r) => r.greets?.(target)) ? SILENT_CLIENT_MS : undefined),
    onRefused: (why) => req.warn(why === UNAUTHENTICATED ? describeUnauthenticated(1) : `a connection was refused by the capture proxy: ${why}`),
    onConnection: async (conn) => {
      try {
        const replayer = replayers.find((r) => r.accepts(conn));
        if (replayer) return await replayer.serve(conn);
        if (onMiss !== 'fail') return void (await passOn(conn));
        other.missed++;
        miss(`${conn.protocol} connection to ${conn.target.host}:${conn.target.port}: no ${conn.protocol} mocks can answer it`);
        conn.client.destroy();
      } catch (err) {
        req.warn(`replaying ${conn.target.host}:${conn.target.port}: ${String(err)}`);
      }
    },
  });
  const counts = () => {
    const total = { replayed: 0, missed: other.missed + other.fellBack, fellBack: other.fellBack };
    for (const r of replayers) {
      total.replayed += r.counts.replayed;
      total.missed += r.counts.missed;
      total.fellBack += r.counts.fellBack;
    }
    return total;
  };
  let run: RunResult;
  try {
    run = await runThroughProxy(req, proxy, (ms) => {
      const c = counts();
      req.onTick?.(ms, c.replayed, c.missed);
    });
  } finally {
    await proxy.close();
  }
  // A refused connection is a call the set did not answer: counted as missed, and said first (the likely cause of what else failed).
  const refused = proxy.refused;
  if (refused.length > 0) {
    other.missed += refused.reduce((n, r) => n + r.count, 0);
    misses.unshift(describeRefusals(refused));
    misses.length = Math.min(misses.length, MISS_LINES);
  }
  // Said, not counted as missed: any local process can knock on the ports, and must not fail another's replay.
  if (proxy.unauthenticated > 0) {
    misses.unshift(describeUnauthenticated(proxy.unauthenticated));
    misses.length = Math.min(misses.length, MISS_LINES);
  }
  const captured = recorded.sort((a, b) => a.at - b.at || a.order - b.order).map((r) => r.mock);
  return { ...counts(), recorded: captured, recordedDropped, misses, usage: usage.usage(), run };
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
