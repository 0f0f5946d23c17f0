import { closeSync, ftruncateSync, mkdirSync, openSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp, realpath } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { pollUntil, TimeSlice } from '../../../core/wait.js';
import { writeDocuments } from '../../../../test/helpers/stall.js';
import type { K8sObject } from './json.js';
import { TAIL_SEARCH_BYTES, tailStart } from './logs.js';
import { selectPage, sendListJson } from './paging.js';
import { harnessOn, type KubectlHarness } from './testkit.js';

/**
 * Attack 18r L3: the server answered a Timeout at its budget, and nothing watched the client
 * leave, but the work went on: `kubectl logs --tail 1` of a 20 GB log without a newline read it
 * backwards for minutes (96 calls: 104 descriptors and a CPU after they had returned), and a
 * list with 1,300 label requirements matched 1M events for 2 minutes. A request's work now
 * stops when its client leaves or its budget passes, the tail search is bounded, and so is the
 * number of selector requirements.
 */

/** Label matches the server made: the counter that must stop growing once the client has left. */
const matched = vi.hoisted(() => ({ count: 0, spinMicros: 0 }));
vi.mock('./selectors.js', async (original) => {
  const real = await original<typeof import('./selectors.js')>();
  return {
    ...real,
    matchesLabels: (...args: Parameters<typeof real.matchesLabels>) => {
      matched.count++;
      // Each match made slow, so a whole pass lasts seconds on any machine.
      const until = performance.now() + matched.spinMicros / 1000;
      while (performance.now() < until);
      return real.matchesLabels(...args);
    },
  };
});

const GB = 1024 ** 3;
const PODS = 100_000;

let root: string;
let h: KubectlHarness;
let log: string;

beforeAll(async () => {
  root = await realpath(await mkdtemp(path.join(tmpdir(), 'debugkit-abandoned-')));
  const pods = path.join(root, 'cluster-resources', 'pods');
  mkdirSync(path.join(pods, 'logs', 'ns0', 'q1'), { recursive: true });
  // 20 GB without a newline, sparse: costs no disk, and reading it costs what the attack's did.
  log = path.join(pods, 'logs', 'ns0', 'q1', 'c.log');
  const fd = openSync(log, 'w');
  ftruncateSync(fd, 20 * GB);
  closeSync(fd);
  writeDocuments(
    path.join(pods, 'ns0.json'),
    PODS,
    (i) => `${i === 0 ? '{"kind":"PodList","apiVersion":"v1","items":[' : ','}${JSON.stringify({ metadata: { name: `p${i}`, namespace: 'ns0', labels: { a: 'b' } } })}`,
  );
  writeFileSync(path.join(pods, 'ns0.json'), ']}', { flag: 'a' });
  h = await harnessOn(root, new Date('2025-01-01T00:00:00Z'));
  // Parsed, de-duplicated and sorted first: what follows is the request's own work.
  await (await fetch(`${h.server.url}/api/v1/pods?limit=1`)).text();
}, 120_000);
afterAll(async () => h?.close());

/** Descriptors of this process open on `file`. */
function openOn(file: string): number {
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === file) n++;
    } catch {
      // Closed while listed.
    }
  }
  return n;
}

/** Starts a GET the test abandons: `abandon()` closes its connection as kubectl's timeout does. */
function abandoned(p: string): { abandon: () => void; settled: Promise<unknown> } {
  const client = new AbortController();
  const settled = fetch(h.server.url + p, { signal: client.signal })
    .then((r) => r.arrayBuffer())
    .catch((err: unknown) => err);
  return { abandon: () => client.abort(), settled };
}

describe('a logs request abandoned by its client', () => {
  it('stops searching a 20 GB log without a newline for its last line: the descriptor is closed at once', async () => {
    const r = abandoned('/api/v1/namespaces/ns0/pods/q1/log?tailLines=1&limitBytes=1');
    expect(await pollUntil(() => openOn(log) > 0, { timeoutMs: 10_000, intervalMs: 1 })).toBe(true);
    r.abandon();
    await r.settled;
    // Before: the search went on to the file's start, minutes with its descriptor open.
    expect(await pollUntil(() => openOn(log) === 0, { timeoutMs: 10_000, intervalMs: 10 })).toBe(true);
  }, 30_000);

  it('that is read is answered from 64 MiB before the end, with a Warning saying so', async () => {
    const res = await fetch(`${h.server.url}/api/v1/namespaces/ns0/pods/q1/log?tailLines=1&limitBytes=10`);
    expect(res.status).toBe(200);
    expect(res.headers.get('warning')).toMatch(/fewer than 1 lines end in the last 64 MiB of this log/);
    expect(Buffer.from(await res.arrayBuffer())).toEqual(Buffer.alloc(10));
  });
});

describe('tailStart', () => {
  it('stops (the abort thrown) when its signal aborts mid-search, well before its bound', async () => {
    const fd = openSync(log, 'r');
    try {
      const gone = new AbortController();
      const search = tailStart(fd, 20 * GB, 1, gone.signal);
      gone.abort();
      await expect(search).rejects.toThrow(/abort/i);
      // Never started: an aborted search reads nothing.
      await expect(tailStart(fd, 20 * GB, 1, gone.signal)).rejects.toThrow(/abort/i);
      expect(TAIL_SEARCH_BYTES).toBe(64 * 1024 ** 2);
    } finally {
      closeSync(fd);
    }
  });
});

describe('a list request abandoned by its client', () => {
  it('stops matching its label selector at the next slice: the count of matches stops growing long before the end', async () => {
    matched.count = 0;
    matched.spinMicros = 50;
    try {
      const r = abandoned('/api/v1/pods?labelSelector=a%3Db');
      expect(await pollUntil(() => matched.count > 1_000, { timeoutMs: 20_000, intervalMs: 1 })).toBe(true);
      r.abandon();
      await r.settled;
      // Settled: the count holds still across turns of the loop (slices would have moved it).
      let last = -1;
      expect(
        await pollUntil(
          () => {
            const same = matched.count === last;
            last = matched.count;
            return same;
          },
          { timeoutMs: 10_000, intervalMs: 100 },
        ),
      ).toBe(true);
      // Before: every one of the 100,000 pods was matched (5 s here), then written to a closed socket.
      expect(matched.count).toBeLessThan(PODS / 2);
    } finally {
      matched.spinMicros = 0;
    }
  }, 60_000);
});

describe('selectors', () => {
  const reqs = (n: number, one: (i: number) => string) => encodeURIComponent(Array.from({ length: n }, (_, i) => one(i)).join(','));

  it('of 101 requirements are refused with a 400 Status naming the bound of 100; 100 are served', async () => {
    for (const [param, one] of [
      ['labelSelector', (i: number) => `k${i}!=1`],
      ['fieldSelector', (i: number) => `metadata.name!=x${i}`],
    ] as const) {
      const refused = await fetch(`${h.server.url}/api/v1/namespaces/ns0/pods?limit=1&${param}=${reqs(101, one)}`);
      expect(refused.status, param).toBe(400);
      expect(await refused.json()).toMatchObject({ kind: 'Status', reason: 'BadRequest', code: 400, message: expect.stringMatching(/101 requirements: at most 100 are served/) });
      const served = await fetch(`${h.server.url}/api/v1/namespaces/ns0/pods?limit=1&${param}=${reqs(100, one)}`);
      expect(served.status, param).toBe(200);
      expect(((await served.json()) as { items: unknown[] }).items).toHaveLength(1);
    }
  });
});

describe('selectPage and sendListJson', () => {
  const items: K8sObject[] = Array.from({ length: 200_000 }, (_, i) => ({ metadata: { name: `p${i}` } }));

  it('stop at the next slice once the request is given up (the abort thrown), not at the end of the list', async () => {
    const gone = new AbortController();
    let seen = 0;
    const match = (): boolean => {
      if (++seen === 5_000) gone.abort();
      return true;
    };
    await expect(selectPage(items, match, true, { limit: 0 }, '1', { slice: new TimeSlice(10), signal: gone.signal })).rejects.toThrow(/abort/i);
    expect(seen).toBeLessThan(5_000 + 256);

    const written = new AbortController();
    let made = 0;
    const res = { destroyed: false, writeHead: () => res, write: () => true, end: () => res };
    const toJson = (o: K8sObject): K8sObject => {
      if (++made === 5_000) written.abort();
      return o;
    };
    await expect(sendListJson(res as never, { kind: 'PodList' }, 'items', items, toJson, { slice: new TimeSlice(10), signal: written.signal })).rejects.toThrow(/abort/i);
    expect(made).toBeLessThan(5_000 + 256);
  });
});
