import type { Readable } from 'node:stream';
import { clientHelloInfo, MAX_RECORD, tlsRecordLength } from './client-hello.js';
import { peekUntil } from './peek.js';
import { CANCEL_REQUEST_CODE, GSSENC_REQUEST_CODE, MAX_STARTUP_BYTES, SSL_REQUEST_CODE } from '../postgres/protocol.js';

/**
 * Protocol detection from a connection's first bytes, which stay in the stream for its handler.
 */

/** `h2`: HTTP/2 in clear with prior knowledge (h2c), recognized by its connection preface. */
export type SniffedProtocol = 'http' | 'h2' | 'tls' | 'postgres' | 'redis' | 'generic';

export interface SniffResult {
  protocol: SniffedProtocol;
  /** TLS only: the server name the ClientHello asks for. */
  sni?: string;
  /** TLS only: the application protocols the ClientHello offers (ALPN), in its order. */
  alpn?: string[];
}

export interface SniffOptions {
  /**
   * How long a silent client may take to send its first byte before the connection counts as
   * `generic`: server-speaks-first protocols (SMTP, MySQL, FTP) send nothing until greeted.
   */
  idleMs?: number;
  /** After the first byte, how long to wait for the rest of a first message before guessing. */
  maxWaitMs?: number;
}

const SNIFF_MAX_BYTES = MAX_RECORD;
const HTTP_MAX_LINE = 8192;
const GENERIC: SniffResult = { protocol: 'generic' };

type Verdict = SniffResult | 'no' | 'maybe';

/**
 * Classifies a connection by its first bytes without consuming them. `final` says no more bytes
 * will come (EOF, timeout, limit): then a plausible prefix is accepted as its best guess.
 */
export function detectProtocol(buf: Buffer, final: boolean): SniffResult | undefined {
  if (buf.length === 0) return final ? GENERIC : undefined;
  let waiting = false;
  for (const detect of [detectTls, detectPostgres, detectH2, detectHttp, detectRedis]) {
    const verdict = detect(buf, final);
    if (verdict === 'maybe') waiting = true;
    else if (verdict !== 'no') return verdict;
  }
  return waiting && !final ? undefined : GENERIC;
}

function detectTls(buf: Buffer, final: boolean): Verdict {
  const len = tlsRecordLength(buf);
  if (len === 'no') return 'no';
  if (len === 'maybe') return final && buf.length >= 3 ? { protocol: 'tls' } : 'maybe';
  if (buf.length < len && !final) return 'maybe';
  const { sni, alpn } = clientHelloInfo(buf);
  return { protocol: 'tls', ...(sni ? { sni } : {}), ...(alpn ? { alpn } : {}) };
}

/** Every Postgres first message is int32 length + int32 code; the codes are distinctive. */
function detectPostgres(buf: Buffer): Verdict {
  // The length is below 2^24, so its first byte is 0 (in ASCII protocols it never is).
  if (buf[0] !== 0) return 'no';
  if (buf.length < 8) return 'maybe';
  const len = buf.readUInt32BE(0);
  const code = buf.readUInt32BE(4);
  if (len === 8 && (code === SSL_REQUEST_CODE || code === GSSENC_REQUEST_CODE)) return { protocol: 'postgres' };
  if (len === 16 && code === CANCEL_REQUEST_CODE) return { protocol: 'postgres' };
  // StartupMessage: protocol major version 3 (196608 = 3.0; 3.2 is 196610).
  if (code >>> 16 === 3 && len > 8 && len <= MAX_STARTUP_BYTES) return { protocol: 'postgres' };
  return 'no';
}

/** The HTTP/2 client connection preface (RFC 9113 3.4). */
export const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

function detectH2(buf: Buffer): Verdict {
  const n = Math.min(buf.length, H2_PREFACE.length);
  if (buf.compare(H2_PREFACE, 0, n, 0, n) !== 0) return 'no';
  return n === H2_PREFACE.length ? { protocol: 'h2' } : 'maybe';
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

/**
 * A Redis command as clients send it: a RESP array of bulk strings (`*2\r\n$3\r\nGET...`).
 * Inline commands (`PING\r\n`) stay generic: too much like other line protocols.
 */
function detectRedis(buf: Buffer, final: boolean): Verdict {
  if (buf[0] !== 0x2a) return 'no'; // '*'
  const text = buf.toString('latin1', 0, Math.min(buf.length, 32));
  if (/^\*[1-9]\d{0,6}\r\n\$\d{1,9}\r\n/.test(text)) return { protocol: 'redis' };
  if (final) return 'no';
  // Still a prefix of `*<n>\r\n$<len>\r\n`?
  return /^\*(\d{0,7}(\r(\n(\$(\d{0,10}\r?)?)?)?)?)?$/.test(text) ? 'maybe' : 'no';
}

/**
 * Waits for a connection's first bytes and classifies them; the bytes stay readable. A client that
 * sends nothing for `idleMs` is `generic` (it waits for the server to speak); a first message that
 * is still incomplete after `maxWaitMs` gets the best guess from what did arrive.
 */
export async function sniff(stream: Readable, { idleMs = 150, maxWaitMs = 1000 }: SniffOptions = {}): Promise<SniffResult> {
  const spoke = await peekUntil(stream, (buf, event) => (buf.length > 0 ? true : event === 'data' ? undefined : false), {
    timeoutMs: idleMs,
    maxBytes: SNIFF_MAX_BYTES,
  });
  if (!spoke) return GENERIC;
  return peekUntil(stream, (buf, event) => detectProtocol(buf, event !== 'data'), {
    timeoutMs: maxWaitMs,
    maxBytes: SNIFF_MAX_BYTES,
  });
}
