import type { ServerHooks } from '../server/createServer.js';
import type { ToolCatalogEntry } from '../server/createServer.js';
import { localControl, type DebuggerControl } from '../toolsets/debugger/control.js';
import type { ControlPlane } from './plane.js';

/** The control plane of a stdio server, opened after start: its hooks, the debugger's control, and the opening. */
export interface DeferredControl {
  hooks: ServerHooks;
  debugger: DebuggerControl;
  /**
   * Opens the control plane (the first call starts it; later calls share it): the plane, or
   * undefined when `open` gave none (stdio then serves the local user without an audit).
   */
  ready(): Promise<ControlPlane | undefined>;
}

/**
 * The stdio server's control plane, opened only when first needed (or when the caller kicks it
 * off once the server answers), so opening the store (SQLite: a native module, the schema, the
 * audit key) is not on the way to the first `tools/list`. Nothing goes unaudited: every hook that
 * admits, records or ends a tool call waits for the plane first, so the audit is ready before the
 * first call is admitted, and a call never runs before its audit entry is written.
 *
 * For stdio only, where the principal is always the local user (every scope): until the plane is
 * open, `authorize` (which tools are registered, so listed) answers as the plane answers the local
 * user, yes. The HTTP-only hooks (authenticate, overRate, admitRequest, admitRoute, sessions, listening)
 * are not given: the HTTP server opens its store before it listens.
 */
export function deferredControl(open: () => Promise<ControlPlane | undefined>, dataDir: string): DeferredControl {
  let opening: Promise<ControlPlane | undefined> | undefined;
  let hooks: ServerHooks | undefined;
  let catalog: ToolCatalogEntry[] | undefined;
  let debuggerControl: DebuggerControl | undefined;
  const ready = (): Promise<ControlPlane | undefined> => {
    opening ??= open().then(async (plane) => {
      if (plane) {
        // The plane's seams load with it, not at start.
        const [{ controlHooks }, { planeControl }] = await Promise.all([import('./hooks.js'), import('./debugger.js')]);
        hooks = controlHooks(plane);
        if (catalog) hooks.catalog?.(catalog);
        debuggerControl = planeControl(plane);
      } else {
        debuggerControl = localControl(dataDir);
      }
      return plane;
    });
    return opening;
  };
  const opened = async (): Promise<ServerHooks | undefined> => {
    await ready();
    return hooks;
  };
  const control = async (): Promise<DebuggerControl> => {
    await ready();
    return debuggerControl!;
  };
  return {
    ready,
    hooks: {
      authorize: (principal, tool) => (hooks?.authorize ? hooks.authorize(principal, tool) : true),
      catalog(tools) {
        catalog = tools;
        hooks?.catalog?.(tools);
      },
      async authorizeCall(principal, call, scopes) {
        const h = await opened();
        return h?.authorizeCall ? h.authorizeCall(principal, call, scopes) : true;
      },
      async beforeToolCall(start, principal) {
        const h = await opened();
        return h?.beforeToolCall?.(start, principal);
      },
      async onToolCall(event, principal) {
        const h = await opened();
        await h?.onToolCall?.(event, principal);
      },
      async close() {
        // Never opened: nothing to close (and nothing is opened only to be closed).
        if (!opening) return;
        const plane = await opening.catch(() => undefined);
        await plane?.close();
      },
    },
    debugger: {
      quota: async (caller) => (await control()).quota(caller),
      license: async (caller) => (await control()).license(caller),
      audit: async (caller, query) => (await control()).audit(caller, query),
      signatures: {
        add: async (key, sig) => (await control()).signatures.add(key, sig),
        list: async (key) => (await control()).signatures.list(key),
      },
    },
  };
}
