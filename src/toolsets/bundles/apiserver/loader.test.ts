import { closeSync, ftruncateSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { WorkerPool } from '../../../core/workers.js';
import { longestBlock, writeDocuments } from '../../../../test/helpers/stall.js';
import { FileCache, MAX_RESOURCE_FILE_BYTES, ResourceFileError } from './loader.js';
import { MAX_OBJECT_BYTES } from './parse.js';
import { startBundleApiServer } from './server.js';

/**
 * Attack 18k-A F4: the first kubectl request for a resource parsed its bundle file on the event
 * loop, unbounded (a 12.4 MB YAML of 60,000 pods held another key's ping 11 s). Big files are
 * parsed on a worker thread now, and must come back exactly as the main thread parsed them.
 */

let root: string;
const PODS = 50_000;

/** One pod of a YAML PodList, as the attack's bundle generator writes them. */
function yamlPod(i: number): string {
  return (
    `- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: pod-${i}\n    namespace: default\n    labels: {app: a${i % 10}, tier: t${i % 7}}\n` +
    `  spec:\n    containers:\n    - name: c\n      image: nginx:1.${i % 30}\n  status:\n    phase: Running\n`
  );
}

/** A YAML PodList of `count` pods. */
function podList(file: string, count: number): void {
  writeDocuments(file, count, (i) => `${i === 0 ? 'apiVersion: v1\nkind: PodList\nitems:\n' : ''}${yamlPod(i)}`);
}

beforeAll(async () => {
  root = await realpath(await mkdtemp(path.join(tmpdir(), 'debugkit-loader-')));
  mkdirSync(path.join(root, 'pods'));
  // A 10 MB YAML PodList (the attack's shape): about 10 s of parsing on whichever thread does it.
  podList(path.join(root, 'pods', 'default.yaml'), PODS);
  writeFileSync(path.join(root, 'pods', 'small.json'), JSON.stringify({ kind: 'PodList', items: [{ kind: 'Pod', metadata: { name: 'p' } }] }));
  // Big enough for a worker, broken at its end.
  writeFileSync(path.join(root, 'pods', 'broken.yaml'), `apiVersion: v1\nkind: PodList\nitems:\n${Array.from({ length: 200 }, (_, i) => yamlPod(i)).join('')}- [unclosed\n`);
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});
afterEach(() => {
  vi.restoreAllMocks();
});

describe('FileCache: resource files are parsed off the event loop', () => {
  it('a 10 MB YAML PodList is parsed on a worker thread while the event loop keeps turning, and comes back as parsed on the main thread', async () => {
    const run = vi.spyOn(WorkerPool.prototype, 'run');
    const cache = new FileCache(root);
    const file = path.join(root, 'pods', 'default.yaml');
    // The longest the event loop went without a turn while the file was loaded, and its turns meanwhile (before the fix, none: ~10 s).
    const { longest, turns, value: loaded } = await longestBlock(() => cache.load(file), { everyMs: 10 });
    // Before the fix the loop was held for the whole parse (10.9 s here, 24 s on a loaded machine), in which the 10 ms probe
    // got no turn; now only batches of about 512 KB are deserialized on it, a few ms each, while the worker parses: hundreds
    // of turns. Asserted by the turns, not by the longest block, which a busy host stretches (gaps of 0.1-0.5 s from CPU
    // contention alone): a slower host gives the worker's parse more turns, never fewer (950 here; the bound is a tenth of it).
    expect(turns, `longest block ${longest.toFixed(0)} ms`).toBeGreaterThan(100);
    expect(run).toHaveBeenCalledTimes(1);
    expect(loaded.listKind).toBe('PodList');
    expect(loaded.items).toHaveLength(PODS);
    // The same items the main thread's parse gives, in order.
    const expected = (parseYaml(`items:\n${yamlPod(0)}${yamlPod(1)}${yamlPod(PODS - 1)}`) as { items: unknown[] }).items;
    expect([loaded.items[0], loaded.items[1], loaded.items[PODS - 1]]).toEqual(expected);
    expect(cache.problems.size).toBe(0);
    // Parsed once: the next request is answered from the cache.
    expect(await cache.load(file)).toBe(loaded);
    expect(run).toHaveBeenCalledTimes(1);
  });

  it('a small file is parsed on the main thread (no worker round trip), as before', async () => {
    const run = vi.spyOn(WorkerPool.prototype, 'run');
    const loaded = await new FileCache(root).load(path.join(root, 'pods', 'small.json'));
    expect(loaded).toEqual({ listKind: 'PodList', items: [{ kind: 'Pod', metadata: { name: 'p' } }] });
    expect(run).not.toHaveBeenCalled();
  });

  it('a YAML file with aliases is skipped with a warning saying so, small or large (attack 18n: one alias stood for 3 MB 99 times, 3.4 GB once written out)', async () => {
    const big = `kind: PodList\nitems:\n- kind: Pod\n  metadata: {name: a}\n  spec: &s {data: "${'x'.repeat(8192)}"}\n- kind: Pod\n  metadata: {name: b}\n  spec: *s\n`;
    for (const [name, text] of [
      ['alias-small.yaml', 'kind: Pod\nmetadata: &m {name: a}\nspec: {m: *m}\n'],
      ['alias-big.yaml', big],
    ]) {
      const file = path.join(root, 'pods', name!);
      writeFileSync(file, text!);
      const cache = new FileCache(root);
      expect(await cache.load(file)).toEqual({ items: [] });
      expect(cache.problems.get(file)).toMatch(new RegExp(`^${name} skipped: it uses YAML aliases`));
    }
  });

  it('an object bigger than any cluster stores is left out with a warning naming it; the objects around it are served (a 2-million-key ConfigMap held the loop 2 s to deserialize and 2 s to write)', async () => {
    const small = (name: string) => ({ kind: 'ConfigMap', metadata: { name, namespace: 'default' }, data: { a: '1' } });
    const huge = { kind: 'ConfigMap', metadata: { name: 'huge', namespace: 'default' }, data: Object.fromEntries(Array.from({ length: 300_000 }, (_, i) => [`k${i}`, `v${i}`])) };
    // Just under the bound: served.
    const big = { kind: 'ConfigMap', metadata: { name: 'big', namespace: 'default' }, data: { blob: 'x'.repeat(MAX_OBJECT_BYTES - 1024) } };
    const items = [small('a'), huge, ...Array.from({ length: 100 }, (_, i) => small(`m${i}`)), big, small('z')];
    const file = path.join(root, 'pods', 'oversized.json');
    writeFileSync(file, JSON.stringify({ kind: 'ConfigMapList', items }));
    const cache = new FileCache(root);
    const loaded = await cache.load(file);
    expect(loaded.items.map((o) => (o.metadata as { name: string }).name)).toEqual(['a', ...Array.from({ length: 100 }, (_, i) => `m${i}`), 'big', 'z']);
    expect(cache.problems.get(file)).toMatch(/^oversized\.json: 1 object left out, bigger than the 4 MB any object served may be \(no cluster stores one over 3 MB\): default\/huge \(\d+ MB\)$/);
  });

  it('a file the worker cannot parse is skipped with the parser message as a warning, as on the main thread', async () => {
    const file = path.join(root, 'pods', 'broken.yaml');
    const cache = new FileCache(root);
    expect(await cache.load(file)).toEqual({ items: [] });
    let message = '';
    try {
      parseYaml(readFileSync(file, 'utf8'));
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).not.toBe('');
    expect(cache.problems.get(file)).toBe(`broken.yaml skipped: ${message}`);
  });

  it('a parse past its time bound fails with a Kubernetes Timeout status naming the file, and stays failed (never parsed again)', async () => {
    const run = vi.spyOn(WorkerPool.prototype, 'run');
    const cache = new FileCache(root, { parseTimeoutMs: 300 });
    const file = path.join(root, 'pods', 'default.yaml');
    const err = await cache.load(file).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ResourceFileError);
    const status = (err as ResourceFileError).status;
    expect(status).toMatchObject({ kind: 'Status', status: 'Failure', code: 504, reason: 'Timeout' });
    expect(status.message).toMatch(/^pods\/default\.yaml of this support bundle took longer than 0\.3 s of CPU time to parse and was stopped/);
    await expect(cache.load(file)).rejects.toBe(err);
    expect(run).toHaveBeenCalledTimes(1);
  });

  it('kubectl gets the Status of a file past a bound (here its size: never read), not a hang or a generic error', async () => {
    const bundle = path.join(root, 'oversized');
    mkdirSync(path.join(bundle, 'cluster-resources', 'pods'), { recursive: true });
    // Sparse: its size is past the bound without the disk holding it.
    const fd = openSync(path.join(bundle, 'cluster-resources', 'pods', 'default.json'), 'w');
    ftruncateSync(fd, MAX_RESOURCE_FILE_BYTES + 1);
    closeSync(fd);
    const server = await startBundleApiServer({ root: bundle, collectedAt: new Date() });
    try {
      const res = await fetch(`${server.url}/api/v1/namespaces/default/pods`);
      expect(res.status).toBe(500);
      expect(await res.json()).toMatchObject({
        kind: 'Status',
        reason: 'InternalError',
        message: `pods/default.json of this support bundle is ${MAX_RESOURCE_FILE_BYTES + 1} bytes, over the 256 MB a resource file is parsed to: it is not served`,
      });
    } finally {
      await server.close();
    }
  });
});
