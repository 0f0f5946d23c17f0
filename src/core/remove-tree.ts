import { lstat, opendir, rmdir, unlink } from 'node:fs/promises';
import path from 'node:path';

/** Calls in flight at once while a tree is removed. */
const REMOVE_IN_FLIGHT = 8;

/**
 * Removes `target` and, for a directory, everything under it (links are removed, never followed):
 * asynchronously, at most REMOVE_IN_FLIGHT calls at a time, so the event loop keeps turning however
 * large the tree. fs.promises.rm(recursive) starts a call for every entry of a directory at once; for
 * an extraction of 190,000 files (100 directories of 1,900) their completions came back in batches
 * that held the event loop 2.8 s (0.7 s for 50,000). Missing is fine (as rm's `force`).
 */
export async function removeTree(target: string): Promise<void> {
  const st = await lstat(target).catch(orMissing);
  if (!st) return;
  if (!st.isDirectory()) return void (await unlink(target).catch(orMissing));
  const dirs: string[] = [];
  const stack = [target];
  while (stack.length > 0) {
    const dir = stack.pop()!;
    // The names first (opendir reads them a batch at a time, never one array of a huge directory), then the removals.
    const files: string[] = [];
    try {
      for await (const d of await opendir(dir, { bufferSize: 128 })) (d.isDirectory() ? stack : files).push(path.join(dir, d.name));
    } catch (err) {
      orMissing(err);
      continue;
    }
    dirs.push(dir);
    let next = 0;
    const remover = async () => {
      while (next < files.length) await unlink(files[next++]!).catch(orMissing);
    };
    await Promise.all(Array.from({ length: Math.min(REMOVE_IN_FLIGHT, files.length) }, remover));
  }
  // Each directory was listed after its parent: the deepest go first.
  for (let i = dirs.length - 1; i >= 0; i--) await rmdir(dirs[i]!).catch(orMissing);
}

/** undefined for a path that is gone (ENOENT); any other error is thrown. */
function orMissing(err: unknown): undefined {
  if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  return undefined;
}
