import http2 from 'node:http2';
import { boundPromise, TimeSlice } from '../../../core/wait.js';
import { DEFAULT_MAX_BODY } from '../http/message.js';
import { RECORDING_KEPT_MAX_BYTES, type KeptBytes } from '../kept.js';
import type { Mock } from '../keploy/types.js';
import { TEXT_SLICE_MS } from './keploy.js';
import { relay, toMock } from './relay.js';
import { serveClient, unservedStreams, upstreamOf, type H2Connection, type H2Dial } from './wire.js';

/**
 * Each stream is one exchange: gRPC calls (content-type application/grpc) become `gRPC` mocks,
 * other requests `Http2` mocks (Keploy's HTTP2Schema). An exchange with more than `maxBodyBytes`
 * either way (HTTP/1's body limit by default) is relayed whole but not recorded, with a warning:
 * the HTTP/2 mocks have no mark for a body left out (HTTP/1's `body_skipped`), so a cut one would
 * replay a wrong answer.
 */

export interface RecordH2Options {
  scheme: 'http' | 'https';
  dial: H2Dial;
  onMock(mock: Mock): void;
  /** An exchange relayed but not recorded, and why. */
  onDropped?(why: string): void;
  warn?(message: string): void;
  /** Most bytes of each direction of one exchange kept for its mock (default DEFAULT_MAX_BODY, 1 MiB). */
  maxBodyBytes?: number;
  /** The recording's budget for streams not finished yet (kept.ts). */
  kept?: KeptBytes;
}

/** Records every stream of the program's HTTP/2 connection against the real server. */
export async function recordH2(conn: H2Connection, o: RecordH2Options): Promise<void> {
  const upstream = upstreamOf(o.dial, o.scheme, conn.target);
  const pending = new Set<Promise<void>>();
  const maxBytes = o.maxBodyBytes ?? DEFAULT_MAX_BODY;
  /** Exchanges over the bound: the first is warned about as it ends, the count once the connection has. */
  let over = 0;
  const slice = new TimeSlice(TEXT_SLICE_MS);
  try {
    const seen = await serveClient(conn, (stream, headers) => {
      const work = upstream
        .get()
        .then((session) => relay(session, stream, headers, { live: stream }, maxBytes, o.kept))
        .then((r) => {
          // Relayed as far as it went, but no whole exchange: not a call a replay could answer (attack 18aq 2).
          if (r.cut) return o.onDropped?.(`HTTP/2 exchanges relayed, not recorded: ${r.cut}`);
          if (!r.over) {
            // Kept as the call ends (its place in the set), its messages' text written after, in slices.
            const { mock, writeTexts } = toMock(r, conn.target);
            o.onMock(mock);
            return writeTexts?.(slice);
          }
          o.onDropped?.(r.over.budget ? `past the ${RECORDING_KEPT_MAX_BYTES} bytes a recording keeps of calls not finished yet` : `over the ${maxBytes}-byte limit per HTTP/2 mock`);
          if (over++ === 0) {
            o.warn?.(
              `HTTP/2 ${String(headers[':method'])} ${String(headers[':path'])} to ${conn.target.host}:${conn.target.port} was relayed but not recorded: ` +
                `${r.over.requestBytes} bytes up and ${r.over.responseBytes} down, over the ${maxBytes}-byte limit per mock`,
            );
          }
        })
        .catch((err: unknown) => {
          o.onDropped?.('HTTP/2 exchanges relayed, not recorded: the real server failed the stream or could not be reached');
          o.warn?.(`HTTP/2 ${String(headers[':path'])}: ${String(err)}`);
          if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
        });
      pending.add(work);
      void work.finally(() => pending.delete(work));
    });
    // Streams the program opened that never reached the recorder (refused past the limit, a header block never ended): each a call not recorded.
    const unserved = unservedStreams(seen);
    for (let i = 0; i < (unserved?.count ?? 0); i++) o.onDropped?.(`HTTP/2 streams the program opened that were never relayed: ${unserved!.why}`);
    await boundPromise(Promise.allSettled([...pending]), { timeoutMs: 2000 });
  } finally {
    upstream.close();
    if (over > 1) o.warn?.(`${over} HTTP/2 exchanges to ${conn.target.host}:${conn.target.port} were over the ${maxBytes}-byte limit per mock: relayed, not recorded`);
  }
}

/** The protocol a recorded HTTP/2 stream counts under in the set's name. */
export const h2Label = (mock: Mock) => (mock.kind === 'gRPC' ? 'gRPC' : 'HTTP2');
