import type { IncomingMessage } from 'node:http';
import { McpServer } from '@modelcontextprotocol/server';
import type { Config } from '../config.js';
import { createLogger, type Logger } from '../mcp/log.js';
import { DEFAULT_RESULT_MAX_TOKENS, type CallRuntime, type ToolCallEvent } from '../mcp/tools.js';
import type { ClientContext, RestRoute, Toolset, ToolsetFactory } from '../mcp/toolset.js';
import { VERSION } from '../version.js';
import { installRpcHooks } from '../mcp/rpc-hooks.js';

/** Who is calling, as the authentication seam decided. */
export interface Principal {
  /** A stable id (a key id, never the key): owner of the sessions opened, named in logs. */
  id: string;
  /** Anything the control plane wants to carry to `authorize` and `onToolCall` (scopes, limits). */
  [key: string]: unknown;
}

/** A refused tool call: JSON-RPC error `code` (default -32003 permission denied) with `data`. */
export interface Denial {
  code?: number;
  message: string;
  data?: unknown;
}

/**
 * The seams of the control plane. Every one is optional; without them debugkit serves one
 * full-scope key (HTTP `--api-key`) or the local stdio user.
 */
export interface ServerHooks {
  /**
   * HTTP: who sends this request. Return undefined to refuse it (401, JSON-RPC -32001), or throw a
   * `Denial` to refuse with another code (e.g. -32002 rate limited). Runs before anything else
   * but the Host/Origin checks, on /mcp and on REST routes. Default: the `--api-key` check.
   */
  authenticate?(req: IncomingMessage): Principal | undefined | Promise<Principal | undefined>;
  /**
   * May this principal call this tool? Tools it may not are left out of tools/list, and a
   * tools/call of one is answered with the Denial (default -32003) before any toolset runs.
   */
  authorize?(principal: Principal, tool: string): true | Denial;
  /** After every tool call, over HTTP and stdio (audit, quotas). Errors are logged, not thrown. */
  onToolCall?(event: ToolCallEvent, principal: Principal): void | Promise<void>;
}

export interface DebugkitOptions {
  /** The toolsets this server can serve (cli.ts passes the one list); config.toolsets picks among them. */
  toolsets: ToolsetFactory[];
  log?: Logger;
  hooks?: ServerHooks;
}

/** The principal of a local stdio client and of an HTTP request under the single --api-key. */
export const LOCAL_PRINCIPAL: Principal = { id: 'local' };

export interface Debugkit {
  config: Config;
  log: Logger;
  hooks: ServerHooks;
  toolsets: Toolset[];
  /** A new McpServer for one client (a connection, a legacy session or one stateless request). */
  connect(owner: string, principal?: Principal): McpServer;
  /** Ends everything a client opened; called when its connection goes away. */
  release(owner: string): Promise<void>;
  routes(): RestRoute[];
  /** Ends every session and child process. Safe to call more than once. */
  close(): Promise<void>;
}

/** What the server tells an agent about each toolset it serves (the MCP `instructions`). */
const TOOLSET_INSTRUCTIONS: Record<string, string> = {
  gdb:
    'gdb: "open" a session, then "call" GDB CLI or MI commands ("file ./prog", "break main", "run", "bt", "info locals"); ' +
    'execution commands return at the next stop or after a bounded wait with state "running" (then gdb_wait or "-exec-interrupt"). ' +
    'Read gdb://commands/reference for a guide.',
  python:
    'python: python_start_session on a script (with breakpoints), then python_run_to_breakpoint / python_continue / python_step; ' +
    'each stop shows the frame and locals; python_evaluate runs an expression in a frame; python_get_output reads the program output.',
  bundles:
    'bundles: initialize_bundle with a support bundle (path or URL), then kubectl (a read-only kubectl against the bundle: get, describe, logs), ' +
    'list_files, read_file and grep_files inside it.',
  mocks:
    'mocks: keploy_mock_record runs a command and records its outgoing HTTP(S), PostgreSQL and TCP calls into a mock set; ' +
    'keploy_mock_test replays them while the tests run; keploy_list_mocks lists the sets.',
};

export function instructionsFor(factories: ToolsetFactory[]): string {
  const parts = factories.map((f) => f.instructions ?? TOOLSET_INSTRUCTIONS[f.name] ?? `${f.name}: ${f.summary}.`);
  return `debugkit gives you real debuggers. ${parts.join(' ')} Close sessions you no longer need; answers that were cut say how to get the rest.`;
}

export function createDebugkit(config: Config, options: DebugkitOptions): Debugkit {
  const log = options.log ?? createLogger(config.logLevel);
  const hooks = options.hooks ?? {};
  const factories = options.toolsets;
  const unknown = config.toolsets.filter((name) => !factories.some((f) => f.name === name));
  if (unknown.length > 0) {
    const valid = factories.map((f) => f.name).join(', ');
    throw new Error(`unknown toolset ${unknown.join(', ')}: valid toolsets are ${valid}`);
  }
  const chosen = config.toolsets.length > 0 ? factories.filter((f) => config.toolsets.includes(f.name)) : factories;
  const toolsets = chosen.map((factory) => factory.create({ config, log }));
  const instructions = instructionsFor(chosen);
  const maxResultTokens = config.maxResultTokens ?? DEFAULT_RESULT_MAX_TOKENS;
  let closing: Promise<void> | undefined;

  return {
    config,
    log,
    hooks,
    toolsets,
    connect(owner, principal = LOCAL_PRINCIPAL) {
      const server = new McpServer(
        { name: 'debugkit', title: 'debugkit', version: VERSION },
        { capabilities: { logging: {}, tools: {}, resources: {} }, instructions },
      );
      const calls: CallRuntime = {
        maxResultTokens,
        mayCall: hooks.authorize ? (tool) => hooks.authorize!(principal, tool) === true : undefined,
        onToolCall: async (event) => {
          log.info('tool call', {
            requestId: event.requestId,
            keyId: principal.id,
            tool: event.tool,
            durationMs: event.durationMs,
            isError: event.isError,
            ...(event.truncated ? { truncated: true } : {}),
          });
          if (hooks.onToolCall) {
            try {
              await hooks.onToolCall({ ...event, principal: principal.id }, principal);
            } catch (err) {
              log.error(`onToolCall hook failed: ${err instanceof Error ? err.message : String(err)}`, { tool: event.tool });
            }
          }
        },
      };
      const client: ClientContext = {
        owner,
        calls,
        notify(level, message) {
          if (!server.isConnected()) return;
          void server.sendLoggingMessage({ level, logger: 'debugkit', data: message }).catch(() => undefined);
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
