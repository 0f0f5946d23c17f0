import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { DebuggerPorts } from './under.js';

describe('DebuggerPorts: the debugger own loopback ports', () => {
  it('finds a port the debugger listens on, and reads /proc at most once a while for ports that are not its own (attack 18z Y2: once per connection)', async () => {
    const server = net.createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const own = (server.address() as net.AddressInfo).port;
    let reads = 0;
    const ports = new DebuggerPorts(() => (reads++, [process.pid]));
    try {
      expect(await ports.has(own)).toBe(true);
      for (let i = 0; i < 200; i++) expect(await ports.has(1 + i)).toBe(false);
      // Before: 201 reads of /proc/net/tcp (1.5 MB each with 18,000 sockets, on the loop).
      expect(reads).toBeLessThanOrEqual(2);
    } finally {
      server.close();
    }
  });
});
