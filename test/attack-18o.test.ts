import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectStdio, type TestClient } from './helpers/client.js';
import { race } from './helpers/flipper.js';
import { tempDir } from './helpers/programs.js';

/**
 * Attack round 18o (issue 18), as a key holder with a writer inside the root: a bundle directory
 * added from the root was served through its name, resolved again at every call, so the writer
 * replacing it by a link to /etc after initialize_bundle had `read_file /shadow` answer
 * /etc/shadow (every try, no race); and initialize_bundle resolved the source twice, recording
 * the second answer (5 of 60 tries recorded a directory outside the root).
 */

const SECRET = 'OUTSIDE-SECRET-18o';
let base: string;
let root: string;
let dk: TestClient;

/** A bundle directory: a pod list naming `pod`, and a log file holding `text`. */
function bundleDir(dir: string, pod: string, text: string): void {
  mkdirSync(path.join(dir, 'cluster-resources/pods'), { recursive: true });
  const item = { apiVersion: 'v1', kind: 'Pod', metadata: { name: pod, namespace: 'ns' }, spec: { containers: [{ name: 'c', image: 'x' }] } };
  writeFileSync(path.join(dir, 'cluster-resources/pods/ns.json'), JSON.stringify({ kind: 'PodList', apiVersion: 'v1', items: [item] }));
  writeFileSync(path.join(dir, 'notes.log'), `${text}\n`);
}

beforeAll(async () => {
  base = tempDir('debugkit-18o-');
  root = path.join(base, 'root');
  bundleDir(path.join(root, 'bd'), 'inside-pod', 'inside-notes');
  bundleDir(path.join(base, 'outside/bd'), 'secret-pod', SECRET);
  symlinkSync(path.join(base, 'outside/bd'), path.join(root, 'bd.swap'));
  dk = await connectStdio({ root });
});

afterAll(async () => {
  await dk?.close();
  if (base) rmSync(base, { recursive: true, force: true });
});

/** Swaps root/bd (the directory) and root/bd.swap (the link out). */
function swap(): void {
  renameSync(path.join(root, 'bd'), path.join(root, 'bd.tmp'));
  renameSync(path.join(root, 'bd.swap'), path.join(root, 'bd'));
  renameSync(path.join(root, 'bd.tmp'), path.join(root, 'bd.swap'));
}

describe('attack 18o: a bundle directory replaced by a link out of the root after initialize_bundle', () => {
  it('read_file, list_files, grep_files and kubectl serve nothing from where the link leads, and say the bundle must be initialized again', async () => {
    const init = await dk.tool('initialize_bundle', { source: 'bd' });
    expect(init.isError).toBe(false);
    expect((await dk.tool('read_file', { path: '/notes.log' })).text).toContain('inside-notes');
    swap();
    try {
      const answers = [
        await dk.tool('read_file', { path: '/notes.log' }),
        await dk.tool('list_files', { path: '/', recursive: true }),
        await dk.tool('grep_files', { pattern: 'SECRET|secret', path: '/' }),
        await dk.tool('kubectl', { command: 'get pods -A' }),
      ];
      for (const a of answers) {
        expect(a.text).not.toContain(SECRET);
        expect(a.text).not.toContain('secret-pod');
      }
      for (const a of answers.slice(0, 3)) {
        expect(a.isError).toBe(true);
        expect(a.text).toMatch(/was replaced by a link since the bundle was initialized; initialize the bundle again/);
      }
      // Given again, the name leads out of the root: refused, as any source outside it is.
      const again = await dk.tool('initialize_bundle', { source: 'bd', force: true });
      expect(again.isError).toBe(true);
      expect(again.text).toMatch(/outside the workspace root/);
    } finally {
      swap();
    }
  });

  it('initialize_bundle while the source flips between the directory and the link: what is recorded is always the directory inside the root', async () => {
    const counts = await race(path.join(root, 'bd'), path.join(root, 'bd.swap'), 60, async () => {
      const r = await dk.tool('initialize_bundle', { source: 'bd' });
      if (r.isError) return 'refused';
      const recorded = String(r.structured?.path ?? '');
      return recorded.startsWith(path.join(base, 'outside')) || r.text.includes(SECRET) ? 'leak' : 'inside';
    });
    expect(counts.leak).toBe(0);
    expect(counts.inside).toBeGreaterThan(0);
  });
});
