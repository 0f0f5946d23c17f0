import type { ResourceType } from '../resources.js';
import type { Printer } from '../table.js';
import { createdAtPrinter, genericPrinter } from './common.js';
import {
  configMapPrinter,
  endpointsPrinter,
  eventPrinter,
  limitRangePrinter,
  namespacePrinter,
  nodePrinter,
  persistentVolumeClaimPrinter,
  persistentVolumePrinter,
  resourceQuotaPrinter,
  secretPrinter,
  serviceAccountPrinter,
  servicePrinter,
} from './core.js';
import { customResourcePrinter } from './custom.js';
import {
  endpointSlicePrinter,
  ingressClassPrinter,
  ingressPrinter,
  leasePrinter,
  networkPolicyPrinter,
  podDisruptionBudgetPrinter,
  priorityClassPrinter,
  roleBindingPrinter,
  storageClassPrinter,
  volumeAttachmentPrinter,
} from './other.js';
import { podPrinter } from './pods.js';
import { cronJobPrinter, daemonSetPrinter, deploymentPrinter, jobPrinter, replicaSetPrinter, replicationControllerPrinter, statefulSetPrinter } from './workloads.js';

/** Keyed by `group/plural` (core group empty), matching the built-in resource table. */
const PRINTERS: Record<string, Printer> = {
  '/pods': podPrinter,
  '/services': servicePrinter,
  '/endpoints': endpointsPrinter,
  '/configmaps': configMapPrinter,
  '/secrets': secretPrinter,
  '/serviceaccounts': serviceAccountPrinter,
  '/events': eventPrinter,
  '/namespaces': namespacePrinter,
  '/nodes': nodePrinter,
  '/persistentvolumes': persistentVolumePrinter,
  '/persistentvolumeclaims': persistentVolumeClaimPrinter,
  '/limitranges': limitRangePrinter,
  '/resourcequotas': resourceQuotaPrinter,
  '/replicationcontrollers': replicationControllerPrinter,
  'apps/deployments': deploymentPrinter,
  'apps/replicasets': replicaSetPrinter,
  'apps/statefulsets': statefulSetPrinter,
  'apps/daemonsets': daemonSetPrinter,
  'batch/jobs': jobPrinter,
  'batch/cronjobs': cronJobPrinter,
  'networking.k8s.io/ingresses': ingressPrinter,
  'networking.k8s.io/ingressclasses': ingressClassPrinter,
  'networking.k8s.io/networkpolicies': networkPolicyPrinter,
  'rbac.authorization.k8s.io/roles': createdAtPrinter,
  'rbac.authorization.k8s.io/clusterroles': createdAtPrinter,
  'rbac.authorization.k8s.io/rolebindings': roleBindingPrinter,
  'rbac.authorization.k8s.io/clusterrolebindings': roleBindingPrinter,
  'storage.k8s.io/storageclasses': storageClassPrinter,
  'storage.k8s.io/volumeattachments': volumeAttachmentPrinter,
  'apiextensions.k8s.io/customresourcedefinitions': createdAtPrinter,
  'policy/poddisruptionbudgets': podDisruptionBudgetPrinter,
  'coordination.k8s.io/leases': leasePrinter,
  'discovery.k8s.io/endpointslices': endpointSlicePrinter,
  'scheduling.k8s.io/priorityclasses': priorityClassPrinter,
};

/** The columns for a resource type: its kubectl printer, its CRD's columns, or NAME AGE. */
export function printerFor(t: ResourceType): Printer {
  if (t.printerColumns !== undefined) return customResourcePrinter(t.printerColumns);
  return PRINTERS[`${t.group}/${t.plural}`] ?? genericPrinter;
}
