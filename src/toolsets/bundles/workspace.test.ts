import { existsSync, mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { KeyShares, ModelBudget } from './apiserver/budget.js';
import { Bundle } from './apiserver/bundle.js';
import { BUNDLE_2022, extractFixture, FIXTURES, requireKubectl, SYSTEM_KUBECTL } from './apiserver/testkit.js';
import { renderKubectl, runKubectl, warningsOf } from './kubectl.js';
import { BundleStore } from './store/store.js';
import { summarizeBundle } from './summary.js';
import { BundleWorkspace, type ActiveBundle } from './workspace.js';

/**
 * Attack 18r: the API servers the workspace starts for bundles. L2: one client's forced
 * initialization must not stop a server other clients (of any key) still use. L4: each server
 * wants its own random token, which only the kubeconfig carries, and its own Host.
 */

let base: string;
let dir: string;
let workspace: BundleWorkspace;

beforeAll(async () => {
  requireKubectl(SYSTEM_KUBECTL);
  base = await mkdtemp(path.join(tmpdir(), 'dk-workspace-'));
  dir = await extractFixture(BUNDLE_2022);
});
afterAll(async () => {
  await rm(base, { recursive: true, force: true });
  await rm(dir, { recursive: true, force: true });
});
afterEach(async () => workspace?.dispose());

const kubectl = (bundle: ActiveBundle, command = 'get namespaces') => runKubectl({ kubectl: SYSTEM_KUBECTL, kubeconfig: bundle.kubeconfigPath, command, timeoutSeconds: 20, jsonOutput: false });

/** A raw GET to the bundle's API server (`prefix`: the path before /api/v1/namespaces): its status and Status reason. */
function get(bundle: ActiveBundle, prefix: string, headers: Record<string, string> = {}): Promise<{ status: number; reason?: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(`http://${new URL(bundle.apiServerUrl).host}${prefix}/api/v1/namespaces`, { headers }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, reason: (JSON.parse(body) as { reason?: string }).reason }));
    });
    req.on('error', reject);
  });
}

/** The kubeconfig's server URL's path: /TOKEN. */
const tokenOf = (bundle: ActiveBundle) =>
  new URL((JSON.parse(readFileSync(bundle.kubeconfigPath, 'utf8')) as { clusters: Array<{ cluster: { server: string } }> }).clusters[0]!.cluster.server).pathname;

describe('bundle API servers shared by clients (attack 18r L2)', () => {
  it("another key's force on a directory used in place leaves the server and kubeconfig the others use", async () => {
    workspace = new BundleWorkspace(new BundleStore(path.join(base, 'store-1')));
    const a = await workspace.initialize('session-a', dir, { key: 'key-a', force: false });
    expect((await kubectl(a)).output).toMatch(/default/);
    const b = await workspace.initialize('session-b', dir, { key: 'key-b', force: true });
    // One server per real path: B got the same one, and A's is still there.
    expect(b.apiServerUrl).toBe(a.apiServerUrl);
    expect(existsSync(a.kubeconfigPath)).toBe(true);
    expect((await kubectl(workspace.current('session-a'))).output).toMatch(/default/);
    // The last user letting go stops it.
    await workspace.release('session-a');
    expect(existsSync(a.kubeconfigPath)).toBe(true);
    await workspace.release('session-b');
    expect(existsSync(a.kubeconfigPath)).toBe(false);
  });

  it('a forced re-extraction of an archive re-points every client of the bundle to the new server', async () => {
    workspace = new BundleWorkspace(new BundleStore(path.join(base, 'store-2')));
    const archive = path.join(FIXTURES, BUNDLE_2022);
    const a = await workspace.initialize('session-a', archive, { key: 'key-a', force: false });
    const b = await workspace.initialize('session-b', archive, { key: 'key-a', force: true });
    expect(b.reused).toBe(false);
    const a2 = workspace.current('session-a');
    expect(a2.kubeconfigPath).toBe(b.kubeconfigPath);
    expect(a2.apiServerUrl).not.toBe(a.apiServerUrl);
    expect(existsSync(a.kubeconfigPath)).toBe(false);
    expect((await kubectl(a2)).output).toMatch(/default/);
  });

  it('kubectl with its kubeconfig gone is refused, never sent to localhost:8080', async () => {
    workspace = new BundleWorkspace(new BundleStore(path.join(base, 'store-3')));
    const a = await workspace.initialize('session-a', dir, { key: 'key-a', force: false });
    unlinkSync(a.kubeconfigPath);
    await expect(kubectl(a)).rejects.toThrow(/kubeconfig .* is gone\): call initialize_bundle again/);
    // Which puts it back.
    const again = await workspace.initialize('session-a', dir, { key: 'key-a', force: false });
    expect(again.kubeconfigPath).toBe(a.kubeconfigPath);
    expect((await kubectl(again)).output).toMatch(/default/);
  });
});

describe('bundle API server access (attack 18r L4)', () => {
  it('writes a random token into a private kubeconfig; requests without it, or with another Host, are refused', async () => {
    workspace = new BundleWorkspace(new BundleStore(path.join(base, 'store-4')));
    const a = await workspace.initialize('session-a', dir, { key: 'key-a', force: false });
    const b = await workspace.initialize('session-b', path.join(FIXTURES, BUNDLE_2022), { key: 'key-a', force: false });
    expect(statSync(a.kubeconfigPath).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(a.kubeconfigPath)).mode & 0o777).toBe(0o700);
    expect(readFileSync(a.kubeconfigPath, 'utf8')).not.toMatch(/support-bundle|token/);
    const token = tokenOf(a);
    expect(token).toMatch(/^\/dk-[\w-]{43}$/);
    expect(tokenOf(b)).not.toBe(token);
    const port = new URL(a.apiServerUrl).port;
    expect(await get(a, token)).toMatchObject({ status: 200 });
    expect(await get(a, token, { Host: `localhost:${port}` })).toMatchObject({ status: 200 });
    for (const other of ['', '/dk-support-bundle', tokenOf(b), `${token}x`, token.slice(0, -1), `/x${token}`])
      expect(await get(a, other), other).toMatchObject({ status: 401, reason: 'Unauthorized' });
    // A bearer header is no way around it.
    expect(await get(a, '', { Authorization: `Bearer ${token.slice(1)}` })).toMatchObject({ status: 401 });
    for (const other of ['attacker.example', `attacker.example:${port}`, `127.0.0.1:${Number(port) + 1}`, '127.0.0.1']) {
      expect(await get(a, token, { Host: other }), other).toMatchObject({ status: 421 });
    }
    // kubectl sends the token from the kubeconfig.
    expect((await kubectl(a)).output).toMatch(/default/);
  });
});

describe("kubectl's warnings (attack 18r I2)", () => {
  it('a file the API server skipped is named in a successful answer, not an empty table alone', async () => {
    const bundle = path.join(base, 'warned');
    mkdirSync(path.join(bundle, 'cluster-resources', 'pods'), { recursive: true });
    writeFileSync(path.join(bundle, 'cluster-resources', 'pods', 'ns0.json'), '{"kind":"PodList","items":[{"metadata":');
    workspace = new BundleWorkspace(new BundleStore(path.join(base, 'store-5')));
    const a = await workspace.initialize('session-a', bundle, { key: 'key-a', force: false });
    const r = await kubectl(a, 'get pods -A');
    expect(r.warnings).toEqual([expect.stringMatching(/^Warning: .*ns0\.json skipped/)]);
    expect(renderKubectl(r)).toMatch(/\n\nkubectl warned:\nWarning: .*ns0\.json skipped/);
  });

  it('keeps a few, each cut, then counts the rest; other stderr lines are not warnings', () => {
    const stderr = ['I1127 noise', ...Array.from({ length: 12 }, (_, i) => `Warning: ${i} ${'w'.repeat(i === 0 ? 2000 : 10)}`), 'No resources found'].join('\n');
    const w = warningsOf(stderr);
    expect(w).toHaveLength(6);
    expect(w[0]!.length).toBeLessThanOrEqual(501);
    expect(w[4]).toMatch(/^Warning: 4 /);
    expect(w[5]).toBe('… and 7 more warnings');
    expect(warningsOf('error: nothing\n')).toEqual([]);
  });
});

describe("a shared bundle's charge to a key's share (attack P4, P5)", () => {
  /** A directory bundle of `count` tiny events in namespace ns0, used in place. */
  function eventsBundle(name: string, count: number): string {
    const root = path.join(base, name);
    mkdirSync(path.join(root, 'cluster-resources', 'events'), { recursive: true });
    const items = Array.from({ length: count }, (_, i) => ({ metadata: { name: `e${i}`, namespace: 'ns0' }, type: 'Normal', reason: 'Pulled', involvedObject: { kind: 'Pod', name: `p${i}` } }));
    writeFileSync(path.join(root, 'cluster-resources', 'events', 'ns0.json'), JSON.stringify({ kind: 'EventList', items }));
    writeFileSync(path.join(root, 'cluster-resources', 'namespaces.json'), JSON.stringify({ kind: 'NamespaceList', items: [{ metadata: { name: 'ns0' } }] }));
    return root;
  }

  /** Each key's share is 3,000 objects (half of 6,000); every bundle here holds 2,000 events, so a key's share holds one. */
  function sharedWorkspace(store: string): KeyShares {
    const shares = new KeyShares(50, new ModelBudget({ bytes: 1024 * 1024 * 1024, objects: 6000 }, 'all support bundles open on this server'));
    workspace = new BundleWorkspace(new BundleStore(path.join(base, store)), shares);
    return shares;
  }

  /** The client's bundle's events as kubectl lists them, and its warnings. */
  async function events(owner: string): Promise<{ count: number; warnings: string[] }> {
    const r = await kubectl(workspace.current(owner), 'get events -A -o name');
    return { count: r.output.split('\n').filter((l) => l.startsWith('event/')).length, warnings: r.warnings ?? [] };
  }

  it("key B joins key A's bundle: both are charged for it; A leaves: A's next bundle is served whole within A's share", async () => {
    const shares = sharedWorkspace('store-p4a');
    const [x, y] = [eventsBundle('p4a-x', 2000), eventsBundle('p4a-y', 2000)];
    await workspace.initialize('a1', x, { key: 'key-a', force: false });
    expect(await events('a1')).toEqual({ count: 2000, warnings: [] });
    await workspace.initialize('b1', x, { key: 'key-b', force: false });
    expect([shares.of('key-a').objects, shares.of('key-b').objects, shares.server.objects]).toEqual([2000, 2000, 2000]);
    // A's session ends (an HTTP DELETE releases it so); B still uses x.
    await workspace.release('a1');
    expect(shares.of('key-a').objects).toBe(0);
    expect(shares.of('key-b').objects).toBe(2000);
    await workspace.initialize('a2', y, { key: 'key-a', force: false });
    // Before 0fffadf: A's share still held x's 2,000 for B, and y's events were left out naming A's other bundles, which it had none of.
    expect(await events('a2')).toEqual({ count: 2000, warnings: [] });
    expect(shares.of('key-a').objects).toBe(2000);
    expect(await events('b1')).toEqual({ count: 2000, warnings: [] });
    expect(shares.server.objects).toBe(4000);
  });

  it('a key without room for a bundle another key uses is refused the join, naming its share; the bundle stays whole for the others', async () => {
    const shares = sharedWorkspace('store-p4b');
    const [x, z] = [eventsBundle('p4b-x', 2000), eventsBundle('p4b-z', 2000)];
    await workspace.initialize('b0', z, { key: 'key-b', force: false });
    expect((await events('b0')).count).toBe(2000);
    await workspace.initialize('a1', x, { key: 'key-a', force: false });
    expect((await events('a1')).count).toBe(2000);
    await expect(workspace.initialize('b1', x, { key: 'key-b', force: false })).rejects.toThrow(
      /^This bundle is not opened for this API key: its model holds 0 MB and 2000 objects for the 1 other key\(s\) using it(?: \(its files on disk may bring it to [^)]*\))?, and every key using a bundle is charged for all it holds, but this key's share of the server's bundle budget \(512 MB or 3000 objects\) has 0 MB and 2000 objects held by its other bundles; closing them/,
    );
    expect(workspace.activeName('b1')).toBeUndefined();
    expect([shares.of('key-a').objects, shares.of('key-b').objects]).toEqual([2000, 2000]);
    // B's session on z moves to x: what z gave back counts, so it fits; A's x is whole for both.
    await workspace.initialize('b0', x, { key: 'key-b', force: false });
    expect(await events('b0')).toEqual({ count: 2000, warnings: [] });
    expect(await events('a1')).toEqual({ count: 2000, warnings: [] });
    expect([shares.of('key-a').objects, shares.of('key-b').objects, shares.server.objects]).toEqual([2000, 2000, 2000]);
  });

  // Attack R4: with the charge on one key at a time, A left x (its charge moved to B) and joined it again at once while B kept
  // paying; A then used x and y (4,000 objects) on a 3,000 share, and B's next bundle was left out for A's use.
  it('key A leaves a bundle it shares with B and joins it again: A is charged for it again, B only for what B uses (attack R4)', async () => {
    const shares = sharedWorkspace('store-r4');
    const [x, y, z] = [eventsBundle('r4-x', 2000), eventsBundle('r4-y', 2000), eventsBundle('r4-z', 1000)];
    await workspace.initialize('a1', x, { key: 'key-a', force: false });
    expect((await events('a1')).count).toBe(2000);
    await workspace.initialize('b1', x, { key: 'key-b', force: false });
    await workspace.initialize('a1', y, { key: 'key-a', force: false });
    expect([shares.of('key-a').objects, shares.of('key-b').objects]).toEqual([0, 2000]);
    // A joins x again before y is parsed: charged for x at once, so y's events are A's to leave out (x and y pass A's share).
    await workspace.initialize('a2', x, { key: 'key-a', force: false });
    expect(await events('a2')).toEqual({ count: 2000, warnings: [] });
    const ay = await events('a1');
    expect(ay.count).toBe(0);
    expect(ay.warnings).toEqual([expect.stringMatching(/ns0\.json of this support bundle was left out: .* the support bundles charged to an API key using this one .*\(0 MB and 2000 objects held\)/)]);
    // B is charged for x alone, which B uses: a bundle that fits beside it is served whole.
    expect([shares.of('key-a').objects, shares.of('key-b').objects]).toEqual([2000, 2000]);
    await workspace.initialize('b2', z, { key: 'key-b', force: false });
    expect(await events('b2')).toEqual({ count: 1000, warnings: [] });
    // The other order: A lets go of x, lists y (its share now holds y), and tries x again: refused, nothing moved to B.
    await workspace.release('a2');
    await workspace.release('a1');
    await workspace.initialize('a1', y, { key: 'key-a', force: false });
    expect(await events('a1')).toEqual({ count: 2000, warnings: [] });
    await expect(workspace.initialize('a2', x, { key: 'key-a', force: false })).rejects.toThrow(/not opened for this API key/);
    expect([shares.of('key-a').objects, shares.of('key-b').objects]).toEqual([2000, 3000]);
  });

  // Attack 18x V4: both initializations read "no bundle yet" and joined both; the release dropped the client from one only.
  it("two initializations at once for one client, then its release: no bundle keeps it, and its key's share is back to 0", async () => {
    const shares = sharedWorkspace('store-v4');
    const [x, y, z] = [eventsBundle('v4-x', 1200), eventsBundle('v4-y', 1200), eventsBundle('v4-z', 2500)];
    const both = await Promise.all([x, y].map((b) => workspace.initialize('a1', b, { key: 'key-a', force: false })));
    // Each bundle still served is read through its kubeconfig: its events are charged to the key's share.
    for (const b of both) await kubectl(b, 'get events -A -o name').catch(() => undefined);
    expect(workspace.current('a1').root).toBe(both[1]!.root);
    await workspace.release('a1');
    // Before: the client stayed a user of x, still served (its kubeconfig there) and 1,200 objects on key-a's share for good.
    expect(both.map((b) => existsSync(b.kubeconfigPath))).toEqual([false, false]);
    expect([shares.of('key-a').objects, shares.server.objects]).toEqual([0, 0]);
    await workspace.initialize('a2', z, { key: 'key-a', force: false });
    expect(await events('a2')).toEqual({ count: 2500, warnings: [] });
  });

  it('a key closing its only bundle gets its share back at once, not when the model is collected: its next bundle is served whole', async () => {
    const shares = sharedWorkspace('store-p5');
    const [x, y] = [eventsBundle('p5-x', 2000), eventsBundle('p5-y', 2000)];
    await workspace.initialize('a1', x, { key: 'key-a', force: false });
    expect((await events('a1')).count).toBe(2000);
    await workspace.release('a1');
    // Before: held until V8 collected x's model (minutes on an idle server).
    expect(shares.of('key-a').objects).toBe(0);
    expect(shares.server.objects).toBe(0);
    await workspace.initialize('a2', y, { key: 'key-a', force: false });
    expect(await events('a2')).toEqual({ count: 2000, warnings: [] });
  });

  // bundle_summary's own model of the bundle was given back only when V8 collected it.
  it("bundle_summary's model gives its charge back when its client lets go of the bundle or initializes another", async () => {
    const shares = sharedWorkspace('store-p5-summary');
    const [x, y] = [eventsBundle('p5s-x', 2000), eventsBundle('p5s-y', 1000)];
    await workspace.initialize('a1', x, { key: 'key-a', force: false });
    const open = (a: { root: string }) => Bundle.open(a.root, { serverModel: workspace.modelBudget('key-a') });
    const model = await workspace.summaryModel('a1', open);
    expect(await workspace.summaryModel('a1', open)).toBe(model);
    await summarizeBundle(model, 'x');
    expect(shares.of('key-a').objects).toBe(2000);
    // Another bundle in the same session: the summary's model of x goes with it.
    await workspace.initialize('a1', y, { key: 'key-a', force: false });
    expect(shares.of('key-a').objects).toBe(0);
    await summarizeBundle(await workspace.summaryModel('a1', open), 'y');
    expect(shares.of('key-a').objects).toBe(1000);
    await workspace.release('a1');
    expect(shares.of('key-a').objects).toBe(0);
  });
});
