import { readdirSync, realpathSync, statSync } from 'node:fs';
import { isInside } from '../../../core/paths.js';
import { TimeSlice } from '../../../core/wait.js';
import type { GlobMatcher } from './glob.js';
import { progress } from './grep-scan.js';
import { childDisplay } from './resolve.js';

/** The search runs synchronously in slices of about this long, then lets other work run. */
const SLICE_MS = 20;

/**
 * Visits the files under `dir` in a stable order: depth first, a directory's subdirectories (by
 * name) before its own files (by name), which lists /kubernetes/logs/... before
 * /kubernetes/events.log as the contract's example does. Symlinks are followed only to files
 * inside the bundle, and those are visited last, skipping any whose real file was visited.
 */
export async function walk(
  realRoot: string,
  dir: string,
  display: string,
  recursive: boolean,
  matcher: GlobMatcher | null,
  visit: (abs: string, display: string, linked: boolean) => void,
  stop: () => boolean,
  onDir?: (dir: string) => void,
): Promise<void> {
  const visited = new Set<string>();
  const linked: { real: string; display: string }[] = [];
  type Task = { dir: string; display: string; rel: string } | { files: { abs: string; display: string }[] };
  const stack: Task[] = [{ dir, display, rel: '' }];
  const slice = new TimeSlice(SLICE_MS);
  while (stack.length > 0) {
    const task = stack.pop()!;
    if ('files' in task) {
      for (const f of task.files) {
        progress();
        visited.add(f.abs);
        visit(f.abs, f.display, false);
        if (stop()) return;
        await slice.pause();
      }
      continue;
    }
    let dirents;
    progress();
    onDir?.(task.dir);
    try {
      dirents = readdirSync(task.dir, { withFileTypes: true });
    } catch {
      continue;
    }
    dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const files: { abs: string; display: string }[] = [];
    const subdirs: Task[] = [];
    for (const d of dirents) {
      const abs = `${task.dir}/${d.name}`;
      const rel = task.rel === '' ? d.name : `${task.rel}/${d.name}`;
      if (d.isDirectory()) {
        if (recursive) subdirs.push({ dir: abs, display: childDisplay(task.display, d.name), rel });
      } else if (d.isFile()) {
        if (!matcher || matcher.matches(rel)) files.push({ abs, display: childDisplay(task.display, d.name) });
      } else if (d.isSymbolicLink()) {
        if (matcher && !matcher.matches(rel)) continue;
        let real: string;
        try {
          real = realpathSync.native(abs);
        } catch {
          continue;
        }
        if (!isInside(realRoot, real)) continue;
        if (statSync(real, { throwIfNoEntry: false })?.isFile()) linked.push({ real, display: childDisplay(task.display, d.name) });
      }
    }
    // Popped in order: the subdirectories first, then this directory's files.
    stack.push({ files });
    for (let i = subdirs.length - 1; i >= 0; i--) stack.push(subdirs[i]!);
  }
  for (const l of linked) {
    progress();
    if (visited.has(l.real)) continue;
    visited.add(l.real);
    visit(l.real, l.display, true);
    if (stop()) return;
    await slice.pause();
  }
}
