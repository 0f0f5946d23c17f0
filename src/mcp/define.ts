import type { ResultFormat } from './result-formats.js';
import { registerToolAlias } from './rpc-hooks.js';
import type { ClientContext, LiveSession, McpServer, RestRoute, Toolset, ToolsetEnv, ToolsetFactory, ToolServer } from './toolset.js';
import { registerTool, type ToolSpec } from './tools.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tools of different argument and result types
export type AnyToolSpec = ToolSpec<any, any>;

/** A tool: its spec, made once from what its toolset's tools share. */
export type ToolFactory<C> = (context: C) => AnyToolSpec;

/**
 * A toolset, said once: what it is (name, summary, instructions), what its tools share (its
 * context: sessions, a store, the config), its tools, and what it does when a client leaves or
 * the server stops. defineToolset makes the rest: the specs (built once, reused by every MCP
 * server instance: a stateless 2026-07-28 request registers them anew), their registration, the
 * contract aliases, the catalog other layers read (`Toolset.tools()`).
 */
export interface ToolsetDefinition<C> {
  name: string;
  /** One line: what the toolset is for (`--help`, `doctor`, the default instructions). */
  summary: string;
  /** A few sentences for the server's instructions: how an agent uses this toolset. */
  instructions?: string;
  /** Capability scopes its tools ask for (ToolSpec.scopes) besides `<name>` and `<name>:read`: what keys may be given. */
  capabilities?: readonly string[];
  /** What the tools share, made once when the server starts. */
  context(env: ToolsetEnv): C;
  /** The tools, in the order they are listed. */
  tools: ReadonlyArray<ToolFactory<C>>;
  /** How its answers are shaped (its contract's shape), or how the server's options make them. */
  format: ResultFormat | ((context: C) => ResultFormat);
  /**
   * The argument by which its tools name the session they act on (gdb `id`, python `sessionId`,
   * the debugger `session_id`): set on each spec whose input has it, for the layers that route a
   * call to the node holding its session.
   */
  sessionArg?: string;
  /** What runs around every call of its tools (a lazy load, holding the session a call names); default: the call itself. */
  around?(context: C, spec: AnyToolSpec, run: AnyToolSpec['run']): AnyToolSpec['run'];
  /** Resources registered beside the tools (gdb's command references). */
  resources?(server: McpServer, context: C): void;
  /** REST routes served beside /mcp (contracts that are REST APIs). */
  routes?(context: C): RestRoute[];
  /** Its live sessions (the live view): its registry's. */
  sessions?(context: C): LiveSession[];
  /** Ends what a disconnected client left open. */
  releaseClient(context: C, owner: string): Promise<void>;
  /** Ends everything: the server is stopping. */
  dispose(context: C): Promise<void>;
}

/** The toolset `definition` describes, as the server creates and registers toolsets. */
export function defineToolset<C>(definition: ToolsetDefinition<C>): ToolsetFactory {
  const { name, summary, instructions, capabilities } = definition;
  return {
    name,
    summary,
    ...(instructions !== undefined ? { instructions } : {}),
    ...(capabilities !== undefined ? { capabilities } : {}),
    create(env: ToolsetEnv): Toolset {
      const context = definition.context(env);
      const format = typeof definition.format === 'function' ? definition.format(context) : definition.format;
      let specs: AnyToolSpec[] | undefined;
      const tools = (): readonly AnyToolSpec[] =>
        (specs ??= definition.tools.map((make) => {
          const spec = make(context);
          if (definition.sessionArg !== undefined && definition.sessionArg in spec.input) spec.sessionArg ??= definition.sessionArg;
          if (definition.around) spec.run = definition.around(context, spec, spec.run.bind(spec));
          return spec;
        }));
      return {
        name,
        tools,
        register(server: ToolServer, client: ClientContext) {
          for (const spec of tools()) {
            registerTool(server, client, format, spec);
            if (spec.contractName) registerToolAlias(server, spec.contractName, spec.name);
          }
          definition.resources?.(server as McpServer, context);
        },
        releaseClient: (owner) => definition.releaseClient(context, owner),
        ...(definition.sessions ? { sessions: () => definition.sessions!(context) } : {}),
        dispose: () => definition.dispose(context),
        ...(definition.routes ? { routes: () => definition.routes!(context) } : {}),
      };
    },
  };
}
