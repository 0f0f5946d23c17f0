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

/** Records `calls` calls of seq.mjs into a new set under `dir`: the set's name and its file. */
async function recordSet(dir: string, calls: number): Promise<{ set: string; file: string }> {
  const rec = await call('keploy_mock_record', { command: `node seq.mjs ${f.db.port} ${calls}`, path: dir });
  expect(rec).toMatchObject({ success: true, mockCount: calls });
  const set: string = rec.mockFilePath.split('/').at(-2);
  return { set, file: path.join(f.root, dir, set, 'mocks.yaml') };
}

describe("keploy_mock_record replace on a set with '...' markers and a null document", () => {
  it("replaces the named test's mock and keeps every other one, as the parser reads the set", async () => {
    const { set, file } = await recordSet('keploy-odd', 4);
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

// Attack 18ad g1-3: the YAML parser keeps a `%YAML 1.1` directive for every later document; replace cut it out with the first
// document, so another test's kept `!!binary bGl2ZSAy` (the text "bGl2ZSAy" under 1.1) read as the bytes of "live 2", and
// the call said the rest of the set was kept as it was. A set with directives is now refused, its file left as it was.
describe('keploy_mock_record replace on a set with a %YAML 1.1 directive', () => {
  it('is refused, saying the set holds directives and what to do, and leaves the file as it was', async () => {
    const { set, file } = await recordSet('keploy-v11', 2);
    const recorded = readFileSync(file, 'utf8');
    const second = /body: live (\d+)\n(?![\s\S]*body: live)/.exec(recorded)!;
    const edited = `%YAML 1.1\n---\n${recorded.slice(0, second.index)}body: !!binary bGl2ZSAy\n${recorded.slice(second.index + second[0].length)}`;
    writeFileSync(file, edited);
    expect(parseMockSet(edited, file).map((m) => (m.kind === 'Http' ? m.spec.resp.body : m.kind))).toEqual([expect.stringMatching(/^live \d+$/), 'bGl2ZSAy']);

    const again = await call('keploy_mock_record', { command: `node seq.mjs ${f.db.port} 1`, path: 'keploy-v11', replace: { set, names: ['mock-0'] } });
    expect(again.success, JSON.stringify(again)).toBe(false);
    expect(again.message).toMatch(
      new RegExp(`Mock set '${set}' not re-recorded, its file left as it was: it holds YAML directives \\(%YAML, %TAG\\) in force at its document 1, .*remove them and try again`),
    );
    expect(readFileSync(file, 'utf8')).toBe(edited);
  });
});
