import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { TimeSlice } from '../../../core/wait.js';
import type { Bundle } from './bundle.js';
import { isRecord } from './json.js';

/** The walk's share of the loop per turn, and how many objects go between looks at the clock. */
const SLICE_MS = 10;
const STEP = 256;

/**
 * Fields the cluster itself stamps while it runs: node heartbeats, lease renewals, event
 * times, container starts and exits, managedFields write times. None can be later than the
 * moment the bundle was collected, and on a live cluster the newest is seconds before it
 * (leases renew every ~10s, nodes report every few seconds to minutes).
 */
const CLOCK_FIELDS = new Set([
  'lastHeartbeatTime',
  'renewTime',
  'lastTimestamp',
  'firstTimestamp',
  'eventTime',
  'lastObservedTime',
  'creationTimestamp',
  'lastTransitionTime',
  'startedAt',
  'finishedAt',
  'time',
]);

/** Kinds whose timestamps move with the cluster clock; read in this order. */
const CLOCK_KINDS: [group: string, plural: string][] = [
  ['coordination.k8s.io', 'leases'],
  ['', 'nodes'],
  ['', 'events'],
  ['', 'pods'],
];

function newestIn(v: unknown, best: number): number {
  if (Array.isArray(v)) {
    for (const item of v) best = newestIn(item, best);
  } else if (isRecord(v)) {
    for (const [k, val] of Object.entries(v)) {
      if (typeof val === 'string') {
        if (CLOCK_FIELDS.has(k)) {
          const t = Date.parse(val);
          if (!Number.isNaN(t) && t > best) best = t;
        }
      } else if (typeof val === 'object' && val !== null) best = newestIn(val, best);
    }
  }
  return best;
}

/**
 * When the bundle was collected, for AGE columns: the newest cluster-stamped time in its
 * leases, nodes, events and pods. Falls back to the newest file modification time under
 * cluster-resources/ (tar keeps the collector's write times), then to now.
 */
export async function estimateCollectedAt(bundle: Bundle): Promise<Date> {
  // One object at a time, in slices: walked in one go, 1.5 million pods held the event loop 4-11 s (attack 18o F2). One
  // object is bounded (4 MB, parse.ts MAX_OBJECT_BYTES), so one walk is short.
  const slice = new TimeSlice(SLICE_MS);
  let best = -Infinity;
  for (const [group, plural] of CLOCK_KINDS) {
    const t = bundle.registry.preferred(group, plural);
    if (!t) continue;
    const objects = await bundle.list(t);
    for (let i = 0; i < objects.length; i++) {
      if (i % STEP === 0) await slice.pause();
      best = newestIn(objects[i], best);
    }
  }
  if (Number.isFinite(best)) return new Date(best);
  const mtime = await newestMtime(bundle.clusterDir);
  return mtime ?? new Date();
}

async function newestMtime(dir: string): Promise<Date | undefined> {
  const entries = await readdir(dir).catch(() => [] as string[]);
  let best: number | undefined;
  for (const name of entries) {
    const s = await stat(path.join(dir, name)).catch(() => undefined);
    if (s && (best === undefined || s.mtimeMs > best)) best = s.mtimeMs;
  }
  return best === undefined ? undefined : new Date(best);
}
