import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Config } from '../config.js';
import { toolsetFactories } from '../toolsets/index.js';
import { VERSION } from '../version.js';
import { createLogger, type Logger } from './log.js';
import { installRpcHooks } from './rpc-hooks.js';
import type { ClientContext, RestRoute, Toolset } from './toolset.js';

export interface Debugkit {
  config: Config;
  log: Logger;
  toolsets: Toolset[];
  /** A new McpServer for one client connection, with every served toolset registered on it. */
  connect(owner: string): McpServer;
  /** Ends everything a client opened; called when its connection goes away. */
  release(owner: string): Promise<void>;
  routes(): RestRoute[];
  /** Ends every session and child process. Safe to call more than once. */
  close(): Promise<void>;
}

const INSTRUCTIONS = `debugkit gives you real debuggers. gdb toolset: "open" a session, then "call" GDB CLI or MI commands \
("file ./prog", "break main", "run", "bt", "info locals"); execution commands return when the program stops or after a \
bounded wait with state "running" (then "-exec-interrupt" or gdb_wait). Read gdb://commands/reference for a guide. \
Close sessions you no longer need.`;

export function createDebugkit(config: Config, log: Logger = createLogger(config.logLevel)): Debugkit {
  const unknown = config.toolsets.filter((name) => !toolsetFactories.some((f) => f.name === name));
  if (unknown.length > 0) {
    const valid = toolsetFactories.map((f) => f.name).join(', ');
    throw new Error(`unknown toolset ${unknown.join(', ')}: valid toolsets are ${valid}`);
  }
  const chosen = config.toolsets.length > 0 ? toolsetFactories.filter((f) => config.toolsets.includes(f.name)) : toolsetFactories;
  const toolsets = chosen.map((factory) => factory.create({ config, log }));
  let closing: Promise<void> | undefined;

  return {
    config,
    log,
    toolsets,
    connect(owner) {
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
      for (const toolset of toolsets) toolset.register(server, client);
      installRpcHooks(server); // contract aliases and JSON-RPC error codes (debugger toolset)
      return server;
    },
    async release(owner) {
      await Promise.all(toolsets.map((t) => t.releaseClient(owner)));
    },
    routes() {
      return toolsets.flatMap((t) => t.routes?.() ?? []);
    },
    close() {
      closing ??= Promise.all(toolsets.map((t) => t.dispose())).then(() => undefined);
      return closing;
    },
  };
}
