import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { McpServer } from '@modelcontextprotocol/server';

/**
 * The MCP Apps view (`io.modelcontextprotocol/ui`): one HTML resource, `ui://debugkit/stop.html`,
 * that a host which renders apps shows beside a debug tool's answer: where the program stopped,
 * the output and the stack. The tools whose answers it shows name it in their `_meta` (listed only
 * to clients that declare the extension: the others' tools/list stays as small as before).
 */

export const UI_EXTENSION = 'io.modelcontextprotocol/ui';
export const STOP_VIEW_URI = 'ui://debugkit/stop.html';
/** The MIME type of an MCP Apps HTML resource. */
export const APP_MIME_TYPE = 'text/html;profile=mcp-app';

/** The toolsets whose session tools answer with stops. */
const VIEWED_TOOLSETS = new Set(['gdb', 'python', 'debugger']);

let html: string | undefined;
const viewHtml = () => (html ??= readFileSync(fileURLToPath(new URL('../ui/session.html', import.meta.url)), 'utf8'));

/** The tools (by listed name) whose answers the view shows: the session tools of gdb, python and the debugger. */
export function viewedTools(catalog: ReadonlyArray<{ name: string; toolset: string; sessionArg?: string }>): Set<string> {
  return new Set(catalog.filter((t) => VIEWED_TOOLSETS.has(t.toolset) && t.sessionArg !== undefined).map((t) => t.name));
}

/** Declares the extension and serves the view's HTML as a resource. */
export function registerStopView(server: McpServer): void {
  (server.server as unknown as { registerCapabilities(c: Record<string, unknown>): void }).registerCapabilities({ extensions: { [UI_EXTENSION]: {} } });
  server.registerResource(
    'debugkit-stop-view',
    STOP_VIEW_URI,
    { title: 'Where the program stopped', description: 'MCP Apps view of a debug tool answer: the stop, the output and the stack', mimeType: APP_MIME_TYPE },
    (uri) => ({ contents: [{ uri: uri.href, mimeType: APP_MIME_TYPE, text: viewHtml() }] }),
  );
}

/** Does this client render MCP Apps views: its capabilities (per request on 2026-07-28, else from initialize) declare the extension with the apps MIME type? */
export function clientRendersApps(perRequest: unknown, initialized: unknown): boolean {
  const declared = (caps: unknown) => {
    const ui = (caps as { extensions?: Record<string, unknown> } | undefined)?.extensions?.[UI_EXTENSION] as { mimeTypes?: unknown } | undefined;
    return !!ui && typeof ui === 'object' && (!Array.isArray(ui.mimeTypes) || ui.mimeTypes.includes(APP_MIME_TYPE));
  };
  return declared(perRequest) || declared(initialized);
}
