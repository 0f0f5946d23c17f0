import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { SessionRegistry } from '../../core/sessions.js';
import { defineToolset } from '../../mcp/define.js';
import { compactEnvelopeFormat, envelopeFormat } from '../../mcp/result-formats.js';
import type { GdbSession } from './session.js';
import { gdbTools, type GdbContext } from './tools/index.js';

const DOCS = [
  { name: 'reference', title: 'GDB Commands Reference', description: 'Complete reference for the GDB commands an agent needs, by task, with a worked example' },
  { name: 'cli', title: 'GDB CLI Commands', description: 'CLI commands with abbreviations and usage' },
  { name: 'mi', title: 'GDB MI Commands', description: 'Machine Interface commands and the shape of their result records' },
  { name: 'mapping', title: 'CLI to MI Mapping', description: 'Correspondence between CLI and MI commands' },
] as const;

export const gdbToolset = defineToolset<GdbContext>({
  name: 'gdb',
  capabilities: ['gdb:shell', 'gdb:attach'],
  summary: 'GDB sessions in MI mode: open, call (CLI or MI commands), close, list_sessions',
  instructions:
    'gdb: "open" a session, then "call" GDB CLI or MI commands ("file ./prog", "break main", "run", "bt", "info locals"); ' +
    'execution commands return at the next stop or after a bounded wait with state "running" (then gdb_wait or "-exec-interrupt"). ' +
    'Read gdb://commands/reference for a guide.',
  context: (env) => ({
    registry: new SessionRegistry<GdbSession>({
      kind: 'gdb session',
      maxSessions: env.config.maxSessions,
      maxSessionsTotal: env.config.maxSessionsTotal,
      maxSessionsPerKey: env.config.maxSessionsPerKey,
      onExpire: (info, reason) => {
        env.log.info(`gdb session ${info.id} ended: ${reason}`);
        env.sessionExpired?.(info.owner, info.id);
      },
    }),
    config: env.config,
    execWrapper: fileURLToPath(new URL('./exec-wrapper.sh', import.meta.url)),
    log: env.log,
  }),
  tools: gdbTools,
  // --gdb-text json: the contract's envelope as the text too, for clients that parse it.
  format: (ctx) => (ctx.config.gdb.text === 'json' ? envelopeFormat : compactEnvelopeFormat),
  sessionArg: 'id',
  resources(server) {
    for (const doc of DOCS) {
      const uri = `gdb://commands/${doc.name}`;
      server.registerResource(doc.name, uri, { title: doc.title, description: doc.description, mimeType: 'text/markdown' }, async () => ({
        contents: [{ uri, mimeType: 'text/markdown', text: await readDoc(doc.name) }],
      }));
    }
  },
  sessions: (ctx) => ctx.registry.all(),
  releaseClient: (ctx, owner) => ctx.registry.closeOwnedBy(owner, 'the client disconnected'),
  dispose: (ctx) => ctx.registry.closeAll('the server is shutting down'),
});

const docCache = new Map<string, Promise<string>>();
function readDoc(name: string): Promise<string> {
  let text = docCache.get(name);
  if (!text) {
    text = readFile(new URL(`./docs/${name}.md`, import.meta.url), 'utf8');
    docCache.set(name, text);
  }
  return text;
}
