import { ShellSyntaxError, splitShellWords } from '../../core/argv.js';
import { BundleError } from './errors.js';
import { parseKubectl, type KubectlCommand } from './kubectl-policy.js';

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

/** Splits and checks a kubectl command line: the policy's parse, with the argv to run. */
export function parseCommand(line: string): KubectlCommand {
  return parseKubectl(splitCommand(line));
}
