/**
 * Scopes: `<toolset>:read` (tools that only look), `<toolset>` (full use, implies `:read`), and
 * capability scopes for what reaches outside a debug session (`gdb:shell`, `gdb:attach`,
 * `python:attach`, `bundles:download`, `mocks:run`, `debugger:attach`). `*` is every scope, `<toolset>:*` every
 * scope of one toolset. A call needs all the scopes `requiredScopes` names and those its
 * toolset reads from its arguments.
 */
import { toolsetFactories } from '../toolsets/index.js';

/** Every scope a key may be given, for help texts and validation: from the toolsets' definitions (their names and capabilities). */
export function knownScopes(): string[] {
  return ['*', ...toolsetFactories.flatMap((t) => [t.name, `${t.name}:read`, `${t.name}:*`]), ...toolsetFactories.flatMap((t) => t.capabilities ?? [])];
}

/** Parses "gdb,python:read" into a sorted, de-duplicated list; throws naming the bad scope. */
export function parseScopes(text: string): string[] {
  const scopes = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (scopes.length === 0) throw new Error(`no scopes given: valid scopes are ${knownScopes().join(', ')}`);
  const valid = new Set(knownScopes());
  for (const scope of scopes) {
    if (!valid.has(scope)) throw new Error(`unknown scope "${scope}": valid scopes are ${knownScopes().join(', ')}`);
  }
  return [...new Set(scopes)].sort();
}

/** True when the granted scopes cover `needed`. */
export function hasScope(granted: readonly string[], needed: string): boolean {
  if (granted.includes('*') || granted.includes(needed)) return true;
  const [toolset, capability] = needed.split(':');
  if (granted.includes(`${toolset}:*`)) return true;
  // The full toolset scope covers its read scope, never a capability scope.
  return capability === 'read' && granted.includes(toolset!);
}

/** What the control plane knows about one tool, gathered when toolsets register. */
export interface ToolInfo {
  name: string;
  toolset: string;
  readOnly: boolean;
  /** Capability scopes every call of the tool needs (its spec's `scopes.always`). */
  scopes: readonly string[];
}

/**
 * The scopes any call of a tool needs: its base scope (`<toolset>:read` for read-only tools,
 * `<toolset>` otherwise) and the capability scopes its spec always needs. What a call's arguments
 * reach for (a gdb command that leaves the debugger, a URL to download) is read by the toolset
 * that understands them and asked of the control plane per call (ControlPlane.authorizeScopes):
 * nothing here parses a toolset's syntax.
 */
export function requiredScopes(tool: ToolInfo): string[] {
  return [tool.readOnly ? `${tool.toolset}:read` : tool.toolset, ...tool.scopes];
}
