// Attack 18x (V3, V4) on the bundles' charge to each key's share, through the built server and the real kubectl, each key's
// share 30,000 objects (--bundle-budget-per-key 1) and bundles of 20,000 or 12,000 tiny events.
// V4: two initialize_bundle at once in one MCP session both joined their bundles, and the session's end let go of one only:
// the other stayed served, and charged to the key's share, for the server's life.
// V3: a shared bundle's later file was kept while one key using it had room, and charged to all: key A, its share full,
// joined B's bundle while it held little and read its events on B's room; B's next bundle was left out for A's use. The
// first fix (a later file must fit every user's share) let such a join leave the file out for all (18y X3): a key joining a
// bundle another key uses must now afford its files on disk.
import { existsSync, mkdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../src/core/wait.js';
import { startBudgetNode, type BudgetNode } from './helpers/budget-node.js';
import { openMcpSession } from './helpers/control.js';

const EVENTS = 20_000;
const HALF = 12_000;

let server: BudgetNode;

beforeAll(async () => {
  server = await startBudgetNode({ x: EVENTS, y: EVENTS, z: EVENTS, p: HALF, q: HALF, r: EVENTS, logs: 100 });
  // 40 MB of pod logs beside 100 events: never parsed, so no key's share pays for them (attack 18z Z8).
  mkdirSync(path.join(server.root, 'logs', 'cluster-resources', 'pods', 'logs'), { recursive: true });
  const log = path.join(server.root, 'logs', 'cluster-resources', 'pods', 'logs', 'app.log');
  writeFileSync(log, '');
  truncateSync(log, 40 * 2 ** 20);
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

/** The session's new bundle's kubeconfig path, from initialize_bundle's answer. */
async function initialize(key: string, sid: string, bundle: string): Promise<string> {
  const got = await server.tool(key, sid, 'initialize_bundle', { source: bundle });
  expect(got.isError, got.text).toBe(false);
  return /"kubeconfig_path": "([^"]+)"/.exec(got.text)![1]!;
}

/** The session's bundle's last event of `count`: whether it is served, and the answer's text. */
async function lastEvent(key: string, sid: string, count: number): Promise<{ served: boolean; text: string }> {
  const got = await server.tool(key, sid, 'kubectl', { command: `get event e${count - 1} -n ns0 -o name` });
  return { served: !got.isError && got.text.includes(`event/e${count - 1}`) && !got.text.includes('left out'), text: got.text };
}

/** The events the bundle API server behind `kubeconfig` lists, when it is still served (its kubeconfig is gone with it). */
async function eventsThrough(kubeconfig: string): Promise<number | undefined> {
  if (!existsSync(kubeconfig)) return undefined;
  const url = (JSON.parse(readFileSync(kubeconfig, 'utf8')) as { clusters: Array<{ cluster: { server: string } }> }).clusters[0]!.cluster.server;
  const res = await fetch(`${url.replace(/\/$/, '')}/api/v1/namespaces/ns0/events`).catch(() => undefined);
  if (!res?.ok) return undefined;
  return ((await res.json()) as { items: unknown[] }).items.length;
}

async function end(key: string, sid: string): Promise<void> {
  const ended = await fetch(server.node.url, { method: 'DELETE', headers: { Authorization: `Bearer ${key}`, 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18' } });
  expect(ended.status).toBe(200);
}

describe('attack 18x on the bundles charge', () => {
  it("V4: two initialize_bundle at once in one session, then the session ends: neither bundle stays served, and the key's next bundle is whole", async () => {
    const k = await server.key('18x-v4');
    const s1 = await openMcpSession(server.node.url, k.key);
    const kubeconfigs = await Promise.all(['p', 'q'].map((b) => initialize(k.key, s1, b)));
    // Each bundle still served is read (its events charged to the key's share): both before, the later one alone now.
    const read = [];
    for (const kubeconfig of kubeconfigs) read.push(await eventsThrough(kubeconfig));
    expect(read.filter((n) => n === HALF).length).toBeGreaterThanOrEqual(1);
    await end(k.key, s1);
    // The session is released after its DELETE is answered; a bundle no one uses is closed and its kubeconfig removed.
    // Before: the bundle not recorded as the session's stayed served with the dead session as its user, for good.
    expect(await pollUntil(() => kubeconfigs.every((f) => !existsSync(f)), { timeoutMs: 30_000, intervalMs: 20 })).toBe(true);
    // The key's share is back to 0: a bundle of 20,000 events fits it whole (before, 12,000 stayed held: it was left out).
    const s2 = await openMcpSession(server.node.url, k.key);
    await initialize(k.key, s2, 'r');
    const whole = await lastEvent(k.key, s2, EVENTS);
    expect(whole.served, whole.text).toBe(true);
    await end(k.key, s2);
  }, 120_000);

  it('18z Z8: a second key joins a shared bundle of 100 events and 40 MB of pod logs: the logs are never parsed, so they are not counted', async () => {
    const a = await server.key('18z-z8-a');
    const b = await server.key('18z-z8-b');
    const [a1, b1] = await Promise.all([a.key, b.key].map((key) => openMcpSession(server.node.url, key)));
    await initialize(a.key, a1, 'logs');
    // Before: refused, the bundle's whole size on disk (40 MB of logs) taken for what its model may hold.
    const joined = await server.tool(b.key, b1, 'initialize_bundle', { source: 'logs' });
    expect(joined.isError, joined.text).toBe(false);
    await end(a.key, a1);
    await end(b.key, b1);
  }, 120_000);

  it("V3, 18y X3: key A, its share full, is refused the join of B's bundle (judged by its files on disk, not by what it holds yet); B's bundles stay whole", async () => {
    const a = await server.key('18x-v3-a');
    const b = await server.key('18x-v3-b');
    const [a1, a2, b1, b2] = await Promise.all([a.key, a.key, b.key, b.key].map((key) => openMcpSession(server.node.url, key)));
    // B uses y, its namespaces alone parsed: y holds 1 object yet.
    await initialize(b.key, b1, 'y');
    const ns = await server.tool(b.key, b1, 'kubectl', { command: 'get namespaces -o name' });
    expect(ns.text).toContain('namespace/ns0');
    // A's share holds x's 20,000 events; A asks to join y, which holds little yet but has 20,000 events on disk.
    await initialize(a.key, a1, 'x');
    expect((await lastEvent(a.key, a1, EVENTS)).served).toBe(true);
    // Before (18x): joined, y's events then left out for B too, since a later file must fit every user's share (18y X3: 0 of
    // 2,483 events for the keys using two bundles A squatted). Before that (18x V3): kept on B's room, and B's next bundle left out.
    const refused = await server.tool(a.key, a2, 'initialize_bundle', { source: 'y' });
    expect(refused.isError).toBe(true);
    expect(refused.text).toMatch(/not opened for this API key: its model holds \d+ MB and \d+ objects for the 1 other key\(s\) using it \(its files on disk may bring it to \d+ MB and \d+ objects\)/);
    // B's share holds y's namespaces alone: its next bundle of 20,000 events is whole.
    await initialize(b.key, b2, 'z');
    const bz = await lastEvent(b.key, b2, EVENTS);
    expect(bz.served, bz.text).toBe(true);
    for (const [key, sid] of [
      [a.key, a1],
      [a.key, a2],
      [b.key, b1],
      [b.key, b2],
    ] as const)
      await end(key, sid);
  }, 120_000);
});
