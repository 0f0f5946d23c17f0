// Attack 18t N4, through the built server and the real kubectl: the server-wide budget for parsed bundles was first come, first
// served. One key's two MCP sessions held two bundles of 1.47 million tiny events each (2.94 of the 3 million objects), and another
// key's bundle was then served with its files left out. Each key's bundles now share its part of the budget (half by default;
// 1% here, --bundle-budget-per-key, so that 30,000 objects stand for the 1.5 million).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBudgetNode, type BudgetNode } from './helpers/budget-node.js';
import { openMcpSession } from './helpers/control.js';

let server: BudgetNode;

beforeAll(async () => {
  // Key A's two bundles hold 28,000 of its 30,000 objects; its third, 5,000 more, is past them; key B's is 5,000.
  server = await startBudgetNode({ a1: 14_000, a2: 14_000, a3: 5000, b1: 5000 });
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

/** A new MCP session of `key` working on `bundle`. */
async function sessionOn(key: string, bundle: string): Promise<string> {
  const sid = await openMcpSession(server.node.url, key);
  const opened = await server.tool(key, sid, 'initialize_bundle', { source: bundle });
  expect(opened.isError, opened.text).toBe(false);
  return sid;
}

/** The last event of the bundle's ns0: answered only when the whole events file was parsed and kept (each one is charged in full). */
function lastEvent(key: string, sid: string, count: number): Promise<{ isError: boolean; text: string }> {
  return server.tool(key, sid, 'kubectl', { command: `get event e${count - 1} -n ns0 -o name` });
}

describe("each key's share of the bundle budget (attack 18t N4)", () => {
  it("key A fills its share over two sessions: key B's bundle is still served whole, and A's third is refused naming A's share", async () => {
    const a = await server.key('18t-a');
    const b = await server.key('18t-b');
    const a1 = await sessionOn(a.key, 'a1');
    const a2 = await sessionOn(a.key, 'a2');
    for (const sid of [a1, a2]) {
      const got = await lastEvent(a.key, sid, 14_000);
      expect(got.isError, got.text).toBe(false);
      expect(got.text).toContain('event/e13999');
      expect(got.text).not.toContain('left out');
    }
    const b1 = await sessionOn(b.key, 'b1');
    const other = await lastEvent(b.key, b1, 5000);
    expect(other.isError, other.text).toBe(false);
    expect(other.text).toContain('event/e4999');
    expect(other.text).not.toContain('left out');
    // Key A's third bundle: left out for A's share (what it holds, and what gives it back), not for the server's.
    const a3 = await sessionOn(a.key, 'a3');
    const third = await lastEvent(a.key, a3, 5000);
    expect(third.text).not.toContain('event/e4999');
    expect(third.text).toContain('events/ns0.json of this support bundle was left out');
    expect(third.text).toContain("the support bundles charged to an API key using this one (each key using a bundle is charged for all it holds; that key's share of this server's bundle budget)");
    expect(third.text).toMatch(/past the 8 MB or 30000 objects its parsed objects may hold \(\d+ MB and 28\d{3} objects held\): it is not served; closing the other bundles charged to that key/);
    expect(third.text).not.toContain('all support bundles open on this server');
  }, 120_000);
});
