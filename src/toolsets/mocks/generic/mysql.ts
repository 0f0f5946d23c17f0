/**
 * MySQL/MariaDB authentication, redacted before it is written: the HandshakeResponse41's auth
 * response (a password scramble, or the password itself with mysql_clear_password) and every
 * later authentication packet's payload are overwritten with zeros, lengths kept. Replay matches
 * authentication packets by sequence id whatever their bytes, so nothing is lost.
 */

const CLIENT_SECURE_CONNECTION = 0x8000;
const CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA = 0x00200000;

/** A whole packet with sequence id `seq` != 0 (authentication, not a command), else undefined. */
export function mysqlAuthSeq(b: Buffer): number | undefined {
  if (b.length < 4 || b[3] === 0) return undefined;
  return b.readUIntLE(0, 3) + 4 === b.length ? b[3] : undefined;
}

/** The packet with its secrets zeroed (a copy), or the packet itself when it holds none. */
export function redactMysqlAuth(packet: Buffer): Buffer {
  const seq = mysqlAuthSeq(packet);
  if (seq === undefined) return packet;
  const out = Buffer.from(packet);
  const payload = out.subarray(4);
  // SSLRequest (32 bytes) carries no secret.
  if (seq === 1 && payload.length === 32) return packet;
  if (seq === 1 && payload.length > 32) {
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
  // AuthSwitchResponse and later authentication data: all of it is secret.
  payload.fill(0);
  return out;
}
