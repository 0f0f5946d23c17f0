import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Duplex } from 'node:stream';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DebugkitCa } from '../tls/ca.js';
import { createCertificate } from '../tls/x509.js';
import { dial } from '../dial.js';
import { listen } from '../http/test-support.js';
import type { GenericMock } from '../keploy/types.js';
import { buildGenericMock, payloadBytes } from '../generic/keploy.js';
import { CLIENT_SSL, greetingOffersTls, greetingWithoutTls, redactMysqlRequest, splitSslRequest } from './wire.js';
import { recordGeneric } from '../generic/recorder.js';
import { replayGeneric } from '../generic/replayer.js';
import { mysqlAsGenerics, toMysqlMock } from './keploy.js';

/**
 * MySQL over TLS at the byte boundary: the client's SSLRequest and the start of its ClientHello
 * arriving in one chunk. The SSLRequest (and only it) reaches the server in clear; the rest is
 * TLS's first bytes, when recording and when replaying.
 */

function packet(seq: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head.writeUIntLE(payload.length, 0, 3);
  head[3] = seq;
  return Buffer.concat([head, payload]);
}

const FLAGS = 0x0200 | 0x8000 | 0x0008 | 0x00080000 | 0x00200000; // PROTOCOL_41, SECURE_CONNECTION, CONNECT_WITH_DB, PLUGIN_AUTH, LENENC data

function greeting(flags: number): Buffer {
  const caps = Buffer.alloc(2);
  caps.writeUInt16LE(flags & 0xffff);
  const high = Buffer.alloc(2);
  high.writeUInt16LE(flags >>> 16);
  return packet(
    0,
    Buffer.concat([
      Buffer.from('\x0a8.0.99-test\0', 'latin1'),
      Buffer.from([7, 0, 0, 0]),
      Buffer.alloc(8, 0x41),
      Buffer.from([0]),
      caps,
      Buffer.from([45, 2, 0]),
      high,
      Buffer.from([21]),
      Buffer.alloc(10),
      Buffer.alloc(12, 0x42),
      Buffer.from([0]),
      Buffer.from('mysql_native_password\0'),
    ]),
  );
}

function sslRequest(flags: number): Buffer {
  const fixed = Buffer.alloc(32);
  fixed.writeUInt32LE(flags | CLIENT_SSL, 0);
  fixed.writeUInt32LE(1 << 24, 4);
  fixed[8] = 45;
  return packet(1, fixed);
}

const SECRET = Buffer.alloc(20, 0xab);
function handshakeResponse(seq: number, flags: number): Buffer {
  const fixed = sslRequest(flags).subarray(4);
  return packet(seq, Buffer.concat([fixed, Buffer.from('app\0'), Buffer.from([SECRET.length]), SECRET, Buffer.from('shop\0mysql_native_password\0')]));
}

const OK = (seq: number) => packet(seq, Buffer.from([0, 0, 0, 2, 0, 0, 0]));
const QUERY = packet(0, Buffer.from('\x03SELECT 1', 'latin1'));

/**
 * The program's end of a connection whose other end (`far`) the code under test reads. Its first
 * write (the SSLRequest) is held and delivered in ONE chunk with its second (the ClientHello).
 */
function programPair(): { near: Duplex; far: Duplex; chunks: Buffer[] } {
  const chunks: Buffer[] = [];
  let held: Buffer | undefined;
  let holdNext = false;
  // eslint-disable-next-line prefer-const
  let far: Duplex;
  const near = new Duplex({
    read() {},
    write(chunk: Buffer, _enc, done) {
      if (holdNext) {
        holdNext = false;
        held = chunk;
        return done();
      }
      const out = held ? Buffer.concat([held, chunk]) : chunk;
      held = undefined;
      chunks.push(out);
      far.push(out);
      done();
    },
    final(done) {
      far.push(null);
      done();
    },
  });
  far = new Duplex({
    read() {},
    write(chunk: Buffer, _enc, done) {
      near.push(chunk);
      done();
    },
    final(done) {
      near.push(null);
      done();
    },
  });
  (near as Duplex & { holdNext(): void }).holdNext = () => void (holdNext = true);
  return { near, far, chunks };
}

/** Reads `n` bytes from a stream (fails after 20 s without them: a broken boundary stalls, it must not hang the run). */
function readBytes(s: Duplex, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let got = Buffer.alloc(0);
    const timer = setTimeout(() => reject(new Error(`${got.length} of ${n} bytes came in 20 s`)), 20_000);
    const onData = (c: Buffer) => {
      got = Buffer.concat([got, c]);
      if (got.length >= n) {
        clearTimeout(timer);
        s.off('data', onData);
        s.off('error', reject);
        s.pause();
        if (got.length > n) s.unshift(got.subarray(n));
        resolve(got.subarray(0, n));
      }
    };
    s.on('data', onData);
    s.once('error', reject);
    s.resume();
  });
}

/** The program: greeting, SSLRequest + ClientHello in one chunk, login inside TLS, one query. */
async function program(near: Duplex, caPem: string, flags: number): Promise<{ greeting: Buffer; ok: Buffer; answer: Buffer; protocol: string | null }> {
  const head = await readBytes(near, 4);
  const rest = await readBytes(near, head.readUIntLE(0, 3));
  (near as Duplex & { holdNext(): void }).holdNext();
  near.write(sslRequest(flags));
  const secure = tls.connect({ socket: near, ca: caPem, checkServerIdentity: (_h, cert) => tls.checkServerIdentity('127.0.0.1', cert) });
  await new Promise<void>((resolve, reject) => {
    secure.once('secureConnect', resolve);
    secure.once('error', reject);
  });
  secure.write(handshakeResponse(2, flags));
  const ok = await readBytes(secure, 11);
  secure.write(QUERY);
  const answer = await readBytes(secure, 11);
  const protocol = secure.getProtocol();
  secure.end();
  return { greeting: Buffer.concat([head, rest]), ok, answer, protocol };
}

let dir: string;
let ca: DebugkitCa;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'debugkit-mysql-tls-'));
  ca = await DebugkitCa.load(dir);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('MySQL TLS helpers', () => {
  it('splits the SSLRequest from the ClientHello bytes that came with it, and waits for a whole one', () => {
    const req = sslRequest(FLAGS);
    const hello = Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]);
    expect(splitSslRequest(req.subarray(0, 3))).toEqual({ kind: 'more' });
    expect(splitSslRequest(req.subarray(0, 20))).toEqual({ kind: 'more' });
    expect(splitSslRequest(req)).toEqual({ kind: 'tls', request: req, rest: Buffer.alloc(0) });
    expect(splitSslRequest(Buffer.concat([req, hello]))).toEqual({ kind: 'tls', request: req, rest: hello });
    expect(splitSslRequest(handshakeResponse(1, FLAGS))).toEqual({ kind: 'plain' });
    // 32 bytes without CLIENT_SSL is not an SSLRequest.
    const noSsl = Buffer.from(req);
    noSsl.writeUInt32LE(FLAGS, 4);
    expect(splitSslRequest(noSsl)).toEqual({ kind: 'plain' });
  });

  it('clears CLIENT_SSL in a greeting, and redacts the HandshakeResponse41 sent after an SSLRequest', () => {
    const g = greeting(FLAGS | CLIENT_SSL);
    expect(greetingOffersTls(g)).toBe(true);
    const cleared = greetingWithoutTls(g);
    expect(greetingOffersTls(cleared)).toBe(false);
    expect(cleared.length).toBe(g.length);
    expect(g.readUInt16LE(g.indexOf(0, 5) + 14) & CLIENT_SSL).toBe(CLIENT_SSL); // the recorded one is untouched
    const login = Buffer.concat([sslRequest(FLAGS), handshakeResponse(2, FLAGS)]);
    const redacted = redactMysqlRequest(login);
    expect(redacted.length).toBe(login.length);
    expect(redacted.includes(SECRET)).toBe(false);
    expect(redacted.toString('latin1')).toContain('app\0\x14' + '\0'.repeat(20) + 'shop\0');
    // A command's continuation packets are not authentication.
    const big = Buffer.concat([packet(0, Buffer.from('\x03SELECT ')), packet(1, SECRET)]);
    expect(redactMysqlRequest(big)).toEqual(big);
  });
});

describe('MySQL over TLS, SSLRequest and ClientHello in one chunk', () => {
  it('recording: only the SSLRequest reaches the server in clear; the login and the query are recorded decrypted', async () => {
    // The server's own CA and certificate for 127.0.0.1.
    const caKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const keys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const now = Date.now();
    const times = { notBefore: new Date(now - 86_400_000), notAfter: new Date(now + 86_400_000) };
    const serverCa = createCertificate({ subjectCommonName: 'test db CA', issuerCommonName: 'test db CA', issuerKey: caKeys.privateKey, publicKey: caKeys.publicKey, ca: true, ...times });
    const cert = createCertificate({
      subjectCommonName: '127.0.0.1',
      issuerCommonName: 'test db CA',
      issuerKey: caKeys.privateKey,
      publicKey: keys.publicKey,
      ca: false,
      altNames: ['127.0.0.1'],
      ...times,
    });
    const context = tls.createSecureContext({ key: keys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, cert });
    const seen: { clear?: Buffer; login?: Buffer; query?: Buffer } = {};
    const server = net.createServer(async (socket) => {
      socket.on('error', () => {});
      socket.write(greeting(FLAGS | CLIENT_SSL));
      seen.clear = await readBytes(socket, 36);
      const secure = new tls.TLSSocket(socket, { isServer: true, secureContext: context });
      secure.on('error', () => {});
      const head = await readBytes(secure, 4);
      seen.login = Buffer.concat([head, await readBytes(secure, head.readUIntLE(0, 3))]);
      secure.write(OK(3));
      seen.query = await readBytes(secure, QUERY.length);
      secure.write(OK(1));
      secure.on('end', () => secure.end());
    });
    const port = await listen(server);
    try {
      // As record.ts reaches the real server.
      const upstream = await dial({ host: '127.0.0.1', port }, 5000);
      const { near, far, chunks } = programPair();
      const mocks: GenericMock[] = [];
      const recording = recordGeneric({ target: { host: '127.0.0.1', port }, client: far }, upstream, {
        onMock: (m) => mocks.push(m),
        onMysqlMock: (m) => mocks.push(m),
        tls: { ca, upstream: { ca: serverCa } },
      });
      const got = await program(near, ca.certPem, FLAGS);
      const result = await recording;
      expect(result.error).toBeUndefined();
      // The test's premise: the SSLRequest and the ClientHello reached the recorder as one chunk.
      expect(chunks[0]!.length).toBeGreaterThan(36);
      expect(chunks[0]!.subarray(0, 36)).toEqual(sslRequest(FLAGS));
      expect(seen.clear).toEqual(sslRequest(FLAGS));
      expect(seen.login).toEqual(handshakeResponse(2, FLAGS));
      expect(seen.query).toEqual(QUERY);
      expect(got.ok).toEqual(OK(3));
      expect(got.answer).toEqual(OK(1));
      expect(got.protocol).toMatch(/^TLSv1\.[23]$/);
      const exchanges = mocks.map((m) => ({ request: payloadBytes(m.spec.genericrequests ?? []), response: payloadBytes(m.spec.genericresponses ?? []) }));
      // The connection phase in one exchange, as Keploy writes it: the greeting and the login's
      // answer; the SSLRequest and the HandshakeResponse41, its auth response zeroed.
      expect(exchanges).toHaveLength(2);
      expect(exchanges[0]!.response).toEqual(Buffer.concat([greeting(FLAGS | CLIENT_SSL), OK(3)]));
      expect(exchanges[0]!.request).toEqual(redactMysqlRequest(Buffer.concat([sslRequest(FLAGS), handshakeResponse(2, FLAGS)])));
      expect(exchanges[0]!.request.includes(SECRET)).toBe(false);
      expect(exchanges[1]).toEqual({ request: QUERY, response: OK(1) });
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('replay: the SSLRequest is answered with TLS (debugkit’s leaf), the bytes after it are TLS’s, the login and query replay inside', async () => {
    const at = new Date();
    const mock = (request: Buffer, response: Buffer) => buildGenericMock({ request, response, startedAt: at, endedAt: at, host: '127.0.0.1:3306' });
    const mocks = [mock(Buffer.alloc(0), greeting(FLAGS | CLIENT_SSL)), mock(Buffer.concat([sslRequest(FLAGS), handshakeResponse(2, FLAGS)]), OK(3)), mock(QUERY, OK(1))];
    // As recorded (Keploy MySQL mocks, SSLRequest and HandshakeResponse41 in one), then as replayers.ts hands them over.
    const split = mocks.flatMap((m) => {
      const generics = mysqlAsGenerics(toMysqlMock(m)!);
      if (typeof generics === 'string') throw new Error(generics);
      return generics;
    });
    expect(split.map((g) => payloadBytes(g.spec.genericrequests ?? []))).toEqual([Buffer.alloc(0), sslRequest(FLAGS), handshakeResponse(2, FLAGS), QUERY]);
    const { near, far, chunks } = programPair();
    const misses: string[] = [];
    const replaying = replayGeneric({ target: { host: '127.0.0.1', port: 3306 }, client: far }, split, { ca, onMiss: (m) => misses.push(m.message) });
    const got = await program(near, ca.certPem, FLAGS);
    expect(chunks[0]!.length).toBeGreaterThan(36);
    expect(got.greeting).toEqual(greeting(FLAGS | CLIENT_SSL));
    expect(got.ok).toEqual(OK(3));
    expect(got.answer).toEqual(OK(1));
    expect(got.protocol).toMatch(/^TLSv1\.[23]$/);
    const result = await replaying;
    expect(misses).toEqual([]);
    expect(result.matched).toBe(4);
  });

  it('replay: a greeting recorded with CLIENT_SSL is sent without it when no login was recorded over TLS', async () => {
    const at = new Date();
    const mock = (request: Buffer, response: Buffer) => buildGenericMock({ request, response, startedAt: at, endedAt: at, host: '127.0.0.1:3306' });
    const { near, far } = programPair();
    const replaying = replayGeneric({ target: { host: '127.0.0.1', port: 3306 }, client: far }, [mock(Buffer.alloc(0), greeting(FLAGS | CLIENT_SSL)), mock(handshakeResponse(1, FLAGS), OK(2))], {
      ca,
    });
    const head = await readBytes(near, 4);
    const g = Buffer.concat([head, await readBytes(near, head.readUIntLE(0, 3))]);
    expect(g).toEqual(greetingWithoutTls(greeting(FLAGS | CLIENT_SSL)));
    expect(greetingOffersTls(g)).toBe(false);
    near.write(handshakeResponse(1, FLAGS));
    expect(await readBytes(near, 11)).toEqual(OK(2));
    near.end();
    await replaying;
  });

  it('replay: an SSLRequest to a set with no login over TLS is a miss that says so', async () => {
    const at = new Date();
    const mock = (request: Buffer, response: Buffer) => buildGenericMock({ request, response, startedAt: at, endedAt: at, host: '127.0.0.1:3306' });
    const { near, far } = programPair();
    const misses: string[] = [];
    const mocks = [mock(Buffer.alloc(0), greeting(FLAGS | CLIENT_SSL)), mock(handshakeResponse(1, FLAGS), OK(2))];
    const replaying = replayGeneric({ target: { host: '127.0.0.1', port: 3306 }, client: far }, mocks, { ca, onMiss: (m) => misses.push(m.message) });
    const head = await readBytes(near, 4);
    await readBytes(near, head.readUIntLE(0, 3));
    near.write(sslRequest(FLAGS));
    near.resume();
    const result = await replaying;
    expect(result.missed).toBe(1);
    expect(misses).toHaveLength(1);
    expect(misses[0]).toMatch(/asked for TLS \(an SSLRequest\), but no connection phase of 127\.0\.0\.1:3306 was recorded over TLS/);
  });

  it('replay: a client logging in in clear to a login recorded over TLS only is answered with the sequence ids it expects; an RSA key request there is a miss that says why', async () => {
    const at = new Date();
    const mock = (request: Buffer, response: Buffer) => buildGenericMock({ request, response, startedAt: at, endedAt: at, host: '127.0.0.1:3306' });
    const g = greeting(FLAGS | CLIENT_SSL);
    // Fast authentication: AuthMoreData(3) "fast auth success" then OK(4), recorded after an SSLRequest.
    const fast = [mock(Buffer.alloc(0), g), mock(sslRequest(FLAGS), Buffer.alloc(0)), mock(handshakeResponse(2, FLAGS), Buffer.concat([packet(3, Buffer.from([1, 3])), OK(4)])), mock(QUERY, OK(1))];
    {
      const { near, far } = programPair();
      const replaying = replayGeneric({ target: { host: '127.0.0.1', port: 3306 }, client: far }, fast, { ca });
      const head = await readBytes(near, 4);
      expect(Buffer.concat([head, await readBytes(near, head.readUIntLE(0, 3))])).toEqual(g); // TLS still offered, as recorded
      near.write(handshakeResponse(1, FLAGS));
      expect(await readBytes(near, 6 + 11)).toEqual(Buffer.concat([packet(2, Buffer.from([1, 3])), OK(3)]));
      near.write(QUERY);
      expect(await readBytes(near, 11)).toEqual(OK(1));
      near.end();
      expect(await replaying).toMatchObject({ matched: 3, missed: 0 });
    }
    // Full authentication over TLS: the password went in clear inside TLS; a client in clear asks for the RSA key instead.
    const full = [
      mock(Buffer.alloc(0), g),
      mock(sslRequest(FLAGS), Buffer.alloc(0)),
      mock(handshakeResponse(2, FLAGS), packet(3, Buffer.from([1, 4]))),
      mock(packet(4, Buffer.from('secret\0')), OK(5)),
    ];
    {
      const { near, far } = programPair();
      const misses: string[] = [];
      const replaying = replayGeneric({ target: { host: '127.0.0.1', port: 3306 }, client: far }, full, { ca, onMiss: (m) => misses.push(m.message) });
      const head = await readBytes(near, 4);
      await readBytes(near, head.readUIntLE(0, 3));
      near.write(handshakeResponse(1, FLAGS));
      expect(await readBytes(near, 6)).toEqual(packet(2, Buffer.from([1, 4])));
      near.write(packet(3, Buffer.from([2])));
      near.resume();
      const result = await replaying;
      expect(result.missed).toBe(1);
      expect(misses[0]).toMatch(/asks for the server's RSA key .* recorded over TLS/);
    }
  });
});

describe('MySQL over TLS, failures while recording', () => {
  it('a server that resets its TLS connection while the program has not begun its handshake: an error of the recording, not of the process', async () => {
    const keys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const now = Date.now();
    const cert = createCertificate({
      subjectCommonName: '127.0.0.1',
      issuerCommonName: '127.0.0.1',
      issuerKey: keys.privateKey,
      publicKey: keys.publicKey,
      ca: false,
      altNames: ['127.0.0.1'],
      notBefore: new Date(now - 86_400_000),
      notAfter: new Date(now + 86_400_000),
    });
    const context = tls.createSecureContext({ key: keys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, cert });
    let reset = false;
    const server = net.createServer(async (socket) => {
      socket.on('error', () => {});
      socket.write(greeting(FLAGS | CLIENT_SSL));
      await readBytes(socket, 36);
      const secure = new tls.TLSSocket(socket, { isServer: true, secureContext: context });
      secure.on('error', () => {});
      // TLS with debugkit is up: reset while debugkit still waits for the program's ClientHello.
      secure.once('secure', () => setTimeout(() => ((reset = true), socket.resetAndDestroy()), 100));
    });
    const port = await listen(server);
    try {
      // As record.ts reaches the real server.
      const upstream = await dial({ host: '127.0.0.1', port }, 5000);
      const { near, far } = programPair();
      near.on('error', () => {});
      const recording = recordGeneric({ target: { host: '127.0.0.1', port }, client: far }, upstream, {
        onMock: () => {},
        onMysqlMock: () => {},
        tls: { ca, upstream: { insecure: true }, handshakeTimeoutMs: 5000 },
      });
      const head = await readBytes(near, 4);
      await readBytes(near, head.readUIntLE(0, 3));
      near.write(sslRequest(FLAGS)); // and no ClientHello
      const result = await recording;
      expect(reset).toBe(true);
      expect(result.error?.message).toMatch(/ECONNRESET|socket hang up|closed|handshake/i);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe('recording with MySQL TLS support on: the greeting read is bounded', () => {
  it('a first packet claiming megabytes, then trickling, is passed on at once (not held until it is whole)', async () => {
    let ticker: NodeJS.Timeout | undefined;
    let answered: Buffer | undefined;
    const server = net.createServer((socket) => {
      socket.on('error', () => {});
      // Looks like a MySQL greeting's header, claims 16 MB, then one byte every 200 ms.
      socket.write(Buffer.from([0xf0, 0xff, 0xff, 0x00, 0x0a, 0x61, 0x62, 0x63]));
      ticker = setInterval(() => socket.write('x'), 200);
      socket.once('data', (d) => {
        answered = d;
        clearInterval(ticker);
        socket.end();
      });
    });
    const port = await listen(server);
    try {
      // As record.ts reaches the real server.
      const upstream = await dial({ host: '127.0.0.1', port }, 5000);
      const { near, far } = programPair();
      const recording = recordGeneric({ target: { host: '127.0.0.1', port }, client: far }, upstream, { onMock: () => {}, tls: { ca, upstream: {} } });
      // Held until whole, these 8 bytes would never come (the trickle keeps the quiet timer from firing).
      const first = await readBytes(near, 8);
      expect(first).toEqual(Buffer.from([0xf0, 0xff, 0xff, 0x00, 0x0a, 0x61, 0x62, 0x63]));
      near.write('ok');
      near.end();
      await recording;
      expect(answered?.toString()).toBe('ok');
    } finally {
      clearInterval(ticker);
      await new Promise((r) => server.close(r));
    }
  });
});
