import { existsSync, mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLE_2022, extractFixture, FIXTURES, requireKubectl, SYSTEM_KUBECTL } from './apiserver/testkit.js';
import { renderKubectl, runKubectl, warningsOf } from './kubectl.js';
import { BundleStore } from './store/store.js';
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
