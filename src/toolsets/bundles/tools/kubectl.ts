import { readdirSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { BundlesContext } from '../context.js';
import type { KubectlCommand } from '../kubectl-policy.js';

const input = {
  command: z.string().min(1).describe('A read-only kubectl command without "kubectl", e.g. "get pods -A", "describe pod x -n ns", "logs x -n ns --tail 50"'),
  timeout: z.number().int().min(1).max(600).default(30).describe('Seconds before kubectl is stopped'),
  json_output: z.boolean().default(false).describe('true adds "-o json" to a get that chooses no output format; default false: a table'),
};
const output = {
  output: z.string(),
  json: z.boolean().describe('True when output is JSON'),
  truncated: z.boolean(),
  hint: z.string().optional().describe('When truncated: what was cut and the exact argument to narrow or page'),
  warnings: z.array(z.string()).optional().describe("kubectl's Warning: lines, e.g. a bundle file the API server skipped (the first few, then a count)"),
  metadata: z.object({ command: z.string(), exit_code: z.number(), duration_ms: z.number() }),
};

export function kubectlTool({ workspace, config }: BundlesContext): ToolSpec<typeof input, typeof output> {
  // kubectl's runner and policy load on the first call, not at start; render runs after a call, once loaded.
  let engine: typeof import('../kubectl.js') | undefined;
  return {
    name: 'kubectl',
    title: 'Run kubectl against the bundle',
    description:
      'Runs the real kubectl against the initialized bundle as if its cluster were live (get, describe, logs, events, ...). ' +
      'Commands that change a cluster (exec, apply, ...), flags pointing kubectl elsewhere or at host files, and shell syntax are refused. ' +
      'A table unless json_output or -o says otherwise; long output is cut (logs keep their newest lines) with a hint to narrow or page.',
    input,
    output,
    annotations: { readOnlyHint: true, openWorldHint: false },
    async run(args, call) {
      const bundle = workspace.current(call.client.owner);
      engine ??= await import('../kubectl.js');
      return engine.runKubectl({
        kubectl: config.bundles.kubectl,
        kubeconfig: bundle.kubeconfigPath,
        command: args.command,
        timeoutSeconds: args.timeout,
        jsonOutput: args.json_output,
        signal: call.signal,
        logFile: (policy) => logFileOf(bundle.root, policy),
      });
    },
    render: (value) => engine!.renderKubectl(value),
  };
}

/**
 * The bundle path of the one log a `kubectl logs` reads whole, for the hint that pages it with
 * read_file; undefined when the command reads several logs or only a part of one.
 */
function logFileOf(root: string, policy: KubectlCommand): string | undefined {
  const flag = (long: string) => policy.flags.filter((f) => f.spec.long === long).at(-1)?.value;
  if (flag('tail') !== undefined || flag('limit-bytes') !== undefined || flag('all-containers') === 'true' || flag('selector') !== undefined) return undefined;
  const target = policy.positionals[0]?.replace(/^pods?\//, '');
  if (!target || target.includes('/') || !SAFE.test(target)) return undefined;
  const namespace = flag('namespace') ?? 'default';
  let container = flag('container') ?? policy.positionals[1];
  const dir = path.join(root, 'cluster-resources', 'pods', 'logs', namespace, target);
  if (!SAFE.test(namespace)) return undefined;
  if (container === undefined) {
    let logs: string[];
    try {
      logs = readdirSync(dir).filter((f) => f.endsWith('.log') && !f.endsWith('-previous.log'));
    } catch {
      return undefined;
    }
    if (logs.length !== 1) return undefined;
    container = logs[0]!.slice(0, -4);
  }
  if (!SAFE.test(container)) return undefined;
  const previous = flag('previous') === 'true' ? '-previous' : '';
  return `/cluster-resources/pods/logs/${namespace}/${target}/${container}${previous}.log`;
}

const SAFE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
