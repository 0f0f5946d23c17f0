/**
 * Typed access to untrusted JSON. Bundle files come from many Kubernetes and troubleshoot
 * versions, so any field may be missing or of another type: every read goes through these
 * helpers, which never throw and fall back to an empty value.
 */

/** One Kubernetes object as read from a bundle (a Pod, a Deployment, a custom resource...). */
export type K8sObject = Record<string, unknown>;

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `at(pod, 'status', 'containerStatuses', 0)`: the value at a path, or undefined. */
export function at(v: unknown, ...path: (string | number)[]): unknown {
  let cur = v;
  for (const key of path) {
    if (typeof key === 'number') cur = Array.isArray(cur) ? cur[key] : undefined;
    else cur = isRecord(cur) ? cur[key] : undefined;
    if (cur === undefined) return undefined;
  }
  return cur;
}

export function str(v: unknown, fallback = ''): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return fallback;
}

export function num(v: unknown, fallback = 0): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : fallback;
}

export function list(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

export function rec(v: unknown): Record<string, unknown> {
  return isRecord(v) ? v : {};
}

/** A string-valued map such as labels or a service selector; non-string values are dropped. */
export function stringMap(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(rec(v))) if (typeof val === 'string') out[k] = val;
  return out;
}

export function nameOf(o: unknown): string {
  return str(at(o, 'metadata', 'name'));
}

export function namespaceOf(o: unknown): string {
  return str(at(o, 'metadata', 'namespace'));
}

/** Milliseconds since the epoch of an RFC 3339 timestamp, or undefined when absent or invalid. */
export function timeOf(v: unknown): number | undefined {
  if (typeof v !== 'string' || v === '') return undefined;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : t;
}
