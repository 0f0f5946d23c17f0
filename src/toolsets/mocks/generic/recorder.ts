import type { Duplex } from 'node:stream';
import type { GenericMock } from '../keploy/types.js';
import { waitBounded } from '../../../core/wait.js';
import { buildGenericMock } from './keploy.js';
import { failTogether, pipeBoth } from '../proxy/pipe.js';
import { greetingOffersTls, greetingRead, isMysqlGreeting, redactMysqlRequest, splitSslRequest } from '../mysql/wire.js';
import { acceptTls, connectUpstream, type UpstreamTlsOptions } from '../tls/terminate.js';
import type { DebugkitCa } from '../tls/ca.js';
import { KeptShare, RECORDING_KEPT_MAX_BYTES, type KeptBytes } from '../kept.js';
import { MAX_MOCK_EXCHANGE_BYTES } from '../protocol.js';

/**
 * Records a connection of a protocol debugkit does not parse, while forwarding it unchanged:
 * bytes go client <-> server through `pipe` (backpressure, half-close), and copies of both
 * directions are grouped into exchanges the way Keploy's generic parser groups them:
 * - the client's bytes until the server starts answering are a request; the server's bytes until
 *   the client speaks again are its response; each request with its response is one Generic mock;
 * - a server that speaks first (SMTP, FTP, MySQL, Redis sentinel banners) gives an exchange with
 *   an empty request: its greeting, sent on connect at replay;
 * - the exchange still open when the connection closes is a mock too (Keploy drops it), even
 *   without a response (a request the server closed on, or a client that only sends);
 *   `serverClosed` marks an answer after which the server closed first.
 * An exchange over `maxBytesPerMock` (request and response together) keeps only its first bytes
 * and is marked `truncated` (replay refuses it rather than send half an answer); recording of the
 * connection stops there (`stoppedRecording`), the traffic goes on untouched.
 */

/** What the capture proxy hands over (`InterceptedConnection` fits). */
export interface GenericConnection {
  id?: string;
  target: { host: string; port: number };
  /** The program's side, its first bytes still unread. */
  client: Duplex;
}

export interface RecordGenericOptions {
  onMock(mock: GenericMock): void;
  /** The recording's budget for exchanges not finished yet (kept.ts): past it an exchange is recorded cut, as past the bound per mock. */
  kept?: KeptBytes;
  /**
   * When given, the exchanges of a MySQL/MariaDB connection (its greeting said so) go here
   * instead of `onMock` (record.ts writes them as Keploy MySQL mocks).
   */
  onMysqlMock?(mock: GenericMock): void;
  /** Default 1 MiB (request + response of one exchange). */
  maxBytesPerMock?: number;
  /** Mock building or `onMock` failures (the traffic is not affected). */
  onError?(err: unknown): void;
  utcOffsetMinutes?: number;
  /**
   * MySQL over TLS: when the server's greeting offers TLS and the client answers with an
   * SSLRequest, the SSLRequest goes to the server, then debugkit is the TLS server to the client
   * (a leaf for the target from `ca`) and a TLS client to the server over the same connection
   * (verified as `upstream` says), and the plaintext in between is what is recorded. Without it,
   * such a connection is forwarded as it is and its TLS records are recorded as bytes.
   */
  tls?: { ca: DebugkitCa; upstream: UpstreamTlsOptions; handshakeTimeoutMs?: number };
}

export interface RecordGenericResult {
  mocks: number;
  bytesUp: number;
  bytesDown: number;
  /** Why recording stopped early (an exchange over the limit); the bytes still went through. */
  stoppedRecording?: string;
  /** The first connection failure; both sides were destroyed then. */
  error?: Error;
}

export const DEFAULT_MAX_GENERIC_MOCK_BYTES = MAX_MOCK_EXCHANGE_BYTES;

interface Exchange {
  request: Buffer[];
  response: Buffer[];
  requestBytes: number;
  responseBytes: number;
  /** Bytes kept so far (at most the limit). */
  kept: number;
  startedAt: Date;
  endedAt: Date;
  truncated: boolean;
  serverClosed: boolean;
  /** What it took of the recording's budget (kept.ts). */
  share?: KeptShare;
}

/** Forwards and records one connection; resolves once both sides are closed. */
export async function recordGeneric(conn: GenericConnection, upstream: Duplex, options: RecordGenericOptions): Promise<RecordGenericResult> {
  const result: RecordGenericResult = { mocks: 0, bytesUp: 0, bytesDown: 0 };
  const grouper = new ExchangeGrouper(conn, options, result);
  let client = conn.client;
  if (options.tls) {
    const secured = await mysqlTls(conn, upstream, grouper, result, options.tls);
    if (secured === 'failed') return result;
    if (secured) [client, upstream] = [secured.client, secured.upstream];
  }
  client.on('data', (chunk: Buffer) => grouper.client(chunk));
  upstream.on('data', (chunk: Buffer) => grouper.server(chunk));
  // The server closing while the client still talks: its last answer ends the conversation.
  upstream.once('end', () => !client.readableEnded && grouper.serverEnded());
  // The first side to close ends the last exchange: no byte can reach the other after that
  // (a side may have closed already, while the greeting was read).
  for (const side of [client, upstream]) {
    if (side.closed || side.destroyed) grouper.finish();
    else side.once('close', () => grouper.finish());
  }
  return pipeBoth(client, upstream, result);
}

/** What `readFirst` saw: the bytes of `from`, and why it stopped before they were `enough`. */
interface FirstBytes {
  bytes: Buffer;
  /**
   * `other`: the other side spoke first (its bytes were put back); `ended`: a side ended or closed;
   * `quiet`: `from` stopped sending before its bytes were enough (a short banner of another protocol).
   */
  stopped?: 'other' | 'ended' | 'quiet';
}

/** How long a first packet may stay incomplete before the bytes so far are passed on as they are. */
const FIRST_PACKET_WAIT_MS = 500;
/** However the bytes trickle in, the first packet is waited for this long at most. */
const FIRST_PACKET_MAX_WAIT_MS = 2000;

/**
 * Reads `from` until `enough(bytes)`, the other side speaks, either ends, or `from` goes quiet
 * with too few bytes for `FIRST_PACKET_WAIT_MS`; both are left paused.
 */
async function readFirst(from: Duplex, other: Duplex, enough: (bytes: Buffer) => boolean): Promise<FirstBytes> {
  let bytes: Buffer = Buffer.alloc(0);
  let quiet: NodeJS.Timeout | undefined;
  const outcome = await waitBounded<FirstBytes['stopped'] | 'enough'>(
    (settle) => {
      // Paused at once, in the handler: a flowing stream would hand over its next chunk first.
      const stop = (why: FirstBytes['stopped'] | 'enough') => {
        from.pause();
        other.pause();
        settle(why);
      };
      const onData = (chunk: Buffer) => {
        bytes = bytes.length === 0 ? chunk : Buffer.concat([bytes, chunk]);
        clearTimeout(quiet);
        if (enough(bytes)) stop('enough');
        else quiet = setTimeout(() => stop('quiet'), FIRST_PACKET_WAIT_MS);
      };
      const onOther = (chunk: Buffer) => {
        other.pause();
        other.unshift(chunk);
        stop('other');
      };
      const onEnd = () => stop('ended');
      if (from.destroyed || other.destroyed || from.readableEnded || other.readableEnded) return stop('ended');
      from.on('data', onData);
      other.on('data', onOther);
      for (const s of [from, other]) for (const e of ['end', 'close']) s.once(e, onEnd);
      from.resume();
      other.resume();
      return () => {
        clearTimeout(quiet);
        from.off('data', onData);
        other.off('data', onOther);
        for (const s of [from, other]) for (const e of ['end', 'close']) s.off(e, onEnd);
      };
    },
    { timeoutMs: FIRST_PACKET_MAX_WAIT_MS, keepAlive: true },
  );
  // However it ended, both are left paused (a handler that settled paused them already).
  from.pause();
  other.pause();
  if (outcome.kind !== 'value') return { bytes, stopped: 'quiet' }; // the bytes trickled in past the bound
  return outcome.value === 'enough' ? { bytes } : { bytes, stopped: outcome.value };
}

/**
 * MySQL over TLS (see `RecordGenericOptions.tls`): reads the greeting and the client's first
 * packet before the pipes start. Undefined when the connection stays in clear (what was read has
 * been forwarded and recorded); the TLS sides to pipe and record otherwise; `failed` when a TLS
 * handshake failed (both connections are closed, `result.error` says why).
 */
async function mysqlTls(
  conn: GenericConnection,
  upstream: Duplex,
  grouper: ExchangeGrouper,
  result: RecordGenericResult,
  tls: NonNullable<RecordGenericOptions['tls']>,
): Promise<{ client: Duplex; upstream: Duplex } | 'failed' | undefined> {
  const { client } = conn;
  // The pipes add their own listeners later; until then an error here must not go unhandled.
  const fail = failTogether(result, client, upstream);
  const toClient = (b: Buffer) => {
    if (b.length === 0) return;
    grouper.server(b);
    result.bytesDown += b.length;
    client.write(b);
  };
  const toServer = (b: Buffer) => {
    if (b.length === 0) return;
    grouper.client(b);
    result.bytesUp += b.length;
    upstream.write(b);
  };
  const greeting = await readFirst(upstream, client, greetingRead);
  toClient(greeting.bytes);
  if (greeting.stopped || !greetingOffersTls(greeting.bytes)) return undefined;
  const first = await readFirst(client, upstream, (b) => splitSslRequest(b).kind !== 'more');
  const split = splitSslRequest(first.bytes);
  if (first.stopped || split.kind !== 'tls') return void toServer(first.bytes);
  toServer(split.request);
  // The ClientHello may have come in the same chunk as the SSLRequest: it is TLS's first bytes.
  if (split.rest.length > 0) client.unshift(split.rest);
  const where = `${conn.target.host}:${conn.target.port}`;
  let server: Duplex;
  try {
    // The server first, as for HTTPS: a server that fails TLS fails the program's handshake too.
    server = await connectUpstream(conn.target, undefined, { ...tls.upstream, over: upstream, alpn: [] });
  } catch (err) {
    fail(new Error(`MySQL at ${where} over TLS: ${(err as Error).message} (the server's certificate is verified against the system CAs, or upstreamCaFile; insecureUpstream: true skips the check)`));
    grouper.discard();
    return 'failed';
  }
  // The TLS socket emits its own errors (a reset while the program's handshake is awaited): no crash.
  server.on('error', fail);
  let secure: Duplex;
  try {
    secure = await acceptTls(client, tls.ca, conn.target.host, tls.handshakeTimeoutMs ?? 10_000);
  } catch (err) {
    server.destroy();
    fail(new Error(`MySQL at ${where} over TLS: ${(err as Error).message} (the program must trust debugkit's CA)`));
    grouper.discard();
    return 'failed';
  }
  secure.once('close', () => client.destroy());
  server.once('close', () => upstream.destroy());
  return { client: secure, upstream: server };
}

class ExchangeGrouper {
  private current: Exchange | undefined;
  private stopped = false;
  private readonly max: number;
  private readonly host: string;

  constructor(
    private readonly conn: GenericConnection,
    private readonly options: RecordGenericOptions,
    private readonly result: RecordGenericResult,
  ) {
    this.max = options.maxBytesPerMock ?? DEFAULT_MAX_GENERIC_MOCK_BYTES;
    this.host = `${conn.target.host}:${conn.target.port}`;
  }

  client(chunk: Buffer): void {
    if (this.stopped || chunk.length === 0) return;
    // The client speaking after an answer starts the next exchange.
    if (this.current && this.current.responseBytes > 0) this.emit();
    if (this.stopped) return;
    const ex = (this.current ??= newExchange());
    ex.requestBytes += chunk.length;
    this.keep(ex, ex.request, chunk);
  }

  server(chunk: Buffer): void {
    if (this.stopped || chunk.length === 0) return;
    const ex = (this.current ??= newExchange()); // before any client byte: a greeting
    ex.responseBytes += chunk.length;
    ex.endedAt = new Date();
    this.keep(ex, ex.response, chunk);
  }

  serverEnded(): void {
    if (this.stopped) return;
    (this.current ??= newExchange()).serverClosed = true;
  }

  /** Nothing of this connection is written (its TLS login failed: a greeting alone replays nothing). */
  discard(): void {
    this.current?.share?.release();
    for (const e of this.phase ?? []) e.share?.release();
    this.current = undefined;
    this.phase = undefined;
    this.stopped = true;
  }

  /** Ends the open exchange (idempotent: the other side's close finds nothing). */
  finish(): void {
    if (!this.stopped && this.current) this.emit();
    if (this.phase) this.endPhase();
    this.stopped = true;
  }

  private keep(ex: Exchange, into: Buffer[], chunk: Buffer): void {
    if (ex.truncated) return;
    const room = this.max - ex.kept;
    ex.share ??= new KeptShare(this.options.kept);
    if (!ex.share.take(Math.min(chunk.length, room))) {
      // The recording keeps all it may of calls not finished: this one is written cut, as past its own bound.
      ex.truncated = true;
      return;
    }
    if (chunk.length > room) {
      ex.truncated = true;
      if (room > 0) into.push(Buffer.from(chunk.subarray(0, room)));
      ex.kept = this.max;
      return;
    }
    into.push(chunk);
    ex.kept += chunk.length;
  }

  /** The server is MySQL/MariaDB (its greeting said so): authentication is redacted. */
  private mysql = false;
  /**
   * MySQL, written as MySQL mocks: the connection phase's exchanges so far (the greeting, each
   * authentication step). It becomes ONE mock when the first command comes or the connection
   * ends, as Keploy writes it (its `config` mock: the greeting and every server packet of the
   * login in `responses`, the client's in `requests`).
   */
  private phase: Exchange[] | undefined;

  private emit(): void {
    const ex = this.current!;
    this.current = undefined;
    if (ex.requestBytes === 0 && !this.mysql && isMysqlGreeting(Buffer.concat(ex.response))) {
      this.mysql = true;
      if (this.options.onMysqlMock && !ex.truncated) {
        this.phase = [ex];
        return;
      }
    }
    // Truncated exchanges too: redaction fails closed on a cut packet.
    if (this.mysql && ex.request.length > 0) ex.request = [redactMysqlRequest(Buffer.concat(ex.request))];
    if (this.phase) {
      // A request whose first packet has sequence 0 is a command: the login is over.
      const command = ex.request.length === 0 || ex.request[0]![3] === 0;
      if (!command && !ex.truncated) {
        // The login phase is one mock, bound as one exchange is: past it, it is written cut and the
        // connection relayed unrecorded (a thousand 1 MB answers to login packets were gathered
        // whole and decoded on the event loop: 12 s, and the heap ran out; attack 18p).
        if (this.phase.reduce((n, e) => n + e.kept, 0) + ex.kept <= this.max) return void this.phase.push(ex);
        return this.endPhase(ex);
      }
      this.endPhase();
    }
    this.write(ex);
  }

  /** Writes the connection phase gathered so far as one exchange; with `over`, an exchange past the bound: counted, not kept, and the phase written cut. */
  private endPhase(over?: Exchange): void {
    const list = this.phase!;
    this.phase = undefined;
    const last = over ?? list[list.length - 1]!;
    const all = over ? [...list, over] : list;
    for (const e of all) e.share?.release();
    this.write({
      request: list.flatMap((e) => e.request),
      response: list.flatMap((e) => e.response),
      requestBytes: all.reduce((n, e) => n + e.requestBytes, 0),
      responseBytes: all.reduce((n, e) => n + e.responseBytes, 0),
      kept: list.reduce((n, e) => n + e.kept, 0),
      startedAt: list[0]!.startedAt,
      endedAt: last.endedAt,
      truncated: over !== undefined,
      serverClosed: last.serverClosed,
    });
  }

  private write(ex: Exchange): void {
    ex.share?.release();
    if (ex.truncated) {
      this.stopped = true;
      const size = ex.requestBytes + ex.responseBytes;
      this.result.stoppedRecording =
        ex.kept >= this.max || size > this.max
          ? `an exchange of ${size} bytes went over the ${this.max}-byte limit per mock; it was recorded truncated and the rest of the connection was not recorded`
          : `the recording already held the ${RECORDING_KEPT_MAX_BYTES} bytes it keeps of calls not finished: an exchange was recorded truncated and the rest of the connection was not recorded`;
    }
    try {
      const mock = buildGenericMock(
        {
          request: Buffer.concat(ex.request),
          response: Buffer.concat(ex.response),
          startedAt: ex.startedAt,
          endedAt: ex.endedAt,
          host: this.host,
          ...(this.conn.id ? { connectionId: this.conn.id } : {}),
          serverClosed: ex.serverClosed,
          ...(ex.truncated ? { truncated: { requestBytes: ex.requestBytes, responseBytes: ex.responseBytes } } : {}),
        },
        this.options.utcOffsetMinutes,
      );
      this.result.mocks++;
      if (this.mysql && this.options.onMysqlMock) this.options.onMysqlMock(mock);
      else this.options.onMock(mock);
    } catch (err) {
      this.options.onError?.(err);
    }
  }
}

function newExchange(): Exchange {
  const now = new Date();
  return { request: [], response: [], requestBytes: 0, responseBytes: 0, kept: 0, startedAt: now, endedAt: now, truncated: false, serverClosed: false };
}
