import type { ToolInfo } from './scopes.js';

/** The part of an MCP server this module touches: registerTool, returning something disable-able. */
interface Registrar {
  registerTool(name: string, config: { annotations?: { readOnlyHint?: boolean } }, ...rest: unknown[]): { disable(): void };
}

/**
 * Watches the tools a toolset registers on `server`: reports each (name, toolset, read-only) and
 * disables those `hide` says the caller may not see (disabled tools are not listed).
 */
export function watchRegistrations<S>(server: S, toolset: string, onTool: (info: ToolInfo) => void, hide?: (info: ToolInfo) => boolean): () => void {
  const target = server as unknown as Registrar;
  const original = target.registerTool;
  target.registerTool = function (this: Registrar, name, config, ...rest) {
    const registered = original.call(this, name, config, ...rest);
    const info = { name, toolset, readOnly: config.annotations?.readOnlyHint === true };
    onTool(info);
    if (hide?.(info)) registered.disable();
    return registered;
  };
  return () => void (target.registerTool = original);
}
