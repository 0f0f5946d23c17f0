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
