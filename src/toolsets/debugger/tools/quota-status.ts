import { z } from 'zod';
import { withText } from '../../../mcp/tools.js';
import { defineTool, type DebuggerTool } from './common.js';

export const quotaStatusTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_quota_status',
    contractName: 'debugger/quota_status',
    title: 'Quota status',
    description: 'Requests used and left in the current period for the calling key.',
    input: {},
    output: { plan: z.string(), limit: z.union([z.number(), z.literal('unlimited')]), used: z.number(), remaining: z.union([z.number(), z.literal('unlimited')]), reset_at: z.string().nullable() },
    annotations: { readOnlyHint: true },
    async run(_args, call) {
      const q = await ctx.control.quota(call.client);
      return withText({ ...q }, `Plan ${q.plan}: ${q.used} used of ${q.limit}${q.reset_at ? `, resets at ${q.reset_at}` : ''}`);
    },
  });
