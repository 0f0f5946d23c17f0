// Attack 18u P4 (critical): a gRPC set of one mock whose response `decoded_data` was 30 MiB of
// `{}` crashed the server at keploy_mock_test (its protoscope text was assembled on the main
// thread with no bound: 4.5 GB, then "JavaScript heap out of memory"); 16 MiB held the loop
// 6.4 s. Now a mock's text past MAX_DECODED_TEXT (4 MiB) is refused, a warning says so, and the
// server goes on answering.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerText, freshPing, plainCall, startKeyedServer, stopAttackServer, type KeyedServer } from './helpers/attack.js';
import { mocksWorkspace } from './helpers/programs.js';
import { grpcYaml, MB, rssMiB } from './helpers/replay-attack.js';

const MAX_DECODED_TEXT = 4 * MB;

describe('attack 18u P4: a gRPC set whose protoscope text is 28 MiB of {} (14 MiB the request, 14 MiB the response)', () => {
  let s: KeyedServer;
  let root: string;

  beforeAll(async () => {
    root = mocksWorkspace('debugkit-attack18u-grpc-');
    mkdirSync(path.join(root, 'keploy', 'braces'), { recursive: true });
    writeFileSync(path.join(root, 'keploy', 'braces', 'mocks.yaml'), grpcYaml(0, '{}'.repeat(7 * MB)));
    s = await startKeyedServer(root, { attacker: 'mocks,mocks:run', other: 'mocks:read' }, ['--toolsets', 'mocks']);
  }, 120_000);
  afterAll(() => stopAttackServer(s, root));

  it('is refused naming the bound, and the server lives on', async () => {
    const rssBefore = rssMiB(s);
    let rssMax = rssBefore;
    const sampler = setInterval(() => (rssMax = Math.max(rssMax, rssMiB(s))), 20);
    let text: string;
    try {
      text = answerText(await plainCall(s, s.keys.attacker!.key, 'keploy_mock_test', { command: 'true', mockName: 'braces', timeout: 600 }), { structured: true });
    } finally {
      clearInterval(sampler);
    }
    expect(text).toContain('"appExitCode":0');
    // The refusal is a warning of the call (a notification to its client, and the server's log).
    // 28 MiB and the two block literals' line ends.
    expect(s.node.output()).toContain(`gRPC mock mock-0: its decoded_data is ${28 * MB + 2} characters of protoscope text, more than the ${MAX_DECODED_TEXT} one mock may hold`);
    // Before: the server died of its heap (4.5 GB). Now the set's parse in the mock-set thread is most of what it holds.
    expect(rssMax - rssBefore, `the server's RSS grew from ${rssBefore} MiB to ${rssMax} MiB`).toBeLessThan(1024);
    expect(await freshPing(s, s.keys.other!.key)).toBeTruthy();
  }, 600_000);
});
