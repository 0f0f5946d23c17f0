import type { Duplex } from 'node:stream';
import { KeptShare, type KeptBytes } from '../kept.js';
import type { PostgresMock } from '../keploy/types.js';
import { readFrame } from '../proxy/peek.js';
import { decodeUntyped, FrontendParser, untypedLength, type StartupMessage, type TypedMessage, type UntypedMessage } from './frontend.js';
import { RequestGrouper } from './grouping.js';
import { BackendSplitter } from './wire.js';
import { failTogether, pipeBoth } from '../proxy/pipe.js';
import { ENCRYPTION_REFUSED } from './protocol.js';

/**
 * Records one PostgreSQL connection while forwarding it. After the opening handshake the bytes
 * go client <-> server unchanged through `pipe` (backpressure, half-close), and copies of both
 * directions feed the parsers that build the mocks (see grouping.ts). Nothing the parsers think
 * alters or stalls the traffic: a stream that stops parsing just stops producing mocks.
 *
 * TLS is not intercepted. An SSLRequest (or GSSENCRequest) is answered 'N' by the recorder itself
 * and never reaches the server, so the client continues in plaintext: libpq's default
 * sslmode=prefer and node-postgres without `ssl` do; a client that insists on TLS
 * (sslmode=require) gives up, and a server that only accepts TLS (hostssl) refuses the
 * connection. A CancelRequest is forwarded as is (it opens a connection of its own; no mock).
 *
 * Authentication passes through untouched, so any method the server asks for works while
 * recording (trust, MD5, SCRAM-SHA-256 without channel binding, which needs TLS).
 */

/** What the capture proxy hands over (`InterceptedConnection` fits). */
export interface PostgresConnection {
  id?: string;
  target: { host: string; port: number };
  /** The program's side, its first bytes still unread. */
  client: Duplex;
}

export interface RecordPostgresOptions {
  onMock(mock: PostgresMock): void;
  /** A query group relayed whole but not recorded (over the size bound), and why. */
  onDropped?(why: string): void;
  /** Problems that stop or skip recording (the traffic is not affected). */
  onError?(err: unknown): void;
  /** How long the client may take to send its startup packet (default 10 s). */
  startupTimeoutMs?: number;
  maxMockBytes?: number;
  utcOffsetMinutes?: number;
  /** The recording's budget for calls not finished yet (kept.ts). */
  kept?: KeptBytes;
}

export interface RecordPostgresResult {
  mocks: number;
  bytesUp: number;
  bytesDown: number;
  /** Why recording stopped early (a protocol error); the bytes still went through. */
  stoppedRecording?: string;
  /** The first connection failure; both sides were destroyed then. */
  error?: Error;
}

/** Forwards and records one connection; resolves once both sides are closed. */
export async function recordPostgres(conn: PostgresConnection, upstream: Duplex, options: RecordPostgresOptions): Promise<RecordPostgresResult> {
  const result: RecordPostgresResult = { mocks: 0, bytesUp: 0, bytesDown: 0 };
  const { client } = conn;
  // Until the pipes are set up: a failure on either side takes both down (and is not an uncaught 'error').
  const early = failTogether(result, client, upstream);
  let opening: StartupMessage | UntypedMessage;
  try {
    opening = await readOpening(client, options.startupTimeoutMs ?? 10_000);
  } catch (err) {
    early(err as Error);
    return result;
  }
  const grouper = new RequestGrouper({
    onMock: (mock) => {
      result.mocks++;
      options.onMock(mock);
    },
    ...(options.onDropped ? { onDropped: options.onDropped } : {}),
    onError: options.onError,
    connectionId: conn.id,
    host: `${conn.target.host}:${conn.target.port}`,
    maxMockBytes: options.maxMockBytes,
    utcOffsetMinutes: options.utcOffsetMinutes,
    ...(options.kept ? { kept: options.kept } : {}),
  });
  if (opening.type === 'startup') {
    grouper.startup(opening);
    observe(client, upstream, grouper, result, options);
  }
  upstream.write(opening.raw);
  result.bytesUp += opening.raw.length;
  client.off('error', early);
  upstream.off('error', early);
  try {
    return await pipeBoth(client, upstream, result);
  } finally {
    // The last answers' rows may still be read in slices: their mocks are part of this connection's.
    await grouper.settled();
    grouper.close();
  }
}

/**
 * Reads the client's untyped opening messages, answering SSL and GSS encryption requests with
 * 'N' itself, until the StartupMessage (or a CancelRequest). The bytes after it stay unread.
 */
async function readOpening(client: Duplex, timeoutMs: number): Promise<StartupMessage | UntypedMessage> {
  for (;;) {
    const raw = await readFrame(client, (buf) => untypedLength(buf), { timeoutMs, maxBytes: 10_000, what: 'PostgreSQL startup packet' });
    const msg = decodeUntyped(raw);
    if (msg.type === 'startup' || msg.type === 'cancel') return msg;
    client.write(ENCRYPTION_REFUSED);
  }
}

/**
 * Feeds copies of both directions to the grouper; a parse failure ends recording, not the traffic.
 * The bytes of a message not whole yet, either way, are charged to the recording's budget for calls
 * not finished (12 connections each holding 60 MiB of one message grew the server by 760 MB, the
 * call reporting success: attack 18ao d2-2); past it the rest of the connection is relayed, not
 * recorded, and the recording says so.
 */
function observe(client: Duplex, upstream: Duplex, grouper: RequestGrouper, result: RecordPostgresResult, options: RecordPostgresOptions): void {
  let frontend: FrontendParser | undefined = new FrontendParser({ startup: false });
  let backend: BackendSplitter | undefined = new BackendSplitter();
  const shares = { client: new KeptShare(options.kept), server: new KeptShare(options.kept) };
  let stopped = false;
  const stop = (why: string, err?: unknown) => {
    stopped = true;
    result.stoppedRecording = why;
    frontend = backend = undefined;
    shares.client.release();
    shares.server.release();
    if (err !== undefined) options.onError?.(err);
    else options.onDropped?.(why);
  };
  const guard = (what: 'client' | 'server', chunk: Buffer, work: () => number) => {
    if (stopped) return;
    if (!shares[what].take(chunk.length)) {
      return stop(
        `the ${what}'s bytes of a message not whole yet went past the ${options.kept?.limit ?? 0} bytes a recording keeps of calls not finished: the rest of the connection was relayed, not recorded`,
      );
    }
    try {
      shares[what].downTo(work());
    } catch (err) {
      stop(`${what}: ${(err as Error).message}`, err);
    }
  };
  client.on('data', (chunk: Buffer) =>
    guard('client', chunk, () => {
      frontend!.push(chunk).forEach((m) => grouper.frontend(m as TypedMessage));
      return frontend!.buffered;
    }),
  );
  upstream.on('data', (chunk: Buffer) =>
    guard('server', chunk, () => {
      backend!.push(chunk).forEach((raw) => grouper.backend(raw));
      return backend!.buffered;
    }),
  );
  const release = () => {
    shares.client.release();
    shares.server.release();
  };
  client.once('close', release);
  upstream.once('close', release);
}
