// Round 18ah (attacker o1-2): on a miss relayed to the real server (onMiss passthrough or record),
// the HTTP/2 relay wrote the server's answer to the program without backpressure: a program that
// did not read its answer had the server's bytes queue in debugkit, 70 MB/s, until 2.7 GB. The
// relay now pauses the real server's stream while the program's is full.
import http2 from 'node:http2';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { pollUntil } from '../../../core/wait.js';
import { replaying } from './test-support.js';

const servers: http2.Http2Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/** A real server that answers every stream with an endless body, written with backpressure: it counts what it sent and whether it is waiting. */
async function endlessServer() {
  const state = { sent: 0, blocked: false, streams: [] as http2.ServerHttp2Stream[] };
  const server = http2.createServer();
  server.on('stream', (stream) => {
    state.streams.push(stream);
    stream.on('error', () => {});
    stream.respond({ ':status': 200, 'content-type': 'application/octet-stream' });
    const chunk = Buffer.alloc(64 * 1024, 'e');
    const pump = () => {
      while (!stream.destroyed && state.sent < 256 * 1024 * 1024) {
        state.sent += chunk.length;
        if (!stream.write(chunk)) {
          state.blocked = true;
          stream.once('drain', () => {
            state.blocked = false;
            pump();
          });
          return;
        }
      }
    };
    pump();
  });
  servers.push(server);
  const port = await new Promise<number>((r) => server.listen(0, '127.0.0.1', () => r((server.address() as net.AddressInfo).port)));
  return { state, port };
}

describe('attack 18ah o1-2: the HTTP/2 relay of a miss keeps backpressure from the program to the real server', () => {
  it('a program that does not read its answer stops the real server within a few MiB', async () => {
    const upstream = await endlessServer();
    const { client } = await replaying({ onMiss: 'passthrough', dial: () => Promise.resolve(net.connect({ host: '127.0.0.1', port: upstream.port, noDelay: true })) });
    const req = client.request({ ':method': 'GET', ':path': '/miss', ':authority': 'h' });
    req.on('error', () => {});
    await new Promise<void>((r) => req.once('response', () => r()));
    req.pause();
    // The real server stays blocked once the program's stream, debugkit's and the connections' windows are full:
    // blocked, and still blocked after ten round trips through the loop. Without backpressure the relay reads on
    // and queues, and the server runs to its 256 MiB end.
    let stable = false;
    while (!stable && upstream.state.sent < 256 * 1024 * 1024) {
      expect(await pollUntil(() => upstream.state.blocked || upstream.state.sent >= 256 * 1024 * 1024, { timeoutMs: 60_000, intervalMs: 10 })).toBe(true);
      const before = upstream.state.sent;
      for (let i = 0; i < 10; i++) await new Promise<void>((r) => client.ping(() => r()));
      stable = upstream.state.blocked && upstream.state.sent === before;
    }
    expect(stable).toBe(true);
    expect(upstream.state.sent).toBeLessThan(32 * 1024 * 1024);
    req.close();
  }, 90_000);
});
