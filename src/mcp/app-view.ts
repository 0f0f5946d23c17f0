import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { McpServer } from '@modelcontextprotocol/server';
import { answerReaderSource } from '../ui/answer.js';

/**
 * The MCP Apps view (`io.modelcontextprotocol/ui`): one HTML resource, `ui://debugkit/stop.html`,
 * that a host which renders apps shows beside a tool's answer: where the program stopped, the
 * source, the variables that changed, the stack, what replay did (mock misses), a bundle's
 * findings, a recorded session's timeline. The tools whose answers it shows name it in their
 * `_meta` (listed only to clients that declare the extension: the others' tools/list stays as
 * small as before).
 */

export const UI_EXTENSION = 'io.modelcontextprotocol/ui';
export const STOP_VIEW_URI = 'ui://debugkit/stop.html';
/** The MIME type of an MCP Apps HTML resource. */
export const APP_MIME_TYPE = 'text/html;profile=mcp-app';

/** The toolsets whose session tools answer with stops. */
const VIEWED_TOOLSETS = new Set(['gdb', 'python', 'debugger']);
/** Tools outside a debug session whose answers the view reads: a replay's or a recording's outcome, a bundle's findings. */
const VIEWED_TOOLS = new Set(['keploy_mock_test', 'keploy_mock_record', 'bundle_summary']);

let html: string | undefined;
/** The page, with the functions that read an answer (src/ui/answer.ts, the live page's own) in its script: one reading of answers for both views. */
function viewHtml(): string {
  if (html !== undefined) return html;
  const reader = answerReaderSource();
  const page = readFileSync(fileURLToPath(new URL('../ui/session.html', import.meta.url)), 'utf8');
  return (html = page.replace('/*DEBUGKIT_ANSWER_READER*/', () => reader));
}

/** The tools (by listed name) whose answers the view shows: the session tools of gdb, python and the debugger, and VIEWED_TOOLS. */
export function viewedTools(catalog: ReadonlyArray<{ name: string; toolset: string; sessionArg?: string }>): Set<string> {
  return new Set(catalog.filter((t) => (VIEWED_TOOLSETS.has(t.toolset) && t.sessionArg !== undefined) || VIEWED_TOOLS.has(t.name)).map((t) => t.name));
}

/** Declares the extension and serves the view's HTML as a resource. */
export function registerStopView(server: McpServer): void {
  (server.server as unknown as { registerCapabilities(c: Record<string, unknown>): void }).registerCapabilities({ extensions: { [UI_EXTENSION]: {} } });
  server.registerResource(
    'debugkit-stop-view',
    STOP_VIEW_URI,
    { title: 'Where the program stopped', description: 'MCP Apps view of an answer: the stop, source, changed variables, stack, mock misses, bundle findings, timeline', mimeType: APP_MIME_TYPE },
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
