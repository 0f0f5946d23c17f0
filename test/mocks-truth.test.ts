// Issue 22, "replay that tells the truth": Keploy reported "missed: 0, exit 0" while the program
// was served the first recorded answer of a repeated request forever, or skipped calls the
// recording holds (keploy/keploy PR #4570). keploy_mock_test now says which mocks were never used
// and which answered more often than recorded; `strict: true` fails such a run.
// The rest of the PR's cases (bodiless answers, gzip, event streams, database misses, a program around the proxy): mocks-truth-cases.test.ts.
import { writeFileSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startPostgres } from '../src/toolsets/mocks/postgres/testing.js';
import { mocksFixture } from './helpers/mocks-fixture.js';

let api: Server | undefined;
let port = 0;

/** Calls GET /seq N times, one connection each, and writes the answers, one a line. */
const CLIENT = `const [port, n] = process.argv.slice(2).map(Number);
const got = [];
for (let i = 0; i < n; i++) got.push(await (await fetch('http://127.0.0.1:' + port + '/seq', { headers: { connection: 'close' } })).text());
(await import('node:fs')).writeFileSync('seq-out.txt', got.join('\\n'));
`;

const mockTest = (args: Record<string, unknown>) => call('keploy_mock_test', args);

async function call(name: string, args: Record<string, unknown>): Promise<any> {
  const r = await f.dk.tool(name, args);
  expect(r.isError, r.text).toBe(false);
  return r.structured;
}

const f = mocksFixture('debugkit-mocks-truth-', () => startPostgres(), {
  prepare: async (root) => {
    writeFileSync(path.join(root, 'seq.mjs'), CLIENT);
    let next = 0;
    api = createServer((_req, res) => res.end(`answer ${++next}`));
    await new Promise<void>((r) => api!.listen(0, '127.0.0.1', r));
    port = (api.address() as AddressInfo).port;
  },
});
afterAll(() => new Promise((r) => (api?.listening ? api.close(r) : r(undefined))));

describe('keploy_mock_test: mocks never used and mocks reused', () => {
  let set = '';

  it('a request repeated three times is recorded as three answers and replayed as recorded, not the first forever', async () => {
    const rec = await call('keploy_mock_record', { command: `node seq.mjs ${port} 3`, path: 'keploy-seq' });
    expect(rec).toMatchObject({ success: true, mockCount: 3 });
    set = rec.mockFilePath.split('/').at(-2);
    await new Promise((r) => api!.close(r));
    const run = await mockTest({ command: `node seq.mjs ${port} 3`, mockName: set, path: 'keploy-seq' });
    expect(run).toMatchObject({ success: true, mocksReplayed: 3, mocksMissed: 0 });
    expect(run).not.toHaveProperty('mocksUnused');
    expect(run).not.toHaveProperty('mocksReused');
    expect(readFileSync(path.join(f.root, 'seq-out.txt'), 'utf8')).toBe('answer 1\nanswer 2\nanswer 3');
  });

  it('a run that skips a recorded call names the mock never used: a warning, and a failure with strict', async () => {
    const run = await mockTest({ command: `node seq.mjs ${port} 2`, mockName: set, path: 'keploy-seq' });
    // Before: success, 2 replayed, 0 missed, and nothing said of the third answer never asked for.
    expect(run).toMatchObject({ success: true, mocksReplayed: 2, mocksMissed: 0, mocksUnused: 1, unusedMocks: [expect.any(String)] });
    expect(run.message).toMatch(/warning: 1 mocks of the set were never used \(mock-\S+\)/);
    const strict = await mockTest({ command: `node seq.mjs ${port} 2`, mockName: set, path: 'keploy-seq', strict: true });
    expect(strict).toMatchObject({ success: false, mocksUnused: 1, appExitCode: 0 });
    expect(strict.message).toMatch(/strict: 1 mocks of the set were never used/);
  });

  it('a run that repeats a request more often than recorded names the mock answered again', async () => {
    const run = await mockTest({ command: `node seq.mjs ${port} 4`, mockName: set, path: 'keploy-seq' });
    expect(run).toMatchObject({ success: true, mocksReplayed: 4, mocksMissed: 0, mocksReused: 1, reusedMocks: [expect.stringMatching(/ \(answered 2 times\)$/)] });
    expect(readFileSync(path.join(f.root, 'seq-out.txt'), 'utf8')).toBe('answer 1\nanswer 2\nanswer 3\nanswer 3');
    const strict = await mockTest({ command: `node seq.mjs ${port} 4`, mockName: set, path: 'keploy-seq', strict: true });
    expect(strict).toMatchObject({ success: false, mocksReused: 1 });
  });

  it("only: one test's mocks (by name, or by when they were requested) replay alone, and strict judges them alone", async () => {
    // The first two of the three answers, as a test making two calls uses them.
    const two = await mockTest({ command: `node seq.mjs ${port} 2`, mockName: set, path: 'keploy-seq', strict: true, only: { names: ['mock-0', 'mock-1'] } });
    expect(two).toMatchObject({ success: true, mocksReplayed: 2, mocksMissed: 0 });
    expect(two).not.toHaveProperty('mocksUnused');
    // A window that holds none of them, and a name the set does not hold: said, nothing run.
    const none = await mockTest({ command: `node seq.mjs ${port} 1`, mockName: set, path: 'keploy-seq', only: { from: '2001-01-01T00:00:00Z', to: '2001-01-02T00:00:00Z' } });
    expect(none).toMatchObject({ success: false, appExitCode: -1 });
    expect(none.message).toMatch(/^only: no mock of the set is requested between 2001-01-01T00:00:00Z and 2001-01-02T00:00:00Z/);
    const unknown = await mockTest({ command: `node seq.mjs ${port} 1`, mockName: set, path: 'keploy-seq', only: { names: ['mock-9'] } });
    expect(unknown.message).toMatch(/^only: the set holds no mock named 'mock-9'/);
    // Everything the recording holds was requested in the last hour: the window of the whole recording replays all three.
    const all = await mockTest({ command: `node seq.mjs ${port} 3`, mockName: set, path: 'keploy-seq', strict: true, only: { from: new Date(Date.now() - 3_600_000).toISOString() } });
    expect(all).toMatchObject({ success: true, mocksReplayed: 3 });
  });

  it('replace: one test re-recorded into the set, its mocks replaced and the rest kept; a failed run leaves the set as it was', async () => {
    let next = 0;
    const live = createServer((_req, res) => res.end(`live ${++next}`));
    await new Promise<void>((r) => live.listen(0, '127.0.0.1', r));
    const livePort = (live.address() as AddressInfo).port;
    try {
      const rec = await call('keploy_mock_record', { command: `node seq.mjs ${livePort} 3`, path: 'keploy-rr' });
      const rrSet = rec.mockFilePath.split('/').at(-2);
      // The second call's test is re-recorded alone: the service now answers "live 4".
      const again = await call('keploy_mock_record', { command: `node seq.mjs ${livePort} 1`, path: 'keploy-rr', replace: { set: rrSet, names: ['mock-1'] } });
      expect(again, JSON.stringify(again)).toMatchObject({ success: true, mockCount: 1, mockFilePath: `keploy-rr/${rrSet}/mocks.yaml` });
      expect(again.message).toMatch(new RegExp(`into '${rrSet}', in place of its 1 mocks of this test`));
      // A run that fails replaces nothing.
      writeFileSync(path.join(f.root, 'fails.mjs'), `await fetch('http://127.0.0.1:${livePort}/seq');\nprocess.exit(3);\n`);
      const failing = await call('keploy_mock_record', { command: 'node fails.mjs', path: 'keploy-rr', replace: { set: rrSet, names: ['mock-0'] } });
      expect(failing).toMatchObject({ success: false, appExitCode: 3 });
      const run = await mockTest({ command: `node seq.mjs ${livePort} 3`, mockName: rrSet, path: 'keploy-rr', strict: true });
      expect(run).toMatchObject({ success: true, mocksReplayed: 3 });
      expect(readFileSync(path.join(f.root, 'seq-out.txt'), 'utf8')).toBe('live 1\nlive 3\nlive 4');
    } finally {
      await new Promise((r) => live.close(r));
    }
  });

  it('Keploy false-clean #10: a chunked body whose data holds "0\\r\\n\\r\\n", with extensions and trailers, then a second request on the connection: both recorded whole, replayed byte for byte', async () => {
    // Framed by a byte marker, Keploy ended the body at the first "0\r\n\r\n" (cut) or swallowed the next exchange.
    const chunked = createServer({ keepAlive: true }, (req, res) => {
      const socket = res.socket!;
      res.detachSocket(socket);
      const body = req.url === '/one' ? ['7;ext=1\r\nab0\r\n\r\n\r\n', '3\r\nxyz\r\n', '0\r\nX-Sum: 10\r\n\r\n'] : ['4\r\nnext\r\n', '0\r\n\r\n'];
      socket.write(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n${body.join('')}`);
    });
    await new Promise<void>((r) => chunked.listen(0, '127.0.0.1', r));
    const chunkedPort = (chunked.address() as AddressInfo).port;
    writeFileSync(
      path.join(f.root, 'chunked.mjs'),
      `import http from 'node:http';
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const get = (p) => new Promise((ok, fail) => http.get({ host: '127.0.0.1', port: ${chunkedPort}, path: p, agent }, (res) => { let b = ''; res.on('data', (d) => (b += d)); res.on('end', () => ok(JSON.stringify({ b, t: res.trailers }))); }).on('error', fail));
const out = [await get('/one'), await get('/two')];
(await import('node:fs')).writeFileSync('chunked-out.txt', out.join('\\n'));
agent.destroy();
`,
    );
    try {
      const rec = await call('keploy_mock_record', { command: 'node chunked.mjs', path: 'keploy-chunked' });
      expect(rec, JSON.stringify(rec)).toMatchObject({ success: true, mockCount: 2 });
      const live = readFileSync(path.join(f.root, 'chunked-out.txt'), 'utf8');
      expect(live).toBe(`${JSON.stringify({ b: 'ab0\r\n\r\nxyz', t: { 'x-sum': '10' } })}\n${JSON.stringify({ b: 'next', t: {} })}`);
      await new Promise((r) => chunked.close(r));
      const replay = await mockTest({ command: 'node chunked.mjs', mockName: rec.mockFilePath.split('/').at(-2), path: 'keploy-chunked', strict: true });
      expect(replay).toMatchObject({ success: true, mocksReplayed: 2, mocksMissed: 0 });
      // The bodies as the service sent them. (Keploy's HTTP mock has no field for trailers: a replay sends none, README says so.)
      expect(JSON.parse(readFileSync(path.join(f.root, 'chunked-out.txt'), 'utf8').split('\n')[0]!).b).toBe('ab0\r\n\r\nxyz');
      expect(JSON.parse(readFileSync(path.join(f.root, 'chunked-out.txt'), 'utf8').split('\n')[1]!).b).toBe('next');
    } finally {
      if (chunked.listening) await new Promise((r) => chunked.close(r));
    }
  });

  it('PostgreSQL: a skipped query is named; the start-up mocks used by every connection are neither unused nor reused', async () => {
    const psql = (queries: string[]) => `PGPASSWORD=${f.db.password} PGSSLMODE=disable psql -X -A -t -h 127.0.0.1 -p ${f.db.port} -U postgres -d postgres ${queries.map((q) => `-c '${q}'`).join(' ')}`;
    const rec = await call('keploy_mock_record', { command: psql(['select 1', 'select 2']), path: 'keploy-pg' });
    expect(rec).toMatchObject({ success: true });
    const pgSet = rec.mockFilePath.split('/').at(-2);
    const whole = await mockTest({ command: psql(['select 1', 'select 2']), mockName: pgSet, path: 'keploy-pg' });
    expect(whole).toMatchObject({ success: true, mocksMissed: 0 });
    expect(whole).not.toHaveProperty('mocksUnused');
    // Two runs of psql, two connections: the start-up answers each, and is not "reused".
    writeFileSync(path.join(f.root, 'twice.sh'), `${psql(['select 1'])}\n${psql(['select 2'])}\n`);
    const twice = await mockTest({ command: 'sh twice.sh', mockName: pgSet, path: 'keploy-pg' });
    expect(twice, JSON.stringify(twice)).toMatchObject({ success: true, mocksMissed: 0 });
    expect(twice).not.toHaveProperty('mocksReused');
    const skipped = await mockTest({ command: psql(['select 1']), mockName: pgSet, path: 'keploy-pg', strict: true });
    expect(skipped).toMatchObject({ success: false, mocksMissed: 0, mocksUnused: 1 });
  });
});
