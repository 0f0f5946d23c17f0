import type { IncomingMessage, ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/server';
import type { Config } from '../config.js';
import type { z } from 'zod';
import { createLogger, type Logger } from '../mcp/log.js';
import type { CallRuntime, EndToolCall, ToolCallEvent, ToolCallStart } from '../mcp/call-runtime.js';
import { DEFAULT_RESULT_MAX_TOKENS } from '../mcp/result-ceiling.js';
import type { ClientContext, RestRoute, Toolset, ToolsetFactory } from '../mcp/toolset.js';
import { VERSION } from '../version.js';
import { installRpcHooks } from '../mcp/rpc-hooks.js';
import { callLogOf } from '../mcp/request-log.js';
import { loadSkills, registerSkillPrompts, skillsExtension } from './skills.js';
import { TaskTable, type TaskOwner } from '../mcp/tasks.js';
import { LiveView, type LiveState } from './live.js';
import { debugSessionArg } from './forwarding.js';
import { redactValue } from '../mcp/redact-answers.js';
import { registerStopView, viewedTools } from '../mcp/app-view.js';

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
  /** HTTP: the status to answer with (default: 401 for -32001, 429 for -32002, else 403). */
  status?: number;
  /** HTTP: header fields to put on the answer (rate-limit fields, Retry-After). */
  headers?: Record<string, string>;
}

/** One tool as the toolsets register it: for scope checks (which toolset, read-only or not, the capability scopes it always needs). */
export interface ToolCatalogEntry {
  name: string;
  toolset: string;
  readOnly: boolean;
  scopes: readonly string[];
  /** The argument naming the session a call acts on (ToolSpec.sessionArg). */
  sessionArg?: string;
  /** The session a call acts on when it leaves that argument out (the debugger's "default"). */
  sessionDefault?: string;
}

/** Which session a call of a tool names: its argument, and the session meant without it. */
export interface SessionArgument {
  name: string;
  default?: string;
}

/** Where another node holds an MCP session or a debug session (multi-node). */
export interface SessionLocation {
  node: string;
  url: string;
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
  /**
   * A call that needs capability scopes (its tool's `scopes`: fixed, or read from its arguments by
   * the toolset, e.g. a gdb command that leaves the debugger): may this principal make it? Runs on
   * every transport before the audit entry; a Denial is the call's JSON-RPC error (default -32003).
   * Absent: every call may (the local user, the single --api-key).
   */
  authorizeCall?(principal: Principal, call: ToolCallStart & { client: string; transport: 'http' | 'stdio' }, scopes: string[]): Promise<true | Denial>;
  /** After every tool call, over HTTP and stdio (audit, quotas). Errors are logged, not thrown. */
  onToolCall?(event: ToolCallEvent, principal: Principal): void | Promise<void>;
  /**
   * Before every tool call (arguments valid), over HTTP and stdio: throwing refuses the call, which
   * never runs (e.g. the audit entry cannot be written). The function returned records its end.
   */
  beforeToolCall?(start: ToolCallStart & { client: string; transport: 'http' | 'stdio' }, principal: Principal): Promise<EndToolCall | void>;
  /**
   * HTTP edge: each /mcp request this node serves, once its body is read (a request for a session
   * or debug session another node holds is forwarded whole, and admitted there). Judges the body
   * message by message (a single message is a batch of one; a GET or DELETE has none) and returns
   * one verdict per message, in order: undefined serves it; a Denial answers it instead with that
   * JSON-RPC error (and the Denial's header fields) while the other messages are served. When no
   * message is left to serve, the answer has the Denial's status. May set header fields on `res`
   * (rate-limit fields go on every answer). `sessionKnown` false: the request names an MCP session
   * this principal does not hold (each request in it is then refused as not found, and audited).
   */
  admitRequest?(principal: Principal, req: IncomingMessage, res: ServerResponse, body: unknown, session: string | undefined, sessionKnown?: boolean): Promise<Array<Denial | undefined>>;
  /**
   * HTTP edge: a POST (to /mcp or a REST route) whose body of over 64 KiB has arrived, before it is
   * parsed: the Denial to answer with when the key is already past its rate limit (its header
   * fields set on `res`), or undefined to go on. Parsing a large body holds the event loop; a small
   * one is parsed and judged message by message (admitRequest), so its refusals keep their ids.
   */
  overRate?(principal: Principal, req: IncomingMessage, res: ServerResponse): Promise<Denial | undefined>;
  /**
   * HTTP edge: a toolset's REST route (e.g. the debugger's). Returns the function that records its
   * end, or a Denial to refuse it.
   */
  admitRoute?(
    principal: Principal,
    req: IncomingMessage,
    res: ServerResponse,
    route: { toolset: string; path: string; params: Record<string, string>; scopes?: string[] },
    params: Record<string, unknown>,
  ): Promise<EndToolCall | Denial>;
  /** Once at start: every tool the toolsets register, with its toolset and read-only flag. */
  catalog?(tools: ToolCatalogEntry[]): void;
  /** Multi-node: where sessions live, and forwarding to the node that holds one. */
  sessions?: SessionHooks;
  /** HTTP: the server listens at this URL (a node advertises it to the others). */
  listening?(url: string): void;
  /** The live view (/ui): does this principal see every key's sessions and calls? Absent: yes (one key, or the local user). */
  seesAll?(principal: Principal): boolean;
  /** The live view (/ui): what the control plane adds for this principal (limits and their use; the audit's tail for the operator). */
  liveControl?(principal: Principal): Promise<Record<string, unknown>>;
  /** The server is closing: release what the hooks hold (store connections). */
  close?(): Promise<void>;
}

export interface SessionHooks {
  /** A session (MCP session id, or a debug session id a tool answered) now lives on this node. */
  claim(id: string, principal: Principal): Promise<void>;
  /** The node holding session `id` for this principal, when it is another node. */
  locate(id: string, principal: Principal): Promise<SessionLocation | undefined>;
  release(id: string): Promise<void>;
  /** A debug session of client `owner` ended by itself (idle): what this node recorded for it goes. */
  expired?(owner: string, id: string): Promise<void>;
  /** True when this request was forwarded here by another node (never forwarded again, counted once). */
  isForwarded(req: IncomingMessage): Promise<boolean>;
  /** Sends the request on to `target` and streams its answer back. */
  forward(target: SessionLocation, req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void>;
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
  /** `--tool-prefix`: the name a tool (by contract name) is listed and called by; absent without a prefix. */
  toolName?(tool: string): string;
  /** The argument naming the session a call of `tool` (by the name it is called) acts on, if it has one. */
  sessionArgOf(tool: string): SessionArgument | undefined;
  /** A new McpServer for one client (a connection, a legacy session or one stateless request). */
  connect(owner: string, principal?: Principal): McpServer;
  /** Ends everything a client opened; called when its connection goes away. */
  release(owner: string): Promise<void>;
  routes(): Array<RestRoute & { toolset: string }>;
  /** The live view as `principal` may see it: sessions and recent calls (its key's own, or all). */
  liveState(principal: Principal): Promise<LiveState & { control?: Record<string, unknown> }>;
  /** Ends every session and child process. Safe to call more than once. */
  close(): Promise<void>;
}

export function instructionsFor(factories: ToolsetFactory[]): string {
  const parts = factories.map((f) => f.instructions ?? `${f.name}: ${f.summary}.`);
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
  // A debug session that ended by itself (idle, or its engine gone): the control plane drops what routes it (multi-node).
  const sessionExpired = (owner: string, id: string) => {
    hooks.sessions?.expired?.(owner, id).catch((err: unknown) => log.warn(`forgetting expired session ${id}: ${err instanceof Error ? err.message : String(err)}`));
  };
  const toolsets = chosen.map((factory) => factory.create({ config, log, sessionExpired }));
  const maxResultTokens = config.maxResultTokens ?? DEFAULT_RESULT_MAX_TOKENS;
  let closing: Promise<void> | undefined;
  // Every tool as its spec says (--tool-prefix's names, the control plane's scope checks, which argument names a session).
  const catalog = toolCatalog(toolsets);
  const toolName = config.toolPrefix ? prefixedNames(config.toolPrefix, catalog) : undefined;
  const instructions = instructionsFor(chosen) + (config.toolPrefix ? prefixNote(config.toolPrefix, chosen) : '');
  // Control plane: learn every tool's toolset and read-only flag once, for the scope checks (by
  // listed name; a contract alias such as debugger/attach is judged as the tool it calls).
  const callable = callableCatalog(catalog, toolName);
  const served = loadSkills(chosen.map((f) => f.name));
  const skills = { served, extension: skillsExtension(served) };
  // Long calls as tasks, one table for every client's server (a 2026-07-28 request's server lives for that request only).
  const tasks = new TaskTable();
  // What the agents are doing, for the people beside them (/ui).
  const live = new LiveView();
  const toolOf = new Map(callable.map((t) => [t.name, t]));
  // The MCP Apps view of a stop, named by the session tools of the debuggers.
  const viewed = viewedTools(callable);
  hooks.catalog?.(callable);
  const sessionArgs = new Map(
    callable.flatMap((t) => (t.sessionArg !== undefined ? [[t.name, { name: t.sessionArg, ...(t.sessionDefault !== undefined ? { default: t.sessionDefault } : {}) }] as const] : [])),
  );

  /** A call's end, for the live view: its toolset and the session it acted on (named, defaulted, or the one it opened). */
  const recordLive = (event: ToolCallEvent, key: string) => {
    const tool = toolOf.get(event.tool);
    const result = (event.result ?? {}) as Record<string, unknown>;
    // The session a call names is read as forwarding reads it (its argument, or the one it defaults to).
    const named = debugSessionArg({ name: event.tool, arguments: event.args }, (name) => sessionArgs.get(name));
    const content = result.content as Record<string, unknown> | undefined; // gdb's envelope: { type, content }
    const opened = [result.id, result.sessionId, result.session_id, content?.id].find((v): v is string => typeof v === 'string');
    const session = named ?? opened;
    live.record({
      key,
      tool: event.tool,
      ...(tool ? { toolset: tool.toolset } : {}),
      ...(session !== undefined ? { session } : {}),
      ok: !event.isError,
      ms: Math.round(event.durationMs),
      result: event.result,
    });
  };

  /** The live view as `principal` may see it, with the source around each stop and the control plane's part. */
  const liveStateOf = async (principal: Principal): Promise<LiveState & { control?: Record<string, unknown> }> => {
    const sessions = toolsets.flatMap((t) => (t.sessions?.() ?? []).map((s) => ({ ...s, toolset: t.name })));
    const state = live.state({ key: principal.id, seesAll: hooks.seesAll?.(principal) ?? true }, sessions);
    // The source around each stop (the first 20 sessions), from files inside the root only.
    for (const session of state.sessions.slice(0, 20)) {
      const source = session.stop ? await live.sourceAround(config.root, session.stop, redactLine) : undefined;
      if (source) session.source = source;
    }
    return hooks.liveControl ? { ...state, control: await hooks.liveControl(principal) } : state;
  };
  // Source lines are shown as answers are: redacted unless --no-redact.
  const redactLine = (line: string) => (config.redact === false ? line : String(redactValue(line)));
  const liveAnswers = new Map<string, { at: number; answer: Promise<LiveState & { control?: Record<string, unknown> }> }>();

  return {
    config,
    log,
    hooks,
    toolsets,
    ...(toolName ? { toolName } : {}),
    sessionArgOf: (tool) => sessionArgs.get(tool),
    connect(owner, principal = LOCAL_PRINCIPAL) {
      const server = new McpServer({ name: 'debugkit', title: 'debugkit', version: VERSION }, { capabilities: { logging: {}, tools: {}, resources: {}, prompts: {} }, instructions });
      const transport = owner.startsWith('http:') ? ('http' as const) : ('stdio' as const);
      const calls: CallRuntime = {
        maxResultTokens,
        ...(config.redact === false ? { redact: false } : {}),
        ...(toolName ? { toolName } : {}),
        mayCall: hooks.authorize ? (tool) => hooks.authorize!(principal, tool) === true : undefined,
        authorize: hooks.authorizeCall ? (start, scopes) => hooks.authorizeCall!(principal, { ...start, client: clientLabel(server), transport }, scopes) : undefined,
        beforeToolCall: hooks.beforeToolCall ? (start) => hooks.beforeToolCall!({ ...start, client: clientLabel(server), transport }, principal) : undefined,
        onToolCall: async (event) => {
          // The log line is written once the answer has gone out (a synchronous write to stderr).
          const line = { requestId: event.requestId, keyId: principal.id, tool: event.tool, durationMs: event.durationMs, isError: event.isError, ...(event.truncated ? { truncated: true } : {}) };
          recordLive(event, principal.id);
          setImmediate(() => log.info('tool call', line));
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
        principal,
        calls,
        notify(level, message) {
          if (!server.isConnected()) return;
          if (servesModernEra(server)) {
            // 2026-07-28 has no connection to send on: a log message goes out only with the tool
            // call it belongs to, and only when that request asked for logs (its _meta logLevel).
            // Anything else (a gdb that died after its call returned) is never sent.
            callLogOf(client)?.(level, message);
            return;
          }
          void server.sendLoggingMessage({ level, logger: 'debugkit', data: message }).catch(() => undefined);
        },
      };
      for (const toolset of toolsets) toolset.register(server, client);
      // The playbook: the Skills extension, the same files as resources, and as prompts.
      skills.extension.attach(server);
      registerSkillPrompts(server, skills.served);
      // Multi-node: a task is routed like a session, to the node that runs it.
      const taskOwner: TaskOwner = {
        principal: principal.id,
        client: owner,
        ...(hooks.sessions
          ? {
              claim: (id: string) => hooks.sessions!.claim(id, principal),
              release: (id: string) => void hooks.sessions!.release(id).catch(() => undefined),
            }
          : {}),
      };
      // Contract aliases and JSON-RPC error codes (debugger toolset), the listing, tasks.
      if (viewed.size > 0) registerStopView(server);
      installRpcHooks(server, { outputSchemas: config.outputSchemas === true, tasks: { table: tasks, owner: taskOwner, modern: () => servesModernEra(server) }, viewed });
      return server;
    },
    async release(owner) {
      tasks.releaseClient(owner);
      await Promise.all(toolsets.map((t) => t.releaseClient(owner)));
    },
    routes() {
      return toolsets.flatMap((t) => (t.routes?.() ?? []).map((r) => ({ ...r, toolset: t.name })));
    },
    liveState(principal) {
      // Worked out at most twice a second per key, however often it is asked: a key polling hard
      // (the page asks each second) gets the same answer, never more work.
      const held = liveAnswers.get(principal.id);
      if (held && performance.now() - held.at < LIVE_STATE_REUSE_MS) return held.answer;
      const answer = liveStateOf(principal);
      liveAnswers.set(principal.id, { at: performance.now(), answer });
      if (liveAnswers.size > 10_000) liveAnswers.delete(liveAnswers.keys().next().value!);
      return answer;
    },
    close() {
      closing ??= Promise.all([tasks.close(), ...toolsets.map((t) => t.dispose())]).then(async () => {
        await hooks.close?.().catch((err: unknown) => log.warn(`closing the control plane: ${err instanceof Error ? err.message : String(err)}`));
      });
      return closing;
    },
  };
}

/** How long a live view answer is given again to the same key instead of being worked out anew. */
const LIVE_STATE_REUSE_MS = 500;

/** The value a session argument's schema gives a call that leaves it out, if any. */
function sessionDefault(schema: z.ZodTypeAny | undefined): { sessionDefault?: string } {
  const parsed = schema?.safeParse(undefined);
  return parsed?.success && typeof parsed.data === 'string' ? { sessionDefault: parsed.data } : {};
}

/** Every tool of the toolsets, from its spec (by contract name), with its contract alias if it has one. */
function toolCatalog(toolsets: Toolset[]): Array<ToolCatalogEntry & { contractName?: string }> {
  return toolsets.flatMap((toolset) =>
    toolset.tools().map((spec) => ({
      name: spec.name,
      toolset: toolset.name,
      readOnly: spec.annotations?.readOnlyHint === true,
      scopes: spec.scopes?.always ?? [],
      ...(spec.sessionArg !== undefined ? { sessionArg: spec.sessionArg, ...sessionDefault(spec.input[spec.sessionArg]) } : {}),
      ...(spec.contractName !== undefined ? { contractName: spec.contractName } : {}),
    })),
  );
}

/** The listed name of each tool: its toolset's prefix (or the one for every toolset), then its contract name. */
function prefixedNames(prefixes: Record<string, string>, catalog: ToolCatalogEntry[]): (tool: string) => string {
  const toolsetOf = new Map(catalog.map((t) => [t.name, t.toolset]));
  return (tool) => {
    const toolset = toolsetOf.get(tool);
    const prefix = (toolset === undefined ? undefined : prefixes[toolset]) ?? prefixes['*'] ?? '';
    return prefix + tool;
  };
}

/** The catalog by the names a call may be sent by: listed names, and each tool's contract alias (the HTTP edge judges a call by the name it was sent). */
function callableCatalog(catalog: Array<ToolCatalogEntry & { contractName?: string }>, toolName: (tool: string) => string = (tool) => tool): ToolCatalogEntry[] {
  const entry = ({ contractName: _alias, ...t }: ToolCatalogEntry & { contractName?: string }, name: string): ToolCatalogEntry => ({ ...t, name });
  return [...catalog.map((t) => entry(t, toolName(t.name))), ...catalog.flatMap((t) => (t.contractName !== undefined ? [entry(t, t.contractName)] : []))];
}

/** Tells the agent that the tool names the instructions and descriptions give carry a prefix. */
function prefixNote(prefixes: Record<string, string>, factories: ToolsetFactory[]): string {
  const parts = factories.flatMap((f) => {
    const prefix = prefixes[f.name] ?? prefixes['*'];
    return prefix ? [`${f.name} tools start with "${prefix}"`] : [];
  });
  return parts.length ? ` Tool names here and in tool descriptions are given without their prefix: ${parts.join(', ')}.` : '';
}

/** Whether this server instance serves protocol 2026-07-28 or later (per-request, no connection). */
function servesModernEra(server: McpServer): boolean {
  // The SDK keeps the revision the instance serves here (deprecated for reading a request's
  // revision, which is not what this asks): 2026-07-28 once a modern request bound it.
  const version = server.server.getNegotiatedProtocolVersion();
  return version !== undefined && version >= '2026-07-28';
}

function clientLabel(server: McpServer): string {
  const info = server.server.getClientVersion();
  return info ? `${info.name}/${info.version}` : 'unknown client';
}
