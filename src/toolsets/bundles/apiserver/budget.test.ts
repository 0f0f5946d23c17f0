import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { summarizeBundle, MAX_GROUPS, TEXT_BUDGET } from '../summary.js';
import { KeyShares, ModelBudget, SharedCharge } from './budget.js';
import { Bundle } from './bundle.js';
import { harnessOn, requireKubectl, SYSTEM_KUBECTL } from './testkit.js';

/**
 * Attack 18r L1: nothing bounded what a bundle's parsed model holds on the main thread (three 237 MB event files of 2 million
 * tiny events each took the server past the V8 heap limit). Each file's objects are charged to the bundle's and the server's
 * budget as they arrive; a file past either is left out with a warning naming the file and the bound. The budgets here are
 * small (an option, as the parse's time is): the same code as the default 512 MB / 1.5 million objects a bundle.
 */

const roots: string[] = [];
afterAll(async () => {
  await Promise.all(roots.map((r) => rm(r, { recursive: true, force: true })));
});
afterEach(() => {
  vi.restoreAllMocks();
});

/** A bundle dir of event files, `counts[i]` events in `events/ns<i>.json` (the attack's shape: no kind or apiVersion, one reason each). */
async function eventBundle(counts: number[], reason: (ns: number, i: number) => string = (ns, i) => `R${ns}-${i}`): Promise<string> {
  const root = await realpath(await mkdtemp(path.join(tmpdir(), 'debugkit-budget-')));
  roots.push(root);
  const cr = path.join(root, 'cluster-resources');
  mkdirSync(path.join(cr, 'events'), { recursive: true });
  counts.forEach((n, ns) => {
    const items = Array.from({ length: n }, (_, i) => ({
      metadata: { name: `e${i}` },
      type: 'Warning',
      reason: reason(ns, i),
      involvedObject: { kind: 'Pod', name: `p${i}` },
    }));
    writeFileSync(path.join(cr, 'events', `ns${ns}.json`), JSON.stringify({ kind: 'List', items }));
  });
  writeFileSync(path.join(cr, 'namespaces.json'), JSON.stringify({ kind: 'NamespaceList', items: counts.map((_, ns) => ({ metadata: { name: `ns${ns}` } })) }));
  return root;
}

/** A server budget of its own, so tests never share the process's. */
const serverBudget = (objects = 1_000_000) => new ModelBudget({ bytes: 1024 * 1024 * 1024, objects }, 'all support bundles open on this server');

describe('the parsed model budget', () => {
  beforeAll(() => requireKubectl(SYSTEM_KUBECTL));

  it('kubectl is served the files within a bundle budget; the files past it are left out with a Warning naming the file and the bound', async () => {
    // ns0 (3,000 events, ~350 KB) and ns2 are parsed on the parse thread, ns1 (100 events) on the event loop: both ways are charged.
    const root = await eventBundle([3000, 100, 3000]);
    const server = serverBudget();
    const open = Bundle.open.bind(Bundle);
    let bundle: Bundle | undefined;
    vi.spyOn(Bundle, 'open').mockImplementation(async (r) => (bundle = await open(r, { model: { bytes: 64 * 1024 * 1024, objects: 3050 }, serverModel: server })));
    const h = await harnessOn(root);
    try {
      const all = await h.kubectl(['get', 'events', '-A', '-o', 'name']);
      expect(all.code).toBe(0);
      expect(all.stdout.trim().split('\n')).toHaveLength(3000);
      for (const ns of ['ns1', 'ns2']) {
        expect(all.stderr).toContain(`Warning: events/${ns}.json of this support bundle was left out:`);
      }
      expect(all.stderr).toContain('past the 64 MB or 3050 objects its parsed objects may hold');
      expect(all.stderr).toContain('it is not served');
      // What the model holds stays within the budget, and the server's budget holds the same.
      expect(bundle!.cache.budget.objects).toBe(3000);
      expect(server.objects).toBe(3000);
      // A namespace left out: kubectl says why, not just that there is nothing.
      const one = await h.kubectl(['get', 'events', '-n', 'ns2']);
      expect(one.code).toBe(0);
      expect(one.stderr).toContain('Warning: events/ns2.json of this support bundle was left out');
      expect(one.stderr).toContain('No resources found in ns2 namespace');
      const obj = await h.kubectl(['get', 'event', 'e5', '-n', 'ns2']);
      expect(obj.code).not.toBe(0);
      expect(obj.stderr).toContain('events/ns2.json of this support bundle was left out');
      // The parsed file is not kept beside its normalized copy (one copy of each object): the cache keeps only the files left out, empty.
      const cached = [...(bundle!.cache as unknown as { files: Map<string, Promise<{ items: unknown[] }>> }).files.values()];
      expect(cached).toHaveLength(2);
      for (const loaded of cached) expect((await loaded).items).toEqual([]);
    } finally {
      await h.close();
    }
  });

  it('past the server budget a file is left out for now, and served once other bundles give theirs back', async () => {
    const server = serverBudget(5000);
    const bounds = { model: { bytes: 64 * 1024 * 1024, objects: 1_000_000 }, serverModel: server };
    const first = await Bundle.open(await eventBundle([4000]), bounds);
    const second = await Bundle.open(await eventBundle([3000]), bounds);
    const events = (b: Bundle) => b.list(b.registry.preferred('', 'events')!);
    expect(await events(first)).toHaveLength(4000);
    expect(await events(second)).toHaveLength(0);
    expect(await second.warnings(second.registry.preferred('', 'events')!)).toEqual([
      expect.stringMatching(/^events\/ns0\.json of this support bundle was left out: .*all support bundles open on this server past the 1024 MB or 5000 objects/),
    ]);
    expect(server.objects).toBe(4000);
    // A bundle no longer served gives its charge back to the server's.
    first.close();
    expect(await events(second)).toHaveLength(3000);
    expect(await second.warnings(second.registry.preferred('', 'events')!)).toEqual([]);
    expect(server.objects).toBe(3000);
  });
});

describe("each key's share of the server budget (attack 18t N4)", () => {
  const events = (b: Bundle) => b.list(b.registry.preferred('', 'events')!);
  const warnings = (b: Bundle) => b.warnings(b.registry.preferred('', 'events')!);
  /** A bundle of `counts` events a namespace, charged to `share`. */
  const openOn = async (counts: number[], share: ModelBudget) => Bundle.open(await eventBundle(counts), { model: { bytes: 64 * 1024 * 1024, objects: 1_000_000 }, serverModel: share });

  it("one key fills its share, not the server's: another key's bundle is served whole, the key's next is left out saying it is that key's share", async () => {
    // The attack's shape at a small scale: one key's two bundles just under the share; alone, the server's bound left the other key nothing.
    const shares = new KeyShares(50, serverBudget(6000));
    const model = { bytes: 64 * 1024 * 1024, objects: 1_000_000 };
    const first = await Bundle.open(await eventBundle([1400]), { model, serverModel: shares.of('key_a') });
    const second = await Bundle.open(await eventBundle([1400]), { model, serverModel: shares.of('key_a') });
    expect(await events(first)).toHaveLength(1400);
    expect(await events(second)).toHaveLength(1400);
    const third = await Bundle.open(await eventBundle([1000]), { model, serverModel: shares.of('key_a') });
    const other = await Bundle.open(await eventBundle([2500]), { model, serverModel: shares.of('key_b') });
    expect(await events(third)).toHaveLength(0);
    expect(await events(other)).toHaveLength(2500);
    expect(await warnings(other)).toEqual([]);
    const [problem] = await warnings(third);
    expect(problem).toMatch(
      /^events\/ns0\.json of this support bundle was left out: .* the support bundles charged to an API key using this one \(each key using a bundle is charged for all it holds; that key's share/,
    );
    expect(problem).toContain('past the 512 MB or 3000 objects its parsed objects may hold (0 MB and 2800 objects held): it is not served; closing the other bundles charged to that key');
    expect(shares.of('key_a').objects).toBe(2800);
    expect(shares.server.objects).toBe(5300);
    // Its share given back (a bundle of the key's closed), the key's next file fits.
    first.close();
    expect(await events(third)).toHaveLength(1000);
    expect(await warnings(third)).toEqual([]);
  });

  it('the local user without keys has the whole server budget, and past it the message names the server', async () => {
    const shares = new KeyShares(50, serverBudget(6000));
    const model = { bytes: 64 * 1024 * 1024, objects: 1_000_000 };
    expect(shares.of(undefined)).toBe(shares.server);
    const big = await Bundle.open(await eventBundle([5000]), { model, serverModel: shares.of(undefined) });
    expect(await events(big)).toHaveLength(5000);
    const next = await Bundle.open(await eventBundle([1500]), { model, serverModel: shares.of(undefined) });
    expect(await events(next)).toHaveLength(0);
    expect(await warnings(next)).toEqual([expect.stringMatching(/would take all support bundles open on this server past the 1024 MB or 6000 objects .*: it is not served$/)]);
  });

  it('a closed bundle gives its charge back once, at close (not when collected), and parses nothing more (attack P5)', async () => {
    const shares = new KeyShares(50, serverBudget(6000));
    const closing = await openOn([1400, 1000], shares.of('key_a'));
    const kept = await openOn([600], shares.of('key_a'));
    const ns = (b: Bundle, n: string) => b.list(b.registry.preferred('', 'events')!, n);
    expect(await ns(closing, 'ns0')).toHaveLength(1400);
    expect(await events(kept)).toHaveLength(600);
    expect(shares.of('key_a').objects).toBe(2000);
    closing.close();
    // The bundle is still referenced here, so this is close(), not the FinalizationRegistry.
    expect(shares.of('key_a').objects).toBe(600);
    expect(shares.server.objects).toBe(600);
    // A second close (or the registry's backstop, which calls the same) gives nothing back twice.
    closing.close();
    closing.cache.budget.close();
    expect(shares.of('key_a').objects).toBe(600);
    // A file a request still running on it would parse is left out, saying why, and charged to no one.
    const late = await closing.cache.load(path.join(closing.clusterDir, 'events', 'ns1.json'));
    expect(late.items).toEqual([]);
    expect(closing.cache.problems.get(path.join(closing.clusterDir, 'events', 'ns1.json'))).toMatch(/would take this support bundle, no longer served \(its server was closed or replaced\), past/);
    expect(shares.server.objects).toBe(600);
  });

  it('a shared bundle is charged to every key using it and to the server once; a later file is kept only when every one of them has room (attack R4, 18x V3)', async () => {
    const shares = new KeyShares(50, serverBudget(6000));
    const [a, b, c] = [shares.of('key_a'), shares.of('key_b'), shares.of('key_c')];
    const charge = new SharedCharge(shares.server);
    charge.join(a);
    const shared = await openOn([2000, 1000], charge);
    const own = await openOn([2500], c);
    expect(await events(own)).toHaveLength(2500);
    // key_b joins before the second file is parsed, key_c (2,500 of its 3,000 held) too: each is charged what the bundle holds.
    await shared.list(shared.registry.preferred('', 'events')!, 'ns0');
    charge.join(b);
    charge.join(c);
    expect([a.objects, b.objects, c.objects, shares.server.objects]).toEqual([2000, 2000, 4500, 4500]);
    // The next file fits key_a's and key_b's shares, not key_c's: left out for all, naming a key's share, and charged to no one.
    // Before (kept while one key had room, charged to all): key_c read it on the others' room, and their next bundles lost theirs.
    expect(await events(shared)).toHaveLength(2000);
    expect(shared.cache.problems.get(path.join(shared.clusterDir, 'events', 'ns1.json'))).toMatch(/left out: .* the support bundles charged to an API key using this one /);
    expect([a.objects, b.objects, c.objects, shares.server.objects]).toEqual([2000, 2000, 4500, 4500]);
    expect(charge.full()).toBe(c);
    // A key leaving gives back its own charge only; with room in every share left, the file is kept and charged to each.
    charge.leave(c);
    expect([a.objects, b.objects, c.objects]).toEqual([2000, 2000, 2500]);
    expect(charge.full()).toBeUndefined();
    expect(await events(shared)).toHaveLength(3000);
    expect([a.objects, b.objects, c.objects, shares.server.objects]).toEqual([3000, 3000, 2500, 5500]);
    charge.leave(a);
    expect([a.objects, b.objects, shares.server.objects]).toEqual([0, 3000, 5500]);
    shared.close();
    expect([b.objects, shares.server.objects]).toEqual([0, 2500]);
  });

  it('a share is a whole percent from 1 to 100', () => {
    for (const bad of [0, 101, 2.5]) expect(() => new KeyShares(bad, serverBudget())).toThrow(/whole percent from 1 to 100, not/);
    expect(new KeyShares(1, serverBudget(3_000_000)).bounds.objects).toBe(30_000);
  });
});

describe('bundle_summary over many warning reasons', () => {
  it('groups the first MAX_GROUPS reasons and counts the rest: 50,000 distinct reasons answer within the text budget', async () => {
    const root = await eventBundle([50_000]);
    const s = await summarizeBundle(await Bundle.open(root, { serverModel: serverBudget() }), 'many-reasons');
    expect(s.text.length).toBeLessThanOrEqual(TEXT_BUDGET);
    expect(s.checked.events).toBe(50_000);
    expect(s.warning_events.total).toBe(MAX_GROUPS);
    expect(s.warning_events.ungrouped).toBe(50_000 - MAX_GROUPS);
    expect(s.text).toContain(`and ${50_000 - MAX_GROUPS} more events of reasons past the first ${MAX_GROUPS}, counted only`);
    expect(s.healthy).toBe(false);
  });

  it('names the files the budget left out among what it could not read', async () => {
    const root = await eventBundle([3000, 3000], () => 'BackOff');
    const s = await summarizeBundle(await Bundle.open(root, { model: { bytes: 64 * 1024 * 1024, objects: 4000 }, serverModel: serverBudget() }), 'over-budget');
    expect(s.checked.events).toBe(3000);
    expect(s.warning_events.items[0]).toMatchObject({ reason: 'BackOff', count: 3000, more_objects: true });
    expect(s.warning_events.items[0]!.objects).toHaveLength(20);
    expect(s.text).toContain('unreadable: events/ns1.json of this support bundle was left out');
  });
});
