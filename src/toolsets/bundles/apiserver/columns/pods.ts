import { humanDuration } from '../duration.js';
import { at, list, num, str, timeOf, type K8sObject } from '../json.js';
import type { Printer, RowCondition } from '../table.js';
import { ageColumn, col, nameColumn, wide } from './common.js';

/**
 * The pod row kubectl prints: READY, STATUS, RESTARTS computed from container statuses the
 * way printPod in kubernetes/pkg/printers/internalversion does, so a CrashLoopBackOff,
 * Init:0/1 or Terminating pod reads the same as on the live cluster.
 */
export interface PodSummary {
  ready: string;
  status: string;
  restarts: string;
}

interface Tally {
  restarts: number;
  lastRestart: number | undefined;
}

/** Restartable init containers are sidecars (restartPolicy Always): they count like app containers. */
function isSidecar(pod: K8sObject, name: string): boolean {
  const c = list(at(pod, 'spec', 'initContainers')).find((x) => str(at(x, 'name')) === name);
  return str(at(c, 'restartPolicy')) === 'Always';
}

function addRestarts(t: Tally, status: unknown): void {
  t.restarts += num(at(status, 'restartCount'));
  const finished = timeOf(at(status, 'lastState', 'terminated', 'finishedAt'));
  if (finished !== undefined && (t.lastRestart === undefined || finished > t.lastRestart)) t.lastRestart = finished;
}

function terminatedReason(term: unknown, prefix: string): string {
  const reason = str(at(term, 'reason'));
  if (reason) return prefix + reason;
  const signal = num(at(term, 'signal'));
  return signal !== 0 ? `${prefix}Signal:${signal}` : `${prefix}ExitCode:${num(at(term, 'exitCode'))}`;
}

function hasCondition(pod: K8sObject, type: string): boolean {
  return list(at(pod, 'status', 'conditions')).some((c) => str(at(c, 'type')) === type && str(at(c, 'status')) === 'True');
}

/** Walks init containers; returns the Init:... reason while initialization is not done. */
function initReason(pod: K8sObject, all: Tally, sidecars: Tally, counts: { ready: number }): string | undefined {
  const statuses = list(at(pod, 'status', 'initContainerStatuses'));
  const total = list(at(pod, 'spec', 'initContainers')).length;
  for (let i = 0; i < statuses.length; i++) {
    const s = statuses[i];
    const name = str(at(s, 'name'));
    addRestarts(all, s);
    const sidecar = isSidecar(pod, name);
    if (sidecar) addRestarts(sidecars, s);
    const term = at(s, 'state', 'terminated');
    const waitingReason = str(at(s, 'state', 'waiting', 'reason'));
    if (term !== undefined && num(at(term, 'exitCode')) === 0) continue;
    if (sidecar && at(s, 'started') === true) {
      if (at(s, 'ready') === true) counts.ready++;
      continue;
    }
    if (term !== undefined) return terminatedReason(term, 'Init:');
    if (waitingReason && waitingReason !== 'PodInitializing') return `Init:${waitingReason}`;
    return `Init:${i}/${total}`;
  }
  return undefined;
}

export function summarizePod(pod: K8sObject, now: Date): PodSummary {
  const sidecarCount = list(at(pod, 'spec', 'initContainers')).filter((c) => str(at(c, 'restartPolicy')) === 'Always').length;
  const total = list(at(pod, 'spec', 'containers')).length + sidecarCount;
  const counts = { ready: 0 };
  let reason = str(at(pod, 'status', 'reason')) || str(at(pod, 'status', 'phase'));
  const gated = list(at(pod, 'status', 'conditions')).some((c) => str(at(c, 'type')) === 'PodScheduled' && str(at(c, 'reason')) === 'SchedulingGated');
  if (gated) reason = 'SchedulingGated';

  const all: Tally = { restarts: 0, lastRestart: undefined };
  const sidecars: Tally = { restarts: 0, lastRestart: undefined };
  const init = initReason(pod, all, sidecars, counts);
  if (init !== undefined) reason = init;

  let tally = all;
  if (init === undefined || hasCondition(pod, 'Initialized')) {
    // Once initialized, only sidecar restarts carry over from init containers.
    tally = { ...sidecars };
    let hasRunning = false;
    const statuses = list(at(pod, 'status', 'containerStatuses'));
    for (let i = statuses.length - 1; i >= 0; i--) {
      const s = statuses[i];
      addRestarts(tally, s);
      const waiting = str(at(s, 'state', 'waiting', 'reason'));
      const term = at(s, 'state', 'terminated');
      if (waiting) reason = waiting;
      else if (term !== undefined) reason = terminatedReason(term, '');
      else if (at(s, 'ready') === true && at(s, 'state', 'running') !== undefined) {
        hasRunning = true;
        counts.ready++;
      }
    }
    if (reason === 'Completed' && hasRunning) reason = hasCondition(pod, 'Ready') ? 'Running' : 'NotReady';
  }

  const phase = str(at(pod, 'status', 'phase'));
  if (at(pod, 'metadata', 'deletionTimestamp') !== undefined) {
    if (str(at(pod, 'status', 'reason')) === 'NodeLost') reason = 'Unknown';
    else if (phase !== 'Succeeded' && phase !== 'Failed') reason = 'Terminating';
  }

  let restarts = String(tally.restarts);
  if (tally.restarts !== 0 && tally.lastRestart !== undefined) {
    restarts = `${tally.restarts} (${humanDuration(now.getTime() - tally.lastRestart)} ago)`;
  }
  return { ready: `${counts.ready}/${total}`, status: reason, restarts };
}

function readinessGates(pod: K8sObject): string {
  const gates = list(at(pod, 'spec', 'readinessGates'));
  if (gates.length === 0) return '<none>';
  const conditions = list(at(pod, 'status', 'conditions'));
  const ok = gates.filter((g) => {
    const c = conditions.find((x) => str(at(x, 'type')) === str(at(g, 'conditionType')));
    return c !== undefined && str(at(c, 'status')) === 'True';
  }).length;
  return `${ok}/${gates.length}`;
}

function podConditions(pod: K8sObject): RowCondition[] {
  const phase = str(at(pod, 'status', 'phase'));
  if (phase === 'Succeeded') return [{ type: 'Completed', status: 'True', reason: 'Succeeded', message: 'The pod has completed successfully.' }];
  if (phase === 'Failed') return [{ type: 'Completed', status: 'True', reason: 'Failed', message: 'The pod failed.' }];
  return [];
}

// Three cells come from one summary; compute it once per pod and reference time.
const memo = new WeakMap<K8sObject, { now: number; summary: PodSummary }>();

function summary(pod: K8sObject, now: Date): PodSummary {
  const hit = memo.get(pod);
  if (hit && hit.now === now.getTime()) return hit.summary;
  const fresh = summarizePod(pod, now);
  memo.set(pod, { now: now.getTime(), summary: fresh });
  return fresh;
}

export const podPrinter: Printer = {
  columns: [
    nameColumn,
    col('Ready', 'string', (o, ctx) => summary(o, ctx.now).ready),
    col('Status', 'string', (o, ctx) => summary(o, ctx.now).status),
    col('Restarts', 'string', (o, ctx) => summary(o, ctx.now).restarts),
    ageColumn,
    wide('IP', (o) => str(at(o, 'status', 'podIPs', 0, 'ip')) || str(at(o, 'status', 'podIP')) || '<none>'),
    wide('Node', (o) => str(at(o, 'spec', 'nodeName')) || '<none>'),
    wide('Nominated Node', (o) => str(at(o, 'status', 'nominatedNodeName')) || '<none>'),
    wide('Readiness Gates', readinessGates),
  ],
  conditions: podConditions,
};
