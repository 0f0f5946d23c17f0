// Attack R4 (18v round) on the shared bundle's charge (0fffadf), through the built server and the real kubectl, each key's share
// 30,000 objects (--bundle-budget-per-key 1) and bundles x, y of 20,000 events, so a share holds one of them and not two.
// A bundle was charged to one key using it at a time: key A left x, which it shared with B (x's charge moved to B), and joined it
// again at once from another session; A then used x and y (40,000 objects) on its 30,000 share while B paid for x, and B's next
// bundle was left out. Now every key using a bundle is charged for all it holds, and a join without room is refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBudgetNode, type BudgetNode } from './helpers/budget-node.js';
import { openMcpSession } from './helpers/control.js';

const EVENTS = 20_000;
const SMALL = 5_000;

let server: BudgetNode;

beforeAll(async () => {
  server = await startBudgetNode({ x: EVENTS, y: EVENTS, w: SMALL, x2: EVENTS, y2: EVENTS });
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

async function initialize(key: string, sid: string, bundle: string): Promise<{ isError: boolean; text: string }> {
  return server.tool(key, sid, 'initialize_bundle', { source: bundle });
}

/** The session's bundle's last event of `count`: whether it is served, and the answer's text. */
async function lastEvent(key: string, sid: string, count: number): Promise<{ served: boolean; text: string }> {
  const got = await server.tool(key, sid, 'kubectl', { command: `get event e${count - 1} -n ns0 -o name` });
  return { served: !got.isError && got.text.includes(`event/e${count - 1}`) && !got.text.includes('left out'), text: got.text };
}

describe('a shared bundle is charged to every key using it (attack R4)', () => {
  it('A leaves x (shared with B) and joins it again at once: A is charged for x again, so its y is left out; B uses x and w within its share', async () => {
    const a = await server.key('18v-a');
    const b = await server.key('18v-b');
    const [a1, a2, b1, b2] = await Promise.all([
      openMcpSession(server.node.url, a.key),
      openMcpSession(server.node.url, a.key),
      openMcpSession(server.node.url, b.key),
      openMcpSession(server.node.url, b.key),
    ]);
    expect((await initialize(a.key, a1, 'x')).isError).toBe(false);
    expect((await lastEvent(a.key, a1, EVENTS)).served).toBe(true);
    expect((await initialize(b.key, b1, 'x')).isError).toBe(false);
    // A's only session on x moves to y, and A's other session joins x again.
    expect((await initialize(a.key, a1, 'y')).isError).toBe(false);
    expect((await initialize(a.key, a2, 'x')).isError).toBe(false);
    expect((await lastEvent(a.key, a2, EVENTS)).served).toBe(true);
    // Before: y was whole too (A held 40,000 objects on a 30,000 share, x charged to B). Now x is on A's share, and y is past it.
    const ay = await lastEvent(a.key, a1, EVENTS);
    expect(ay.served).toBe(false);
    expect(ay.text).toMatch(/left out: .* the support bundles charged to an API key using this one .* \(\d+ MB and 20000 objects held\)/);
    // B pays for x alone, which it uses: w (5,000) fits beside it.
    expect((await initialize(b.key, b2, 'w')).isError).toBe(false);
    expect((await lastEvent(b.key, b2, SMALL)).served).toBe(true);
    expect((await lastEvent(b.key, b1, EVENTS)).served).toBe(true);
  }, 120_000);

  it("the other order: A leaves x2, lists y2, then joins x2 again: the join is refused naming A's share, and B keeps x2 whole", async () => {
    const a = await server.key('18v-c');
    const b = await server.key('18v-d');
    const [a1, a2, b1] = await Promise.all([openMcpSession(server.node.url, a.key), openMcpSession(server.node.url, a.key), openMcpSession(server.node.url, b.key)]);
    expect((await initialize(a.key, a1, 'x2')).isError).toBe(false);
    expect((await lastEvent(a.key, a1, EVENTS)).served).toBe(true);
    expect((await initialize(b.key, b1, 'x2')).isError).toBe(false);
    expect((await initialize(a.key, a1, 'y2')).isError).toBe(false);
    expect((await lastEvent(a.key, a1, EVENTS)).served).toBe(true);
    // Before: joined, x2 charged to B, so A used 40,000 objects on its 30,000 share.
    const again = await initialize(a.key, a2, 'x2');
    expect(again.isError).toBe(true);
    expect(again.text).toMatch(
      /This bundle is not opened for this API key: its model holds \d+ MB and 20000 objects .* this key's share of the server's bundle budget \(8 MB or 30000 objects\) has \d+ MB and 20000 objects held by its other bundles/,
    );
    expect((await lastEvent(b.key, b1, EVENTS)).served).toBe(true);
  }, 120_000);
});
