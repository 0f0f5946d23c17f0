import { at, list, str, type K8sObject } from './json.js';
import type { PrinterColumn, ResourceType } from './resources.js';

/**
 * Most custom resource types (a CRD's served versions) a bundle's server offers. A real cluster has hundreds; 200,000 CRDs
 * made every discovery request rework 200,000 types on the event loop (1.6 s and a 29.7 MB answer for /apis), and no
 * kubectl command finished (attack 18an Z4). The CRDs past it are left out, and discovery and the CRD listing say so.
 */
export const MAX_CUSTOM_TYPES = 5_000;

/**
 * Resource types for custom resources, read from the bundle's CRD objects: those of the first CRDs (in the listing's
 * order) whose types fit in `max`; `leftOut` counts the CRDs after them. troubleshoot stores each CRD's objects under
 * `custom-resources/<plural>.<group>/<ns>.json|yaml` (namespaced) or `custom-resources/<plural>.<group>.json|yaml`
 * (cluster-scoped).
 */
export function customResourceTypes(crds: readonly K8sObject[], max = MAX_CUSTOM_TYPES): { types: ResourceType[]; leftOut: number } {
  const types: ResourceType[] = [];
  for (let i = 0; i < crds.length; i++) {
    const crd = crds[i];
    const group = str(at(crd, 'spec', 'group'));
    const plural = str(at(crd, 'spec', 'names', 'plural'));
    const kind = str(at(crd, 'spec', 'names', 'kind'));
    if (!group || !plural || !kind) continue;
    const base = `custom-resources/${plural}.${group}`;
    const namespaced = str(at(crd, 'spec', 'scope'), 'Namespaced') !== 'Cluster';
    const versions = servedVersions(crd);
    if (types.length + versions.length > max) return { types, leftOut: crds.length - i };
    for (const v of versions) {
      types.push({
        group,
        version: v.name,
        kind,
        plural,
        singular: str(at(crd, 'spec', 'names', 'singular')) || kind.toLowerCase(),
        namespaced,
        shortNames: list(at(crd, 'spec', 'names', 'shortNames'))
          .map((s) => str(s))
          .filter(Boolean),
        categories: list(at(crd, 'spec', 'names', 'categories'))
          .map((s) => str(s))
          .filter(Boolean),
        // A cluster-scoped kind is one file; a directory is accepted too in case a bundle nests it.
        sources: namespaced ? [{ dir: base }] : [{ file: base }, { dir: base }],
        printerColumns: v.columns,
      });
    }
  }
  return { types, leftOut: 0 };
}

interface CrdVersion {
  name: string;
  columns: PrinterColumn[];
}

/** apiextensions v1 keeps versions and columns per version; v1beta1 had one `spec.version` and top-level columns. */
function servedVersions(crd: K8sObject): CrdVersion[] {
  const topColumns = list(at(crd, 'spec', 'additionalPrinterColumns'));
  const versions = list(at(crd, 'spec', 'versions'));
  if (versions.length === 0) {
    const name = str(at(crd, 'spec', 'version'));
    return name ? [{ name, columns: printerColumns(topColumns) }] : [];
  }
  return versions
    .filter((v) => at(v, 'served') !== false)
    .map((v) => {
      const own = list(at(v, 'additionalPrinterColumns'));
      return { name: str(at(v, 'name')), columns: printerColumns(own.length > 0 ? own : topColumns) };
    })
    .filter((v) => v.name !== '');
}

function printerColumns(raw: unknown[]): PrinterColumn[] {
  return raw
    .map((c) => ({
      name: str(at(c, 'name')),
      type: str(at(c, 'type'), 'string'),
      format: str(at(c, 'format')) || undefined,
      description: str(at(c, 'description')) || undefined,
      priority: typeof at(c, 'priority') === 'number' ? (at(c, 'priority') as number) : 0,
      // v1 spells it jsonPath, v1beta1 JSONPath.
      jsonPath: str(at(c, 'jsonPath')) || str(at(c, 'JSONPath')),
    }))
    .filter((c) => c.name !== '' && c.jsonPath !== '');
}

/**
 * Kubernetes' version priority (v1 > v1beta2 > v1beta1 > v1alpha1 > anything else), used to
 * pick a group's preferred version as the real discovery does.
 */
export function compareVersions(a: string, b: string): number {
  return versionRank(b) - versionRank(a) || (a < b ? -1 : a > b ? 1 : 0);
}

function versionRank(v: string): number {
  const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
  if (!m) return -1;
  const major = Number(m[1]);
  const stage = m[2] === undefined ? 2 : m[2] === 'beta' ? 1 : 0;
  const minor = m[3] === undefined ? 0 : Number(m[3]);
  return stage * 1e8 + major * 1e4 + minor;
}
