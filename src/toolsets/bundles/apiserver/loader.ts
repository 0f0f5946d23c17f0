import { closeSync, readFile as readFd, type Stats } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { openInside } from '../../../core/paths.js';
import { isRecord, type K8sObject } from './json.js';

/** What one bundle file holds once parsed. */
export interface LoadedFile {
  /** The list's own `kind` (e.g. "PodList") when it has one; older bundles omit it. */
  listKind?: string;
  items: K8sObject[];
}

/** Turns whatever a bundle file contains into items: a List, a bare array, one object, or nothing. */
export function toLoadedFile(data: unknown): LoadedFile {
  if (Array.isArray(data)) return { items: data.filter(isRecord) };
  if (!isRecord(data)) return { items: [] };
  if ('items' in data) {
    // `"items": null` is common in bundles: an empty list.
    const items = Array.isArray(data.items) ? data.items.filter(isRecord) : [];
    return { listKind: typeof data.kind === 'string' ? data.kind : undefined, items };
  }
  // A single object has kind and metadata; anything else (an errors map) holds no objects.
  return isRecord(data.metadata) && typeof data.kind === 'string' ? { items: [data] } : { items: [] };
}

/**
 * Reads and parses bundle files at most once each. Bundles can be hundreds of megabytes, so
 * nothing is read until a request needs it, and concurrent requests share one parse.
 */
export class FileCache {
  private readonly files = new Map<string, Promise<LoadedFile>>();
  private readonly dirs = new Map<string, Promise<string[]>>();
  /** Why a file yielded nothing (a parse error), by path: sent to clients as warnings. */
  readonly problems = new Map<string, string>();

  /** `realRoot`: the bundle's real path; files whose path leads out of it (links) are never read. */
  constructor(private readonly realRoot?: string) {}

  /**
   * A bundle file or directory opened and checked inside the bundle (core/paths openInside), or
   * undefined: what was checked is what is read, through `fd` (close it), never the path again.
   */
  open(file: string, type: 'file' | 'directory' | 'any' = 'any'): { fd: number; stats: Stats } | undefined {
    const opened = openInside(this.realRoot ?? '/', file, { type });
    return opened.kind === 'inside' ? { fd: opened.fd, stats: opened.stats } : undefined;
  }

  /** A bundle file's text, read through a checked descriptor; throws when it is missing or leads out. */
  private async readText(file: string): Promise<string> {
    const opened = this.open(file, 'file');
    if (opened === undefined) throw new Error('it is missing, or a link leading out of the bundle');
    try {
      return await readFdText(opened.fd, 'utf8');
    } finally {
      closeSync(opened.fd);
    }
  }

  load(file: string): Promise<LoadedFile> {
    let p = this.files.get(file);
    if (!p) {
      p = this.parse(file);
      this.files.set(file, p);
    }
    return p;
  }

  private async parse(file: string): Promise<LoadedFile> {
    try {
      const text = await this.readText(file);
      if (file.endsWith('.json')) return toLoadedFile(JSON.parse(text));
      // Custom resources in older bundles exist only as .yaml.
      return toLoadedFile(parseYaml(text));
    } catch (err) {
      this.problems.set(file, `${path.basename(file)} skipped: ${err instanceof Error ? err.message : String(err)}`);
      return { items: [] };
    }
  }

  /** A JSON file's parsed content as is (not as a list), or undefined when absent or invalid. */
  loadRaw(file: string): Promise<unknown> {
    return this.readText(file)
      .then(
        (text) => JSON.parse(text) as unknown,
        () => undefined,
      )
      .catch(() => undefined);
  }

  /** Regular files of a directory (no subdirectories), or [] when it is absent. */
  listDir(dir: string): Promise<string[]> {
    let p = this.dirs.get(dir);
    if (!p) {
      const opened = this.open(dir, 'directory');
      // Read through the checked descriptor (/proc/self/fd/N is the directory that was checked).
      p =
        opened === undefined
          ? Promise.resolve([])
          : readdir(`/proc/self/fd/${opened.fd}`, { withFileTypes: true })
              .then(
                (entries) =>
                  entries
                    .filter((e) => e.isFile())
                    .map((e) => e.name)
                    .sort(),
                () => [],
              )
              .finally(() => closeSync(opened.fd));
      this.dirs.set(dir, p);
    }
    return p;
  }
}

const readFdText = promisify(readFd) as (fd: number, encoding: 'utf8') => Promise<string>;

export async function isDirectory(p: string): Promise<boolean> {
  return stat(p).then(
    (s) => s.isDirectory(),
    () => false,
  );
}
