// Attack 18t N4, through the built server and the real kubectl: the server-wide budget for parsed bundles was first come, first
// served. One key's two MCP sessions held two bundles of 1.47 million tiny events each (2.94 of the 3 million objects), and another
// key's bundle was then served with its files left out. Each key's bundles now share its part of the budget (half by default;
// 1% here, --bundle-budget-per-key, so that 30,000 objects stand for the 1.5 million).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, createKey, openMcpSession, startNode, tempDataDir, type Node } from './helpers/control.js';
import { tempDir } from './helpers/programs.js';

let data: Awaited<ReturnType<typeof tempDataDir>>;
let store: string[];
let root: string;
let node: Node;

/** A directory bundle `name` in the root: `count` tiny events in namespace ns0 (the attack's shape, 110 bytes each). */
function eventsBundle(name: string, count: number): void {
  const dir = path.join(root, name, 'cluster-resources');
  mkdirSync(path.join(dir, 'events'), { recursive: true });
  const items = Array.from({ length: count }, (_, i) => ({ metadata: { name: `e${i}`, namespace: 'ns0' }, type: 'Normal', reason: 'Pulled', involvedObject: { kind: 'Pod', name: `p${i}` } }));
  writeFileSync(path.join(dir, 'events', 'ns0.json'), JSON.stringify({ kind: 'EventList', items }));
  writeFileSync(path.join(dir, 'namespaces.json'), JSON.stringify({ kind: 'NamespaceList', items: [{ metadata: { name: 'ns0' } }] }));
}

beforeAll(async () => {
  data = await tempDataDir();
  store = ['--data-dir', data.dir];
  root = tempDir('debugkit-18t-budget-root-');
  // Key A's two bundles hold 28,000 of its 30,000 objects; its third, 5,000 more, is past them; key B's is 5,000.
  eventsBundle('a1', 14_000);
  eventsBundle('a2', 14_000);
  eventsBundle('a3', 5000);
  eventsBundle('b1', 5000);
  await createKey(store, 'bootstrap', 'gdb:read');
  node = await startNode([...store, '--root', root, '--bundle-dir', tempDir('debugkit-18t-budget-store-'), '--toolsets', 'bundles', '--bundle-budget-per-key', '1']);
}, 60_000);

afterAll(async () => {
  await node?.stop();
  await data?.cleanup();
});

/** A tool call in an MCP session: its text and whether it is an error. */
async function tool(key: string, sid: string, name: string, args: object): Promise<{ isError: boolean; text: string }> {
  const r = await callTool(node.url, key, sid, name, args);
  if (r.body.error) return { isError: true, text: r.body.error.message };
  return { isError: r.body.result.isError === true, text: r.body.result.content.map((c: { text?: string }) => c.text ?? '').join('') };
}

/** A new MCP session of `key` working on `bundle`. */
async function sessionOn(key: string, bundle: string): Promise<string> {
  const sid = await openMcpSession(node.url, key);
  const opened = await tool(key, sid, 'initialize_bundle', { source: bundle });
  expect(opened.isError, opened.text).toBe(false);
  return sid;
}

/** The last event of the bundle's ns0: answered only when the whole events file was parsed and kept (each one is charged in full). */
function lastEvent(key: string, sid: string, count: number): Promise<{ isError: boolean; text: string }> {
  return tool(key, sid, 'kubectl', { command: `get event e${count - 1} -n ns0 -o name` });
}

describe("each key's share of the bundle budget (attack 18t N4)", () => {
  it("key A fills its share over two sessions: key B's bundle is still served whole, and A's third is refused naming A's share", async () => {
    const a = await createKey(store, '18t-a', 'bundles', ['--rate', 'unlimited']);
    const b = await createKey(store, '18t-b', 'bundles', ['--rate', 'unlimited']);
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
    expect(third.text).toContain("the support bundles open for the API key that opened this one (that key's share of this server's bundle budget)");
    expect(third.text).toMatch(/past the 8 MB or 30000 objects its parsed objects may hold \(\d+ MB and 28\d{3} objects held\): it is not served; closing that key's other bundles/);
    expect(third.text).not.toContain('all support bundles open on this server');
  }, 120_000);
});
