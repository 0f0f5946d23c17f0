import { access } from 'node:fs/promises';
import path from 'node:path';
import { runBounded } from '../../core/run.js';
import { parseCommand } from './command.js';
import type { KubectlCommand } from './kubectl-policy.js';
import { BundleError } from './errors.js';

/** Most output in one answer: about 8k tokens, well below the ~25k-token ceiling of one answer. */
export const MAX_OUTPUT_CHARS = 32_000;
/** Most read from kubectl: JSON is re-indented or compacted after reading, so it may start larger. */
const MAX_RAW_CHARS = 16 * 1024 * 1024;

export interface KubectlRequest {
  kubectl: string;
  kubeconfig: string;
  command: string;
  timeoutSeconds: number;
  jsonOutput: boolean;
  signal?: AbortSignal;
  /** For a cut log: where its file is in the bundle, so the answer can say how to read earlier lines. */
  logFile?: (policy: KubectlCommand) => string | undefined;
}

export interface KubectlResult {
  output: string;
  /** True when the output is JSON (and was re-indented). */
  json: boolean;
  truncated: boolean;
  /** When truncated: what was cut and the exact argument that narrows or pages. */
  hint?: string;
  /** kubectl's `Warning:` lines (bounded, see warningsOf), when it printed any. */
  warnings?: string[];
  metadata: { command: string; exit_code: number; duration_ms: number };
}

/** Runs one read-only kubectl command against the bundle's API server, bounded in time and output. */
export async function runKubectl(req: KubectlRequest): Promise<KubectlResult> {
  const policy = parseCommand(req.command);
  const argv = req.jsonOutput && policy.verb === 'get' && policy.output === undefined ? [...policy.argv, '-o', 'json'] : policy.argv;
  const started = Date.now();
  // Always this kubeconfig, named on the command line: kubectl fails when an explicit file is
  // missing, where a missing KUBECONFIG file would send it to http://localhost:8080.
  const present = await access(req.kubeconfig).then(
    () => true,
    () => false,
  );
  if (!present) {
    throw new BundleError('KubectlError', `The bundle's API server is no longer running (its kubeconfig ${req.kubeconfig} is gone): call initialize_bundle again`);
  }
  const run = await runBounded({
    command: req.kubectl,
    args: ['--kubeconfig', req.kubeconfig, ...argv],
    // describe names itself to the API server (Kubectl-Command), which then dates events as of collection.
    // KUBECACHEDIR (kubectl 1.25+): discovery is cached beside the kubeconfig, in debugkit's private
    // directory, so an unwritable HOME never makes every call run cold and ~/.kube gets no entries
    // for the bundle servers' short-lived ports.
    env: {
      ...process.env,
      KUBECONFIG: req.kubeconfig,
      KUBECACHEDIR: path.join(path.dirname(req.kubeconfig), 'kube-cache'),
      KUBECTL_COMMAND_HEADERS: policy.verb === 'describe' ? 'true' : 'false',
    },
    timeoutMs: req.timeoutSeconds * 1000,
    signal: req.signal,
    maxOutputChars: MAX_RAW_CHARS,
    keep: policy.verb === 'logs' ? 'tail' : 'head', // a log keeps its end
  });
  const { stdout, timedOut } = run;
  // The API server's token is in its URL (workspace.ts): never shown, even in kubectl's errors.
  const stderr = run.stderr.slice(0, 16_384).replace(/\/dk-[\w-]{43}(?![\w-])/g, '');
  const rolled = policy.verb === 'logs' && run.stdoutTruncated; // a log's start was dropped to keep its end
  const truncated = policy.verb !== 'logs' && run.stdoutTruncated;
  const exit = run;
  const command = ['kubectl', ...argv].join(' ');
  if (timedOut) throw new BundleError('KubectlError', `Kubectl command timed out after ${req.timeoutSeconds} s: ${command} (raise timeout, or narrow with -n / -l)`);
  const exitCode = exit.code ?? 1;
  if (exitCode !== 0) {
    throw new BundleError('KubectlError', `Kubectl command failed: ${stderr.trim() || `exit code ${exitCode}`}`);
  }
  const metadata = { command, exit_code: exitCode, duration_ms: Date.now() - started };
  const warned = warningsOf(stderr);
  const warnings = warned.length > 0 ? { warnings: warned } : {};
  // A log is text even when its lines are JSON.
  const parsed = truncated || policy.verb === 'logs' ? undefined : parseJson(stdout);
  if (parsed !== undefined) return { ...fitJson(parsed), ...warnings, metadata };
  const text = stdout.replace(/\n$/, '');
  if (text.length <= MAX_OUTPUT_CHARS && !truncated) return { output: text, json: false, truncated: false, ...warnings, metadata };
  if (policy.verb === 'logs') return { ...keepEnd(text, rolled ? undefined : req.logFile?.(policy), rolled), ...warnings, metadata };
  const cut = text.lastIndexOf('\n', MAX_OUTPUT_CHARS);
  const head = text.slice(0, cut > 0 ? cut : MAX_OUTPUT_CHARS);
  const shown = head.split('\n').length;
  const hint = `Output cut after ${shown} of ${text.split('\n').length} lines (${MAX_OUTPUT_CHARS} characters an answer holds): narrow the command with a name, -n NAMESPACE, -l SELECTOR or --field-selector, or choose fields with -o custom-columns=... or -o jsonpath=...`;
  return { output: head, json: false, truncated: true, hint, ...warnings, metadata };
}

/** Most of kubectl's warnings an answer shows, and most characters of each; the rest are counted. */
const MAX_WARNINGS = 5;
const MAX_WARNING_CHARS = 500;

/**
 * kubectl's `Warning:` lines (the API server's, e.g. a bundle file it skipped) from a run that
 * succeeded: the first few, cut to a line's budget, then how many more there were.
 */
export function warningsOf(stderr: string): string[] {
  const lines = stderr.split('\n').filter((l) => /^Warning: /.test(l));
  const shown = lines.slice(0, MAX_WARNINGS).map((l) => (l.length > MAX_WARNING_CHARS ? `${l.slice(0, MAX_WARNING_CHARS)}…` : l));
  if (lines.length > MAX_WARNINGS) shown.push(`… and ${lines.length - MAX_WARNINGS} more warnings`);
  return shown;
}

/** A log keeps its end (the newest lines, where failures are), and says how to read what came before. */
export function keepEnd(text: string, file: string | undefined, rolled = false): Pick<KubectlResult, 'output' | 'json' | 'truncated' | 'hint'> {
  const lines = text.split('\n');
  let chars = 0;
  let first = lines.length;
  while (first > 0 && chars + lines[first - 1]!.length + 1 <= MAX_OUTPUT_CHARS) chars += lines[--first]!.length + 1;
  if (first === lines.length) first = lines.length - 1; // one line longer than the budget: show its end
  const kept = lines.slice(first);
  if (kept.length === 1 && kept[0]!.length > MAX_OUTPUT_CHARS) kept[0] = `… ${kept[0]!.slice(-MAX_OUTPUT_CHARS)}`;
  const earlier = file
    ? `read_file {"path": "${file}", "start_line": 1, "end_line": ${first}} reads the earlier lines`
    : 'read_file on the log under /cluster-resources/pods/logs/NAMESPACE/POD/ reads the earlier lines';
  const hint = rolled
    ? `Showing the last ${kept.length} lines of a log over ${MAX_RAW_CHARS} characters (${MAX_OUTPUT_CHARS} characters an answer holds). Use --tail N for fewer, or ${earlier}.`
    : `Showing the last ${kept.length} of ${lines.length} lines (lines ${first + 1}-${lines.length}; ${MAX_OUTPUT_CHARS} characters an answer holds). Use --tail N for fewer, or ${earlier}.`;
  return { output: kept.join('\n'), json: false, truncated: true, hint };
}

/**
 * JSON as the contract shows it (indented) when that fits the budget, compact when only that
 * fits; otherwise a note with the size and, for lists, the items' names to narrow down with.
 */
function fitJson(value: unknown): Pick<KubectlResult, 'output' | 'json' | 'truncated' | 'hint'> {
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
    hint: 'Get one item as JSON (get pod NAME -n NAMESPACE -o json), narrow with -n NAMESPACE, -l SELECTOR or --field-selector, choose fields with -o jsonpath=... or -o custom-columns=..., or leave json_output false for a table.',
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
  const note = result.truncated && result.hint ? `\n\n(${result.hint})` : '';
  const warned = result.warnings?.length ? `\n\nkubectl warned:\n${result.warnings.join('\n')}` : '';
  return `kubectl command executed successfully:\n${fence}\n${result.output}\n\`\`\`${note}${warned}\n\nCommand metadata:\n\`\`\`json\n${JSON.stringify(result.metadata, null, 2)}\n\`\`\``;
}
