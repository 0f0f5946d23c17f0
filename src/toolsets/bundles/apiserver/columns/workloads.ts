import { humanDuration, since } from '../duration.js';
import { at, list, str, stringMap, timeOf, type K8sObject } from '../json.js';
import { formatLabelMap, formatLabelSelector } from '../selectors.js';
import type { Printer } from '../table.js';
import { ageColumn, col, containerColumns, int, nameColumn, orNone, selectorColumn, wide } from './common.js';

/** Printers for the workload controllers, column for column as kubectl shows them. */

export const deploymentPrinter: Printer = {
  columns: [
    nameColumn,
    col('Ready', 'string', (o) => `${int(at(o, 'status', 'readyReplicas'))}/${int(at(o, 'spec', 'replicas'))}`),
    col('Up-to-date', 'integer', (o) => int(at(o, 'status', 'updatedReplicas'))),
    col('Available', 'integer', (o) => int(at(o, 'status', 'availableReplicas'))),
    ageColumn,
    ...containerColumns(),
    selectorColumn,
  ],
};

export const replicaSetPrinter: Printer = {
  columns: [
    nameColumn,
    col('Desired', 'integer', (o) => int(at(o, 'spec', 'replicas'))),
    col('Current', 'integer', (o) => int(at(o, 'status', 'replicas'))),
    col('Ready', 'integer', (o) => int(at(o, 'status', 'readyReplicas'))),
    ageColumn,
    ...containerColumns(),
    selectorColumn,
  ],
};

export const replicationControllerPrinter: Printer = {
  columns: [...replicaSetPrinter.columns.slice(0, -1), wide('Selector', (o) => formatLabelMap(stringMap(at(o, 'spec', 'selector'))))],
};

export const statefulSetPrinter: Printer = {
  columns: [nameColumn, col('Ready', 'string', (o) => `${int(at(o, 'status', 'readyReplicas'))}/${int(at(o, 'spec', 'replicas'))}`), ageColumn, ...containerColumns()],
};

export const daemonSetPrinter: Printer = {
  columns: [
    nameColumn,
    col('Desired', 'integer', (o) => int(at(o, 'status', 'desiredNumberScheduled'))),
    col('Current', 'integer', (o) => int(at(o, 'status', 'currentNumberScheduled'))),
    col('Ready', 'integer', (o) => int(at(o, 'status', 'numberReady'))),
    col('Up-to-date', 'integer', (o) => int(at(o, 'status', 'updatedNumberScheduled'))),
    col('Available', 'integer', (o) => int(at(o, 'status', 'numberAvailable'))),
    col('Node Selector', 'string', (o) => formatLabelMap(stringMap(at(o, 'spec', 'template', 'spec', 'nodeSelector')))),
    ageColumn,
    ...containerColumns(),
    selectorColumn,
  ],
};

function hasCondition(o: K8sObject, type: string): boolean {
  return list(at(o, 'status', 'conditions')).some((c) => str(at(c, 'type')) === type && str(at(c, 'status')) === 'True');
}

function jobStatus(o: K8sObject): string {
  if (hasCondition(o, 'Complete')) return 'Complete';
  if (hasCondition(o, 'Failed')) return 'Failed';
  if (at(o, 'metadata', 'deletionTimestamp') !== undefined) return 'Terminating';
  if (hasCondition(o, 'Suspended')) return 'Suspended';
  if (hasCondition(o, 'FailureTarget')) return 'FailureTarget';
  return 'Running';
}

function jobCompletions(o: K8sObject): string {
  const succeeded = int(at(o, 'status', 'succeeded'));
  const completions = at(o, 'spec', 'completions');
  if (typeof completions === 'number') return `${succeeded}/${completions}`;
  const parallelism = int(at(o, 'spec', 'parallelism'));
  return parallelism > 1 ? `${succeeded}/1 of ${parallelism}` : `${succeeded}/1`;
}

function jobDuration(o: K8sObject, now: Date): string {
  const start = timeOf(at(o, 'status', 'startTime'));
  if (start === undefined) return '';
  const end = timeOf(at(o, 'status', 'completionTime')) ?? now.getTime();
  return humanDuration(end - start);
}

export const jobPrinter: Printer = {
  columns: [
    nameColumn,
    col('Status', 'string', jobStatus),
    col('Completions', 'string', jobCompletions),
    col('Duration', 'string', (o, ctx) => jobDuration(o, ctx.now)),
    ageColumn,
    ...containerColumns(),
    selectorColumn,
  ],
};

export const cronJobPrinter: Printer = {
  columns: [
    nameColumn,
    col('Schedule', 'string', (o) => str(at(o, 'spec', 'schedule'))),
    col('Timezone', 'string', (o) => orNone(str(at(o, 'spec', 'timeZone')))),
    col('Suspend', 'boolean', (o) => at(o, 'spec', 'suspend') === true),
    col('Active', 'integer', (o) => list(at(o, 'status', 'active')).length),
    col('Last Schedule', 'string', (o, ctx) => (at(o, 'status', 'lastScheduleTime') ? since(at(o, 'status', 'lastScheduleTime'), ctx.now) : '<none>')),
    ageColumn,
    ...containerColumns(['spec', 'jobTemplate', 'spec', 'template', 'spec']),
    wide('Selector', (o) => formatLabelSelector(at(o, 'spec', 'jobTemplate', 'spec', 'selector')) || '<none>'),
  ],
};
