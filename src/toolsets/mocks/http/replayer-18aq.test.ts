// Round 18aq (issue 18: replay must be honest). A request the HTTP/1 replayer never answered because
// its body was cut (the program reset the connection after the head and part of a Content-Length or
// chunked body) was not counted at all: 0 misses, and a strict replay passed. HTTP/2's were (0fbf996).
// So was a head cut by a reset once its request line had come. An end (FIN) inside a request was
// counted, but named "a request (its request line not read)" and said to be a parse error. The
// program's side here is a raw socket through the same glue the capture proxy hands connections to.
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { DebugkitCa } from '../tls/ca.js';
import { replayIntercepted } from './intercept.js';
import { buildHttpMock } from './keploy.js';
import { HttpMatcher } from './matcher.js';
import { HttpReplayer, type ReplayEvent } from './replayer.js';

const mock = (method: string, path: string, body: string, name: string) =>
  buildHttpMock(
    {
      method,
      url: `http://h${path}`,
      requestHeaders: [],
      requestBody: body,
      statusCode: 200,
      responseHeaders: [],
      responseBody: `answer ${name}`,
      requestTime: new Date(0),
      responseTime: new Date(0),
    },
    { name },
  );

const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

/**
 * Replays GET /ok and POST /echo (body `hello`) on a loopback listener that plays the capture proxy
 * (handed to replayIntercepted as HTTP); `done` resolves once the first connection's replay
 * has, `read(n)` once the replayer's side has read n bytes of it (node:http parses a chunk as it comes).
 */
async function replaying() {
  const events: ReplayEvent[] = [];
  const replayer = new HttpReplayer({ matcher: new HttpMatcher([mock('GET', '/ok', '', 'get'), mock('POST', '/echo', 'hello', 'post')]), onEvent: (e) => events.push(e) });
  let served!: () => void;
  const done = new Promise<void>((r) => (served = r));
  let accepted: net.Socket | undefined;
  const server = net.createServer({ allowHalfOpen: true }, (socket) => {
    accepted = socket;
    socket.on('error', () => {});
    // Handed over as the capture proxy hands a connection it knows is HTTP (its HTTP proxy's); plain HTTP never reaches the CA.
    void replayIntercepted({ id: 'c1', target: { host: 'h', port: 80 }, protocol: 'http', client: socket }, replayer, { ca: undefined as unknown as DebugkitCa }).finally(served);
  });
  const port = await new Promise<number>((r) => server.listen(0, '127.0.0.1', () => r((server.address() as net.AddressInfo).port)));
  closers.push(() => {
    accepted?.destroy();
    server.close();
  });
  const lines = () => events.map((e) => `${e.kind} ${e.method} ${e.url}${e.error ? `: ${e.error}` : ''}`);
  /** Resolves once n bytes came on the accepted connection (its 'data' events: node:http has parsed each as it came). */
  const read = async (n: number) => {
    await until(() => accepted !== undefined);
    const socket = accepted!;
    await new Promise<void>((resolve) => {
      const check = () => {
        if (socket.bytesRead < n && !socket.destroyed) return;
        socket.off('data', check);
        setImmediate(resolve);
      };
      socket.on('data', check);
      check();
    });
  };
  return { port, replayer, events, lines, done, read };
}

/** The program's side: raw bytes out, what came back kept. */
async function program(port: number) {
  const socket = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true, noDelay: true });
  closers.push(() => void socket.destroy());
  socket.on('error', () => {});
  await new Promise((r) => socket.once('connect', r));
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  const text = () => Buffer.concat(chunks).toString('latin1');
  /** Resolves once `n` answers began, or the server ended the connection. */
  const answers = (n: number) => until(() => (text().match(/HTTP\/1\.1 \d{3} /g)?.length ?? 0) >= n || socket.readableEnded || socket.destroyed);
  return { socket, text, closed, answers };
}

/** Waits until `done()`, a turn of the loop at a time; gives up after `turns` turns (the assertion after it then fails). */
async function until(done: () => boolean, turns = 50_000) {
  for (let i = 0; i < turns && !done(); i++) await new Promise((r) => setImmediate(r));
}

type Replaying = Awaited<ReturnType<typeof replaying>>;
type Program = Awaited<ReturnType<typeof program>>;

/** Sends `data`, resets the connection once the replayer has read it, and waits for the replay of the connection to end. */
async function sendThenReset(r: Replaying, p: Program, data: string | Buffer) {
  p.socket.write(data);
  await r.read(Buffer.byteLength(data));
  p.socket.resetAndDestroy();
  await r.done;
  // node:http aborts the request as the connection closes: its miss comes a few turns later.
  await until(() => r.replayer.counters.missed > 0);
}

/** Sends `data`, half-closes, reads every answer until the server closes; `answers`: each one's status line and body. */
async function exchange(data: string) {
  const r = await replaying();
  const p = await program(r.port);
  p.socket.end(data);
  await p.closed;
  await r.done;
  // A second count of the same request (by the request's own close, which follows the connection's) would come within these turns.
  await until(() => false, 100);
  const text = p.text();
  const answers = text.split(/(?=HTTP\/1\.1 \d{3} )/).map((a) => `${a.split('\r\n')[0]} ${a.slice(a.indexOf('\r\n\r\n') + 4)}`);
  return { r, text, answers };
}

const NEVER = '(a request sent and never answered)';

describe('attack 18aq 1: an HTTP/1 request cut by a reset is a counted miss', () => {
  for (const [what, data] of [
    ['Content-Length 100, 5 bytes of the body, then a reset', 'POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\nhello'],
    ['a chunked body cut after its first chunk, then a reset', 'POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n'],
  ] as const) {
    it(`${what}: one miss naming the request and how far it came`, async () => {
      const r = await replaying();
      const p = await program(r.port);
      await sendThenReset(r, p, data);
      expect(r.replayer.counters).toEqual({ replayed: 0, missed: 1, fellBack: 0, recorded: 0 });
      expect(r.lines()).toEqual([`missed POST /echo: the request was not read whole after 5 bytes of its body: aborted ${NEVER}`]);
    });
  }

  it('a chunk size of 2^64-1 (node:http takes it): read and counted as it comes, a miss once the program resets', async () => {
    const r = await replaying();
    const p = await program(r.port);
    // 3 MiB of the chunk: over the 1 MiB a replay keeps of a body, the rest only counted and hashed.
    const data = Buffer.concat([Buffer.from('POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n'), Buffer.alloc(3 * 1024 * 1024, 0x61)]);
    await sendThenReset(r, p, data);
    expect(r.replayer.counters).toEqual({ replayed: 0, missed: 1, fellBack: 0, recorded: 0 });
    expect(r.lines()).toEqual([`missed POST /echo: the request was not read whole after ${3 * 1024 * 1024} bytes of its body: aborted ${NEVER}`]);
  });

  it('a head cut by a reset once its request line came: one miss; a reset between requests: none', async () => {
    const r = await replaying();
    const p = await program(r.port);
    p.socket.write('GET /ok HTTP/1.1\r\nHost: h\r\n\r\n');
    await p.answers(1);
    await sendThenReset(r, p, 'GET /ok HTTP/1.1\r\nHost: h\r\nX-A: b');
    expect(r.replayer.counters).toEqual({ replayed: 1, missed: 1, fellBack: 0, recorded: 0 });
    expect(r.lines()).toEqual(['replayed GET /ok', `missed a request (its head not whole): the connection was cut (ECONNRESET) inside the request, before its head ended ${NEVER}`]);

    const idle = await replaying();
    const q = await program(idle.port);
    q.socket.write('GET /ok HTTP/1.1\r\nHost: h\r\n\r\n');
    await q.answers(1);
    q.socket.resetAndDestroy();
    await idle.done;
    await until(() => false, 100);
    expect(idle.replayer.counters).toEqual({ replayed: 1, missed: 0, fellBack: 0, recorded: 0 });
  });
});

describe('attack 18aq 1: an end (FIN) inside a request is a miss naming it, answered 400', () => {
  for (const [what, data, line] of [
    [
      'a Content-Length body',
      'POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\nhello',
      'missed POST /echo: the program ended its side of the connection inside the request (its body not whole) and debugkit answered 400 Bad Request',
    ],
    [
      'a chunked body',
      'POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n',
      'missed POST /echo: the program ended its side of the connection inside the request (its body not whole) and debugkit answered 400 Bad Request',
    ],
    [
      'a head',
      'GET /ok HTTP/1.1\r\nHost: h\r\n',
      'missed a request (its request line not read): the program ended its side of the connection inside the request (its head not whole) and debugkit answered 400 Bad Request',
    ],
    [
      'a request line',
      'GET /ok HTT',
      'missed a request (its request line not read): the program ended its side of the connection inside the request (its head not whole) and debugkit answered 400 Bad Request',
    ],
  ] as const) {
    it(what, async () => {
      const { r, text } = await exchange(data);
      expect(r.replayer.counters).toEqual({ replayed: 0, missed: 1, fellBack: 0, recorded: 0 });
      expect(r.lines()).toEqual([line]);
      expect(text).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n[^]*Connection: close\r\n\r\n\{\n {2}"error": "debugkit: the program ended its side of the connection inside the request/);
    });
  }
});

describe('attack 18aq 4: chunked and pipelining games on the replayer', () => {
  it('four pipelined requests in one write (no body, Content-Length, chunked with an extension, no body): each answered in order', async () => {
    const { r, answers } = await exchange(
      'GET /ok HTTP/1.1\r\nHost: h\r\n\r\n' +
        'POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello' +
        'POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2;ext=1\r\nhe\r\n3\r\nllo\r\n0\r\nX-Trailer: t\r\n\r\n' +
        'GET /ok HTTP/1.1\r\nHost: h\r\n\r\n',
    );
    expect(answers).toEqual(['HTTP/1.1 200 OK answer get', 'HTTP/1.1 200 OK answer post', 'HTTP/1.1 200 OK answer post', 'HTTP/1.1 200 OK answer get']);
    expect(r.replayer.counters).toEqual({ replayed: 4, missed: 0, fellBack: 0, recorded: 0 });
  });

  it('Content-Length and Transfer-Encoding both: the body is read as chunked (as the recorder reads it), the request after it answered too', async () => {
    const { r, answers } = await exchange('POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET /ok HTTP/1.1\r\nHost: h\r\n\r\n');
    expect(answers).toEqual(['HTTP/1.1 200 OK answer post', 'HTTP/1.1 200 OK answer get']);
    expect(r.replayer.counters).toEqual({ replayed: 2, missed: 0, fellBack: 0, recorded: 0 });
  });

  it('a chunk size past 2^64 (17 hex digits): refused 400, a counted miss naming the request', async () => {
    const { r, answers } = await exchange('POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\nhello\r\n0\r\n\r\n');
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatch(/^HTTP\/1\.1 400 Bad Request \{\n {2}"error": "debugkit: debugkit's HTTP server could not parse the request \(HPE_INVALID_CHUNK_SIZE: /);
    expect(r.replayer.counters).toEqual({ replayed: 0, missed: 1, fellBack: 0, recorded: 0 });
    expect(r.lines()[0]).toMatch(/^missed POST \/echo: debugkit's HTTP server could not parse the request \(HPE_INVALID_CHUNK_SIZE: /);
  });
});

describe('attack 18aq 4: pipelined requests to a program that reads no answer', () => {
  it('2,000 GETs in one write, 64 KiB answers, nothing read: the replayer takes a bounded number, then every one is answered once the program reads', async () => {
    const PAD = 'p'.repeat(1024);
    const big = buildHttpMock(
      {
        method: 'GET',
        url: 'http://h/big',
        requestHeaders: [['X-Pad', PAD]],
        requestBody: '',
        statusCode: 200,
        responseHeaders: [],
        responseBody: 'b'.repeat(64 * 1024),
        requestTime: new Date(0),
        responseTime: new Date(0),
      },
      { name: 'big' },
    );
    const replayer = new HttpReplayer({ matcher: new HttpMatcher([big]) });
    const server = net.createServer((socket) => void replayer.serve({ target: { host: 'h', port: 80 }, client: socket }, { scheme: 'http' }));
    const port = await new Promise<number>((r) => server.listen(0, '127.0.0.1', () => r((server.address() as net.AddressInfo).port)));
    closers.push(() => void server.close());
    const p = await program(port);
    p.socket.pause();
    // A 1 KiB header each: some 60 requests to a 64 KiB read.
    const N = 2000;
    p.socket.write(`GET /big HTTP/1.1\r\nHost: h\r\nX-Pad: ${PAD}\r\n\r\n`.repeat(N));
    const taken = () => replayer.counters.replayed + replayer.counters.missed;
    // Until the replayer stops taking requests for 2,000 turns (the old one took half of them: 62 MiB of answers held).
    for (let still = 0; still < 2000 && taken() < N;) {
      const before = taken();
      await new Promise((r) => setImmediate(r));
      still = taken() === before ? still + 1 : 0;
    }
    // Measured: 183 taken (64 awaiting their answers, a read of requests, what the socket buffers hold); 993 and 1,499 in two runs before.
    expect(taken()).toBeLessThan(400);
    let bytes = 0;
    p.socket.removeAllListeners('data');
    p.socket.on('data', (c: Buffer) => (bytes += c.length));
    p.socket.resume();
    await until(() => taken() === N && bytes >= N * 64 * 1024, 10_000_000);
    expect(replayer.counters).toEqual({ replayed: N, missed: 0, fellBack: 0, recorded: 0 });
    expect(bytes).toBeGreaterThan(N * 64 * 1024);
  });
});
