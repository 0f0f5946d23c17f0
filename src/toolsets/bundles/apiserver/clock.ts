import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Bundle } from './bundle.js';
import { isRecord } from './json.js';

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
  let best = -Infinity;
  for (const [group, plural] of CLOCK_KINDS) {
    const t = bundle.registry.preferred(group, plural);
    if (t) best = newestIn(await bundle.list(t), best);
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
