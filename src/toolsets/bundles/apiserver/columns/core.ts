import { since } from '../duration.js';
import { at, list, num, rec, str, stringMap, type K8sObject } from '../json.js';
import { formatLabelMap } from '../selectors.js';
import type { Printer } from '../table.js';
import { ageColumn, col, createdAtPrinter, int, nameColumn, orNone, wide } from './common.js';

/** Printers for core/v1 kinds, after kubectl's printers.go. */

function portString(ports: unknown[]): string {
  return ports
    .map((p) => {
      const port = num(at(p, 'port'));
      const proto = str(at(p, 'protocol'), 'TCP');
      const nodePort = num(at(p, 'nodePort'));
      return nodePort > 0 ? `${port}:${nodePort}/${proto}` : `${port}/${proto}`;
    })
    .join(',');
}

function loadBalancerAddresses(o: K8sObject): string[] {
  return list(at(o, 'status', 'loadBalancer', 'ingress'))
    .map((i) => str(at(i, 'ip')) || str(at(i, 'hostname')))
    .filter(Boolean);
}

function externalIP(o: K8sObject): string {
  const external = list(at(o, 'spec', 'externalIPs')).map((x) => str(x));
  switch (str(at(o, 'spec', 'type'), 'ClusterIP')) {
    case 'ClusterIP':
    case 'NodePort':
      return external.length > 0 ? external.join(',') : '<none>';
    case 'LoadBalancer': {
      const all = [...loadBalancerAddresses(o), ...external];
      return all.length > 0 ? all.join(',') : '<pending>';
    }
    case 'ExternalName':
      return str(at(o, 'spec', 'externalName'));
    default:
      return '<unknown>';
  }
}

export const servicePrinter: Printer = {
  columns: [
    nameColumn,
    col('Type', 'string', (o) => str(at(o, 'spec', 'type'), 'ClusterIP')),
    col('Cluster-IP', 'string', (o) => str(at(o, 'spec', 'clusterIPs', 0)) || str(at(o, 'spec', 'clusterIP')) || '<none>'),
    col('External-IP', 'string', externalIP),
    col('Port(s)', 'string', (o) => orNone(portString(list(at(o, 'spec', 'ports'))))),
    ageColumn,
    wide('Selector', (o) => formatLabelMap(stringMap(at(o, 'spec', 'selector')))),
  ],
};

function nodeStatus(o: K8sObject): string {
  const ready = list(at(o, 'status', 'conditions')).find((c) => str(at(c, 'type')) === 'Ready');
  const status = ready === undefined ? ['Unknown'] : [str(at(ready, 'status')) === 'True' ? 'Ready' : 'NotReady'];
  if (at(o, 'spec', 'unschedulable') === true) status.push('SchedulingDisabled');
  return status.join(',');
}

function nodeRoles(o: K8sObject): string {
  const roles = new Set<string>();
  for (const [k, v] of Object.entries(stringMap(at(o, 'metadata', 'labels')))) {
    if (k.startsWith('node-role.kubernetes.io/') && k.length > 'node-role.kubernetes.io/'.length) roles.add(k.slice(24));
    else if (k === 'kubernetes.io/role' && v !== '') roles.add(v);
  }
  return orNone([...roles].sort().join(','));
}

function nodeAddress(o: K8sObject, type: string): string {
  const a = list(at(o, 'status', 'addresses')).find((x) => str(at(x, 'type')) === type);
  return a === undefined ? '<none>' : str(at(a, 'address'));
}

const nodeInfo = (field: string) => (o: K8sObject) => str(at(o, 'status', 'nodeInfo', field)) || '<unknown>';

export const nodePrinter: Printer = {
  columns: [
    nameColumn,
    col('Status', 'string', nodeStatus),
    col('Roles', 'string', nodeRoles),
    ageColumn,
    col('Version', 'string', (o) => str(at(o, 'status', 'nodeInfo', 'kubeletVersion'))),
    wide('Internal-IP', (o) => nodeAddress(o, 'InternalIP')),
    wide('External-IP', (o) => nodeAddress(o, 'ExternalIP')),
    wide('OS-Image', nodeInfo('osImage')),
    wide('Kernel-Version', nodeInfo('kernelVersion')),
    wide('Container-Runtime', nodeInfo('containerRuntimeVersion')),
  ],
};

export const namespacePrinter: Printer = {
  columns: [nameColumn, col('Status', 'string', (o) => str(at(o, 'status', 'phase'))), ageColumn],
};

/** LAST SEEN falls back from lastTimestamp to firstTimestamp to eventTime (events.k8s.io-style events). */
function eventTimes(o: K8sObject): { first: unknown; last: unknown; count: number } {
  const first = at(o, 'firstTimestamp') || at(o, 'eventTime');
  const series = at(o, 'series');
  if (series !== undefined && series !== null) return { first, last: at(series, 'lastObservedTime'), count: int(at(series, 'count')) };
  const count = int(at(o, 'count'));
  return { first, last: at(o, 'lastTimestamp') || first, count: count === 0 ? 1 : count };
}

function eventObject(o: K8sObject): string {
  const kind = str(at(o, 'involvedObject', 'kind')).toLowerCase();
  const name = str(at(o, 'involvedObject', 'name'));
  return name ? `${kind}/${name}` : kind;
}

function eventSource(o: K8sObject): string {
  const component = str(at(o, 'source', 'component')) || str(at(o, 'reportingComponent'));
  const instance = str(at(o, 'source', 'host')) || str(at(o, 'reportingInstance'));
  return instance ? `${component}, ${instance}` : component;
}

export const eventPrinter: Printer = {
  columns: [
    col('Last Seen', 'string', (o, ctx) => since(eventTimes(o).last, ctx.now)),
    col('Type', 'string', (o) => str(at(o, 'type'))),
    col('Reason', 'string', (o) => str(at(o, 'reason'))),
    col('Object', 'string', eventObject),
    wide('Subobject', (o) => str(at(o, 'involvedObject', 'fieldPath'))),
    wide('Source', eventSource),
    col('Message', 'string', (o) => str(at(o, 'message')).trim()),
    wide('First Seen', (o, ctx) => since(eventTimes(o).first, ctx.now)),
    { name: 'Count', type: 'string', priority: 1, cell: (o) => eventTimes(o).count },
    { ...nameColumn, priority: 1 },
  ],
};

const count = (path: string) => (o: K8sObject) => Object.keys(rec(at(o, path))).length;

export const configMapPrinter: Printer = {
  columns: [nameColumn, col('Data', 'integer', (o) => count('data')(o) + count('binaryData')(o)), ageColumn],
};

export const secretPrinter: Printer = {
  columns: [nameColumn, col('Type', 'string', (o) => str(at(o, 'type'))), col('Data', 'integer', count('data')), ageColumn],
};

export const serviceAccountPrinter: Printer = {
  columns: [nameColumn, col('Secrets', 'integer', (o) => list(at(o, 'secrets')).length), ageColumn],
};

function hostPort(ip: string, port: number): string {
  return ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/** At most three endpoints, then "+ N more...", as kubectl prints them. */
function formatEndpoints(o: K8sObject): string {
  const subsets = list(at(o, 'subsets'));
  if (subsets.length === 0) return '<none>';
  const shown: string[] = [];
  let total = 0;
  for (const ss of subsets) {
    const addresses = list(at(ss, 'addresses')).map((a) => str(at(a, 'ip')));
    const ports = list(at(ss, 'ports'));
    const entries = ports.length === 0 ? addresses : ports.flatMap((p) => addresses.map((ip) => hostPort(ip, num(at(p, 'port')))));
    total += entries.length;
    for (const e of entries) if (shown.length < 3) shown.push(e);
  }
  return total > 3 ? `${shown.join(',')} + ${total - 3} more...` : shown.join(',');
}

export const endpointsPrinter: Printer = { columns: [nameColumn, col('Endpoints', 'string', formatEndpoints), ageColumn] };

const ACCESS_MODES: Record<string, string> = {
  ReadWriteOnce: 'RWO',
  ReadOnlyMany: 'ROX',
  ReadWriteMany: 'RWX',
  ReadWriteOncePod: 'RWOP',
};

function accessModes(modes: unknown): string {
  return list(modes)
    .map((m) => ACCESS_MODES[str(m)] ?? str(m))
    .join(',');
}

function storageClassOf(o: K8sObject): string {
  return str(at(o, 'spec', 'storageClassName')) || str(at(o, 'metadata', 'annotations', 'volume.beta.kubernetes.io/storage-class'));
}

const volumeAttributesClass = col('VolumeAttributesClass', 'string', (o) => str(at(o, 'spec', 'volumeAttributesClassName')) || '<unset>');
const volumeMode = wide('VolumeMode', (o) => str(at(o, 'spec', 'volumeMode')) || '<unset>');

export const persistentVolumePrinter: Printer = {
  columns: [
    nameColumn,
    col('Capacity', 'string', (o) => str(at(o, 'spec', 'capacity', 'storage'))),
    col('Access Modes', 'string', (o) => accessModes(at(o, 'spec', 'accessModes'))),
    col('Reclaim Policy', 'string', (o) => str(at(o, 'spec', 'persistentVolumeReclaimPolicy'))),
    col('Status', 'string', (o) => (at(o, 'metadata', 'deletionTimestamp') ? 'Terminating' : str(at(o, 'status', 'phase')))),
    col('Claim', 'string', (o) => {
      const ref = at(o, 'spec', 'claimRef');
      return ref ? `${str(at(ref, 'namespace'))}/${str(at(ref, 'name'))}` : '';
    }),
    col('StorageClass', 'string', storageClassOf),
    volumeAttributesClass,
    col('Reason', 'string', (o) => str(at(o, 'status', 'reason'))),
    ageColumn,
    volumeMode,
  ],
};

export const persistentVolumeClaimPrinter: Printer = {
  columns: [
    nameColumn,
    col('Status', 'string', (o) => (at(o, 'metadata', 'deletionTimestamp') ? 'Terminating' : str(at(o, 'status', 'phase')))),
    col('Volume', 'string', (o) => str(at(o, 'spec', 'volumeName'))),
    col('Capacity', 'string', (o) => (str(at(o, 'spec', 'volumeName')) ? str(at(o, 'status', 'capacity', 'storage')) : '')),
    col('Access Modes', 'string', (o) => (str(at(o, 'spec', 'volumeName')) ? accessModes(at(o, 'status', 'accessModes')) : '')),
    col('StorageClass', 'string', storageClassOf),
    volumeAttributesClass,
    ageColumn,
    volumeMode,
  ],
};

function quotaUsage(o: K8sObject, limits: boolean): string {
  const hard = stringMap(at(o, 'status', 'hard'));
  const used = stringMap(at(o, 'status', 'used'));
  return Object.keys(hard)
    .sort()
    .filter((k) => k.startsWith('limits.') === limits)
    .map((k) => `${k}: ${used[k] ?? '0'}/${hard[k]}`)
    .join(', ');
}

export const resourceQuotaPrinter: Printer = {
  columns: [nameColumn, ageColumn, col('Request', 'string', (o) => quotaUsage(o, false)), col('Limit', 'string', (o) => quotaUsage(o, true))],
};

export const limitRangePrinter: Printer = createdAtPrinter;
