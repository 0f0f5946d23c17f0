/** gRPC's wire format inside HTTP/2 streams: length-prefixed messages, and the status a call ends with. */

export interface GrpcMessage {
  compressed: boolean;
  data: Uint8Array;
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

/** Splits a gRPC body into its length-prefixed messages; a truncated tail is kept as a last, partial message. */
export function splitMessages(body: Uint8Array): GrpcMessage[] {
  const buf = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const out: GrpcMessage[] = [];
  let at = 0;
  while (at + 5 <= buf.length) {
    const len = buf.readUInt32BE(at + 1);
    const end = Math.min(buf.length, at + 5 + len);
    out.push({ compressed: buf[at] === 1, data: new Uint8Array(buf.subarray(at + 5, end)) });
    at = end;
  }
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
      out.push({ compressed: buf[0] === 1, data: new Uint8Array(buf.subarray(5, end)) });
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
}

export function frameMessages(messages: readonly GrpcMessage[]): Buffer {
  return Buffer.concat(
    messages.map((m) => {
      const head = Buffer.alloc(5);
      head[0] = m.compressed ? 1 : 0;
      head.writeUInt32BE(m.data.byteLength, 1);
      return Buffer.concat([head, Buffer.from(m.data)]);
    }),
  );
}

/** grpc-message is percent-encoded: everything outside printable ASCII, and `%`. */
export function encodeGrpcMessage(text: string): string {
  return Array.from(Buffer.from(text, 'utf8'))
    .map((b) => (b >= 0x20 && b <= 0x7e && b !== 0x25 ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`))
    .join('');
}

export const GrpcStatus = { UNIMPLEMENTED: 12, UNAVAILABLE: 14 } as const;
