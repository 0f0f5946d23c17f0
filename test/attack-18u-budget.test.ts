// Attacks P4 and P5 on the per-key share of the bundle budget (cfd2226), through the built server and the real kubectl, each key's
// share 30,000 objects (--bundle-budget-per-key 1) and each bundle 20,000 events, so a share holds one bundle and not two.
// P4: a bundle served from one directory is shared by every key using it, but stayed charged to the key that opened it first, after
// that key left it too. P5: a key's share came back only when V8 collected its closed bundle's model, minutes on an idle server.
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../src/core/wait.js';
import { startBudgetNode, type BudgetNode } from './helpers/budget-node.js';
import { openMcpSession } from './helpers/control.js';

const EVENTS = 20_000;

let server: BudgetNode;

beforeAll(async () => {
  server = await startBudgetNode({ x: EVENTS, y: EVENTS, p: EVENTS, q: EVENTS });
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

/** Initializes `bundle` in the session; returns its kubeconfig's path, which goes when the bundle's server stops. */
async function initialize(key: string, sid: string, bundle: string): Promise<string> {
  const opened = await server.tool(key, sid, 'initialize_bundle', { source: bundle });
  expect(opened.isError, opened.text).toBe(false);
  return /"kubeconfig_path": "([^"]+)"/.exec(opened.text)![1]!;
}

/** The session's bundle's last event, answered only when its whole events file was parsed and kept (charged in full). */
async function expectWhole(key: string, sid: string): Promise<void> {
  const got = await server.tool(key, sid, 'kubectl', { command: `get event e${EVENTS - 1} -n ns0 -o name` });
  expect(got.isError, got.text).toBe(false);
  expect(got.text).toContain(`event/e${EVENTS - 1}`);
  expect(got.text).not.toContain('left out');
}

describe("a shared bundle's charge, and its release (attacks P4, P5)", () => {
  it("key A opens x, key B joins it, A leaves it: A's next bundle y is served whole within A's share, and B keeps x whole", async () => {
    const a = await server.key('18u-a');
    const b = await server.key('18u-b');
    const a1 = await openMcpSession(server.node.url, a.key);
    await initialize(a.key, a1, 'x');
    await expectWhole(a.key, a1);
    const b1 = await openMcpSession(server.node.url, b.key);
    await initialize(b.key, b1, 'x');
    // A leaves x for y in the same session (its answer comes once x's charge has moved to B). Before, x's 20,000 events stayed on
    // A's share for B, and y's events were left out "(2 MB and 20000 objects held) ... closing that key's other bundles": it had none.
    await initialize(a.key, a1, 'y');
    await expectWhole(a.key, a1);
    // B's x, now on B's own share, which has room for it.
    await expectWhole(b.key, b1);
  }, 120_000);

  it('key C ends the session of its only bundle and at once opens another: served whole, its share given back at close, not at collection', async () => {
    const c = await server.key('18u-c');
    const c1 = await openMcpSession(server.node.url, c.key);
    const kubeconfig = await initialize(c.key, c1, 'p');
    await expectWhole(c.key, c1);
    const ended = await fetch(server.node.url, { method: 'DELETE', headers: { Authorization: `Bearer ${c.key}`, 'Mcp-Session-Id': c1, 'MCP-Protocol-Version': '2025-06-18' } });
    expect(ended.status).toBe(200);
    // The session is released after its DELETE is answered; p's kubeconfig goes once its server (and model) is closed.
    expect(await pollUntil(() => !existsSync(kubeconfig), { timeoutMs: 30_000, intervalMs: 20 })).toBe(true);
    // Before, p's 20,000 events held C's share until V8 collected them (the attack's 2 s later: still held).
    const c2 = await openMcpSession(server.node.url, c.key);
    await initialize(c.key, c2, 'q');
    await expectWhole(c.key, c2);
  }, 120_000);
});
