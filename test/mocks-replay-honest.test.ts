// Attack round 18ac, findings f1-3, f1-5 and f1-6: keploy_mock_test reported a clean run while the
// program was served an answer the set holds for another request, or answered by debugkit itself.
// - f1-3: a request body over 1 MiB was matched on its size alone: a different body of the same
//   length got the answer recorded for the other one, "success, 1 replayed". Now a body over what
//   was kept is compared by its SHA-256 (the recorder keeps `body_sha256` beside `body_skipped`),
//   and a set without the digest (Keploy's own) matches by size only, said as unverified.
// - f1-5: a header value with a control character (recorded fine) was answered 400 by Node's own
//   HTTP parser in replay, "success, 0 missed". Now such a request is read as recorded and replayed;
//   one Node still cannot read is a counted miss with its line.
// - f1-6: a call that fell back to the real service was counted as missed with no line, and the
//   message said "1 mocks missed (`misses` lists the first 0)".
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { mocksFixture } from './helpers/mocks-fixture.js';

let api: Server | undefined;
let port = 0;

/** POSTs a file's bytes to /api and writes the answer to OUT. */
const POST = `const [file, port, out] = process.argv.slice(2);
const body = (await import('node:fs')).readFileSync(file);
const r = await fetch('http://127.0.0.1:' + port + '/api', { method: 'POST', body, headers: { 'content-type': 'application/json' } });
(await import('node:fs')).writeFileSync(out, r.status + ' ' + (await r.text()));
`;

/** Sends a raw request (a file's bytes) on one connection and writes what came back to OUT. */
const RAW = `const [file, port, out] = process.argv.slice(2);
const fs = await import('node:fs');
const net = await import('node:net');
const s = net.connect(Number(port), '127.0.0.1', () => s.write(fs.readFileSync(file)));
const got = [];
s.on('data', (c) => got.push(c));
s.on('end', () => { fs.writeFileSync(out, Buffer.concat(got)); s.end(); });
`;

const BIG = 1_500_000;
/** A JSON body of BIG bytes, all `c`. */
const big = (c: string) => `{"v":"${c.repeat(BIG - 8)}"}`;

const call = async (name: string, args: Record<string, unknown>): Promise<any> => {
  const r = await f.dk.tool(name, args);
  expect(r.isError, r.text).toBe(false);
  return r.structured;
};
const mockTest = (args: Record<string, unknown>) => call('keploy_mock_test', args);
const setOf = (rec: { mockFilePath: string }) => rec.mockFilePath.split('/').at(-2)!;
const out = (name: string) => readFileSync(path.join(f.root, name), 'latin1');

const f = mocksFixture('debugkit-mocks-honest-', async () => ({ stop: async () => {} }), {
  prepare: async (root) => {
    writeFileSync(path.join(root, 'post.mjs'), POST);
    writeFileSync(path.join(root, 'raw.mjs'), RAW);
    writeFileSync(path.join(root, 'a.json'), big('A'));
    writeFileSync(path.join(root, 'b.json'), big('B'));
    writeFileSync(path.join(root, 'small.json'), '{"v":"small"}');
    // The real service: lenient, as many are (it takes the header values Node refuses by default).
    api = createServer({ insecureHTTPParser: true }, (req, res) => {
      let n = 0;
      req.on('data', (c: Buffer) => (n += c.length));
      req.on('end', () => res.end(JSON.stringify({ answer: `for ${req.url} of ${n} bytes, first ${req.headers['x-first'] ?? '-'}`, note: req.headers['x-note'] ?? null })));
    });
    await new Promise<void>((r) => api!.listen(0, '127.0.0.1', r));
    port = (api.address() as AddressInfo).port;
  },
});
afterAll(() => new Promise((r) => (api?.listening ? api.close(r) : r(undefined))));

/** The mock file of a set. */
const mockFile = (dir: string, set: string) =>
  path.join(
    f.root,
    dir,
    set,
    readdirSync(path.join(f.root, dir, set)).find((n) => n.endsWith('.yaml'))!,
  );

describe('f1-3: a request body over 1 MiB', () => {
  let set = '';
  it('is recorded with the SHA-256 of the whole body, and a different body of the same length is a miss, not the answer recorded for the other', async () => {
    const rec = await call('keploy_mock_record', { command: `node post.mjs a.json ${port} rec-a.txt`, path: 'keploy-big' });
    expect(rec).toMatchObject({ success: true, mockCount: 1 });
    set = setOf(rec);
    const yaml = readFileSync(mockFile('keploy-big', set), 'utf8');
    expect(yaml).toContain('body_skipped: true');
    expect(yaml).toMatch(/body_sha256: "?[0-9a-f]{64}/);
    const same = await mockTest({ command: `node post.mjs a.json ${port} same.txt`, mockName: set, path: 'keploy-big', strict: true });
    expect(same, JSON.stringify(same)).toMatchObject({ success: true, mocksReplayed: 1, mocksMissed: 0 });
    expect(same).not.toHaveProperty('mocksUnverified');
    // Before: success, 1 replayed, and the program got the answer recorded for a.json.
    const other = await mockTest({ command: `node post.mjs b.json ${port} other.txt`, mockName: set, path: 'keploy-big' });
    expect(other).toMatchObject({ success: false, mocksReplayed: 0, mocksMissed: 1 });
    expect(other.misses[0]).toContain('SHA-256 differs');
    expect(out('other.txt')).toMatch(/^502 /);
  });

  it('a set without the digest (as Keploy writes it) matches by size only: replayed, but said as unverified, and strict fails it', async () => {
    const file = mockFile('keploy-big', set);
    writeFileSync(file, readFileSync(file, 'utf8').replace(/^\s*body_sha256:.*\n/m, ''));
    expect(readFileSync(file, 'utf8')).not.toContain('body_sha256');
    const run = await mockTest({ command: `node post.mjs b.json ${port} unverified.txt`, mockName: set, path: 'keploy-big' });
    expect(run).toMatchObject({ success: true, mocksReplayed: 1, mocksMissed: 0, mocksUnverified: 1 });
    expect(run.message).toContain('matched by size only, not verified');
    expect(run.unverifiedMatches[0]).toMatch(/^POST \/api: .*1500000 bytes.*size only/);
    const strict = await mockTest({ command: `node post.mjs b.json ${port} unverified.txt`, mockName: set, path: 'keploy-big', strict: true });
    expect(strict).toMatchObject({ success: false, mocksReplayed: 1, mocksMissed: 0, mocksUnverified: 1 });
  });

  it('a mock holding the whole body (hand-made, or Keploy-recorded) is compared with the whole request, not its size', async () => {
    const file = mockFile('keploy-big', set);
    // The request's body written in full (its Content-Length is a volatile header, never compared).
    const full = readFileSync(file, 'utf8')
      .replace(/^(\s*)body_skipped: true\n/m, '')
      .replace(/^\s*body_size: \d+\n/m, '')
      .replace(/^(\s*)body: ""$/m, `$1body: '${big('A')}'`);
    writeFileSync(file, full);
    expect(full).not.toContain('body_skipped');
    expect(full).toContain(big('A'));
    // Before: the replayer kept 1 MiB of b.json and compared sizes only: "exact", success, the answer for a.json.
    const other = await mockTest({ command: `node post.mjs b.json ${port} full-other.txt`, mockName: set, path: 'keploy-big' });
    expect(other).toMatchObject({ success: false, mocksReplayed: 0, mocksMissed: 1 });
    expect(out('full-other.txt')).toMatch(/^502 /);
    const same = await mockTest({ command: `node post.mjs a.json ${port} full-same.txt`, mockName: set, path: 'keploy-big', strict: true });
    expect(same).toMatchObject({ success: true, mocksReplayed: 1, mocksMissed: 0 });
    expect(out('full-same.txt')).toContain(`of ${BIG} bytes`);
  });
});

describe('f1-5: a request Node refuses by default', () => {
  it('a header value with a control character, recorded, is replayed as recorded (before: a 400 from debugkit, "0 missed")', async () => {
    writeFileSync(path.join(f.root, 'ctl.bin'), `POST /raw HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Note: a\x01b\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi`);
    const rec = await call('keploy_mock_record', { command: `node raw.mjs ctl.bin ${port} ctl-rec.txt`, path: 'keploy-raw' });
    expect(rec).toMatchObject({ success: true, mockCount: 1 });
    const run = await mockTest({ command: `node raw.mjs ctl.bin ${port} ctl-out.txt`, mockName: setOf(rec), path: 'keploy-raw', strict: true });
    expect(run, JSON.stringify(run)).toMatchObject({ success: true, mocksReplayed: 1, mocksMissed: 0 });
    expect(out('ctl-out.txt')).toMatch(/^HTTP\/1\.1 200 /);
    expect(out('ctl-out.txt')).toContain('"note":"a\\u0001b"');
  });

  it('one it cannot read even leniently (a blank before the colon) is a counted miss with its line, not a silent 400', async () => {
    writeFileSync(path.join(f.root, 'ok.bin'), `POST /raw HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi`);
    writeFileSync(path.join(f.root, 'blank.bin'), `POST /raw HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Note : a\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi`);
    const rec = await call('keploy_mock_record', { command: `node raw.mjs ok.bin ${port} ok-rec.txt`, path: 'keploy-raw2' });
    expect(rec).toMatchObject({ success: true, mockCount: 1 });
    const run = await mockTest({ command: `node raw.mjs blank.bin ${port} blank-out.txt`, mockName: setOf(rec), path: 'keploy-raw2' });
    expect(run).toMatchObject({ success: false, mocksReplayed: 0, mocksMissed: 1 });
    expect(run.misses).toHaveLength(1);
    expect(run.misses[0]).toMatch(/^POST \/raw: debugkit's HTTP server could not parse the request \(HPE_/);
    expect(out('blank-out.txt')).toMatch(/^HTTP\/1\.1 400 /);
  });
});

describe('f1-6: a call that fell back to the real service', () => {
  it('has its line in `misses` (the closest mock, how it differs), and the message says it fell back', async () => {
    const rec = await call('keploy_mock_record', { command: `node post.mjs small.json ${port} fb-rec.txt`, path: 'keploy-fb' });
    expect(rec).toMatchObject({ success: true, mockCount: 1 });
    writeFileSync(path.join(f.root, 'small2.json'), '{"v":"other"}');
    const run = await mockTest({ command: `node post.mjs small2.json ${port} fb-out.txt`, mockName: setOf(rec), path: 'keploy-fb', fallBackOnMiss: true });
    // Before: "1 mocks missed (`misses` lists the first 0)" and no `misses`.
    expect(run).toMatchObject({ success: false, mocksReplayed: 0, mocksMissed: 1, mocksFellBack: 1 });
    expect(run.message).toContain('1 mocks missed (1 fell back to the real service)');
    expect(run.message).not.toContain('lists the first');
    expect(run.misses).toHaveLength(1);
    expect(run.misses[0]).toMatch(/^POST \/api: fell back to the real service; closest mock-0: body \$\.v: recorded "small", got "other"/);
    expect(out('fb-out.txt')).toContain('of 13 bytes');
  });
});
