import { rmSync } from 'node:fs';
import { afterAll } from 'vitest';

/**
 * Temporary directories the helpers make for a test file (tempDir, a server's private
 * --data-dir), removed once the file's own afterAll hooks (which stop its servers) have run.
 * vitest ends each file's worker process without running its 'exit' handlers, so a removal left
 * to those never ran: a full run left some 350 data directories in the temp dir.
 */
const made: string[] = [];

/** `dir` is removed when the test file ends. */
export function removeAtFileEnd(dir: string): string {
  made.push(dir);
  return dir;
}

// A setup file (vitest.config.ts setupFiles): registered before the file's own hooks, so run after them.
afterAll(() => {
  for (const dir of made.splice(0)) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // A process the file left running may still write there: the directory stays, nothing fails.
    }
  }
});
