import http2 from 'node:http2';
import { bodyBytes } from '../http/keploy.js';
import type { HttpMock, Mock } from '../keploy/types.js';
import { sizeOnlyLine, type HttpMatcher } from '../http/matcher.js';
import type { OnMiss } from '../http/replayer.js';
import { encodeGrpcMessage, flagByte, frameMessages, GrpcStatus, isGrpc, MessageReader, type GrpcMessage, type HeaderMap } from './grpc.js';
import { TimeSlice } from '../../../core/wait.js';
import { readGrpcMock, TEXT_SLICE_MS, type GrpcCall } from './keploy.js';
import { GrpcCallMatch, type GrpcIndex } from './matcher.js';
import { relay, toMock, type Relayed, type RequestBody } from './relay.js';
import { flat, forwardable, guard, HOP, MAX_BODY, serveClient, unservedStreams, upstreamOf, type H2Connection, type H2Dial, type ServedH2 } from './wire.js';
import { DEFAULT_MAX_BODY, FALLBACK_MAX_BODY, readRequestBody, type ReadBody } from '../http/message.js';
import { KeptShare, type KeptBytes } from '../kept.js';

export interface ReplayH2Options {
  scheme: 'http' | 'https';
  grpc: GrpcIndex;
  http: HttpMatcher;
  onMiss: OnMiss;
  /** The real server, for misses with `passthrough`/`record`. */
  dial?: H2Dial;
  counts: { replayed: number; missed: number; fellBack: number };
  missed(message: string): void;
  /** A mock answered (its name): see ReplayersOptions.served. */
  served?(mock: string): void;
  /** A mock answered whose request body matched by its size only (ReplayersOptions.unverified). */
  unverified?(message: string): void;
  /** A miss's answer waits for this (ReplayersOptions.holdMiss). */
  holdMiss?(): Promise<void>;
  /** The replay's budget for request bodies being read (kept.ts). */
  kept?: KeptBytes;
  /** A call recorded on a miss; false when not kept (then not indexed either: see ReplayersOptions). */
  recorded(mock: Mock): boolean | void;
}

/** Answers every stream of the program's HTTP/2 connection from the set's mocks. */
export async function replayH2(conn: H2Connection, o: ReplayH2Options): Promise<void> {
  const upstream = o.dial ? upstreamOf(o.dial, o.scheme, conn.target) : undefined;
  const textSlice = new TimeSlice(TEXT_SLICE_MS);
  try {
    const seen = await serveClient(conn, (stream, headers) => {
      void answer(stream, headers).catch(() => {
        if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      });
    });
    unserved(seen);
  } finally {
    upstream?.close();
  }

  /**
   * Streams the program opened that never reached the set (attacks f2-1, f2-2): requests sent and
   * never answered, each a miss, said in one line per connection.
   */
  function unserved(seen: ServedH2) {
    const u = unservedStreams(seen);
    if (!u) return;
    o.counts.missed += u.count;
    o.missed(`HTTP/2 connection to ${conn.target.host}:${conn.target.port}: ${u.count} stream${u.count === 1 ? '' : 's'} the program opened never reached the set: ${u.why}`);
  }

  /** A request cut off by a reset or the connection's close before it ended: sent and never answered, a miss (as MySQL's, Redis's and PostgreSQL's are). */
  function cutOff(request: string, why: string) {
    o.counts.missed++;
    o.missed(`${request}: ${why} (a request sent and never answered)`);
  }

  async function answer(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) {
    if (isGrpc(headers as Record<string, unknown>)) return answerGrpc(stream, headers);
    // As HTTP/1 reads it: 1 MiB kept for matching (64 MiB when a miss may go to the real server, which needs it whole), the rest counted and hashed.
    let body: ReadBody;
    try {
      body = await readRequestBody(stream, o.onMiss === 'fail' ? DEFAULT_MAX_BODY : FALLBACK_MAX_BODY, o.kept);
    } catch (err) {
      // readRequestBody says how the request was cut.
      cutOff(`${String(headers[':method'] ?? 'GET')} ${String(headers[':path'] ?? '/')} (HTTP/2)`, (err as Error).message);
      throw err;
    }
    try {
      await answerRead(stream, headers, body);
    } finally {
      body.release();
    }
  }

  async function answerRead(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, read: ReadBody) {
    const body = read.bytes;
    const path = String(headers[':path'] ?? '/');
    const method = String(headers[':method'] ?? 'GET');
    // Matched in slices, after the matches asked before it on every connection (a set of big JSON
    // bodies takes seconds to compare): the event loop gets turns meanwhile.
    const r = await o.http.matchInTurn({
      method,
      url: path,
      scheme: o.scheme,
      host: String(headers[':authority'] ?? `${conn.target.host}:${conn.target.port}`),
      headers: Object.entries(flat(headers)).filter(([k]) => !k.startsWith(':')),
      body,
      bodyLength: read.length,
      ...(read.sha256 !== undefined ? { bodySha256: read.sha256 } : {}),
    });
    if (!r.miss) {
      o.counts.replayed++;
      o.served?.(r.mock.name);
      if (r.how === 'size') o.unverified?.(sizeOnlyLine(`${method} ${path} (HTTP/2)`, r.mock.name, read.length));
      respondHttp(stream, r.mock);
      return;
    }
    const miss = `${method} ${path} (HTTP/2)${r.closest ? `; closest ${r.closest.name}: ${r.closest.differences.slice(0, 3).join('; ')}` : ''}`;
    // The real server needs the whole body: one not kept whole (over 64 MiB, or past the replay's budget) is a miss.
    const whole = read.length === body.length;
    if (whole && (await fallBack(stream, headers, miss, body))) return;
    const untold = whole || o.onMiss === 'fail' ? miss : `${miss}; not sent to the real server: its body (${read.length} bytes) was not kept whole`;
    o.counts.missed++;
    o.missed(untold);
    await o.holdMiss?.();
    if (stream.destroyed) return;
    stream.respond({ ':status': 502, 'content-type': 'text/plain; charset=utf-8' });
    stream.end(`debugkit mocks: no mock matches ${untold}\n`);
  }

  /** A miss with `passthrough`/`record` and the real server known: relays it; false when not. */
  async function fallBack(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, miss: string, body: RequestBody): Promise<boolean> {
    if (!upstream || o.onMiss === 'fail') return false;
    let relayed: Relayed;
    try {
      relayed = await relay(await upstream.get(), stream, headers, body, DEFAULT_MAX_BODY, o.kept);
    } catch (err) {
      // The real server could not answer either: a miss like any other.
      o.counts.missed++;
      o.missed(`${miss}; the real server failed too: ${err instanceof Error ? err.message : String(err)}`);
      if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      return true;
    }
    if (relayed.cut) {
      // Not answered whole by either side: a miss, and no call to keep.
      o.counts.missed++;
      o.missed(`${miss}; relayed to the real server, then ${relayed.cut}`);
      return true;
    }
    const { mock, writeTexts } = toMock(relayed, conn.target);
    if (o.onMiss === 'record') {
      // Read while its messages are still bytes (none of the protoscope text to read back), then their text written in slices.
      const call = o.recorded(mock) !== false ? readGrpcMock(mock) : undefined;
      if (call) o.grpc.add(call);
      await writeTexts?.(textSlice);
    } else {
      o.counts.fellBack++;
      o.counts.missed++;
    }
    return true;
  }

  /**
   * A gRPC call, answered as its request messages arrive: each recorded response message goes
   * out once the request messages recorded before it have come (see GrpcCallMatch), the trailers
   * when the client ends its side. A miss before anything was sent can still go to the real
   * server; after, the call ends with UNAVAILABLE naming the closest mock.
   */
  function answerGrpc(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): Promise<void> {
    const path = String(headers[':path'] ?? '/');
    const opened = o.grpc.open(path);
    const raw: Buffer[] = [];
    let size = 0;
    // What this call holds (its bytes kept for a relay, the message being read), charged to the replay's budget.
    const share = new KeptShare(o.kept);
    let charged = 0;
    let answering: GrpcCall | undefined;
    let trailers: HeaderMap = {};
    const send = (messages: readonly GrpcMessage[], call: GrpcCall, end = false) => {
      if (!answering) {
        answering = call;
        const head = forwardable({ ':status': '200', ...call.responseHeaders });
        if (end && call.responseMessages.length === 0 && 'grpc-status' in head) {
          // Recorded as a trailers-only answer (the status in the one HEADERS frame): so again.
          stream.respond(head, { endStream: true });
          return;
        }
        // Only now: a miss before this may hand the stream to relay(), which sends its own trailers.
        stream.on('wantTrailers', () => guard(stream, () => stream.sendTrailers(trailers)));
        trailers = forwardable(call.trailers);
        stream.respond(head, { waitForTrailers: true });
      }
      if (messages.length > 0) stream.write(frameMessages(messages));
      if (end) stream.end();
    };
    return new Promise<void>((resolve) => {
      let done = false;
      const finish = (release = true) => {
        done = true;
        if (release) share.release();
        stream.off('data', onData);
        stream.off('end', onEnd);
        resolve();
      };
      const failed = (miss: string, status: number) => {
        if (done) return;
        // The bytes held stay charged while the relay sends them on (attack 18ah o1-2): given back once it is done.
        finish(false);
        // Held until relay() (or the miss answer below) reads on: no chunk may slip by unread.
        stream.pause();
        const prefix = Buffer.concat(raw);
        raw.length = 0;
        void (async () => {
          try {
            if (!answering && (await fallBack(stream, headers, miss, { prefix, live: stream }))) return;
          } finally {
            share.release();
          }
          o.counts.missed++;
          o.missed(miss);
          await o.holdMiss?.();
          if (stream.destroyed) return;
          const text = encodeGrpcMessage(`debugkit mocks: ${miss}`);
          if (answering) {
            trailers = { 'grpc-status': String(status), 'grpc-message': text };
            stream.end();
          } else {
            stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(status), 'grpc-message': text }, { endStream: true });
          }
          stream.resume();
        })().catch(() => {
          if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
        });
      };
      const reader = new MessageReader();
      /** Request messages read so far. */
      let received = 0;
      const onData = (c: Buffer) => {
        if (done || !(opened instanceof GrpcCallMatch)) return;
        // The bytes so far are kept for a relay to the real server, possible until a reply went out.
        if (!answering) {
          raw.push(c);
          size += c.length;
        } else raw.length = 0;
        const parsed = reader.push(c);
        if (!answering && size > MAX_BODY) return failed(`gRPC ${path}: the request is over ${MAX_BODY} bytes`, GrpcStatus.UNAVAILABLE);
        const holding = (answering ? 0 : size) + reader.pending;
        if (holding < charged) share.give(charged - holding);
        else if (holding > charged && !share.take(holding - charged))
          return failed(`gRPC ${path}: the request is over what the replay keeps of unfinished calls (${o.kept?.limit ?? 0} bytes)`, GrpcStatus.UNAVAILABLE);
        charged = holding;
        for (const m of parsed) {
          received++;
          // A server answers a flag other than 0 and 1 with INTERNAL, whatever the set recorded.
          if (m.flag !== undefined) {
            return failed(
              `gRPC ${path}: request message ${received} has compression flag byte 0x${flagByte(m).toString(16).padStart(2, '0')}; valid flags are 0 (not compressed) and 1 (compressed)`,
              GrpcStatus.INTERNAL,
            );
          }
          const r = opened.push(m);
          if ('miss' in r) return failed(r.miss, GrpcStatus.UNAVAILABLE);
          if (r.end) {
            // The recorded server ended the call here: trailers now, the rest of the client's stream unread.
            finish();
            o.counts.replayed++;
            o.served?.(r.call.name);
            guard(stream, () => send(r.send, r.call, true));
            stream.resume();
            return;
          }
          // Headers go with the first reply (or at the end): until then a miss can still be relayed.
          if (r.send.length > 0) guard(stream, () => send(r.send, r.call));
        }
        // A message is refused by its prefix, as a gRPC server refuses one over its limit: never read toward the 4 GiB a prefix may declare.
        if (reader.declared > MAX_BODY) {
          return failed(
            `gRPC ${path}: request message ${received + 1}'s prefix says ${reader.declared} bytes, over the ${MAX_BODY} bytes a replay reads of one message (a gRPC server answers RESOURCE_EXHAUSTED)`,
            GrpcStatus.RESOURCE_EXHAUSTED,
          );
        }
      };
      const onEnd = () => {
        if (done || !(opened instanceof GrpcCallMatch)) return;
        // node:http2 ends a stream's readable side when the client resets it (or its connection closes): cut, not ended.
        if (stream.aborted) return cut();
        // The client ended its side inside a message: a server answers INTERNAL, not what the set recorded.
        const tail = reader.tail();
        if (tail?.truncated) return failed(`gRPC ${path}: ${truncatedLine(tail.truncated, received + 1)}`, GrpcStatus.INTERNAL);
        const r = opened.end();
        if ('miss' in r) return failed(r.miss, GrpcStatus.UNAVAILABLE);
        finish();
        o.counts.replayed++;
        o.served?.(r.call.name);
        guard(stream, () => send(r.send, r.call, true));
      };
      /** Neither the client nor the set ended the call: it was cut off by a reset or the connection's close. */
      const cut = () => {
        finish();
        cutOff(`gRPC ${path}`, `the stream was reset or its connection closed after ${received} whole request message${received === 1 ? '' : 's'}, before the client ended its side`);
      };
      stream.once('close', () => {
        if (!done) cut();
      });
      if (!(opened instanceof GrpcCallMatch)) return failed(opened.miss, GrpcStatus.UNIMPLEMENTED);
      stream.on('data', onData);
      stream.once('end', onEnd);
    });
  }
}

/** Why a request message the client's end cut is a miss: how many of its bytes came of how many. */
function truncatedLine(t: { length: number; came: number }, index: number): string {
  const cut = t.came < 5 ? `its 5-byte length prefix was cut after ${t.came} byte${t.came === 1 ? '' : 's'}` : `its prefix says ${t.length} bytes, ${t.came - 5} came`;
  return `the client ended its side inside request message ${index}, truncated: ${cut} (a gRPC server answers INTERNAL)`;
}

function respondHttp(stream: http2.ServerHttp2Stream, mock: HttpMock) {
  const headers: Record<string, string | number> = { ':status': mock.spec.resp.status_code };
  for (const [k, v] of Object.entries(mock.spec.resp.header)) {
    const name = k.toLowerCase();
    // Http mocks store bodies decoded (Keploy's HTTP recorder); Http2 ones as received.
    if (HOP.has(name) || name === 'content-length' || (name === 'content-encoding' && mock.spec.req.proto_major !== 2)) continue;
    headers[name] = v;
  }
  stream.respond(headers);
  stream.end(Buffer.from(bodyBytes(mock.spec.resp.body)));
}
