import { homedir } from 'node:os';
import path from 'node:path';

/**
 * Where debugkit keeps its own files, after the XDG base directory specification. Both read the
 * environment at each call, so a process (or a test) that changes it is followed.
 */

/** debugkit's data directory: $XDG_DATA_HOME/debugkit, else ~/.local/share/debugkit (keys, the audit, crash signatures, the CA); `parts` below it. */
export function debugkitDataDir(...parts: string[]): string {
  const data = process.env.XDG_DATA_HOME || path.join(homedir(), '.local', 'share');
  return path.join(data, 'debugkit', ...parts);
}

/** debugkit's cache directory: $XDG_CACHE_HOME/debugkit, else ~/.cache/debugkit (extracted bundles, parsed mock sets); `parts` below it. */
export function debugkitCacheDir(...parts: string[]): string {
  const cache = process.env.XDG_CACHE_HOME || path.join(homedir(), '.cache');
  return path.join(cache, 'debugkit', ...parts);
}
