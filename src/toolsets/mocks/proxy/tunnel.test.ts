import { createHash } from 'node:crypto';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { pollUntil, sleep } from '../../../core/wait.js';
import { tunnel, type TunnelResult } from './tunnel.js';
import { connectLocal, listenLocal, readAll, startEchoServer } from './testing.js';

/**
 * A client socket whose server side is tunnelled to `port`: what a handler gets from the proxy,
 * without the proxy.
 */
async function tunnelled(port: number) {
  let done!: Promise<TunnelResult>;
  let serverSide!: net.Socket;
  const ready = new Promise<void>((resolve) => {
    front = net.createServer({ allowHalfOpen: true, pauseOnConnect: true }, (s) => {
      serverSide = s;
      done = tunnel({ client: s, target: { host: '127.0.0.1', port } });
      resolve();
    });
  });
  const client = await connectLocal(await listenLocal(front!));
  client.on('error', () => {});
  await ready;
  return { client, done, serverSide: () => serverSide };
}

let front: net.Server | undefined;
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  front?.close();
  for (const c of cleanups.splice(0)) await c();
});

describe('tunnel', () => {
  it('keeps the other direction open after a half-close (FIN is forwarded, not a close)', async () => {
    const echo = await startEchoServer();
    cleanups.push(echo.close);
    const { client, done } = await tunnelled(echo.port);
    const received = readAll(client);
    client.write('first ');
    client.end('second');
    expect((await received).toString()).toBe('first second');
    const result = await done;
    expect(result).toEqual({ bytesUp: 12, bytesDown: 12 });
  });

  it('respects backpressure: a target that does not read stops the reading from the client', async () => {
    let sink!: net.Socket;
    const gotSink = new Promise<void>((resolve) => {
      const server = net.createServer({ pauseOnConnect: true }, (s) => {
        sink = s;
        resolve();
      });
      cleanups.push(() => server.close());
      void listenLocal(server).then(async (port) => {
        const t = await tunnelled(port);
        state.client = t.client;
        state.serverSide = t.serverSide();
        state.done = t.done;
      });
    });
    const state = {} as { client: net.Socket; serverSide: net.Socket; done: Promise<TunnelResult> };
    await gotSink;
    await pollUntil(() => state.done !== undefined, { timeoutMs: 5000, intervalMs: 5 });
    const total = 64 * 1024 * 1024;
    const payload = Buffer.alloc(total, 7);
    state.client.write(payload);
    await sleep(1000); // a pause, not a wait: time for an unbounded proxy to read what it should not
    // Only kernel socket buffers (a few MB each on loopback) plus two 16 KB stream buffers may hold
    // data; an unbounded proxy would have read all 64 MB by now.
    const read = state.serverSide.bytesRead;
    expect(read).toBeLessThan(24 * 1024 * 1024);
    // Once the target reads, every byte arrives intact.
    const hash = createHash('sha256');
    let got = 0;
    sink.on('data', (d: Buffer) => {
      hash.update(d);
      got += d.length;
    });
    sink.resume();
    state.client.end();
    await state.done;
    expect(got).toBe(total);
    expect(hash.digest('hex')).toBe(createHash('sha256').update(payload).digest('hex'));
  });

  it('a refused connection closes the client and reports the error', async () => {
    const closed = net.createServer();
    const port = await listenLocal(closed);
    await new Promise((r) => closed.close(r));
    const { client, done } = await tunnelled(port);
    const result = await done;
    expect(result.error).toMatchObject({ code: 'ECONNREFUSED' });
    await readAll(client);
    expect(client.destroyed || client.readableEnded).toBe(true);
  });

  it('a client reset takes the target connection down too', async () => {
    let targetSide!: net.Socket;
    const targetClosed = new Promise<void>((resolve) => {
      const server = net.createServer((s) => {
        targetSide = s;
        s.on('error', () => {});
        s.resume(); // a server that reads notices the close
        s.once('close', () => resolve());
      });
      cleanups.push(() => server.close());
      void listenLocal(server).then(async (port) => {
        const t = await tunnelled(port);
        t.client.write('x');
        setTimeout(() => t.client.resetAndDestroy(), 100);
        await t.done;
      });
    });
    await targetClosed;
    expect(targetSide.destroyed).toBe(true);
  });
});
