import { z } from 'zod';
import { withText } from '../../../mcp/tools.js';
import { defineTool, type DebuggerTool } from './common.js';

const iso = z.string().datetime({ offset: true });

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

export const auditTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_get_comprehensive_audit',
    contractName: 'debugger/get_comprehensive_audit',
    title: 'Audit log',
    description: "The calling key's own entries of the audit chain, filtered by time and session, with the whole chain's verification state.",
    input: { start_time: iso.optional(), end_time: iso.optional(), session_id: z.string().max(64).optional() },
    output: { configured: z.boolean(), verified: z.boolean().nullable(), entries: z.array(z.record(z.string(), z.unknown())), note: z.string().optional() },
    annotations: { readOnlyHint: true },
    async run(args, call) {
      const query: { start_time?: string; end_time?: string; session_id?: string } = {};
      if (args.start_time) query.start_time = args.start_time;
      if (args.end_time) query.end_time = args.end_time;
      if (args.session_id) query.session_id = args.session_id;
      const a = await ctx.control.audit(call.client, query);
      return withText({ ...a }, a.configured ? `${a.entries.length} audit entries; chain ${a.verified ? 'verified' : 'NOT verified'}` : (a.note ?? 'no audit store'));
    },
  });
