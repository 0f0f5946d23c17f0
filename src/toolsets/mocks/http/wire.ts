/**
 * A passive, incremental HTTP/1.x parser (RFC 9112) for one direction of a connection. It is fed
 * COPIES of the bytes a tunnel forwards, in whatever pieces they arrive, and reports complete
 * messages; it never answers, never blocks the tunnel and never throws on bad input: anything it
 * cannot read as HTTP stops it (`state` = 'not-http') while the bytes keep flowing elsewhere.
 *
 * Memory stays bounded whatever the traffic: bodies are kept up to `maxBodyBytes` (then only
 * counted, `bodyTruncated`), a head beyond `maxHeadBytes` is not HTTP, and no input chunk is
 * retained (bytes are copied out; partial lines are copied, capped by the head limit).
 */

import type { Verdict } from '../protocol.js';
import { clientHelloInfo, tlsRecordLength } from '../proxy/client-hello.js';
import {
  BodySink,
  contentLength,
  decodeValue,
  DEFAULT_MAX_BODY,
  DEFAULT_MAX_HEAD,
  headerValue,
  type Header,
  type HttpMessage,
  type HttpParserHandlers,
  type HttpParserOptions,
  type ParserState,
} from './message.js';

export { DEFAULT_MAX_BODY, DEFAULT_MAX_HEAD, headerValue } from './message.js';
export type { Header, HttpMessage, HttpParserHandlers, HttpParserOptions, HttpRequestMessage, HttpResponseMessage, ParserState } from './message.js';

const enum Phase {
  Head,
  Length,
  ChunkSize,
  ChunkData,
  ChunkEnd,
  Trailers,
  UntilClose,
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const REQUEST_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) ([\x21-\x7e\x80-\xff]+) HTTP\/1\.([01])$/;
const STATUS_LINE = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: ([^\r\n]*))?$/;
const EMPTY = Buffer.alloc(0);
const TOKEN_BYTE = new Uint8Array(256).map((_, b) => (b < 128 && TOKEN.test(String.fromCharCode(b)) ? 1 : 0));
const LF = 10;

export class HttpParser {
  state: ParserState = 'http';
  /** Why parsing stopped, when it did. */
  stopReason: string | undefined;
  /** Parsing stopped because a head, line or pipelined input exceeded a limit (a proxy answers 431), not for bad syntax. */
  stoppedAtLimit = false;

  private readonly maxBody: number;
  private readonly maxHead: number;
  private readonly now: () => number;
  private phase = Phase.Head;
  private msg: HttpMessage | undefined;
  private headBytes = 0;
  private remaining = 0;
  private finalResponses = 0;
  /** A line split across pushes: its pieces so far (copies). */
  private stash: Buffer[] = [];
  private stashLen = 0;
  private held: Buffer[] = [];
  private heldLen = 0;
  private body: BodySink;
  /** Stream offsets: bytes parsed so far (held bytes count once resumed), and where the head being read began. */
  private consumed = 0;
  private headFrom: number | undefined;

  constructor(
    readonly mode: 'request' | 'response',
    private readonly handlers: HttpParserHandlers,
    private readonly options: HttpParserOptions = {},
  ) {
    this.maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY;
    this.maxHead = options.maxHeadBytes ?? DEFAULT_MAX_HEAD;
    this.now = options.now ?? Date.now;
    this.body = new BodySink(this.maxBody, options.kept, mode === 'request');
  }

  /**
   * The stream offset where the head now being read began (its first line, or an empty line
   * before it); undefined between messages and inside bodies. A forwarder holds the bytes from here.
   */
  get headStart(): number | undefined {
    return this.headFrom;
  }

  /** Feeds the next bytes of this direction. */
  push(chunk: Buffer): void {
    if (this.state === 'held') return this.hold(chunk);
    if (this.state !== 'http' || chunk.length === 0) return;
    try {
      this.parse(chunk);
    } catch (err) {
      this.stop('not-http', `internal parser error: ${(err as Error).message}`);
    }
  }

  /** This direction ended (EOF): completes a response delimited by the connection's close. */
  end(): void {
    if (this.state !== 'http' && this.state !== 'held') return;
    if (this.phase === Phase.UntilClose && this.msg) this.complete();
    const midMessage = this.msg !== undefined || this.stashLen > 0;
    this.stop('ended', midMessage ? 'the stream ended inside a message' : 'the stream ended');
  }

  /** After 'held': the switch did not happen, parse what waited and go on. */
  resume(): void {
    if (this.state !== 'held') return;
    this.state = 'http';
    const waiting = this.held;
    this.held = [];
    this.heldLen = 0;
    for (const chunk of waiting) this.push(chunk);
  }

  /** Stops parsing for good (the protocol switched, or the caller lost interest). */
  stop(state: 'upgraded' | 'not-http' | 'ended', reason: string): void {
    if (this.state !== 'http' && this.state !== 'held') return;
    this.state = state;
    this.stopReason = reason;
    this.msg = undefined;
    this.body.release();
    this.body = new BodySink(0);
    this.stash = [];
    this.held = [];
    this.handlers.onStop?.(state, reason);
  }

  private stopAtLimit(reason: string): void {
    this.stoppedAtLimit = true;
    this.stop('not-http', reason);
  }

  private hold(chunk: Buffer): void {
    this.heldLen += chunk.length;
    if (this.heldLen > this.maxHead) return this.stop('upgraded', 'the connection switched protocols');
    this.held.push(Buffer.from(chunk));
  }

  private parse(buf: Buffer): void {
    const base = this.consumed;
    let pos = 0;
    try {
      pos = this.parseFrom(buf, base);
    } finally {
      this.consumed = base + pos;
    }
    // A request that asked to switch protocols ended inside this chunk: the rest waits.
    if (this.state === 'held' && pos < buf.length) this.hold(buf.subarray(pos));
  }

  /** Parses `buf` (which starts at stream offset `base`) and returns how far it got. */
  private parseFrom(buf: Buffer, base: number): number {
    let pos = 0;
    while (pos < buf.length && this.state === 'http') {
      switch (this.phase) {
        case Phase.Head:
        case Phase.Trailers:
        case Phase.ChunkSize:
        case Phase.ChunkEnd: {
          const next = this.line(buf, pos, base);
          if (next < 0) return buf.length;
          pos = next;
          break;
        }
        case Phase.Length:
        case Phase.ChunkData: {
          const n = Math.min(this.remaining, buf.length - pos);
          this.body.append(buf, pos, pos + n);
          pos += n;
          this.remaining -= n;
          if (this.remaining === 0) {
            if (this.phase === Phase.Length) this.complete();
            else this.phase = Phase.ChunkEnd;
          }
          break;
        }
        case Phase.UntilClose:
          this.body.append(buf, pos, buf.length);
          pos = buf.length;
          break;
      }
    }
    return pos;
  }

  /** Takes one line (LF-terminated, CR stripped) and handles it; -1 when it is not complete yet. */
  private line(buf: Buffer, pos: number, base: number): number {
    if (this.phase === Phase.Head && !this.msg && this.stashLen === 0) {
      if (!this.canStartMessage(buf[pos]!)) {
        this.stop('not-http', `not HTTP: starts with byte 0x${buf[pos]!.toString(16).padStart(2, '0')}`);
        return -1;
      }
      this.headFrom ??= base + pos;
    }
    const nl = buf.indexOf(LF, pos);
    if (nl < 0) {
      this.stashLen += buf.length - pos;
      if (this.stashLen > this.maxHead) this.stopAtLimit(`a line longer than ${this.maxHead} bytes`);
      else this.stash.push(Buffer.from(buf.subarray(pos)));
      return -1;
    }
    // The line is [from, end) of src: the chunk itself (no copy, no view) unless pieces were stashed.
    let src = buf;
    let from = pos;
    let to = nl;
    if (this.stashLen > 0) {
      src = Buffer.concat([...this.stash, buf.subarray(pos, nl)]);
      [from, to] = [0, src.length];
      this.stash = [];
      this.stashLen = 0;
    }
    const end = to > from && src[to - 1] === 13 ? to - 1 : to;
    if (this.phase === Phase.Head || this.phase === Phase.Trailers) {
      this.headBytes += to - from + 1;
      if (this.headBytes > this.maxHead) {
        this.stopAtLimit(`a head longer than ${this.maxHead} bytes`);
        return -1;
      }
    }
    // Field lines are decoded piecewise (name, value) by field(); only other lines need the text.
    if (this.phase === Phase.Head && this.msg && end > from) this.field(this.msg.headers, src, from, end);
    else if (this.phase === Phase.Head) this.headLine(src.toString('latin1', from, end), base + nl + 1);
    else if (this.phase === Phase.Trailers) this.trailerLine(src, from, end);
    else if (this.phase === Phase.ChunkSize) this.chunkSizeLine(src.toString('latin1', from, end));
    else if (end === from) this.phase = Phase.ChunkSize;
    else this.stop('not-http', 'chunk data longer than its size');
    return nl + 1;
  }

  /** A binary protocol is told apart at its first byte instead of after a 64 KiB "line". */
  private canStartMessage(byte: number): boolean {
    if (byte === 13 || byte === 10) return true;
    return this.mode === 'response' ? byte === 0x48 /* H */ : TOKEN_BYTE[byte] === 1;
  }

  /** A start line, or the empty line ending the head (field lines go to field()). */
  private headLine(text: string, endOffset: number): void {
    if (!this.msg) {
      // RFC 9112 2.2: empty lines before a request line are ignored.
      if (text !== '') this.startLine(text);
      return;
    }
    const start = this.headFrom ?? endOffset - this.headBytes;
    this.headFrom = undefined;
    this.handlers.onHead?.(this.msg, { start, end: endOffset });
    if (this.state === 'http') this.frameBody(this.msg);
  }

  private startLine(text: string): void {
    const startedAt = this.now();
    // Object literals, not a spread of shared fields: one message per request is the hot path.
    if (this.mode === 'request') {
      const m = REQUEST_LINE.exec(text);
      if (!m) return this.stop('not-http', `not an HTTP/1.x request line: ${JSON.stringify(text.slice(0, 80))}`);
      this.msg = {
        kind: 'request',
        method: m[1]!,
        target: m[2]!,
        httpVersion: m[3] === '1' ? '1.1' : '1.0',
        headers: [],
        trailers: [],
        body: EMPTY,
        bodyLength: 0,
        bodyTruncated: false,
        startedAt,
        completedAt: startedAt,
      };
    } else {
      const m = STATUS_LINE.exec(text);
      if (!m) return this.stop('not-http', `not an HTTP/1.x status line: ${JSON.stringify(text.slice(0, 80))}`);
      this.msg = {
        kind: 'response',
        status: Number(m[2]),
        reason: m[3] ?? '',
        httpVersion: m[1] === '1' ? '1.1' : '1.0',
        headers: [],
        trailers: [],
        body: EMPTY,
        bodyLength: 0,
        bodyTruncated: false,
        startedAt,
        completedAt: startedAt,
      };
    }
  }

  /** A field line: `name: value`; a line starting with SP/HTAB continues the previous one (obs-fold). */
  private field(list: Header[], src: Buffer, start: number, end: number): void {
    if (src[start] === 32 || src[start] === 9) {
      const last = list[list.length - 1];
      if (!last) return this.stop('not-http', 'a continuation line without a field before it');
      last[1] = `${last[1]} ${decodeValue(src, start, end).trim()}`.trim();
      return;
    }
    let colon = start;
    while (colon < end && TOKEN_BYTE[src[colon]!] === 1) colon++;
    if (colon === start || colon === end || src[colon] !== 58 /* : */) {
      return this.stop('not-http', `an invalid header line: ${JSON.stringify(src.toString('latin1', start, Math.min(end, start + 80)))}`);
    }
    let from = colon + 1;
    let to = end;
    while (from < to && (src[from] === 32 || src[from] === 9)) from++;
    while (to > from && (src[to - 1] === 32 || src[to - 1] === 9)) to--;
    list.push([src.toString('latin1', start, colon), decodeValue(src, from, to)]);
  }

  /** RFC 9112 6.3: how the body of this message is delimited. */
  private frameBody(msg: HttpMessage): void {
    if (msg.kind === 'response') {
      if (msg.status >= 200) this.finalResponses++;
      const method = msg.status >= 200 ? this.options.requestMethod?.(this.finalResponses - 1) : undefined;
      if (msg.status < 200 || msg.status === 204 || msg.status === 304 || method === 'HEAD') return this.complete();
      if (method === 'CONNECT' && msg.status < 300) return this.complete();
    }
    const te = headerValue(msg.headers, 'transfer-encoding');
    if (te !== undefined) {
      const codings = te.split(',').map((c) => c.trim().toLowerCase());
      if (codings[codings.length - 1] === 'chunked') return void (this.phase = Phase.ChunkSize);
      if (msg.kind === 'request') {
        return this.stop('not-http', `a request with Transfer-Encoding ${JSON.stringify(te)} has no determinable length (chunked must be the last coding)`);
      }
      return this.untilClose();
    }
    const cl = headerValue(msg.headers, 'content-length');
    if (cl !== undefined) {
      const n = contentLength(cl);
      if (n === undefined) {
        const values = new Set(cl.split(',').map((v) => v.trim()));
        const what = values.size > 1 ? 'conflicting Content-Length values' : 'an invalid Content-Length';
        return this.stop('not-http', `${what} ${JSON.stringify(cl)} (valid: one decimal length)`);
      }
      if (n === 0) return this.complete();
      this.remaining = n;
      this.phase = Phase.Length;
      this.body.reserve(n);
      return;
    }
    if (msg.kind === 'request') return this.complete();
    this.untilClose();
  }

  private untilClose(): void {
    this.phase = Phase.UntilClose;
  }

  private chunkSizeLine(text: string): void {
    const m = /^([0-9a-fA-F]{1,13})(?:[ \t]*;.*)?$/.exec(text);
    if (!m) return this.stop('not-http', `an invalid chunk size line: ${JSON.stringify(text.slice(0, 40))}`);
    const size = parseInt(m[1]!, 16);
    if (size === 0) {
      this.phase = Phase.Trailers;
      return;
    }
    this.remaining = size;
    this.phase = Phase.ChunkData;
  }

  private trailerLine(src: Buffer, start: number, end: number): void {
    if (end === start) return this.complete();
    this.field(this.msg!.trailers, src, start, end);
  }

  private complete(): void {
    const msg = this.msg!;
    msg.body = this.body.bytes();
    msg.bodyLength = this.body.total;
    msg.bodyTruncated = this.body.total > msg.body.length;
    if (msg.bodyTruncated) msg.bodySha256 = this.body.sha256();
    msg.completedAt = this.now();
    this.msg = undefined;
    this.body.release();
    this.body = new BodySink(this.maxBody, this.options.kept, this.mode === 'request');
    this.headBytes = 0;
    this.phase = Phase.Head;
    this.handlers.onMessage(msg);
    if (this.state === 'http') this.afterMessage(msg);
  }

  /** A protocol switch ends HTTP on this connection (or pauses it until the answer is known). */
  private afterMessage(msg: HttpMessage): void {
    if (msg.kind === 'response') {
      const method = msg.status >= 200 ? this.options.requestMethod?.(this.finalResponses - 1) : undefined;
      if (msg.status === 101) this.stop('upgraded', 'the server switched protocols (101)');
      else if (method === 'CONNECT' && msg.status >= 200 && msg.status < 300) this.stop('upgraded', 'the server accepted a CONNECT tunnel');
      return;
    }
    if (msg.method === 'CONNECT' || headerValue(msg.headers, 'upgrade') !== undefined) this.state = 'held';
  }
}

const HTTP_MAX_LINE = 8192;

/** The first bytes of a connection the HTTP protocol takes: a TLS ClientHello (HTTP/1.1 or h2 inside, by ALPN) or an HTTP/1.x request line. */
export function detect(buf: Buffer, final: boolean): Verdict {
  const tls = detectTls(buf, final);
  return tls === 'no' ? detectHttp(buf, final) : tls;
}

function detectTls(buf: Buffer, final: boolean): Verdict {
  const len = tlsRecordLength(buf);
  if (len === 'no') return 'no';
  if (len === 'maybe') return final && buf.length >= 3 ? { protocol: 'tls' } : 'maybe';
  if (buf.length < len && !final) return 'maybe';
  const { sni, alpn } = clientHelloInfo(buf);
  return { protocol: 'tls', ...(sni ? { sni } : {}), ...(alpn ? { alpn } : {}) };
}

/** An HTTP/1.x request line: METHOD SP request-target SP HTTP/1.x CRLF. */
function detectHttp(buf: Buffer, final: boolean): Verdict {
  const text = buf.toString('latin1', 0, Math.min(buf.length, HTTP_MAX_LINE));
  const eol = text.indexOf('\r\n');
  if (eol >= 0) return /^[A-Z][A-Z_-]{0,23} \S+ HTTP\/1\.[01]$/.test(text.slice(0, eol)) ? { protocol: 'http' } : 'no';
  if (text.length >= HTTP_MAX_LINE) return 'no';
  if (final) return /^(GET|HEAD|POST|PUT|DELETE|OPTIONS|PATCH|TRACE|CONNECT) \S/.test(text) ? { protocol: 'http' } : 'no';
  // Still a prefix of a request line? (a method, then maybe a target, then maybe part of HTTP/1.x)
  const m = /^[A-Z][A-Z_-]{0,23}(?: \S*(?: (.*))?)?$/.exec(text);
  if (!m) return 'no';
  const version = m[1];
  return version === undefined || 'HTTP/1.1'.startsWith(version) || 'HTTP/1.0'.startsWith(version) ? 'maybe' : 'no';
}
