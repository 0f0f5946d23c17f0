import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectStdio, type TestClient } from './helpers/client.js';
import { mocksWorkspace } from './helpers/programs.js';

/**
 * Attack 18u P7: a recorded response header holding DEL (0x7f) or 0x01 was recorded faithfully, but
 * node:http refuses to send such a value: the program got a 502 from debugkit while the answer said
 * "Replayed 1 mocks", success true. Now the response goes out without those headers and the answer
 * counts it as a miss naming them.
 */

let root: string;
let dk: TestClient;
let upstream: net.Server;
let port: number;

// A raw upstream: header values node:http would never send itself.
const HEAD = Buffer.concat([
  Buffer.from('HTTP/1.1 200 OK\r\nX-Bin: '),
  Buffer.from([0xff, 0xfe, 0xe9, 0x09, 0x41, 0x7f, 0xc3, 0xa9]),
  Buffer.from('\r\nX-Long: '),
  Buffer.from('v\x01'.repeat(300)),
  Buffer.from('\r\nX-Plain: kept\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok'),
]);

beforeAll(async () => {
  root = mocksWorkspace('debugkit-attack-18u-http-');
  writeFileSync(path.join(root, 'hget.sh'), '#!/bin/sh\ncurl -s -D - "http://127.0.0.1:$1/h" > hget-out.txt\n');
  chmodSync(path.join(root, 'hget.sh'), 0o755);
  upstream = net.createServer((c) => {
    c.on('error', () => {});
    c.once('data', () => c.end(HEAD));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  port = (upstream.address() as net.AddressInfo).port;
  dk = await connectStdio({ root, args: ['--toolsets', 'mocks'] });
}, 60_000);
afterAll(async () => {
  await dk?.close();
  await new Promise<void>((r) => upstream?.close(() => r()));
});

describe('attack 18u P7: replaying a recorded header node:http refuses to send', () => {
  it('answers the recorded status and body without those headers, and reports the replay as a miss naming them', async () => {
    const rec = await dk.structured('keploy_mock_record', { command: `./hget.sh ${port}`, path: 'keploy-hdr' });
    expect(rec).toMatchObject({ success: true, mockCount: 1 });
    const recorded = readFileSync(path.join(root, 'hget-out.txt'), 'latin1');
    expect(recorded).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(recorded).toContain('X-Bin: \xff\xfe\xe9\tA\x7f\xc3\xa9\r\n');
    expect(recorded.endsWith('\r\n\r\nok')).toBe(true);

    writeFileSync(path.join(root, 'hget-out.txt'), '');
    const replay = await dk.structured('keploy_mock_test', { command: `./hget.sh ${port}`, path: 'keploy-hdr' });
    const replayed = readFileSync(path.join(root, 'hget-out.txt'), 'latin1');
    // The recorded answer (before: a 502 from debugkit), less the two headers.
    expect(replayed).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(replayed).toContain('X-Plain: kept\r\n');
    expect(replayed).not.toMatch(/X-Bin|X-Long/);
    expect(replayed.endsWith('\r\n\r\nok')).toBe(true);
    // And the answer says so (before: success true, "Replayed 1 mocks", no miss).
    expect(replay).toMatchObject({ success: false, mocksReplayed: 0, mocksMissed: 1, appExitCode: 0 });
    expect(replay.misses).toHaveLength(1);
    expect(replay.misses[0]).toMatch(/^GET \/h: .+: the recorded response was sent without its header X-Bin, header X-Long: values holding a control character/);
  }, 120_000);
});
