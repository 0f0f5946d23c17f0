import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { DebuggerPorts, replaySummary } from './under.js';

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

describe("replaySummary: a debug session's replay, said at its end", () => {
  const usage = { unused: 0, unusedNames: [], reused: 0, reusedNames: [] };
  it('says the calls matched by body size only, unverified, as keploy_mock_test does (attack 18ac f1-3)', () => {
    const line = 'POST http://api/upload: mock-3 by body size only (1572864 bytes; the recording kept no digest of the body)';
    expect(replaySummary('s', { replayed: 2, missed: 0, usage, unverified: 1, unverifiedLines: [line] })).toBe(
      `mock set 's': 2 replayed, 0 missed, 1 matched by body size only, unverified (first: ${line})`,
    );
    expect(replaySummary('s', { replayed: 2, missed: 1, usage: { ...usage, unused: 1 }, unverified: 0, unverifiedLines: [] })).toBe("mock set 's': 2 replayed, 1 missed, 1 never used");
  });
});
