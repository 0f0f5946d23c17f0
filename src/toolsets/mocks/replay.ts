import { connectTcp, HttpMatcher, HttpReplayer, isHttpCandidate, replayIntercepted, type ReplayEvent } from './http/index.js';
import type { MatcherOptions } from './http/matcher.js';
import type { OnMiss } from './http/replayer.js';
import { GenericIndex, recordGeneric, replayGeneric } from './generic/index.js';
import { recordPostgres } from './postgres/recorder.js';
import { RedisIndex, recordRedis, replayRedis } from './redis/index.js';
import type { GenericMock, HttpMock, Mock, PostgresMock, RedisMock } from './keploy/types.js';
import { ReplayIndex } from './postgres/catalog.js';
import { replayPostgres } from './postgres/replayer.js';
import { startCaptureProxy, type InterceptedConnection } from './proxy/proxy.js';
import { tunnel } from './proxy/tunnel.js';
import { runUnderProxy, type RunResult } from './runner.js';
import { isOwnServer } from './session.js';
import type { DebugkitCa } from './tls/index.js';

export interface ReplayRequest {
  command: string;
  mocks: Mock[];
  cwd: string;
  ca: DebugkitCa;
  caEnv: Record<string, string>;
  fallBackOnMiss: boolean;
  /** What a miss does (default: `passthrough` with fallBackOnMiss, else `fail`). */
  onMiss?: OnMiss;
  /** Fields that never decide an HTTP match. */
  ignore?: Pick<MatcherOptions, 'ignoreHeaders' | 'ignoreQuery' | 'ignoreJsonPaths'>;
  /** PEM CAs to trust for real servers reached on a miss (else the system's). */
  upstreamCa?: string;
  timeoutMs: number;
  ownPorts: number[];
  signal?: AbortSignal;
  onTick?: (elapsedMs: number, replayed: number, missed: number) => void;
  warn: (message: string) => void;
}

export interface ReplayOutcome {
  replayed: number;
  missed: number;
  fellBack: number;
  /** Exchanges captured on a miss (`onMiss: record`), in the order they happened. */
  recorded: Mock[];
  /** One line per miss: what was asked, and the closest mock. */
  misses: string[];
  run: RunResult;
}

/** Runs the command with every outgoing call answered from the mock set. */
export async function replayMocks(req: ReplayRequest): Promise<ReplayOutcome> {
  const onMiss: OnMiss = req.onMiss ?? (req.fallBackOnMiss ? 'passthrough' : 'fail');
  const httpMocks = req.mocks.filter((m): m is HttpMock => m.kind === 'Http');
  const misses: string[] = [];
  const recorded: Array<{ at: number; order: number; mock: Mock }> = [];
  let order = 0;
  const keep = (mock: Mock) => void recorded.push({ at: Date.now(), order: order++, mock });
  let otherMissed = 0;
  let otherFellBack = 0;
  let pgReplayed = 0;
  // One index for every connection: a pool's connections share the recorded order.
  const pgMocks = req.mocks.filter((m): m is PostgresMock => m.kind === 'Postgres');
  const pgIndex = new ReplayIndex(pgMocks);
  const genericIndex = new GenericIndex(req.mocks.filter((m): m is GenericMock => m.kind === 'Generic'));
  let genericReplayed = 0;
  const redisIndex = new RedisIndex(req.mocks.filter((m): m is RedisMock => m.kind === 'Redis'));
  let redisReplayed = 0;
  const replayer = new HttpReplayer({
    matcher: new HttpMatcher(httpMocks, req.ignore ?? {}),
    onMiss,
    ...(req.upstreamCa ? { upstream: { ca: req.upstreamCa } } : {}),
    onEvent: (event) => {
      if (event.kind === 'missed') misses.push(describeMiss(event));
      if (event.kind === 'recorded' && event.recorded) keep(event.recorded);
    },
  });
  /** A connection no recorded mock can answer: to the real destination, captured when recording. */
  const passOn = async (conn: InterceptedConnection) => {
    otherFellBack++;
    if (onMiss !== 'record' || !['postgres', 'redis', 'generic'].includes(conn.protocol)) return void (await tunnel(conn));
    const upstream = await connectTcp(conn.target, 10_000).catch((err: unknown) => {
      conn.client.destroy();
      throw err;
    });
    otherFellBack--;
    const result =
      conn.protocol === 'postgres'
        ? await recordPostgres(conn, upstream, { onMock: keep })
        : conn.protocol === 'redis'
          ? await recordRedis(conn, upstream, { onMock: keep })
          : await recordGeneric(conn, upstream, { onMock: keep });
    if (result.error) req.warn(`recording ${conn.target.host}:${conn.target.port}: ${result.error.message}`);
  };
  const proxy = await startCaptureProxy({
    exclude: (host, port) => isOwnServer(host, port, req.ownPorts),
    onConnection: async (conn) => {
      try {
        if (isHttpCandidate(conn)) return await replayIntercepted(conn, replayer, { ca: req.ca });
        // With a miss mode other than fail, PostgreSQL goes to the real server when the set has no PostgreSQL mocks.
        if (conn.protocol === 'postgres' && (pgMocks.length > 0 || onMiss === 'fail')) {
          await replayPostgres(conn, pgIndex, {
            onMatch: () => void pgReplayed++,
            onMiss: (miss) => {
              otherMissed++;
              misses.push(miss.message);
            },
          });
          return;
        }
        // With a miss mode other than fail, Redis goes to the real server when the set has no Redis mocks.
        // Sets recorded before Redis was modeled hold Generic mocks for it: those answer then.
        if (conn.protocol === 'redis' && redisIndex.size === 0 && genericIndex.forTarget(conn.target)) conn.protocol = 'generic';
        if (conn.protocol === 'redis' && (redisIndex.size > 0 || onMiss === 'fail')) {
          await replayRedis(conn, redisIndex, {
            onMatch: () => void redisReplayed++,
            onMiss: (miss) => {
              otherMissed++;
              misses.push(miss.message);
            },
          });
          return;
        }
        // A target no Generic mock knows goes to the real destination unless misses fail.
        if (conn.protocol === 'generic' && (genericIndex.forTarget(conn.target) || onMiss === 'fail')) {
          await replayGeneric(conn, genericIndex, {
            onMatch: () => void genericReplayed++,
            onMiss: (miss) => {
              otherMissed++;
              misses.push(miss.message);
            },
          });
          return;
        }
        if (onMiss !== 'fail') return void (await passOn(conn));
        otherMissed++;
        misses.push(`${conn.protocol} connection to ${conn.target.host}:${conn.target.port}: no ${conn.protocol} mocks can answer it`);
        conn.client.destroy();
      } catch (err) {
        req.warn(`replaying ${conn.target.host}:${conn.target.port}: ${String(err)}`);
      }
    },
  });
  const counts = () => {
    const c = replayer.counters;
    return { replayed: c.replayed + pgReplayed + genericReplayed + redisReplayed, missed: c.missed + otherMissed + c.fellBack + otherFellBack, fellBack: c.fellBack + otherFellBack };
  };
  let run: RunResult;
  try {
    run = await runUnderProxy({
      command: req.command,
      cwd: req.cwd,
      socksPort: proxy.socksPort,
      httpPort: proxy.httpPort,
      env: req.caEnv,
      timeoutMs: req.timeoutMs,
      signal: req.signal,
      onTick: (ms) => {
        const c = counts();
        req.onTick?.(ms, c.replayed, c.missed);
      },
    });
  } finally {
    await proxy.close();
  }
  const captured = recorded.sort((a, b) => a.at - b.at || a.order - b.order).map((r) => r.mock);
  return { ...counts(), recorded: captured, misses, run };
}

function describeMiss(event: ReplayEvent): string {
  const closest = event.mock ? `; closest ${event.mock}: ${(event.differences ?? []).slice(0, 3).join('; ')}` : '';
  return `${event.method} ${event.url}${closest}`;
}
