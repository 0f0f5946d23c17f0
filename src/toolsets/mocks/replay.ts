import { HttpMatcher, HttpReplayer, isHttpCandidate, replayIntercepted, type ReplayEvent } from './http/index.js';
import { GenericIndex, replayGeneric } from './generic/index.js';
import type { GenericMock, HttpMock, Mock, PostgresMock } from './keploy/types.js';
import { ReplayIndex } from './postgres/catalog.js';
import { replayPostgres } from './postgres/replayer.js';
import { startCaptureProxy } from './proxy/proxy.js';
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
  /** One line per miss: what was asked, and the closest mock. */
  misses: string[];
  run: RunResult;
}

/** Runs the command with every outgoing call answered from the mock set. */
export async function replayMocks(req: ReplayRequest): Promise<ReplayOutcome> {
  const httpMocks = req.mocks.filter((m): m is HttpMock => m.kind === 'Http');
  const misses: string[] = [];
  let otherMissed = 0;
  let otherFellBack = 0;
  let pgReplayed = 0;
  // One index for every connection: a pool's connections share the recorded order.
  const pgIndex = new ReplayIndex(req.mocks.filter((m): m is PostgresMock => m.kind === 'Postgres'));
  const genericIndex = new GenericIndex(req.mocks.filter((m): m is GenericMock => m.kind === 'Generic'));
  let genericReplayed = 0;
  const replayer = new HttpReplayer({
    matcher: new HttpMatcher(httpMocks),
    fallBackOnMiss: req.fallBackOnMiss,
    onEvent: (event) => {
      if (event.kind === 'missed') misses.push(describeMiss(event));
    },
  });
  const proxy = await startCaptureProxy({
    exclude: (host, port) => isOwnServer(host, port, req.ownPorts),
    onConnection: async (conn) => {
      try {
        if (isHttpCandidate(conn)) return await replayIntercepted(conn, replayer, { ca: req.ca });
        if (conn.protocol === 'postgres') {
          await replayPostgres(conn, pgIndex, {
            onMatch: () => void pgReplayed++,
            onMiss: (miss) => {
              otherMissed++;
              misses.push(miss.message);
            },
          });
          return;
        }
        // With fall-back on, a target no Generic mock knows goes to the real destination.
        if (conn.protocol === 'generic' && (genericIndex.forTarget(conn.target) || !req.fallBackOnMiss)) {
          await replayGeneric(conn, genericIndex, {
            onMatch: () => void genericReplayed++,
            onMiss: (miss) => {
              otherMissed++;
              misses.push(miss.message);
            },
          });
          return;
        }
        if (req.fallBackOnMiss) {
          otherFellBack++;
          return void (await tunnel(conn));
        }
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
    return { replayed: c.replayed + pgReplayed + genericReplayed, missed: c.missed + otherMissed + c.fellBack + otherFellBack, fellBack: c.fellBack + otherFellBack };
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
  return { ...counts(), misses, run };
}

function describeMiss(event: ReplayEvent): string {
  const closest = event.mock ? `; closest ${event.mock}: ${(event.differences ?? []).slice(0, 3).join('; ')}` : '';
  return `${event.method} ${event.url}${closest}`;
}
