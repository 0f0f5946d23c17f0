import http2 from 'node:http2';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpMatcher } from '../http/matcher.js';
import { frameMessages } from './grpc.js';
import { GrpcIndex } from './matcher.js';
import { replayH2, type ReplayH2Options } from './replayer.js';

const closers: Array<() => void> = [];
afterEach(() => {
  for (const c of closers.splice(0)) c();
});

/** A loopback listener whose connections are served by replayH2; returns an h2c client to it. */
async function replaying(o: Partial<ReplayH2Options>) {
  const counts = { replayed: 0, missed: 0, fellBack: 0 };
  const misses: string[] = [];
  const server = net.createServer((socket) => {
    void replayH2(
      { id: 'c1', target: { host: '127.0.0.1', port: 1 }, client: socket },
      { scheme: 'http', grpc: new GrpcIndex([]), http: new HttpMatcher([]), onMiss: 'fail', counts, missed: (m) => misses.push(m), recorded: () => {}, ...o },
    );
  });
  const port = await new Promise<number>((r) => server.listen(0, '127.0.0.1', () => r((server.address() as net.AddressInfo).port)));
  const client = http2.connect(`http://127.0.0.1:${port}`);
  client.on('error', () => {});
  closers.push(
    () => client.destroy(),
    () => server.close(),
  );
  return { client, counts, misses };
}

function call(client: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body: Buffer) {
  return new Promise<{ headers: http2.IncomingHttpHeaders; trailers: http2.IncomingHttpHeaders; body: string; reset?: number }>((resolve) => {
    const req = client.request(headers);
    let h: http2.IncomingHttpHeaders = {};
    let t: http2.IncomingHttpHeaders = {};
    let text = '';
    req.on('response', (x) => (h = x));
    req.on('trailers', (x) => (t = x));
    req.on('data', (d) => (text += d));
    req.on('error', () => {});
    req.on('end', () => resolve({ headers: h, trailers: t, body: text }));
    req.on('close', () => resolve({ headers: h, trailers: t, body: text, ...(req.rstCode ? { reset: req.rstCode } : {}) }));
    // A GET is ended with its headers by node:http2.
    if (!req.writableEnded) req.end(body);
  });
}

const grpcHeaders = (path: string) => ({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' });

describe('replayH2 misses', () => {
  it('a gRPC call to a method the set lacks gets UNIMPLEMENTED naming it; a plain request a 502', async () => {
    const { client, counts, misses } = await replaying({});
    const r = await call(client, grpcHeaders('/x.Y/Z'), frameMessages([{ compressed: false, data: Buffer.from('hi') }]));
    expect(r.headers['grpc-status']).toBe('12');
    expect(decodeURIComponent(String(r.headers['grpc-message']))).toBe('debugkit mocks: gRPC /x.Y/Z: no mock for this method (the set has no gRPC mocks)');
    const plain = await call(client, { ':method': 'GET', ':path': '/a' }, Buffer.alloc(0));
    expect(plain.headers[':status']).toBe(502);
    expect(plain.body).toBe('debugkit mocks: no mock matches GET /a (HTTP/2)\n');
    expect(counts).toEqual({ replayed: 0, missed: 2, fellBack: 0 });
    expect(misses).toHaveLength(2);
  });

  it('passthrough to a real server that cannot be reached: the stream is reset and the miss reported', async () => {
    const { client, counts, misses } = await replaying({ onMiss: 'passthrough', dial: () => Promise.reject(new Error('connect ECONNREFUSED')) });
    const r = await call(client, grpcHeaders('/x.Y/Z'), frameMessages([]));
    expect(r.reset).toBe(http2.constants.NGHTTP2_INTERNAL_ERROR);
    expect(counts.missed).toBe(1);
    expect(misses[0]).toMatch(/no mock for this method.*; the real server failed too: connect ECONNREFUSED$/);
  });
});
