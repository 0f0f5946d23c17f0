import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BundleError } from '../errors.js';
import { extractBundle } from './extract.js';
import { SUPPORT_BUNDLES } from '../../../../test/helpers/fixtures.js';
import { longestBlock } from '../../../../test/helpers/stall.js';

const FIXTURES = SUPPORT_BUNDLES;

// ---- a tiny tar writer, so each test builds exactly the archive it needs ----

interface Entry {
  name: string;
  type?: '0' | '1' | '2' | '3' | '5' | '6' | 'x' | 'L' | 'S';
  data?: Buffer | string;
  linkname?: string;
  mode?: number;
  /** Size written in the header, when it should differ from the data (a lying header). */
  size?: number;
  mtime?: number;
}

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, '0')}\0`;
}

function header(e: Entry, dataLength: number): Buffer {
  const h = Buffer.alloc(512);
  h.write(e.name, 0, 100, 'utf8');
  h.write(octal(e.mode ?? (e.type === '5' ? 0o755 : 0o644), 8), 100, 'latin1');
  h.write(octal(0, 8), 108, 'latin1');
  h.write(octal(0, 8), 116, 'latin1');
  h.write(octal(e.size ?? dataLength, 12), 124, 'latin1');
  h.write(octal(e.mtime ?? 1_700_000_000, 12), 136, 'latin1');
  h.write('        ', 148, 'latin1');
  h.write(e.type ?? '0', 156, 'latin1');
  h.write(e.linkname ?? '', 157, 100, 'utf8');
  h.write('ustar\0', 257, 'latin1');
  h.write('00', 263, 'latin1');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
  return h;
}

function tar(entries: Entry[], { end = true } = {}): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    const data = Buffer.from(e.data ?? '');
    parts.push(header(e, data.length), data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  if (end) parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let len = body.length + 1;
  while (`${len}${body}`.length !== len) len = `${len}${body}`.length;
  return `${len}${body}`;
}

// ---- fixtures ----

let base: string;
let n = 0;
/** A fresh directory per test: work/ holds archives and dest, outside/ is what must stay untouched. */
let work: string;
let outside: string;

beforeAll(() => {
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'dk-extract-'));
});
afterAll(() => fs.rmSync(base, { recursive: true, force: true }));
beforeEach(() => {
  n++;
  work = path.join(base, `t${n}`, 'work');
  outside = path.join(base, `t${n}`, 'outside');
  fs.mkdirSync(work, { recursive: true });
  fs.mkdirSync(outside, { recursive: true });
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'secret');
});

function archive(entries: Entry[] | Buffer, name = 'bundle.tar.gz'): string {
  const file = path.join(work, name);
  fs.writeFileSync(file, gzipSync(Buffer.isBuffer(entries) ? entries : tar(entries)));
  return file;
}

async function failure(p: Promise<unknown>): Promise<BundleError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(BundleError);
    return err as BundleError;
  }
  throw new Error('expected a failure');
}

/** Nothing but the archive(s) is left in work/ (no dest, no temporary directory), outside/ untouched. */
function expectClean(archives = ['bundle.tar.gz']): void {
  expect(fs.readdirSync(work).sort()).toEqual(archives.sort());
  expect(fs.readdirSync(outside)).toEqual(['secret.txt']);
  expect(fs.readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('secret');
}

describe('extractBundle: normal archives', () => {
  it('extracts files, directories, relative symlinks and hard links, with modes and times', async () => {
    const file = archive([
      { name: 'b/', type: '5' },
      { name: 'b/cluster-resources/pods/default.json', data: '{"items":[]}', mode: 0o600, mtime: 1_600_000_000 },
      { name: 'b/all-logs/x/pod.log', type: '2', linkname: '../../logs/pod.log' }, // before its target, as in real bundles
      { name: 'b/logs/pod.log', data: 'line 1\nline 2\n' },
      { name: 'b/logs/hard.log', type: '1', linkname: 'b/logs/pod.log' },
      { name: './b/./dotted.txt', data: 'dot' },
    ]);
    const progress: [number, number][] = [];
    const dest = path.join(work, 'dest');
    const result = await extractBundle(file, dest, {}, (bytes, entries) => progress.push([bytes, entries]));
    expect(result).toMatchObject({ entries: 6, bytes: 12 + 14 + 3, skippedCount: 0 });
    expect(fs.readFileSync(path.join(dest, 'b/cluster-resources/pods/default.json'), 'utf8')).toBe('{"items":[]}');
    expect(fs.readlinkSync(path.join(dest, 'b/all-logs/x/pod.log'))).toBe('../../logs/pod.log');
    expect(fs.readFileSync(path.join(dest, 'b/all-logs/x/pod.log'), 'utf8')).toBe('line 1\nline 2\n');
    expect(fs.statSync(path.join(dest, 'b/logs/hard.log')).ino).toBe(fs.statSync(path.join(dest, 'b/logs/pod.log')).ino);
    expect(fs.readFileSync(path.join(dest, 'b/dotted.txt'), 'utf8')).toBe('dot');
    const st = fs.statSync(path.join(dest, 'b/cluster-resources/pods/default.json'));
    expect(st.mode & 0o777).toBe(0o600);
    expect(Math.floor(st.mtimeMs / 1000)).toBe(1_600_000_000);
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.at(-1)).toEqual([29, 6]);
    expect(fs.readdirSync(work).sort()).toEqual(['bundle.tar.gz', 'dest']);
  });

  it('reads pax and GNU long names', async () => {
    const long = `b/${'d'.repeat(90)}/${'f'.repeat(90)}.json`;
    const longer = `b/${'g'.repeat(120)}.log`;
    const file = archive([
      { name: 'PaxHeaders/x', type: 'x', data: paxRecord('path', long) },
      { name: 'ignored-short-name', data: 'pax' },
      { name: '././@LongLink', type: 'L', data: `${longer}\0` },
      { name: 'ignored-too', data: 'gnu' },
    ]);
    const dest = path.join(work, 'dest');
    await extractBundle(file, dest);
    expect(fs.readFileSync(path.join(dest, long), 'utf8')).toBe('pax');
    expect(fs.readFileSync(path.join(dest, longer), 'utf8')).toBe('gnu');
  });

  it('replaces an existing destination as a whole', async () => {
    const dest = path.join(work, 'dest');
    await extractBundle(archive([{ name: 'old.txt', data: 'old' }], 'one.tar.gz'), dest);
    await extractBundle(archive([{ name: 'new.txt', data: 'new' }], 'two.tar.gz'), dest);
    expect(fs.readdirSync(dest)).toEqual(['new.txt']);
    expect(fs.readdirSync(work).sort()).toEqual(['dest', 'one.tar.gz', 'two.tar.gz']);
  });

  it('accepts an uncompressed tar too', async () => {
    const file = path.join(work, 'bundle.tar');
    fs.writeFileSync(file, tar([{ name: 'a.txt', data: 'plain' }]));
    await extractBundle(file, path.join(work, 'dest'));
    expect(fs.readFileSync(path.join(work, 'dest/a.txt'), 'utf8')).toBe('plain');
  });
});

describe('extractBundle: hostile archives', () => {
  it('refuses an entry climbing out with ..; nothing is written anywhere', async () => {
    const file = archive([
      { name: 'ok.txt', data: 'fine' },
      { name: '../../outside/evil.txt', data: 'evil' },
    ]);
    const err = await failure(extractBundle(file, path.join(work, 'dest')));
    expect(err.name).toBe('BundleExtractionError');
    expect(err.message).toMatch(/^Failed to extract bundle: entry '\.\.\/\.\.\/outside\/evil\.txt' has a '\.\.' path component/);
    expectClean();
  });

  it('refuses .. in the middle of a path', async () => {
    const file = archive([{ name: 'a/b/../../../outside/evil.txt', data: 'evil' }]);
    expect((await failure(extractBundle(file, path.join(work, 'dest')))).name).toBe('BundleExtractionError');
    expectClean();
  });

  it('makes absolute entry names relative (as GNU tar does): they land inside dest', async () => {
    const abs = path.join(outside, 'abs.txt');
    const file = archive([{ name: abs, data: 'neutralized' }]);
    const dest = path.join(work, 'dest');
    await extractBundle(file, dest);
    expect(fs.existsSync(abs)).toBe(false);
    expect(fs.readFileSync(path.join(dest, abs.replace(/^\/+/, '')), 'utf8')).toBe('neutralized');
  });

  it('skips symlinks whose target leaves the bundle (relative or absolute) and keeps the ones inside', async () => {
    const file = archive([
      { name: 'b/inside.txt', data: 'in' },
      { name: 'b/rel-out', type: '2', linkname: '../../outside/secret.txt' },
      { name: 'b/abs-out', type: '2', linkname: path.join(outside, 'secret.txt') },
      { name: 'b/etc', type: '2', linkname: '/etc' },
      { name: 'b/dir/up-out', type: '2', linkname: '../../..' },
      { name: 'b/ok', type: '2', linkname: 'inside.txt' },
      { name: 'b/dir/ok-up', type: '2', linkname: '../inside.txt' },
    ]);
    const dest = path.join(work, 'dest');
    const result = await extractBundle(file, dest);
    for (const gone of ['b/rel-out', 'b/abs-out', 'b/etc', 'b/dir/up-out']) expect(fs.existsSync(path.join(dest, gone)) || isLink(path.join(dest, gone))).toBe(false);
    expect(fs.readFileSync(path.join(dest, 'b/ok'), 'utf8')).toBe('in');
    expect(fs.readFileSync(path.join(dest, 'b/dir/ok-up'), 'utf8')).toBe('in');
    expect(result.skippedCount).toBe(4);
    expect(result.skipped.map((s) => s.path).sort()).toEqual(['b/abs-out', 'b/dir/up-out', 'b/etc', 'b/rel-out']);
    expect(result.skipped.find((s) => s.path === 'b/etc')?.reason).toMatch(/absolute path '\/etc', outside the bundle/);
  });

  it('drops a link that looks inside but escapes through another link (checked with realpath)', async () => {
    // a/b/c/d -> ../..  really is a/; so a/b/c/x -> d/../../../.. is lexically a/b/c/.. x4 = "." (inside)
    // but really climbs from a/ two levels above the bundle root.
    const file = archive([
      { name: 'a/b/c/d', type: '2', linkname: '../..' },
      { name: 'a/b/c/x', type: '2', linkname: 'd/../../../..' },
    ]);
    const dest = path.join(work, 'dest');
    const result = await extractBundle(file, dest);
    expect(isLink(path.join(dest, 'a/b/c/x'))).toBe(false);
    expect(isLink(path.join(dest, 'a/b/c/d'))).toBe(true);
    expect(result.skipped).toEqual([{ path: 'a/b/c/x', reason: 'symbolic link that resolves outside the bundle' }]);
  });

  it('never writes a file through a symlink from the same archive', async () => {
    // The link comes first and points inside; files are written before links exist, so "l/f.txt"
    // creates a real directory l/ and the link is then skipped.
    const file = archive([
      { name: 'real/', type: '5' },
      { name: 'l', type: '2', linkname: 'real' },
      { name: 'l/f.txt', data: 'through?' },
      { name: 'esc', type: '2', linkname: '../outside' },
      { name: 'esc/pwn.txt', data: 'pwn' },
    ]);
    const dest = path.join(work, 'dest');
    const result = await extractBundle(file, dest);
    expect(fs.lstatSync(path.join(dest, 'l')).isDirectory()).toBe(true);
    expect(fs.readFileSync(path.join(dest, 'l/f.txt'), 'utf8')).toBe('through?');
    expect(fs.readdirSync(path.join(dest, 'real'))).toEqual([]);
    expect(fs.lstatSync(path.join(dest, 'esc')).isDirectory()).toBe(true);
    expect(fs.readdirSync(outside)).toEqual(['secret.txt']);
    expect(result.skipped.map((s) => s.path).sort()).toEqual(['esc', 'l']);
  });

  it('refuses a hard link climbing out, and skips one to a file not in the archive', async () => {
    const out = archive([{ name: 'h', type: '1', linkname: '../outside/secret.txt' }]);
    const err = await failure(extractBundle(out, path.join(work, 'dest')));
    expect(err.name).toBe('BundleExtractionError');
    expect(err.message).toMatch(/hard link 'h' target '\.\.\/outside\/secret\.txt' has a '\.\.' path component/);
    expectClean();

    // An absolute target is read as a member name (etc/passwd), which was not extracted: skipped.
    const abs = archive([{ name: 'h2', type: '1', linkname: '/etc/passwd' }], 'abs.tar.gz');
    const dest = path.join(work, 'dest');
    const result = await extractBundle(abs, dest);
    expect(fs.existsSync(path.join(dest, 'h2'))).toBe(false);
    expect(result.skipped[0]).toMatchObject({ path: 'h2' });
  });

  it('skips device files, FIFOs and unknown entry types (their data is passed over)', async () => {
    const file = archive([
      { name: 'dev/null', type: '3' },
      { name: 'fifo', type: '6' },
      { name: 'sparse', type: 'S', data: 'x'.repeat(700) },
      { name: 'after.txt', data: 'still read' },
    ]);
    const dest = path.join(work, 'dest');
    const result = await extractBundle(file, dest);
    expect(fs.readdirSync(dest)).toEqual(['after.txt']);
    expect(fs.readFileSync(path.join(dest, 'after.txt'), 'utf8')).toBe('still read');
    expect(result.skipped.map((s) => s.reason)).toEqual(['device file', 'FIFO', "unsupported entry type 'S'"]);
  });

  it('aborts a decompression bomb over maxBytes and removes the partial extraction', async () => {
    // 8 MiB of zeros compresses to a few KiB.
    const file = archive([
      { name: 'first.txt', data: 'written before the bomb' },
      { name: 'zeros.bin', data: Buffer.alloc(8 * 1024 * 1024) },
    ]);
    expect(fs.statSync(file).size).toBeLessThan(64 * 1024);
    const err = await failure(extractBundle(file, path.join(work, 'dest'), { maxBytes: 4 * 1024 * 1024 }));
    expect(err.name).toBe('BundleExtractionError');
    expect(err.message).toBe('Failed to extract bundle: the archive expands to more than 4 MiB (the size limit): refusing it as a possible decompression bomb');
    expectClean();
  });

  it('refuses a header claiming a huge file before reading any of it', async () => {
    // 8 GiB - 1 declared, no data behind it: refused at the header by the default per-file limit.
    const file = archive(tar([{ name: 'huge.bin', size: 0o77777777777 }], { end: false }));
    const started = Date.now();
    const err = await failure(extractBundle(file, path.join(work, 'dest')));
    expect(err.message).toMatch(/^Failed to extract bundle: entry 'huge\.bin' is 8 GiB, over the per-file limit of 2 GiB$/);
    expect(Date.now() - started).toBeLessThan(5000);
    expectClean();
  });

  it('aborts a tar bomb of many tiny entries over maxEntries', async () => {
    const entries: Entry[] = Array.from({ length: 150 }, (_, i) => ({ name: `many/f${i}.txt`, data: 'x' }));
    const err = await failure(extractBundle(archive(entries), path.join(work, 'dest'), { maxEntries: 100 }));
    expect(err.message).toBe('Failed to extract bundle: the archive has more than 100 entries (the entry limit): refusing it as a possible tar bomb');
    expectClean();
  });

  it('enforces maxEntryBytes', async () => {
    const err = await failure(extractBundle(archive([{ name: 'big.log', data: 'x'.repeat(2000) }]), path.join(work, 'dest'), { maxEntryBytes: 1000 }));
    expect(err.message).toBe("Failed to extract bundle: entry 'big.log' is 1.95 KiB, over the per-file limit of 1000 bytes");
    expectClean();
  });
});

describe('extractBundle: modes and the tar package', () => {
  it('keeps modes the umask would narrow (the file is created with its mode, chmod only when needed)', async () => {
    const file = archive([
      { name: 'group-writable.txt', data: 'x', mode: 0o664 },
      { name: 'exec.sh', data: 'x', mode: 0o755 },
      { name: 'private.txt', data: 'x', mode: 0o400 },
    ]);
    const dest = path.join(work, 'dest');
    await extractBundle(file, dest);
    const mode = (name: string) => fs.statSync(path.join(dest, name)).mode & 0o777;
    expect(mode('group-writable.txt')).toBe(0o664);
    expect(mode('exec.sh')).toBe(0o755);
    expect(mode('private.txt')).toBe(0o600); // the owner can always read and write what debugkit extracted
  });

  it('refuses a pax record over the 1 MiB the tar package reads', async () => {
    const big = paxRecord('comment', 'x'.repeat(2 * 1024 * 1024));
    const err = await failure(
      extractBundle(
        archive([
          { name: 'PaxHeader', type: 'x', data: big },
          { name: 'a.txt', data: 'a' },
        ]),
        path.join(work, 'dest'),
      ),
    );
    expect(err.message).toMatch(/^Failed to extract bundle: a pax record of \d+ bytes is too large$/);
    expectClean();
  });

  it('a later entry of the same name replaces the earlier one, as tar does', async () => {
    const dest = path.join(work, 'dest');
    await extractBundle(
      archive([
        { name: 'a.txt', data: 'first' },
        { name: 'a.txt', data: 'second' },
      ]),
      dest,
    );
    expect(fs.readFileSync(path.join(dest, 'a.txt'), 'utf8')).toBe('second');
  });
});

describe('extractBundle: broken input', () => {
  it('corrupt gzip', async () => {
    const file = path.join(work, 'bundle.tar.gz');
    fs.writeFileSync(file, Buffer.concat([Buffer.from([0x1f, 0x8b, 0x08, 0x00]), Buffer.alloc(60, 0xab)]));
    const err = await failure(extractBundle(file, path.join(work, 'dest')));
    expect(err.name).toBe('BundleExtractionError');
    expect(err.message).toMatch(/^Failed to extract bundle: corrupt gzip data \(/);
    expectClean();
  });

  it('truncated gzip', async () => {
    const full = gzipSync(tar([{ name: 'a.txt', data: 'x'.repeat(100_000) }]));
    const file = path.join(work, 'bundle.tar.gz');
    fs.writeFileSync(file, full.subarray(0, Math.floor(full.length / 2)));
    const err = await failure(extractBundle(file, path.join(work, 'dest')));
    expect(err.name).toBe('BundleExtractionError');
    expect(err.message).toMatch(/^Failed to extract bundle: (corrupt gzip data \(unexpected end of file\)|unexpected end of archive)/);
    expectClean();
  });

  it('a file that is not an archive', async () => {
    const file = path.join(work, 'bundle.tar.gz');
    fs.writeFileSync(file, 'just some text, not a bundle\n');
    const err = await failure(extractBundle(file, path.join(work, 'dest')));
    expect(err.message).toBe('Failed to extract bundle: not a gzip-compressed tar archive (expected a .tar.gz or .tgz support bundle)');
    expectClean();
  });

  it('gzip of something that is not tar', async () => {
    const file = path.join(work, 'bundle.tar.gz');
    fs.writeFileSync(file, gzipSync(Buffer.from('x'.repeat(2000))));
    const err = await failure(extractBundle(file, path.join(work, 'dest')));
    expect(err.message).toBe('Failed to extract bundle: not a tar archive (bad header checksum)');
    expectClean();
  });

  it('a corrupted tar header checksum', async () => {
    const t = tar([
      { name: 'a.txt', data: 'one' },
      { name: 'b.txt', data: 'two' },
    ]);
    t[1024 + 10] ^= 0xff; // inside the second header's name
    const err = await failure(extractBundle(archive(t), path.join(work, 'dest')));
    expect(err.message).toBe('Failed to extract bundle: corrupt tar header after 1 entries (bad checksum)');
    expectClean();
  });

  it('a missing archive is BundleNotFoundError', async () => {
    const err = await failure(extractBundle(path.join(work, 'nope.tar.gz'), path.join(work, 'dest')));
    expect(err.name).toBe('BundleNotFoundError');
    expect(fs.readdirSync(work)).toEqual([]);
  });
});

describe('extractBundle: the event loop keeps turning (attack 18o F3)', () => {
  /** The longest block while `p` ran, its turns, and what it gave or threw. */
  const measured = <T>(p: () => Promise<T>) => longestBlock(() => p().catch((err: Error) => err));

  it('50,000 one-byte files, 10 directories deep: extracted in slices, and a refused one removed a few calls at a time', async () => {
    const COUNT = 50_000;
    const deep = Array.from({ length: 10 }, (_, i) => `d${i}`).join('/');
    const name = (i: number) => `${deep}/${String(i % 50).padStart(2, '0')}/f${i}`;
    const file = archive(Array.from({ length: COUNT }, (_, i) => ({ name: name(i), data: String(i % 10) })));
    const dest = path.join(work, 'dest');

    const done = await measured(() => extractBundle(file, dest));
    expect(done.value).toMatchObject({ entries: COUNT, bytes: COUNT, skippedCount: 0 });
    // Before, 4 MiB of the tar stream (4,096 files) went to the disk without a turn: a dozen blocks of 0.2-0.5 s here;
    // now a slice is ~10 ms, so the loop turns hundreds of times. The turns are what is asserted: a longest block bound
    // failed on busy hosts (481-754 ms seen with the suite and other loads running), a timing no test should judge.
    expect(done.turns, `${done.turns} turns, the longest block ${done.longest.toFixed(0)} ms, while extracting`).toBeGreaterThan(100);
    const files = fs.readdirSync(dest, { recursive: true, withFileTypes: true }).filter((d) => d.isFile());
    expect(files).toHaveLength(COUNT);
    const wrong = Array.from({ length: COUNT }, (_, i) => i).filter((i) => fs.readFileSync(path.join(dest, name(i)), 'utf8') !== String(i % 10));
    expect(wrong).toEqual([]);

    // Refused at its last entry: the 49,999 files written are removed. fs.promises.rm(recursive) started all their removals
    // at once and ran the completions in batches that held the loop 0.7-1.4 s.
    const refused = await measured(() => extractBundle(file, path.join(work, 'refused'), { maxEntries: COUNT - 1 }));
    expect(refused.value).toBeInstanceOf(BundleError);
    expect((refused.value as BundleError).message).toMatch(/more than 49999 entries/);
    // The removal gives the loop turns (before: a few batches); its longest block is not bound here: a fresh-clone run
    // saw one of 2.5 s once (0.04-0.1 s otherwise), a cause not found yet (open in issue 18's note).
    expect(refused.turns).toBeGreaterThan(100);
    expect(fs.readdirSync(work).sort()).toEqual(['bundle.tar.gz', 'dest']);
  }, 240_000);
});

describe('extractBundle: the real fixture bundles', () => {
  it.each([
    ['support-bundle.tar.gz', 121, 'support-bundle/cluster-resources/nodes.json'],
    ['missing-version.tar.gz', 2, 'support-bundle/analysis.json'],
    ['support-bundle-2025-04-11T14_05_31.tar.gz', 224, 'support-bundle-2025-04-11T14_05_31/cluster-resources/statefulsets-errors.json/wg-easy.json'],
  ])('%s', async (name, entries, known) => {
    const dest = path.join(work, 'dest');
    const result = await extractBundle(path.join(FIXTURES, name), dest);
    expect(result.entries).toBe(entries);
    expect(result.skippedCount).toBe(0);
    expect(fs.statSync(path.join(dest, known)).isFile()).toBe(true);
  });

  it('keeps the all-logs/ relative symlinks working', async () => {
    const dest = path.join(work, 'dest');
    await extractBundle(path.join(FIXTURES, 'support-bundle.tar.gz'), dest);
    const link = path.join(dest, 'support-bundle/all-logs/coredns-b96499967-tncf4/coredns.log');
    expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
    expect(fs.readlinkSync(link)).toBe('../../cluster-resources/pods/logs/kube-system/coredns-b96499967-tncf4/coredns.log');
    expect(fs.readFileSync(link, 'utf8')).toContain('plugin/ready: Still waiting on: "kubernetes"');
    const links = fs.readdirSync(path.join(dest, 'support-bundle/all-logs'), { recursive: true }).filter((p) => isLink(path.join(dest, 'support-bundle/all-logs', String(p))));
    expect(links).toHaveLength(18);
    expect(fs.readFileSync(path.join(dest, 'support-bundle/static-hi.log'), 'utf8')).toBe(
      fs.readFileSync(path.join(dest, 'support-bundle/cluster-resources/pods/logs/default/static-hi/static-hi.log'), 'utf8'),
    );
  });
});

function isLink(p: string): boolean {
  try {
    return fs.lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}
