import { mkdirSync, readFileSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boundPromise } from '../src/core/wait.js';
import { connectHttp, startHttpServer, type HttpServer, type TestClient } from './helpers/client.js';
import { rpc } from './helpers/control.js';
import { mocksWorkspace } from './helpers/programs.js';
import { hugeScalar, manyDocuments, stopHard, track } from './helpers/stall.js';

/**
 * Issue 18 for keploy_mock_test: loading the set to replay (parsing its YAML) used to run on the
 * server's event loop, so one key replaying a big set stopped the server answering everyone. Now
 * the set is loaded on the mock-set worker threads, within stated bounds. Against a real
 * `debugkit serve`: another client's pings are answered within PING_BOUND_MS while the set loads,
 * a set at the bounds still replays, and sets past them are refused naming the bound.
 */

/** How long another client's ping may take while a set loads (idle, a few ms; the old code held it for seconds). */
const PING_BOUND_MS = 1000;

/**
 * Pings (plain JSON-RPC POSTs, on connections of their own) until `pending` is done, the next
 * one when the last is answered and 10 ms have passed or `pending` is done (a flood of pings
 * would only compete for the CPU with the work measured); each round trip in ms, and how many
 * were answered before `pending` was done.
 */
async function pingWhile(server: HttpServer, pending: { promise: Promise<unknown>; done: () => boolean }): Promise<{ rtts: number[]; before: number }> {
  const rtts: number[] = [];
  let before = 0;
  const settled = pending.promise.catch(() => undefined);
  do {
    const t = performance.now();
    const answer = await rpc(server.url, server.key, { jsonrpc: '2.0', id: rtts.length + 1, method: 'ping' });
    expect(answer.status).toBe(200);
    rtts.push(performance.now() - t);
    if (pending.done()) break;
    before++;
    await boundPromise(settled, { timeoutMs: 10 }); // a pause between pings, cut short when `pending` settles
  } while (!pending.done());
  return { rtts, before };
}

describe('keploy_mock_test loads its set off the event loop, within bounds', () => {
  let server: HttpServer;
  let a: TestClient;
  let root: string;
  let kv: Server;
  let kvPort: number;

  beforeAll(async () => {
    root = mocksWorkspace('debugkit-nostall-replay-');
    // Past the bounds: one 100 MB scalar (over 32 MiB), 200,000 small documents (over 20,000).
    for (const name of ['huge', 'many']) mkdirSync(path.join(root, 'keploy', name), { recursive: true });
    hugeScalar(path.join(root, 'keploy', 'huge', 'mocks.yaml'), 100);
    manyDocuments(path.join(root, 'keploy', 'many', 'mocks.yaml'), 200_000);
    // A line-protocol service (kv.py's), recorded once and then gone.
    kv = createServer((socket) => socket.on('data', (d) => socket.write(`VALUE ${String(d).trim().split(' ')[1]}-42\n`)));
    kvPort = await new Promise<number>((r) => kv.listen(0, '127.0.0.1', () => r((kv.address() as AddressInfo).port)));
    server = await startHttpServer(['--root', root, '--toolsets', 'mocks']);
    a = await connectHttp(server.url, server.key);
  });
  afterAll(async () => {
    await a?.close().catch(() => undefined);
    await stopHard(server?.proc);
    kv?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('a set of 20,000 documents (seconds of parsing) loads while another client is answered, and its mocks replay intact', async () => {
    const command = `/usr/bin/python3 kv.py ${kvPort} melon`;
    const rec = await a.tool('keploy_mock_record', { command, path: 'keploy-replay' });
    expect(rec.isError, rec.text).toBe(false);
    expect(rec.structured).toMatchObject({ success: true, mockCount: 1, protocols: ['Generic'] });
    await new Promise<void>((r) => kv.close(() => r()));
    // The set replayed: 19,999 documents of a kind no replayer takes (Mongo), then the recorded exchange.
    const slow = path.join(root, 'keploy-replay', 'slow', 'mocks.yaml');
    mkdirSync(path.dirname(slow), { recursive: true });
    manyDocuments(slow, 19_999, { kind: 'Mongo', prefix: 'filler-' });
    appendFileSync(slow, readFileSync(path.join(root, rec.structured.mockFilePath), 'utf8'));
    writeFileSync(path.join(root, 'kv-out.txt'), '');

    const replay = track(a.tool('keploy_mock_test', { command, mockName: 'slow', path: 'keploy-replay' }));
    const { rtts, before } = await pingWhile(server, replay);
    const r = await replay.promise;
    expect(r.isError, r.text).toBe(false);
    expect(r.structured).toMatchObject({ success: true, mocksReplayed: 1, mocksMissed: 0, appExitCode: 0 });
    expect(readFileSync(path.join(root, 'kv-out.txt'), 'utf8')).toBe('VALUE melon-42\n');
    // Pings were answered while the set loaded, each well within the bound.
    expect(before).toBeGreaterThan(1);
    expect(Math.max(...rtts)).toBeLessThan(PING_BOUND_MS);
  });

  it('sets past the bounds are refused with an error naming the bound and what is valid; another client is answered meanwhile', async () => {
    const valid = 'keploy_mock_test replays sets of at most 32 MiB and 20000 documents';
    for (const [name, bound] of [
      ['huge', '100 MiB, over the 32 MiB'],
      ['many', '200000 documents, over the 20000'],
    ] as const) {
      const replay = track(a.tool('keploy_mock_test', { command: '/usr/bin/python3 -c "pass"', mockName: name }));
      const { rtts } = await pingWhile(server, replay);
      const r = await replay.promise;
      expect(r.isError, r.text).toBe(true);
      expect(r.text).toContain(`Mock set '${name}' was not loaded: ${bound} a set is parsed to for replay`);
      expect(r.text).toContain(valid);
      expect(Math.max(...rtts)).toBeLessThan(PING_BOUND_MS);
    }
  });
});
