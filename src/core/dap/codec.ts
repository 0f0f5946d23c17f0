import type { DebugProtocol } from '@vscode/debugprotocol';
import { DebugkitError } from '../errors.js';

/**
 * DAP base protocol: an ASCII header section (`Name: value` lines, each ended by CRLF, then an
 * empty line) followed by a UTF-8 JSON body whose size in bytes is given by `Content-Length`.
 * This module turns bytes into messages and back; it keeps no maps, timers or streams.
 */

/** The header section (header lines plus the blank line) must fit in this many bytes. */
export const MAX_HEADER_BYTES = 8 * 1024;
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024;

const TERMINATOR = Buffer.from('\r\n\r\n', 'latin1');
/** How much of an offending header or body an error message quotes. */
const EXCERPT = 120;

/** The byte stream from the adapter broke the base protocol; the framing is lost for good. */
export class DapProtocolError extends DebugkitError {
  override name = 'DapProtocolError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('ENGINE_FAILED', message, options);
  }
}

export function encodeMessage(msg: DebugProtocol.ProtocolMessage): Buffer {
  const body = Buffer.from(JSON.stringify(msg), 'utf8');
  // The length counts bytes, not characters: one non-ASCII character is 2-4 bytes.
  const header = Buffer.from(`Content-Length: ${body.length}\r\n\r\n`, 'latin1');
  return Buffer.concat([header, body], header.length + body.length);
}

export interface DapDecoderOptions {
  /** Bodies larger than this are refused before any of them is buffered. */
  maxBodyBytes?: number;
}

/**
 * Incremental decoder. Chunks may split anything anywhere (headers, bodies, UTF-8 sequences);
 * bodies are copied once into a buffer of their announced size, so large messages cost O(n).
 * After an error every later `push` throws the same error: a byte stream cannot be resynchronised.
 */
export class DapDecoder {
  private readonly maxBodyBytes: number;
  /** Fixed-size scratch space for the header section; its size is the header bound. */
  private readonly header = Buffer.alloc(MAX_HEADER_BYTES);
  private headerLength = 0;
  private body: Buffer | undefined;
  private bodyFilled = 0;
  private failure: DapProtocolError | undefined;

  constructor(options: DapDecoderOptions = {}) {
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  }

  /** Feeds bytes in; returns every message they complete, in order. Throws DapProtocolError. */
  push(chunk: Buffer): DebugProtocol.ProtocolMessage[] {
    if (this.failure) throw this.failure;
    const messages: DebugProtocol.ProtocolMessage[] = [];
    try {
      let pos = 0;
      while (pos < chunk.length) {
        pos = this.body ? this.takeBody(chunk, pos, messages) : this.takeHeader(chunk, pos, messages);
      }
    } catch (err) {
      this.failure = err instanceof DapProtocolError ? err : new DapProtocolError(String(err), { cause: err });
      throw this.failure;
    }
    return messages;
  }

  /** True while part of a message has been received but not all of it. */
  get hasPartialMessage(): boolean {
    return this.body !== undefined || this.headerLength > 0;
  }

  private takeHeader(chunk: Buffer, pos: number, messages: DebugProtocol.ProtocolMessage[]): number {
    const room = MAX_HEADER_BYTES - this.headerLength;
    const copied = chunk.copy(this.header, this.headerLength, pos, pos + room);
    // The terminator may straddle the previous chunk, so look back up to 3 bytes.
    const searchFrom = Math.max(0, this.headerLength - (TERMINATOR.length - 1));
    const filled = this.headerLength + copied;
    const end = this.header.subarray(0, filled).indexOf(TERMINATOR, searchFrom);
    if (end === -1) {
      if (filled >= MAX_HEADER_BYTES) throw headerTooLarge(this.header);
      this.headerLength = filled;
      return pos + copied;
    }
    const sectionLength = end + TERMINATOR.length;
    const length = parseContentLength(this.header.toString('latin1', 0, end), this.maxBodyBytes);
    this.headerLength = 0;
    this.body = Buffer.allocUnsafe(length);
    this.bodyFilled = 0;
    // A zero-length body is complete already; it still has to be decoded (and fail as JSON).
    if (length === 0) messages.push(this.finishBody());
    return pos + (sectionLength - (filled - copied));
  }

  private takeBody(chunk: Buffer, pos: number, messages: DebugProtocol.ProtocolMessage[]): number {
    const body = this.body as Buffer;
    const copied = chunk.copy(body, this.bodyFilled, pos, pos + (body.length - this.bodyFilled));
    this.bodyFilled += copied;
    if (this.bodyFilled === body.length) messages.push(this.finishBody());
    return pos + copied;
  }

  private finishBody(): DebugProtocol.ProtocolMessage {
    const body = this.body as Buffer;
    this.body = undefined;
    this.bodyFilled = 0;
    // Decoding only the complete body means a multi-byte character split across chunks is intact.
    return decodeBody(body.toString('utf8'));
  }
}

function headerTooLarge(header: Buffer): DapProtocolError {
  return new DapProtocolError(
    `DAP header section exceeds ${MAX_HEADER_BYTES} bytes without the blank line that ends it ` +
      `(is the adapter writing something other than DAP to its output?); it starts with ${quote(header.toString('latin1', 0, EXCERPT))}`,
  );
}

/** Reads `Content-Length` from the header lines; other fields (e.g. Content-Type) are ignored. */
export function parseContentLength(section: string, maxBodyBytes: number): number {
  let length: number | undefined;
  for (const line of section.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new DapProtocolError(`malformed DAP header line ${quote(line)} (expected "Name: value")`);
    if (line.slice(0, colon).trim().toLowerCase() !== 'content-length') continue;
    const value = line.slice(colon + 1).trim();
    if (!/^\d{1,15}$/.test(value)) throw new DapProtocolError(`invalid DAP Content-Length ${quote(value)}`);
    if (length !== undefined && length !== Number(value)) {
      throw new DapProtocolError(`conflicting DAP Content-Length headers (${length} and ${value})`);
    }
    length = Number(value);
  }
  if (length === undefined) throw new DapProtocolError(`DAP header has no Content-Length: ${quote(section)}`);
  if (length > maxBodyBytes) {
    throw new DapProtocolError(`DAP message body of ${length} bytes exceeds the limit of ${maxBodyBytes} bytes`);
  }
  return length;
}

function decodeBody(text: string): DebugProtocol.ProtocolMessage {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new DapProtocolError(`DAP message body is not valid JSON (${reason}); it starts with ${quote(text)}`);
  }
  return checkShape(value, text);
}

/**
 * Checks just what the connection relies on, so a malformed message fails here, loudly, instead
 * of leaving a request waiting for a reply that can never be matched.
 */
function checkShape(value: unknown, text: string): DebugProtocol.ProtocolMessage {
  const msg = value as Record<string, unknown>;
  const fail = (what: string) => new DapProtocolError(`DAP message ${what}: ${quote(text)}`);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw fail('is not a JSON object');
  if (typeof msg.type !== 'string') throw fail('has no "type"');
  if (msg.type === 'response' && (typeof msg.request_seq !== 'number' || typeof msg.success !== 'boolean')) {
    throw fail('is a response without a numeric "request_seq" or boolean "success"');
  }
  if (msg.type === 'request' && (typeof msg.seq !== 'number' || typeof msg.command !== 'string')) {
    throw fail('is a request without a numeric "seq" or string "command"');
  }
  if (msg.type === 'event' && typeof msg.event !== 'string') throw fail('is an event without a string "event"');
  return value as DebugProtocol.ProtocolMessage;
}

function quote(text: string): string {
  return JSON.stringify(text.length > EXCERPT ? `${text.slice(0, EXCERPT)}...` : text);
}
