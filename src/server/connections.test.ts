import { Agent, createServer, request, type Server } from 'node:http';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultMaxConnections, limitConnections, openFilesLimit } from './connections.js';
import { pollUntil } from '../core/wait.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function serve(max: number, handler: (res: import('node:http').ServerResponse) => void) {
  const server = createServer((req, res) => {
    limit.admit(req, res);
    handler(res);
  });
  servers.push(server);
  const limit = limitConnections(server, max);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, limit, port: (server.address() as net.AddressInfo).port };
}

/** A connection that sends the start of a request's headers and nothing more; resolves once it is open. */
function halfOpen(port: number): Promise<net.Socket & { gone: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write('GET / HTTP/1.1\r\nHost: x\r\n');
      resolve(Object.assign(socket, { gone: new Promise<void>((r) => socket.once('close', () => r())) }));
    });
    socket.on('error', () => undefined);
    socket.once('error', reject);
  });
}

function get(port: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Waits until `ok()` (bounded). */
async function until(ok: () => boolean, what: string): Promise<void> {
  if (!(await pollUntil(ok, { timeoutMs: 10_000, intervalMs: 5 }))) throw new Error(`timed out waiting for ${what}`);
}

describe('the bound on open connections', () => {
  it('a request is answered however many half-open connections are held: the one waiting longest is closed for room', async () => {
    const { port, limit } = await serve(8, (res) => res.end('ok'));
    const held = [];
    for (let i = 0; i < 8; i++) held.push(await halfOpen(port));
    await until(() => limit.open === 8, '8 connections open');
    expect(await get(port)).toEqual({ status: 200, body: 'ok' });
    await held[0]!.gone; // the oldest went
    expect(limit.evicted).toBe(1);
    expect(held.slice(1).every((s) => !s.destroyed)).toBe(true);
    // Newer half-open connections push out the older ones, in the order they came.
    const newer = [];
    for (let i = 0; i < 8; i++) newer.push(await halfOpen(port));
    await Promise.all(held.map((s) => s.gone));
    expect(limit.evicted).toBe(8);
    expect(newer.every((s) => !s.destroyed)).toBe(true);
    expect((await get(port)).status).toBe(200);
    for (const s of newer) s.destroy();
  });

  it("half-open connections never push out a working client's kept-alive connection (attack 18f F4)", async () => {
    const { port, limit } = await serve(8, (res) => res.end('ok'));
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const ask = () =>
      new Promise<number>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path: '/', agent, method: 'POST' }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end('x');
      });
    expect(await ask()).toBe(200);
    const flood = [];
    for (let i = 0; i < 40; i++) flood.push(await halfOpen(port));
    expect(limit.evicted).toBe(40 - 7);
    // Its next request goes on the same connection, which is still there.
    expect(await ask()).toBe(200);
    agent.destroy();
    for (const s of flood) s.destroy();
  });

  it('a connection answering a request is never closed for room: with all of them busy, a new one is refused', async () => {
    const waiting: Array<import('node:http').ServerResponse> = [];
    const { port, limit } = await serve(4, (res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write(': open\n\n');
      waiting.push(res);
    });
    const streams = await Promise.all(
      Array.from(
        { length: 4 },
        () =>
          new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
            const req = request({ host: '127.0.0.1', port, path: '/', agent: false }, resolve);
            req.on('error', reject);
            req.end();
          }),
      ),
    );
    await until(() => waiting.length === 4, 'four streams answering');
    await expect(get(port)).rejects.toThrow(/socket hang up|ECONNRESET/);
    expect(limit.refused).toBe(1);
    // The streams still flow.
    let seen = '';
    streams[0]!.on('data', (d: Buffer) => (seen += String(d)));
    waiting[0]!.write('data: 1\n\n');
    await until(() => seen.includes('data: 1\n\n'), 'the event on the first stream');
    // Once one ends, a new request is answered again.
    waiting[1]!.end();
    await until(() => limit.open === 3, 'the ended stream closed');
    for (const s of streams) s.destroy();
    for (const res of waiting) res.end();
  });

  it('the default is half the open-files limit, within 64 and 16,384', () => {
    const limit = openFilesLimit();
    expect(limit).toBeGreaterThan(0);
    expect(defaultMaxConnections()).toBe(Math.max(64, Math.min(16_384, Math.floor(limit! / 2))));
  });
});
