// Round 18aq 2: the HTTP/2 recorder said nothing of the calls it did not record. Streams nghttp2
// refused (past the 256 a connection may have open at once) never reached it; a stream the program
// reset before its answer ended left its relay waiting until the connection's close and a 2 s bound
// passed, then counted nowhere; a stream the real server reset was only warned about. Each is now
// one call in the recording's `dropped`, with why (old code: a burst of 1,000 requests gave 256 mocks
// and nothing said of the other 744). The program's side is raw frames or a
// node:http2 client on a real socket; the real server is node:http2 on loopback.
import http2 from 'node:http2';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { Mock } from '../keploy/types.js';
import { HttpMatcher } from '../http/matcher.js';
import { GrpcIndex } from './matcher.js';
import { recordH2 } from './recorder.js';
import { replayH2 } from './replayer.js';
import { connectTo, Watched } from '../kept-testing.js';
import { DATA, END_HEADERS, END_STREAM, frame, getOk, HEADERS, postUpload, SETTINGS } from './test-support.js';
import { H2_PREFACE, MAX_CONCURRENT_STREAMS } from './wire.js';

const closers: Array<() => void> = [];
afterEach(() => {
  for (const c of closers.splice(0)) c();
});

async function listen(server: net.Server): Promise<number> {
  closers.push(() => server.close());
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r((server.address() as net.AddressInfo).port)));
}

/** The real server: `serve` answers each stream (default: 200 'ok' once the request ended). */
async function realServer(serve?: (stream: http2.ServerHttp2Stream) => void) {
  const server = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => sessions.add(s));
  server.on('stream', (stream) => {
    stream.on('error', () => {});
    if (serve) return serve(stream);
    stream.resume();
    stream.on('end', () => {
      stream.respond({ ':status': 200 });
      stream.end('ok');
    });
  });
  const port = await listen(server);
  closers.push(() => sessions.forEach((s) => s.destroy()));
  return port;
}

/** The recorder for one connection of the program, recording against `upstream`; `done` once its recording has. */
async function recording(upstream: number) {
  const mocks: Mock[] = [];
  const dropped: string[] = [];
  const kept = new Watched(64 * 1024 * 1024);
  let finished!: () => void;
  const done = new Promise<void>((r) => (finished = r));
  const port = await listen(
    net.createServer((client) => {
      void recordH2(
        { id: 'c1', target: { host: '127.0.0.1', port: upstream }, client },
        {
          scheme: 'http',
          dial: () => connectTo(upstream),
          onMock: (m) => mocks.push(m),
          onDropped: (why) => dropped.push(why),
          kept,
        },
      ).then(finished);
    }),
  );
  /** The reasons given, each with how many calls. */
  const why = () => Object.fromEntries([...new Set(dropped)].map((w) => [w, dropped.filter((d) => d === w).length]));
  return { port, mocks, dropped, why, kept, done };
}

/** Waits until `done()`, a turn of the loop at a time; gives up after `turns` turns (the assertion after it then fails). */
async function until(done: () => boolean, turns = 50_000) {
  for (let i = 0; i < turns && !done(); i++) await new Promise((r) => setImmediate(r));
}

describe('attack 18aq 2: an HTTP/2 recording says how many calls it did not record, and why', () => {
  it('a burst of 1,000 requests on one connection: each is a mock or a dropped call; the refused say so', async () => {
    const rec = await recording(await realServer());
    const socket = net.connect({ host: '127.0.0.1', port: rec.port, noDelay: true });
    closers.push(() => socket.destroy());
    socket.on('error', () => {});
    socket.resume();
    await new Promise((r) => socket.once('connect', r));
    const burst = [H2_PREFACE, frame(SETTINGS, 0, 0)];
    for (let i = 0; i < 1000; i++) burst.push(frame(HEADERS, END_STREAM | END_HEADERS, 2 * i + 1, getOk));
    socket.end(Buffer.concat(burst));
    await rec.done;
    await until(() => rec.mocks.length + rec.dropped.length >= 1000);
    expect(rec.mocks.length + rec.dropped.length).toBe(1000);
    const refused = Object.entries(rec.why()).filter(([w]) => w.startsWith('HTTP/2 streams the program opened that were never relayed: nghttp2 refused them (REFUSED_STREAM past the 256 streams'));
    expect(refused).toHaveLength(1);
    expect(refused[0]![1]).toBeGreaterThanOrEqual(1000 - MAX_CONCURRENT_STREAMS);
  });

  it("a stream the program resets before its answer: a dropped call, at once; the real server's stream is cancelled", async () => {
    let upstreamClosed = 0;
    // The real server answers once the request ended: this one never does.
    const upstream = await realServer((stream) => {
      stream.resume();
      stream.once('close', () => upstreamClosed++);
      stream.on('end', () => {
        stream.respond({ ':status': 200 });
        stream.end('ok');
      });
    });
    const rec = await recording(upstream);
    const client = http2.connect(`http://127.0.0.1:${rec.port}`);
    closers.push(() => client.destroy());
    client.on('error', () => {});
    const req = client.request({ ':method': 'POST', ':path': '/upload' });
    req.on('error', () => {});
    await new Promise<void>((r) => req.write(Buffer.from('part of it'), () => r()));
    await new Promise<void>((r) => client.ping(() => r()));
    req.close(http2.constants.NGHTTP2_CANCEL);
    // Said while the connection is still open (the old relay waited for its close, then 2 s more).
    await until(() => rec.dropped.length > 0 && upstreamClosed > 0);
    expect(rec.dropped).toEqual(['HTTP/2 exchanges relayed, not recorded: the program reset the stream, or its connection closed, before the answer ended']);
    expect(upstreamClosed).toBe(1);
    // The same connection goes on: a whole exchange after it is recorded.
    const ok = client.request({ ':method': 'POST', ':path': '/upload' });
    const answered = new Promise<void>((r) => ok.on('end', () => r()).resume());
    ok.end('all of it');
    await answered;
    client.close();
    await rec.done;
    expect(rec.mocks).toHaveLength(1);
    expect(rec.dropped).toHaveLength(1);
  });

  it('a stream the real server resets before its answer: a dropped call', async () => {
    const rec = await recording(await realServer((stream) => stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR)));
    const socket = net.connect({ host: '127.0.0.1', port: rec.port, noDelay: true });
    closers.push(() => socket.destroy());
    socket.on('error', () => {});
    socket.resume();
    await new Promise((r) => socket.once('connect', r));
    socket.write(Buffer.concat([H2_PREFACE, frame(SETTINGS, 0, 0), frame(HEADERS, END_HEADERS, 1, postUpload), frame(DATA, END_STREAM, 1, Buffer.from('abc'))]));
    await until(() => rec.dropped.length + rec.mocks.length > 0);
    socket.end();
    await rec.done;
    expect(rec.mocks).toEqual([]);
    expect(rec.dropped).toHaveLength(1);
    expect(rec.dropped[0]).toMatch(
      /^HTTP\/2 exchanges relayed, not recorded: (the real server reset the stream, or its connection closed, before the answer ended|the real server failed the stream or could not be reached)$/,
    );
  });

  it("gRPC: a message whose prefix declares 4 GiB is relayed as it comes, the real server's RESOURCE_EXHAUSTED reaches the program at once, little is held, and the call is counted", async () => {
    let upstreamBytes = 0;
    // As grpc-go: the prefix over its limit is answered at once, trailers only.
    const upstream = await realServer((stream) => {
      stream.on('data', (c: Buffer) => (upstreamBytes += c.length));
      stream.once('data', () =>
        stream.respond(
          { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '8', 'grpc-message': 'grpc: received message larger than max (4294967295 vs. 4194304)' },
          { endStream: true },
        ),
      );
    });
    const rec = await recording(upstream);
    const client = http2.connect(`http://127.0.0.1:${rec.port}`);
    closers.push(() => client.destroy());
    client.on('error', () => {});
    const req = client.request({ ':method': 'POST', ':path': '/x.Y/Z', 'content-type': 'application/grpc', te: 'trailers' });
    req.on('error', () => {});
    let status: string | undefined;
    req.on('response', (h) => (status = h['grpc-status'] as string | undefined));
    req.write(Buffer.from([0, 0xff, 0xff, 0xff, 0xff]));
    let sent = 0;
    while (status === undefined && sent < 32 * 1024 * 1024) {
      await new Promise<void>((r) => req.write(Buffer.alloc(64 * 1024, 0x61), () => r()));
      sent += 64 * 1024;
      await new Promise<void>((r) => client.ping(() => r()));
    }
    expect(status).toBe('8');
    expect(sent).toBeLessThanOrEqual(4 * 64 * 1024);
    req.close();
    client.close();
    await rec.done;
    expect(upstreamBytes).toBeGreaterThan(0);
    expect(rec.kept.most).toBeLessThanOrEqual(2 * 1024 * 1024);
    // The call ended by the server's answer before the program's end: recorded, with the message as far as it came.
    expect(rec.mocks.length + rec.dropped.length).toBe(1);
  });
});

describe('attack 18aq 2: a replay miss relayed to the real server and cut there', () => {
  it("passthrough: the program resets the stream before the real server answered: a counted miss, the real server's stream cancelled", async () => {
    let upstreamClosed = 0;
    let upstreamOpened = 0;
    // The real server never answers.
    const upstream = await realServer((stream) => {
      upstreamOpened++;
      stream.resume();
      stream.once('close', () => upstreamClosed++);
    });
    const counts = { replayed: 0, missed: 0, fellBack: 0 };
    const misses: string[] = [];
    const port = await listen(
      net.createServer((client) => {
        void replayH2(
          { id: 'c1', target: { host: '127.0.0.1', port: upstream }, client },
          { scheme: 'http', grpc: new GrpcIndex([]), http: new HttpMatcher([]), onMiss: 'passthrough', dial: () => connectTo(upstream), counts, missed: (m) => misses.push(m), recorded: () => {} },
        );
      }),
    );
    const client = http2.connect(`http://127.0.0.1:${port}`);
    closers.push(() => client.destroy());
    client.on('error', () => {});
    const req = client.request({ ':method': 'POST', ':path': '/upload' });
    req.on('error', () => {});
    req.end('all of it');
    // The request reached the real server, which holds it.
    await until(() => upstreamOpened > 0);
    req.close(http2.constants.NGHTTP2_CANCEL);
    await until(() => counts.missed > 0 && upstreamClosed > 0);
    expect(counts).toEqual({ replayed: 0, missed: 1, fellBack: 0 });
    expect(misses).toEqual(['POST /upload (HTTP/2); relayed to the real server, then the program reset the stream, or its connection closed, before the answer ended']);
    expect(upstreamClosed).toBe(1);
  });
});
