import { at, list, str, type K8sObject } from '../json.js';
import { formatLabelSelector } from '../selectors.js';
import type { Printer } from '../table.js';
import { ageColumn, col, int, nameColumn, orNone, wide } from './common.js';

/** Printers for networking, storage, RBAC, policy, coordination and scheduling kinds. */

function ingressHosts(o: K8sObject): string {
  const hosts = list(at(o, 'spec', 'rules')).map((r) => str(at(r, 'host')) || '*');
  return hosts.length === 0 ? '*' : hosts.join(',');
}

function ingressAddress(o: K8sObject): string {
  return list(at(o, 'status', 'loadBalancer', 'ingress'))
    .map((i) => str(at(i, 'ip')) || str(at(i, 'hostname')))
    .filter(Boolean)
    .join(',');
}

export const ingressPrinter: Printer = {
  columns: [
    nameColumn,
    col('Class', 'string', (o) => orNone(str(at(o, 'spec', 'ingressClassName')))),
    col('Hosts', 'string', ingressHosts),
    col('Address', 'string', ingressAddress),
    col('Ports', 'string', (o) => (list(at(o, 'spec', 'tls')).length > 0 ? '80, 443' : '80')),
    ageColumn,
  ],
};

export const ingressClassPrinter: Printer = {
  columns: [
    nameColumn,
    col('Controller', 'string', (o) => str(at(o, 'spec', 'controller'))),
    col('Parameters', 'string', (o) => {
      const p = at(o, 'spec', 'parameters');
      return p ? `${str(at(p, 'kind'))}/${str(at(p, 'name'))}` : '<none>';
    }),
    ageColumn,
  ],
};

export const networkPolicyPrinter: Printer = {
  columns: [nameColumn, col('Pod-Selector', 'string', (o) => formatLabelSelector(at(o, 'spec', 'podSelector')) || '<none>'), ageColumn],
};

function isDefaultClass(o: K8sObject): boolean {
  const a = (k: string) => str(at(o, 'metadata', 'annotations', k));
  return a('storageclass.kubernetes.io/is-default-class') === 'true' || a('storageclass.beta.kubernetes.io/is-default-class') === 'true';
}

export const storageClassPrinter: Printer = {
  columns: [
    { ...nameColumn, cell: (o) => str(at(o, 'metadata', 'name')) + (isDefaultClass(o) ? ' (default)' : '') },
    col('Provisioner', 'string', (o) => str(at(o, 'provisioner'))),
    col('ReclaimPolicy', 'string', (o) => str(at(o, 'reclaimPolicy'), 'Delete')),
    col('VolumeBindingMode', 'string', (o) => str(at(o, 'volumeBindingMode'), 'Immediate')),
    col('AllowVolumeExpansion', 'string', (o) => String(at(o, 'allowVolumeExpansion') === true)),
    ageColumn,
  ],
};

export const volumeAttachmentPrinter: Printer = {
  columns: [
    nameColumn,
    col('Attacher', 'string', (o) => str(at(o, 'spec', 'attacher'))),
    col('PV', 'string', (o) => str(at(o, 'spec', 'source', 'persistentVolumeName'))),
    col('Node', 'string', (o) => str(at(o, 'spec', 'nodeName'))),
    col('Attached', 'boolean', (o) => at(o, 'status', 'attached') === true),
    ageColumn,
  ],
};

function subjects(o: K8sObject, kind: string): string {
  return list(at(o, 'subjects'))
    .filter((s) => str(at(s, 'kind')) === kind)
    .map((s) => (kind === 'ServiceAccount' ? `${str(at(s, 'namespace'))}:${str(at(s, 'name'))}` : str(at(s, 'name'))))
    .join(', ');
}

export const roleBindingPrinter: Printer = {
  columns: [
    nameColumn,
    col('Role', 'string', (o) => `${str(at(o, 'roleRef', 'kind'))}/${str(at(o, 'roleRef', 'name'))}`),
    ageColumn,
    wide('Users', (o) => subjects(o, 'User')),
    wide('Groups', (o) => subjects(o, 'Group')),
    wide('ServiceAccounts', (o) => subjects(o, 'ServiceAccount')),
  ],
};

function intOrString(v: unknown): string {
  return v === undefined || v === null ? 'N/A' : str(v);
}

export const podDisruptionBudgetPrinter: Printer = {
  columns: [
    nameColumn,
    col('Min Available', 'string', (o) => intOrString(at(o, 'spec', 'minAvailable'))),
    col('Max Unavailable', 'string', (o) => intOrString(at(o, 'spec', 'maxUnavailable'))),
    col('Allowed Disruptions', 'integer', (o) => int(at(o, 'status', 'disruptionsAllowed'))),
    ageColumn,
  ],
};

export const leasePrinter: Printer = {
  columns: [nameColumn, col('Holder', 'string', (o) => str(at(o, 'spec', 'holderIdentity'))), ageColumn],
};

export const priorityClassPrinter: Printer = {
  columns: [
    nameColumn,
    col('Value', 'integer', (o) => int(at(o, 'value'))),
    col('Global-Default', 'boolean', (o) => at(o, 'globalDefault') === true),
    col('PreemptionPolicy', 'string', (o) => str(at(o, 'preemptionPolicy'), 'PreemptLowerPriority')),
    ageColumn,
  ],
};

function sliceEndpoints(o: K8sObject): string {
  const addresses = list(at(o, 'endpoints')).flatMap((e) => list(at(e, 'addresses')).map((a) => str(a)));
  if (addresses.length === 0) return '<unset>';
  return addresses.length > 3 ? `${addresses.slice(0, 3).join(',')} + ${addresses.length - 3} more...` : addresses.join(',');
}

export const endpointSlicePrinter: Printer = {
  columns: [
    nameColumn,
    col('AddressType', 'string', (o) => str(at(o, 'addressType'))),
    col('Ports', 'string', (o) => {
      const ports = list(at(o, 'ports')).map((p) => str(at(p, 'port')) || '<unset>');
      return ports.length === 0 ? '<unset>' : ports.join(',');
    }),
    col('Endpoints', 'string', sliceEndpoints),
    ageColumn,
  ],
};
