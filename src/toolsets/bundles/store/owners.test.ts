import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BundleError } from '../errors.js';
import { BundleStore, KEYS_DIR, LOCAL_OWNER, METADATA_FILE, shownSource } from './store.js';
import { SUPPORT_BUNDLES } from '../../../../test/helpers/fixtures.js';

// Bundles belong to the key that added them (issue 17); test/owners.test.ts holds it end to end.
const FIXTURES = SUPPORT_BUNDLES;
const BUNDLE = path.join(FIXTURES, 'support-bundle.tar.gz');

let work: string;
let root: string;
let dir: string;
let store: BundleStore;

beforeAll(async () => {
  work = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'dk-owners-')));
  root = path.join(work, 'root');
  dir = path.join(work, 'store');
  fs.mkdirSync(root);
  fs.copyFileSync(BUNDLE, path.join(root, 'support-bundle.tar.gz'));
  store = new BundleStore(dir, { root });
});
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

async function notFound(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(BundleError);
  expect((err as BundleError).name).toBe('BundleNotFoundError');
  return (err as BundleError).message;
}

describe('bundle owners', () => {
  it('each key has its own names, listing, lookups and reuse; the stdio user keeps the top of the store', async () => {
    const local = await store.add('support-bundle.tar.gz', { owner: LOCAL_OWNER });
    expect(local).toMatchObject({ name: 'support-bundle', path: path.join(dir, 'support-bundle'), reused: false });
    // Another key adding the same archive gets its own copy under the same name: no "-2" hinting at the other.
    const a = await store.add('support-bundle.tar.gz', { owner: 'key_a' });
    expect(a).toMatchObject({ name: 'support-bundle', path: path.join(dir, KEYS_DIR, 'key_a', 'support-bundle'), reused: false });
    expect((await store.add('support-bundle.tar.gz', { owner: 'key_a' })).reused).toBe(true);
    const b = await store.add('support-bundle.tar.gz', { owner: 'key_b' });
    expect(b.path).toBe(path.join(dir, KEYS_DIR, 'key_b', 'support-bundle'));
    expect(JSON.parse(fs.readFileSync(path.join(a.path, METADATA_FILE), 'utf8'))).toMatchObject({ owner: 'key_a' });
    for (const [owner, where] of [
      [LOCAL_OWNER, local.path],
      ['key_a', a.path],
      ['key_b', b.path],
    ] as const) {
      expect((await store.list(owner)).map((e) => e.path)).toEqual([where]);
      expect((await store.get('support-bundle', owner))?.path).toBe(where);
    }
    expect(await store.list('key_c')).toEqual([]);
    expect(await store.get('support-bundle', 'key_c')).toBeNull();
  });

  it("another key's bundle, by name or by a path into the store, is not found exactly as a missing one", async () => {
    const a = (await store.get('support-bundle', 'key_a'))!;
    const inner = fs.readdirSync(a.path).find((f) => !f.startsWith('.'))!;
    const probes: Array<[string, string]> = [
      ['support-bundle', 'no-such-bundle'],
      [a.path, path.join(dir, KEYS_DIR, 'key_a', 'no-such-bundle')],
      [path.join(a.path, inner), path.join(a.path, 'no-such-dir')],
      [path.join(a.path, METADATA_FILE), path.join(a.path, 'no-such-file.tar.gz')],
      [path.join(dir, KEYS_DIR, 'key_a'), path.join(dir, KEYS_DIR, 'key_zzz')],
      [path.join(dir, KEYS_DIR), path.join(dir, '.no-such-dir')],
      // The stdio user's bundle at the top of the store is its own too.
      [path.join(dir, 'support-bundle'), path.join(dir, 'no-such-bundle')],
    ];
    for (const [theirs, missing] of probes) {
      const got = await notFound(store.add(theirs, { owner: 'key_c' }));
      const none = await notFound(store.add(missing, { owner: 'key_c' }));
      expect(got.split(theirs).join('X'), theirs).toBe(none.split(missing).join('X'));
    }
    // Its own home is no bundle directory, as the store itself is not.
    fs.mkdirSync(path.join(dir, KEYS_DIR, 'key_c'), { recursive: true });
    const home = await store.add(path.join(dir, KEYS_DIR, 'key_c'), { owner: 'key_c' }).catch((e: BundleError) => e);
    expect(home).toMatchObject({ name: 'SecurityError' });
    expect(await store.list('key_c')).toEqual([]);
  });

  it('a bundle with no owner recorded is shared; its name is taken for every key that sees it', async () => {
    fs.mkdirSync(path.join(dir, 'shared-one', 'cluster-resources'), { recursive: true });
    for (const owner of ['key_a', 'key_c', LOCAL_OWNER]) {
      expect((await store.list(owner)).map((e) => e.name)).toContain('shared-one');
      expect(await store.add('shared-one', { owner })).toMatchObject({ name: 'shared-one', path: path.join(dir, 'shared-one'), kind: 'directory', reused: true });
    }
    // A directory of the same name in the workspace root, used in place, is the key's own bundle: named apart.
    fs.mkdirSync(path.join(root, 'shared-one', 'cluster-resources'), { recursive: true });
    expect(await store.add('shared-one', { owner: 'key_c' })).toMatchObject({ name: 'shared-one-2', path: path.join(root, 'shared-one'), reused: false });
  });

  it('shows a URL without its query string or credentials', () => {
    expect(shownSource('https://bundles.example.com/b.tar.gz?X-Amz-Signature=abc&x=1#frag')).toBe('https://bundles.example.com/b.tar.gz?…');
    expect(shownSource('https://user:pass@bundles.example.com/b.tar.gz')).toBe('https://bundles.example.com/b.tar.gz');
    expect(shownSource('https://vendor.replicated.com/troubleshoot/analyze/2024-04-11@08:15')).toBe('https://vendor.replicated.com/troubleshoot/analyze/2024-04-11@08:15');
    expect(shownSource('/work/bundles/b.tar.gz')).toBe('/work/bundles/b.tar.gz');
  });
});
