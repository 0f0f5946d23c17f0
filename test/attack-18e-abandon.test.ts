// Attack 18e: keploy_mock_test calls abandoned while a large set's directory is swapped for a link
// out of the root. No load may read the file outside, and every abandoned call's descriptors are
// closed once it has ended. This held in the attacker's runs and failed in two of four fresh-clone
// full runs (28 descriptors before, 106 after under load 8; 48 after 120 s idle): every leaked one
// was a module file of a worker thread ended while still loading its modules (core/workers.ts now
// ends such a thread once it has loaded; src/toolsets/mocks/keploy/load.test.ts "cancelled loads").
import { chmodSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { plainCall, startKeyedServer, stopAttackServer, type KeyedServer } from './helpers/attack.js';
import { race, type Outcome } from './helpers/flipper.js';
import { waitFor } from './helpers/procs.js';
import { tempDir } from './helpers/programs.js';
import { manyDocuments } from './helpers/stall.js';

describe("attack 18e: keploy_mock_test calls abandoned (the client leaves) while a large set's directory is opened and swapped for a link out of the root", () => {
  let s: KeyedServer;
  let base: string;
  let root: string;
  const SECRET = 'OUTSIDE-SECRET-18e';

  beforeAll(async () => {
    base = tempDir('debugkit-attack18e-abandon-');
    root = path.join(base, 'root');
    mkdirSync(path.join(root, 'keploy', 'race'), { recursive: true });
    // 20,000 documents: loading takes long enough on the worker threads to be abandoned midway.
    manyDocuments(path.join(root, 'keploy', 'race', 'mocks.yaml'), 20_000);
    mkdirSync(path.join(base, 'outside'), { recursive: true });
    writeFileSync(path.join(base, 'outside', 'mocks.yaml'), `version: api.keploy.io/v1beta1\nkind: ${SECRET}\nname: mock-0\nspec:\n  metadata: {}\n`);
    symlinkSync(path.join(base, 'outside'), path.join(root, 'keploy', 'race.swap'));
    for (const dir of [root, path.join(root, 'keploy'), path.join(root, 'keploy', 'race')]) chmodSync(dir, 0o777);
    s = await startKeyedServer(root, { runner: 'mocks,mocks:run' }, ['--toolsets', 'mocks']);
  }, 60_000);
  afterAll(() => stopAttackServer(s, base));

  const fds = () => readdirSync(`/proc/${s.node.proc.pid}/fd`).length;

  it('60 calls abandoned after 0-600 ms, then 40 awaited: no load reads the file outside, and no descriptor is left open', async () => {
    // Warm up (the replay engine loads on the first call), then count the server's descriptors.
    await plainCall(s, s.keys.runner!.key, 'keploy_mock_test', { command: '/bin/true', mockName: 'race' });
    const before = fds();
    let example = '';
    const judge = (text: string): Outcome => (text.includes(SECRET) ? ((example ||= text), 'leak') : /"success":true/.test(text) ? 'inside' : 'refused');
    let n = 0;
    const counts = await race(path.join(root, 'keploy', 'race'), path.join(root, 'keploy', 'race.swap'), 100, async () => {
      const i = n++;
      const request = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'keploy_mock_test', arguments: { command: '/bin/true', mockName: 'race' } } };
      if (i % 5 >= 2) {
        // The client leaves before the answer: the call is cancelled wherever it is.
        const left: string = await fetch(s.node.url, {
          method: 'POST',
          headers: { Authorization: `Bearer ${s.keys.runner!.key}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
          body: JSON.stringify(request),
          signal: AbortSignal.timeout((i * 37) % 600),
        })
          .then((r) => r.text())
          .catch(() => 'abandoned');
        return left === 'abandoned' ? 'refused' : judge(left);
      }
      return judge(JSON.stringify(await plainCall(s, s.keys.runner!.key, 'keploy_mock_test', { command: '/bin/true', mockName: 'race' })));
    });
    expect(counts.leak, `${JSON.stringify(counts)}; a leak: ${example.slice(0, 700)}`).toBe(0);
    expect(counts.inside, `the set was loaded at all: ${JSON.stringify(counts)}`).toBeGreaterThan(0);
    // Every abandoned call's directories are closed once it has ended (its worker job included).
    expect(await waitFor(() => fds() <= before + 4, 120_000), `the server held ${before} descriptors before, ${fds()} after`).toBe(true);
  }, 300_000);
});
