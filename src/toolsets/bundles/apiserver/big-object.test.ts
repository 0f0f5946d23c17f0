import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_OBJECT_KEYS } from './parse.js';
import { startBundleApiServer, type BundleApiServer } from './server.js';

/**
 * Attack 18an Z2: an object just under the bound on one (parse.ts MAX_OBJECT_BYTES), a ConfigMap of 330,000 keys, was
 * written with one JSON.stringify of 230 ms on every get, holding every other client. Asserted by what is serialized in one
 * call (the answer's pieces, not the whole), which a loaded host cannot change.
 */

/** Keys of one map: just within MAX_OBJECT_KEYS for `cm`, past it for `wide`. */
const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`key-${i}`, `value-${i}`]));
const cm = { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'cm', namespace: 'a' }, data: keys(MAX_OBJECT_KEYS - 10) };
const wide = { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'wide', namespace: 'a' }, data: keys(MAX_OBJECT_KEYS + 10) };
const small = { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'small', namespace: 'a' }, data: { a: '1' } };

let root: string;
let server: BundleApiServer;
beforeAll(async () => {
  root = await realpath(await mkdtemp(path.join(tmpdir(), 'debugkit-big-object-')));
  mkdirSync(path.join(root, 'cluster-resources', 'configmaps'), { recursive: true });
  writeFileSync(path.join(root, 'cluster-resources', 'configmaps', 'a.json'), JSON.stringify({ kind: 'ConfigMapList', items: [cm, small, wide] }));
  server = await startBundleApiServer({ root, collectedAt: new Date() });
});
afterAll(async () => {
  await server?.close();
  await rm(root, { recursive: true, force: true });
});

/** Runs `work` while noting the longest text any JSON.stringify call made. */
async function longestStringify<T>(work: () => Promise<T>): Promise<{ longest: number; value: T }> {
  const stringify = JSON.stringify;
  let longest = 0;
  JSON.stringify = ((...args: Parameters<typeof stringify>) => {
    const text = stringify(...args);
    if (typeof text === 'string' && text.length > longest) longest = text.length;
    return text;
  }) as typeof stringify;
  try {
    const value = await work();
    return { longest, value };
  } finally {
    JSON.stringify = stringify;
  }
}

describe('a get of an object near the bound on one', () => {
  it('is written in slices, never in one JSON.stringify, and answers the same bytes', async () => {
    const url = `${server.url}/api/v1/namespaces/a/configmaps/cm`;
    // The first get also loads the file (parsed off the loop): measured on the second.
    expect((await fetch(url)).status).toBe(200);
    for (const accept of ['application/json', 'application/json;as=Table;v=v1;g=meta.k8s.io']) {
      let text = '';
      const { longest } = await longestStringify(async () => {
        const res = await fetch(`${url}?includeObject=Object`, { headers: { Accept: accept } });
        expect(res.status).toBe(200);
        text = await res.text();
      });
      // Before: the whole answer (over 1 MB) in one JSON.stringify. Now the longest piece is one value.
      expect(longest).toBeLessThan(1024);
      expect(text.length).toBeGreaterThan(1_000_000);
      if (accept === 'application/json') expect(text).toBe(JSON.stringify(cm));
      else expect(JSON.parse(text)).toMatchObject({ kind: 'Table', rows: [{ object: cm }] });
    }
  }, 60_000);
});

describe('an object with a map of more keys than MAX_OBJECT_KEYS', () => {
  it('is left out (listing the keys of one map cannot be sliced), with a Warning naming it; the objects beside it are served', async () => {
    // Object.keys of a map of 330,000 keys took 150-250 ms in one step, on every get, even with the answer written in slices.
    const res = await fetch(`${server.url}/api/v1/namespaces/a/configmaps/wide`);
    expect(res.status).toBe(404);
    expect(res.headers.get('warning')).toMatch(
      new RegExp(`^299 - "a\\.json: 1 object left out, with a map of more than the ${MAX_OBJECT_KEYS} keys any object served may have in one: a/wide \\(${MAX_OBJECT_KEYS + 10} keys\\)"$`),
    );
    const list = (await (await fetch(`${server.url}/api/v1/namespaces/a/configmaps`)).json()) as { items: Array<{ metadata: { name: string } }> };
    expect(list.items.map((o) => o.metadata.name)).toEqual(['cm', 'small']);
  });
});
