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
 *
 * A registry never changes: the held types are indexed by group/version and group/plural once,
 * and the groups worked out once, not filtered from every type on each request (attack 18an Z4).
 */
export class Registry {
  private readonly byPath = new Map<string, ResourceType>();
  /** Held types by group/version, in the held order. */
  private readonly byGroupVersion = new Map<string, ResourceType[]>();
  /** The held type of each group/plural's preferred version. */
  private readonly preferredOf = new Map<string, ResourceType>();
  private groupList?: GroupInfo[];
  private groupByName?: Map<string, GroupInfo>;

  constructor(
    all: ResourceType[],
    private readonly held: ResourceType[],
    /** Said with discovery and the CRD listing when the bundle had more CRDs than are served (crds.ts MAX_CUSTOM_TYPES). */
    readonly notice?: string,
  ) {
    for (const t of all) {
      const key = Registry.key(t.group, t.version, t.plural);
      // Built-ins come first and win over a CRD that claims the same path.
      if (!this.byPath.has(key)) this.byPath.set(key, t);
    }
    for (const t of held) {
      const gv = `${t.group}/${t.version}`;
      const served = this.byGroupVersion.get(gv);
      if (served) served.push(t);
      else this.byGroupVersion.set(gv, [t]);
      const gp = `${t.group}/${t.plural}`;
      const best = this.preferredOf.get(gp);
      // The first of the highest version priority, as a stable sort by it would put first.
      if (!best || compareVersions(t.version, best.version) < 0) this.preferredOf.set(gp, t);
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
    return this.preferredOf.get(`${group}/${plural}`);
  }

  /** Types discovery lists for one group/version. */
  served(group: string, version: string): readonly ResourceType[] {
    return this.byGroupVersion.get(`${group}/${version}`) ?? [];
  }

  hasGroupVersion(group: string, version: string): boolean {
    return this.byGroupVersion.has(`${group}/${version}`);
  }

  /** Named API groups (everything but the core group), each with its preferred version first. */
  groups(): readonly GroupInfo[] {
    if (this.groupList) return this.groupList;
    const versions = new Map<string, Set<string>>();
    for (const t of this.held) {
      if (t.group === '') continue;
      if (!versions.has(t.group)) versions.set(t.group, new Set());
      versions.get(t.group)!.add(t.version);
    }
    this.groupList = [...versions.entries()].map(([name, set]) => {
      const sorted = [...set].sort(compareVersions);
      return { name, versions: sorted, preferred: sorted[0]! };
    });
    return this.groupList;
  }

  /** One named API group, or undefined when no held type is in it. */
  group(name: string): GroupInfo | undefined {
    this.groupByName ??= new Map(this.groups().map((g) => [g.name, g]));
    return this.groupByName.get(name);
  }
}
