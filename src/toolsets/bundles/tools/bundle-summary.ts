import { z } from 'zod';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { BundlesContext } from '../context.js';
import { keyIdOf } from '../workspace.js';
import { split } from './common.js';

// Sections are { items, total } (log_errors adds files_read, pods_with_logs), typed in summary.ts: spelled out here, the schema
// cost 2,700 characters of a listing with output schemas that has 700 left.
const output = {
  healthy: z.boolean(),
  pods: z.unknown(),
  warning_events: z.unknown(),
  workloads: z.unknown(),
  nodes: z.unknown(),
  log_errors: z.unknown(),
  collection_errors: z.unknown(),
  checked: z.unknown(),
  next: z.array(z.string()),
};

export function bundleSummaryTool({ workspace }: BundlesContext): ToolSpec<Record<string, never>, typeof output> {
  return {
    name: 'bundle_summary',
    title: 'What is unhealthy in the bundle',
    description: "The initialized bundle's health in one answer: failing pods and why, warning events, failed workloads, node problems, log errors.",
    input: {},
    output,
    annotations: { readOnlyHint: true, openWorldHint: false },
    run: async (_args, call) => {
      const active = workspace.current(call.client.owner);
      const [{ Bundle }, { summarizeBundle }] = await Promise.all([import('../apiserver/bundle.js'), import('../summary.js')]);
      // Charged to the calling key's share, as the bundle it initialized is; parsed files are not parsed again.
      const bundle = await workspace.summaryModel(call.client.owner, (a) => Bundle.open(a.root, { serverModel: workspace.modelBudget(keyIdOf(call.client)) }));
      return split(await summarizeBundle(bundle, active.name));
    },
  };
}
