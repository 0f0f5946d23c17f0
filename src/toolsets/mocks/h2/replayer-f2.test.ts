import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { buildHttpMock } from '../http/keploy.js';
import { HttpMatcher } from '../http/matcher.js';
import { frameMessages } from './grpc.js';
import { recordGrpcMock } from './keploy.js';
import { GrpcIndex } from './matcher.js';
import { replayH2, type ReplayH2Options } from './replayer.js';
import { ACK, CONTINUATION, DATA, END_HEADERS, END_STREAM, frame, getOk, grpcCall, HEADERS, PING, postUpload, SETTINGS, unary } from './test-support.js';
import { H2_PREFACE, MAX_CONCURRENT_STREAMS } from './wire.js';

// Attack f2-1: the HTTP/2 replayer kept node:http2's SETTINGS_MAX_CONCURRENT_STREAMS (2^32-1): one
// connection's 100,000 HEADERS frames in one burst were all served, holding the loop 2-7 s and the
// server at 450 MB. f2-2: 20,000 streams whose request bodies never ended, then the program's exit,
// replayed as success with no miss; so did a header block never ended (CONTINUATION frames). The
// program's side here is raw frames on a real socket, as the attacker sent them.

const okMock = buildHttpMock(
  { method: 'GET', url: 'http://api.test/ok', requestHeaders: [], requestBody: '', statusCode: 200, responseHeaders: [], responseBody: 'ok', requestTime: new Date(0), responseTime: new Date(0) },
  { name: 'mock-ok' },
);

const closers: Array<() => void> = [];
afterEach(() => {
  for (const c of closers.splice(0)) c();
});

/** A loopback listener serving one connection with replayH2; `done` resolves once that replay has. */
async function replaying(o: Partial<ReplayH2Options> = {}) {
  const counts = { replayed: 0, missed: 0, fellBack: 0 };
  const misses: string[] = [];
  let finished!: () => void;
  const done = new Promise<void>((r) => (finished = r));
  const server = net.createServer((socket) => {
    socket.setNoDelay(true);
    void replayH2(
      { id: 'c1', target: { host: 'api.test', port: 80 }, client: socket },
      { scheme: 'http', grpc: new GrpcIndex([]), http: new HttpMatcher([okMock]), onMiss: 'fail', counts, missed: (m) => misses.push(m), recorded: () => {}, ...o },
    ).then(finished);
  });
  const port = await new Promise<number>((r) => server.listen(0, '127.0.0.1', () => r((server.address() as net.AddressInfo).port)));
  closers.push(() => server.close());
  return { port, counts, misses, done };
}

/** The program's side: raw frames out, the server's frames read as they come. */
async function program(port: number) {
  const socket = net.connect({ host: '127.0.0.1', port, noDelay: true });
  closers.push(() => socket.destroy());
  socket.on('error', () => {});
  await new Promise((r) => socket.once('connect', r));
  const frames: Array<{ type: number; flags: number; stream: number; payload: Buffer }> = [];
  let buffered = Buffer.alloc(0);
  let waiter: (() => void) | undefined;
  socket.on('data', (c: Buffer) => {
    buffered = Buffer.concat([buffered, c]);
    while (buffered.length >= 9 && buffered.length >= 9 + buffered.readUIntBE(0, 3)) {
      const length = buffered.readUIntBE(0, 3);
      frames.push({ type: buffered[3]!, flags: buffered[4]!, stream: buffered.readUInt32BE(5) & 0x7fffffff, payload: buffered.subarray(9, 9 + length) });
      buffered = buffered.subarray(9 + length);
    }
    waiter?.();
  });
  const closed = new Promise((r) => socket.once('close', r));
  /** Resolves once a frame `pick` finds came (or the server closed). */
  const until = (pick: (f: (typeof frames)[number]) => boolean) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (frames.some(pick) || socket.destroyed || socket.readableEnded) resolve();
      };
      waiter = check;
      socket.once('close', check);
      check();
    });
  return { socket, frames, closed, until, write: (b: Buffer) => socket.write(b) };
}

/** A PING whose ACK says the server has read every frame sent before it. */
const ping = frame(PING, 0, 0, Buffer.from('f2f2f2f2'));
const pinged = (f: { type: number; flags: number }) => f.type === PING && (f.flags & ACK) !== 0;

describe('attack f2-1: a connection may have a bounded number of streams open at once', () => {
  it(`advertises SETTINGS_MAX_CONCURRENT_STREAMS ${MAX_CONCURRENT_STREAMS}; a burst of 2,000 requests is served up to it, and the refused rest are counted misses`, async () => {
    const r = await replaying();
    const p = await program(r.port);
    const burst = [H2_PREFACE, frame(SETTINGS, 0, 0)];
    for (let i = 0; i < 2000; i++) burst.push(frame(HEADERS, END_STREAM | END_HEADERS, 2 * i + 1, getOk));
    // One write, the answers not read until it is all sent (the attacker's read nothing at all).
    p.write(Buffer.concat(burst));
    p.socket.end();
    await r.done;
    const settings = p.frames.find((f) => f.type === SETTINGS && (f.flags & ACK) === 0)!;
    const advertised = new Map<number, number>();
    for (let at = 0; at + 6 <= settings.payload.length; at += 6) advertised.set(settings.payload.readUInt16BE(at), settings.payload.readUInt32BE(at + 2));
    expect(advertised.get(0x3)).toBe(MAX_CONCURRENT_STREAMS);
    // Each request counted once: answered from the set (at most the limit were served), or a miss.
    // Each request counted once: answered from the set, or a miss. At most the limit reached the set:
    // node:http2 closed the connection for the refused streams that went on, before those were answered.
    expect(r.counts.replayed + r.counts.missed).toBe(2000);
    const refused = r.misses.filter((m) => m.startsWith('HTTP/2 connection'));
    expect(refused).toHaveLength(1);
    const unserved = Number(/: (\d+) streams the program opened never reached the set: nghttp2 refused them \(REFUSED_STREAM past the 256 streams/.exec(refused[0]!)?.[1]);
    expect(unserved).toBeGreaterThanOrEqual(2000 - MAX_CONCURRENT_STREAMS);
    const reached = r.misses.filter((m) => m.startsWith('GET /ok (HTTP/2)'));
    expect(reached.length + r.counts.replayed).toBe(2000 - unserved);
    expect(reached[0]).toMatch(/^GET \/ok \(HTTP\/2\): the request was not read whole after 0 bytes of its body: Too many invalid HTTP\/2 frames \(a request sent and never answered\)$/);
  });

  it('a well-behaved connection: requests under the limit are each answered, none counted a miss', async () => {
    const r = await replaying();
    const p = await program(r.port);
    const burst = [H2_PREFACE, frame(SETTINGS, 0, 0)];
    for (let i = 0; i < 100; i++) burst.push(frame(HEADERS, END_STREAM | END_HEADERS, 2 * i + 1, getOk));
    p.write(Buffer.concat([...burst, ping]));
    await p.until((f) => f.type === DATA && f.stream === 199 && (f.flags & END_STREAM) !== 0);
    p.socket.end();
    await r.done;
    expect(r.counts).toEqual({ replayed: 100, missed: 0, fellBack: 0 });
    expect(r.misses).toEqual([]);
  });
});

describe('attack f2-2: a request cut off by the connection closing or a reset is a miss', () => {
  it('200 POST streams whose bodies never end, then the program leaves: 200 misses', async () => {
    const r = await replaying();
    const p = await program(r.port);
    const burst = [H2_PREFACE, frame(SETTINGS, 0, 0)];
    for (let i = 0; i < 200; i++) burst.push(frame(HEADERS, END_HEADERS, 2 * i + 1, postUpload), frame(DATA, 0, 2 * i + 1, Buffer.alloc(10, 0x78)));
    p.write(Buffer.concat([...burst, ping]));
    // Every stream reached the replayer before the program leaves.
    await p.until(pinged);
    p.socket.destroy();
    await r.done;
    expect(r.counts).toEqual({ replayed: 0, missed: 200, fellBack: 0 });
    expect(r.misses).toHaveLength(200);
    // The program's close resets the streams (node:http2 marks them aborted).
    expect(r.misses[0]).toMatch(/^POST \/upload \(HTTP\/2\): the request (was reset|closed) after 10 bytes of its body.* \(a request sent and never answered\)$/);
  });

  it('gRPC calls cut off inside a message, and a stream the program resets: each a miss; the connection goes on', async () => {
    const r = await replaying({ grpc: new GrpcIndex([{ ...recordGrpcMock(unary).mock, name: 'mock-grpc' }]) });
    const p = await program(r.port);
    const half = frameMessages([{ compressed: false, data: Buffer.from('hello') }]).subarray(0, 7);
    const burst = [H2_PREFACE, frame(SETTINGS, 0, 0)];
    for (let i = 0; i < 20; i++) burst.push(frame(HEADERS, END_HEADERS, 2 * i + 1, grpcCall), frame(DATA, 0, 2 * i + 1, half));
    // A plain upload reset by the program (RST_STREAM CANCEL), then a request answered on the same connection.
    burst.push(frame(HEADERS, END_HEADERS, 41, postUpload), frame(DATA, 0, 41, Buffer.from('abc')), frame(0x3, 0, 41, Buffer.from([0, 0, 0, 8])));
    burst.push(frame(HEADERS, END_STREAM | END_HEADERS, 43, getOk));
    p.write(Buffer.concat([...burst, ping]));
    await p.until((f) => f.type === DATA && f.stream === 43 && (f.flags & END_STREAM) !== 0);
    await p.until(pinged);
    expect(r.misses).toHaveLength(1);
    expect(r.misses[0]).toMatch(/^POST \/upload \(HTTP\/2\): the request (was reset|closed) after 3 bytes of its body.* \(a request sent and never answered\)$/);
    expect(r.counts).toEqual({ replayed: 1, missed: 1, fellBack: 0 });
    p.socket.destroy();
    await r.done;
    expect(r.counts).toEqual({ replayed: 1, missed: 21, fellBack: 0 });
    expect(r.misses[1]).toBe('gRPC /x.Y/Z: the stream was reset or its connection closed after 0 whole request messages, before the client ended its side (a request sent and never answered)');
  });

  it('a header block never ended (HEADERS without END_HEADERS, then CONTINUATION frames): a miss', async () => {
    const r = await replaying();
    const p = await program(r.port);
    // A literal header x-a-b of 100 bytes, new name, without indexing: 20 in each CONTINUATION frame.
    const field = Buffer.concat([Buffer.from([0x00, 5]), Buffer.from('x-a-b'), Buffer.from([100]), Buffer.alloc(100, 0x76)]);
    const burst = [H2_PREFACE, frame(SETTINGS, 0, 0), frame(HEADERS, END_STREAM, 1, getOk)];
    for (let i = 0; i < 5; i++) burst.push(frame(CONTINUATION, 0, 1, Buffer.concat(Array(20).fill(field))));
    p.write(Buffer.concat(burst));
    p.socket.end();
    await r.done;
    expect(r.counts).toEqual({ replayed: 0, missed: 1, fellBack: 0 });
    expect(r.misses).toHaveLength(1);
    expect(r.misses[0]).toMatch(
      /^HTTP\/2 connection to api.test:80: 1 stream the program opened never reached the set: the last header block was never ended \(HEADERS or CONTINUATION frames without END_HEADERS until the connection closed\)(; node:http2 closed the connection: .*)?$/,
    );
  });
});
