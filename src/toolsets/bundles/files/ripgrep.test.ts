import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractBundle } from '../store/extract.js';
import { bundleRoot } from '../store/store.js';
import { grepFilesWith, type GrepOptions } from './grep.js';
import { RG_MAX_OUTPUT } from './grep-candidates.js';
import { findRipgrep, ripgrepOutput, toRustRegex } from './ripgrep.js';
import { SUPPORT_BUNDLES } from '../../../../test/helpers/fixtures.js';

const FIXTURES = SUPPORT_BUNDLES;

describe('ripgrep is installed (scripts/install-deps.sh installs the Debian package ripgrep)', () => {
  it('finds rg on PATH', () => {
    const rg = findRipgrep();
    expect(rg, 'rg not found: run scripts/install-deps.sh as root').not.toBeNull();
    expect(execFileSync(rg!, ['--version'], { encoding: 'utf8' })).toMatch(/^ripgrep \d+/);
  });
});

describe('toRustRegex', () => {
  it('translates the common subset, widening where the dialects differ', () => {
    expect(toRustRegex('OOMKilled')).toBe('OOMKilled');
    expect(toRustRegex('fail(ed|ure)')).toBe('fail(ed|ure)');
    expect(toRustRegex('E[0-9]{4} [0-9:.]+')).toBe('E[0-9]{4}\\x{20}[0-9\\x{3A}\\x{2E}]+');
    expect(toRustRegex('a.b')).toBe('a(?:.|(?-u:[\\x80-\\xFF]+))b');
    expect(toRustRegex('\\d+\\w\\b')).toBe('[0-9]+[0-9A-Za-z_](?-u:\\b)');
    expect(toRustRegex('^error|done$')).toBe('(?:^|[\\r\\x{2028}\\x{2029}])error|done(?:$|[\\r\\x{2028}\\x{2029}])');
    expect(toRustRegex('[^a-c]')).toBe('(?:[^a-c\\n]|(?-u:[\\x80-\\xFF]+))');
    expect(toRustRegex('x{')).toBe('x\\x{7B}');
    expect(toRustRegex('a+?b*?')).toBe('a+?b*?');
  });

  it('falls back (null) where JavaScript and Rust differ and no widening is safe', () => {
    for (const p of ['(a)\\1', '(?=a)b', '(?<!a)b', '(?<name>a)', '\\x41', '\\u0041', 'é', 'a\\nb', '[]', '[^]', 'a^b', 'a$b', '(^a)', '\\cA', '\\0', 'a{99999}', '[\\D]']) {
      expect(toRustRegex(p), p).toBeNull();
    }
  });
});

let base: string;
afterAll(() => fs.rmSync(base, { recursive: true, force: true }));
beforeAll(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'dk-rg-')));
});

/** Both engines on the same question: the same answer, and ripgrep really answered when `rg` is expected. */
async function same(root: string, options: GrepOptions, expectRg: boolean): Promise<void> {
  const builtin = await grepFilesWith(root, options, 'builtin');
  const rg = await grepFilesWith(root, options, 'ripgrep');
  expect(builtin.engine).toBe('builtin');
  expect(rg.engine, JSON.stringify(options)).toBe(expectRg ? 'ripgrep' : 'builtin');
  expect(rg.result, JSON.stringify(options)).toEqual(builtin.result);
}

describe('ripgrep and the built-in search give identical answers', () => {
  let tricky: string;
  beforeAll(() => {
    tricky = path.join(base, 'tricky');
    const put = (rel: string, data: string | Buffer) => {
      const file = path.join(tricky, rel);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, data);
    };
    put('logs/crlf.log', 'error one\r\nfine\r\nERROR two\r\n');
    put('logs/sep.log', 'a\u2028error after a line separator\nplain error\n');
    put('logs/latin.log', Buffer.concat([Buffer.from('caf'), Buffer.from([0xe9]), Buffer.from(' error x\nerr\xffor\n', 'latin1')]));
    put('logs/kelvin.log', 'temperature 300\u212a ok\nk plain\n');
    put('logs/bom.log', '\ufeffstart error\n');
    put('logs/long.log', `${'x'.repeat(2000)} error ${'y'.repeat(2000)}\nshort error\n`);
    put('logs/noeol.log', 'first\nlast error');
    put('logs/empty.log', '');
    put('logs/late-nul.log', Buffer.concat([Buffer.from(`${'text line\n'.repeat(1000)}`), Buffer.from([0]), Buffer.from('\nerror after nul\n')]));
    put('bin/core.bin', Buffer.concat([Buffer.from('error\0'), Buffer.alloc(64)]));
    put('a/b/c/deep.json', '{"reason": "FailedMount", "message": "fail: failure failed"}\n');
    put('a/z.log', Array.from({ length: 50 }, (_, i) => `E${String(1000 + i)} 12:00:0${i % 10}.123 error line ${i}`).join('\n'));
    put('spaces.log', 'tab\there\u00a0nbsp error\n');
    fs.symlinkSync('a/z.log', path.join(tricky, 'link-to-z.log'));
    fs.symlinkSync('/etc/hostname', path.join(tricky, 'outside.log'));
  });

  const patterns: Array<[string, boolean]> = [
    ['error', false],
    ['error', true],
    ['ERROR', false],
    ['OOMKilled', true],
    ['fail(ed|ure)', true],
    ['E[0-9]{4} [0-9:.]+', true],
    ['^error', false],
    ['error$', false],
    ['two$', true],
    ['^last', true],
    ['\\bk\\b', false],
    ['caf. error', false],
    ['err.or', false],
    ['[^a-z ]error', false],
    ['\\s+nbsp', false],
    ['here\\snbsp', false],
    ['\\W+', true],
    ['\\d{2}:\\d{2}', true],
    ['x*', true],
    ['line \\d+$', true],
    ['"reason": "\\w+"', true],
  ];

  it.each(patterns)('%s (case_sensitive %s) on a tree of awkward files', async (pattern, caseSensitive) => {
    await same(tricky, { pattern, case_sensitive: caseSensitive, max_results: 100_000 }, true);
  });

  it('the same with truncation, per-file limits, a subdirectory and no recursion', async () => {
    for (const max_results of [1, 3, 7, 40]) await same(tricky, { pattern: 'error', max_results }, true);
    for (const max_results_per_file of [1, 2]) await same(tricky, { pattern: 'e', max_results_per_file, max_results: 100 }, true);
    await same(tricky, { pattern: 'error', path: '/logs' }, true);
    await same(tricky, { pattern: 'error', path: '/a', recursive: false }, true);
  });

  it('a pattern that looks like an option is only ever a pattern (it follows --regexp)', async () => {
    await same(tricky, { pattern: '--files' }, true);
    await same(tricky, { pattern: '-e' }, true);
  });

  it('the listing kept between searches is redone when a directory changes', async () => {
    const dir = path.join(base, 'changing');
    fs.mkdirSync(path.join(dir, 'sub'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'sub/a.log'), 'needle one\n');
    const first = await grepFilesWith(dir, { pattern: 'needle' }, 'ripgrep');
    expect(first.result.metadata).toMatchObject({ total_matches: 1, files_searched: 1 });
    fs.writeFileSync(path.join(dir, 'sub/b.log'), 'needle two\n');
    fs.writeFileSync(path.join(dir, 'sub/c.bin'), Buffer.from('needle\0'));
    const second = await grepFilesWith(dir, { pattern: 'needle' }, 'ripgrep');
    expect(second.engine).toBe('ripgrep');
    expect(second.result.metadata).toMatchObject({ total_matches: 2, files_searched: 2 });
    expect(second.result.binary_files_skipped).toBe(1);
    fs.rmSync(path.join(dir, 'sub/a.log'));
    await same(dir, { pattern: 'needle' }, true);
  });

  it('patterns ripgrep cannot take are answered by the built-in search', async () => {
    await same(tricky, { pattern: '(?<=caf.) error' }, false);
    await same(tricky, { pattern: '(e)rr\\1?or' }, false);
    await same(tricky, { pattern: 'café' }, false);
  });

  it('a glob_pattern is answered by the built-in search', async () => {
    await same(tricky, { pattern: 'error', glob_pattern: '*.log' }, false);
  });

  it('a candidate line holding a CR makes that file be searched the built-in way, with the same answer', async () => {
    // JavaScript's multiline `$` matches before the CR: "ERROR two\r" ends in "two".
    const r = await grepFilesWith(tricky, { pattern: 'two$', case_sensitive: false }, 'ripgrep');
    expect(r.engine).toBe('ripgrep');
    expect(r.result.matches.filter((m) => m.path === '/logs/crlf.log').map((m) => [m.line_number, m.line])).toEqual([[3, 'ERROR two']]);
    expect(r.result).toEqual((await grepFilesWith(tricky, { pattern: 'two$', case_sensitive: false }, 'builtin')).result);
  });

  it('the real fixture bundles', async () => {
    const work = path.join(base, 'fixtures');
    for (const [name, pats] of [
      ['support-bundle.tar.gz', ['Still waiting on', 'kube-system', 'error', '"phase": "\\w+"', 'v1\\.\\d+']],
      ['support-bundle-2025-04-11T14_05_31.tar.gz', ['coredns', 'fail(ed|ure)', 'E[0-9]{4} [0-9:.]+', '"kind": "Pod"', 'level=\\w+']],
    ] as const) {
      await extractBundle(path.join(FIXTURES, name), path.join(work, name));
      const root = await bundleRoot(path.join(work, name));
      for (const pattern of pats) {
        for (const case_sensitive of [true, false]) {
          await same(root, { pattern, case_sensitive, max_results: 100_000 }, true);
          await same(root, { pattern, case_sensitive, max_results: 5 }, true);
        }
      }
    }
  });
});

// Attack 18al v1-2: grep_files over a bundle of 190,000 small files let rg take both cores (its
// default thread count), and other clients' pings waited 390-750 ms. rg now runs one thread, at
// the worker threads' nice value. Checked on the rg process itself: a stand-in for rg records the
// arguments it was given and its own nice value (/proc/self/stat), then runs the real rg.
describe('rg runs one thread, below the server priority (attack 18al v1-2)', () => {
  it('every scan passes --threads 1 and sets nice 10 on the process', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'debugkit-rg-nice-'));
    try {
      fs.writeFileSync(path.join(dir, 'a.log'), 'one error here\n');
      const seen = path.join(dir, 'seen.txt');
      const real = findRipgrep()!;
      const standIn = path.join(dir, 'rg-stand-in.sh');
      // The nice value is read once rg's priority was set: the stand-in waits for it (up to ~5 s), then reports and runs rg.
      fs.writeFileSync(
        standIn,
        `#!/bin/sh\nfor i in $(seq 1 500); do n=$(cut -d' ' -f19 /proc/$$/stat); [ "$n" != 0 ] && break; sleep 0.01; done\n` +
          `echo "nice=$n args=$*" > ${JSON.stringify(seen)}\nexec ${JSON.stringify(real)} "$@"\n`,
        { mode: 0o755 },
      );
      const out = await ripgrepOutput(standIn, dir, 'error', { caseSensitive: false, recursive: true }, { maxBytes: 1 << 20, maxLines: 1000, timeoutMs: 20_000 });
      expect(out?.toString()).toContain('one error here');
      const line = fs.readFileSync(seen, 'utf8');
      expect(line).toMatch(/^nice=10 /);
      expect(line).toContain('--threads 1');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

// Attack 18am w1-1: a bundle file of one 400 MB line made rg print 64 MiB, read, held and copied on
// the main thread on every grep_files call (other clients' pings waited 0.3-1.4 s with a few). rg's
// output read there is now bounded at RG_MAX_OUTPUT (8 MiB): past it, rg is stopped and the built-in
// search, on its worker thread, answers, the same answer.
describe('a line longer than the rg output the main thread reads (attack 18am w1-1)', () => {
  it('rg is stopped at the bound, and the built-in search answers the match', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'debugkit-rg-longline-'));
    try {
      fs.writeFileSync(path.join(dir, 'one.log'), Buffer.alloc(RG_MAX_OUTPUT + 1024 * 1024, 0x61));
      expect(await ripgrepOutput(findRipgrep()!, dir, 'a', { caseSensitive: true, recursive: true }, { maxBytes: RG_MAX_OUTPUT, maxLines: 1000, timeoutMs: 60_000 })).toBeNull();
      const answer = await grepFilesWith(dir, { pattern: 'a', max_results: 5 }, 'auto');
      expect(answer.engine).toBe('builtin');
      expect(answer.result.metadata).toMatchObject({ total_matches: 1, files_searched: 1 });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
