import http2 from 'node:http2';
import { KeptShare, type KeptBytes } from '../kept.js';
import { DEFAULT_MAX_BODY } from '../http/message.js';
import type { Mock } from '../keploy/types.js';
import { isGrpc, MessageReader, splitMessages, type GrpcMessage, type HeaderMap } from './grpc.js';
import { buildHttp2Mock, recordGrpcMock, type RecordedGrpcMock } from './keploy.js';
import { END_STREAM, flat, forwardable, guard } from './wire.js';

export interface Relayed {
  requestHeaders: HeaderMap;
  /** gRPC: the server ended the call after this many request messages, before the program's end. */
  trailersAfterRequests?: number;
  /** gRPC: the response messages, each with the count of request messages sent before it came; a last one the answer ended inside is marked truncated. */
  responseMessages: GrpcMessage[];
  requestBody: Buffer;
  responseHeaders: HeaderMap;
  responseBody: Buffer;
  trailers: HeaderMap;
  requestTime: Date;
  responseTime: Date;
  /**
   * Set when a direction went over the bound: every byte was relayed, but what was kept of the
   * exchange was let go at that point (both bodies and the gRPC messages are empty then), so it
   * cannot become a mock. The sizes are what went through each way.
   */
  over?: { requestBytes: number; responseBytes: number; budget?: true };
  /**
   * Set when the exchange did not end: the program reset its stream (or its connection closed) before
   * the answer ended, or the real server reset it. Relayed as far as it went; it is no call to replay.
   */
  cut?: RelayCut;
}

/** How an exchange was cut before its answer ended (one wording each: a recording counts them by it). */
export const RelayCut = {
  program: 'the program reset the stream, or its connection closed, before the answer ended',
  server: 'the real server reset the stream, or its connection closed, before the answer ended',
} as const;
export type RelayCut = (typeof RelayCut)[keyof typeof RelayCut];

/** The program's request body: bytes already read (`prefix`), then the rest of `live` as it comes. */
export type RequestBody = Buffer | { prefix?: Buffer; live: http2.ServerHttp2Stream };

/**
 * Sends one request upstream and relays the answer to the program as it comes (headers, data,
 * trailers). `body` is the program's stream (forwarded live) or its buffered bytes. For gRPC each
 * response message notes how many request messages had gone up before it came (none noted once
 * the program had ended its side), so a replay can answer a bidirectional stream in step.
 *
 * At most `maxBytes` of each direction are kept for the mock (HTTP/1's body limit by default): a
 * stream is otherwise unbounded (a 200 MB upload held 200 MB twice over, the bytes and the gRPC
 * reader's copy). Past it the exchange is still relayed whole, but nothing more is kept and what
 * was kept is let go (`over` says so): a mock of part of a stream would replay a wrong answer.
 */
export function relay(
  upstream: http2.ClientHttp2Session,
  down: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  body: RequestBody,
  maxBytes: number = DEFAULT_MAX_BODY,
  kept?: KeptBytes,
): Promise<Relayed> {
  return new Promise((resolve, reject) => {
    const requestTime = new Date();
    const requestHeaders = flat(headers);
    const reqChunks: Buffer[] = [];
    const respChunks: Buffer[] = [];
    let reqReader = new MessageReader();
    let respReader = new MessageReader();
    const responseMessages: GrpcMessage[] = [];
    let requestsSent = 0;
    let clientEnded = false;
    let requestBytes = 0;
    let responseBytes = 0;
    let over = false;
    let starved = false;
    const share = new KeptShare(kept);
    /**
     * Whether the exchange is still kept, the bytes counted so far within the bound and `n` more
     * within the recording's budget; past either, everything kept is let go (the readers too: they
     * hold a partial message).
     */
    const keeping = (n: number) => {
      if (over) return false;
      if (requestBytes <= maxBytes && responseBytes <= maxBytes) {
        if (share.take(n)) return true;
        starved = true;
      }
      over = true;
      share.release();
      reqChunks.length = 0;
      respChunks.length = 0;
      responseMessages.length = 0;
      reqReader = new MessageReader();
      respReader = new MessageReader();
      return false;
    };
    const sendUp = (c: Buffer) => {
      requestBytes += c.length;
      if (keeping(c.length)) {
        reqChunks.push(c);
        requestsSent += reqReader.push(c).length;
      }
      return up.write(c);
    };
    let responseHeaders: HeaderMap = {};
    let trailers: HeaderMap = {};
    let endedWithHeaders = false;
    let responded = false;
    let waitingDown = false;
    const up = upstream.request(forwardable(requestHeaders), { endStream: false });
    const endUp = () => {
      clientEnded = true;
      up.end();
    };
    if (Buffer.isBuffer(body)) {
      sendUp(body);
      endUp();
    } else {
      const live = body.live;
      if (body.prefix && body.prefix.length > 0) sendUp(body.prefix);
      if (live.readableEnded) endUp();
      else {
        // Not pipe(): piping a server stream makes node:http2 send a default response on it.
        live.on('data', (c: Buffer) => {
          if (!sendUp(c)) live.pause();
        });
        up.on('drain', () => live.resume());
        live.once('end', endUp);
        live.resume();
      }
    }
    up.on('response', (h, flags) => {
      responseHeaders = flat(h);
      endedWithHeaders = (flags & END_STREAM) !== 0;
      if (endedWithHeaders && !clientEnded) trailersAfterRequests = requestsSent;
      // Reading starts only now: node:http2 may deliver DATA before emitting 'response'.
      up.on('data', (c: Buffer) => {
        responseBytes += c.length;
        if (keeping(c.length)) {
          respChunks.push(c);
          for (const m of respReader.push(c)) responseMessages.push(clientEnded ? m : { ...m, afterRequests: requestsSent });
        }
        // Backpressure this way too: a program that does not read its answer stops the real server's
        // (an unread stream queued 70 MB/s in the program's stream until 2.7 GB: attack 18ah o1-2).
        if (!down.destroyed && !down.write(c) && !waitingDown) {
          waitingDown = true;
          up.pause();
          down.once('drain', () => {
            waitingDown = false;
            up.resume();
          });
        }
      });
      if (down.destroyed || responded) return;
      responded = true;
      guard(down, () => down.respond(forwardable(responseHeaders), endedWithHeaders ? { endStream: true } : { waitForTrailers: true }));
    });
    down.on('wantTrailers', () => guard(down, () => down.sendTrailers(forwardable(trailers))));
    let trailersAfterRequests: number | undefined;
    up.on('trailers', (t) => {
      trailers = flat(t);
      if (!clientEnded) trailersAfterRequests = requestsSent;
    });
    let upEnded = false;
    let programCut = false;
    up.on('end', () => {
      upEnded = true;
      if (!endedWithHeaders && !down.destroyed) down.end();
    });
    // The program's stream closed (a reset, its connection's close): the real server's goes too, cancelled
    // when its answer had not ended (a cut), else closed (an answer that ended the call before the request did).
    down.once('close', () => {
      if (up.closed) return;
      programCut = !upEnded;
      up.close(upEnded ? http2.constants.NGHTTP2_NO_ERROR : http2.constants.NGHTTP2_CANCEL);
    });
    up.once('close', () => {
      if (!responded && !down.destroyed) {
        responded = true;
        // guard: the program's side may be closing already (its connection ended), and respond() would throw out of this event.
        guard(down, () => down.respond({ ':status': 502 }, { endStream: true }));
      }
      // The answer ended inside a message: kept as far as it came, so a replay sends the same bytes.
      const tail = over ? undefined : respReader.tail();
      if (tail) responseMessages.push(clientEnded ? tail : { ...tail, afterRequests: requestsSent });
      resolve({
        requestHeaders,
        ...(trailersAfterRequests !== undefined ? { trailersAfterRequests } : {}),
        responseMessages,
        requestBody: Buffer.concat(reqChunks),
        responseHeaders,
        responseBody: Buffer.concat(respChunks),
        trailers,
        requestTime,
        responseTime: new Date(),
        ...(over ? { over: { requestBytes, responseBytes, ...(starved ? { budget: true as const } : {}) } } : {}),
        ...(programCut ? { cut: RelayCut.program } : upEnded ? {} : { cut: RelayCut.server }),
      });
      // Its bytes are the mock's now (or gone): the recording's budget has them back.
      share.release();
    });
    up.once('error', (err) => {
      share.release();
      if (!down.destroyed) down.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      reject(err);
    });
  });
}

/** The exchange's mock; a gRPC one's messages are bytes until `writeTexts` (RecordedGrpcMock). */
export function toMock(r: Relayed, target: { host: string; port: number }): RecordedGrpcMock | { mock: Mock; writeTexts?: undefined } {
  if (isGrpc(r.requestHeaders)) {
    return recordGrpcMock({
      requestHeaders: r.requestHeaders,
      requestMessages: splitMessages(r.requestBody),
      responseHeaders: r.responseHeaders,
      responseMessages: r.responseMessages,
      ...(r.trailersAfterRequests !== undefined ? { trailersAfterRequests: r.trailersAfterRequests } : {}),
      trailers: r.trailers,
      requestTime: r.requestTime,
      responseTime: r.responseTime,
    });
  }
  const mock = buildHttp2Mock({
    requestHeaders: r.requestHeaders,
    requestBody: r.requestBody,
    responseHeaders: r.responseHeaders,
    responseBody: r.responseBody,
    trailers: r.trailers,
    requestTime: r.requestTime,
    responseTime: r.responseTime,
    fallbackAuthority: `${target.host}:${target.port}`,
  });
  return { mock };
}
