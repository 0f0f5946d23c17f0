import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { SUPPORT_BUNDLES } from './fixtures.js';

export const FIXTURES = SUPPORT_BUNDLES;
export const BUNDLE_2025 = path.join(FIXTURES, 'support-bundle-2025-04-11T14_05_31.tar.gz');
export const BUNDLE_K3S = path.join(FIXTURES, 'support-bundle.tar.gz');
export const BUNDLE_EMPTY = path.join(FIXTURES, 'missing-version.tar.gz');

/** Every pod in an extracted bundle's cluster-resources, as namespace/name, sorted. */
export function podsInBundle(root: string): string[] {
  const dir = path.join(root, 'cluster-resources', 'pods');
  const names: string[] = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json'))) {
    const list = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as { items: Array<{ metadata: { name: string; namespace: string } }> | null };
    for (const pod of list.items ?? []) names.push(`${pod.metadata.namespace}/${pod.metadata.name}`);
  }
  return names.sort();
}

/** The body of the first fenced block of a contract text. */
export function fenced(text: string): string {
  const m = /```[a-z]*\n([\s\S]*?)\n```/.exec(text);
  if (!m) throw new Error(`no fenced block in: ${text.slice(0, 200)}`);
  return m[1]!;
}
