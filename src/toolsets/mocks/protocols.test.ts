import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serialize } from 'pg-protocol';
import { H2_PREFACE } from './h2/wire.js';
import { PROTOCOLS } from './protocols.js';
import { startFirstBytesServer, type FirstBytesServer } from './proxy/testing.js';

let capture: FirstBytesServer;
beforeAll(async () => {
  capture = await startFirstBytesServer();
});
afterAll(async () => {
  await capture.close();
});

async function clientHello(): Promise<Buffer> {
  const socket = tls.connect({ host: '127.0.0.1', port: capture.port, servername: 'api.example.test', rejectUnauthorized: false, ALPNProtocols: ['h2', 'http/1.1'] });
  socket.on('error', () => {});
  const hello = await capture.next();
  socket.destroy();
  return hello;
}

/** The definite verdicts the protocols give for `buf`, by index in PROTOCOLS. */
const definite = (buf: Buffer, final: boolean) =>
  PROTOCOLS.map((p) => p.detect?.(buf, final) ?? 'no')
    .map((v, i) => (typeof v === 'object' ? i : -1))
    .filter((i) => i >= 0);

describe('the protocol list', () => {
  it('every protocol has a recorder and a replayer; all but one (the fallback) a detect', () => {
    for (const p of PROTOCOLS) {
      expect(typeof p.recorder.accepts).toBe('function');
      expect(typeof p.recorder.record).toBe('function');
      expect(typeof p.replayer).toBe('function');
    }
    expect(PROTOCOLS.filter((p) => !p.detect)).toHaveLength(1);
  });

  it('no first bytes, whole or cut short, get a definite verdict from two protocols (so the sniffer may ask them in any order)', async () => {
    const samples = [
      await clientHello(),
      Buffer.from(serialize.startup({ user: 'u', database: 'd' })),
      serialize.requestSsl(),
      H2_PREFACE,
      Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'),
      Buffer.from('PRI * HTTP/1.1\r\n\r\n'),
      Buffer.from('*2\r\n$3\r\nGET\r\n$1\r\nk\r\n'),
      Buffer.from('PING\r\n'),
      Buffer.from([0x16, 0x03, 0x01, 0x00, 0x00]),
      Buffer.from([0, 0, 0, 8, 4, 0xd2, 0x16, 0x2f]),
    ];
    for (const sample of samples) {
      for (let n = 1; n <= sample.length; n++) {
        for (const final of [false, true]) expect(definite(sample.subarray(0, n), final).length, `${sample.subarray(0, n).toString('latin1')} final=${final}`).toBeLessThanOrEqual(1);
      }
    }
  });
});
