import type { Registry } from './registry.js';
import type { ResourceType } from './resources.js';

/**
 * Discovery documents in their plain (non-aggregated) form. kubectl first asks for the
 * aggregated `apidiscovery.k8s.io` form; a plain `application/json` answer makes client-go fall
 * back to /api, /apis and one request per group/version, which is all a bundle needs.
 */

/** Read-only: the bundle is a snapshot, so only get and list are offered. */
const VERBS = ['get', 'list'];

export function apiVersions(serverAddress: string): Record<string, unknown> {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

function groupDocument(name: string, versions: string[], preferred: string): Record<string, unknown> {
  const gv = (v: string) => ({ groupVersion: `${name}/${v}`, version: v });
  return { name, versions: versions.map(gv), preferredVersion: gv(preferred) };
}

export function apiGroupList(registry: Registry): Record<string, unknown> {
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: registry.groups().map((g) => groupDocument(g.name, g.versions, g.preferred)),
  };
}

export function apiGroup(registry: Registry, name: string): Record<string, unknown> | undefined {
  const g = registry.group(name);
  return g && { kind: 'APIGroup', apiVersion: 'v1', ...groupDocument(g.name, g.versions, g.preferred) };
}

function apiResource(t: ResourceType): Record<string, unknown> {
  return {
    name: t.plural,
    singularName: t.singular,
    namespaced: t.namespaced,
    kind: t.kind,
    verbs: VERBS,
    ...(t.shortNames.length > 0 ? { shortNames: t.shortNames } : {}),
    ...(t.categories.length > 0 ? { categories: t.categories } : {}),
  };
}

/** The subresources this server answers, listed so clients know they exist. */
function subresources(t: ResourceType): Record<string, unknown>[] {
  if (t.group !== '' || t.plural !== 'pods') return [];
  return [{ name: 'pods/log', singularName: '', namespaced: true, kind: 'Pod', verbs: ['get'] }];
}

export function apiResourceList(registry: Registry, group: string, version: string): Record<string, unknown> | undefined {
  if (!registry.hasGroupVersion(group, version)) return undefined;
  const types = registry.served(group, version);
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: group === '' ? version : `${group}/${version}`,
    resources: types.flatMap((t) => [apiResource(t), ...subresources(t)]),
  };
}

/**
 * The discovery answers of one bundle's server, each serialized once and kept: the registry never changes, and made per
 * request, /apis of 200,000 CRDs held the loop 1.6 s a request (attack 18an Z4). A group or group/version that does not
 * exist is undefined (not kept: any path can be asked for).
 */
export class Discovery {
  private groupListText?: Buffer;
  private readonly groupTexts = new Map<string, Buffer>();
  private readonly resourceListTexts = new Map<string, Buffer>();

  constructor(private readonly registry: Registry) {}

  /** /apis. */
  groupList(): Buffer {
    return (this.groupListText ??= text(apiGroupList(this.registry)));
  }

  /** /apis/NAME. */
  group(name: string): Buffer | undefined {
    return kept(this.groupTexts, name, () => apiGroup(this.registry, name));
  }

  /** /api/VERSION or /apis/GROUP/VERSION. */
  resourceList(group: string, version: string): Buffer | undefined {
    return kept(this.resourceListTexts, `${group}/${version}`, () => apiResourceList(this.registry, group, version));
  }
}

function text(doc: unknown): Buffer {
  return Buffer.from(JSON.stringify(doc));
}

function kept(texts: Map<string, Buffer>, key: string, make: () => Record<string, unknown> | undefined): Buffer | undefined {
  const known = texts.get(key);
  if (known) return known;
  const doc = make();
  if (doc === undefined) return undefined;
  const made = text(doc);
  texts.set(key, made);
  return made;
}
