import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BundleError } from '../errors.js';
import { sleep } from '../../../core/wait.js';
import { download, tokenFromEnv, vendorPortalSlug } from './download.js';
import { bundleRoot, BundleStore, METADATA_FILE, nameFromFile, nameFromUrl } from './store.js';
import { SUPPORT_BUNDLES } from '../../../../test/helpers/fixtures.js';

const FIXTURES = SUPPORT_BUNDLES;
const BUNDLE_2025 = path.join(FIXTURES, 'support-bundle-2025-04-11T14_05_31.tar.gz');
const BUNDLE_2022 = path.join(FIXTURES, 'support-bundle.tar.gz');
const MISSING_VERSION = path.join(FIXTURES, 'missing-version.tar.gz');

let base: string;
let n = 0;
let work: string;

beforeAll(() => {
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'dk-store-'));
});
afterAll(() => fs.rmSync(base, { recursive: true, force: true }));
beforeEach(() => {
  work = path.join(base, `t${++n}`);
  fs.mkdirSync(work, { recursive: true });
});

async function failure(p: Promise<unknown>): Promise<BundleError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(BundleError);
    return err as BundleError;
  }
  throw new Error('expected a failure');
}

describe('BundleStore.add from archives', () => {
  it('extracts a .tar.gz under a name taken from the file, with metadata, and finds the root', async () => {
    const store = new BundleStore(path.join(work, 'store'));
    const added = await store.add(BUNDLE_2025);
    expect(added).toMatchObject({
      name: 'support-bundle-2025-04-11T14_05_31',
      path: path.join(work, 'store', 'support-bundle-2025-04-11T14_05_31'),
      source: BUNDLE_2025,
      kind: 'archive',
      reused: false,
      valid: true,
    });
    expect(added.root).toBe(fs.realpathSync(path.join(added.path, 'support-bundle-2025-04-11T14_05_31')));
    expect(added.size_bytes).toBeGreaterThan(2_000_000);
    const meta = JSON.parse(fs.readFileSync(path.join(added.path, METADATA_FILE), 'utf8'));
    expect(meta).toMatchObject({ version: 1, kind: 'archive', source: BUNDLE_2025, size_bytes: added.size_bytes, entries: 224 });
    expect(new Date(meta.added_at).toISOString()).toBe(meta.added_at);
    // Nothing but the bundle in the store: no temporary files or directories left.
    expect(fs.readdirSync(path.join(work, 'store'))).toEqual(['support-bundle-2025-04-11T14_05_31']);
  });

  it('reuses the same source without force, re-extracts with force', async () => {
    const store = new BundleStore(path.join(work, 'store'));
    const first = await store.add(BUNDLE_2022);
    const marker = path.join(first.path, 'support-bundle', 'marker.txt');
    fs.writeFileSync(marker, 'added after extraction');

    const again = await store.add(BUNDLE_2022);
    expect(again).toMatchObject({ name: first.name, path: first.path, reused: true, added_at: first.added_at });
    expect(fs.existsSync(marker)).toBe(true);

    await sleep(5); // a pause, not a wait: the clock moves on, so the re-extraction's added_at is later
    const forced = await store.add(BUNDLE_2022, { force: true });
    expect(forced).toMatchObject({ name: first.name, path: first.path, reused: false });
    expect(forced.added_at > first.added_at).toBe(true);
    expect(fs.existsSync(marker)).toBe(false);
    expect(fs.readdirSync(path.join(work, 'store'))).toEqual(['support-bundle']);
  });

  it('re-extracts when the archive changed since it was added', async () => {
    const copy = path.join(work, 'support-bundle.tar.gz');
    fs.copyFileSync(BUNDLE_2022, copy);
    const store = new BundleStore(path.join(work, 'store'));
    const first = await store.add(copy);
    fs.copyFileSync(MISSING_VERSION, copy);
    const second = await store.add(copy);
    expect(second).toMatchObject({ name: first.name, reused: false, valid: false });
  });

  it('gives different sources with the same file name different names', async () => {
    const a = path.join(work, 'a', 'bundle.tgz');
    const b = path.join(work, 'b', 'bundle.tgz');
    fs.mkdirSync(path.dirname(a));
    fs.mkdirSync(path.dirname(b));
    fs.copyFileSync(BUNDLE_2022, a);
    fs.copyFileSync(MISSING_VERSION, b);
    const store = new BundleStore(path.join(work, 'store'));
    expect((await store.add(a)).name).toBe('bundle');
    expect((await store.add(b)).name).toBe('bundle-2');
    expect((await store.add(a)).reused).toBe(true);
  });

  it('a bundle without cluster resources is stored but invalid', async () => {
    const store = new BundleStore(path.join(work, 'store'));
    const added = await store.add(MISSING_VERSION);
    expect(added).toMatchObject({ name: 'missing-version', valid: false, reason: 'no cluster-resources/ or cluster-info/ directory within two levels of the bundle directory' });
    // The lone support-bundle/ directory is where its files start.
    expect(added.root).toBe(fs.realpathSync(path.join(added.path, 'support-bundle')));
  });

  it('a missing source is BundleNotFoundError; a corrupt archive leaves nothing behind', async () => {
    const store = new BundleStore(path.join(work, 'store'));
    const missing = await failure(store.add(path.join(work, 'nope.tar.gz')));
    expect(missing.name).toBe('BundleNotFoundError');
    expect(missing.message).toMatch(/^Bundle '.*nope\.tar\.gz' not found: give a \.tar\.gz\/\.tgz file, an extracted bundle directory, an http\(s\) URL, or the name of a bundle in /);

    const corrupt = path.join(work, 'corrupt.tar.gz');
    fs.writeFileSync(corrupt, Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0]), Buffer.alloc(100, 7)]));
    const err = await failure(store.add(corrupt));
    expect(err.name).toBe('BundleExtractionError');
    expect(err.message).toMatch(/^Failed to extract bundle: /);
    expect(fs.readdirSync(path.join(work, 'store'))).toEqual([]);
    expect(await store.list()).toEqual([]);
  });

  it('accepts the name of a bundle already in the store', async () => {
    const store = new BundleStore(path.join(work, 'store'));
    await store.add(BUNDLE_2022);
    const byName = await store.add('support-bundle');
    expect(byName).toMatchObject({ name: 'support-bundle', reused: true, valid: true });
  });

  it('serializes concurrent adds of the same source', async () => {
    const store = new BundleStore(path.join(work, 'store'));
    const [a, b] = await Promise.all([store.add(BUNDLE_2022), store.add(BUNDLE_2022)]);
    expect(a.reused).toBe(false);
    expect(b.reused).toBe(true);
    expect(fs.readdirSync(path.join(work, 'store'))).toEqual(['support-bundle']);
  });
});

describe('BundleStore.add from directories', () => {
  it('uses an extracted directory in place (by its real path) and writes nothing into it', async () => {
    const scratch = new BundleStore(path.join(work, 'scratch'));
    const extracted = await scratch.add(BUNDLE_2022);
    const dir = path.join(work, 'mine');
    fs.cpSync(path.join(extracted.path, 'support-bundle'), dir, { recursive: true, verbatimSymlinks: true });
    const alias = path.join(work, 'alias');
    fs.symlinkSync(dir, alias);
    const before = fs.readdirSync(dir).sort();

    const store = new BundleStore(path.join(work, 'store'));
    const added = await store.add(alias);
    expect(added).toMatchObject({ name: 'mine', path: fs.realpathSync(dir), root: fs.realpathSync(dir), source: fs.realpathSync(dir), kind: 'directory', reused: false, valid: true });
    expect(added.size_bytes).toBeGreaterThan(1_000_000);
    expect(fs.readdirSync(dir).sort()).toEqual(before);
    expect(fs.readdirSync(path.join(work, 'store', 'mine'))).toEqual([METADATA_FILE]);

    expect((await store.add(dir)).reused).toBe(true);
    expect((await store.add(dir, { force: true })).reused).toBe(false);

    // Gone from disk: still listed, invalid.
    fs.rmSync(dir, { recursive: true });
    const [entry] = await store.list();
    expect(entry).toMatchObject({ name: 'mine', valid: false, reason: `the bundle directory ${fs.realpathSync(work)}/mine no longer exists` });
  });

  it('a directory inside the store is the bundle it belongs to', async () => {
    const store = new BundleStore(path.join(work, 'store'));
    const added = await store.add(BUNDLE_2022);
    const inner = await store.add(path.join(added.path, 'support-bundle'));
    expect(inner).toMatchObject({ name: 'support-bundle', reused: true, kind: 'archive' });
    expect(fs.readdirSync(path.join(work, 'store'))).toEqual(['support-bundle']);
  });
});

describe('BundleStore.list', () => {
  it('lists every bundle directory, valid or not, newest first', async () => {
    const store = new BundleStore(path.join(work, 'store'));
    expect(await store.list()).toEqual([]); // no store directory yet
    // Pauses, not waits: the clock moves on between adds, so each bundle's time is its own.
    await store.add(BUNDLE_2022);
    await sleep(5);
    await store.add(MISSING_VERSION);
    await sleep(5);
    // Directories not made by the store: one with cluster resources two levels down, one without.
    fs.mkdirSync(path.join(work, 'store', 'foreign', 'inner', 'cluster-resources'), { recursive: true });
    fs.mkdirSync(path.join(work, 'store', 'junk'));
    fs.writeFileSync(path.join(work, 'store', 'junk', 'notes.txt'), 'hello');
    fs.mkdirSync(path.join(work, 'store', '.hidden-temp'));
    fs.writeFileSync(path.join(work, 'store', 'stray-file.txt'), 'x');
    // Without metadata, a directory's time is its mtime: make foreign the newest, junk the oldest.
    fs.utimesSync(path.join(work, 'store', 'foreign'), new Date(), new Date(Date.now() + 60_000));
    fs.utimesSync(path.join(work, 'store', 'junk'), new Date(), new Date('2020-01-01T00:00:00Z'));

    const list = await store.list();
    expect(list.map((e) => [e.name, e.valid])).toEqual([
      ['foreign', true],
      ['missing-version', false],
      ['support-bundle', true],
      ['junk', false],
    ]);
    const junk = list.find((e) => e.name === 'junk')!;
    expect(junk).toMatchObject({ source: null, kind: null, size_bytes: 5, reason: 'no cluster-resources/ or cluster-info/ directory within two levels of the bundle directory' });
    expect(list.find((e) => e.name === 'foreign')!.root).toBe(fs.realpathSync(path.join(work, 'store', 'foreign', 'inner')));
    for (const e of list) expect(new Date(e.added_at).toISOString()).toBe(e.added_at);
    expect(await store.get('support-bundle')).toMatchObject({ name: 'support-bundle', valid: true });
    expect(await store.get('../etc')).toBeNull();
    expect(await store.get('nope')).toBeNull();
  });
});

describe('bundleRoot', () => {
  it('finds the directory holding cluster-resources/ or cluster-info/', async () => {
    const b = path.join(work, 'b');
    fs.mkdirSync(path.join(b, 'nested', 'support-bundle-x', 'cluster-resources'), { recursive: true });
    fs.mkdirSync(path.join(b, 'flat', 'cluster-info'), { recursive: true });
    fs.mkdirSync(path.join(b, 'other', 'a'), { recursive: true });
    fs.mkdirSync(path.join(b, 'other', 'b'), { recursive: true });
    expect(await bundleRoot(path.join(b, 'nested'))).toBe(fs.realpathSync(path.join(b, 'nested', 'support-bundle-x')));
    expect(await bundleRoot(path.join(b, 'flat'))).toBe(fs.realpathSync(path.join(b, 'flat')));
    expect(await bundleRoot(path.join(b, 'other'))).toBe(fs.realpathSync(path.join(b, 'other')));
  });
});

describe('names', () => {
  it('derives sanitized names', () => {
    expect(nameFromFile('support-bundle-2025-04-11T14_05_31.tar.gz')).toBe('support-bundle-2025-04-11T14_05_31');
    expect(nameFromFile('My Bundle (1).TGZ')).toBe('My-Bundle-1');
    expect(nameFromFile('..tar.gz')).toBe('bundle');
    expect(nameFromFile('.hidden.tar')).toBe('hidden');
    expect(nameFromUrl('https://vendor.replicated.com/troubleshoot/analyze/2024-04-11@08:15')).toBe('bundle-2024-04-11-08-15');
    expect(nameFromUrl('https://example.com/files/support-bundle-2025.tar.gz?sig=abc')).toBe('support-bundle-2025');
    expect(nameFromUrl('https://example.com/')).toMatch(/^bundle-[0-9a-f]{8}$/);
    expect(vendorPortalSlug('https://vendor.replicated.com/troubleshoot/analyze/2024-04-11@08:15')).toBe('2024-04-11@08:15');
    expect(vendorPortalSlug('https://vendor.replicated.com/troubleshoot/analyze/abc/')).toBe('abc');
    expect(vendorPortalSlug('https://evil.example/troubleshoot/analyze/abc')).toBeNull();
    expect(tokenFromEnv({ SBCTL_TOKEN: 'a', REPLICATED_TOKEN: 'b' })).toBe('a');
    expect(tokenFromEnv({ REPLICATED_TOKEN: 'b' })).toBe('b');
    expect(tokenFromEnv({})).toBeUndefined();
  });
});

// ---- downloads, against a local server ----

interface Seen {
  url: string;
  authorization: string | undefined;
}

let server: http.Server;
let origin: string;
let seen: Seen[];
let routes: Record<string, (req: http.IncomingMessage, res: http.ServerResponse) => void>;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push({ url: req.url!, authorization: req.headers.authorization });
    res.setHeader('Connection', 'close'); // no keep-alive sockets carried from one test to the next
    const route = routes[req.url!.split('?')[0]!];
    if (route) route(req, res);
    else res.writeHead(404, 'Not Found').end('no such thing');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});
beforeEach(() => {
  seen = [];
  routes = {
    '/bundles/support-bundle.tar.gz': (_req, res) => {
      const body = fs.readFileSync(BUNDLE_2022);
      res.writeHead(200, { 'Content-Type': 'application/gzip', 'Content-Length': body.length }).end(body);
    },
    '/chunked.tar.gz': (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/gzip' });
      res.end(fs.readFileSync(BUNDLE_2022));
    },
    '/401': (_req, res) => res.writeHead(401, 'Unauthorized').end(),
    '/403': (_req, res) => res.writeHead(403, 'Forbidden').end(),
    '/500': (_req, res) => res.writeHead(500, 'Internal Server Error').end('boom'),
    '/hang': () => {
      /* never answers */
    },
  };
});

/** Downloads from the test server: its loopback host listed exactly. */
const LOCAL = { policy: { hosts: ['127.0.0.1'] } };

describe('download', () => {
  it('downloads to dest atomically and reports progress', async () => {
    const dest = path.join(work, 'b.tar.gz');
    const progress: [number, number | null][] = [];
    const result = await download(`${origin}/bundles/support-bundle.tar.gz`, dest, { ...LOCAL, onProgress: (b, t) => progress.push([b, t]) });
    const size = fs.statSync(BUNDLE_2022).size;
    expect(result).toEqual({ bytes: size, url: `${origin}/bundles/support-bundle.tar.gz` });
    expect(fs.readFileSync(dest).equals(fs.readFileSync(BUNDLE_2022))).toBe(true);
    expect(progress.at(-1)).toEqual([size, size]);
    expect(fs.readdirSync(work)).toEqual(['b.tar.gz']);
  });

  it('sends the token only to allowed hosts, as a Bearer token', async () => {
    await download(`${origin}/bundles/support-bundle.tar.gz`, path.join(work, 'a.tar.gz'), { ...LOCAL, token: 'tok' });
    expect(seen[0]!.authorization).toBeUndefined();
    await download(`${origin}/bundles/support-bundle.tar.gz`, path.join(work, 'b.tar.gz'), { ...LOCAL, token: 'tok', tokenHosts: ['127.0.0.1'] });
    expect(seen[1]!.authorization).toBe('Bearer tok');
  });

  it.each([
    ['/401', 'AuthenticationError', 'Authentication failed: Invalid or missing token (HTTP 401 Unauthorized); check SBCTL_TOKEN'],
    ['/403', 'AuthenticationError', 'Authentication failed: Invalid or missing token (HTTP 403 Forbidden); check SBCTL_TOKEN'],
    ['/missing.tar.gz', 'BundleNotFoundError', "Bundle with ID '<origin>/missing.tar.gz' not found (HTTP 404)"],
    ['/500', 'ApiError', 'Failed to download bundle from <origin>/500: HTTP 500 Internal Server Error'],
  ])('%s -> %s', async (route, type, message) => {
    const dest = path.join(work, 'x.tar.gz');
    const err = await failure(download(`${origin}${route}?secret=1`, dest, LOCAL));
    expect(err.name).toBe(type);
    expect(err.message).toBe(message.replace('<origin>', origin).replace(route, `${route}?…`));
    expect(fs.readdirSync(work)).toEqual([]);
  });

  it('refuses a download over maxBytes, by Content-Length or while streaming', async () => {
    const byLength = await failure(download(`${origin}/bundles/support-bundle.tar.gz`, path.join(work, 'a.tar.gz'), { ...LOCAL, maxBytes: 1000 }));
    expect(byLength.name).toBe('StorageError');
    expect(byLength.message).toMatch(/^Bundle download is 10\d\.\d+ KiB, over the size limit of 1000 bytes$/);
    const streamed = await failure(download(`${origin}/chunked.tar.gz`, path.join(work, 'b.tar.gz'), { ...LOCAL, maxBytes: 1000 }));
    expect(streamed.name).toBe('StorageError');
    expect(streamed.message).toBe('Bundle download over the size limit of 1000 bytes');
    expect(fs.readdirSync(work)).toEqual([]);
  });

  it('times out', async () => {
    const err = await failure(download(`${origin}/hang`, path.join(work, 'a.tar.gz'), { ...LOCAL, timeoutMs: 300 }));
    expect(err.name).toBe('ApiError');
    expect(err.message).toBe(`Failed to download bundle from ${origin}/hang: timed out after 300ms`);
  });

  it('can be cancelled', async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    const err = await failure(download(`${origin}/hang`, path.join(work, 'a.tar.gz'), { ...LOCAL, signal: ac.signal }));
    expect(err.message).toBe(`Failed to download bundle from ${origin}/hang: cancelled`);
  });

  it('a connection refused is ApiError', async () => {
    const err = await failure(download('http://127.0.0.1:1/x.tar.gz', path.join(work, 'a.tar.gz'), LOCAL));
    expect(err.name).toBe('ApiError');
    expect(err.message).toMatch(/^Failed to download bundle from http:\/\/127\.0\.0\.1:1\/x\.tar\.gz: connect ECONNREFUSED/);
  });
});

describe('download from the Replicated Vendor Portal', () => {
  const PORTAL = 'https://vendor.replicated.com/troubleshoot/analyze/2024-04-11@08:15';
  const API_PATH = '/vendor/v3/supportbundle/2024-04-11%4008%3A15';

  beforeEach(() => {
    routes[API_PATH] = (req, res) => {
      if (req.headers.authorization !== 'portal-token') return void res.writeHead(401, 'Unauthorized').end('{"error":"unauthorized"}');
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ bundle: { id: 'x', signedUri: `${origin}/signed/bundle.tar.gz?X-Amz-Signature=abc` } }));
    };
    routes['/signed/bundle.tar.gz'] = (req, res) => {
      if (req.headers.authorization) return void res.writeHead(400).end('signed URLs take no Authorization header');
      res.writeHead(200).end(fs.readFileSync(BUNDLE_2022));
    };
  });

  it('asks the API for the signed URL with the raw token, then fetches it without the token', async () => {
    const dest = path.join(work, 'p.tar.gz');
    const result = await download(PORTAL, dest, { ...LOCAL, token: 'portal-token', replicatedApiBase: origin });
    expect(seen).toEqual([
      { url: API_PATH, authorization: 'portal-token' },
      { url: '/signed/bundle.tar.gz?X-Amz-Signature=abc', authorization: undefined },
    ]);
    expect(result.url).toBe(`${origin}/signed/bundle.tar.gz?…`);
    expect(fs.statSync(dest).size).toBe(fs.statSync(BUNDLE_2022).size);
  });

  it('also reads the older answer shape (signedUri at the top level)', async () => {
    routes[API_PATH] = (_req, res) => res.writeHead(200).end(JSON.stringify({ signedUri: `${origin}/signed/bundle.tar.gz` }));
    await download(PORTAL, path.join(work, 'p.tar.gz'), { ...LOCAL, token: 't', replicatedApiBase: origin });
    expect(seen.map((s) => s.url)).toEqual([API_PATH, '/signed/bundle.tar.gz']);
  });

  it('no token, a bad token, an unknown bundle, a bad answer', async () => {
    const dest = path.join(work, 'p.tar.gz');
    const none = await failure(download(PORTAL, dest, { ...LOCAL, replicatedApiBase: origin }));
    expect(none.name).toBe('AuthenticationError');
    expect(none.message).toMatch(/^Authentication failed: Invalid or missing token \(set SBCTL_TOKEN/);
    expect(seen).toEqual([]);

    const bad = await failure(download(PORTAL, dest, { ...LOCAL, token: 'wrong', replicatedApiBase: origin }));
    expect(bad.name).toBe('AuthenticationError');

    const unknown = await failure(download('https://vendor.replicated.com/troubleshoot/analyze/nope', dest, { ...LOCAL, token: 'portal-token', replicatedApiBase: origin }));
    expect(unknown.name).toBe('BundleNotFoundError');
    expect(unknown.message).toBe("Bundle with ID 'nope' not found on the Replicated Vendor Portal");

    routes[API_PATH] = (_req, res) => res.writeHead(200).end('{"bundle":{}}');
    const shape = await failure(download(PORTAL, dest, { ...LOCAL, token: 'portal-token', replicatedApiBase: origin }));
    expect(shape.name).toBe('ApiError');
    expect(shape.message).toBe("The Replicated API answer for bundle '2024-04-11@08:15' has no signedUri to download it from");
    expect(fs.readdirSync(work)).toEqual([]);
  });

  it('BundleStore.add downloads, names the bundle after the slug, and reuses it', async () => {
    const store = new BundleStore(path.join(work, 'store'));
    const options = { token: 'portal-token', download: { ...LOCAL, replicatedApiBase: origin } };
    const added = await store.add(PORTAL, options);
    expect(added).toMatchObject({ name: 'bundle-2024-04-11-08-15', source: PORTAL, kind: 'url', reused: false, valid: true });
    expect(fs.readdirSync(path.join(work, 'store'))).toEqual(['bundle-2024-04-11-08-15']);
    expect((await store.add(PORTAL, options)).reused).toBe(true);
    expect(seen).toHaveLength(2);
    expect((await store.add(PORTAL, { ...options, force: true })).reused).toBe(false);
    expect(seen).toHaveLength(4);
  });

  it('BundleStore.add from a plain URL', async () => {
    const store = new BundleStore(path.join(work, 'store'));
    const phases = new Set<string>();
    const added = await store.add(`${origin}/bundles/support-bundle.tar.gz`, { download: LOCAL, onProgress: (p) => phases.add(p.phase) });
    expect(added).toMatchObject({ name: 'support-bundle', kind: 'url', valid: true });
    expect([...phases]).toEqual(['download', 'extract']);
    const err = await failure(store.add(`${origin}/401`, { download: LOCAL }));
    expect(err.name).toBe('AuthenticationError');
    expect(fs.readdirSync(path.join(work, 'store'))).toEqual(['support-bundle']);
  });
});
