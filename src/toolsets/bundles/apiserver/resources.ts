/**
 * The resource table: which Kubernetes resource each part of a troubleshoot bundle holds.
 * Paths are relative to `cluster-resources/`, as troubleshoot's cluster-resources collector
 * writes them (pkg/constants in replicatedhq/troubleshoot), including older spellings.
 */

/**
 * Where a resource's objects live. `dir`: one file per namespace (`<dir>/<ns>.json` or
 * `.yaml`). `file`: one file for the whole cluster (`<file>.json` or `.yaml`).
 */
export type Source = { dir: string } | { file: string };

export interface PrinterColumn {
  name: string;
  type: string;
  format?: string;
  description?: string;
  priority?: number;
  jsonPath: string;
}

export interface ResourceType {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular: string;
  namespaced: boolean;
  shortNames: string[];
  categories: string[];
  sources: Source[];
  /** Only for custom resources: the CRD version's additionalPrinterColumns. */
  printerColumns?: PrinterColumn[];
}

export function groupVersion(t: { group: string; version: string }): string {
  return t.group === '' ? t.version : `${t.group}/${t.version}`;
}

interface Builtin {
  gv: string;
  kind: string;
  plural: string;
  cluster?: boolean;
  short?: string[];
  all?: boolean;
  sources: Source[];
}

// Group/versions are the current stable ones: old bundles store e.g. batch/v1beta1 CronJobs
// and policy/v1beta1 PDBs, which are served here as batch/v1 and policy/v1 (same shape for
// everything kubectl prints), because current kubectl only asks for the stable versions.
const BUILTINS: Builtin[] = [
  { gv: 'v1', kind: 'Pod', plural: 'pods', short: ['po'], all: true, sources: [{ dir: 'pods' }] },
  { gv: 'v1', kind: 'Service', plural: 'services', short: ['svc'], all: true, sources: [{ dir: 'services' }] },
  { gv: 'v1', kind: 'Endpoints', plural: 'endpoints', short: ['ep'], sources: [{ dir: 'endpoints' }] },
  { gv: 'v1', kind: 'ConfigMap', plural: 'configmaps', short: ['cm'], sources: [{ dir: 'configmaps' }] },
  { gv: 'v1', kind: 'Secret', plural: 'secrets', sources: [{ dir: 'secrets' }] },
  { gv: 'v1', kind: 'ServiceAccount', plural: 'serviceaccounts', short: ['sa'], sources: [{ dir: 'serviceaccounts' }] },
  { gv: 'v1', kind: 'Event', plural: 'events', short: ['ev'], sources: [{ dir: 'events' }] },
  { gv: 'v1', kind: 'Namespace', plural: 'namespaces', cluster: true, short: ['ns'], sources: [{ file: 'namespaces' }] },
  { gv: 'v1', kind: 'Node', plural: 'nodes', cluster: true, short: ['no'], sources: [{ file: 'nodes' }] },
  { gv: 'v1', kind: 'PersistentVolume', plural: 'persistentvolumes', cluster: true, short: ['pv'], sources: [{ file: 'pvs' }] },
  { gv: 'v1', kind: 'PersistentVolumeClaim', plural: 'persistentvolumeclaims', short: ['pvc'], sources: [{ dir: 'pvcs' }] },
  { gv: 'v1', kind: 'LimitRange', plural: 'limitranges', short: ['limits'], sources: [{ dir: 'limitranges' }] },
  {
    gv: 'v1',
    kind: 'ResourceQuota',
    plural: 'resourcequotas',
    short: ['quota'],
    sources: [{ dir: 'resource-quota' }, { dir: 'resource-quotas' }],
  },
  {
    gv: 'v1',
    kind: 'ReplicationController',
    plural: 'replicationcontrollers',
    short: ['rc'],
    all: true,
    sources: [{ dir: 'replicationcontrollers' }],
  },
  { gv: 'apps/v1', kind: 'Deployment', plural: 'deployments', short: ['deploy'], all: true, sources: [{ dir: 'deployments' }] },
  // troubleshoot 0.118 writes ReplicaSets into a directory misnamed `statefulsets-errors.json`;
  // files there are only used when their list kind says ReplicaSetList (see bundle.ts).
  {
    gv: 'apps/v1',
    kind: 'ReplicaSet',
    plural: 'replicasets',
    short: ['rs'],
    all: true,
    sources: [{ dir: 'replicasets' }, { dir: 'statefulsets-errors.json' }],
  },
  { gv: 'apps/v1', kind: 'StatefulSet', plural: 'statefulsets', short: ['sts'], all: true, sources: [{ dir: 'statefulsets' }] },
  { gv: 'apps/v1', kind: 'DaemonSet', plural: 'daemonsets', short: ['ds'], all: true, sources: [{ dir: 'daemonsets' }] },
  { gv: 'batch/v1', kind: 'Job', plural: 'jobs', all: true, sources: [{ dir: 'jobs' }] },
  { gv: 'batch/v1', kind: 'CronJob', plural: 'cronjobs', short: ['cj'], all: true, sources: [{ dir: 'cronjobs' }] },
  { gv: 'networking.k8s.io/v1', kind: 'Ingress', plural: 'ingresses', short: ['ing'], sources: [{ dir: 'ingress' }] },
  {
    gv: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    plural: 'networkpolicies',
    short: ['netpol'],
    sources: [{ dir: 'network-policy' }],
  },
  {
    gv: 'networking.k8s.io/v1',
    kind: 'IngressClass',
    plural: 'ingressclasses',
    cluster: true,
    sources: [{ file: 'ingressclasses' }, { file: 'ingress-classes' }],
  },
  { gv: 'rbac.authorization.k8s.io/v1', kind: 'Role', plural: 'roles', sources: [{ dir: 'roles' }] },
  { gv: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', plural: 'rolebindings', sources: [{ dir: 'rolebindings' }] },
  { gv: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', plural: 'clusterroles', cluster: true, sources: [{ file: 'clusterroles' }] },
  {
    gv: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    plural: 'clusterrolebindings',
    cluster: true,
    // Older troubleshoot versions wrote the camel-cased name.
    sources: [{ file: 'clusterrolebindings' }, { file: 'clusterRoleBindings' }],
  },
  {
    gv: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    plural: 'storageclasses',
    cluster: true,
    short: ['sc'],
    sources: [{ file: 'storage-classes' }],
  },
  { gv: 'storage.k8s.io/v1', kind: 'VolumeAttachment', plural: 'volumeattachments', cluster: true, sources: [{ file: 'volumeattachments' }] },
  {
    gv: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    plural: 'customresourcedefinitions',
    cluster: true,
    short: ['crd', 'crds'],
    sources: [{ file: 'custom-resource-definitions' }],
  },
  {
    gv: 'policy/v1',
    kind: 'PodDisruptionBudget',
    plural: 'poddisruptionbudgets',
    short: ['pdb'],
    sources: [{ dir: 'pod-disruption-budgets' }],
  },
  { gv: 'coordination.k8s.io/v1', kind: 'Lease', plural: 'leases', sources: [{ dir: 'leases' }] },
  { gv: 'discovery.k8s.io/v1', kind: 'EndpointSlice', plural: 'endpointslices', sources: [{ dir: 'endpointslices' }] },
  {
    gv: 'scheduling.k8s.io/v1',
    kind: 'PriorityClass',
    plural: 'priorityclasses',
    cluster: true,
    short: ['pc'],
    sources: [{ file: 'priorityclasses' }],
  },
];

export function builtinTypes(): ResourceType[] {
  return BUILTINS.map((b) => {
    const slash = b.gv.indexOf('/');
    return {
      group: slash < 0 ? '' : b.gv.slice(0, slash),
      version: slash < 0 ? b.gv : b.gv.slice(slash + 1),
      kind: b.kind,
      plural: b.plural,
      singular: b.kind.toLowerCase(),
      namespaced: !b.cluster,
      shortNames: b.short ?? [],
      categories: b.all ? ['all'] : [],
      sources: b.sources,
    };
  });
}
