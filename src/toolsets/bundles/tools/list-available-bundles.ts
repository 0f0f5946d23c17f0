import { z } from 'zod';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { BundlesContext } from '../context.js';
import { keyIdOf } from '../workspace.js';

const input = {};
const output = {
  bundles: z.array(
    z.object({
      name: z.string(),
      path: z.string(),
      source: z.string().nullable(),
      size_bytes: z.number(),
      added_at: z.string(),
      valid: z.boolean(),
      reason: z.string().optional(),
      active: z.boolean().describe('True for the bundle this client initialized last'),
    }),
  ),
  store: z.string(),
};

export function listBundlesTool({ workspace }: BundlesContext): ToolSpec<typeof input, typeof output> {
  return {
    name: 'list_available_bundles',
    title: 'List the bundles in the store',
    description: 'Lists the support bundles in the bundle store this key may open (its own, and those the operator shares), newest first, valid or not, with size and when added.',
    input,
    output,
    annotations: { readOnlyHint: true, openWorldHint: false },
    async run(_args, call) {
      const active = workspace.activeName(call.client.owner);
      const entries = await workspace.store.list(keyIdOf(call.client));
      const bundles = entries.map(({ name, path, source, size_bytes, added_at, valid, reason }) => ({
        name,
        path,
        source,
        size_bytes,
        added_at,
        valid,
        ...(reason ? { reason } : {}),
        active: name === active,
      }));
      return { bundles, store: workspace.store.dir };
    },
    render: (value) =>
      value.bundles.length === 0
        ? `No bundles in the store (${value.store}). Use initialize_bundle with a bundle archive, directory or URL.`
        : `Found ${value.bundles.length} bundles in ${value.store}:\n\`\`\`json\n${JSON.stringify(value.bundles, null, 2)}\n\`\`\``,
  };
}
