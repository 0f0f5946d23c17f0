import { appendFileSync, mkdirSync } from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TimeSlice } from '../../../core/wait.js';
import { longestBlock, writeDocuments } from '../../../../test/helpers/stall.js';
import { Bundle, compareListed, sortInSlices } from './bundle.js';
import { estimateCollectedAt } from './clock.js';
import { nameOf, namespaceOf } from './json.js';

/**
 * Attack 18o F2: the first listing of a big bundle de-duplicated, sorted and walked (for the collection time) all its pods in
 * one go on the event loop: 1.5 million pods held another client's ping 16.5-17.8 s. 240,000 pods here held it 2-3 s.
 */

const NAMESPACES = 4;
const PER_NAMESPACE = 60_000;
/** The newest cluster-stamped time, deep in one pod (every other pod was created before it). */
const NEWEST = '2025-03-01T12:00:00Z';

let root: string;

/** Pods as the attack wrote them: no kind or apiVersion (each is filled in), names out of order, one a duplicate. */
function podFile(ns: number): void {
  const file = path.join(root, 'cluster-resources', 'pods', `ns${ns}.json`);
  writeDocuments(file, PER_NAMESPACE, (i) => {
    const name = `p${String((i * 7919) % PER_NAMESPACE).padStart(6, '0')}`;
    const status = ns === 2 && i === 12_345 ? { phase: 'Running', containerStatuses: [{ name: 'c', state: { running: { startedAt: NEWEST } } }] } : { phase: 'Running' };
    const pod = { metadata: { name, namespace: `ns${ns}`, labels: { a: 'b' }, creationTimestamp: `2025-01-01T00:${String(i % 60).padStart(2, '0')}:00Z` }, status };
    return `${i === 0 ? '{"kind":"PodList","apiVersion":"v1","items":[' : ','}${JSON.stringify(pod)}`;
  });
  // A pod listed twice in a file: served once.
  appendFileSync(file, `,${JSON.stringify({ metadata: { name: 'p000001', namespace: `ns${ns}` } })}]}`);
}

beforeAll(async () => {
  root = await realpath(await mkdtemp(path.join(tmpdir(), 'debugkit-first-listing-')));
  mkdirSync(path.join(root, 'cluster-resources', 'pods'), { recursive: true });
  // Namespaces in the directory in reverse order of their names: the listing's order is not the files'.
  for (let ns = NAMESPACES - 1; ns >= 0; ns--) podFile(ns);
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('the first listing of a big bundle', () => {
  it('gives the event loop turns while 240,000 pods are de-duplicated, sorted and walked for the collection time, in the same order and time as before', async () => {
    const bundle = await Bundle.open(root);
    const pods = bundle.registry.preferred('', 'pods')!;
    // The files are parsed first (on the parse thread, measured in loader.test.ts): what is measured is the listing itself.
    for (let ns = 0; ns < NAMESPACES; ns++) await bundle.cache.load(path.join(root, 'cluster-resources', 'pods', `ns${ns}.json`));
    // A kubectl get pods -A of a table: the listing and the AGE column's clock, together, while the loop's longest block is measured.
    const {
      longest,
      turns,
      value: [items, collectedAt],
    } = await longestBlock(() => Promise.all([bundle.list(pods), estimateCollectedAt(bundle)]), { everyMs: 10 });
    // Before: 2-3 s in one block here (15 s for 1.5 million pods), in which the 10 ms probe got no turn. Now slices of ~10 ms,
    // each followed by a turn: dozens of them. Asserted by the turns, not by the longest block, which a busy host stretches
    // (a run beside other tests saw one past 500 ms): a slower host gives the sliced work more turns, never fewer.
    expect(turns, `longest block ${longest.toFixed(0)} ms`).toBeGreaterThan(20);

    // The same answer as one sort of everything by compareListed (the order) and the newest stamped time.
    expect(items).toHaveLength(NAMESPACES * PER_NAMESPACE);
    const expected = Array.from({ length: NAMESPACES * PER_NAMESPACE }, (_, k) => ({ ns: `ns${Math.floor(k / PER_NAMESPACE)}`, name: `p${String(k % PER_NAMESPACE).padStart(6, '0')}` }));
    expected.sort((a, b) => compareListed(a.ns, a.name, b.ns, b.name));
    expect(items.map((o) => `${namespaceOf(o)}/${nameOf(o)}`)).toEqual(expected.map((e) => `${e.ns}/${e.name}`));
    expect(items[0]).toMatchObject({ kind: 'Pod', apiVersion: 'v1', metadata: { name: 'p000000', namespace: 'ns0' } });
    // The first of the duplicates is the one served (it has labels; the second has none).
    expect(items[1]).toMatchObject({ metadata: { name: 'p000001', labels: { a: 'b' } } });
    expect(collectedAt.toISOString()).toBe(new Date(NEWEST).toISOString());
  });
});

// A listing is shared by every request for it, so no request's signal ends it: it went on to its end after the bundle's server closed.
describe('a listing in progress when the bundle closes', () => {
  it('stops at its next slice and is not kept', async () => {
    const bundle = await Bundle.open(root);
    const pods = bundle.registry.preferred('', 'pods')!;
    for (let ns = 0; ns < NAMESPACES; ns++) await bundle.cache.load(path.join(root, 'cluster-resources', 'pods', `ns${ns}.json`));
    const listing = bundle.list(pods);
    // Closed as soon as the listing has given the loop its first turn: 240,000 pods take many slices.
    await new Promise<void>((resolve) => setImmediate(resolve));
    bundle.close();
    await expect(listing).rejects.toThrow(/aborted/i);
    await expect(bundle.list(pods)).rejects.toThrow(/aborted/i);
  });
});

describe('sortInSlices', () => {
  it('gives the order of Array.prototype.sort, ties kept in their first order (stable), for any length around its run size', async () => {
    // A fixed pseudo-random sequence with many equal keys.
    let seed = 42;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (const n of [0, 1, 1023, 1024, 1025, 5000, 20_000]) {
      const items = Array.from({ length: n }, (_, i) => ({ key: Math.floor(random() * 100), i }));
      const compare = (a: { key: number }, b: { key: number }) => a.key - b.key;
      const sorted = await sortInSlices(items, compare, new TimeSlice(10));
      expect(sorted).toEqual([...items].sort(compare));
    }
  });
});
