import { ShellSyntaxError, splitShellWords } from '../../core/argv.js';
import { BundleError } from './errors.js';

/**
 * Splits a kubectl command line like a shell would split words, without a shell; shell syntax
 * becomes the contract's CommandNotSupportedError, with a hint for kubectl's own filters.
 */
export function splitCommand(line: string): string[] {
  try {
    return splitShellWords(line);
  } catch (err) {
    if (!(err instanceof ShellSyntaxError)) throw err;
    const hint = err.message.includes('shell syntax') ? ' Run one kubectl command and filter with -o jsonpath, -l or --field-selector.' : '';
    throw new BundleError('CommandNotSupportedError', `${err.message}${hint}`);
  }
}

/** Verbs that only read, and so can be answered from a bundle. */
const READ_ONLY = new Set(['get', 'describe', 'logs', 'api-resources', 'api-versions', 'version', 'explain', 'cluster-info', 'events', 'top']);

/** Flags that would point kubectl away from the bundle, or at local files. */
const FORBIDDEN_FLAGS = new Set([
  '--kubeconfig', '--server', '-s', '--token', '--context', '--cluster', '--user', '--as', '--as-group', '--as-uid',
  '--certificate-authority', '--client-certificate', '--client-key', '--username', '--password', '--insecure-skip-tls-verify',
  '--tls-server-name', '-f', '--filename', '-k', '--kustomize', '--cache-dir',
]);

/** Flags whose value is the next word when not written as --flag=value. */
const VALUE_FLAGS = new Set(['-n', '--namespace', '-l', '--selector', '--field-selector', '-o', '--output', '-c', '--container', '--tail', '--since', '--request-timeout', '-v', '--v']);

/**
 * Checks a split command against the read-only policy; returns the argv for kubectl (without the
 * leading "kubectl") and its verb.
 */
export function checkKubectlArgs(words: string[]): { args: string[]; verb: string } {
  const args = words[0] === 'kubectl' ? words.slice(1) : words;
  let verb: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const word = args[i]!;
    const flag = word.split('=', 1)[0]!;
    if (word.startsWith('-')) {
      if (FORBIDDEN_FLAGS.has(flag)) {
        throw new BundleError('CommandNotSupportedError', `Flag '${flag}' is not supported in bundle context: debugkit points kubectl at the bundle itself`);
      }
      if (!word.includes('=') && VALUE_FLAGS.has(flag)) i++;
      continue;
    }
    verb ??= word;
  }
  if (!verb) throw new BundleError('CommandNotSupportedError', 'No kubectl command given: try "get pods -A"');
  if (!READ_ONLY.has(verb)) {
    const allowed = [...READ_ONLY].join(', ');
    throw new BundleError('CommandNotSupportedError', `Command 'kubectl ${verb}' is not supported in bundle context: a bundle is read-only (supported: ${allowed})`);
  }
  return { args, verb };
}

/** True when the command already chooses an output format. */
export function hasOutputFlag(args: string[]): boolean {
  return args.some((a) => a === '-o' || a === '--output' || a.startsWith('-o') || a.startsWith('--output='));
}
