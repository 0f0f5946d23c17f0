import type { GenericMock } from '../keploy/types.js';
import { previewBytes } from './format.js';
import { GenericIndex, type Closest, type GenericEntry } from './matcher.js';
import type { GenericConnection } from './recorder.js';

/**
 * Serves one connection of an unparsed protocol from recorded Generic mocks, with no server
 * behind it (matching rules in matcher.ts):
 * - on connect, a recorded greeting (an exchange with no request) is sent straight away;
 * - the client's bytes are collected until they begin with a recorded request, whose recorded
 *   response is then written (several pipelined requests are answered in turn); bytes that may
 *   still grow into a longer recorded request are held `settleMs` (when a shorter one already
 *   matches) or `partialWaitMs` (when none does) for the rest;
 * - an answer recorded with `serverClosed` ends the connection after it, as the server did;
 * - the client's EOF: what it sent is answered, then the connection is ended.
 * A miss (bytes no recorded request begins, or an exchange too large to have been kept) closes
 * the connection, as nothing in an unknown protocol can carry an error, and is reported with the
 * target, the bytes received and the closest recorded request.
 *
 * Pass a `GenericIndex` instead of the mocks to share replay order across connections.
 */

export interface GenericReplayMatch {
  target: string;
  mock: string;
  /** A greeting sent on connect rather than an answer to a request. */
  greeting: boolean;
  /** The mock had answered before (the request repeated more often than it was recorded). */
  reused: boolean;
}

export interface GenericReplayMiss {
  target: string;
  /** How many bytes the client had sent since the last answer. */
  bytes: number;
  /** Their start, as text or hex. */
  preview: string;
  closest?: { name: string; samePrefix: number };
  /** One line for the report: what was received and the closest mock. */
  message: string;
}

export interface ReplayGenericOptions {
  onMatch?(match: GenericReplayMatch): void;
  onMiss?(miss: GenericReplayMiss): void;
  /** Wait for more bytes when a request matched but a longer recorded one still could (default 30 ms). */
  settleMs?: number;
  /** Wait for the rest of a request when the bytes so far only begin a recorded one (default 1000 ms). */
  partialWaitMs?: number;
}

export interface ReplayGenericResult {
  matched: number;
  missed: number;
  error?: Error;
}

/** Replays one connection; resolves once it is closed. */
export function replayGeneric(
  conn: GenericConnection,
  mocks: readonly GenericMock[] | GenericIndex,
  options: ReplayGenericOptions = {},
): Promise<ReplayGenericResult> {
  const index = mocks instanceof GenericIndex ? mocks : new GenericIndex(mocks);
  const { client } = conn;
  const target = `${conn.target.host}:${conn.target.port}`;
  const view = index.forTarget(conn.target);
  const result: ReplayGenericResult = { matched: 0, missed: 0 };
  let pending: Buffer = Buffer.alloc(0);
  let closing = false;
  let timer: NodeJS.Timeout | undefined;

  const close = () => {
    if (closing) return;
    closing = true;
    clearTimeout(timer);
    client.end();
    // Nothing more is read: once our side is flushed, the connection goes.
    client.once('finish', () => client.destroy());
  };
  const send = (entry: GenericEntry, greeting: boolean, reused: boolean) => {
    if (entry.truncated) {
      const { requestBytes, responseBytes } = entry.truncated;
      return miss(`mock ${entry.name} matched, but its exchange (${requestBytes} + ${responseBytes} bytes) went over the recording limit and was not kept`);
    }
    if (!greeting) pending = pending.subarray(entry.request.length);
    result.matched++;
    options.onMatch?.({ target, mock: entry.name, greeting, reused });
    if (entry.response.length > 0 && !client.write(entry.response)) {
      // Answers only follow requests: holding the requests back is the backpressure.
      client.pause();
      client.once('drain', () => client.resume());
    }
    if (entry.serverClosed) close();
  };
  const miss = (why?: string, closest?: Closest) => {
    result.missed++;
    const preview = pending.length > 0 ? `${pending.length} bytes ${previewBytes(pending)}` : 'no bytes';
    const near = closest ? `; closest ${closest.name} (same first ${closest.samePrefix} bytes): ${previewBytes(closest.request)}` : '';
    const message = why
      ? `generic connection to ${target}: ${why}`
      : view
        ? `generic connection to ${target}: no recorded request matches ${preview}${near}`
        : `generic connection to ${target}: no Generic mocks were recorded for it${index.hosts.length > 0 ? ` (recorded: ${index.hosts.join(', ')})` : ''}; received ${preview}`;
    options.onMiss?.({
      target,
      bytes: pending.length,
      preview: previewBytes(pending),
      ...(closest ? { closest: { name: closest.name, samePrefix: closest.samePrefix } } : {}),
      message,
    });
    pending = Buffer.alloc(0);
    close();
  };

  /** Answers every complete request at the start of `pending`. */
  const serve = (final: boolean) => {
    clearTimeout(timer);
    while (!closing && pending.length > 0) {
      if (!view) return miss();
      const m = view.match(pending, final);
      if (m.kind === 'partial') {
        const wait = m.complete ? (options.settleMs ?? 30) : (options.partialWaitMs ?? 1000);
        timer = setTimeout(() => serve(true), wait);
        return;
      }
      if (m.kind === 'miss') return miss(undefined, m.closest);
      send(m.entry, false, m.reused);
    }
    if (final && client.readableEnded) close();
  };

  client.on('data', (chunk: Buffer) => {
    if (closing) return;
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    serve(false);
  });
  client.on('end', () => serve(true));
  return new Promise((resolve) => {
    client.on('error', (err: Error) => {
      result.error ??= err;
      client.destroy();
    });
    client.once('close', () => {
      clearTimeout(timer);
      resolve(result);
    });
    // No mocks for this target: nothing could ever answer it.
    if (!view) miss();
    const greeting = view?.greeting();
    if (greeting) send(greeting.entry, true, greeting.reused);
    client.resume();
  });
}
