import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { McpServer } from '../../mcp/toolset.js';
import { SessionRegistry } from '../../core/sessions.js';
import { envelopeFormat } from '../../mcp/result-formats.js';
import { registerTool, type ToolSpec } from '../../mcp/tools.js';
import type { ClientContext, Toolset, ToolsetEnv, ToolsetFactory } from '../../mcp/toolset.js';
import type { GdbSession } from './session.js';
import { gdbTools, type GdbContext } from './tools/index.js';

const DOCS = [
  { name: 'reference', title: 'GDB Commands Reference', description: 'Complete reference for the GDB commands an agent needs, by task, with a worked example' },
  { name: 'cli', title: 'GDB CLI Commands', description: 'CLI commands with abbreviations and usage' },
  { name: 'mi', title: 'GDB MI Commands', description: 'Machine Interface commands and the shape of their result records' },
  { name: 'mapping', title: 'CLI to MI Mapping', description: 'Correspondence between CLI and MI commands' },
] as const;

class GdbToolset implements Toolset {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tools of different argument and result types
  private specs: ToolSpec<any, any>[] | undefined;
  readonly name = 'gdb';
  private readonly registry: SessionRegistry<GdbSession>;
  private readonly ctx: GdbContext;

  constructor(env: ToolsetEnv) {
    this.registry = new SessionRegistry<GdbSession>({
      kind: 'gdb session',
      maxSessions: env.config.maxSessions,
      maxSessionsTotal: env.config.maxSessionsTotal,
      maxSessionsPerKey: env.config.maxSessionsPerKey,
      onExpire: (info) => {
        env.log.info(`gdb session ${info.id} closed after ${info.timeoutMs / 1000} s idle`);
        env.sessionExpired?.(info.owner, info.id);
      },
    });
    this.ctx = {
      registry: this.registry,
      config: env.config,
      execWrapper: fileURLToPath(new URL('./exec-wrapper.sh', import.meta.url)),
      log: env.log,
    };
  }

  register(server: McpServer, client: ClientContext): void {
    // Specs (and their zod schemas) are built once: a stateless 2026-07-28 request registers them anew.
    this.specs ??= gdbTools.map((tool) => tool(this.ctx));
    for (const spec of this.specs) registerTool(server, client, envelopeFormat, spec);
    for (const doc of DOCS) {
      const uri = `gdb://commands/${doc.name}`;
      server.registerResource(doc.name, uri, { title: doc.title, description: doc.description, mimeType: 'text/markdown' }, async () => ({
        contents: [{ uri, mimeType: 'text/markdown', text: await readDoc(doc.name) }],
      }));
    }
  }

  releaseClient(owner: string): Promise<void> {
    return this.registry.closeOwnedBy(owner, 'the client disconnected');
  }

  dispose(): Promise<void> {
    return this.registry.closeAll('the server is shutting down');
  }
}

const docCache = new Map<string, Promise<string>>();
function readDoc(name: string): Promise<string> {
  let text = docCache.get(name);
  if (!text) {
    text = readFile(new URL(`./docs/${name}.md`, import.meta.url), 'utf8');
    docCache.set(name, text);
  }
  return text;
}

export const gdbToolset: ToolsetFactory = {
  name: 'gdb',
  summary: 'GDB sessions in MI mode: open, call (CLI or MI commands), close, list_sessions',
  create: (env) => new GdbToolset(env),
};
