import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { dial, dialFor } from './dial.js';

describe('dial', () => {
  it('connects, or rejects when the destination cannot be reached', async () => {
    const server = net.createServer((s) => s.end('hi'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as net.AddressInfo).port;
    const socket = await dial({ host: '127.0.0.1', port }, 5000);
    const text = await new Promise<string>((r) => socket.once('data', (b: Buffer) => r(b.toString())));
    socket.destroy();
    expect(text).toBe('hi');
    await new Promise<void>((r) => server.close(() => r()));
    await expect(dial({ host: '127.0.0.1', port }, 5000)).rejects.toThrow(/ECONNREFUSED/);
  });
});

describe('dialFor', () => {
  it("closes the program's socket when the destination cannot be reached", async () => {
    const server = net.createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as net.AddressInfo).port;
    await new Promise<void>((r) => server.close(() => r()));
    const client = { destroyed: false, destroy: () => void (client.destroyed = true) };
    await expect(dialFor({ target: { host: '127.0.0.1', port }, client })).rejects.toThrow(/ECONNREFUSED/);
    expect(client.destroyed).toBe(true);
  });
});
