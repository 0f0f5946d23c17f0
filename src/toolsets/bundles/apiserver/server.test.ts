import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Bundle } from './bundle.js';
import { estimateCollectedAt } from './clock.js';
import { startBundleApiServer } from './server.js';
import { BUNDLE_2022, BUNDLE_2025, BUNDLE_NO_RESOURCES, extractFixture, startHarness, type KubectlHarness } from './testkit.js';

const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';

// Loosely typed on purpose: these tests assert on JSON documents field by field.
type Json = Record<string, any>;

async function get(h: KubectlHarness, p: string, accept = 'application/json'): Promise<{ status: number; body: Json; type: string }> {
  const res = await fetch(h.server.url + p, { headers: { Accept: accept } });
  const text = await res.text();
  const type = res.headers.get('content-type') ?? '';
  return { status: res.status, body: type.includes('json') ? (JSON.parse(text) as Json) : { text }, type };
}

async function bundleFile(h: KubectlHarness, rel: string): Promise<Json> {
  const base = (await Bundle.open(h.root)).baseDir;
  return JSON.parse(await readFile(path.join(base, rel), 'utf8')) as Json;
}

describe('bundle API server over the 2025 bundle', () => {
  let h: KubectlHarness;
  beforeAll(async () => {
    h = await startHarness(BUNDLE_2025);
  });
  afterAll(async () => h?.close());

  it('binds to 127.0.0.1 on a random port', () => {
    expect(h.server.url).toBe(`http://127.0.0.1:${h.server.port}`);
    expect(h.server.port).toBeGreaterThan(0);
  });

  it('answers /version from cluster-info', async () => {
    const r = await get(h, '/version');
    expect(r.body).toMatchObject({ major: '1', gitVersion: 'v1.32.2+k3s1' });
  });

  it('serves plain discovery: /api, /api/v1, /apis, /apis/{g}/{v}', async () => {
    expect((await get(h, '/api')).body).toMatchObject({ kind: 'APIVersions', versions: ['v1'] });
    const core = (await get(h, '/api/v1')).body;
    const pods = core.resources.find((r: Json) => r.name === 'pods');
    expect(pods).toMatchObject({ kind: 'Pod', namespaced: true, verbs: ['get', 'list'], shortNames: ['po'], categories: ['all'] });
    expect(core.resources.map((r: Json) => r.name)).toContain('pods/log');
    // Not collected by troubleshoot, so not advertised.
    expect(core.resources.map((r: Json) => r.name)).not.toContain('secrets');
    const groups = (await get(h, '/apis')).body;
    expect(groups.kind).toBe('APIGroupList');
    expect(groups.groups.find((g: Json) => g.name === 'cert-manager.io')).toMatchObject({ preferredVersion: { groupVersion: 'cert-manager.io/v1' } });
    const apps = (await get(h, '/apis/apps/v1')).body;
    expect(apps.resources.find((r: Json) => r.name === 'deployments')).toMatchObject({ shortNames: ['deploy'] });
    expect((await get(h, '/apis/apps')).body).toMatchObject({ kind: 'APIGroup', name: 'apps' });
    expect((await get(h, '/apis/nope.example.com/v1')).status).toBe(404);
  });

  it('answers OpenAPI and unknown paths with a 404 Status', async () => {
    for (const p of ['/openapi/v2', '/openapi/v3', '/nope', '/api/v1/nopes']) {
      const r = await get(h, p);
      expect(r.status).toBe(404);
      expect(r.body).toMatchObject({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 });
    }
  });

  it('lists pods cluster-wide with kind and apiVersion on every item', async () => {
    const r = await get(h, '/api/v1/pods');
    expect(r.body).toMatchObject({ kind: 'PodList', apiVersion: 'v1' });
    expect(r.body.items.length).toBe(10);
    for (const item of r.body.items) expect(item).toMatchObject({ kind: 'Pod', apiVersion: 'v1' });
  });

  it('lists per namespace, with items: null read as empty', async () => {
    expect((await get(h, '/api/v1/namespaces/traefik/pods')).body.items.map((p: Json) => p.metadata.name)).toEqual(['traefik-9cbd876dd-pxmz4']);
    expect((await get(h, '/apis/apps/v1/namespaces/default/statefulsets')).body.items).toEqual([]);
    expect((await get(h, '/api/v1/namespaces/nope/pods')).body.items).toEqual([]);
  });

  it('finds ReplicaSets in the mis-named statefulsets-errors.json directory', async () => {
    const rs = (await get(h, '/apis/apps/v1/replicasets')).body.items;
    expect(rs.length).toBe(8);
    expect(rs.every((r: Json) => r.kind === 'ReplicaSet')).toBe(true);
    expect((await get(h, '/apis/apps/v1/statefulsets')).body.items).toEqual([]);
  });

  it('gets one object, or a NotFound Status naming it', async () => {
    const ok = await get(h, '/apis/apps/v1/namespaces/kube-system/deployments/coredns');
    expect(ok.body).toMatchObject({ kind: 'Deployment', apiVersion: 'apps/v1', metadata: { name: 'coredns' } });
    const missing = await get(h, '/api/v1/namespaces/default/pods/nope');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ reason: 'NotFound', message: 'pods "nope" not found', details: { name: 'nope', kind: 'pods' } });
    expect((await get(h, '/api/v1/namespaces/kube-system')).body).toMatchObject({ kind: 'Namespace' });
  });

  it('serves cluster-scoped custom resources and refuses them under a namespace', async () => {
    const r = await get(h, '/apis/cert-manager.io/v1/clusterissuers');
    expect(r.body.items.map((i: Json) => i.metadata.name)).toEqual(['selfsigned-cluster-issuer']);
    expect((await get(h, '/apis/cert-manager.io/v1/namespaces/default/clusterissuers')).status).toBe(404);
    // A CRD kind with no collected objects is an empty list, not an error.
    expect((await get(h, '/apis/cert-manager.io/v1/issuers')).body.items).toEqual([]);
  });

  it('filters by label and field selectors, and rejects bad ones with 400', async () => {
    const byLabel = await get(h, `/api/v1/pods?labelSelector=${encodeURIComponent('app.kubernetes.io/instance=cert-manager,app notin (webhook)')}`);
    expect(byLabel.body.items.map((p: Json) => p.metadata.name).sort()).toEqual(['cert-manager-565b8ffb58-xpz8k', 'cert-manager-cainjector-587cf46ff6-4nwbr']);
    const fs = encodeURIComponent('involvedObject.name=coredns-ff8999cc5-6rpll,involvedObject.namespace=kube-system,involvedObject.kind=Pod');
    const events = await get(h, `/api/v1/namespaces/kube-system/events?fieldSelector=${fs}`);
    expect(events.body.items.length).toBeGreaterThan(0);
    expect(events.body.items.every((e: Json) => e.involvedObject.name === 'coredns-ff8999cc5-6rpll')).toBe(true);
    const bad = await get(h, `/api/v1/pods?labelSelector=${encodeURIComponent('a in (b')}`);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ kind: 'Status', reason: 'BadRequest' });
  });

  it('answers a Table when asked, relative to the collection time', async () => {
    const r = await get(h, '/api/v1/namespaces/kube-system/pods', TABLE);
    expect(r.body).toMatchObject({ kind: 'Table', apiVersion: 'meta.k8s.io/v1' });
    const names = r.body.columnDefinitions.map((c: Json) => c.name);
    expect(names.slice(0, 5)).toEqual(['Name', 'Ready', 'Status', 'Restarts', 'Age']);
    const coredns = r.body.rows.find((row: Json) => row.cells[0] === 'coredns-ff8999cc5-6rpll');
    expect(coredns.cells.slice(1, 5)).toEqual(['1/1', 'Running', '0', '48m']);
    expect(coredns.object).toMatchObject({ kind: 'PartialObjectMetadata', metadata: { namespace: 'kube-system' } });
    const single = await get(h, '/api/v1/namespaces/kube-system/pods/coredns-ff8999cc5-6rpll?includeObject=Object', TABLE);
    expect(single.body.rows[0].object).toMatchObject({ kind: 'Pod', spec: { nodeName: 'b9aead2c1' } });
  });

  it('refuses every write verb and watches with a 405 Status', async () => {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      const res = await fetch(`${h.server.url}/api/v1/namespaces/default/pods/x`, { method, body: method === 'DELETE' ? undefined : '{}' });
      expect(res.status).toBe(405);
      expect(await res.json()).toMatchObject({ kind: 'Status', reason: 'MethodNotAllowed', code: 405 });
    }
    expect((await get(h, '/api/v1/pods?watch=true')).status).toBe(405);
    expect((await get(h, '/api/v1/watch/pods')).status).toBe(405);
  });

  it('serves pod logs as text, with tailLines, and Status errors like the real API', async () => {
    const base = (await Bundle.open(h.root)).baseDir;
    const file = await readFile(path.join(base, 'cluster-resources/pods/logs/kube-system/coredns-ff8999cc5-6rpll/coredns.log'), 'utf8');
    const full = await get(h, '/api/v1/namespaces/kube-system/pods/coredns-ff8999cc5-6rpll/log');
    expect(full.type).toContain('text/plain');
    expect(full.body.text).toBe(file);
    const last = await get(h, '/api/v1/namespaces/kube-system/pods/coredns-ff8999cc5-6rpll/log?container=coredns&tailLines=2');
    expect(last.body.text).toBe(`${file.trimEnd().split('\n').slice(-2).join('\n')}\n`);
    const prev = await get(h, '/api/v1/namespaces/kube-system/pods/coredns-ff8999cc5-6rpll/log?previous=true');
    expect(prev.status).toBe(400);
    expect(prev.body.message).toBe('previous terminated container "coredns" in pod "coredns-ff8999cc5-6rpll" not found');
    const wrong = await get(h, '/api/v1/namespaces/kube-system/pods/coredns-ff8999cc5-6rpll/log?container=nope');
    expect(wrong.body).toMatchObject({ code: 400, message: 'container nope is not valid for pod coredns-ff8999cc5-6rpll' });
    const uncollected = await get(h, '/api/v1/namespaces/traefik/pods/traefik-9cbd876dd-pxmz4/log');
    expect(uncollected.body).toMatchObject({ code: 404, reason: 'NotFound' });
    expect((await get(h, '/api/v1/namespaces/kube-system/pods/nope/log')).body).toMatchObject({ code: 404, message: 'pods "nope" not found' });
  });

  it("refuses since and timestamps (a bundle's logs carry no times) rather than ignoring them", async () => {
    for (const q of ['sinceSeconds=3600', 'sinceTime=2025-04-11T00:00:00Z', 'timestamps=true']) {
      const r = await get(h, `/api/v1/namespaces/kube-system/pods/coredns-ff8999cc5-6rpll/log?${q}`);
      expect(r.status).toBe(400);
      expect(r.body.message).toMatch(/cannot be honoured: the logs in a support bundle carry no per-line times/);
    }
  });

  it('estimates the collection time from the newest cluster timestamp', async () => {
    const t = await estimateCollectedAt(await Bundle.open(h.root));
    expect(t.toISOString()).toBe('2025-04-11T19:06:18.254Z');
  });
});

describe('bundle API server over the 2022 bundle', () => {
  let h: KubectlHarness;
  beforeAll(async () => {
    h = await startHarness(BUNDLE_2022);
  });
  afterAll(async () => h?.close());

  it('fills kind and apiVersion on CRDs from a list that has neither', async () => {
    const raw = await bundleFile(h, 'cluster-resources/custom-resource-definitions.json');
    expect(raw.kind).toBeUndefined();
    const r = await get(h, '/apis/apiextensions.k8s.io/v1/customresourcedefinitions');
    expect(r.body.items.length).toBe(raw.items.length);
    for (const crd of r.body.items) expect(crd).toMatchObject({ kind: 'CustomResourceDefinition', apiVersion: 'apiextensions.k8s.io/v1' });
  });

  it('serves v1beta1-era CronJobs and PDBs at their stable versions', async () => {
    expect((await get(h, '/apis/batch/v1/cronjobs')).body).toMatchObject({ kind: 'CronJobList', apiVersion: 'batch/v1', items: [] });
    expect((await get(h, '/apis/policy/v1/poddisruptionbudgets')).body).toMatchObject({ apiVersion: 'policy/v1' });
  });

  it('reads the camel-cased clusterRoleBindings.json and YAML-only custom resources', async () => {
    expect((await get(h, '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings')).body.items.length).toBe(54);
    const routes = await get(h, '/apis/traefik.containo.us/v1alpha1/namespaces/kube-system/ingressroutes');
    expect(routes.body.items.map((i: Json) => i.metadata.name)).toEqual(['traefik-dashboard']);
  });

  it('asks which container when a pod has several', async () => {
    const r = await get(h, '/api/v1/namespaces/default/pods/nginx-deployment-7986654d4-ztx2g/log');
    expect(r.status).toBe(400);
    expect(r.body.message).toBe('a container name must be specified for pod nginx-deployment-7986654d4-ztx2g, choose one of: [nginx hello]');
    const prev = await get(h, '/api/v1/namespaces/default/pods/nginx-deployment-7986654d4-ztx2g/log?container=nginx&previous=true');
    expect(prev.status).toBe(200);
  });

  it('estimates the collection time from events and pods', async () => {
    const t = await estimateCollectedAt(await Bundle.open(h.root));
    expect(t.toISOString()).toBe('2022-12-21T16:43:09.000Z');
  });
});

describe('bundle roots', () => {
  it('accepts the directory that holds cluster-resources/ as well as its parent', async () => {
    const root = await extractFixture(BUNDLE_2025);
    try {
      const s = await startBundleApiServer({ root: path.join(root, 'support-bundle-2025-04-11T14_05_31'), collectedAt: new Date() });
      const namespaces = (await fetch(`${s.url}/api/v1/namespaces`).then((r) => r.json())) as Json;
      expect(namespaces.items.length).toBe(7);
      await s.close();
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('skips an unreadable file with a Warning header instead of failing the list', async () => {
    const root = await extractFixture(BUNDLE_2022);
    try {
      await writeFile(path.join(root, 'support-bundle/cluster-resources/pods/default.json'), '{"items": [');
      const s = await startBundleApiServer({ root });
      const res = await fetch(`${s.url}/api/v1/pods`);
      expect(res.status).toBe(200);
      expect(res.headers.get('warning')).toMatch(/^299 - "default\.json skipped: /);
      const pods = (await res.json()) as Json;
      expect(pods.items.length).toBe(7);
      expect(pods.items.every((p: Json) => p.metadata.namespace === 'kube-system')).toBe(true);
      await s.close();
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('answers a get of an object left out for its size NotFound, with the Warning saying why', async () => {
    const root = await extractFixture(BUNDLE_2022);
    try {
      const data = Object.fromEntries(Array.from({ length: 300_000 }, (_, i) => [`k${i}`, `v${i}`]));
      const huge = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'huge', namespace: 'default' }, spec: { data } };
      const file = path.join(root, 'support-bundle/cluster-resources/pods/default.json');
      const pods = JSON.parse(await readFile(file, 'utf8')) as Json;
      pods.items.push(huge);
      await writeFile(file, JSON.stringify(pods));
      const s = await startBundleApiServer({ root });
      const res = await fetch(`${s.url}/api/v1/namespaces/default/pods/huge`);
      expect(res.status).toBe(404);
      expect(res.headers.get('warning')).toMatch(/^299 - "default\.json: 1 object left out, bigger than the 4 MB any object served may be .*: default\/huge \(\d+ MB\)"$/);
      const list = await fetch(`${s.url}/api/v1/namespaces/default/pods`);
      expect(list.headers.get('warning')).toMatch(/default\/huge/);
      expect(((await list.json()) as Json).items.length).toBe(pods.items.length - 1);
      await s.close();
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('rejects a bundle without cluster resources, naming what is missing', async () => {
    const root = await extractFixture(BUNDLE_NO_RESOURCES);
    try {
      await expect(startBundleApiServer({ root })).rejects.toThrow(/no cluster-resources\/ directory/);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('listings of a bundle', () => {
  it('are made once per type and namespace (sorting 60,000 pods held the loop 200-300 ms a request), and shared read-only, not copied per call', async () => {
    const root = await extractFixture(BUNDLE_2025);
    try {
      const bundle = await Bundle.open(root);
      const pods = bundle.registry.find('', 'v1', 'pods')!;
      const made = vi.spyOn(bundle as unknown as { listOnce: () => unknown }, 'listOnce');
      const first = await bundle.list(pods);
      expect(first.length).toBeGreaterThan(0);
      // A copy per call of a million objects held the loop 130-240 ms a get (attack 18an Z3): the one listing, typed read-only.
      const second = await bundle.list(pods);
      expect(second).toBe(first);
      await bundle.list(pods, 'kube-system');
      await bundle.list(pods, 'kube-system');
      expect(made).toHaveBeenCalledTimes(2);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
