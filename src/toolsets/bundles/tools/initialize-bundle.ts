import { z } from 'zod';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { BundlesContext } from '../context.js';
import { keyIdOf } from '../workspace.js';
import { isUrlSource } from '../store/store.js';

const input = {
  source: z
    .string()
    .min(1)
    .describe(
      'A .tar.gz/.tgz or extracted bundle directory in the workspace root (relative paths start there) or the bundle store, ' +
        "a name from list_available_bundles, or an http(s) URL of a host the operator allows (default Replicated's; token: SBCTL_TOKEN)",
    ),
  force: z.boolean().default(false).describe('Extract (or download) again even if this bundle is already in the store'),
};
const output = {
  path: z.string(),
  kubeconfig_path: z.string(),
  source: z.string(),
  api_server_pid: z.number(),
  initialized_at: z.string(),
  name: z.string(),
  reused: z.boolean().describe('True when the bundle was already in the store and was not extracted again'),
};

export function initializeBundleTool({ workspace }: BundlesContext): ToolSpec<typeof input, typeof output> {
  return {
    name: 'initialize_bundle',
    title: 'Open a support bundle',
    description:
      'Extracts (or downloads) a Kubernetes support bundle into the bundle store, serves its cluster to kubectl, ' +
      'and makes it the bundle the bundle tools work on. Initializing it again reuses it unless force is true.',
    input,
    output,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    // A source that is a URL is downloaded: that reaches other machines.
    scopes: { of: (args) => (isUrlSource(args.source) ? ['bundles:download'] : []) },
    async run(args, call) {
      const bundle = await workspace.initialize(call.client.owner, args.source, {
        key: keyIdOf(call.client),
        force: args.force,
        signal: call.signal,
        onProgress: (p) => void call.progress(p.bytes, p.total ?? undefined, `${p.phase}: ${p.bytes} bytes${p.entries ? `, ${p.entries} files` : ''}`),
      });
      return {
        path: bundle.path,
        kubeconfig_path: bundle.kubeconfigPath,
        source: bundle.source,
        api_server_pid: process.pid,
        initialized_at: bundle.initializedAt,
        name: bundle.name,
        reused: bundle.reused,
      };
    },
    render: (value) => {
      const { path, kubeconfig_path, source, api_server_pid, initialized_at } = value;
      const shown = JSON.stringify({ path, kubeconfig_path, source, api_server_pid, initialized_at }, null, 2);
      return `Bundle initialized successfully:\n\`\`\`json\n${shown}\n\`\`\``;
    },
  };
}
