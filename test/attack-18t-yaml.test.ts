// Attack 18t M3, through the real server: 30 HTTP answers of 1 MB of `abcdefg\r\n` lines were
// recorded as double-quoted YAML bodies, which the `yaml` package reads back at about 34 bytes of
// heap per byte: the set "was not written: writing it needed more than the 768 MB a mock-set thread
// may use" (peak RSS 1-1.5 GB). Such text is written as `!!binary` now (keploy/emit.ts
// QUOTED_STRING_MAX): the set is written (as many answers as its 32 MiB hold) and replayed byte for byte.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUOTED_STRING_MAX } from '../src/toolsets/mocks/keploy/emit.js';
import { quotedLengths } from '../src/toolsets/mocks/keploy/testkit.js';
import { answerText, plainCall, startKeyedServer, stopAttackServer, type KeyedServer } from './helpers/attack.js';
import { tempDir } from './helpers/programs.js';

// 24 MiB of answers, three quarters of what a set holds: 30 took the set's writing to its 20 s bound on this 2-core machine now and then.
const ANSWERS = 24;
/** 1000 KiB of CRLF lines, as the report's crlfhttp.mjs sends (each exchange under the 1 MiB a mock may hold). */
const LINES = Math.floor((1000 * 1024) / 9);

/** GETs /item/0 .. /item/N-1 on raw connections; exits 0 only if every body is the expected text, byte for byte. */
const GETS = `
import net from 'node:net';
const [port, n, lines] = process.argv.slice(2).map(Number);
const expected = Buffer.from('abcdefg\\r\\n'.repeat(lines));
let same = 0;
for (let i = 0; i < n; i++) {
  const got = await new Promise((resolve) => {
    const chunks = [];
    const c = net.connect(port, '127.0.0.1', () => c.write('GET /item/' + i + ' HTTP/1.1\\r\\nHost: 127.0.0.1:' + port + '\\r\\nConnection: close\\r\\n\\r\\n'));
    c.on('data', (d) => chunks.push(d));
    c.on('error', () => resolve(Buffer.alloc(0)));
    c.on('close', () => resolve(Buffer.concat(chunks)));
  });
  const body = got.subarray(got.indexOf('\\r\\n\\r\\n') + 4);
  if (got.subarray(0, 12).toString() === 'HTTP/1.1 200' && body.equals(expected)) same++;
}
console.log('same bodies', same);
process.exit(same === n ? 0 : 3);
`;

function mockFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => path.basename(f) === 'mocks.yaml')
    .map((f) => path.join(dir, f));
}

describe('attack 18t M3: HTTP bodies of \\r\\n text are recorded in a set that reads back within bounds', () => {
  let s: KeyedServer;
  let root: string;
  let upstream: http.Server;
  let port = 0;

  beforeAll(async () => {
    root = tempDir('debugkit-attack18t-yaml-');
    writeFileSync(path.join(root, 'gets.mjs'), GETS);
    const body = Buffer.from('abcdefg\r\n'.repeat(LINES));
    upstream = http.createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': body.length }).end(body));
    port = await new Promise<number>((resolve) => upstream.listen(0, '127.0.0.1', () => resolve((upstream.address() as AddressInfo).port)));
    s = await startKeyedServer(root, { owner: 'mocks,mocks:run' }, ['--toolsets', 'mocks']);
  }, 90_000);
  afterAll(async () => {
    upstream?.close();
    await stopAttackServer(s, root);
  });

  it('records answers of 1 MB of \\r\\n text, with no double-quoted scalar over the bound, and replays the same bytes', async () => {
    const recorded = await plainCall(s, s.keys.owner!.key, 'keploy_mock_record', { command: `node gets.mjs ${port} ${ANSWERS} ${LINES}`, path: './kcrlf', timeout: 300 });
    // Before: success false, "was not written: writing it needed more than the 768 MB a mock-set thread may use".
    // Now written: as many answers as 32 MiB holds as base64 (24 of 30), the rest said to be dropped.
    const got = recorded.result?.structuredContent as { success: boolean; mockCount: number; mocksDropped?: number; appExitCode: number; message: string };
    expect(got, answerText(recorded)).toMatchObject({ success: true, appExitCode: 0 });
    expect(got.mockCount).toBeGreaterThanOrEqual(20);
    expect(got.mockCount + (got.mocksDropped ?? 0)).toBe(ANSWERS);
    if (got.mocksDropped) expect(got.message).toContain('32 MiB');

    const [file, ...others] = mockFiles(path.join(root, 'kcrlf'));
    expect(others).toEqual([]);
    const text = readFileSync(file!, 'utf8');
    const bodies = text.match(/^ {8}body: !!binary [A-Za-z0-9+/=]+$/gm) ?? [];
    expect(bodies).toHaveLength(got.mockCount);
    const quoted = quotedLengths(text);
    expect(Math.max(0, ...quoted), 'the longest double-quoted scalar').toBeLessThanOrEqual(QUOTED_STRING_MAX);

    // Replayed with the real server gone: every body the program gets is the recorded one.
    await new Promise<void>((resolve) => upstream.close(() => resolve()));
    const replayed = await plainCall(s, s.keys.owner!.key, 'keploy_mock_test', { command: `node gets.mjs ${port} ${got.mockCount} ${LINES}`, path: './kcrlf', timeout: 300 });
    expect(replayed.result?.structuredContent, answerText(replayed)).toMatchObject({ success: true, mocksReplayed: got.mockCount, mocksMissed: 0, appExitCode: 0 });
  }, 600_000);
});
