import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';

/** True for a regular file this process may execute. */
export function isExecutableFile(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * Where a command name would be found on PATH, as a shell would look it up (the first executable
 * file of that name in PATH's absolute directories), or null. A name with a slash is itself a path.
 */
export function findOnPath(name: string, searchPath = process.env.PATH ?? ''): string | null {
  if (name.includes('/')) return isExecutableFile(name) ? path.resolve(name) : null;
  for (const dir of searchPath.split(path.delimiter)) {
    if (!dir || !path.isAbsolute(dir)) continue;
    const candidate = path.join(dir, name);
    if (isExecutableFile(candidate)) return candidate;
  }
  return null;
}
