/**
 * Kubernetes API paths, parsed into what they ask for:
 *   /api/v1/{plural}[/{name}[/{sub}]]
 *   /api/v1/namespaces/{ns}/{plural}[/{name}[/{sub}]]
 *   /apis/{group}/{version}/... the same, with an optional /watch/ prefix after the version.
 */
export interface ResourceRoute {
  kind: 'resource';
  group: string;
  version: string;
  plural: string;
  namespace?: string;
  name?: string;
  subresource?: string;
  watch: boolean;
}

export type Route =
  | { kind: 'root' }
  | { kind: 'version' }
  | { kind: 'health' }
  | { kind: 'openapi' }
  | { kind: 'api' }
  | { kind: 'apis' }
  | { kind: 'group'; group: string }
  | { kind: 'groupVersion'; group: string; version: string }
  | ResourceRoute
  | { kind: 'unknown' };

function segments(pathname: string): string[] | undefined {
  try {
    const parts = pathname
      .split('/')
      .filter((s) => s !== '')
      .map(decodeURIComponent);
    // A decoded segment must still be one segment: no "a%2Fb", no "." or "..".
    return parts.some((p) => p.includes('/') || p === '.' || p === '..') ? undefined : parts;
  } catch {
    return undefined;
  }
}

function resourceRoute(group: string, version: string, rest: string[]): Route {
  if (rest.length === 0) return { kind: 'groupVersion', group, version };
  let watch = false;
  if (rest[0] === 'watch') {
    watch = true;
    rest = rest.slice(1);
  }
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    // /api/v1/namespaces/{name}/status is the namespace's own subresource, not a kind in it.
    const own = group === '' && rest.length === 3 && (rest[2] === 'status' || rest[2] === 'finalize');
    if (!own) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
  }
  const [plural, name, subresource, ...extra] = rest;
  if (!plural || extra.length > 0) return { kind: 'unknown' };
  return { kind: 'resource', group, version, plural, namespace, name, subresource, watch };
}

export function route(pathname: string): Route {
  const s = segments(pathname);
  if (!s) return { kind: 'unknown' };
  const [first, second, third] = s;
  if (s.length === 0) return { kind: 'root' };
  if (first === 'version' && s.length === 1) return { kind: 'version' };
  if (first === 'healthz' || first === 'livez' || first === 'readyz') return { kind: 'health' };
  if (first === 'openapi' || first === 'swagger.json' || first === 'swaggerapi') return { kind: 'openapi' };
  if (first === 'api') {
    if (s.length === 1) return { kind: 'api' };
    return resourceRoute('', second!, s.slice(2));
  }
  if (first === 'apis') {
    if (s.length === 1) return { kind: 'apis' };
    if (s.length === 2) return { kind: 'group', group: second! };
    return resourceRoute(second!, third!, s.slice(3));
  }
  return { kind: 'unknown' };
}
