import { describe, expect, it } from 'vitest';
import { mysqlAuthSeq, redactMysqlAuth, redactMysqlRequest } from './wire.js';

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
    for (const [flags, lenenc] of [
      [0x00200000 | 0x8000 | 0x0200, true],
      [0x8000 | 0x0200, false],
    ] as const) {
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
    expect(
      redactMysqlAuth(switchResponse)
        .subarray(4)
        .every((b) => b === 0),
    ).toBe(true);
    const query = packet(0, Buffer.from('\x03SELECT 1'));
    expect(redactMysqlAuth(query)).toBe(query);
    expect(mysqlAuthSeq(query)).toBeUndefined();
    const ssl = packet(1, Buffer.alloc(32, 1));
    expect(redactMysqlAuth(ssl)).toBe(ssl);
    // caching_sha2_password's public key request is one byte, 2: no secret.
    const keyRequest = packet(3, Buffer.from([2]));
    expect(redactMysqlAuth(keyRequest)).toBe(keyRequest);
  });

  it('zeroes the auth response of a COM_CHANGE_USER (a login sent as a command)', () => {
    const secret = Buffer.from('my-clear-password');
    const change = packet(
      0,
      Buffer.concat([Buffer.from([0x11]), Buffer.from('admin\0'), Buffer.from([secret.length]), secret, Buffer.from('shop\0'), Buffer.from([45, 0]), Buffer.from('mysql_clear_password\0')]),
    );
    const r = redactMysqlRequest(change);
    expect(r.length).toBe(change.length);
    expect(r.includes(secret)).toBe(false);
    expect(r.toString('latin1')).toContain('admin\0\x11' + '\0'.repeat(secret.length) + 'shop\0');
    // A length byte that overruns the packet: everything after the user is zeroed.
    const odd = packet(0, Buffer.concat([Buffer.from([0x11]), Buffer.from('admin\0'), Buffer.from([200]), secret]));
    expect(redactMysqlRequest(odd).includes(secret)).toBe(false);
    const query = packet(0, Buffer.from('\x03SELECT 1'));
    expect(redactMysqlRequest(query)).toBe(query);
  });

  it('fails closed on a connection-phase exchange cut inside a packet (the recording limit)', () => {
    const secret = Buffer.alloc(20, 0xab);
    const login = handshakeResponse(0x8000 | 0x0200, secret, false);
    const later = packet(3, Buffer.from('cleartext-password\0'));
    const cut = Buffer.concat([login, later.subarray(0, 12)]);
    const r = redactMysqlRequest(cut);
    expect(r.length).toBe(cut.length);
    expect(r.includes(secret)).toBe(false);
    expect(r.includes(Buffer.from('cleartext'))).toBe(false);
  });
});
