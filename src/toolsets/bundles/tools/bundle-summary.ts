import { z } from 'zod';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { Bundle } from '../apiserver/bundle.js';
import type { BundlesContext } from '../context.js';
import { keyIdOf, type ActiveBundle } from '../workspace.js';
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
  // One model per initialized bundle (a new initialize_bundle is a new ActiveBundle): parsed files are not parsed again.
  const opened = new WeakMap<ActiveBundle, Promise<Bundle>>();
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
      let bundle = opened.get(active);
      if (!bundle) {
        // Charged to the calling key's share, as the bundle it initialized is.
        bundle = Bundle.open(active.root, { serverModel: workspace.modelBudget(keyIdOf(call.client)) });
        opened.set(active, bundle);
        bundle.catch(() => opened.delete(active));
      }
      return split(await summarizeBundle(await bundle, active.name));
    },
  };
}
