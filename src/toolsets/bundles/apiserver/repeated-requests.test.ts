import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { longestBlock, writeDocuments } from '../../../../test/helpers/stall.js';
import { Bundle, MAX_WARNINGS } from './bundle.js';
import { MAX_CUSTOM_TYPES } from './crds.js';
import type { K8sObject } from './json.js';
import { Registry } from './registry.js';
import { startBundleApiServer } from './server.js';

/**
 * Attack 18an Z1, Z3, Z4: work a bundle never needs twice was redone on every request, on the event loop. Each test counts
 * the work a repeated request does (a fixed function's calls, an object's reads), which a loaded host cannot change.
 */

const roots: string[] = [];
afterAll(async () => {
  await Promise.all(roots.map((r) => rm(r, { recursive: true, force: true })));
});

async function bundleDir(): Promise<string> {
  const root = await realpath(await mkdtemp(path.join(tmpdir(), 'debugkit-repeated-')));
  roots.push(root);
  mkdirSync(path.join(root, 'cluster-resources'));
  return root;
}

describe('a bundle with many namespace files (Z1)', () => {
  const FILES = 20_000;
  const BROKEN = MAX_WARNINGS + 10;
  let root: string;
  beforeAll(async () => {
    root = await bundleDir();
    const dir = path.join(root, 'cluster-resources', 'pods');
    mkdirSync(dir);
    // One tiny PodList per namespace, as the attack made them; the first BROKEN do not parse (each a warning).
    for (let i = 0; i < FILES; i++) {
      const ns = `ns${String(i).padStart(6, '0')}`;
      writeFileSync(path.join(dir, `${ns}.json`), i < BROKEN ? '{"items": [' : JSON.stringify({ kind: 'PodList', items: [{ metadata: { name: 'p', namespace: ns } }] }));
    }
  }, 60_000);

  it("walks the directory once, not on each request's warnings, and names at most MAX_WARNINGS files", async () => {
    const bundle = await Bundle.open(root);
    const pods = bundle.registry.preferred('', 'pods')!;
    expect(await bundle.list(pods)).toHaveLength(FILES - BROKEN);
    const listDir = vi.spyOn(bundle.cache, 'listDir');
    // Each page of `kubectl get pods -A` asked for the warnings of the whole listing: each walked all 20,000 files anew.
    const answers: string[][] = [];
    for (let i = 0; i < 6; i++) answers.push(await bundle.warnings(pods));
    // Before: one listDir and one walk of every file per call (6 here). Now none: the files were walked with the first listing.
    expect(listDir).not.toHaveBeenCalled();
    // And the warnings themselves are worked out once: the same array every time.
    const first = answers[0]!;
    for (const a of answers) expect(a).toBe(first);
    expect(first).toHaveLength(MAX_WARNINGS + 1);
    expect(first[0]).toMatch(/^ns000000\.json skipped: /);
    expect(first[MAX_WARNINGS]).toBe(`10 more files behind this listing have problems, not named here (at most ${MAX_WARNINGS} are)`);
    // One namespace's warnings: its own file's, found by name, not by a walk.
    expect(await bundle.warnings(pods, 'ns000003')).toEqual([expect.stringMatching(/^ns000003\.json skipped: /)]);
    expect(await bundle.warnings(pods, 'ns019999')).toEqual([]);
    expect(listDir).not.toHaveBeenCalled();
    // A change of the files' problems is seen: the warnings are worked out again then.
    bundle.cache.problems.set(path.join(root, 'cluster-resources', 'pods', 'ns019999.json'), 'a later problem');
    expect(await bundle.warnings(pods, 'ns019999')).toEqual(['a later problem']);
    expect(await bundle.warnings(pods)).toContain(`11 more files behind this listing have problems, not named here (at most ${MAX_WARNINGS} are)`);
    bundle.close();
  }, 60_000);
});

/** Counts the reads of every object's metadata from now on (what a scan by name reads). */
function countReads(objects: readonly K8sObject[]): () => number {
  let reads = 0;
  for (const o of objects) {
    const metadata = o.metadata;
    Object.defineProperty(o, 'metadata', {
      get: () => {
        reads++;
        return metadata;
      },
      enumerable: true,
      configurable: true,
    });
  }
  return () => reads;
}

describe('a get by name in a listing of many objects (Z3)', () => {
  const PODS = 100_000;
  let root: string;
  beforeAll(async () => {
    root = await bundleDir();
    mkdirSync(path.join(root, 'cluster-resources', 'pods'));
    const pod = (i: number) => ({ metadata: { name: `p${i}`, namespace: 'a' } });
    writeDocuments(path.join(root, 'cluster-resources', 'pods', 'a.json'), PODS, (i) => `${i === 0 ? '{"kind":"PodList","items":[' : ','}${JSON.stringify(pod(i))}${i === PODS - 1 ? ']}' : ''}`);
    writeDocuments(path.join(root, 'cluster-resources', 'nodes.json'), PODS, (i) => `${i === 0 ? '{"kind":"NodeList","items":[' : ','}{"metadata":{"name":"n${i}"}}${i === PODS - 1 ? ']}' : ''}`);
  }, 60_000);

  it('reads a few objects of the sorted listing, not all of them, and answers as a scan did', async () => {
    const bundle = await Bundle.open(root);
    const pods = bundle.registry.preferred('', 'pods')!;
    const reads = countReads(await bundle.list(pods, 'a'));
    // By code unit `p99999` sorts last of p0..p99999, p99998 just before it, `p9` and `p0` far before.
    const found: Array<K8sObject | undefined> = [];
    for (const name of ['p99999', 'p99998', 'p9', 'p0', 'p100000']) found.push(await bundle.get(pods, 'a', name));
    // Before: a copy and a scan of the listing per get (hundreds of thousands of reads for these five). Now a binary search:
    // 17 steps of two reads each.
    expect(reads()).toBeLessThanOrEqual(5 * 40);
    expect(found.map((o) => o && `${o.kind}/${(o.metadata as { name: string }).name}`)).toEqual(['Pod/p99999', 'Pod/p99998', 'Pod/p9', 'Pod/p0', undefined]);
    expect(await bundle.get(pods, 'b', 'p5')).toBeUndefined();
    bundle.close();
  });

  it('of a cluster-scoped kind: an index by name made once, in slices, then no scan', async () => {
    const bundle = await Bundle.open(root);
    const nodes = bundle.registry.preferred('', 'nodes')!;
    const reads = countReads(await bundle.list(nodes));
    // The index of 100,000 names is made in slices: the loop turns while it is (a turn every 10 ms at most).
    const { turns, value: first } = await longestBlock(() => bundle.get(nodes, undefined, 'n77777'), { everyMs: 1 });
    const indexed = reads();
    expect(indexed).toBe(PODS);
    expect(turns).toBeGreaterThan(0);
    const found: Array<K8sObject | undefined> = [];
    for (const name of ['n5', 'n99999', 'n0', 'n100000']) found.push(await bundle.get(nodes, undefined, name));
    // Before: each get scanned the listing (up to 100,000 reads each). Now the index answers, reading none.
    expect(reads()).toBe(indexed);
    expect([first, ...found].map((o) => o && `${o.kind}/${(o.metadata as { name: string }).name}`)).toEqual(['Node/n77777', 'Node/n5', 'Node/n99999', 'Node/n0', undefined]);
    bundle.close();
  });
});

/** A bundle of `count` CRDs, each of its own group g000000.io, g000001.io... */
async function crdBundle(count: number): Promise<string> {
  const root = await bundleDir();
  const crd = (i: number) => ({
    kind: 'CustomResourceDefinition',
    metadata: { name: `things.g${String(i).padStart(6, '0')}.io` },
    spec: { group: `g${String(i).padStart(6, '0')}.io`, scope: 'Namespaced', names: { plural: 'things', kind: 'Thing' }, versions: [{ name: 'v1', served: true }] },
  });
  writeDocuments(
    path.join(root, 'cluster-resources', 'custom-resource-definitions.json'),
    count,
    (i) => `${i === 0 ? '{"kind":"CustomResourceDefinitionList","items":[' : ','}${JSON.stringify(crd(i))}${i === count - 1 ? ']}' : ''}`,
  );
  return root;
}

type Discovered = { groups?: Array<{ name: string }>; name?: string; resources?: unknown[] };

async function getter(url: string): Promise<(p: string) => Promise<{ status: number; warning: string | null; body: Discovered }>> {
  return async (p: string) => {
    const res = await fetch(url + p);
    return { status: res.status, warning: res.headers.get('warning'), body: (await res.json()) as Discovered };
  };
}

describe('discovery (Z4)', () => {
  it('of a bundle of more CRDs than are served: the first MAX_CUSTOM_TYPES, and a Warning saying so', async () => {
    const s = await startBundleApiServer({ root: await crdBundle(MAX_CUSTOM_TYPES + 200), collectedAt: new Date() });
    try {
      const get = await getter(s.url);
      const apis = await get('/apis');
      const custom = apis.body.groups!.filter((g) => /^g\d+\.io$/.test(g.name));
      expect(custom).toHaveLength(MAX_CUSTOM_TYPES);
      expect(custom.at(-1)!.name).toBe(`g${String(MAX_CUSTOM_TYPES - 1).padStart(6, '0')}.io`);
      expect(apis.warning).toMatch(/has 5200 CustomResourceDefinitions; the last 200 of them \(by name\) are left out: .* at most 5000 custom resource types/);
      // The CRDs left out are not served; those kept are.
      expect((await get(`/apis/g${String(MAX_CUSTOM_TYPES).padStart(6, '0')}.io`)).status).toBe(404);
      expect((await get('/apis/g000005.io')).body).toMatchObject({ kind: 'APIGroup', name: 'g000005.io', preferredVersion: { version: 'v1' } });
      expect((await get('/apis/g000005.io/v1')).body.resources).toEqual([expect.objectContaining({ name: 'things', kind: 'Thing', namespaced: true })]);
      // The CRD listing says it too (kubectl get crd).
      const crds = await get('/apis/apiextensions.k8s.io/v1/customresourcedefinitions?limit=1');
      expect(crds.warning).toMatch(/the last 200 of them \(by name\) are left out/);
    } finally {
      await s.close();
    }
  });

  it('is made once per bundle, not per request', async () => {
    const groups = vi.spyOn(Registry.prototype, 'groups');
    const served = vi.spyOn(Registry.prototype, 'served');
    const s = await startBundleApiServer({ root: await crdBundle(100), collectedAt: new Date() });
    try {
      const get = await getter(s.url);
      const apis = await get('/apis');
      expect(apis.warning).toBeNull();
      for (let i = 0; i < 5; i++) {
        expect((await get('/apis')).body.groups).toHaveLength(apis.body.groups!.length);
        expect((await get('/apis/g000005.io')).status).toBe(200);
        expect((await get('/apis/g000005.io/v1')).status).toBe(200);
      }
      // Before: every /apis and /apis/GROUP worked the groups out from every type again (1.6 s for 200,000 CRDs), and every
      // group/version filtered all types. Now once per bundle: the answers are kept.
      expect(groups.mock.calls.length).toBeLessThanOrEqual(2);
      expect(served.mock.calls.filter(([g, v]) => g === 'g000005.io' && v === 'v1')).toHaveLength(1);
    } finally {
      groups.mockRestore();
      served.mockRestore();
      await s.close();
    }
  });
});
