/**
 * The few facts the proxy needs from a TLS ClientHello, read with bounds checks on every field so
 * a truncated or hostile record can only yield "unknown", never an exception or an overread.
 */

const RECORD_HANDSHAKE = 0x16;
const HANDSHAKE_CLIENT_HELLO = 0x01;
const EXT_SERVER_NAME = 0x0000;
const EXT_ALPN = 0x0010;
const NAME_TYPE_HOST = 0x00;
/** A TLS record holds at most 2^14 bytes of plaintext (RFC 8446 5.1); more is not a ClientHello. */
export const MAX_RECORD = 5 + 16_384 + 256;

/** 'no': not a TLS handshake record; 'maybe': too few bytes to say; otherwise the record's total length. */
export function tlsRecordLength(buf: Buffer): 'no' | 'maybe' | number {
  if (buf.length >= 1 && buf[0] !== RECORD_HANDSHAKE) return 'no';
  if (buf.length >= 2 && buf[1] !== 0x03) return 'no';
  // 0x0300 (SSL 3.0) .. 0x0304; a ClientHello record says 0x0301 even for TLS 1.3.
  if (buf.length >= 3 && buf[2]! > 0x04) return 'no';
  if (buf.length < 5) return 'maybe';
  const len = buf.readUInt16BE(3);
  if (len === 0 || 5 + len > MAX_RECORD) return 'no';
  if (buf.length >= 6 && buf[5] !== HANDSHAKE_CLIENT_HELLO) return 'no';
  return 5 + len;
}

class OutOfBounds extends Error {}

/** A cursor over [pos, end) that refuses to read past `end`. */
class Cursor {
  constructor(
    private readonly buf: Buffer,
    public pos: number,
    private readonly end: number,
  ) {}
  get left(): number {
    return this.end - this.pos;
  }
  u8(): number {
    this.need(1);
    return this.buf[this.pos++]!;
  }
  u16(): number {
    this.need(2);
    const v = this.buf.readUInt16BE(this.pos);
    this.pos += 2;
    return v;
  }
  u24(): number {
    this.need(3);
    const v = this.buf.readUIntBE(this.pos, 3);
    this.pos += 3;
    return v;
  }
  skip(n: number): void {
    this.need(n);
    this.pos += n;
  }
  /** A sub-cursor over the next n bytes, clipped to what is actually there. */
  take(n: number, allowShort = false): Cursor {
    if (!allowShort) this.need(n);
    const end = Math.min(this.pos + n, this.end);
    const sub = new Cursor(this.buf, this.pos, end);
    this.pos = end;
    return sub;
  }
  string(n: number): string {
    this.need(n);
    const s = this.buf.toString('latin1', this.pos, this.pos + n);
    this.pos += n;
    return s;
  }
  private need(n: number): void {
    if (n > this.left) throw new OutOfBounds();
  }
}

/**
 * The server name (SNI) a ClientHello asks for, or undefined when there is none or the bytes at
 * hand do not reach it. Only the first record is read: real ClientHellos (even with post-quantum
 * key shares, ~1.8 KB) fit in one.
 */
export function clientHelloServerName(buf: Buffer): string | undefined {
  return clientHelloInfo(buf).sni;
}

/** The SNI and the ALPN protocols (in the client's order) of a ClientHello, as far as the bytes reach. */
export function clientHelloInfo(buf: Buffer): { sni?: string; alpn?: string[] } {
  const out: { sni?: string; alpn?: string[] } = {};
  try {
    const record = new Cursor(buf, 0, buf.length);
    if (record.u8() !== RECORD_HANDSHAKE) return out;
    record.skip(2);
    const body = record.take(record.u16(), true);
    if (body.u8() !== HANDSHAKE_CLIENT_HELLO) return out;
    const hello = body.take(body.u24(), true);
    hello.skip(2 + 32); // legacy_version, random
    hello.skip(hello.u8()); // legacy_session_id
    hello.skip(hello.u16()); // cipher_suites
    hello.skip(hello.u8()); // legacy_compression_methods
    const extensions = hello.take(hello.u16(), true);
    while (extensions.left >= 4) {
      const type = extensions.u16();
      const data = extensions.take(extensions.u16());
      if (type === EXT_SERVER_NAME) {
        const sni = serverNameFrom(data);
        if (sni) out.sni = sni;
      } else if (type === EXT_ALPN) out.alpn = alpnFrom(data);
    }
  } catch (err) {
    if (!(err instanceof OutOfBounds)) throw err;
  }
  return out;
}

/** RFC 7301: a u16-prefixed list of u8-prefixed protocol names. */
function alpnFrom(ext: Cursor): string[] {
  const list = ext.take(ext.u16());
  const names: string[] = [];
  while (list.left >= 1) names.push(list.string(list.u8()));
  return names;
}

function serverNameFrom(ext: Cursor): string | undefined {
  const list = ext.take(ext.u16());
  while (list.left >= 3) {
    const type = list.u8();
    const name = list.string(list.u16());
    if (type === NAME_TYPE_HOST) return /^[A-Za-z0-9._-]{1,255}$/.test(name) ? name.toLowerCase() : undefined;
  }
  return undefined;
}
