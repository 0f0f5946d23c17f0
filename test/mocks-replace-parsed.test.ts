// Attack b1-1: keploy_mock_record `replace` split a set's text at its own `---` lines while the YAML
// parser also ends a document at `...` and skips null documents; in a hand-edited set
// (A ... B --- C --- null --- D) replacing B's test dropped C, another test's mock, and kept B.
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseMockSet } from '../src/toolsets/mocks/keploy/parse.js';
import { mocksFixture } from './helpers/mocks-fixture.js';

/** Calls GET /seq N times, one connection each, and writes the answers, one a line. */
const CLIENT = `const [port, n] = process.argv.slice(2).map(Number);
const got = [];
for (let i = 0; i < n; i++) got.push(await (await fetch('http://127.0.0.1:' + port + '/seq', { headers: { connection: 'close' } })).text());
(await import('node:fs')).writeFileSync('seq-out.txt', got.join('\\n'));
`;

/** A service answering "live N", N counting its requests. */
async function startLive(): Promise<{ port: number; stop(): Promise<void> }> {
  let next = 0;
  const server: Server = createServer((_req, res) => res.end(`live ${++next}`));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, stop: () => new Promise((r) => server.close(() => r())) };
}

const f = mocksFixture('debugkit-mocks-replace-', startLive, { prepare: (root) => writeFileSync(path.join(root, 'seq.mjs'), CLIENT) });

async function call(name: string, args: Record<string, unknown>): Promise<any> {
  const r = await f.dk.tool(name, args);
  expect(r.isError, r.text).toBe(false);
  return r.structured;
}

describe("keploy_mock_record replace on a set with '...' markers and a null document", () => {
  it("replaces the named test's mock and keeps every other one, as the parser reads the set", async () => {
    const rec = await call('keploy_mock_record', { command: `node seq.mjs ${f.db.port} 4`, path: 'keploy-odd' });
    expect(rec).toMatchObject({ success: true, mockCount: 4 });
    const set: string = rec.mockFilePath.split('/').at(-2);
    const file = path.join(f.root, 'keploy-odd', set, 'mocks.yaml');
    // Hand-edited: the first document ended with '...', the second bare after it, a null document before the last.
    const [d0, d1, d2, d3] = readFileSync(file, 'utf8').split(/^---\n/m);
    const edited = `${d0}...\n${d1}---\n${d2}---\nnull\n---\n${d3}`;
    writeFileSync(file, edited);
    expect(parseMockSet(edited, file).map((m) => m.name)).toEqual(['mock-0', 'mock-1', 'mock-2', 'mock-3']);

    const again = await call('keploy_mock_record', { command: `node seq.mjs ${f.db.port} 1`, path: 'keploy-odd', replace: { set, names: ['mock-1'] } });
    expect(again, JSON.stringify(again)).toMatchObject({ success: true, mockCount: 1 });
    const after = readFileSync(file, 'utf8');
    const mocks = parseMockSet(after, file);
    // Before: mock-0, mock-1 (the one to replace), mock-3, mock-4; mock-2 gone.
    expect(mocks.map((m) => m.name)).toEqual(['mock-0', 'mock-2', 'mock-3', 'mock-4']);
    expect(mocks.map((m) => (m.kind === 'Http' ? m.spec.resp.body : m.kind))).toEqual(['live 1', 'live 3', 'live 4', 'live 5']);
    expect(after.startsWith(`${d0}...\n---\n${d2}---\nnull\n---\n${d3}---\n`)).toBe(true);

    const run = await call('keploy_mock_test', { command: `node seq.mjs ${f.db.port} 4`, mockName: set, path: 'keploy-odd', strict: true });
    expect(run).toMatchObject({ success: true, mocksReplayed: 4, mocksMissed: 0 });
    expect(readFileSync(path.join(f.root, 'seq-out.txt'), 'utf8')).toBe('live 1\nlive 3\nlive 4\nlive 5');
  });
});
