import { dial, DIAL_TIMEOUT_MS } from '../dial.js';
import type { H2OverTls } from '../http/intercept.js';
import { HttpMatcher } from '../http/matcher.js';
import type { HttpMock, Mock } from '../keploy/types.js';
import { counts, ofKind, type ProtocolRecorder, type ProtocolReplayer, type ReplayerFactory, type ReplayersOptions } from '../protocol.js';
import { connectUpstream } from '../tls/terminate.js';
import { GrpcIndex } from './matcher.js';
import { http2AsHttp } from './keploy.js';
import { h2Label, recordH2 } from './recorder.js';
import { replayH2 } from './replayer.js';
import type { H2Dial } from './wire.js';

/**
 * HTTP/2 and gRPC: h2c connections (prior knowledge), and TLS ones that negotiated h2 (handed
 * over by the HTTP protocol). Each stream is one exchange: a `gRPC` mock or an `Http2` one.
 */
export { detect } from './wire.js';

export const recorder: ProtocolRecorder = {
  accepts: (conn) => conn.protocol === 'h2',
  record: (conn, o) =>
    recordH2(conn, { scheme: 'http', dial: () => o.dial(conn), onMock: (mock) => o.onMock(mock, h2Label(mock)), onDropped: o.onDropped, ...(o.kept ? { kept: o.kept } : {}), warn: o.warn }),
};

export const replayer: ReplayerFactory = async (mocks, o, { slice }) => h2Replayer(mocks, await GrpcIndex.build(mocks, slice, o.warn), o);

/**
 * gRPC calls are answered from the `gRPC` mocks, other requests from the `Http2` ones (and `Http`
 * ones). TLS connections come through `overTls`, offered only when the set holds HTTP/2 exchanges.
 */
function h2Replayer(mocks: readonly Mock[], grpc: GrpcIndex, o: ReplayersOptions): ProtocolReplayer {
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
    ...(o.served ? { served: o.served } : {}),
    ...(o.unverified ? { unverified: o.unverified } : {}),
    ...(o.holdMiss ? { holdMiss: o.holdMiss } : {}),
    ...(o.kept ? { kept: o.kept } : {}),
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
