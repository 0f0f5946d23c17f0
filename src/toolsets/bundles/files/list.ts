import { closeSync, type Dirent, type Stats } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { openInside } from '../../../core/paths.js';
import { BundleError } from '../errors.js';
import { childDisplay, isBinaryFile, isoSeconds, mapLimit, resolveBundlePath } from './resolve.js';

export interface FileEntry {
  name: string;
  /** Not in a compact listing of one directory (it is the directory's path and the name). */
  path?: string;
  type: 'file' | 'directory';
  /** Bytes; null for directories. */
  size: number | null;
  /** Not in a compact listing: a bundle's files have the times of their extraction. */
  modified?: string;
  accessed?: string;
  /** Not in a compact listing when false. */
  is_binary?: boolean;
}

export interface ListMetadata {
  path: string;
  recursive: boolean;
  total_files: number;
  total_dirs: number;
  /** Present (true) only when the listing stopped at the entry limit. */
  truncated?: true;
}

export interface ListResult {
  entries: FileEntry[];
  metadata: ListMetadata;
  truncated: boolean;
  text: string;
}

export interface ListOptions {
  /** Most entries listed. Default 150 (each is ~220 characters of JSON: ~8k tokens in all); 400 compact. */
  maxEntries?: number;
  /**
   * One line per entry (its path under the listed directory, a size, "binary"), without the times
   * the contract's JSON gives each (those of the bundle's extraction, not of the cluster).
   */
  compact?: boolean;
}

export const DEFAULT_LIST_MAX_ENTRIES = 150;
/** A compact entry is a line of ~40 characters: more fit in the same answer. */
export const COMPACT_LIST_MAX_ENTRIES = 400;

/**
 * list_files: the entries of a bundle directory (or of its whole subtree with `recursive`):
 * directories first, then files, each by name; a recursive listing goes level by level, like
 * os.walk. Symlinks are shown as what they point to when that is inside the bundle and left out
 * otherwise; symlinked directories are listed but not descended into. Every directory is read,
 * and every file sniffed, through a descriptor checked inside the bundle (core/paths openInside):
 * a directory or file swapped for a link after the check shows nothing from outside.
 */
export async function listFiles(root: string, dirPath = '/', recursive = false, options: ListOptions = {}): Promise<ListResult> {
  const compact = options.compact === true;
  const max = options.maxEntries ?? (compact ? COMPACT_LIST_MAX_ENTRIES : DEFAULT_LIST_MAX_ENTRIES);
  const target = resolveBundlePath(root, dirPath, (d) => new BundleError('PathNotFoundError', `Path '${d}' not found`));
  if (!target.stats.isDirectory()) {
    throw new BundleError('NotADirectoryError', `Path '${target.display}' is a file, not a directory`);
  }

  const entries: FileEntry[] = [];
  const files: { entry: FileEntry; abs: string }[] = [];
  let truncated = false;
  const queue: { abs: string; display: string }[] = [{ abs: target.abs, display: target.display }];
  while (queue.length > 0 && !truncated) {
    const dir = queue.shift()!;
    const { real, children } = await readChildren(target.root, dir.abs);
    for (const child of children) {
      if (entries.length >= max) {
        truncated = true;
        break;
      }
      const display = childDisplay(dir.display, child.name);
      const abs = path.join(real, child.name);
      const entry: FileEntry = {
        name: child.name,
        path: display,
        type: child.isDir ? 'directory' : 'file',
        size: child.isDir ? null : child.stats.size,
        ...(compact ? {} : { modified: isoSeconds(child.stats.mtimeMs), accessed: isoSeconds(child.stats.atimeMs) }),
        is_binary: false,
      };
      entries.push(entry);
      if (child.stats.isFile() && child.stats.size > 0) files.push({ entry, abs });
      if (recursive && child.isDir && !child.isLink) queue.push({ abs, display });
    }
  }
  // Sniff files for binary content, a few at a time.
  await mapLimit(files, 32, async ({ entry, abs }) => {
    entry.is_binary = await isBinaryFile(target.root, abs);
  });

  const metadata: ListMetadata = {
    path: target.display,
    recursive,
    total_files: entries.filter((e) => e.type === 'file').length,
    total_dirs: entries.filter((e) => e.type === 'directory').length,
    ...(truncated ? { truncated: true as const } : {}),
  };
  if (compact) for (const e of entries) slim(e, recursive);
  let text = compact
    ? compactListing(target.display, entries, metadata)
    : `Listed files in ${target.display} ${recursive ? 'recursively' : 'non-recursively'}:\n` +
      `\`\`\`json\n${JSON.stringify(entries, null, 2)}\n\`\`\`\n\n` +
      `Directory metadata:\n\`\`\`json\n${JSON.stringify(metadata, null, 2)}\n\`\`\``;
  if (truncated) {
    text += `\n\nThe listing stopped at ${max} entries (truncated): list a subdirectory${recursive ? ' or list without recursive' : ''}, or find files with grep_files and glob_pattern, to see the rest.`;
  }
  return { entries, metadata, truncated, text };
}

/** A compact listing's entry: what its text line says, no more. */
function slim(e: FileEntry, recursive: boolean): void {
  if (!recursive) delete e.path;
  if (!e.is_binary) delete e.is_binary;
}

/** `dir (2 dirs, 1 file):` then one line per entry: its path under `dir` (a directory ends in `/`), a file's size, `binary`. */
function compactListing(dir: string, entries: readonly FileEntry[], m: ListMetadata): string {
  const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;
  const under = dir.endsWith('/') ? dir : `${dir}/`;
  const lines = entries.map((e) => {
    const name = e.path?.startsWith(under) ? e.path.slice(under.length) : (e.path ?? e.name);
    if (e.type === 'directory') return `${name}/`;
    return `${name} ${humanSize(e.size ?? 0)}${e.is_binary ? ' binary' : ''}`;
  });
  return [`${dir}${m.recursive ? ' (recursive)' : ''}: ${plural(m.total_dirs, 'dir')}, ${plural(m.total_files, 'file')}`, ...lines].join('\n');
}

function humanSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[u]}`;
}

interface Child {
  name: string;
  stats: Stats;
  isDir: boolean;
  isLink: boolean;
}

async function readChildren(realRoot: string, dir: string): Promise<{ real: string; children: Child[] }> {
  const opened = openInside(realRoot, dir, { type: 'directory' });
  if (opened.kind !== 'inside') return { real: dir, children: [] };
  // The checked directory itself, through its descriptor: entries are looked up in it, not by a path that may lead elsewhere by now.
  const here = `/proc/self/fd/${opened.fd}`;
  try {
    let dirents: Dirent[];
    try {
      dirents = await readdir(here, { withFileTypes: true });
    } catch {
      return { real: opened.real, children: [] };
    }
    const children = await mapLimit(dirents, 32, async (d): Promise<Child | null> => {
      let st = await lstat(`${here}/${d.name}`).catch(() => null);
      if (!st) return null;
      const isLink = st.isSymbolicLink();
      if (isLink) {
        // Only links that stay inside the bundle are shown, as what they point to (opened and checked).
        const target = openInside(realRoot, path.join(opened.real, d.name));
        if (target.kind !== 'inside') return null;
        closeSync(target.fd);
        st = target.stats;
      }
      return { name: d.name, stats: st, isDir: st.isDirectory(), isLink };
    });
    const kept = children.filter((c): c is Child => c !== null).sort((a, b) => (a.isDir !== b.isDir ? (a.isDir ? -1 : 1) : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return { real: opened.real, children: kept };
  } finally {
    closeSync(opened.fd);
  }
}
