import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dial } from '../dial.js';
import { pattern, sha256, type Closable } from '../http/test-support.js';
import { parseMockSet } from '../keploy/parse.js';
import { serializeMockSet } from '../keploy/serialize.js';
import { GENERIC_HEAD } from '../keploy/testkit.js';
import type { GenericMock } from '../keploy/types.js';
import { buildGenericMock, messageBytes, payloadBytes } from './keploy.js';
import { recordGeneric } from './recorder.js';
import { Client, eventually, recordingListener, startGreeterServer, startKvServer, type LineServer } from './testing.js';

const texts = (mock: GenericMock) => ({
  request: payloadBytes(mock.spec.genericrequests).toString('latin1'),
  response: payloadBytes(mock.spec.genericresponses).toString('latin1'),
});

describe('recordGeneric', () => {
  let kv: LineServer;
  let greeter: LineServer;
  const cleanups: Closable[] = [];
  beforeAll(async () => {
    kv = await startKvServer();
    greeter = await startGreeterServer();
    cleanups.push(kv, greeter);
  });
  afterAll(async () => {
    for (const c of cleanups) await c.close();
  });

  const recorder = async (server: LineServer, options: { maxBytesPerMock?: number } = {}) => {
    const l = await recordingListener({ host: '127.0.0.1', port: server.port }, options);
    cleanups.push(l);
    return l;
  };

  it('makes one mock per request and its response, in Keploy form', async () => {
    const l = await recorder(kv);
    const c = new Client(l.port);
    expect(await c.ask('GET x')).toBe('VALUE 1\n');
    expect(await c.ask('SET y 2')).toBe('OK\n');
    expect(await c.ask('INCR x')).toBe('VALUE 2\n');
    expect(await c.ask('QUIT')).toBe('BYE\n');
    await c.closed();
    await eventually(() => l.results.length === 1);
    expect(l.results[0]).toMatchObject({ mocks: 4, bytesUp: 26, bytesDown: 23 });
    expect(l.mocks.map(texts)).toEqual([
      { request: 'GET x\n', response: 'VALUE 1\n' },
      { request: 'SET y 2\n', response: 'OK\n' },
      { request: 'INCR x\n', response: 'VALUE 2\n' },
      { request: 'QUIT\n', response: 'BYE\n' },
    ]);
    const [first] = l.mocks;
    expect(first).toMatchObject({ version: 'api.keploy.io/v1beta1', kind: 'Generic', name: 'mocks', connectionId: 'conn-1' });
    expect(first!.spec.metadata).toEqual({ type: 'config', host: `127.0.0.1:${kv.port}` });
    expect(first!.spec.genericrequests).toEqual([{ origin: 'client', message: [{ type: 'string', data: 'GET x\n' }] }]);
    expect(first!.spec.genericresponses).toEqual([{ origin: 'server', message: [{ type: 'string', data: 'VALUE 1\n' }] }]);
    expect(Date.parse(first!.spec.restimestampmock)).toBeGreaterThanOrEqual(Date.parse(first!.spec.reqtimestampmock));
    // The server closed after BYE: replay closes there too.
    expect(l.mocks.map((m) => m.spec.metadata.serverClosed)).toEqual([undefined, undefined, undefined, 'true']);
  });

  it('records a greeting sent before any client byte as an exchange with no request', async () => {
    const l = await recorder(greeter);
    const c = new Client(l.port);
    expect(await c.readLine()).toBe('220 hello\n');
    expect(await c.ask('ehlo me')).toBe('EHLO ME\n');
    expect(await c.ask('QUIT')).toBe('221 bye\n');
    await c.closed();
    await eventually(() => l.results.length === 1);
    expect(l.mocks.map(texts)).toEqual([
      { request: '', response: '220 hello\n' },
      { request: 'ehlo me\n', response: 'EHLO ME\n' },
      { request: 'QUIT\n', response: '221 bye\n' },
    ]);
    expect(l.mocks[0]!.spec.genericrequests).toEqual([]);
  });

  it('keeps non-ASCII bytes as base64 `binary`, and the last exchange of a half-closed connection', async () => {
    const l = await recorder(kv);
    const c = new Client(l.port);
    c.send('BIN\nGET x\n');
    c.end(); // half-close: the server still answers, then closes
    expect((await c.closed()).toString('latin1')).toBe('\xff\x00\x80\nVALUE 1\n');
    await eventually(() => l.results.length === 1);
    expect(l.mocks).toHaveLength(1);
    expect(l.mocks[0]!.spec.genericresponses[0]!.message).toEqual([{ type: 'binary', data: Buffer.from('\xff\x00\x80\nVALUE 1\n', 'latin1').toString('base64') }]);
    expect(texts(l.mocks[0]!).request).toBe('BIN\nGET x\n');
  });

  it('passes a 2 MB exchange through intact, recording it truncated and nothing after it', async () => {
    const l = await recorder(kv);
    const c = new Client(l.port);
    const size = 2 * 1024 * 1024;
    expect(await c.ask('GET x')).toBe('VALUE 1\n');
    c.send(`BIG ${size}\n`);
    expect(sha256(await c.readBytes(size))).toBe(sha256(pattern(0, size)));
    expect(await c.ask('GET x')).toBe('VALUE 1\n');
    c.end();
    await c.closed();
    await eventually(() => l.results.length === 1);
    const result = l.results[0]!;
    expect(result.bytesDown).toBe(size + 16);
    expect(result.stoppedRecording).toMatch(/over the 1048576-byte limit/);
    expect(l.mocks).toHaveLength(2);
    const big = l.mocks[1]!;
    expect(big.spec.metadata).toMatchObject({ truncated: 'true', requestBytes: String(`BIG ${size}\n`.length), responseBytes: String(size) });
    const kept = payloadBytes(big.spec.genericrequests).length + payloadBytes(big.spec.genericresponses).length;
    expect(kept).toBe(1024 * 1024);
  });

  it("keeps a MySQL login phase to one exchange's bound: past it, the phase is written cut and the rest relayed (attack 18p F1)", async () => {
    // A server that greets as MySQL and answers each packet of sequence 1 (the login phase, never a command) with 300 KB of small packets.
    const greeting = Buffer.from('0a352e372e302d666b6500', 'hex');
    const packet = (seq: number, body: Buffer) => Buffer.concat([Buffer.from([body.length & 0xff, (body.length >> 8) & 0xff, body.length >> 16, seq]), body]);
    const answer = Buffer.concat(Array.from({ length: 50_000 }, (_, i) => packet((i + 2) & 0xff, Buffer.from([1, 2]))));
    const server = createNetServer((socket) => {
      socket.write(packet(0, greeting));
      socket.on('data', () => socket.write(answer));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    cleanups.push({ port: 0, close: () => new Promise<void>((r) => server.close(() => r())) });
    const mysqlMocks: GenericMock[] = [];
    const l = await recordingListener({ host: '127.0.0.1', port: (server.address() as AddressInfo).port }, { onMysqlMock: (m) => mysqlMocks.push(m) });
    cleanups.push(l);
    const c = new Client(l.port);
    await c.readBytes(greeting.length + 4);
    for (let i = 0; i < 8; i++) {
      c.send(packet(1, Buffer.from('login step')));
      expect((await c.readBytes(answer.length)).equals(answer)).toBe(true);
    }
    c.end();
    await c.closed();
    await eventually(() => l.results.length === 1);
    expect(l.results[0]!.stoppedRecording).toMatch(/over the 1048576-byte limit per mock; it was recorded truncated/);
    // One cut mock for the phase, within the bound; the exchanges past it were relayed whole (the program got every answer).
    expect(mysqlMocks).toHaveLength(1);
    const kept = payloadBytes(mysqlMocks[0]!.spec.genericrequests).length + payloadBytes(mysqlMocks[0]!.spec.genericresponses).length;
    expect(kept).toBeLessThanOrEqual(1024 * 1024);
    expect(mysqlMocks[0]!.spec.metadata).toMatchObject({ truncated: 'true' });
  });

  it('closes the server connection of a program that gave up before it was made', async () => {
    const gone = new PassThrough();
    gone.destroy();
    const upstream = await dial({ host: '127.0.0.1', port: kv.port }, 5000);
    const result = await recordGeneric({ target: { host: '127.0.0.1', port: kv.port }, client: gone }, upstream, { onMock: () => {} });
    expect(result).toMatchObject({ mocks: 0, bytesUp: 0, bytesDown: 0 });
    expect(upstream.destroyed).toBe(true);
  });

  it('destroys both sides when one fails', async () => {
    const l = await recorder(kv);
    const c = new Client(l.port);
    expect(await c.ask('GET x')).toBe('VALUE 1\n');
    c.socket.destroy(); // a reset from the program
    await eventually(() => l.results.length === 1);
    expect(l.results[0]!.mocks).toBe(1);
  });
});

describe('Generic mock format', () => {
  it('round-trips every ASCII byte as `string` and other bytes as `binary` through the YAML file', () => {
    const ascii = Buffer.from(Array.from({ length: 128 }, (_, i) => i));
    const binary = Buffer.from([0x00, 0xc3, 0x28, 0xff, 0x0a]);
    const at = new Date('2024-01-02T00:00:00Z');
    const mock = buildGenericMock({ request: ascii, response: binary, startedAt: at, endedAt: at, host: 'db:9000' }, 0);
    expect(mock.spec.genericrequests[0]!.message[0]!.type).toBe('string');
    expect(mock.spec.genericresponses[0]!.message[0]!.type).toBe('binary');
    const [back] = parseMockSet(serializeMockSet([mock]), 'mocks.yaml') as GenericMock[];
    expect(back!.spec).toEqual(mock.spec);
    expect(messageBytes(back!.spec.genericrequests[0]!.message[0]!)).toEqual(ascii);
    expect(messageBytes(back!.spec.genericresponses[0]!.message[0]!)).toEqual(binary);
  });

  it('reads Keploy-written mocks: several payloads, string and binary messages', () => {
    const yaml = [
      ...GENERIC_HEAD,
      '              data: "PING\\r\\n"',
      '        - origin: client',
      '          message:',
      '            - type: binary',
      '              data: AAE=',
      '    genericresponses: []',
      '    reqtimestampmock: 2024-08-06T16:26:50.741516528+05:30',
      '    restimestampmock: 2024-08-06T16:26:50.741516528+05:30',
      '',
    ].join('\n');
    const [mock] = parseMockSet(yaml, 'mocks.yaml') as GenericMock[];
    expect(payloadBytes(mock!.spec.genericrequests)).toEqual(Buffer.from('PING\r\n\x00\x01', 'latin1'));
  });
});
