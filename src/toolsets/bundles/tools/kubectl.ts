import { z } from 'zod';
import type { Config } from '../../../config.js';
import type { ToolSpec } from '../../../server/tools.js';
import { renderKubectl, runKubectl } from '../kubectl.js';
import type { BundleWorkspace } from '../workspace.js';

const input = {
  command: z.string().min(1).describe('A read-only kubectl command without "kubectl", e.g. "get pods -A", "describe pod x -n ns", "logs x -n ns --tail 50"'),
  timeout: z.number().int().min(1).max(600).default(30).describe('Seconds before kubectl is stopped'),
  json_output: z.boolean().default(true).describe('Add "-o json" to get commands that choose no output format'),
};
const output = {
  output: z.string(),
  json: z.boolean().describe('True when output is JSON'),
  truncated: z.boolean(),
  metadata: z.object({ command: z.string(), exit_code: z.number(), duration_ms: z.number() }),
};

export function kubectlTool(workspace: BundleWorkspace, config: Config): ToolSpec<typeof input, typeof output> {
  return {
    name: 'kubectl',
    title: 'Run kubectl against the bundle',
    description:
      'Runs the real kubectl against the initialized bundle, as if its cluster were still there: get, describe, logs, ' +
      'api-resources, api-versions, version, cluster-info, events. Commands that change a cluster (exec, apply, delete, ' +
      'edit, patch, ...) and shell syntax (pipes, redirections) are refused.',
    input,
    output,
    annotations: { readOnlyHint: true, openWorldHint: false },
    async run(args, call) {
      const bundle = workspace.current(call.client.owner);
      return runKubectl({
        kubectl: config.bundles.kubectl,
        kubeconfig: bundle.kubeconfigPath,
        command: args.command,
        timeoutSeconds: args.timeout,
        jsonOutput: args.json_output,
        signal: call.signal,
      });
    },
    render: renderKubectl,
  };
}
