import { compareVersions } from './crds.js';
import type { ResourceType } from './resources.js';

export interface GroupInfo {
  name: string;
  versions: string[];
  preferred: string;
}

/**
 * Every resource type this server knows, and which of them the bundle actually holds.
 * Discovery advertises only the held ones, so `kubectl get secrets` on a bundle without
 * secrets says the server has no such type instead of a misleading "No resources found".
 * Direct paths still answer for every known type (with an empty list when not collected),
 * because `kubectl describe` fetches related kinds (endpoint slices, leases, quotas)
 * without consulting discovery and should not fail over a kind the bundle lacks.
 */
export class Registry {
  private readonly byPath = new Map<string, ResourceType>();

  constructor(
    all: ResourceType[],
    private readonly held: ResourceType[],
  ) {
    for (const t of all) {
      const key = Registry.key(t.group, t.version, t.plural);
      // Built-ins come first and win over a CRD that claims the same path.
      if (!this.byPath.has(key)) this.byPath.set(key, t);
    }
  }

  private static key(group: string, version: string, plural: string): string {
    return `${group}/${version}/${plural}`;
  }

  find(group: string, version: string, plural: string): ResourceType | undefined {
    return this.byPath.get(Registry.key(group, version, plural));
  }

  /** The held type of a kind's preferred version, e.g. for "pods" in group "". */
  preferred(group: string, plural: string): ResourceType | undefined {
    const candidates = this.held.filter((t) => t.group === group && t.plural === plural);
    return candidates.sort((a, b) => compareVersions(a.version, b.version))[0];
  }

  /** Types discovery lists for one group/version. */
  served(group: string, version: string): ResourceType[] {
    return this.held.filter((t) => t.group === group && t.version === version);
  }

  hasGroupVersion(group: string, version: string): boolean {
    return this.held.some((t) => t.group === group && t.version === version);
  }

  /** Named API groups (everything but the core group), each with its preferred version first. */
  groups(): GroupInfo[] {
    const versions = new Map<string, Set<string>>();
    for (const t of this.held) {
      if (t.group === '') continue;
      if (!versions.has(t.group)) versions.set(t.group, new Set());
      versions.get(t.group)!.add(t.version);
    }
    return [...versions.entries()].map(([name, set]) => {
      const sorted = [...set].sort(compareVersions);
      return { name, versions: sorted, preferred: sorted[0]! };
    });
  }
}
