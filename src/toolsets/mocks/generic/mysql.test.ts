import { describe, expect, it } from 'vitest';
import { mysqlAuthSeq, redactMysqlAuth } from './mysql.js';

function packet(seq: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head.writeUIntLE(payload.length, 0, 3);
  head[3] = seq;
  return Buffer.concat([head, payload]);
}

function handshakeResponse(flags: number, auth: Buffer, lenenc: boolean): Buffer {
  const fixed = Buffer.alloc(32);
  fixed.writeUInt32LE(flags, 0);
  fixed.writeUInt32LE(1 << 24, 4);
  fixed[8] = 45;
  const authField = lenenc ? Buffer.concat([Buffer.from([auth.length]), auth]) : Buffer.concat([Buffer.from([auth.length]), auth]);
  return packet(1, Buffer.concat([fixed, Buffer.from('app\0'), authField, Buffer.from('shop\0mysql_native_password\0')]));
}

describe('MySQL authentication redaction', () => {
  it('zeroes the auth response of a HandshakeResponse41 and nothing else', () => {
    const secret = Buffer.alloc(20, 0xab);
    for (const [flags, lenenc] of [[0x00200000 | 0x8000 | 0x0200, true], [0x8000 | 0x0200, false]] as const) {
      const p = handshakeResponse(flags, secret, lenenc);
      const r = redactMysqlAuth(p);
      expect(r.length).toBe(p.length);
      expect(r.includes(secret)).toBe(false);
      expect(r.toString('latin1')).toContain('app\0\x14' + '\0'.repeat(20) + 'shop\0mysql_native_password\0');
      expect(p.includes(secret)).toBe(true); // the original is untouched
    }
  });

  it('zeroes later authentication packets whole, and leaves commands and SSLRequest alone', () => {
    const switchResponse = packet(3, Buffer.from('cleartext-password\0'));
    expect(redactMysqlAuth(switchResponse).subarray(4).every((b) => b === 0)).toBe(true);
    const query = packet(0, Buffer.from('\x03SELECT 1'));
    expect(redactMysqlAuth(query)).toBe(query);
    expect(mysqlAuthSeq(query)).toBeUndefined();
    const ssl = packet(1, Buffer.alloc(32, 1));
    expect(redactMysqlAuth(ssl)).toBe(ssl);
    // caching_sha2_password's public key request is one byte, 2: no secret.
    const keyRequest = packet(3, Buffer.from([2]));
    expect(redactMysqlAuth(keyRequest)).toBe(keyRequest);
  });
});
