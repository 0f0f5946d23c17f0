import { HttpMatcher, HttpReplayer, isHttpCandidate, replayIntercepted, type ReplayEvent } from './http/index.js';
import type { MatcherOptions } from './http/matcher.js';
import type { OnMiss } from './http/replayer.js';
import { GenericIndex, replayGeneric } from './generic/index.js';
import { mysqlAsGenerics } from './mysql/keploy.js';
import type { GenericMock, HttpMock, Mock, PostgresMock } from './keploy/types.js';
import { ReplayIndex } from './postgres/catalog.js';
import { replayPostgres, type UpstreamOptions } from './postgres/replayer.js';
import type { InterceptedConnection } from './proxy/proxy.js';
import { RedisIndex } from './redis/matcher.js';
import { redisFetcher, replayRedis } from './redis/replayer.js';
import { toRedisMock } from './redis/keploy.js';
import { commandArgs, redactArgs } from './redis/wire.js';
import type { DebugkitCa } from './tls/index.js';
import { GrpcIndex, http2AsHttp, replayH2, type H2Dial } from './h2/index.js';
import type { H2OverTls } from './http/intercept.js';
import { connectUpstream } from './tls/terminate.js';
import { TimeSlice } from '../../core/wait.js';
import { dial, DIAL_TIMEOUT_MS } from './dial.js';

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
}

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
  /** A mock captured on a miss (`onMiss: record`). */
  recorded(mock: Mock): void;
  /** Something about the set the report should say (MySQL mocks that cannot be replayed). */
  warn?(message: string): void;
}

const ofKind = <K extends Mock['kind']>(mocks: readonly Mock[], kind: K) => mocks.filter((m) => m.kind === kind) as Array<Extract<Mock, { kind: K }>>;

/**
 * The replayers of a set, in the order they are asked: HTTP (TLS and HTTP connections), then
 * PostgreSQL, then Generic before Redis (a Redis connection to a target with Generic mocks, from a
 * set recorded before Redis was modeled, is answered by those).
 */
export async function replayersFor(mocks: readonly Mock[], o: ReplayersOptions): Promise<ProtocolReplayer[]> {
  // A large set's indexes are built in slices: the server answers others meanwhile.
  const slice = new TimeSlice(SLICE_MS);
  const h2 = h2Replayer(mocks, await GrpcIndex.build(mocks, slice), o);
  return [
    h2,
    httpReplayer(ofKind(mocks, 'Http'), o, h2.overTls),
    postgresReplayer(ofKind(mocks, 'Postgres'), o),
    genericReplayer(await GenericIndex.build(genericAndMysql(mocks, o.warn), slice), o),
    redisReplayer(await RedisIndex.build(ofKind(mocks, 'Redis'), slice), o),
  ];
}

/** Index building runs for about this long at a time. */
const SLICE_MS = 10;

function counts(): ReplayCounts {
  return { replayed: 0, missed: 0, fellBack: 0 };
}

function httpReplayer(mocks: HttpMock[], o: ReplayersOptions, h2?: (conn: H2OverTls) => Promise<void>): ProtocolReplayer {
  const replayer = new HttpReplayer({
    matcher: new HttpMatcher(mocks, o.ignore ?? {}),
    onMiss: o.onMiss,
    ...(o.upstreamCa ? { upstream: { ca: o.upstreamCa } } : {}),
    onEvent: (event) => {
      if (event.kind === 'missed') o.missed(describeMiss(event));
      if (event.kind === 'recorded' && event.recorded) o.recorded(event.recorded);
    },
  });
  return {
    kind: 'Http',
    // HTTP and TLS connections always go to the HTTP replayer: it answers misses itself (502, passthrough, record).
    accepts: (conn) => isHttpCandidate(conn),
    serve: (conn) => replayIntercepted(conn, replayer, { ca: o.ca, ...(h2 ? { h2 } : {}) }),
    get counts() {
      const c = replayer.counters;
      // A fallback is still a miss of the set (the contract's counting).
      return { replayed: c.replayed, missed: c.missed + c.fellBack, fellBack: c.fellBack };
    },
  };
}

/**
 * HTTP/2: h2c connections, and TLS ones that negotiated h2 (handed over by the HTTP replayer,
 * which offers h2 only when the set holds HTTP/2 exchanges). gRPC calls are answered from the
 * `gRPC` mocks, other requests from the `Http2` ones (and `Http` ones).
 */
function h2Replayer(mocks: readonly Mock[], grpc: GrpcIndex, o: ReplayersOptions): ProtocolReplayer & { overTls?: (conn: H2OverTls) => Promise<void> } {
  const httpMocks = [...ofKind(mocks, 'Http'), ...mocks.map(http2AsHttp).filter((m): m is HttpMock => m !== undefined)];
  const http = new HttpMatcher(httpMocks, o.ignore ?? {});
  const c = counts();
  const options = (scheme: 'http' | 'https', dial: H2Dial) => ({
    scheme,
    grpc,
    http,
    onMiss: o.onMiss,
    ...(o.onMiss === 'fail' ? {} : { dial }),
    counts: c,
    missed: o.missed,
    recorded: o.recorded,
  });
  const hasH2 = grpc.size > 0 || httpMocks.some((m) => m.spec.req.proto_major === 2);
  return {
    kind: 'Http2',
    accepts: (conn) => conn.protocol === 'h2',
    serve: (conn) =>
      replayH2(
        conn,
        options('http', () => dial(conn.target, DIAL_TIMEOUT_MS)),
      ),
    ...(hasH2
      ? {
          overTls: (conn: H2OverTls) =>
            replayH2(
              conn,
              options('https', () => connectUpstream(conn.target, conn.serverName, { alpn: ['h2'], ...(o.upstreamCa ? { ca: o.upstreamCa } : {}) })),
            ),
        }
      : {}),
    counts: c,
  };
}

function postgresReplayer(mocks: PostgresMock[], o: ReplayersOptions): ProtocolReplayer {
  const index = new ReplayIndex(mocks);
  const c = counts();
  return {
    kind: 'Postgres',
    // Without PostgreSQL mocks a session passes through (or is recorded) unless misses fail.
    accepts: (conn) => conn.protocol === 'postgres' && (mocks.length > 0 || o.onMiss === 'fail'),
    serve: async (conn) => {
      // passthrough / record: a query group no mock answers goes to the real server on this session's own connection.
      const where = `${conn.target.host}:${conn.target.port}`;
      const upstream: UpstreamOptions | undefined =
        o.onMiss === 'fail'
          ? undefined
          : {
              connect: () => dial(conn.target, DIAL_TIMEOUT_MS),
              where,
              connectionId: `${conn.id}-on-miss`,
              ...(o.onMiss === 'record' ? { record: (mock: PostgresMock) => o.recorded(mock) } : { onForwarded: () => void (c.fellBack++, c.missed++) }),
            };
      await replayPostgres(conn, index, { onMatch: () => void c.replayed++, onMiss: (m) => (c.missed++, o.missed(m.message)), ...(upstream ? { upstream } : {}) });
    },
    counts: c,
  };
}

function redisReplayer(index: RedisIndex, o: ReplayersOptions): ProtocolReplayer {
  const c = counts();
  return {
    kind: 'Redis',
    accepts: (conn) => conn.protocol === 'redis' && (index.size > 0 || o.onMiss === 'fail'),
    serve: async (conn) => {
      const host = `${conn.target.host}:${conn.target.port}`;
      // passthrough / record: a command no mock answers goes to the real server on this session's own connection.
      const upstream = o.onMiss === 'fail' ? undefined : redisFetcher(() => dial(conn.target, DIAL_TIMEOUT_MS));
      try {
        await replayRedis(conn, index, {
          onMatch: () => void c.replayed++,
          onMiss: (m) => (c.missed++, o.missed(m.message)),
          ...(upstream
            ? {
                fetch: upstream.fetch,
                onFetched: (f) => {
                  if (o.onMiss === 'record') {
                    const mock = toRedisMock(f.request, f.reply, f.startedAt, new Date(), host, conn.id);
                    index.add({ name: `recorded ${f.command}`, args: redactArgs(commandArgs(f.request)).args, response: f.reply });
                    o.recorded(mock);
                  } else {
                    c.fellBack++;
                    c.missed++;
                  }
                },
              }
            : {}),
        });
      } finally {
        upstream?.close();
      }
    },
    counts: c,
  };
}

/**
 * Generic mocks and MySQL mocks as the bytes they hold, in file order: MySQL is served by the
 * MySQL-aware byte replayer (Keploy's connection-phase mock as one mock per step). MySQL mocks
 * with messages that cannot be turned back into bytes are left out: a connection needing them misses.
 */
function genericAndMysql(mocks: readonly Mock[], warn?: (message: string) => void): GenericMock[] {
  const out: GenericMock[] = [];
  const unusable: string[] = [];
  for (const m of mocks) {
    if (m.kind === 'Generic') out.push(m);
    else if (m.kind === 'MySQL') {
      const g = mysqlAsGenerics(m);
      if (typeof g !== 'string') out.push(...g);
      else unusable.push(g);
    }
  }
  if (unusable.length > 0) warn?.(`${unusable.length} MySQL mock(s) cannot be replayed and were left out; the first: ${unusable[0]}`);
  return out;
}

function genericReplayer(index: GenericIndex, o: ReplayersOptions): ProtocolReplayer {
  const c = counts();
  // Sets recorded before Redis was modeled hold Generic mocks for it: those answer Redis too.
  const known = (conn: InterceptedConnection) => index.forTarget(conn.target) !== undefined;
  return {
    kind: 'Generic',
    accepts: (conn) => (conn.protocol === 'generic' && (known(conn) || o.onMiss === 'fail')) || (conn.protocol === 'redis' && known(conn)),
    serve: async (conn) => {
      await replayGeneric(conn, index, { ca: o.ca, onMatch: () => void c.replayed++, onMiss: (m) => (c.missed++, o.missed(m.message)) });
    },
    counts: c,
  };
}

function describeMiss(event: ReplayEvent): string {
  const closest = event.mock ? `; closest ${event.mock}: ${(event.differences ?? []).slice(0, 3).join('; ')}` : '';
  return `${event.method} ${event.url}${closest}`;
}
