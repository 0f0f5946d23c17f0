import type { GenericMock } from '../keploy/types.js';
import { previewBytes } from './format.js';
import { GenericIndex, type Closest, type GenericEntry } from './matcher.js';
import { mysqlClientFlags, mysqlFramingFor, withoutQueryAttributes } from './mysql.js';
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
  /** MySQL: the connecting client's capability flags, once its HandshakeResponse41 came. */
  let mysqlFlags: number | undefined;

  const close = () => {
    if (closing) return;
    closing = true;
    clearTimeout(timer);
    client.end();
    // Nothing more is read: once our side is flushed, the connection goes.
    client.once('finish', () => client.destroy());
  };
  const send = (entry: GenericEntry, greeting: boolean, reused: boolean, consumed = entry.request.length) => {
    if (entry.truncated) {
      const { requestBytes, responseBytes } = entry.truncated;
      return miss(`mock ${entry.name} matched, but its exchange (${requestBytes} + ${responseBytes} bytes) went over the recording limit and was not kept`);
    }
    if (!greeting) pending = pending.subarray(consumed);
    result.matched++;
    options.onMatch?.({ target, mock: entry.name, greeting, reused });
    const response = !greeting && view?.mysql && mysqlFlags !== undefined ? mysqlFramingFor(entry.request, entry.response, mysqlFlags) : entry.response;
    if (response.length > 0 && !client.write(response)) {
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

  /** A missed MySQL command packet: answered with an ERR packet, reported, and dropped. False when `pending` holds no whole packet. */
  const mysqlMiss = (closest?: Closest): boolean => {
    if (pending.length < 4) return false;
    const length = pending.readUIntLE(0, 3) + 4;
    if (pending.length < length) return false;
    const packet = pending.subarray(0, length);
    pending = pending.subarray(length);
    // COM_QUIT that was not recorded (Keploy keeps none): the client is leaving; the server would close.
    if (length === 5 && packet[3] === 0 && packet[4] === 0x01) {
      close();
      return true;
    }
    result.missed++;
    const command = mysqlCommand(packet);
    const near = closest ? `; closest ${closest.name}: ${mysqlCommand(closest.request)}` : '';
    const message = `mysql connection to ${target}: no recorded mock for ${command}${near}`;
    options.onMiss?.({ target, bytes: packet.length, preview: previewBytes(packet), ...(closest ? { closest: { name: closest.name, samePrefix: closest.samePrefix } } : {}), message });
    client.write(mysqlError(packet[3]! + 1, `debugkit: ${message}`));
    return true;
  };

  /** Answers every complete request at the start of `pending`. */
  const serve = (final: boolean) => {
    clearTimeout(timer);
    while (!closing && pending.length > 0) {
      if (!view) return miss();
      if (view.mysql) {
        mysqlFlags ??= mysqlClientFlags(pending);
        pending = withoutQueryAttributes(pending);
      }
      const m = view.match(pending, final);
      if (m.kind === 'partial') {
        const wait = m.complete ? (options.settleMs ?? 30) : (options.partialWaitMs ?? 1000);
        timer = setTimeout(() => serve(true), wait);
        return;
      }
      if (m.kind === 'miss') {
        // MySQL: a command no mock answers gets an ERR packet naming the closest; the connection stays usable.
        if (view.mysql && mysqlMiss(m.closest)) continue;
        return miss(undefined, m.closest);
      }
      send(m.entry, false, m.reused, m.consumed);
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

/** A MySQL command packet for messages: `COM_QUERY "SELECT ..."`, else its command byte. */
export function mysqlCommand(packet: Buffer): string {
  const code = packet[4];
  const body = packet.subarray(5);
  const text = (b: Buffer) => JSON.stringify(b.toString('utf8').slice(0, 200));
  if (code === 0x03) return `COM_QUERY ${text(body)}`;
  if (code === 0x16) return `COM_STMT_PREPARE ${text(body)}`;
  if (code === 0x17) return `COM_STMT_EXECUTE (statement ${body.length >= 4 ? body.readUInt32LE(0) : '?'}, ${body.length} bytes)`;
  if (code === 0x02) return `COM_INIT_DB ${text(body)}`;
  return `command 0x${(code ?? 0).toString(16).padStart(2, '0')} (${packet.length} bytes)`;
}

/** An ERR packet (error 1105, SQLSTATE HY000) with sequence id `seq`. */
export function mysqlError(seq: number, message: string): Buffer {
  const text = Buffer.from(message.slice(0, 1000), 'utf8');
  const payload = Buffer.concat([Buffer.from([0xff, 0x51, 0x04]), Buffer.from('#HY000', 'latin1'), text]);
  const header = Buffer.alloc(4);
  header.writeUIntLE(payload.length, 0, 3);
  header[3] = seq & 0xff;
  return Buffer.concat([header, payload]);
}
