import type { Duplex } from 'node:stream';
import type { GenericMock } from '../keploy/types.js';
import { buildGenericMock } from './format.js';
import { pipeBoth } from '../proxy/pipe.js';
import { isMysqlGreeting } from './matcher.js';
import { redactMysqlAuth } from './mysql.js';

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

export const DEFAULT_MAX_GENERIC_MOCK_BYTES = 1024 * 1024;

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
}

/** Forwards and records one connection; resolves once both sides are closed. */
export function recordGeneric(conn: GenericConnection, upstream: Duplex, options: RecordGenericOptions): Promise<RecordGenericResult> {
  const result: RecordGenericResult = { mocks: 0, bytesUp: 0, bytesDown: 0 };
  const grouper = new ExchangeGrouper(conn, options, result);
  const { client } = conn;
  client.on('data', (chunk: Buffer) => grouper.client(chunk));
  upstream.on('data', (chunk: Buffer) => grouper.server(chunk));
  // The server closing while the client still talks: its last answer ends the conversation.
  upstream.once('end', () => !client.readableEnded && grouper.serverEnded());
  // The first side to close ends the last exchange: no byte can reach the other after that.
  client.once('close', () => grouper.finish());
  upstream.once('close', () => grouper.finish());
  return pipeBoth(client, upstream, result);
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

  /** Ends the open exchange (idempotent: the other side's close finds nothing). */
  finish(): void {
    if (!this.stopped && this.current) this.emit();
    this.stopped = true;
  }

  private keep(ex: Exchange, into: Buffer[], chunk: Buffer): void {
    if (ex.truncated) return;
    const room = this.max - ex.kept;
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

  private emit(): void {
    const ex = this.current!;
    this.current = undefined;
    if (ex.requestBytes === 0 && isMysqlGreeting(Buffer.concat(ex.response))) this.mysql = true;
    if (this.mysql && ex.request.length > 0 && !ex.truncated) ex.request = [redactMysqlAuth(Buffer.concat(ex.request))];
    if (ex.truncated) {
      this.stopped = true;
      this.result.stoppedRecording = `an exchange of ${ex.requestBytes + ex.responseBytes} bytes went over the ${this.max}-byte limit per mock; it was recorded truncated and the rest of the connection was not recorded`;
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

