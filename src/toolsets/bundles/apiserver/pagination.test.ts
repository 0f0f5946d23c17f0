import { mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { harnessOn, requireKubectl, SYSTEM_KUBECTL, type KubectlHarness } from './testkit.js';
import { longestBlock, turnsMarked } from '../../../../test/helpers/stall.js';

/**
 * Attack 18m F3: every list request built and serialized the whole listing at once and ignored
 * limit/continue, so a 150,000-pod listing held the event loop 1-2 s a request. Lists are paged
 * now as the real API server pages them (kubectl asks for 500 at a time), and an unpaged list is
 * written in slices.
 */

const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
const NAMESPACES: Array<[string, number]> = [
  ['ns-a', 700],
  ['ns-b', 500],
];
const TOTAL = 1_200;

// Loosely typed on purpose: these tests assert on JSON documents field by field.
type Json = Record<string, any>;

function pod(ns: string, i: number): Json {
  return { metadata: { name: `pod-${String(i).padStart(5, '0')}`, namespace: ns, labels: { app: i % 3 === 0 ? 'x' : 'y' } }, status: { phase: 'Running' } };
}

let h: KubectlHarness;
let all: string[];

beforeAll(async () => {
  const root = await mkdtemp(path.join(tmpdir(), 'debugkit-paging-'));
  const dir = path.join(root, 'cluster-resources', 'pods');
  mkdirSync(dir, { recursive: true });
  all = [];
  for (const [ns, n] of NAMESPACES) {
    // Written out of order: the server sorts by namespace, then name.
    const items = Array.from({ length: n }, (_, i) => pod(ns, (i * 7919) % n));
    writeFileSync(path.join(dir, `${ns}.json`), JSON.stringify({ kind: 'PodList', apiVersion: 'v1', items }));
    for (let i = 0; i < n; i++) all.push(`${ns}/pod-${String(i).padStart(5, '0')}`);
  }
  h = await harnessOn(root, new Date('2025-01-01T00:00:00Z'));
});
afterAll(async () => h?.close());

async function get(p: string, accept = 'application/json'): Promise<{ status: number; body: Json }> {
  const res = await fetch(h.server.url + p, { headers: { Accept: accept } });
  return { status: res.status, body: JSON.parse(await res.text()) as Json };
}

const keyOf = (o: Json): string => `${o.metadata.namespace}/${o.metadata.name}`;

/** Follows continue tokens from `first` to the end: the pages' items (or rows' objects), and each page's body. */
async function pages(first: string, accept?: string): Promise<{ keys: string[]; bodies: Json[] }> {
  const keys: string[] = [];
  const bodies: Json[] = [];
  let next: string | undefined = first;
  while (next !== undefined) {
    const r = await get(next, accept);
    expect(r.status).toBe(200);
    bodies.push(r.body);
    for (const o of r.body.items ?? r.body.rows.map((row: Json) => row.object)) keys.push(keyOf(o));
    const token = r.body.metadata.continue as string | undefined;
    next = token ? `${first}&continue=${encodeURIComponent(token)}` : undefined;
    expect(bodies.length).toBeLessThan(20);
  }
  return { keys, bodies };
}

describe('list pagination (limit / continue)', () => {
  it('limit=500 answers 500 items and a continue token; following it lists every pod once, in order', async () => {
    const { keys, bodies } = await pages('/api/v1/pods?limit=500');
    expect(bodies.map((b) => (b.items as Json[]).length)).toEqual([500, 500, 200]);
    expect(keys).toEqual(all);
    expect(bodies[0]!.metadata.continue).toEqual(expect.any(String));
    expect(bodies[0]!.metadata.remainingItemCount).toBe(700);
    expect(bodies[1]!.metadata.remainingItemCount).toBe(200);
    expect(bodies[2]!.metadata.continue).toBeUndefined();
    expect(bodies[2]!.metadata.remainingItemCount).toBeUndefined();
    for (const b of bodies) expect(b).toMatchObject({ kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '1' } });
  });

  it('pages server-side tables the same way', async () => {
    const { keys, bodies } = await pages('/api/v1/namespaces/ns-a/pods?limit=300', TABLE);
    expect(bodies.map((b) => (b.rows as Json[]).length)).toEqual([300, 300, 100]);
    expect(keys).toEqual(all.filter((k) => k.startsWith('ns-a/')));
    expect(bodies[0]).toMatchObject({ kind: 'Table', metadata: { resourceVersion: '1' } });
    expect(bodies[2]!.metadata.continue).toBeUndefined();
  });

  it('applies label selectors before paging', async () => {
    const { keys, bodies } = await pages('/api/v1/pods?labelSelector=app%3Dx&limit=150');
    const want = all.filter((k) => Number(k.split('-').pop()) % 3 === 0);
    expect(keys).toEqual(want);
    expect(bodies.map((b) => (b.items as Json[]).length)).toEqual([150, 150, 101]);
    // As the real API server: no remaining count for a filtered list.
    expect(bodies[0]!.metadata.remainingItemCount).toBeUndefined();
  });

  it('answers the whole listing, without continue, when no limit is asked (or limit=0)', async () => {
    for (const p of ['/api/v1/pods', '/api/v1/pods?limit=0']) {
      const r = await get(p);
      expect(r.body.items.map(keyOf)).toEqual(all);
      expect(r.body.metadata).toEqual({ resourceVersion: '1' });
    }
    const t = await get('/api/v1/pods', TABLE);
    expect(t.body.rows.map((row: Json) => keyOf(row.object))).toEqual(all);
    expect(t.body.metadata).toEqual({ resourceVersion: '1' });
  });

  it('refuses a garbage continue token or a bad limit with a 400 Status', async () => {
    for (const p of ['/api/v1/pods?limit=500&continue=garbage', '/api/v1/pods?continue=eyJ4IjoxfQ', '/api/v1/pods?limit=abc', '/api/v1/pods?limit=-1']) {
      const r = await get(p);
      expect(r.status, p).toBe(400);
      expect(r.body).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'BadRequest', code: 400 });
    }
  });

  it('kubectl get pods -A --chunk-size=500 follows continue and prints every pod', async () => {
    requireKubectl(SYSTEM_KUBECTL);
    const r = await h.kubectl(['get', 'pods', '-A', '--chunk-size=500', '--no-headers', '-v=6']);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines.length).toBe(TOTAL);
    expect(lines.map((l) => l.split(/\s+/).slice(0, 2).join('/'))).toEqual(all);
    // It really paged: later requests carry the continue token.
    expect(r.stderr).toMatch(/pods\?continue=[^&\s]+&limit=500/);
  });
});

describe('an unpaged listing of many pods', () => {
  let big: KubectlHarness;
  const PODS = 60_000;
  beforeAll(async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'debugkit-paging-big-'));
    const dir = path.join(root, 'cluster-resources', 'pods');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'default.json'), JSON.stringify({ kind: 'PodList', apiVersion: 'v1', items: Array.from({ length: PODS }, (_, i) => pod('default', i)) }));
    big = await harnessOn(root, new Date('2025-01-01T00:00:00Z'));
    // Parsed and cached first: only the answer itself is measured.
    await (await fetch(`${big.server.url}/api/v1/pods?limit=1`)).text();
  }, 60_000);
  afterAll(async () => big?.close());

  it('is written in slices: the event loop keeps turning while a 60,000-row Table is made', async () => {
    // The turns of the event loop in which the server wrote the answer.
    const written = turnsMarked();
    const { write, end } = http.OutgoingMessage.prototype;
    vi.spyOn(http.OutgoingMessage.prototype, 'write').mockImplementation(function (this: http.OutgoingMessage, ...args: Parameters<http.OutgoingMessage['write']>) {
      written.mark();
      return write.apply(this, args);
    });
    vi.spyOn(http.OutgoingMessage.prototype, 'end').mockImplementation(function (this: http.OutgoingMessage, ...args: Parameters<http.OutgoingMessage['end']>) {
      written.mark();
      return end.apply(this, args);
    });
    let measured;
    try {
      measured = await longestBlock(async () => (await fetch(`${big.server.url}/api/v1/pods`, { headers: { Accept: TABLE } })).arrayBuffer());
    } finally {
      vi.restoreAllMocks();
    }
    const { longest, value: body } = measured;
    expect(body.byteLength).toBeGreaterThan(PODS * 100);
    // Whole, the Table was made and written by one end() in one turn, holding the loop all along (a second then); in slices
    // of SLICE_MS it is written over 19 turns here, more on a slower host (each slice gets fewer rows made), never fewer.
    expect(written.count(), `turns the answer was written in; longest block ${longest.toFixed(0)} ms`).toBeGreaterThan(4);
  }, 60_000);
});
