import type { Readable } from 'node:stream';
import { MAX_RECORD } from './client-hello.js';
import { peekUntil } from './peek.js';
import { PROTOCOLS } from '../protocols.js';

/**
 * Protocol detection from a connection's first bytes, which stay in the stream for its handler.
 * Each protocol knows its own first bytes (its `detect`, in protocols.ts); this asks them all.
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
const GENERIC: SniffResult = { protocol: 'generic' };

/**
 * Classifies a connection by its first bytes without consuming them. `final` says no more bytes
 * will come (EOF, timeout, limit): then a plausible prefix is accepted as its best guess.
 */
export function detectProtocol(buf: Buffer, final: boolean): SniffResult | undefined {
  if (buf.length === 0) return final ? GENERIC : undefined;
  let waiting = false;
  // Their definite answers never overlap (each wants its own first byte), so their order does not matter.
  for (const { detect } of PROTOCOLS) {
    const verdict = detect?.(buf, final) ?? 'no';
    if (verdict === 'maybe') waiting = true;
    else if (verdict !== 'no') return verdict;
  }
  return waiting && !final ? undefined : GENERIC;
}

/**
 * Waits for a connection's first bytes and classifies them; the bytes stay readable. A client that
 * sends nothing for `idleMs` is `generic` (it waits for the server to speak); a first message that
 * is still incomplete after `maxWaitMs` gets the best guess from what did arrive.
 */
export async function sniff(stream: Readable, { idleMs = 150, maxWaitMs = 1000 }: SniffOptions = {}): Promise<SniffResult> {
  const firstBytes = () =>
    peekUntil(stream, (buf, event) => (buf.length > 0 ? true : event === 'data' ? undefined : false), {
      timeoutMs: idleMs,
      maxBytes: SNIFF_MAX_BYTES,
    });
  const started = performance.now();
  let spoke = await firstBytes();
  // A loop held past the wait fires its timer before reading what the client already sent: once the
  // wait ran well over its time, the client gets one more (1,000 connections opened at once were
  // taken for server-first protocols and recorded as Generic; attack 18q).
  if (!spoke && performance.now() - started > 2 * idleMs) spoke = await firstBytes();
  if (!spoke) return GENERIC;
  return peekUntil(stream, (buf, event) => detectProtocol(buf, event !== 'data'), {
    timeoutMs: maxWaitMs,
    maxBytes: SNIFF_MAX_BYTES,
  });
}
