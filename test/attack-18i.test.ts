// Attack 18i on issue 18 (after the fixes of attacks 18g and 18h). Found, and fixed since:
// - MCP sessions did not give up calls whose HTTP client left: 60 abandoned keploy_mock_record
//   calls in one session left 60 programs running and the server's descriptors 24 -> 323; 1,500
//   abandoned gdb_wait calls with 3 MiB of arguments each grew the server to OOM. The client leaving
//   now cancels its calls, as the plain and 2026-07-28 paths already did.
// - debugger_find_similar_bugs: parseReports' sanitizer, UBSan and valgrind patterns were
//   quadratic on a line with no end (a 120 KB file held every client 10-15 s), each signature kept
//   its whole file alive (2,000 links to one 2 MB log: 4.2 GB, OOM with two calls), and the size
//   checked at open was not the size read (a file grown after the check read whole). Lines are now
//   cut at 1 KiB and read with [ \t] for blanks, signatures are capped and copied, and a file is
//   read to the size checked (src/toolsets/debugger/similar/artefacts.test.ts).
import { mkdirSync, writeFileSync, linkSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idleBaseline, plainCall, slowestPingWhile, startKeyedServer, stopAttackServer, type KeyedServer } from './helpers/attack.js';
import { openMcpSession } from './helpers/control.js';
import { rssMiB } from './helpers/replay-attack.js';
import { descendants, waitFor } from './helpers/procs.js';
import { mocksWorkspace } from './helpers/programs.js';
import { track } from './helpers/stall.js';

describe('attack 18i: calls of an MCP session whose HTTP client left', () => {
  let s: KeyedServer;
  let root: string;

  beforeAll(async () => {
    root = mocksWorkspace('debugkit-attack18i-session-');
    s = await startKeyedServer(root, { runner: 'mocks,mocks:run' }, ['--toolsets', 'mocks']);
  }, 60_000);
  afterAll(() => stopAttackServer(s, root));

  it('end with their client: the programs 10 abandoned keploy_mock_record calls started are gone', async () => {
    const key = s.keys.runner!.key;
    const sid = await openMcpSession(s.node.url, key);
    const sleepers = () => descendants(s.node.proc.pid!).filter((p) => p.args.includes('sleep 1000')).length;
    for (let i = 0; i < 10; i++) {
      const body = { jsonrpc: '2.0', id: 100 + i, method: 'tools/call', params: { name: 'keploy_mock_record', arguments: { command: '/bin/sleep 1000', path: `keploy-${i}`, timeout: 3600 } } };
      await fetch(s.node.url, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18' },
        body: JSON.stringify(body),
        // The client leaves once its program runs.
        signal: AbortSignal.timeout(1500),
      })
        .then((r) => r.text())
        .catch(() => undefined);
    }
    // Before, each program ran on until its 3,600 s timeout or the session's end.
    expect(await waitFor(() => sleepers() === 0, 20_000), `${sleepers()} programs still run after their clients left`).toBe(true);
  }, 120_000);
});

describe('attack 18i: debugger_find_similar_bugs over artefacts a writer in the root made', () => {
  let s: KeyedServer;
  let root: string;

  beforeAll(async () => {
    root = mocksWorkspace('debugkit-attack18i-artefacts-');
    mkdirSync(path.join(root, 'arts'));
    // A sanitizer header whose line never ends, and one of line separators (U+2028) that regexes read as line starts and blanks.
    writeFileSync(path.join(root, 'arts', 'asan.log'), `ERROR: AddressSanitizer: ${'a'.repeat(120_000)}`);
    writeFileSync(path.join(root, 'arts', 'sep.log'), `ERROR: AddressSanitizer: x\n${'\u2028'.repeat(60_000)}y\n`);
    writeFileSync(path.join(root, 'arts', 'ubsan.log'), `x runtime error: a\n${'\u2028'.repeat(60_000)}y\n`);
    // One 2 MB report, linked 600 times: each signature kept the whole file alive.
    mkdirSync(path.join(root, 'big'));
    const report = '==1== Invalid free() abcdefghijklmnopqrstuvwxyz\n==1==    at 0x1: fabcdefghijklmnopqrstuvwxyz\n\n';
    writeFileSync(path.join(root, 'big', 'b0.log'), report + 'a'.repeat(2_000_000 - report.length) + '\n');
    for (let i = 1; i < 600; i++) linkSync(path.join(root, 'big', 'b0.log'), path.join(root, 'big', `b${i}.log`));
    s = await startKeyedServer(root, { reader: 'debugger:read', other: 'debugger:read' }, ['--toolsets', 'debugger']);
  }, 60_000);
  afterAll(() => stopAttackServer(s, root));

  for (const [what, dir] of [
    ['pathological reports (a line with no end, line separators)', 'arts'],
    ['600 links to one 2 MB report', 'big'],
  ] as const) {
    it(`${what}: another key's pings are answered, and the scan answers`, async () => {
      const baseline = await idleBaseline(s, s.keys.other!.key);
      const rssBefore = rssMiB(s);
      let rssMax = rssBefore;
      const sampler = setInterval(() => (rssMax = Math.max(rssMax, rssMiB(s))), 20);
      const call = track(plainCall(s, s.keys.reader!.key, 'debugger_find_similar_bugs', { search_path: dir, pattern_type: 'memory' }));
      let slowest: number, count: number, answer: Awaited<typeof call.promise>;
      try {
        ({ slowest, count } = await slowestPingWhile(s, s.keys.other!.key, call));
        answer = await call.promise;
      } finally {
        clearInterval(sampler);
      }
      // 600 x 2 MB kept alive through the signatures was 1.2 GB.
      expect(rssMax - rssBefore, `the server's RSS grew from ${rssBefore} MiB to ${rssMax} MiB`).toBeLessThan(400);
      expect(JSON.stringify(answer).slice(0, 300)).toMatch(/result|error/);
      expect(slowest, `slowest of ${count} pings ${slowest.toFixed(0)} ms, idle ${baseline.toFixed(1)} ms`).toBeLessThan(Math.max(1000, 20 * baseline));
    }, 180_000);
  }
});
