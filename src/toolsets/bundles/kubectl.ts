import { spawnChild, terminate } from '../../core/process.js';
import { checkKubectlArgs, hasOutputFlag, splitCommand } from './command.js';
import { BundleError } from './errors.js';

/** Most output kept from one kubectl run (about 25k tokens is the ceiling for one answer). */
const MAX_OUTPUT_CHARS = 90_000;

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
  const proc = await spawnChild(req.kubectl, argv, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, KUBECONFIG: req.kubeconfig, KUBECTL_COMMAND_HEADERS: 'false' },
  });
  let stdout = '';
  let stderr = '';
  let truncated = false;
  proc.child.stdout!.setEncoding('utf8').on('data', (text: string) => {
    if (stdout.length < MAX_OUTPUT_CHARS) stdout += text;
    else truncated = true;
  });
  proc.child.stderr!.setEncoding('utf8').on('data', (text: string) => {
    if (stderr.length < 16_384) stderr += text;
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    void terminate(proc, { graceMs: 500 });
  }, req.timeoutSeconds * 1000);
  const onAbort = () => void terminate(proc, { graceMs: 200 });
  req.signal?.addEventListener('abort', onAbort, { once: true });
  const exit = await proc.exited.finally(() => {
    clearTimeout(timer);
    req.signal?.removeEventListener('abort', onAbort);
  });
  const command = ['kubectl', ...argv].join(' ');
  if (timedOut) throw new BundleError('KubectlError', `Kubectl command timed out after ${req.timeoutSeconds} s: ${command} (raise timeout, or narrow with -n / -l)`);
  const exitCode = exit.code ?? 1;
  if (exitCode !== 0) {
    throw new BundleError('KubectlError', `Kubectl command failed: ${stderr.trim() || `exit code ${exitCode}`}`);
  }
  if (stdout.length > MAX_OUTPUT_CHARS) {
    stdout = stdout.slice(0, MAX_OUTPUT_CHARS);
    truncated = true;
  }
  const json = !truncated && looksLikeJson(stdout);
  const output = json ? JSON.stringify(JSON.parse(stdout), null, 2) : stdout.replace(/\n$/, '');
  return { output, json, truncated, metadata: { command, exit_code: exitCode, duration_ms: Date.now() - started } };
}

function looksLikeJson(text: string): boolean {
  const t = text.trimStart();
  if (!t.startsWith('{') && !t.startsWith('[')) return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** The contract's text: output in a fenced block, then the command metadata. */
export function renderKubectl(result: KubectlResult): string {
  const fence = result.json ? '```json' : '```';
  const note = result.truncated ? `\n\n(output truncated at ${MAX_OUTPUT_CHARS} characters: narrow the command with -n, -l, --field-selector or -o jsonpath)` : '';
  return `kubectl command executed successfully:\n${fence}\n${result.output}\n\`\`\`${note}\n\nCommand metadata:\n\`\`\`json\n${JSON.stringify(result.metadata, null, 2)}\n\`\`\``;
}
