import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeDocuments } from '../../../test/helpers/stall.js';
import { Bundle } from './apiserver/bundle.js';
import { summarizeBundle } from './summary.js';

/**
 * Attack 18an Z5: bundle_summary sorted every problem pod in one go, comparing names with localeCompare: a million
 * not-ready pods held the loop 3-3.9 s a call. Asserted by the sorts it makes (none of more than a run of sortInSlices,
 * 1,024 items) and the localeCompare calls (none), which a loaded host cannot change.
 */

const PODS = 30_000;
/** Pods with a log directory: their order (worst first) was one sort of all of them too. */
const LOGGED = 1_500;
const RUN = 1024;

let root: string;
beforeAll(async () => {
  root = await realpath(await mkdtemp(path.join(tmpdir(), 'debugkit-summary-bounded-')));
  const pods = path.join(root, 'cluster-resources', 'pods');
  mkdirSync(pods, { recursive: true });
  // All Pending and not ready, 0-2 restarts: many ties, so names decide the order (code unit: p-10 before p-9).
  const pod = (i: number) => ({
    metadata: { name: `p-${(i * 7919) % PODS}`, namespace: 'default' },
    status: { phase: 'Pending', containerStatuses: [{ name: 'app', ready: false, restartCount: i % 3 }] },
  });
  writeDocuments(path.join(pods, 'default.json'), PODS, (i) => `${i === 0 ? '{"kind":"PodList","items":[' : ','}${JSON.stringify(pod(i))}${i === PODS - 1 ? ']}' : ''}`);
  for (let i = 0; i < LOGGED; i++) {
    const dir = path.join(pods, 'logs', 'default', `p-${i}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'app.log'), `line ${i} ok\n`);
  }
}, 60_000);
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Runs `work` while noting the longest array sorted in one Array.prototype.sort, the localeCompare calls and the Map entries set. */
async function sortsOf<T>(work: () => Promise<T>): Promise<{ longestSort: number; localeCompares: number; mapSets: number; value: T }> {
  const sort = Array.prototype.sort;
  const localeCompare = String.prototype.localeCompare;
  const set = Map.prototype.set;
  let longestSort = 0;
  let localeCompares = 0;
  let mapSets = 0;
  Map.prototype.set = function <K, V>(this: Map<K, V>, key: K, value: V): Map<K, V> {
    mapSets++;
    return set.call(this, key, value) as Map<K, V>;
  };
  Array.prototype.sort = function <U>(this: U[], compare?: (a: U, b: U) => number): U[] {
    longestSort = Math.max(longestSort, this.length);
    return sort.call(this, compare) as U[];
  };
  String.prototype.localeCompare = function (this: string, ...args: Parameters<string['localeCompare']>): number {
    localeCompares++;
    return localeCompare.apply(this, args);
  };
  try {
    const value = await work();
    return { longestSort, localeCompares, mapSets, value };
  } finally {
    Map.prototype.set = set;
    Array.prototype.sort = sort;
    String.prototype.localeCompare = localeCompare;
  }
}

describe('bundle_summary of many problem pods', () => {
  it('keeps the worst few as it walks, sorting nothing whole and comparing names by code unit, with the same answer', async () => {
    const bundle = await Bundle.open(root);
    // The first summary also loads the file: measured on the second.
    await summarizeBundle(bundle, 'test');
    const { longestSort, localeCompares, mapSets, value: s } = await sortsOf(() => summarizeBundle(bundle, 'test'));
    // Before: one sort of all 30,000 problem pods (with localeCompare on ties) and one of the 1,500 pods with logs.
    expect(longestSort).toBeLessThanOrEqual(RUN);
    expect(localeCompares).toBe(0);
    // Nor a map of every problem pod's rank (30,000 entries here; past a million, one step of its growth took 150-220 ms).
    expect(mapSets).toBeLessThan(PODS / 10);
    expect(s.pods.total).toBe(PODS);
    expect(s.healthy).toBe(false);
    // Worst first: most restarts (2), then by name in code-unit order, as a full sort gives.
    const expected = Array.from({ length: PODS }, (_, i) => ({ name: `default/p-${(i * 7919) % PODS}`, restarts: i % 3 }))
      .sort((a, b) => b.restarts - a.restarts || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .slice(0, s.pods.items.length);
    expect(s.pods.items.map((p) => [p.pod, p.restarts])).toEqual(expected.map((e) => [e.name, e.restarts]));
    expect(s.pods.items[0]).toMatchObject({ phase: 'Pending', ready: false });
    // The problem pods' logs are looked for worst first, until 100 are found (of the 1,500), and read.
    expect(s.log_errors.pods_with_logs).toBe(100);
    expect(s.log_errors.files_read).toBe(100);
    bundle.close();
  }, 60_000);
});
