import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BundleError } from '../errors.js';
import { extractBundle } from '../store/extract.js';
import { bundleRoot } from '../store/store.js';
import { listFiles } from './list.js';
import { SUPPORT_BUNDLES } from '../../../../test/helpers/fixtures.js';

const FIXTURES = SUPPORT_BUNDLES;

/** The list_files response text of the support-bundle contract, verbatim. */
const CONTRACT_LIST_TEXT =
  'Listed files in /kubernetes/pods non-recursively:\n```json\n[\n  {\n    "name": "kube-system",\n    "path": "/kubernetes/pods/kube-system",\n    "type": "directory",\n    "size": null,\n    "modified": "2025-04-10T15:30:00Z",\n    "accessed": "2025-04-11T12:45:30Z",\n    "is_binary": false\n  },\n  {\n    "name": "default",\n    "path": "/kubernetes/pods/default",\n    "type": "directory",\n    "size": null,\n    "modified": "2025-04-10T15:30:00Z",\n    "accessed": "2025-04-11T12:45:30Z",\n    "is_binary": false\n  },\n  {\n    "name": "kube-apiserver-master1.yaml",\n    "path": "/kubernetes/pods/kube-apiserver-master1.yaml",\n    "type": "file",\n    "size": 2456,\n    "modified": "2025-04-10T15:30:00Z",\n    "accessed": "2025-04-11T12:45:30Z",\n    "is_binary": false\n  }\n]\n```\n\nDirectory metadata:\n```json\n{\n  "path": "/kubernetes/pods",\n  "recursive": false,\n  "total_files": 1,\n  "total_dirs": 2\n}\n```';

const MODIFIED = new Date('2025-04-10T15:30:00Z');
const ACCESSED = new Date('2025-04-11T12:45:30Z');

let base: string;
let root: string;

beforeAll(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'dk-list-')));
  root = path.join(base, 'bundle');
  const pods = path.join(root, 'kubernetes/pods');
  fs.mkdirSync(path.join(pods, 'kube-system'), { recursive: true });
  fs.mkdirSync(path.join(pods, 'default'));
  fs.writeFileSync(path.join(pods, 'kube-apiserver-master1.yaml'), `${'apiVersion: v1\n'.repeat(163)}kind: Pod\n`.padEnd(2456, '#'));
  for (const p of ['kube-system', 'default', 'kube-apiserver-master1.yaml']) fs.utimesSync(path.join(pods, p), ACCESSED, MODIFIED);
  fs.mkdirSync(path.join(root, 'bin'));
  fs.writeFileSync(path.join(root, 'bin/blob.dat'), Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 1, 2, 3]));
  fs.writeFileSync(path.join(root, 'bin/latin1.txt'), Buffer.from('caf\xe9\n', 'latin1'));
  fs.writeFileSync(path.join(root, 'bin/utf8.txt'), 'café 日本語\n');
  fs.writeFileSync(path.join(root, 'bin/empty.txt'), '');
  fs.mkdirSync(path.join(root, 'many'));
  for (let i = 0; i < 12; i++) fs.writeFileSync(path.join(root, 'many', `f${String(i).padStart(2, '0')}.txt`), 'x');
});
afterAll(() => fs.rmSync(base, { recursive: true, force: true }));

async function failure(p: Promise<unknown>): Promise<BundleError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(BundleError);
    return err as BundleError;
  }
  throw new Error('expected a failure');
}

describe('listFiles: the contract rendering', () => {
  it('renders exactly like the contract (entries: directories first, then files, by name)', async () => {
    const result = await listFiles(root, '/kubernetes/pods', false);
    // The contract's text with its two directories in our order (default before kube-system).
    const contractEntries = JSON.parse(CONTRACT_LIST_TEXT.slice(CONTRACT_LIST_TEXT.indexOf('['), CONTRACT_LIST_TEXT.indexOf(']\n```') + 1));
    expect(JSON.stringify(contractEntries, null, 2)).toBe(CONTRACT_LIST_TEXT.slice(CONTRACT_LIST_TEXT.indexOf('['), CONTRACT_LIST_TEXT.indexOf(']\n```') + 1));
    const reordered = [contractEntries[1], contractEntries[0], contractEntries[2]];
    const expected = CONTRACT_LIST_TEXT.replace(JSON.stringify(contractEntries, null, 2), JSON.stringify(reordered, null, 2));
    expect(result.text).toBe(expected);
    expect(result.entries).toEqual(reordered);
    expect(result.metadata).toEqual({ path: '/kubernetes/pods', recursive: false, total_files: 1, total_dirs: 2 });
    expect(result.truncated).toBe(false);
  });

  it('recursive listings walk level by level and say "recursively"', async () => {
    const result = await listFiles(root, '/kubernetes', true);
    expect(result.entries.map((e) => e.path)).toEqual(['/kubernetes/pods', '/kubernetes/pods/default', '/kubernetes/pods/kube-system', '/kubernetes/pods/kube-apiserver-master1.yaml']);
    expect(result.text.startsWith('Listed files in /kubernetes recursively:\n```json\n[\n')).toBe(true);
    expect(result.text.endsWith('Directory metadata:\n```json\n{\n  "path": "/kubernetes",\n  "recursive": true,\n  "total_files": 1,\n  "total_dirs": 3\n}\n```')).toBe(true);
  });

  it('an empty directory', async () => {
    fs.mkdirSync(path.join(root, 'empty'), { recursive: true });
    const result = await listFiles(root, '/empty');
    expect(result.text).toBe(
      'Listed files in /empty non-recursively:\n```json\n[]\n```\n\nDirectory metadata:\n```json\n{\n  "path": "/empty",\n  "recursive": false,\n  "total_files": 0,\n  "total_dirs": 0\n}\n```',
    );
  });
});

describe('listFiles: binary detection, truncation, errors', () => {
  it('marks binary files (NUL bytes, invalid UTF-8), not UTF-8 text or empty files', async () => {
    const result = await listFiles(root, '/bin');
    expect(Object.fromEntries(result.entries.map((e) => [e.name, e.is_binary]))).toEqual({
      'blob.dat': true,
      'empty.txt': false,
      'latin1.txt': true,
      'utf8.txt': false,
    });
  });

  it('stops at maxEntries with truncated: true and a hint', async () => {
    const result = await listFiles(root, '/many', false, { maxEntries: 5 });
    expect(result.entries).toHaveLength(5);
    expect(result.truncated).toBe(true);
    expect(result.metadata).toEqual({ path: '/many', recursive: false, total_files: 5, total_dirs: 0, truncated: true });
    expect(result.text).toContain('  "truncated": true\n}\n```\n\nThe listing stopped at 5 entries (truncated): list a subdirectory, or find files with grep_files and glob_pattern, to see the rest.');
    const recursive = await listFiles(root, '/', true, { maxEntries: 3 });
    expect(recursive.text).toMatch(/list a subdirectory or list without recursive, or find files/);
  });

  it('PathNotFoundError and NotADirectoryError, with the contract wording', async () => {
    const missing = await failure(listFiles(root, '/kubernetes/nope'));
    expect(missing.name).toBe('PathNotFoundError');
    expect(missing.message).toBe("Path '/kubernetes/nope' not found");
    const file = await failure(listFiles(root, '/kubernetes/pods/kube-apiserver-master1.yaml'));
    expect(file.name).toBe('NotADirectoryError');
    expect(file.message).toBe("Path '/kubernetes/pods/kube-apiserver-master1.yaml' is a file, not a directory");
  });
});

describe('listFiles on the real fixture bundles', () => {
  let work: string;
  beforeAll(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'dk-list-fx-'));
  });
  afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

  it.each([
    ['support-bundle.tar.gz', ['all-logs', 'cluster-info', 'cluster-resources', 'analysis.json', 'static-hi.log', 'version.yaml']],
    [
      'support-bundle-2025-04-11T14_05_31.tar.gz',
      [
        'cluster-info',
        'cluster-resources',
        'configmaps',
        'configmaps-errors',
        'execution-data',
        'kots',
        'logs',
        'node-metrics',
        'rqlite-nodes',
        'rqlite-status',
        'secrets',
        'secrets-errors',
        'analysis.json',
        'replicated.app-health-check.json',
        'version.yaml',
      ],
    ],
    ['missing-version.tar.gz', ['analysis.json']],
  ])('%s: lists /', async (name, expected) => {
    const dest = path.join(work, name);
    await extractBundle(path.join(FIXTURES, name), dest);
    const root = await bundleRoot(dest);
    const result = await listFiles(root, '/');
    expect(result.entries.map((e) => e.name)).toEqual(expected);
    for (const e of result.entries) expect(e.modified).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });

  it('the all-logs symlinks are listed as the files they point to; the errors.json directory as a directory', async () => {
    const root = await bundleRoot(path.join(work, 'support-bundle.tar.gz'));
    const links = await listFiles(root, '/all-logs/coredns-b96499967-tncf4');
    expect(links.entries.map((e) => [e.name, e.type, e.size])).toEqual([
      ['coredns-previous.log', 'file', fs.statSync(path.join(root, 'cluster-resources/pods/logs/kube-system/coredns-b96499967-tncf4/coredns-previous.log')).size],
      ['coredns.log', 'file', 74878],
    ]);
    const root25 = await bundleRoot(path.join(work, 'support-bundle-2025-04-11T14_05_31.tar.gz'));
    const cr = await listFiles(root25, '/cluster-resources');
    expect(cr.entries.find((e) => e.name === 'statefulsets-errors.json')).toMatchObject({ type: 'directory', size: null });
    const all = await listFiles(root25, '/', true, { maxEntries: 5000 });
    expect(all.metadata).toMatchObject({ total_files: 224, recursive: true });
    // The default stops well within an answer's budget, and says how to see the rest.
    const capped = await listFiles(root25, '/', true);
    expect(capped).toMatchObject({ truncated: true, metadata: { truncated: true } });
    expect(capped.entries).toHaveLength(150);
    expect(capped.text.length).toBeLessThan(40_000);
    expect(capped.text).toMatch(/list a subdirectory or list without recursive/);
  });
});
