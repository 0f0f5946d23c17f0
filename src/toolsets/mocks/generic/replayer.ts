import type { Duplex } from 'node:stream';
import type { GenericMock } from '../keploy/types.js';
import { ByteQueue } from '../../../core/byte-queue.js';
import { TimeSlice } from '../../../core/wait.js';
import { KeptShare, type KeptBytes } from '../kept.js';
import { previewBytes } from './keploy.js';
import { GenericIndex, type Closest, type GenericEntry } from './matcher.js';
import { isPublicKeyRequest, mysqlClientFlags, mysqlCommand, mysqlError, mysqlFramingFor, greetingWithoutTls, shiftSequenceIds, splitSslRequest, withoutQueryAttributes } from '../mysql/wire.js';
import type { GenericConnection } from './recorder.js';
import { acceptTls } from '../tls/terminate.js';
import type { DebugkitCa } from '../tls/ca.js';

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
  /**
   * MySQL over TLS: a client's SSLRequest, when the recorded connection phase had one, upgrades the
   * connection to TLS with a leaf for the target from this CA; the plaintext inside is replayed as
   * recorded. Without it such a client misses.
   */
  ca?: DebugkitCa;
  /** The program's TLS handshake (MySQL) must end within this (default 10 s). */
  handshakeTimeoutMs?: number;
  /**
   * The replay's budget (kept.ts) for the client's bytes held unanswered (a request not whole yet):
   * past it the connection misses and is closed. 48 connections each holding a 16 MiB MySQL packet
   * never finished held 768 MiB outside any budget (attack 18ak t1-2).
   */
  kept?: KeptBytes;
}

export interface ReplayGenericResult {
  matched: number;
  missed: number;
  error?: Error;
}

/** Replays one connection; resolves once it is closed. */
export function replayGeneric(conn: GenericConnection, mocks: readonly GenericMock[] | GenericIndex, options: ReplayGenericOptions = {}): Promise<ReplayGenericResult> {
  const index = mocks instanceof GenericIndex ? mocks : new GenericIndex(mocks);
  /** The program's connection: `raw` until a MySQL SSLRequest upgrades it to TLS. */
  const raw = conn.client;
  let client: Duplex = raw;
  /** MySQL: the connection went to TLS (or is on its way): no second SSLRequest. */
  let upgraded = false;
  /**
   * MySQL: a client logging in in clear to a connection phase recorded over TLS only numbers its
   * authentication packets one lower (it sends no SSLRequest): they are matched one higher, and
   * the recorded answers sent one lower.
   */
  let authShift = 0;
  const target = `${conn.target.host}:${conn.target.port}`;
  const view = index.forTarget(conn.target);
  const result: ReplayGenericResult = { matched: 0, missed: 0 };
  /** The client's bytes not answered yet: appended without copying what is held (a packet in many reads was quadratic: t1-2). */
  const held = new ByteQueue();
  /** What `held` holds, charged to the replay's budget (given back as it is consumed). */
  const share = new KeptShare(options.kept);
  const settle = () => share.downTo(held.length);
  /** MySQL: the packet at the start of `held` was read without its query-attributes prefix already (never twice: t1-3). */
  let attributesRead = false;
  let closing = false;
  let timer: NodeJS.Timeout | undefined;
  /** Which wait for the next share of the loop (a long pipelined burst's next slice) still counts: a later serve() makes earlier ones moot. */
  let sliceWait = 0;
  /** Why reading from the client is stopped (a write not yet drained; a burst being answered): it reads again when none is left. */
  const holds = new Set<'drain' | 'burst'>();
  const hold = (why: 'drain' | 'burst') => {
    if (holds.size === 0) client.pause();
    holds.add(why);
  };
  const release = (why: 'drain' | 'burst') => {
    if (holds.delete(why) && holds.size === 0) client.resume();
  };
  /** MySQL: the connecting client's capability flags, once its HandshakeResponse41 came. */
  let mysqlFlags: number | undefined;

  const close = () => {
    if (closing) return;
    closing = true;
    clearTimeout(timer);
    sliceWait++;
    client.end();
    // Nothing more is read: once our side is flushed, the connection goes.
    client.once('finish', () => client.destroy());
  };
  /** Writes an answer; past what the client's socket takes, no more requests are read until it drains (answers only follow requests: holding the requests back is the backpressure). */
  const write = (bytes: Buffer) => {
    if (!client.write(bytes) && !holds.has('drain')) {
      hold('drain');
      client.once('drain', () => release('drain'));
    }
  };
  const send = (entry: GenericEntry, greeting: boolean, reused: boolean, consumed = entry.request.length, shift = 0) => {
    if (entry.truncated) {
      const { requestBytes, responseBytes } = entry.truncated;
      return miss(`mock ${entry.name} matched, but its exchange (${requestBytes} + ${responseBytes} bytes) went over the recording limit and was not kept`);
    }
    if (!greeting) consume(consumed);
    result.matched++;
    options.onMatch?.({ target, mock: entry.name, greeting, reused });
    const response = !greeting
      ? shiftSequenceIds(view?.mysql && mysqlFlags !== undefined ? mysqlFramingFor(entry.request, entry.response, mysqlFlags) : entry.response, -shift)
      : // A greeting offering TLS (CLIENT_SSL) when no connection phase was recorded over TLS: sent
        // without it, so a client that would use TLS if offered (PREFERRED) stays in clear, as recorded.
        view?.mysql && !view.mysqlLogins.tls
        ? greetingWithoutTls(entry.response)
        : entry.response;
    if (response.length > 0) write(response);
    if (entry.serverClosed) close();
  };
  const consume = (n: number) => {
    held.consume(n);
    attributesRead = false;
    settle();
  };
  const miss = (why?: string, closest?: Closest) => {
    result.missed++;
    const pending = held.view();
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
    consume(held.length);
    close();
  };

  /** A missed MySQL command packet: answered with an ERR packet, reported, and dropped. False when `pending` holds no whole packet. */
  const mysqlMiss = (closest?: Closest): boolean => {
    if (held.length < 4) return false;
    const pending = held.view();
    const length = pending.readUIntLE(0, 3) + 4;
    if (pending.length < length) return false;
    const packet = pending.subarray(0, length);
    consume(length);
    // COM_QUIT that was not recorded (Keploy keeps none): the client is leaving; the server would close.
    if (length === 5 && packet[3] === 0 && packet[4] === 0x01) {
      close();
      return true;
    }
    result.missed++;
    const command = mysqlCommand(packet);
    const near = closest ? `; closest ${closest.name}: ${mysqlCommand(closest.request)}` : '';
    // After the connection phase a command starts at sequence id 0 (attack f2-3).
    const order =
      packet[3] !== 0 && view?.mysqlConnected ? ` sent with sequence id ${packet[3]} after the connection phase (a command starts at 0; a MySQL server answers "Got packets out of order")` : '';
    const message = `mysql connection to ${target}: no recorded mock for ${command}${order}${near}`;
    options.onMiss?.({ target, bytes: packet.length, preview: previewBytes(packet), ...(closest ? { closest: { name: closest.name, samePrefix: closest.samePrefix } } : {}), message });
    write(mysqlError(packet[3]! + 1, `debugkit: ${message}`));
    return true;
  };

  /**
   * MySQL: the client's first packet after the greeting (sequence 1) when it is whole. An SSLRequest
   * is answered by going to TLS, when a connection phase was recorded over TLS; a client asking TLS
   * of a recording without, or logging in in clear to a recording made over TLS only, misses.
   * True when the packet was dealt with here (or the connection closed).
   */
  const mysqlLogin = (): boolean => {
    const pending = held.view();
    if (!view || upgraded || pending.length < 4 || pending[3] !== 1) return false;
    const split = splitSslRequest(pending);
    if (split.kind === 'more') return false;
    if (pending.length < pending.readUIntLE(0, 3) + 4 && split.kind === 'plain') return false;
    const logins = view.mysqlLogins;
    if (split.kind === 'plain') {
      if (logins.tls && !logins.clear) authShift = 1;
      return false;
    }
    if (!logins.tls) {
      miss(
        `the client asked for TLS (an SSLRequest), but no connection phase of ${target} was recorded over TLS (the greeting was sent without CLIENT_SSL): let the client connect in clear (ssl PREFERRED or off), or record again with TLS`,
      );
      return true;
    }
    if (!options.ca) {
      miss('the client asked for TLS (an SSLRequest), and this replay has no CA to answer it');
      return true;
    }
    const m = view.match(split.request, true);
    if (m.kind !== 'match') return false;
    upgraded = true;
    // The SSLRequest holds the capability flags the HandshakeResponse41 inside TLS will repeat.
    mysqlFlags ??= split.request.readUInt32LE(4);
    // `send` drops the SSLRequest from `pending`: what is left (the ClientHello's start, when it came in the same chunk) is TLS's.
    send(m.entry, false, m.reused, split.request.length);
    if (closing) return true;
    upgrade(options.ca);
    return true;
  };

  /** Goes on inside TLS: bytes already read after the SSLRequest (the ClientHello's start) are its first. */
  const upgrade = (ca: DebugkitCa) => {
    // Reading goes to the TLS socket from now on: nothing here may resume the raw one.
    holds.clear();
    raw.off('data', onData);
    raw.off('end', onEnd);
    raw.pause();
    if (held.length > 0) raw.unshift(Buffer.from(held.view()));
    consume(held.length);
    acceptTls(raw, ca, conn.target.host, options.handshakeTimeoutMs ?? 10_000).then(
      (secure) => {
        if (closing) return void secure.destroy();
        client = secure;
        secure.on('data', onData);
        secure.on('end', onEnd);
        secure.on('error', onError);
        secure.once('close', () => raw.destroy());
      },
      (err: Error) => {
        if (closing) return;
        miss(`the client asked for TLS (an SSLRequest) and ${err.message} (the program must trust debugkit's CA)`);
        raw.destroy();
      },
    );
  };

  /**
   * Answers every complete request at the start of `pending`, for SLICE_MS at a time: a long
   * pipelined burst goes on in the next turn of the event loop, reading paused meanwhile.
   */
  const serve = (final: boolean) => {
    clearTimeout(timer);
    sliceWait++;
    if (serveSlice(final)) hold('burst');
    else release('burst');
  };
  /** True when the slice ran out with requests left (the next one queued). */
  const serveSlice = (final: boolean): boolean => {
    const slice = new TimeSlice(SLICE_MS);
    while (!closing && held.length > 0) {
      if (slice.over()) {
        const wait = ++sliceWait;
        void slice.next().then(() => {
          if (wait === sliceWait && !closing) serve(final);
        });
        return true;
      }
      if (!view) {
        miss();
        return false;
      }
      if (view.mysql && mysqlLogin()) return false;
      if (view.mysql) {
        mysqlFlags ??= mysqlClientFlags(held.view());
        // Only for a client that asked for query attributes, and once per packet: a query whose text
        // begins with 00 01 is that text (attack 18ak t1-3).
        if (!attributesRead && mysqlFlags !== undefined && (mysqlFlags & CLIENT_QUERY_ATTRIBUTES) !== 0) {
          const stripped = withoutQueryAttributes(held.view());
          if (stripped.length !== held.length) {
            held.clear();
            held.push(stripped);
            attributesRead = true;
            settle();
          }
        }
      }
      const pending = held.view();
      const shifted = authShift !== 0 && view.mysql && pending.length >= 4 && pending[3] !== 0;
      let asked = pending;
      if (shifted) {
        asked = Buffer.from(pending);
        asked[3] = (asked[3]! + authShift) & 0xff;
      }
      const m = view.match(asked, final);
      if (shifted && m.kind === 'match' && isPublicKeyRequest(pending) && !isPublicKeyRequest(m.entry.request)) {
        miss(
          `the client logs in in clear and asks for the server's RSA key (caching_sha2_password's full authentication), but the connection phase of ${target} was recorded over TLS, where the password went inside TLS and no key was recorded: let the client use TLS (trusting debugkit's CA)`,
        );
        return false;
      }
      if (m.kind === 'partial') {
        const wait = m.complete ? (options.settleMs ?? 30) : (options.partialWaitMs ?? 1000);
        timer = setTimeout(() => serve(true), wait);
        return false;
      }
      if (m.kind === 'miss') {
        // MySQL: a packet not whole yet is waited for (it came in several reads), as a partial request is.
        if (view.mysql && !final && (pending.length < 4 || pending.length < pending.readUIntLE(0, 3) + 4)) {
          timer = setTimeout(() => serve(true), options.partialWaitMs ?? 1000);
          return false;
        }
        // MySQL: a command no mock answers gets an ERR packet naming the closest; the connection stays usable.
        if (view.mysql && mysqlMiss(m.closest)) continue;
        miss(undefined, m.closest);
        return false;
      }
      send(m.entry, false, m.reused, m.consumed, shifted && m.consumed !== undefined ? authShift : 0);
    }
    if (final && client.readableEnded) close();
    return false;
  };

  const onData = (chunk: Buffer) => {
    if (closing) return;
    if (!share.take(chunk.length)) {
      return miss(
        `the client's unanswered bytes (${held.length + chunk.length}) went over what a replay holds of requests not whole yet (${options.kept?.limit ?? 0} bytes per replay, shared by its connections, under the server's budget): the connection was closed`,
      );
    }
    held.push(chunk);
    serve(false);
  };
  const onEnd = () => serve(true);
  const onError = (err: Error) => {
    result.error ??= err;
    client.destroy();
    raw.destroy();
  };
  client.on('data', onData);
  client.on('end', onEnd);
  return new Promise((resolve) => {
    raw.on('error', onError);
    raw.once('close', () => {
      clearTimeout(timer);
      // A request cut off by the connection's close was asked and never answered: a miss (attack 18ak t1-2, as r1-2).
      if (!closing && held.length > 0) miss('the connection closed before its request was whole or answered');
      share.release();
      resolve(result);
    });
    // No mocks for this target: nothing could ever answer it.
    if (!view) miss();
    const greeting = view?.greeting();
    if (greeting) send(greeting.entry, true, greeting.reused);
    // Reading starts unless the greeting's write is held for the client to drain.
    if (holds.size === 0) client.resume();
  });
}

/** Replay answers a burst for about this long at a time before letting the event loop run others' work. */
const SLICE_MS = 10;

/** MySQL's CLIENT_QUERY_ATTRIBUTES capability flag: a COM_QUERY starts with its attributes. */
const CLIENT_QUERY_ATTRIBUTES = 0x08000000;
