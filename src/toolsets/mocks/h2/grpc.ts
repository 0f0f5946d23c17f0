/** gRPC's wire format inside HTTP/2 streams: length-prefixed messages, and the status a call ends with. */

export interface GrpcMessage {
  /** The compression flag is 1. */
  compressed: boolean;
  /**
   * The compression flag byte when it is neither 0 nor 1 (`compressed` is false then): gRPC
   * allows only 0 and 1, and a server answers any other with INTERNAL. Kept so a recording and a
   * replay send the byte that was sent, and a match compares the byte (see flagByte).
   */
  flag?: number;
  data: Uint8Array;
  /**
   * A message the stream ended inside: the length its prefix says, and how many bytes of it came,
   * its 5-byte prefix included (`came` under 5: the prefix itself was cut, the bytes of it that did
   * not come are 0 here). `data` holds the bytes that came after the prefix; framed, it is those
   * bytes again (frameMessages).
   */
  truncated?: { length: number; came: number };
  /**
   * A response message of a stream: how many request messages had arrived when it came, so a
   * replay answers it as soon as those have arrived (a bidirectional ping-pong works); undefined
   * when it came after the client ended its side (then it waits for that end).
   */
  afterRequests?: number;
}

export type HeaderMap = Record<string, string>;

export function isGrpc(headers: Record<string, unknown>): boolean {
  const type = headers['content-type'];
  return typeof type === 'string' && /^application\/grpc(\+|;|$)/i.test(type);
}

/** The compression flag byte of a message: its `flag`, else 1 when compressed, else 0. */
export const flagByte = (m: GrpcMessage): number => m.flag ?? (m.compressed ? 1 : 0);

/** The message of a frame: its flag byte as sent (`flag` when it is neither 0 nor 1). */
function message(flag: number, data: Uint8Array): GrpcMessage {
  return flag > 1 ? { compressed: false, flag, data } : { compressed: flag === 1, data };
}

/** Bytes the stream ended with inside a message (`rest` is not empty): that message, marked truncated. */
function truncatedMessage(rest: Buffer): GrpcMessage {
  const head = Buffer.alloc(5);
  rest.copy(head, 0, 0, 5);
  const length = head.readUInt32BE(1);
  return { ...message(head[0]!, new Uint8Array(rest.subarray(Math.min(5, rest.length)))), truncated: { length, came: rest.length } };
}

/**
 * Splits a gRPC body into its length-prefixed messages; bytes of a message the body ends inside
 * are kept as a last message marked `truncated` (framed again, it is the same bytes).
 */
export function splitMessages(body: Uint8Array): GrpcMessage[] {
  const buf = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const out: GrpcMessage[] = [];
  let at = 0;
  while (at + 5 <= buf.length) {
    const end = at + 5 + buf.readUInt32BE(at + 1);
    if (end > buf.length) break;
    out.push(message(buf[at]!, new Uint8Array(buf.subarray(at + 5, end))));
    at = end;
  }
  if (at < buf.length) out.push(truncatedMessage(Buffer.from(buf.subarray(at))));
  return out;
}

/**
 * Splits a gRPC body into messages as it arrives, chunk by chunk. Chunks are joined only once the
 * message at the front is whole (no copy of a growing buffer per DATA frame).
 */
export class MessageReader {
  private chunks: Buffer[] = [];
  private total = 0;

  /** The messages the chunk completes. */
  push(chunk: Uint8Array): GrpcMessage[] {
    if (chunk.byteLength > 0) {
      this.chunks.push(Buffer.from(chunk)); // a copy: the caller may reuse its buffer
      this.total += chunk.byteLength;
    }
    const out: GrpcMessage[] = [];
    while (this.total >= 5) {
      const end = 5 + this.front(5).readUInt32BE(1);
      if (this.total < end) break;
      const buf = this.front(end);
      out.push(message(buf[0]!, new Uint8Array(buf.subarray(5, end))));
      if (buf.length === end) this.chunks.shift();
      else this.chunks[0] = buf.subarray(end);
      this.total -= end;
    }
    return out;
  }

  /** The first chunk, holding at least n bytes (the chunks are joined when it is shorter). */
  private front(n: number): Buffer {
    if (this.chunks[0]!.length < n) this.chunks = [Buffer.concat(this.chunks, this.total)];
    return this.chunks[0]!;
  }

  /** Bytes of a message not complete yet. */
  get pending(): number {
    return this.total;
  }

  /** The length the prefix of the message not complete yet declares, once its 5 bytes came; else 0. */
  get declared(): number {
    return this.total >= 5 ? this.front(5).readUInt32BE(1) : 0;
  }

  /** The message not complete yet, as far as it came (marked `truncated`); undefined when no byte of one is pending. */
  tail(): GrpcMessage | undefined {
    return this.total > 0 ? truncatedMessage(Buffer.concat(this.chunks, this.total)) : undefined;
  }
}

/** The messages as sent: each its flag byte, its length and its data; a truncated one as far as it came. */
export function frameMessages(messages: readonly GrpcMessage[]): Buffer {
  return Buffer.concat(
    messages.map((m) => {
      const head = Buffer.alloc(5);
      head[0] = flagByte(m);
      head.writeUInt32BE(m.truncated?.length ?? m.data.byteLength, 1);
      const framed = Buffer.concat([head, Buffer.from(m.data)]);
      return m.truncated ? framed.subarray(0, m.truncated.came) : framed;
    }),
  );
}

/** grpc-message is percent-encoded: everything outside printable ASCII, and `%`. */
export function encodeGrpcMessage(text: string): string {
  return Array.from(Buffer.from(text, 'utf8'))
    .map((b) => (b >= 0x20 && b <= 0x7e && b !== 0x25 ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`))
    .join('');
}

export const GrpcStatus = { RESOURCE_EXHAUSTED: 8, UNIMPLEMENTED: 12, INTERNAL: 13, UNAVAILABLE: 14 } as const;
