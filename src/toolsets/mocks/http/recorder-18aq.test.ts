// Round 18aq 4: chunked and pipelining games on the HTTP/1 recording proxy. The bytes always go
// through untouched (the real server decides); what the recording keeps must match what happened,
// and what it could not keep must be said. Driven through the HTTP protocol's recorder (what
// keploy_mock_record runs for each connection), a raw socket on the program's side, a node:http origin.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HttpMock, Mock } from '../keploy/types.js';
import type { InterceptedConnection } from '../proxy/proxy.js';
import type { DebugkitCa } from '../tls/ca.js';
import { recorder } from './index.js';
import { interceptingListener, startOrigin, type Closable, type Origin } from './test-support.js';

let origin: Origin;
beforeAll(async () => {
  origin = await startOrigin();
});
afterAll(() => origin.close());

/** Waits until `done()`, a turn of the loop at a time; gives up after `turns` turns (the assertion after it then fails). */
async function until(done: () => boolean, turns = 50_000) {
  for (let i = 0; i < turns && !done(); i++) await new Promise((r) => setImmediate(r));
}

/** Sends `data` on one connection through the recorder, half-closes, reads until the close; what was recorded, dropped and warned. */
async function record(data: string) {
  const mocks: Mock[] = [];
  const dropped: string[] = [];
  const warnings: string[] = [];
  let done!: Promise<void>;
  const l: Closable = await interceptingListener({ host: '127.0.0.1', port: origin.port }, (conn) => {
    done = recorder.record(conn as InterceptedConnection, {
      ca: undefined as unknown as DebugkitCa,
      dial: () => Promise.reject(new Error('plain HTTP dials its target itself')),
      onMock: (m) => mocks.push(m),
      onDropped: (why) => dropped.push(why),
      warn: (w) => warnings.push(w),
    });
    return done;
  });
  const socket = net.connect({ host: '127.0.0.1', port: l.port, allowHalfOpen: true });
  socket.on('error', () => {});
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  await new Promise((r) => socket.once('connect', r));
  socket.end(data);
  await new Promise((r) => socket.once('close', r));
  await until(() => done !== undefined);
  await done;
  await l.close();
  const answers =
    Buffer.concat(chunks)
      .toString('latin1')
      .match(/HTTP\/1\.1 \d{3}/g) ?? [];
  return { mocks: mocks as HttpMock[], dropped, warnings, answers };
}

const host = () => `Host: localhost:${origin.port}`;

describe('attack 18aq 4: chunked and pipelining games on the recording proxy', () => {
  it('four pipelined requests in one write, bodies by none, Content-Length, chunked with an extension and trailers: four mocks, each its own body', async () => {
    const r = await record(
      `GET /hello HTTP/1.1\r\n${host()}\r\n\r\n` +
        `POST /echo HTTP/1.1\r\n${host()}\r\nContent-Length: 5\r\n\r\nhello` +
        `POST /echo HTTP/1.1\r\n${host()}\r\nTransfer-Encoding: chunked\r\n\r\n2;ext=1\r\nhe\r\n3\r\nllo\r\n0\r\nX-Trailer: t\r\n\r\n` +
        `GET /poll HTTP/1.1\r\n${host()}\r\nConnection: close\r\n\r\n`,
    );
    expect(r.answers).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200', 'HTTP/1.1 200', 'HTTP/1.1 200']);
    expect(r.mocks.map((m) => `${m.spec.req.method} ${new URL(m.spec.req.url).pathname} ${m.spec.req.body} -> ${m.spec.resp.body}`)).toEqual([
      'GET /hello  -> hello world\n',
      'POST /echo hello -> {"method":"POST","received":"hello","length":5}',
      'POST /echo hello -> {"method":"POST","received":"hello","length":5}',
      expect.stringMatching(/^GET \/poll {2}-> \{"poll":\d+\}$/),
    ]);
    expect(r.dropped).toEqual([]);
  });

  it('a chunk size of 16 hex digits: relayed; the connection is no longer recorded, and the recording says so', async () => {
    const r = await record(`POST /echo HTTP/1.1\r\n${host()}\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nhello\r\n0\r\n\r\n`);
    expect(r.mocks).toEqual([]);
    expect(r.dropped).toEqual(['the rest of an HTTP/1 connection was relayed, not recorded: it stopped parsing as HTTP (an invalid chunk size line: "ffffffffffffffff")']);
  });

  it('Content-Length and Transfer-Encoding both: what node:http answered (400) is what is recorded, nothing more', async () => {
    const r = await record(`POST /echo HTTP/1.1\r\n${host()}\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`);
    expect(r.answers).toEqual(['HTTP/1.1 400']);
    expect(r.mocks.map((m) => `${m.spec.req.method} ${m.spec.resp.status_code}`)).toEqual(['POST 400']);
  });

  it('a head never finished, then the end: nothing recorded, nothing held', async () => {
    const r = await record(`GET /hello HTTP/1.1\r\n${host()}\r\nX-A: b`);
    expect(r.mocks).toEqual([]);
  });
});
