import http2 from 'node:http2';
import { boundPromise } from '../../../core/wait.js';
import type { Mock } from '../keploy/types.js';
import { relay, toMock } from './relay.js';
import { serveClient, upstreamOf, type H2Connection, type H2Dial } from './wire.js';

/**
 * Each stream is one exchange: gRPC calls (content-type application/grpc) become `gRPC` mocks,
 * other requests `Http2` mocks (Keploy's HTTP2Schema).
 */

export interface RecordH2Options {
  scheme: 'http' | 'https';
  dial: H2Dial;
  onMock(mock: Mock): void;
  warn?(message: string): void;
}

/** Records every stream of the program's HTTP/2 connection against the real server. */
export async function recordH2(conn: H2Connection, o: RecordH2Options): Promise<void> {
  const upstream = upstreamOf(o.dial, o.scheme, conn.target);
  const pending = new Set<Promise<void>>();
  try {
    await serveClient(conn, (stream, headers) => {
      const work = upstream
        .get()
        .then((session) => relay(session, stream, headers, { live: stream }))
        .then((r) => o.onMock(toMock(r, conn.target)))
        .catch((err: unknown) => {
          o.warn?.(`HTTP/2 ${String(headers[':path'])}: ${String(err)}`);
          if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
        });
      pending.add(work);
      void work.finally(() => pending.delete(work));
    });
    await boundPromise(Promise.allSettled([...pending]), { timeoutMs: 2000 });
  } finally {
    upstream.close();
  }
}

/** The protocol a recorded HTTP/2 stream counts under in the set's name. */
export const h2Label = (mock: Mock) => (mock.kind === 'gRPC' ? 'gRPC' : 'HTTP2');
