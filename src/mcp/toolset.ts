import type { IncomingMessage, ServerResponse } from 'node:http';
import type { McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import type { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Config } from '../config.js';
import type { Logger } from './log.js';
import type { CallRuntime } from './call-runtime.js';
import type { AnyToolSpec } from './define.js';

/**
 * The server a toolset registers its tools and resources on: an SDK v2 `McpServer` at run time.
 * The v1 type is accepted too, so a toolset written against `@modelcontextprotocol/sdk`'s
 * `McpServer` type still compiles (its `registerResource` has the same shape in both).
 */
export type McpServer = McpServerV2;
export type ToolServer = McpServerV2 | McpServerV1;

/** Who is calling: each MCP connection (and the REST API) owns the sessions it opens. */
export interface ClientContext {
  owner: string;
  /** Who the client is, as the server's authentication decided (a key's id and what the control plane attached). */
  principal?: { id: string; [key: string]: unknown };
  /** Sends an MCP log message to this client (no-op for REST and where no channel is open). */
  notify(level: 'debug' | 'info' | 'warning' | 'error', message: string): void;
  /** Set by the server around the toolsets: the result ceiling, authorization, the audit seam. */
  calls?: CallRuntime;
}

/**
 * Who calls a REST route, as the server's authentication decided: `owner` is the key's REST
 * client (`rest:<key id>`), which owns the sessions the route opens; `principal.id` is the key id.
 */
export interface RouteClient {
  owner: string;
  principal: { id: string; [key: string]: unknown };
  /** Aborted when the client leaves before its answer: what the call started should end with it. */
  signal?: AbortSignal;
}

/** A plain HTTP route a toolset serves beside /mcp (for contracts that are REST APIs). */
export interface RestRoute {
  method: 'GET' | 'POST' | 'DELETE';
  /** Path pattern with `:name` parameters, e.g. `/sessions/:id`. */
  path: string;
  handle(params: Record<string, string>, body: unknown, req: IncomingMessage, res: ServerResponse, client: RouteClient): Promise<void>;
  /** Capability scopes this request needs beyond the toolset's, by its body (as a tool's `scopes.of`). */
  scopes?(body: unknown): string[];
}

export interface ToolsetEnv {
  config: Config;
  log: Logger;
  /**
   * A toolset calls this when one of its sessions ended by itself (idle expiry, or its engine
   * exiting), so the server can forget what it recorded for it elsewhere (the row that routes it
   * between nodes).
   */
  sessionExpired?(owner: string, id: string): void;
}

/** A live debug session as the live view shows it. */
export interface LiveSession {
  id: string;
  owner: string;
  key: string;
  created: Date;
  lastUsed: Date;
}

/** One toolset instance lives for the whole server; `register` runs once per MCP server instance. */
export interface Toolset {
  readonly name: string;
  /** Its tools' specs (made once): the catalog other layers read (scopes, read-only, session argument, contract name). */
  tools(): readonly AnyToolSpec[];
  register(server: ToolServer, client: ClientContext): void;
  /** Ends the sessions a disconnected client left open. */
  releaseClient(owner: string): Promise<void>;
  /** Its live sessions, with the key each was opened for (the live view). */
  sessions?(): LiveSession[];
  routes?(): RestRoute[];
  dispose(): Promise<void>;
}

export interface ToolsetFactory {
  name: string;
  summary: string;
  /** Capability scopes its tools may ask for besides `<name>` and `<name>:read` (`gdb:shell`, `mocks:run`), for keys to be given. */
  capabilities?: readonly string[];
  /** A few sentences for the server's instructions: how an agent uses this toolset. */
  instructions?: string;
  create(env: ToolsetEnv): Toolset;
}
