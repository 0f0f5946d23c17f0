import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BundleError } from '../errors.js';
import { grepFiles } from './grep.js';
import { listFiles } from './list.js';
import { readFile } from './read.js';
import { isoSeconds, looksBinary, resolveBundlePath } from './resolve.js';

/**
 * base/
 *   bundle/                     the bundle root
 *     cluster-resources/pods/default.json
 *     logs/app.log               "hello from inside"
 *     all-logs/app.log        -> ../logs/app.log               (relative, inside)
 *     all-logs/dir            -> ../cluster-resources          (relative dir, inside)
 *     out-rel                 -> ../outside/secret.txt          (relative, outside file)
 *     out-abs                 -> base/outside/secret.txt        (absolute, outside file)
 *     out-dir                 -> base/outside                   (absolute, outside dir)
 *     deep/up                 -> ../..                          (relative, climbs to base)
 *     dangling-out            -> base/outside/nope.txt          (outside, missing)
 *     chain/d                 -> ../..  (from chain/x/: inside)  see below
 *     a/b/c/d -> ../..,  a/b/c/x -> d/../../../..   lexically ".", really base/..: outside
 *   outside/secret.txt          "TOPSECRET"
 *   bundle-evil/secret.txt      "TOPSECRET" (a sibling whose name starts with the bundle's)
 */
let base: string;
let root: string;
const SECRET = 'TOPSECRET';

beforeAll(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'dk-resolve-')));
  root = path.join(base, 'bundle');
  const write = (rel: string, text: string) => {
    const file = path.join(base, rel);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
  };
  write('bundle/cluster-resources/pods/default.json', '{"items": []}\n');
  write('bundle/logs/app.log', 'hello from inside\n');
  write('outside/secret.txt', `${SECRET}\n`);
  write('bundle-evil/secret.txt', `${SECRET}\n`);
  fs.mkdirSync(path.join(root, 'all-logs'));
  fs.mkdirSync(path.join(root, 'deep'));
  fs.mkdirSync(path.join(root, 'a/b/c'), { recursive: true });
  fs.symlinkSync('../logs/app.log', path.join(root, 'all-logs/app.log'));
  fs.symlinkSync('../cluster-resources', path.join(root, 'all-logs/dir'));
  fs.symlinkSync('../outside/secret.txt', path.join(root, 'out-rel'));
  fs.symlinkSync(path.join(base, 'outside/secret.txt'), path.join(root, 'out-abs'));
  fs.symlinkSync(path.join(base, 'outside'), path.join(root, 'out-dir'));
  fs.symlinkSync('../..', path.join(root, 'deep/up'));
  fs.symlinkSync(path.join(base, 'outside/nope.txt'), path.join(root, 'dangling-out'));
  fs.symlinkSync('../..', path.join(root, 'a/b/c/d'));
  fs.symlinkSync('d/../../../..', path.join(root, 'a/b/c/x'));
});
afterAll(() => fs.rmSync(base, { recursive: true, force: true }));

async function failure(p: Promise<unknown> | (() => unknown)): Promise<BundleError> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    expect(err).toBeInstanceOf(BundleError);
    return err as BundleError;
  }
  throw new Error('expected a failure');
}

const ESCAPES: [string, string][] = [
  ['.. escape', '/../outside/secret.txt'],
  ['.. escape without a leading slash', '../outside/secret.txt'],
  ['.. in the middle', '/logs/../../outside/secret.txt'],
  ['.. to the parent only', '/..'],
  ['relative symlink to an outside file', '/out-rel'],
  ['absolute symlink to an outside file', '/out-abs'],
  ['a file through a symlinked outside directory', '/out-dir/secret.txt'],
  ['a symlink climbing out of the bundle', '/deep/up/outside/secret.txt'],
  ['a dangling symlink to outside', '/dangling-out'],
  ['a link escaping through another link (kernel resolution)', '/a/b/c/x/outside/secret.txt'],
  ['the sibling <bundle>-evil by host path', '<base>/bundle-evil/secret.txt'],
  ['the host path of an outside file next to the bundle', '<base>/outside/secret.txt'],
  ['a host path inside the root climbing out', '<root>/../outside/secret.txt'],
];

describe('security: every tool refuses paths leading out of the bundle', () => {
  it.each(ESCAPES)('read_file: %s', async (_what, raw) => {
    const p = raw.replace('<base>', base).replace('<root>', root);
    const err = await failure(readFile(root, p));
    expect(err.name).toBe('SecurityError');
    expect(err.message).toBe(`Access to path outside bundle root is not allowed: ${p}`);
    expect(err.message).not.toContain(SECRET);
  });

  it.each(ESCAPES)('list_files and grep_files: %s', async (_what, raw) => {
    const p = raw
      .replace('<base>', base)
      .replace('<root>', root)
      .replace(/\/secret\.txt$/, '');
    const isDirLike = !p.endsWith('/out-rel') && !p.endsWith('/out-abs') && !p.endsWith('/dangling-out');
    if (isDirLike) expect((await failure(listFiles(root, p))).name).toBe('SecurityError');
    expect((await failure(grepFiles(root, { pattern: SECRET, path: p }))).name).toBe('SecurityError');
  });

  it('NUL bytes are refused', async () => {
    for (const run of [() => readFile(root, '/logs/app.log\0.txt'), () => listFiles(root, '/logs\0'), () => grepFiles(root, { pattern: 'x', path: '/\0' })]) {
      const err = await failure(run);
      expect(err.name).toBe('SecurityError');
      expect(err.message).toBe('Access to path outside bundle root is not allowed: the path contains a NUL byte');
    }
  });

  it('relative symlinks inside the bundle keep working', async () => {
    expect((await readFile(root, '/all-logs/app.log')).content).toBe('hello from inside');
    expect((await listFiles(root, '/all-logs/dir')).entries.map((e) => e.name)).toEqual(['pods']);
    expect((await readFile(root, '/all-logs/dir/pods/default.json')).content).toBe('{"items": []}');
    const grep = await grepFiles(root, { pattern: 'hello', path: '/all-logs' });
    expect(grep.matches).toEqual([{ path: '/all-logs/app.log', line_number: 1, line: 'hello from inside' }]);
  });

  it('outside links are left out of listings and never followed by a recursive grep', async () => {
    const names = (await listFiles(root, '/')).entries.map((e) => e.name);
    expect(names).toEqual(['a', 'all-logs', 'cluster-resources', 'deep', 'logs']);
    const all = (await listFiles(root, '/', true)).entries.map((e) => e.path ?? '');
    expect(all.some((p) => p.includes('out-') || p.includes('secret') || p === '/deep/up')).toBe(false);
    const grep = await grepFiles(root, { pattern: SECRET, path: '/' });
    expect(grep.metadata.total_matches).toBe(0);
    // The in-bundle file reached through two paths is searched once, under its real path.
    const hello = await grepFiles(root, { pattern: 'hello', path: '/' });
    expect(hello.matches.map((m) => m.path)).toEqual(['/logs/app.log']);
  });

  it('an absolute host path inside the bundle is accepted; other absolute paths are bundle-relative', async () => {
    expect((await readFile(root, path.join(root, 'logs/app.log'))).path).toBe('/logs/app.log');
    expect((await listFiles(root, root)).metadata.path).toBe('/');
    // /etc/passwd means <bundle>/etc/passwd: not found, and the host file is never read.
    const err = await failure(readFile(root, '/etc/passwd'));
    expect(err.name).toBe('FileNotFoundError');
    expect(err.message).toBe("File '/etc/passwd' not found");
  });

  it('paths are normalized: no leading slash, trailing slashes, harmless ..', async () => {
    expect((await readFile(root, 'logs/app.log')).path).toBe('/logs/app.log');
    expect((await listFiles(root, '/logs/')).metadata.path).toBe('/logs');
    expect((await listFiles(root, '/logs/../cluster-resources/./pods')).metadata.path).toBe('/cluster-resources/pods');
    expect((await listFiles(root, '')).metadata.path).toBe('/');
  });

  it('resolveBundlePath returns the real path and the display path', () => {
    const r = resolveBundlePath(root, '/all-logs/app.log', () => new BundleError('FileNotFoundError', 'x'));
    expect(r).toMatchObject({ abs: path.join(root, 'logs/app.log'), display: '/all-logs/app.log', root });
    expect(r.stats.isFile()).toBe(true);
  });

  // Attack q2: 15 read_file calls with a 4 MiB path held another key's ping 0.5-2.7 s (each path normalized and walked).
  it('a path past PATH_MAX is a FileNotFoundError saying so, its start shown, never normalized or walked', () => {
    let shown = '';
    const notFound = (display: string) => {
      shown = display;
      return new BundleError('FileNotFoundError', display);
    };
    for (const given of [`/${'a'.repeat(4 * 1024 * 1024)}`, '/a'.repeat(2048), `/logs/${'é'.repeat(2100)}`]) {
      expect(() => resolveBundlePath(root, given, notFound)).toThrow(BundleError);
      expect(shown).toBe(`${given.slice(0, 64)}... (${Buffer.byteLength(given)} bytes: a path is at most 4095)`);
    }
  });

  it('a bundle root that disappeared', async () => {
    const err = await failure(readFile(path.join(base, 'gone'), '/x'));
    expect(err.name).toBe('NoBundleInitializedError');
  });
});

describe('helpers', () => {
  it('looksBinary: NUL bytes and invalid UTF-8 are binary; UTF-8 (even cut at the end) is text', () => {
    expect(looksBinary(Buffer.from('plain text\n'))).toBe(false);
    expect(looksBinary(Buffer.from('héllo wörld 日本語 ✓\n'))).toBe(false);
    expect(looksBinary(Buffer.from('日本', 'utf8').subarray(0, 4))).toBe(false); // second character cut
    expect(looksBinary(Buffer.from([0x61, 0x00, 0x62]))).toBe(true);
    expect(looksBinary(Buffer.from([0x61, 0xff, 0xfe, 0x62]))).toBe(true);
    expect(looksBinary(Buffer.from('caf\xe9 latin1', 'latin1'))).toBe(true);
    expect(looksBinary(Buffer.alloc(0))).toBe(false);
  });

  it('isoSeconds drops milliseconds, as in the contract', () => {
    expect(isoSeconds(Date.UTC(2025, 3, 10, 15, 30, 0, 999))).toBe('2025-04-10T15:30:00Z');
  });
});
