import http2 from 'node:http2';
import net from 'node:net';
import { afterEach } from 'vitest';
import { HttpMatcher } from '../http/matcher.js';
import type { GrpcExchange } from './keploy.js';
import { GrpcIndex } from './matcher.js';
import { replayH2, type ReplayH2Options } from './replayer.js';

const closers: Array<() => void> = [];
afterEach(() => {
  for (const c of closers.splice(0)) c();
});

/** A loopback listener whose connections are served by replayH2; returns an h2c client to it, both closed after the test. */
export async function replaying(o: Partial<ReplayH2Options>) {
  const counts = { replayed: 0, missed: 0, fellBack: 0 };
  const misses: string[] = [];
  const server = net.createServer((socket) => {
    // As the capture proxy does on every socket it accepts: without it each window update waits for a delayed ACK.
    socket.setNoDelay(true);
    void replayH2(
      { id: 'c1', target: { host: '127.0.0.1', port: 1 }, client: socket },
      { scheme: 'http', grpc: new GrpcIndex([]), http: new HttpMatcher([]), onMiss: 'fail', counts, missed: (m) => misses.push(m), recorded: () => {}, ...o },
    );
  });
  const port = await new Promise<number>((r) => server.listen(0, '127.0.0.1', () => r((server.address() as net.AddressInfo).port)));
  const client = http2.connect(`http://127.0.0.1:${port}`, { createConnection: () => net.connect({ host: '127.0.0.1', port, noDelay: true }) });
  client.on('error', () => {});
  closers.push(
    () => client.destroy(),
    () => server.close(),
  );
  return { client, counts, misses };
}

/** A unary call to /x.Y/Z on api.test: request `hello`, answer `hi`, status OK. */
export const unary: GrpcExchange = {
  requestHeaders: { ':path': '/x.Y/Z', ':method': 'POST', ':authority': 'api.test', 'content-type': 'application/grpc' },
  requestMessages: [{ compressed: false, data: Buffer.from('hello') }],
  responseHeaders: { ':status': '200', 'content-type': 'application/grpc' },
  responseMessages: [{ compressed: false, data: Buffer.from('hi') }],
  trailers: { 'grpc-status': '0', 'grpc-message': '' },
  requestTime: new Date(0),
  responseTime: new Date(0),
};

/** Raw HTTP/2 frames, as an attacker's program sends them (frame types and flags, RFC 9113 6). */
export const HEADERS = 0x1;
export const DATA = 0x0;
export const SETTINGS = 0x4;
export const PING = 0x6;
export const CONTINUATION = 0x9;
export const END_STREAM = 0x1;
export const END_HEADERS = 0x4;
export const ACK = 0x1;

export function frame(type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream, 5);
  return Buffer.concat([head, payload]);
}
/** An HPACK literal without indexing, its name the static table's entry `index` (below 15). */
export const literal = (index: number, value: string) => Buffer.concat([Buffer.from([index, value.length]), Buffer.from(value, 'latin1')]);
/** GET http://api.test/ok. */
export const getOk = Buffer.concat([Buffer.from([0x82, 0x86]), literal(4, '/ok'), literal(1, 'api.test')]);
/** POST http://api.test/upload. */
export const postUpload = Buffer.concat([Buffer.from([0x83, 0x86]), literal(4, '/upload'), literal(1, 'api.test')]);
/** POST /x.Y/Z, content-type application/grpc. */
export const grpcCall = Buffer.concat([Buffer.from([0x83, 0x86]), literal(4, '/x.Y/Z'), literal(1, 'api.test'), Buffer.from([0x0f, 0x10, 16]), Buffer.from('application/grpc')]);
