import type { Duplex } from 'node:stream';
import type { TimeSlice } from '../../core/wait.js';
import type { MatcherOptions } from './http/matcher.js';
import type { H2OverTls } from './http/intercept.js';
import type { OnMiss } from './http/replayer.js';
import type { Mock } from './keploy/types.js';
import type { InterceptedConnection } from './proxy/proxy.js';
import type { SniffResult } from './proxy/sniff.js';
import type { KeptBytes } from './kept.js';
import type { DebugkitCa } from './tls/index.js';

/**
 * What a protocol is to the rest of the toolset: how its connections are told from their first
 * bytes (`detect`), recorded (`recorder`) and replayed (`replayer`). Each `<protocol>/index.ts`
 * exports these three; protocols.ts lists them.
 */
/**
 * Most bytes one exchange (a request and its answer, a PostgreSQL query group, a Redis command and
 * its reply) may have to be kept as a mock: the one bound of every recorder. A bigger one is relayed
 * whole and counted as dropped, why said. A mock is built on the event loop, and no set holds more
 * than 32 MiB anyway: three 60 MB PostgreSQL results were each encoded (3 s a time) to be dropped
 * after, and 8 such connections at once exhausted the heap (attack 18o).
 */
export const MAX_MOCK_EXCHANGE_BYTES = 1024 * 1024;

export interface Protocol {
  /** Absent for a protocol whose client waits for the server to speak (the sniffer's fallback). */
  readonly detect?: Detect;
  readonly recorder: ProtocolRecorder;
  readonly replayer: ReplayerFactory;
}

/** A connection's protocol from its first bytes; `maybe` asks for more bytes, `final` says none will come. */
export type Detect = (buf: Buffer, final: boolean) => Verdict;
export type Verdict = SniffResult | 'no' | 'maybe';

/** What every protocol's recording is to record.ts (and to replay.ts, recording misses). */
export interface ProtocolRecorder {
  /** Whether this protocol records the connection (by what the sniffer found). */
  accepts(conn: InterceptedConnection): boolean;
  /** Records the connection through to its real destination until it closes; problems go to `o.warn`. */
  record(conn: InterceptedConnection, o: RecordOptions): Promise<void>;
}

export interface RecordOptions {
  ca: DebugkitCa;
  upstreamCa?: string;
  insecureUpstream?: boolean;
  /** The connection's real destination (the program's socket is closed if it cannot be reached). */
  dial(conn: InterceptedConnection): Promise<Duplex>;
  /** A captured mock, and the protocol it counts under (the set's name lists them). */
  onMock(mock: Mock, protocol: string): void;
  /** An exchange relayed whole but not kept as a mock, and why (counted in the answer). */
  onDropped(why: string): void;
  /** The recording's budget for calls not finished yet (kept.ts). */
  kept?: KeptBytes;
  warn(message: string): void;
}

/**
 * What every protocol's replay is to replay.ts: one object per protocol, built over the set's
 * mocks of its kind, shared by all of a program's connections (a pool's connections share the
 * recorded order). `accepts` says whether it has mocks that can answer a connection; `serve`
 * answers it until it closes; the counts are its own.
 */
export interface ProtocolReplayer {
  readonly kind: 'Http' | 'Http2' | 'Postgres' | 'Redis' | 'Generic';
  accepts(conn: InterceptedConnection): boolean;
  serve(conn: InterceptedConnection): Promise<void>;
  readonly counts: ReplayCounts;
  /**
   * Generic only: whether the set holds mocks for `target`, which may be a protocol where the
   * server speaks first (a client silent at first may be waiting for a greeting).
   */
  readonly greets?: (target: InterceptedConnection['target']) => boolean;
  /** HTTP/2 only: serves a TLS connection that negotiated h2 (handed over by the HTTP replayer); absent when the set holds no HTTP/2. */
  readonly overTls?: (conn: H2OverTls) => Promise<void>;
}

/**
 * Builds a protocol's replayer over a set. `built` holds the replayers of the protocols before it
 * in the list (HTTP hands TLS connections that negotiated h2 to HTTP/2's); `slice` paces index
 * building so that the server answers others meanwhile.
 */
export type ReplayerFactory = (mocks: readonly Mock[], o: ReplayersOptions, ctx: { slice: TimeSlice; built: readonly ProtocolReplayer[] }) => ProtocolReplayer | Promise<ProtocolReplayer>;

export interface ReplayCounts {
  replayed: number;
  missed: number;
  /** Misses sent to the real destination (HTTP and Redis commands; other protocols pass whole connections). */
  fellBack: number;
}

export interface ReplayersOptions {
  ca: DebugkitCa;
  onMiss: OnMiss;
  ignore?: Pick<MatcherOptions, 'ignoreHeaders' | 'ignoreQuery' | 'ignoreJsonPaths'>;
  upstreamCa?: string;
  /** One line per miss: what was asked and the closest mock. */
  missed(message: string): void;
  /** The line of a miss that was answered by the real service (passthrough): reported, never stopped on. */
  fellBack?(message: string): void;
  /** A call answered from a mock whose request body could only be compared by its size (the recording kept neither it nor its digest). */
  unverified?(message: string): void;
  /**
   * A mock of the set answered, by its name, each time it does (a repeated request answered by the
   * same mock again calls it again): what replay.ts reports as the mocks never used and reused.
   */
  served?(mock: string): void;
  /**
   * What a miss's answer waits for, once the miss is said (`missed`): a debugger pausing the program
   * (stopOnMiss), so that it stops where the answer comes back rather than some calls later.
   * HTTP and HTTP/2 wait; the other protocols answer at once.
   */
  holdMiss?(): Promise<void>;
  /**
   * A mock captured on a miss (`onMiss: record`). False when it was not kept (past what a set may
   * hold): it is then not added to the replay index either, and a repeat misses again.
   */
  recorded(mock: Mock): boolean | void;
  /** A miss relayed whole but not recorded (over MAX_MOCK_EXCHANGE_BYTES), and why (`onMiss: record`). */
  dropped?(why: string): void;
  /** Something about the set the report should say (MySQL mocks that cannot be replayed). */
  warn?(message: string): void;
  /** The replay's budget for what it keeps of calls not finished yet (request bodies being read, calls recorded on a miss): kept.ts. */
  kept?: KeptBytes;
}

export function counts(): ReplayCounts {
  return { replayed: 0, missed: 0, fellBack: 0 };
}

export const ofKind = <K extends Mock['kind']>(mocks: readonly Mock[], kind: K) => mocks.filter((m) => m.kind === kind) as Array<Extract<Mock, { kind: K }>>;
