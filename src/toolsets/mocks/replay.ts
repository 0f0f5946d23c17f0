import { dialFor } from './dial.js';
import type { MatcherOptions } from './http/matcher.js';
import type { OnMiss } from './http/replayer.js';
import type { Mock } from './keploy/types.js';
import { PROTOCOLS } from './protocols.js';
import { replayersFor } from './replayers.js';
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
  const misses: string[] = [];
  const recorded: Array<{ at: number; order: number; mock: Mock }> = [];
  let order = 0;
  const keep = (mock: Mock) => void recorded.push({ at: Date.now(), order: order++, mock });
  const replayers = await replayersFor(req.mocks, {
    ca: req.ca,
    onMiss,
    ...(req.ignore ? { ignore: req.ignore } : {}),
    ...(req.upstreamCa ? { upstreamCa: req.upstreamCa } : {}),
    missed: (message) => void misses.push(message),
    recorded: keep,
    warn: req.warn,
  });
  /** Connections no replayer took. */
  const other = { missed: 0, fellBack: 0 };
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
      warn: req.warn,
    });
  };
  const proxy = await startCaptureProxy({
    exclude: (host, port) => isOwnServer(host, port, req.ownPorts),
    onConnection: async (conn) => {
      try {
        const replayer = replayers.find((r) => r.accepts(conn));
        if (replayer) return await replayer.serve(conn);
        if (onMiss !== 'fail') return void (await passOn(conn));
        other.missed++;
        misses.push(`${conn.protocol} connection to ${conn.target.host}:${conn.target.port}: no ${conn.protocol} mocks can answer it`);
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
