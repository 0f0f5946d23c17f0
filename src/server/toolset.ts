import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Config } from '../config.js';
import type { Logger } from './log.js';
import type { ControlPlane, FinishCall, KeyContext } from '../control/index.js';

/** Who is calling: each MCP connection (and the REST API) owns the sessions it opens. */
export interface ClientContext {
  owner: string;
  /** Sends an MCP log message to this client (no-op for REST). */
  notify(level: 'debug' | 'info' | 'warning' | 'error', message: string): void;
  /** Control plane: the key this client acts as (stdio: the local user). */
  key?: KeyContext;
  /** Control plane: records a call before it runs (throws when the audit cannot be written: refuse the call). */
  audit?(tool: string, args: unknown, meta: { traceparent?: unknown }): Promise<FinishCall>;
}

/** A plain HTTP route a toolset serves beside /mcp (for contracts that are REST APIs). */
export interface RestRoute {
  method: 'GET' | 'POST' | 'DELETE';
  /** Path pattern with `:name` parameters, e.g. `/sessions/:id`. */
  path: string;
  handle(params: Record<string, string>, body: unknown, req: IncomingMessage, res: ServerResponse): Promise<void>;
}

export interface ToolsetEnv {
  config: Config;
  log: Logger;
  /** Control plane (quota_status, audit queries), when the server runs one. */
  control?: ControlPlane;
}

/** One toolset instance lives for the whole server; `register` runs once per MCP connection. */
export interface Toolset {
  readonly name: string;
  register(server: McpServer, client: ClientContext): void;
  /** Ends the sessions a disconnected client left open. */
  releaseClient(owner: string): Promise<void>;
  routes?(): RestRoute[];
  dispose(): Promise<void>;
}

export interface ToolsetFactory {
  name: string;
  summary: string;
  create(env: ToolsetEnv): Toolset;
}
