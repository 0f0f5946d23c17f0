// Attack t1-1: gRPC replay with strict took request bodies a real gRPC server rejects. A body that
// ended inside its last message (a prefix saying 255 bytes, 4 of them sent) matched the mock of the
// whole messages before it, the cut bytes dropped unseen; a compression flag byte 0x02-0xFF counted
// as 0 and matched a recorded 0. Recording lost the same: a response's flag 0x02 was written 0, and
// a message the body ended inside was kept as a whole shorter one (framed again, other bytes).
import http2 from 'node:http2';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { parseMockSet } from '../keploy/parse.js';
import { serializeMockSet } from '../keploy/serialize.js';
import type { Mock } from '../keploy/types.js';
import { frameMessages, MessageReader, splitMessages } from './grpc.js';
import { buildGrpcMock, readGrpcMock, recordGrpcMock, type GrpcExchange } from './keploy.js';
import { GrpcIndex } from './matcher.js';
import { replaying } from './test-support.js';

const PATH = '/pkg.Svc/M';
const hex = (h: string) => Buffer.from(h.replace(/ /g, ''), 'hex');
/** The attacker's recorded call: request `08 01`, answer `08 02`, status OK. */
const REQUEST = hex('00 00000002 0801');
const ANSWER = hex('00 00000002 0802');

const exchange = (request: Buffer, answer: Buffer): GrpcExchange => ({
  requestHeaders: { ':path': PATH, ':method': 'POST', ':authority': '127.0.0.1:47851', 'content-type': 'application/grpc' },
  requestMessages: splitMessages(request),
  responseHeaders: { ':status': '200', 'content-type': 'application/grpc' },
  responseMessages: splitMessages(answer),
  trailers: { 'grpc-status': '0' },
  requestTime: new Date('2026-01-01T00:00:00Z'),
  responseTime: new Date('2026-01-01T00:00:01Z'),
});

/** A set as written and read back, its gRPC calls indexed. */
const indexOf = (mocks: Mock[]) => new GrpcIndex(parseMockSet(serializeMockSet(mocks.map((m, i) => ({ ...m, name: `mock-${i}` }))), 'mocks.yaml'));

interface Answer {
  status: string | undefined;
  message: string;
  body: Buffer;
}

/** One call: the body sent whole, then the end of the client's side; the status from the trailers (or a trailers-only answer). */
function call(client: http2.ClientHttp2Session, body: Buffer): Promise<Answer> {
  return new Promise((resolve) => {
    const req = client.request({ ':method': 'POST', ':path': PATH, 'content-type': 'application/grpc', te: 'trailers' });
    let end: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    req.on('response', (h) => (end = h));
    req.on('trailers', (t) => (end = t));
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('error', () => {});
    req.on('close', () => resolve({ status: end['grpc-status'] as string | undefined, message: decodeURIComponent(String(end['grpc-message'] ?? '')), body: Buffer.concat(chunks) }));
    req.end(body);
  });
}

describe('attack t1-1: replay answers INTERNAL, a counted miss, for a request a gRPC server rejects', () => {
  it('a body ending inside its last message: a miss saying how many bytes of how many came; the whole body still replays', async () => {
    const { client, counts, misses } = await replaying({ grpc: indexOf([await buildGrpcMock(exchange(REQUEST, ANSWER))]) });
    // The attacker's body: the recorded message, then one whose prefix says 255 bytes and 4 follow.
    const cut = await call(client, Buffer.concat([REQUEST, hex('00 000000ff 41414141')]));
    expect(cut.status).toBe('13');
    expect(cut.body.length).toBe(0);
    const line = `gRPC ${PATH}: the client ended its side inside request message 2, truncated: its prefix says 255 bytes, 4 came (a gRPC server answers INTERNAL)`;
    expect(cut.message).toBe(`debugkit mocks: ${line}`);
    expect(misses).toEqual([line]);
    expect(counts).toMatchObject({ replayed: 0, missed: 1 });

    // Cut inside the prefix itself: 3 of its 5 bytes.
    const prefix = await call(client, Buffer.concat([REQUEST, hex('00 0000')]));
    expect(prefix.status).toBe('13');
    expect(misses[1]).toBe(`gRPC ${PATH}: the client ended its side inside request message 2, truncated: its 5-byte length prefix was cut after 3 bytes (a gRPC server answers INTERNAL)`);

    // The recorded body: answered as recorded.
    const whole = await call(client, REQUEST);
    expect(whole).toEqual({ status: '0', message: '', body: ANSWER });
    expect(counts).toMatchObject({ replayed: 1, missed: 2 });
  });

  it('a compression flag byte other than 0 and 1: a miss naming the byte; a flag is compared as its byte', async () => {
    const compressed = hex('01 00000002 0801');
    const { client, counts, misses } = await replaying({ grpc: indexOf([await buildGrpcMock(exchange(REQUEST, ANSWER)), await buildGrpcMock(exchange(compressed, hex('00 00000001 63')))]) });
    for (const flag of ['80', '02', 'ff']) {
      const r = await call(client, hex(`${flag} 00000002 0801`));
      expect(r.status).toBe('13');
      expect(r.body.length).toBe(0);
      expect(r.message).toBe(`debugkit mocks: gRPC ${PATH}: request message 1 has compression flag byte 0x${flag}; valid flags are 0 (not compressed) and 1 (compressed)`);
    }
    expect(misses).toHaveLength(3);
    expect(counts).toMatchObject({ replayed: 0, missed: 3 });
    // Flags 0 and 1 each get their own mock's answer.
    expect((await call(client, REQUEST)).body).toEqual(ANSWER);
    expect((await call(client, compressed)).body).toEqual(hex('00 00000001 63'));
    expect(counts).toMatchObject({ replayed: 2, missed: 3 });
  });
});

describe('attack t1-1: a recording keeps what was sent, and a replay sends it again', () => {
  it('the set holds the flag byte and the cut message as it came (message_length is what its prefix said); both read back the same', () => {
    const answer = Buffer.concat([hex('02 00000002 0802'), hex('00 000000ff 4141')]);
    const request = Buffer.concat([REQUEST, hex('01 0000')]);
    const ex = exchange(request, answer);
    const yaml = serializeMockSet([{ ...recordGrpcMock(ex).mock, name: 'mock-0' }]);
    expect(yaml).toMatch(/compression_flag: 2\n\s+message_length: 2\n/);
    expect(yaml).toMatch(/compression_flag: 0\n\s+message_length: 255\n\s+decoded_data: !!binary \|?\s*QUE=\n\s+debugkit_truncated: 7\n/);
    expect(yaml).toMatch(/compression_flag: 1\n\s+message_length: 0\n\s+decoded_data: !!binary ?\n\s+debugkit_truncated: 3\n/);
    const back = readGrpcMock(parseMockSet(yaml, 'mocks.yaml')[0]!)!;
    expect(frameMessages(back.responseMessages)).toEqual(answer);
    expect(frameMessages(back.requestMessages)).toEqual(request);
  });

  it('a real server answering flag 0x02 and a cut last message: recorded on a miss, then replayed from the set byte for byte', async () => {
    const answer = Buffer.concat([hex('02 00000002 0802'), hex('00 000000ff 4141')]);
    const server = http2.createServer();
    server.on('stream', (stream) => {
      stream.resume();
      stream.on('end', () => {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end(answer);
      });
    });
    const port = await new Promise<number>((r) => server.listen(0, '127.0.0.1', () => r((server.address() as net.AddressInfo).port)));
    closers.push(() => server.close());
    const recorded: Mock[] = [];
    const rec = await replaying({
      onMiss: 'record',
      dial: () => new Promise((resolve, reject) => net.connect(port, '127.0.0.1').once('connect', resolveSocket(resolve)).once('error', reject)),
      recorded: (m) => void recorded.push(m),
    });
    const live = await call(rec.client, REQUEST);
    expect(live).toEqual({ status: '0', message: '', body: answer });
    expect(recorded).toHaveLength(1);
    // Its messages' text is written after the mock is kept: wait for it (the answer's `08 02` is `1: 2`), then the set as written.
    await expect.poll(() => serializeMockSet(recorded), { timeout: 10_000 }).toMatch(/compression_flag: 2\n\s+message_length: 2\n\s+decoded_data: \|\n\s+1: 2\n/);
    const yaml = serializeMockSet(recorded);
    expect(yaml).toMatch(/compression_flag: 0\n\s+message_length: 255\n\s+decoded_data: \|\n\s+`4141`\n\s+debugkit_truncated: 7\n/);
    // The set alone answers now (no real server to fall back to).
    const { client, counts } = await replaying({ grpc: indexOf(parseMockSet(yaml, 'mocks.yaml')) });
    expect(await call(client, REQUEST)).toEqual({ status: '0', message: '', body: answer });
    expect(counts).toMatchObject({ replayed: 1, missed: 0 });
  });

  it('the message reader gives the bytes a body ended inside as a truncated message; a whole body leaves none', () => {
    const reader = new MessageReader();
    expect(reader.push(Buffer.concat([REQUEST, hex('00 000000ff 4141')]))).toHaveLength(1);
    expect(reader.tail()).toMatchObject({ compressed: false, truncated: { length: 255, came: 7 } });
    expect(frameMessages([reader.tail()!])).toEqual(hex('00 000000ff 4141'));
    const whole = new MessageReader();
    expect(whole.push(REQUEST)).toHaveLength(1);
    expect(whole.tail()).toBeUndefined();
  });
});

const closers: Array<() => void> = [];
afterEach(() => {
  for (const c of closers.splice(0)) c();
});

const resolveSocket = (resolve: (s: net.Socket) => void) =>
  function (this: net.Socket) {
    resolve(this);
  };
