/**
 * The MySQL/MariaDB wire format as the byte recorder and replayer (generic/) need it: packets and
 * sequence ids, the SSLRequest and the greeting's TLS flag, length-encoded integers, the
 * greeting, commands and ERR packets for messages.
 *
 * MySQL/MariaDB authentication, redacted before it is written: the HandshakeResponse41's auth
 * response (a password scramble, or the password itself with mysql_clear_password) and every
 * later authentication packet's payload are overwritten with zeros, lengths kept. Replay matches
 * authentication packets by sequence id whatever their bytes, so nothing is lost.
 */

const CLIENT_SECURE_CONNECTION = 0x8000;
const COM_CHANGE_USER = 0x11;

/**
 * COM_CHANGE_USER (a command, sequence 0) carries a login: command byte, user NUL, then the auth
 * response (a length byte and the data, as every client since 4.1 sends it). The auth response is
 * zeroed; when the length byte does not fit the packet, everything after the user is. A copy.
 */
function redactChangeUser(bytes: Buffer): Buffer {
  const out = Buffer.from(bytes);
  const end = Math.min(out.length, 4 + out.readUIntLE(0, 3));
  const userEnd = out.indexOf(0, 5);
  if (userEnd < 0 || userEnd + 1 >= end) {
    out.fill(0, 5, end);
    return out;
  }
  const len = out[userEnd + 1]!;
  if (userEnd + 2 + len > end) out.fill(0, userEnd + 1, end);
  else out.fill(0, userEnd + 2, userEnd + 2 + len);
  return out;
}
const CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA = 0x00200000;

/** A whole packet with sequence id `seq` != 0 (authentication, not a command), else undefined. */
export function mysqlAuthSeq(b: Buffer): number | undefined {
  if (b.length < 4 || b[3] === 0) return undefined;
  return b.readUIntLE(0, 3) + 4 === b.length ? b[3] : undefined;
}

/**
 * The packet with its secrets zeroed (a copy), or the packet itself when it holds none.
 * `afterSslRequest`: the packet follows an SSLRequest, so sequence 2 is the HandshakeResponse41.
 */
export function redactMysqlAuth(packet: Buffer, afterSslRequest = false): Buffer {
  const seq = mysqlAuthSeq(packet);
  if (seq === undefined) return packet;
  const out = Buffer.from(packet);
  const payload = out.subarray(4);
  // SSLRequest (32 bytes) carries no secret.
  if (seq === 1 && payload.length === 32) return packet;
  if ((seq === 1 || (seq === 2 && afterSslRequest)) && payload.length > 32) {
    // HandshakeResponse41: flags(4) max-packet(4) charset(1) filler(23) user NUL, then the auth response.
    const flags = payload.readUInt32LE(0);
    const userEnd = payload.indexOf(0, 32);
    if (userEnd < 0) return packet;
    let pos = userEnd + 1;
    let len: number;
    if (flags & CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA) {
      const first = payload[pos];
      if (first === undefined) return packet;
      if (first < 0xfb) [len, pos] = [first, pos + 1];
      else if (first === 0xfc) [len, pos] = [payload.readUInt16LE(pos + 1), pos + 3];
      else if (first === 0xfd) [len, pos] = [payload.readUIntLE(pos + 1, 3), pos + 4];
      else return packet;
    } else if (flags & CLIENT_SECURE_CONNECTION) {
      len = payload[pos] ?? 0;
      pos += 1;
    } else {
      const end = payload.indexOf(0, pos);
      len = (end < 0 ? payload.length : end) - pos;
    }
    payload.fill(0, pos, Math.min(payload.length, pos + len));
    return out;
  }
  // caching_sha2_password's request for the server's public key (one byte, 2) holds no secret.
  if (payload.length === 1 && payload[0] === 0x02) return packet;
  // AuthSwitchResponse and later authentication data: all of it is secret.
  payload.fill(0);
  return out;
}

/**
 * The client's bytes of an exchange with every secret zeroed: each packet of a connection-phase
 * exchange (a TLS connection phase records the SSLRequest and the HandshakeResponse41 in one
 * exchange), and the auth response of a COM_CHANGE_USER. Bytes that do not end in a whole packet
 * (an exchange cut at the recording limit) fail closed: the partial packet's payload is zeroed.
 * Other commands (sequence 0) hold no secret and are returned as they are.
 */
export function redactMysqlRequest(bytes: Buffer): Buffer {
  if (bytes.length < 4) return bytes;
  if (bytes[3] === 0) return bytes[4] === COM_CHANGE_USER ? redactChangeUser(bytes) : bytes;
  const packets: Buffer[] = [];
  let afterSslRequest = false;
  for (let pos = 0; pos < bytes.length;) {
    const end = bytes.length - pos < 4 ? bytes.length + 1 : pos + 4 + bytes.readUIntLE(pos, 3);
    if (end > bytes.length) {
      const partial = Buffer.from(bytes.subarray(pos));
      partial.fill(0, Math.min(4, partial.length));
      packets.push(partial);
      break;
    }
    const packet = bytes.subarray(pos, end);
    packets.push(redactMysqlAuth(packet, afterSslRequest));
    afterSslRequest = startsWithSslRequest(packet);
    pos = end;
  }
  return packets.length === 1 ? packets[0]! : Buffer.concat(packets);
}

/**
 * MySQL over TLS: a client that wants TLS answers a greeting offering CLIENT_SSL with an
 * SSLRequest (sequence 1, the 32 fixed bytes of a HandshakeResponse41 with CLIENT_SSL set), then
 * starts the TLS handshake straight away (no answer comes) and sends its HandshakeResponse41
 * (sequence 2) inside TLS.
 */
export const CLIENT_SSL = 0x0800;
export const SSL_REQUEST_LENGTH = 4 + 32;

/** `bytes` begin with an SSLRequest packet. */
export function startsWithSslRequest(bytes: Buffer): boolean {
  return bytes.length >= SSL_REQUEST_LENGTH && bytes.readUIntLE(0, 3) === 32 && bytes[3] === 1 && (bytes.readUInt32LE(4) & CLIENT_SSL) !== 0;
}

/**
 * The client's first packet after the greeting, seen so far in `bytes`: `more` while it is not
 * whole, `tls` with the SSLRequest and the bytes after it (the start of the ClientHello when both
 * came in one chunk, which go to TLS, not to the server in clear), or `plain` when it is anything
 * else (a HandshakeResponse41: the connection stays in clear).
 */
export function splitSslRequest(bytes: Buffer): { kind: 'more' } | { kind: 'plain' } | { kind: 'tls'; request: Buffer; rest: Buffer } {
  if (bytes.length < 4) return { kind: 'more' };
  if (bytes[3] !== 1 || bytes.readUIntLE(0, 3) !== 32) return { kind: 'plain' };
  if (bytes.length < SSL_REQUEST_LENGTH) return { kind: 'more' };
  if (!startsWithSslRequest(bytes)) return { kind: 'plain' };
  return { kind: 'tls', request: bytes.subarray(0, SSL_REQUEST_LENGTH), rest: bytes.subarray(SSL_REQUEST_LENGTH) };
}

/** A copy of whole packets with every sequence id moved by `delta` (`bytes` itself when 0 or not whole packets). */
export function shiftSequenceIds(bytes: Buffer, delta: number): Buffer {
  if (delta === 0) return bytes;
  const out = Buffer.from(bytes);
  for (let pos = 0; pos < out.length;) {
    if (out.length - pos < 4) return bytes;
    out[pos + 3] = (out[pos + 3]! + delta) & 0xff;
    pos += 4 + out.readUIntLE(pos, 3);
  }
  return out;
}

/** Where the low two bytes of a greeting's capability flags are, or undefined when `greeting` is not one whole greeting packet. */
function greetingFlagsAt(greeting: Buffer): number | undefined {
  if (greeting.length < 6 || greeting[3] !== 0 || greeting[4] !== 0x0a || greeting.readUIntLE(0, 3) + 4 !== greeting.length) return undefined;
  const end = greeting.indexOf(0, 5);
  // version NUL, connection id (4), scramble part 1 (8), filler (1), then the flags.
  const at = end + 1 + 4 + 8 + 1;
  return end > 0 && at + 2 <= greeting.length ? at : undefined;
}

/** The greeting offers TLS (CLIENT_SSL). */
export function greetingOffersTls(greeting: Buffer): boolean {
  const at = greetingFlagsAt(greeting);
  return at !== undefined && (greeting.readUInt16LE(at) & CLIENT_SSL) !== 0;
}

/** A copy of the greeting without CLIENT_SSL (the greeting itself when it has none). */
export function greetingWithoutTls(greeting: Buffer): Buffer {
  const at = greetingFlagsAt(greeting);
  if (at === undefined || (greeting.readUInt16LE(at) & CLIENT_SSL) === 0) return greeting;
  const out = Buffer.from(greeting);
  out.writeUInt16LE(out.readUInt16LE(at) & ~CLIENT_SSL, at);
  return out;
}

/**
 * Replay to a client other than the recorded one. Two of the client's capabilities change the
 * bytes of an exchange, and the replayer adapts them per connection:
 * - CLIENT_QUERY_ATTRIBUTES: a COM_QUERY starts with a parameter count and a parameter set count
 *   (`00 01` when there are no attributes). Requests are compared without that empty prefix, so
 *   a query recorded from Connector/J or mysql2 (which send it to MySQL 8) answers PyMySQL.
 * - CLIENT_DEPRECATE_EOF: result sets and COM_STMT_PREPARE_OK answers end their definition blocks
 *   with an EOF packet or not, and end rows with an EOF or an OK packet (0xFE). The recorded
 *   answer is rewritten to the framing the connecting client asked for, sequence ids renumbered.
 */

const CLIENT_DEPRECATE_EOF = 0x01000000;
const SERVER_MORE_RESULTS_EXISTS = 0x0008;

/** The capability flags of the HandshakeResponse41 or SSLRequest (sequence 1) whole at the start of `bytes`, else undefined. */
export function mysqlClientFlags(bytes: Buffer): number | undefined {
  const length = firstPacketLength(bytes);
  return length !== undefined && length >= 4 + 32 && bytes[3] === 1 ? bytes.readUInt32LE(4) : undefined;
}

/** The length of the whole packet at the start of `bytes`, or undefined when it is not all there. */
function firstPacketLength(bytes: Buffer): number | undefined {
  if (bytes.length < 4) return undefined;
  const length = bytes.readUIntLE(0, 3) + 4;
  return bytes.length >= length ? length : undefined;
}

/**
 * `bytes` with the COM_QUERY at its start (sequence 0) without an empty query-attributes prefix
 * (`00 01`); `bytes` itself when there is none.
 */
export function withoutQueryAttributes(bytes: Buffer): Buffer {
  const length = firstPacketLength(bytes);
  if (length === undefined || length < 7 || bytes[3] !== 0 || bytes[4] !== 0x03 || bytes[5] !== 0x00 || bytes[6] !== 0x01) return bytes;
  const head = Buffer.alloc(5);
  head.writeUIntLE(length - 6, 0, 3);
  head[3] = 0;
  head[4] = 0x03;
  return Buffer.concat([head, bytes.subarray(7)]);
}

/** One MySQL packet: its sequence id and payload. */
export interface MysqlPacket {
  seq: number;
  payload: Buffer;
}

/** Splits bytes into whole packets; undefined when they do not split exactly. */
export function splitPackets(bytes: Buffer): MysqlPacket[] | undefined {
  const out: MysqlPacket[] = [];
  let pos = 0;
  while (pos < bytes.length) {
    if (bytes.length - pos < 4) return undefined;
    const len = bytes.readUIntLE(pos, 3);
    if (pos + 4 + len > bytes.length) return undefined;
    out.push({ seq: bytes[pos + 3]!, payload: bytes.subarray(pos + 4, pos + 4 + len) });
    pos += 4 + len;
  }
  return out;
}

/** A whole packet: 3-byte length, sequence id, payload. */
export function packetOf(seq: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head.writeUIntLE(payload.length, 0, 3);
  head[3] = seq & 0xff;
  return Buffer.concat([head, payload]);
}

/** A length-encoded integer at `pos` and the position after it; undefined when it is NULL, an error marker, cut short or not a safe integer. */
export function lenencAt(b: Buffer, pos: number): [number, number] | undefined {
  const f = b[pos];
  if (f === undefined || f === 0xfb || f === 0xff) return undefined;
  if (f < 0xfb) return [f, pos + 1];
  const size = f === 0xfc ? 2 : f === 0xfd ? 3 : 8;
  if (pos + 1 + size > b.length) return undefined;
  const v = size === 8 ? Number(b.readBigUInt64LE(pos + 1)) : b.readUIntLE(pos + 1, size);
  return Number.isSafeInteger(v) ? [v, pos + 1 + size] : undefined;
}

/** Status flags and warnings of an EOF packet (5 bytes) or an OK packet. */
function statusOf(p: Buffer): { status: number; warnings: number } | undefined {
  if (p.length < 7) return p.length >= 5 ? { warnings: p.readUInt16LE(1), status: p.readUInt16LE(3) } : undefined;
  const a = lenencAt(p, 1);
  const l = a && lenencAt(p, a[1]);
  if (!l || l[1] + 4 > p.length) return undefined;
  return { status: p.readUInt16LE(l[1]), warnings: p.readUInt16LE(l[1] + 2) };
}

const eofPacket = (s: { status: number; warnings: number }) => Buffer.from([0xfe, s.warnings & 0xff, s.warnings >> 8, s.status & 0xff, s.status >> 8]);
const okEofPacket = (s: { status: number; warnings: number }) => Buffer.from([0xfe, 0, 0, s.status & 0xff, s.status >> 8, s.warnings & 0xff, s.warnings >> 8]);
const isEof = (p: Buffer | undefined) => p !== undefined && p[0] === 0xfe && p.length < 7;

/**
 * The answer to `request` (whole packets) in the framing a client with capability flags `flags`
 * expects; `response` itself when it needs no change or is not a result set or prepare answer
 * this function understands.
 */
export function mysqlFramingFor(request: Buffer, response: Buffer, flags: number): Buffer {
  const command = request[4];
  if (request[3] !== 0 || (command !== 0x03 && command !== 0x17 && command !== 0x16)) return response;
  const split = splitPackets(response);
  // Whole packets, none split over several (a 16 MiB payload continues in the next packet).
  const parsed = split && split.length > 0 && split.every((p) => p.payload.length !== 0xffffff) ? { seq: split[0]!.seq, payloads: split.map((p) => p.payload) } : undefined;
  if (!parsed) return response;
  const want = (flags & CLIENT_DEPRECATE_EOF) !== 0;
  const { payloads } = parsed;
  const out: Buffer[] = [];
  let i = 0;
  /** Copies `n` definitions and the EOF after them (or not), as the client wants; false when malformed. */
  const block = (n: number, status: { status: number; warnings: number }): boolean => {
    if (n === 0) return true;
    if (i + n > payloads.length) return false;
    out.push(...payloads.slice(i, i + n));
    i += n;
    const has = isEof(payloads[i]);
    if (has) i++;
    if (!want) out.push(has ? payloads[i - 1]! : eofPacket({ ...status, warnings: 0 }));
    return true;
  };
  if (command === 0x16) {
    const ok = payloads[0]!;
    if (ok[0] !== 0x00 || ok.length < 12) return response;
    out.push(ok);
    i = 1;
    const fallback = { status: 2, warnings: 0 };
    if (!block(ok.readUInt16LE(7), fallback) || !block(ok.readUInt16LE(5), fallback) || i !== payloads.length) return response;
  } else {
    // One result after another while the server says more exist.
    for (;;) {
      const first = payloads[i];
      if (!first) return response;
      if (first[0] === 0xff || first[0] === 0x00) {
        out.push(first);
        i++;
        const s = first[0] === 0x00 ? statusOf(first) : undefined;
        if (s && s.status & SERVER_MORE_RESULTS_EXISTS) continue;
        break;
      }
      const count = lenencAt(first, 0);
      if (!count || count[1] !== first.length) return response;
      // Find the terminator after the definitions and rows to learn the status for an added EOF.
      let end = i + 1 + count[0];
      if (isEof(payloads[end])) end++;
      while (end < payloads.length && !(payloads[end]![0] === 0xfe || payloads[end]![0] === 0xff)) end++;
      const last = payloads[end];
      if (!last) return response;
      const s = last[0] === 0xfe ? statusOf(last) : { status: 2, warnings: 0 };
      if (!s) return response;
      out.push(first);
      i++;
      if (!block(count[0], s)) return response;
      out.push(...payloads.slice(i, end));
      i = end + 1;
      if (last[0] === 0xff) out.push(last);
      else out.push(want ? (isEof(last) ? okEofPacket(s) : last) : isEof(last) ? last : eofPacket(s));
      if (last[0] === 0xff || !(s.status & SERVER_MORE_RESULTS_EXISTS)) break;
    }
    if (i !== payloads.length) return response;
  }
  if (out.length === payloads.length && out.every((p, k) => p === payloads[k])) return response;
  return Buffer.concat(out.map((p, k) => packetOf(parsed.seq + k, p)));
}

/** A MySQL/MariaDB server greeting: one packet, sequence 0, protocol version 10, a NUL-terminated version. */
export function isMysqlGreeting(b: Buffer): boolean {
  if (b.length < 6 || b[3] !== 0 || b[4] !== 0x0a) return false;
  const len = b.readUIntLE(0, 3);
  return len + 4 === b.length && b.indexOf(0, 5) > 5 && b.indexOf(0, 5) < 4 + len;
}

/** A MySQL command packet for messages: `COM_QUERY "SELECT ..."`, else its command byte. */
export function mysqlCommand(packet: Buffer): string {
  const code = packet[4];
  const body = packet.subarray(5);
  const text = (b: Buffer) => JSON.stringify(b.toString('utf8').slice(0, 200));
  if (code === 0x03) return `COM_QUERY ${text(body)}`;
  if (code === 0x16) return `COM_STMT_PREPARE ${text(body)}`;
  if (code === 0x17) return `COM_STMT_EXECUTE (statement ${body.length >= 4 ? body.readUInt32LE(0) : '?'}, ${body.length} bytes)`;
  if (code === 0x02) return `COM_INIT_DB ${text(body)}`;
  return `command 0x${(code ?? 0).toString(16).padStart(2, '0')} (${packet.length} bytes)`;
}

/** An ERR packet (error 1105, SQLSTATE HY000) with sequence id `seq`. */
export function mysqlError(seq: number, message: string): Buffer {
  const text = Buffer.from(message.slice(0, 1000), 'utf8');
  const payload = Buffer.concat([Buffer.from([0xff, 0x51, 0x04]), Buffer.from('#HY000', 'latin1'), text]);
  const header = Buffer.alloc(4);
  header.writeUIntLE(payload.length, 0, 3);
  header[3] = seq & 0xff;
  return Buffer.concat([header, payload]);
}

/** A whole first packet (or enough of it to know it is not a MySQL greeting). */
export const greetingRead = (b: Buffer) => {
  if (b.length < 5) return false;
  const length = b.readUIntLE(0, 3);
  // A MySQL greeting is some hundred bytes: a longer claim is another protocol's bytes, passed on at once.
  return b[3] !== 0 || b[4] !== 0x0a || length > MAX_GREETING_BYTES || b.length >= length + 4;
};
const MAX_GREETING_BYTES = 4096;

/** caching_sha2_password's request for the server's RSA key: one byte, 2, as an authentication packet. */
export const isPublicKeyRequest = (b: Buffer) => b.length >= 5 && b.readUIntLE(0, 3) === 1 && b[3] !== 0 && b[4] === 0x02;
