import { mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MockStore } from './keploy/store.js';
import { recordMocks } from './record.js';
import { loadCa } from './session.js';

/**
 * Attack 18k-A F2: keploy_mock_record kept every call it captured (60,000 Redis SETs, 300 uploads
 * of 1 MB: a 307 MB set written and reported a success, though no replay takes a set over 32 MiB).
 * A recording now keeps what a set may hold, as replay's `onMiss: record` does; the program's
 * calls past it still go through, and the outcome counts them.
 */

const PROGRAM = `
const [port, count] = process.argv.slice(2);
const lines = [];
for (let i = 0; i < Number(count); i++) {
  const res = await fetch('http://127.0.0.1:' + port + '/n/' + i);
  lines.push(res.status + ' ' + (await res.text()));
}
(await import('node:fs')).writeFileSync('out.txt', lines.join('\\n') + '\\n');
`;

let server: http.Server;
let port = 0;
let served = 0;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    served++;
    res.end(`answer ${req.url}`);
  });
  port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
});
afterAll(() => server?.close());

describe('recordMocks keeps at most what a set may hold', () => {
  it('past the cap, keeps the first calls, counts the rest, and the program gets every answer', async () => {
    const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'debugkit-record-cap-')));
    writeFileSync(path.join(dir, 'prog.mjs'), PROGRAM);
    const warnings: string[] = [];
    const { ca, env } = await loadCa((w) => warnings.push(w));
    const outcome = await recordMocks({
      command: `node prog.mjs ${port} 8`,
      dir: path.join(dir, 'keploy'),
      cwd: dir,
      ca,
      caEnv: env,
      timeoutMs: 60_000,
      ownPorts: [],
      warn: (w) => warnings.push(w),
      maxMocks: 3,
    });
    expect(outcome.run.exitCode).toBe(0);
    // Every call was answered by the real server, those past the cap too.
    expect(served).toBe(8);
    expect(readFileSync(path.join(dir, 'out.txt'), 'utf8')).toBe(Array.from({ length: 8 }, (_, i) => `200 answer /n/${i}\n`).join(''));
    expect({ mockCount: outcome.mockCount, dropped: outcome.dropped }).toEqual({ mockCount: 3, dropped: 5 });
    const mocks = await new MockStore(path.join(dir, 'keploy')).read(outcome.name);
    expect(mocks.map((m) => (m.kind === 'Http' ? m.spec.req.url : m.kind))).toEqual([0, 1, 2].map((i) => `http://127.0.0.1:${port}/n/${i}`));
  }, 60_000);
});
