import { createHash, type Hash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { TimeSlice } from '../../../core/wait.js';
import { KeptShare, RELAYED_MAX_BYTES, type KeptBytes } from '../kept.js';
/** HTTP/1.x messages as the passive parser reports them, and helpers to read their fields. */

export type Header = [name: string, value: string];

interface MessageBase {
  /** `1.1` or `1.0`. */
  httpVersion: string;
  /** As on the wire: order and case kept, repeated names repeated. */
  headers: Header[];
  /** Chunked trailer fields (usually none). */
  trailers: Header[];
  /** The decoded payload (chunk framing removed), at most `maxBodyBytes` of it. */
  body: Buffer;
  /** The whole payload length, kept or not. */
  bodyLength: number;
  bodyTruncated: boolean;
  /** When `bodyTruncated`: the SHA-256 of the whole payload (lower-case hex), so that it can still be compared. */
  bodySha256?: string;
  /** Epoch ms of the message's first byte and of its last. */
  startedAt: number;
  completedAt: number;
}

export interface HttpRequestMessage extends MessageBase {
  kind: 'request';
  method: string;
  /** The request target as sent: `/path?query`, or absolute form. */
  target: string;
}

export interface HttpResponseMessage extends MessageBase {
  kind: 'response';
  status: number;
  reason: string;
}

export type HttpMessage = HttpRequestMessage | HttpResponseMessage;

/**
 * 'http': parsing. 'held': a request asked to switch protocols (Upgrade, CONNECT); bytes after it
 * wait (bounded) until `resume()` (the server declined) or `stop()` (it switched). 'upgraded',
 * 'not-http', 'ended': no more parsing.
 */
export type ParserState = 'http' | 'held' | 'upgraded' | 'not-http' | 'ended';

export interface HttpParserOptions {
  /** The recording's budget for bodies not finished yet (kept.ts). */
  kept?: KeptBytes;
  /** Body bytes kept per message (default 1 MiB). */
  maxBodyBytes?: number;
  /** Start line + headers (and trailers) per message (default 64 KiB). */
  maxHeadBytes?: number;
  /** Response mode: the method of the request the n-th final (non-1xx) response answers (HEAD, CONNECT matter). */
  requestMethod?: (index: number) => string | undefined;
  now?: () => number;
}

export interface HttpParserHandlers {
  /**
   * A message's head is complete (body empty so far): a request's method is known early. `at`:
   * the head's stream offsets, [start, end), from its first line (or an empty line before it) to
   * the end of the empty line closing it; a forwarder rewrites those bytes and passes the rest.
   */
  onHead?: (message: HttpMessage, at: { start: number; end: number }) => void;
  onMessage: (message: HttpMessage) => void;
  /** Parsing stopped for good: why ('not-http' / 'upgraded' / 'ended') and a reason. */
  onStop?: (state: ParserState, reason: string) => void;
}

export const DEFAULT_MAX_BODY = 1024 * 1024;
/** A miss relayed to the real server needs the whole request body to forward it: a replayer keeps this much of it (a bigger one is a miss). */
export const FALLBACK_MAX_BODY = RELAYED_MAX_BYTES;
export const DEFAULT_MAX_HEAD = 64 * 1024;

/** The values of a header (case-insensitive), joined with ", "; undefined when absent. */
export function headerValue(headers: readonly Header[], lowerName: string): string | undefined {
  let out: string | undefined;
  for (const [name, value] of headers) {
    if (name.length === lowerName.length && name.toLowerCase() === lowerName) out = out === undefined ? value : `${out}, ${value}`;
  }
  return out;
}

const SIMPLE_LENGTH = /^\d{1,15}$/;

/** A valid Content-Length: digits, or a list of identical digit strings (RFC 9110 8.6). */
export function contentLength(value: string): number | undefined {
  if (SIMPLE_LENGTH.test(value)) return Number(value);
  const parts = value.split(',').map((p) => p.trim());
  if (!parts.every((p) => p === parts[0]) || !/^\d{1,15}$/.test(parts[0]!)) return undefined;
  return Number(parts[0]);
}

/** Field values are bytes; UTF-8 when they decode as such (rare non-ASCII), else Latin-1 (lossless). */
export function decodeValue(bytes: Buffer, from: number, to: number): string {
  for (let i = from; i < to; i++) {
    if (bytes[i]! >= 0x80) {
      const utf8 = bytes.toString('utf8', from, to);
      return utf8.includes('\ufffd') ? bytes.toString('latin1', from, to) : utf8;
    }
  }
  return bytes.toString('latin1', from, to);
}

/**
 * A message body kept up to `max` bytes, beyond which it is only counted and hashed (SHA-256 of the
 * whole body, from its first byte: `sha256()`). Bytes are COPIED out of
 * the pieces fed in: a view would keep a whole network chunk alive for each tiny chunked-encoding
 * piece, and memory would no longer be bounded by `max`.
 */
export class BodySink {
  total = 0;
  private buf: Buffer | undefined;
  private kept = 0;
  private readonly share: KeptShare;
  /** Started once a byte is not kept, with the bytes kept before it. */
  private hash: Hash | undefined;
  private digest: string | undefined;

  /** `kept`: the recording's budget, charged for the buffer this body grows to (kept.ts); past it the body is kept no further, as past `max`. */
  /** `hashed`: whether a body not kept whole is hashed (a request's, which replay compares by its digest); a response's is only counted. */
  constructor(
    private max: number,
    kept?: KeptBytes,
    private readonly hashed = true,
  ) {
    this.share = new KeptShare(kept);
  }

  /** Sizes the buffer once when the length is known (capped), instead of growing it. */
  reserve(n: number): void {
    if (!this.buf) this.grow(Math.min(n, this.max));
  }

  append(src: Buffer, from: number, to: number): void {
    this.total += to - from;
    let n = Math.min(to - from, this.max - this.kept);
    if (n > 0) {
      const need = this.kept + n;
      if ((!this.buf || this.buf.length < need) && !this.grow(Math.min(this.max, Math.max(need, (this.buf?.length ?? 0) * 2, 4096)))) n = 0;
      else {
        src.copy(this.buf!, this.kept, from, from + n);
        this.kept = need;
      }
    }
    if (from + n === to || !this.hashed) return;
    if (!this.hash) {
      this.hash = createHash('sha256');
      if (this.buf) this.hash.update(this.buf.subarray(0, this.kept));
    }
    this.hash.update(src.subarray(from + n, to));
  }

  /** The SHA-256 of the whole body (lower-case hex) when some of it was not kept; undefined when all of it was (hash `bytes()`). */
  sha256(): string | undefined {
    this.digest ??= this.hash?.digest('hex');
    return this.digest;
  }

  /** A buffer of `size`, charged to the budget; false (and the body kept no further) when the budget has no room. */
  private grow(size: number): boolean {
    if (!this.share.take(size - (this.buf?.length ?? 0))) {
      this.max = this.kept;
      return false;
    }
    const grown = Buffer.allocUnsafe(size);
    if (this.buf) this.buf.copy(grown, 0, 0, this.kept);
    this.buf = grown;
    return true;
  }

  /** The body is the message's now, or dropped: the budget has its bytes back. */
  release(): void {
    this.share.release();
  }

  bytes(): Buffer {
    return this.buf ? this.buf.subarray(0, this.kept) : Buffer.alloc(0);
  }
}

/** A request body as a replayer read it: `bytes` (at most its limit), its whole `length`, and the SHA-256 of the whole when not all of it was kept. */
export interface ReadBody {
  bytes: Buffer;
  length: number;
  sha256?: string;
  /** Gives the bytes kept back to the budget (once the request is answered). */
  release(): void;
}

/**
 * The one way a replayer (HTTP/1 and HTTP/2) reads a request body: up to `limit` bytes kept, and
 * no more than the replay's budget for unfinished calls lets it keep (`kept`, shared by every
 * connection and stream: 40 HTTP/2 streams of 16 MiB each held 1.4 GB, and their close 5 s of the
 * loop, attack 18af l1-4); every byte counted and, past what is kept, hashed, so that the match
 * compares the whole body by its size and digest, never a prefix as if it were all (l1-5).
 * Rejects when the stream closes before its body ended (a reset: nothing to answer), the error saying how it was cut.
 */
/** A request body's reading works this long at most before it lets the loop serve others. */
const BODY_SLICE_MS = 5;

export function readRequestBody(stream: Readable, limit: number, kept?: KeptBytes): Promise<ReadBody> {
  return new Promise((resolve, reject) => {
    const sink = new BodySink(limit, kept);
    let settled = false;
    // Copying and hashing share the loop: past its slice (or the turn's budget) the stream waits for
    // its next share, so 40 uploads at once no longer hold other clients' answers (attack 18af l1-6).
    const slice = new TimeSlice(BODY_SLICE_MS);
    let waiting = false;
    stream.on('data', (chunk: Buffer) => {
      sink.append(chunk, 0, chunk.length);
      if (waiting || !slice.over()) return;
      waiting = true;
      stream.pause();
      void slice.next().then(() => {
        waiting = false;
        slice.restart();
        if (!settled) stream.resume();
      });
    });
    stream.once('end', () => {
      // node:http2 ends a stream's readable side when the client resets it: no body to answer.
      if ((stream as { aborted?: boolean }).aborted === true) return fail(new Error(`the request was reset after ${sink.total} bytes of its body`));
      settled = true;
      const sha256 = sink.sha256();
      resolve({ bytes: sink.bytes(), length: sink.total, ...(sha256 !== undefined ? { sha256 } : {}), release: () => sink.release() });
    });
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      sink.release();
      reject(err);
    };
    // How the request was cut, said here for every replayer: its own words, or the stream's error (a reset, node:http2 closing the connection).
    stream.once('error', (err: Error) => fail(new Error(`the request was not read whole after ${sink.total} bytes of its body: ${err.message}`)));
    stream.once('close', () => fail(new Error(`the request closed after ${sink.total} bytes of its body, before it ended`)));
  });
}
