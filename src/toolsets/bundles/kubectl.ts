import { runBounded } from '../../core/run.js';
import { checkKubectlArgs, hasOutputFlag, splitCommand } from './command.js';
import { BundleError } from './errors.js';

/** Most output in one answer (about 25k tokens is the ceiling for one answer). */
const MAX_OUTPUT_CHARS = 90_000;
/** Most read from kubectl: JSON is re-indented or compacted after reading, so it may start larger. */
const MAX_RAW_CHARS = 16 * 1024 * 1024;

export interface KubectlRequest {
  kubectl: string;
  kubeconfig: string;
  command: string;
  timeoutSeconds: number;
  jsonOutput: boolean;
  signal?: AbortSignal;
}

export interface KubectlResult {
  output: string;
  /** True when the output is JSON (and was re-indented). */
  json: boolean;
  truncated: boolean;
  metadata: { command: string; exit_code: number; duration_ms: number };
}

/** Runs one read-only kubectl command against the bundle's API server, bounded in time and output. */
export async function runKubectl(req: KubectlRequest): Promise<KubectlResult> {
  const { args, verb } = checkKubectlArgs(splitCommand(req.command));
  const argv = req.jsonOutput && verb === 'get' && !hasOutputFlag(args) ? [...args, '-o', 'json'] : args;
  const started = Date.now();
  const run = await runBounded({
    command: req.kubectl,
    args: argv,
    env: { ...process.env, KUBECONFIG: req.kubeconfig, KUBECTL_COMMAND_HEADERS: 'false' },
    timeoutMs: req.timeoutSeconds * 1000,
    signal: req.signal,
    maxOutputChars: MAX_RAW_CHARS,
  });
  const { stdout, timedOut } = run;
  const stderr = run.stderr.slice(0, 16_384);
  const truncated = run.stdoutTruncated;
  const exit = run;
  const command = ['kubectl', ...argv].join(' ');
  if (timedOut) throw new BundleError('KubectlError', `Kubectl command timed out after ${req.timeoutSeconds} s: ${command} (raise timeout, or narrow with -n / -l)`);
  const exitCode = exit.code ?? 1;
  if (exitCode !== 0) {
    throw new BundleError('KubectlError', `Kubectl command failed: ${stderr.trim() || `exit code ${exitCode}`}`);
  }
  const metadata = { command, exit_code: exitCode, duration_ms: Date.now() - started };
  const parsed = truncated ? undefined : parseJson(stdout);
  if (parsed !== undefined) return { ...fitJson(parsed), metadata };
  const text = stdout.replace(/\n$/, '');
  if (text.length <= MAX_OUTPUT_CHARS && !truncated) return { output: text, json: false, truncated: false, metadata };
  return { output: text.slice(0, MAX_OUTPUT_CHARS), json: false, truncated: true, metadata };
}

/**
 * JSON as the contract shows it (indented) when that fits the budget, compact when only that
 * fits; otherwise a note with the size and, for lists, the items' names to narrow down with.
 */
function fitJson(value: unknown): Pick<KubectlResult, 'output' | 'json' | 'truncated'> {
  const pretty = JSON.stringify(value, null, 2);
  if (pretty.length <= MAX_OUTPUT_CHARS) return { output: pretty, json: true, truncated: false };
  const compact = JSON.stringify(value);
  if (compact.length <= MAX_OUTPUT_CHARS) return { output: compact, json: true, truncated: false };
  const items = (value as { items?: Array<{ metadata?: { name?: string; namespace?: string } }> }).items;
  const names = Array.isArray(items) ? items.map((i) => [i.metadata?.namespace, i.metadata?.name].filter(Boolean).join('/')) : [];
  const list = names.length > 0 ? `\nItems (${names.length}):\n${names.join('\n').slice(0, MAX_OUTPUT_CHARS / 2)}` : '';
  return {
    output: `The JSON output is ${compact.length} characters, over the ${MAX_OUTPUT_CHARS} an answer can hold.${list}`,
    json: false,
    truncated: true,
  };
}

function parseJson(text: string): unknown {
  const t = text.trimStart();
  if (!t.startsWith('{') && !t.startsWith('[')) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The contract's text: output in a fenced block, then the command metadata. */
export function renderKubectl(result: KubectlResult): string {
  const fence = result.json ? '```json' : '```';
  const note = result.truncated ? `\n\n(output cut at ${MAX_OUTPUT_CHARS} characters: narrow the command with a name, -n, -l or --field-selector, or choose fields with -o jsonpath=... or -o custom-columns=...)` : '';
  return `kubectl command executed successfully:\n${fence}\n${result.output}\n\`\`\`${note}\n\nCommand metadata:\n\`\`\`json\n${JSON.stringify(result.metadata, null, 2)}\n\`\`\``;
}
