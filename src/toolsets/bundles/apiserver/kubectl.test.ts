import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Bundle } from './bundle.js';
import { BUNDLE_2022, BUNDLE_2025, requireKubectl, startHarness, SYSTEM_KUBECTL, type KubectlHarness } from './testkit.js';

/**
 * The real kubectl (/usr/bin/kubectl) against the bundle API server: the point of the
 * server is that these commands behave as they would against the live cluster.
 */

// Loosely typed on purpose: bundle JSON is compared field by field.
type Json = Record<string, any>;

/** Rows of kubectl's table output; columns are separated by at least two spaces. */
function table(stdout: string): { header: string[]; rows: string[][] } {
  const [head = '', ...lines] = stdout.trimEnd().split('\n');
  return { header: head.trim().split(/\s{2,}/), rows: lines.map((l) => l.trim().split(/\s{2,}/)) };
}

async function clusterDir(h: KubectlHarness): Promise<string> {
  return (await Bundle.open(h.root)).clusterDir;
}

/** Every item of every `<dir>/<ns>.json` in the bundle, read straight from the files. */
async function bundleItems(h: KubectlHarness, dir: string): Promise<Json[]> {
  const full = path.join(await clusterDir(h), dir);
  const out: Json[] = [];
  for (const f of (await readdir(full)).filter((n) => n.endsWith('.json'))) {
    out.push(...((JSON.parse(await readFile(path.join(full, f), 'utf8')) as Json).items ?? []));
  }
  return out;
}

/** READY and STATUS as kubectl shows them, derived independently from the pod JSON. */
function expectedPodRow(p: Json): string[] {
  const statuses: Json[] = p.status.containerStatuses ?? [];
  const ready = statuses.filter((c) => c.ready && c.state?.running).length;
  const status = p.status.phase === 'Succeeded' ? 'Completed' : p.status.phase;
  return [p.metadata.namespace, p.metadata.name, `${ready}/${p.spec.containers.length}`, status];
}

beforeAll(() => requireKubectl(SYSTEM_KUBECTL));

describe('kubectl against the 2025 bundle', () => {
  let h: KubectlHarness;
  beforeAll(async () => {
    h = await startHarness(BUNDLE_2025);
  });
  afterAll(async () => h?.close());

  it('get pods -A matches the bundle: names, namespaces, READY, STATUS', async () => {
    const r = await h.kubectl(['get', 'pods', '-A']);
    expect(r.code, r.stderr).toBe(0);
    const t = table(r.stdout);
    expect(t.header).toEqual(['NAMESPACE', 'NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE']);
    const want = (await bundleItems(h, 'pods')).map(expectedPodRow).sort();
    expect(t.rows.map((row) => row.slice(0, 4)).sort()).toEqual(want);
  });

  it('get deploy -n kube-system -o wide shows the wide columns', async () => {
    const r = await h.kubectl(['get', 'deploy', '-n', 'kube-system', '-o', 'wide']);
    expect(r.code, r.stderr).toBe(0);
    const t = table(r.stdout);
    expect(t.header).toEqual(['NAME', 'READY', 'UP-TO-DATE', 'AVAILABLE', 'AGE', 'CONTAINERS', 'IMAGES', 'SELECTOR']);
    const coredns = t.rows.find((row) => row[0] === 'coredns')!;
    expect(coredns).toEqual(['coredns', '1/1', '1', '1', '48m', 'coredns', 'rancher/mirrored-coredns-coredns:1.12.0', 'k8s-app=kube-dns']);
    expect(t.rows.map((row) => row[0]).sort()).toEqual(['coredns', 'local-path-provisioner', 'metrics-server']);
  });

  it('describe pod shows the pod and its events', async () => {
    const r = await h.kubectl(['describe', 'pod', 'coredns-ff8999cc5-6rpll', '-n', 'kube-system']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^Name:\s+coredns-ff8999cc5-6rpll$/m);
    expect(r.stdout).toMatch(/^Node:\s+b9aead2c1\//m);
    const events = (await bundleItems(h, 'events')).filter((e) => e.involvedObject.name === 'coredns-ff8999cc5-6rpll');
    expect(events.length).toBe(7);
    for (const e of events) expect(r.stdout).toContain(e.message);
  });

  it('logs prints the collected log file', async () => {
    const r = await h.kubectl(['logs', 'coredns-ff8999cc5-6rpll', '-n', 'kube-system']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(await readFile(path.join(await clusterDir(h), 'pods/logs/kube-system/coredns-ff8999cc5-6rpll/coredns.log'), 'utf8'));
    const tail = await h.kubectl(['logs', 'deploy/coredns', '-n', 'kube-system', '--tail=1']);
    expect(tail.stdout.split('\n').filter(Boolean).length).toBe(1);
  });

  it('get crd lists every CRD, and custom resources print their columns', async () => {
    const crds = (JSON.parse(await readFile(path.join(await clusterDir(h), 'custom-resource-definitions.json'), 'utf8')) as Json).items as Json[];
    const r = await h.kubectl(['get', 'crd']);
    const t = table(r.stdout);
    expect(t.header).toEqual(['NAME', 'CREATED AT']);
    expect(t.rows.map((row) => row[0]).sort()).toEqual(crds.map((c) => c.metadata.name).sort());
    const certs = table((await h.kubectl(['get', 'certificates', '-A'])).stdout);
    expect(certs.header).toEqual(['NAMESPACE', 'NAME', 'READY', 'SECRET', 'AGE']);
    expect(certs.rows).toEqual([['traefik', 'traefik-self-signed', 'True', 'traefik-self-signed', '18m']]);
  });

  it('api-resources lists built-in and custom kinds', async () => {
    const r = await h.kubectl(['api-resources']);
    expect(r.code, r.stderr).toBe(0);
    const rows = table(r.stdout).rows;
    expect(rows).toContainEqual(['pods', 'po', 'v1', 'true', 'Pod']);
    expect(rows).toContainEqual(['deployments', 'deploy', 'apps/v1', 'true', 'Deployment']);
    expect(rows).toContainEqual(['certificates', 'cert,certs', 'cert-manager.io/v1', 'true', 'Certificate']);
  });

  it('get pods -l selects by label', async () => {
    const r = await h.kubectl(['get', 'pods', '-A', '-l', 'k8s-app=kube-dns', '-o', 'name']);
    expect(r.stdout.trim().split('\n')).toEqual(['pod/coredns-ff8999cc5-6rpll']);
  });

  it('get ns matches namespaces.json', async () => {
    const want = ((JSON.parse(await readFile(path.join(await clusterDir(h), 'namespaces.json'), 'utf8')) as Json).items as Json[]).map((n) => n.metadata.name).sort();
    const t = table((await h.kubectl(['get', 'ns'])).stdout);
    expect(t.header).toEqual(['NAME', 'STATUS', 'AGE']);
    expect(t.rows.map((row) => row[0]).sort()).toEqual(want);
    expect(new Set(t.rows.map((row) => row[1]))).toEqual(new Set(['Active']));
  });

  it('get nodes -o json gives parseable items with kind and apiVersion', async () => {
    const r = await h.kubectl(['get', 'nodes', '-o', 'json']);
    const doc = JSON.parse(r.stdout) as Json;
    expect(doc.kind).toBe('List');
    expect(doc.items).toEqual([expect.objectContaining({ kind: 'Node', apiVersion: 'v1', metadata: expect.objectContaining({ name: 'b9aead2c1' }) })]);
  });

  it('version and cluster-info reach the server', async () => {
    expect((await h.kubectl(['version'])).stdout).toContain('Server Version: v1.32.2+k3s1');
    const info = await h.kubectl(['cluster-info']);
    expect(info.code, info.stderr).toBe(0);
    expect(info.stdout).toContain(`Kubernetes control plane is running at ${h.server.url}`);
  });

  it('get pods in an empty namespace says No resources found', async () => {
    const r = await h.kubectl(['get', 'pods', '-n', 'nope']);
    expect(r.code).toBe(0);
    expect(r.stderr.trim()).toBe('No resources found in nope namespace.');
  });

  it('get pod nope fails with the NotFound text', async () => {
    const r = await h.kubectl(['get', 'pod', 'nope']);
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim()).toBe('Error from server (NotFound): pods "nope" not found');
  });

  it('write verbs fail fast with MethodNotAllowed, and explain fails cleanly', async () => {
    const start = Date.now();
    const del = await h.kubectl(['delete', 'pod', 'x']);
    expect(del.code).not.toBe(0);
    expect(del.stderr).toContain('Error from server (MethodNotAllowed)');
    const explain = await h.kubectl(['explain', 'pods']);
    expect(explain.code).not.toBe(0);
    expect(Date.now() - start).toBeLessThan(10_000);
  });

  it('get all -A and events -A work through categories and the event printer', async () => {
    const all = await h.kubectl(['get', 'all', '-A']);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toContain('deployment.apps/coredns');
    expect(all.stdout).toContain('replicaset.apps/coredns-ff8999cc5');
    const ev = table((await h.kubectl(['get', 'events', '-n', 'traefik'])).stdout);
    expect(ev.header).toEqual(['LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE']);
  });
});

describe('kubectl against the 2022 bundle', () => {
  let h: KubectlHarness;
  beforeAll(async () => {
    h = await startHarness(BUNDLE_2022);
  });
  afterAll(async () => h?.close());

  it('get pods -A shows restarts with how long ago, relative to collection', async () => {
    const t = table((await h.kubectl(['get', 'pods', '-A'])).stdout);
    const want = (await bundleItems(h, 'pods')).map(expectedPodRow).sort();
    expect(t.rows.map((row) => row.slice(0, 4)).sort()).toEqual(want);
    expect(t.rows.find((row) => row[1] === 'nginx-deployment-7986654d4-ztx2g')).toEqual(['default', 'nginx-deployment-7986654d4-ztx2g', '2/2', 'Running', '50 (7h ago)', '20d']);
  });

  it('logs -c picks one of several containers, --previous the earlier run', async () => {
    const dir = path.join(await clusterDir(h), 'pods/logs/default/nginx-deployment-7986654d4-ztx2g');
    const r = await h.kubectl(['logs', 'nginx-deployment-7986654d4-ztx2g', '-c', 'hello', '--previous']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(await readFile(path.join(dir, 'hello-previous.log'), 'utf8'));
  });

  it('describe pod without collected events says so', async () => {
    const r = await h.kubectl(['describe', 'pod', 'coredns-b96499967-tncf4', '-n', 'kube-system']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^Events:\s+<none>$/m);
  });

  it('YAML-only custom resources are listed', async () => {
    const t = table((await h.kubectl(['get', 'ingressroutes', '-A'])).stdout);
    expect(t.rows.map((row) => row.slice(0, 2))).toEqual([['kube-system', 'traefik-dashboard']]);
  });
});
