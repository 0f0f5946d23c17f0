import { z } from 'zod';
import { withText } from '../../../mcp/tools.js';
import { defineTool, type DebuggerTool } from './common.js';

export const licenseInfoTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_license_info',
    contractName: 'debugger/license_info',
    title: 'License information',
    description: "debugkit's license and version, and the calling key's scopes, limits and expiry.",
    input: {},
    output: {
      product: z.string(),
      version: z.string(),
      license: z.string(),
      key: z.object({ id: z.string(), scopes: z.array(z.string()), expires_at: z.string().nullable(), expired: z.boolean() }),
      limits: z.record(z.string(), z.union([z.number(), z.string()])),
    },
    annotations: { readOnlyHint: true },
    async run(_args, call) {
      const l = await ctx.control.license(call.client);
      return withText({ ...l }, `${l.product} ${l.version} (${l.license}); key ${l.key.id}: scopes ${l.key.scopes.join(', ')}; ${l.key.expires_at ? `expires ${l.key.expires_at}` : 'no expiry'}`);
    },
  });
