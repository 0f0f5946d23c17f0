import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { callTool, createKey, startNode, tempDataDir, type Node } from './control.js';
import { tempDir } from './programs.js';

/**
 * A `debugkit serve` of the bundles toolset for the attacks on the bundle budget's per-key share: a root of directory bundles
 * (used in place, so any key may open one), each key's share 1% of the server's (30,000 objects standing for 1.5 million).
 */
export interface BudgetNode {
  node: Node;
  /** The root holding the bundles (a test may add files to one). */
  root: string;
  /** --data-dir DIR, for createKey. */
  store: string[];
  /** A key of scope `bundles`, unlimited in rate. */
  key(name: string): Promise<{ key: string; id: string }>;
  /** A tool call in an MCP session: its text and whether it is an error. */
  tool(key: string, sid: string, name: string, args: object): Promise<{ isError: boolean; text: string }>;
  stop(): Promise<void>;
}

/** Starts the server over a root holding, for each `name: count`, a bundle of `count` tiny events in namespace ns0 (the attack's shape, 110 bytes each). */
export async function startBudgetNode(bundles: Record<string, number>): Promise<BudgetNode> {
  const data = await tempDataDir();
  const store = ['--data-dir', data.dir];
  const root = tempDir('debugkit-budget-root-');
  for (const [name, count] of Object.entries(bundles)) eventsBundle(path.join(root, name), count);
  await createKey(store, 'bootstrap', 'gdb:read');
  const node = await startNode([...store, '--root', root, '--bundle-dir', tempDir('debugkit-budget-store-'), '--toolsets', 'bundles', '--bundle-budget-per-key', '1']);
  return {
    node,
    root,
    store,
    key: (name) => createKey(store, name, 'bundles', ['--rate', 'unlimited']),
    async tool(key, sid, name, args) {
      const r = await callTool(node.url, key, sid, name, args);
      if (r.body.error) return { isError: true, text: r.body.error.message };
      return { isError: r.body.result.isError === true, text: r.body.result.content.map((c: { text?: string }) => c.text ?? '').join('') };
    },
    async stop() {
      await node.stop();
      await data.cleanup();
    },
  };
}

function eventsBundle(dir: string, count: number): void {
  const cr = path.join(dir, 'cluster-resources');
  mkdirSync(path.join(cr, 'events'), { recursive: true });
  const items = Array.from({ length: count }, (_, i) => ({ metadata: { name: `e${i}`, namespace: 'ns0' }, type: 'Normal', reason: 'Pulled', involvedObject: { kind: 'Pod', name: `p${i}` } }));
  writeFileSync(path.join(cr, 'events', 'ns0.json'), JSON.stringify({ kind: 'EventList', items }));
  writeFileSync(path.join(cr, 'namespaces.json'), JSON.stringify({ kind: 'NamespaceList', items: [{ metadata: { name: 'ns0' } }] }));
}
