import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { containment } from '../../../core/paths.js';
import { at, isRecord, type K8sObject } from './json.js';

/** What one bundle file holds once parsed. */
export interface LoadedFile {
  /** The list's own `kind` (e.g. "PodList") when it has one; older bundles omit it. */
  listKind?: string;
  items: K8sObject[];
}

/** A parse function with the `yaml` package's signature. */
type YamlParse = (text: string) => unknown;

// Kept in a variable so TypeScript does not require the package at compile time: `yaml` is
// only a transitive dev dependency of this project today, and custom resources in older
// bundles exist only as .yaml. Without it those files are skipped and the list says so.
const YAML_MODULE: string = 'yaml';
let yamlParse: Promise<YamlParse | undefined> | undefined;

export function loadYamlParser(): Promise<YamlParse | undefined> {
  yamlParse ??= import(YAML_MODULE).then(
    (m: unknown) => {
      const parse = at(m, 'parse') ?? at(m, 'default', 'parse');
      return typeof parse === 'function' ? (parse as YamlParse) : undefined;
    },
    () => undefined,
  );
  return yamlParse;
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
  /** Why a file yielded nothing (parse error, no YAML parser), by path: sent to clients as warnings. */
  readonly problems = new Map<string, string>();

  /** `realRoot`: the bundle's real path; files whose path leads out of it (links) are never read. */
  constructor(private readonly realRoot?: string) {}

  /**
   * The real path of a bundle file when it is inside the bundle, else undefined: the same
   * containment as read_file, so a link to a host file is never served.
   */
  inside(file: string): string | undefined {
    if (this.realRoot === undefined) return file;
    const where = containment(this.realRoot, file);
    return where.kind === 'inside' ? where.real : undefined;
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
      const real = this.inside(file);
      if (real === undefined) throw new Error('it is missing, or a link leading out of the bundle');
      const text = await readFile(real, 'utf8');
      if (file.endsWith('.json')) return toLoadedFile(JSON.parse(text));
      const parse = await loadYamlParser();
      if (!parse) {
        this.problems.set(file, `${path.basename(file)} skipped: no YAML parser (the "yaml" package is not installed)`);
        return { items: [] };
      }
      return toLoadedFile(parse(text));
    } catch (err) {
      this.problems.set(file, `${path.basename(file)} skipped: ${err instanceof Error ? err.message : String(err)}`);
      return { items: [] };
    }
  }

  /** A JSON file's parsed content as is (not as a list), or undefined when absent or invalid. */
  loadRaw(file: string): Promise<unknown> {
    const real = this.inside(file);
    if (real === undefined) return Promise.resolve(undefined);
    return readFile(real, 'utf8').then(
      (text) => JSON.parse(text) as unknown,
      () => undefined,
    ).catch(() => undefined);
  }

  /** Regular files of a directory (no subdirectories), or [] when it is absent. */
  listDir(dir: string): Promise<string[]> {
    let p = this.dirs.get(dir);
    if (!p) {
      const real = this.inside(dir);
      p = real === undefined ? Promise.resolve([]) : readdir(real, { withFileTypes: true }).then(
        (entries) => entries.filter((e) => e.isFile()).map((e) => e.name).sort(),
        () => [],
      );
      this.dirs.set(dir, p);
    }
    return p;
  }
}

export async function isDirectory(p: string): Promise<boolean> {
  return stat(p).then((s) => s.isDirectory(), () => false);
}
