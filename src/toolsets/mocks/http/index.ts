import { h2Label, recordH2 } from '../h2/recorder.js';
import type { HttpMock } from '../keploy/types.js';
import { ofKind, type ProtocolRecorder, type ProtocolReplayer, type ReplayerFactory, type ReplayersOptions } from '../protocol.js';
import { isHttpCandidate, recordIntercepted, replayIntercepted, type H2OverTls } from './intercept.js';
import { HttpMatcher, sizeOnlyLine } from './matcher.js';
import { HttpReplayer, type ReplayEvent } from './replayer.js';

/**
 * HTTP(S): HTTP/1.x in clear, and TLS connections (terminated with a debugkit leaf), whose
 * HTTP/1.1 is recorded and replayed here and whose h2 (by ALPN) goes to the HTTP/2 protocol.
 */
export { detect } from './wire.js';

export const recorder: ProtocolRecorder = {
  accepts: (conn) => isHttpCandidate(conn),
  async record(conn, o) {
    const result = await recordIntercepted(conn, {
      ca: o.ca,
      onMock: (mock) => o.onMock(mock, 'HTTP'),
      // ALPN h2: each stream becomes a gRPC mock (gRPC calls) or an Http mock (proto_major 2).
      h2: (c) =>
        recordH2(c, {
          scheme: 'https',
          dial: async () => c.upstream!,
          onMock: (mock) => o.onMock(mock, h2Label(mock)),
          onDropped: o.onDropped,
          ...(o.kept ? { kept: o.kept } : {}),
          warn: o.warn,
        }),
      insecureUpstream: o.insecureUpstream,
      ...(o.upstreamCa ? { upstreamCa: o.upstreamCa } : {}),
      ...(o.kept ? { kept: o.kept } : {}),
    });
    if (result.error) o.warn(`recording ${conn.target.host}:${conn.target.port}: ${result.error.message}`);
    // Its bytes went on through, but no call past that point was recorded: the recording says so (attack 18aq 4).
    if (result.notHttp) o.onDropped(`the rest of an HTTP/1 connection was relayed, not recorded: it stopped parsing as HTTP (${result.notHttp})`);
  },
};

/** TLS connections that negotiated h2 go to the HTTP/2 replayer built before this one. */
export const replayer: ReplayerFactory = (mocks, o, { built }) => httpReplayer(ofKind(mocks, 'Http'), o, built.find((r) => r.overTls)?.overTls);

function httpReplayer(mocks: HttpMock[], o: ReplayersOptions, h2?: (conn: H2OverTls) => Promise<void>): ProtocolReplayer {
  const replayer = new HttpReplayer({
    matcher: new HttpMatcher(mocks, o.ignore ?? {}),
    onMiss: o.onMiss,
    ...(o.upstreamCa ? { upstream: { ca: o.upstreamCa } } : {}),
    keep: (mock) => o.recorded(mock) !== false,
    ...(o.holdMiss ? { holdMiss: o.holdMiss } : {}),
    ...(o.kept ? { kept: o.kept } : {}),
    onEvent: (event) => {
      if (event.kind === 'missed') o.missed(describeMiss(event));
      else if (event.kind === 'fellBack') o.fellBack?.(describeMiss(event));
      else if (event.kind === 'replayed' && event.mock) {
        o.served?.(event.mock);
        if (event.how === 'size') o.unverified?.(sizeOnlyLine(`${event.method} ${event.url}`, event.mock, event.bodySize ?? 0));
      }
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

function describeMiss(event: ReplayEvent): string {
  const closest = event.mock ? `; closest ${event.mock}: ${(event.differences ?? []).slice(0, 3).join('; ')}` : '';
  if (event.kind === 'fellBack') {
    // Passthrough: what the real service did, and why the set did not answer.
    const failed = event.error ? ` (which failed: ${event.error})` : '';
    return `${event.method} ${event.url}: fell back to the real service${failed}${event.reason ? `: ${event.mock}: ${event.reason}` : closest}`;
  }
  // A request that could not be answered as recorded (or at all) says why; a miss names the closest mock.
  if (event.error) return `${event.method} ${event.url}: ${event.mock ? `${event.mock}: ` : ''}${event.error}`;
  return `${event.method} ${event.url}${closest}`;
}
