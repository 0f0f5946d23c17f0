import { z } from 'zod';
import { withText } from '../../../mcp/tools.js';
import { defineTool, type DebuggerTool } from './common.js';

const iso = z.string().datetime({ offset: true });

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
