import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Config } from '../config.js';
import { LOCAL_KEY, type ControlPlane, type KeyContext, type ToolInfo } from '../control/index.js';
import { watchRegistrations } from '../control/catalog.js';
import { toolsetFactories } from '../toolsets/index.js';
import { VERSION } from '../version.js';
import { createLogger, type Logger } from './log.js';
import type { ClientContext, RestRoute, Toolset } from './toolset.js';

export interface Debugkit {
  config: Config;
  log: Logger;
  toolsets: Toolset[];
  /** The control plane (keys, scopes, limits, audit), when the server runs one. */
  control?: ControlPlane;
  /** A new McpServer for one client connection, with the toolsets' tools the key may call registered on it. */
  connect(owner: string, key?: KeyContext): McpServer;
  /** Ends everything a client opened; called when its connection goes away. */
  release(owner: string): Promise<void>;
  routes(): Array<RestRoute & { toolset: string }>;
  /** Ends every session and child process. Safe to call more than once. */
  close(): Promise<void>;
}

const INSTRUCTIONS = `debugkit gives you real debuggers. gdb toolset: "open" a session, then "call" GDB CLI or MI commands \
("file ./prog", "break main", "run", "bt", "info locals"); execution commands return when the program stops or after a \
bounded wait with state "running" (then "-exec-interrupt" or gdb_wait). Read gdb://commands/reference for a guide. \
Close sessions you no longer need.`;

export function createDebugkit(config: Config, log: Logger = createLogger(config.logLevel), control?: ControlPlane): Debugkit {
  const unknown = config.toolsets.filter((name) => !toolsetFactories.some((f) => f.name === name));
  if (unknown.length > 0) {
    const valid = toolsetFactories.map((f) => f.name).join(', ');
    throw new Error(`unknown toolset ${unknown.join(', ')}: valid toolsets are ${valid}`);
  }
  const chosen = config.toolsets.length > 0 ? toolsetFactories.filter((f) => config.toolsets.includes(f.name)) : toolsetFactories;
  const toolsets = chosen.map((factory) => factory.create({ config, log, ...(control ? { control } : {}) }));
  let closing: Promise<void> | undefined;
  // Control plane: learn every tool's toolset and read-only flag once, for the scope checks.
  if (control) control.setCatalog(toolCatalog(toolsets));

  return {
    config,
    log,
    toolsets,
    ...(control ? { control } : {}),
    connect(owner, key = LOCAL_KEY) {
      const server = new McpServer(
        { name: 'debugkit', title: 'debugkit', version: VERSION },
        { capabilities: { logging: {}, tools: {}, resources: {} }, instructions: INSTRUCTIONS },
      );
      const client: ClientContext = {
        owner,
        notify(level, message) {
          void server.server.sendLoggingMessage({ level, logger: 'debugkit', data: message }).catch(() => undefined);
        },
      };
      // Control plane: the key this connection acts as, its audit hook, and only the tools it may call.
      if (control) {
        client.key = key;
        client.audit = (tool, args, meta) =>
          control.beginCall(key, { tool, args, client: clientLabel(server), transport: owner.startsWith('http:') ? 'http' : 'stdio', session: owner, traceparent: meta.traceparent });
      }
      for (const toolset of toolsets) {
        const unwatch = control
          ? watchRegistrations(server, toolset.name, () => undefined, (tool) => control.visibleTools(key, [tool.name]).length === 0)
          : undefined;
        toolset.register(server, client);
        unwatch?.();
      }
      return server;
    },
    async release(owner) {
      await Promise.all(toolsets.map((t) => t.releaseClient(owner)));
    },
    routes() {
      return toolsets.flatMap((t) => (t.routes?.() ?? []).map((r) => ({ ...r, toolset: t.name })));
    },
    close() {
      closing ??= Promise.all(toolsets.map((t) => t.dispose())).then(() => control?.close());
      return closing;
    },
  };
}

/** Every tool the toolsets register, learnt by registering them once on a scratch server. */
function toolCatalog(toolsets: Toolset[]): ToolInfo[] {
  const scratch = new McpServer({ name: 'debugkit-catalog', version: VERSION }, { capabilities: { tools: {}, resources: {} } });
  const tools: ToolInfo[] = [];
  const client: ClientContext = { owner: 'catalog', notify: () => undefined };
  for (const toolset of toolsets) {
    const unwatch = watchRegistrations(scratch, toolset.name, (info) => tools.push(info));
    toolset.register(scratch, client);
    unwatch();
  }
  return tools;
}

function clientLabel(server: McpServer): string {
  const info = server.server.getClientVersion();
  return info ? `${info.name}/${info.version}` : 'unknown client';
}
