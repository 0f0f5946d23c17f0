import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BundleError } from '../errors.js';
import { extractBundle } from '../store/extract.js';
import { bundleRoot } from '../store/store.js';
import { grepFiles } from './grep.js';
import { matchesOnlyAscii, requiredLiteral } from './grep-pattern.js';
import { SUPPORT_BUNDLES } from '../../../../test/helpers/fixtures.js';

const FIXTURES = SUPPORT_BUNDLES;

/** The grep_files response text of the support-bundle contract, verbatim. */
const CONTRACT_GREP_TEXT =
  'Found 3 matches for case-insensitive pattern \'OOMKilled\' in /kubernetes/logs (matching *.log):\n\n**File: /kubernetes/logs/kube-system/mysql-backup-78945d95b-abcde.log**\n```\n  15 | Container was OOMKilled due to memory pressure\n```\n\n**File: /kubernetes/logs/monitoring/prometheus-server-558874d9c-fghij.log**\n```\n 278 | Previous container was OOMKilled, restarting with increased memory limits\n```\n\n**File: /kubernetes/events.log**\n```\n  42 | Pod monitoring/grafana-6584c8d677-abcde was evicted due to OOMKilled\n```\n\nSearch metadata:\n```json\n{\n  "pattern": "OOMKilled",\n  "path": "/kubernetes/logs",\n  "glob_pattern": "*.log",\n  "total_matches": 3,\n  "files_searched": 32,\n  "recursive": true,\n  "case_sensitive": false,\n  "truncated": false\n}\n```';

let base: string;
let root: string;
const put = (rel: string, data: string | Buffer) => {
  const file = path.join(root, rel);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, data);
};
/** `count` filler lines, then `line`, then a few more. */
const withLineAt = (lineNo: number, line: string) => `${Array.from({ length: lineNo - 1 }, (_, i) => `info: filler ${i + 1}`).join('\n')}\n${line}\nafter 1\nafter 2\n`;

beforeAll(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'dk-grep-')));
  root = path.join(base, 'bundle');
  put('kubernetes/logs/kube-system/mysql-backup-78945d95b-abcde.log', withLineAt(15, 'Container was OOMKilled due to memory pressure'));
  put('kubernetes/logs/monitoring/prometheus-server-558874d9c-fghij.log', withLineAt(278, 'Previous container was OOMKilled, restarting with increased memory limits'));
  put('kubernetes/events.log', withLineAt(42, 'Pod monitoring/grafana-6584c8d677-abcde was evicted due to OOMKilled'));
  for (let i = 0; i < 29; i++) put(`kubernetes/logs/other/pod-${String(i).padStart(2, '0')}.log`, 'all quiet\n');
  put('kubernetes/pods.json', '{"reason": "OOMKilled"}\n'); // not *.log
  put('kubernetes/core.bin', Buffer.concat([Buffer.from('OOMKilled\0'), Buffer.alloc(100)])); // binary
  put('kubernetes/logs/binary.log', Buffer.concat([Buffer.from('OOMKilled\n'), Buffer.from([0, 1, 2])])); // binary .log: skipped
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

describe('grepFiles: the contract rendering', () => {
  it('renders exactly like the contract (searching /kubernetes, which holds all three files)', async () => {
    const result = await grepFiles(root, { pattern: 'OOMKilled', path: '/kubernetes', recursive: true, glob_pattern: '*.log', case_sensitive: false, max_results: 1000 });
    const expected = CONTRACT_GREP_TEXT.replace('in /kubernetes/logs (matching', 'in /kubernetes (matching').replace('"path": "/kubernetes/logs"', '"path": "/kubernetes"');
    expect(result.text).toBe(expected);
    expect(result.metadata).toEqual({
      pattern: 'OOMKilled',
      path: '/kubernetes',
      glob_pattern: '*.log',
      total_matches: 3,
      files_searched: 32,
      recursive: true,
      case_sensitive: false,
      truncated: false,
    });
    expect(result.matches[0]).toEqual({ path: '/kubernetes/logs/kube-system/mysql-backup-78945d95b-abcde.log', line_number: 15, line: 'Container was OOMKilled due to memory pressure' });
    expect(result.binary_files_skipped).toBe(1);
  });

  it('the contract request as given (path /kubernetes/logs) finds the two files there', async () => {
    const result = await grepFiles(root, { pattern: 'OOMKilled', path: '/kubernetes/logs', glob_pattern: '*.log' });
    expect(result.text.startsWith("Found 2 matches for case-insensitive pattern 'OOMKilled' in /kubernetes/logs (matching *.log):\n\n**File: /kubernetes/logs/kube-system/")).toBe(true);
    expect(result.metadata.files_searched).toBe(31);
  });

  it('one match, no glob, case-sensitive wording', async () => {
    const result = await grepFiles(root, { pattern: 'grafana', path: '/kubernetes/events.log', case_sensitive: true });
    expect(result.text).toBe(
      'Found 1 match for case-sensitive pattern \'grafana\' in /kubernetes/events.log:\n\n**File: /kubernetes/events.log**\n```\n  42 | Pod monitoring/grafana-6584c8d677-abcde was evicted due to OOMKilled\n```\n\nSearch metadata:\n```json\n{\n  "pattern": "grafana",\n  "path": "/kubernetes/events.log",\n  "glob_pattern": null,\n  "total_matches": 1,\n  "files_searched": 1,\n  "recursive": true,\n  "case_sensitive": true,\n  "truncated": false\n}\n```',
    );
  });

  it('no matches', async () => {
    const result = await grepFiles(root, { pattern: 'nothing-like-this', path: '/' });
    expect(result.text.startsWith("No matches found for case-insensitive pattern 'nothing-like-this' in /.\n\nSearch metadata:\n```json\n{\n")).toBe(true);
    expect(result.metadata.total_matches).toBe(0);
  });
});

describe('grepFiles: matching', () => {
  it('case sensitivity, regexes, anchors, and per-line semantics', async () => {
    put('m/a.txt', 'Error: disk full\nerror: retry\nno problem\nERROR x\n');
    put('m/b.txt', 'first word\nthen a\nb on the next line\nend$\n');
    const grep = (pattern: string, extra: object = {}) => grepFiles(root, { pattern, path: '/m', ...extra });
    expect((await grep('error')).matches.map((m) => m.line_number)).toEqual([1, 2, 4]);
    expect((await grep('error', { case_sensitive: true })).matches.map((m) => m.line_number)).toEqual([2]);
    expect((await grep('^err')).matches.map((m) => m.line)).toEqual(['Error: disk full', 'error: retry', 'ERROR x']);
    expect((await grep('full$')).matches.map((m) => m.line)).toEqual(['Error: disk full']);
    expect((await grep('E(rror|RROR)', { case_sensitive: true })).matches).toHaveLength(2);
    // A pattern that could span lines matches within one line only, like grep.
    expect((await grep('a\\s+b')).matches).toEqual([]);
    expect((await grep('then a\\s*$')).matches.map((m) => m.line)).toEqual(['then a']);
    expect((await grep('[^\\n]*next')).matches.map((m) => m.line)).toEqual(['b on the next line']);
    expect((await grep('end\\$')).matches.map((m) => m.line)).toEqual(['end$']);
    // Lookarounds are checked line by line.
    expect((await grep('a(?!\\n)$')).matches.map((m) => m.line)).toEqual(['then a']);
    expect((await grep('^(?=b)')).matches.map((m) => m.line)).toEqual(['b on the next line']);
    // A literal with regex-free characters (the byte-search path) and one with a dot.
    expect((await grep('disk full', { case_sensitive: true })).matches).toHaveLength(1);
    expect((await grep('disk.full')).matches).toHaveLength(1);
    // Every line matches an empty-width pattern, with no phantom line after the last newline.
    expect((await grep('^', { path: '/m/a.txt' })).matches.map((m) => m.line_number)).toEqual([1, 2, 3, 4]);
  });

  it('takes a leading inline-flag group as PCRE, Python and Go do: (?i) case-insensitive, (?-i) case-sensitive (issue 21)', async () => {
    put('f/a.txt', 'Error: disk full\nerror: retry\nERROR x\n');
    const grep = (pattern: string, extra: object = {}) => grepFiles(root, { pattern, path: '/f', ...extra });
    // Before: "Invalid regular expression '(?i)error': Invalid group".
    const insensitive = await grep('(?i)error', { case_sensitive: true });
    expect(insensitive.matches.map((m) => m.line_number)).toEqual([1, 2, 3]);
    expect(insensitive.metadata).toMatchObject({ pattern: '(?i)error', case_sensitive: false });
    expect((await grep('(?-i)error')).matches.map((m) => m.line_number)).toEqual([2]);
    expect((await grep('(?s)^err')).matches).toHaveLength(3);
    await expect(grep('(?i)')).rejects.toThrow(/only inline flags/);
    await expect(grep('(?x)error')).rejects.toThrow(/Invalid regular expression/);
  });

  it('UTF-8 text is matched as text, whatever the pattern', async () => {
    put('u/u.txt', 'naïve café\nplain ascii\n日本語のログ: エラー\n');
    const grep = (pattern: string) => grepFiles(root, { pattern, path: '/u' });
    expect((await grep('caf.$')).matches.map((m) => m.line)).toEqual(['naïve café']);
    expect((await grep('エラー')).matches.map((m) => [m.line_number, m.line])).toEqual([[3, '日本語のログ: エラー']]);
    expect((await grep('na.ve')).matches).toHaveLength(1);
    expect((await grep('ascii')).matches.map((m) => m.line_number)).toEqual([2]);
    expect((await grep('[^a-z ]{3}')).matches.map((m) => m.line_number)).toEqual([3]);
  });

  it('line numbers stay right across 1 MiB read chunks and overlong lines', async () => {
    const lines = Array.from({ length: 120_000 }, (_, i) => `row ${i + 1} ${'p'.repeat(20)}`);
    lines[99_999] = 'row 100000 NEEDLE here';
    lines[5] = 'NEEDLE early';
    put('big/big.log', `${lines.join('\n')}\n`);
    const r = await grepFiles(root, { pattern: 'needle', path: '/big' });
    expect(r.matches.map((m) => m.line_number)).toEqual([6, 100_000]);
    const lit = await grepFiles(root, { pattern: 'NEEDLE', path: '/big', case_sensitive: true });
    expect(lit.matches.map((m) => m.line_number)).toEqual([6, 100_000]);
    // A regex with a required literal skips chunks without it; the line count must stay right.
    const pre = await grepFiles(root, { pattern: 'NEEDLE\\s+here', path: '/big', case_sensitive: true });
    expect(pre.matches.map((m) => [m.line_number, m.line])).toEqual([[100_000, 'row 100000 NEEDLE here']]);
    const look = await grepFiles(root, { pattern: '(?<=row )100000', path: '/big' });
    expect(look.matches.map((m) => m.line_number)).toEqual([100_000]);

    put('big/longline.json', `start\n${'z'.repeat(3 * 1024 * 1024)}NEEDLE${'z'.repeat(1000)}\nlast NEEDLE\n`);
    const long = await grepFiles(root, { pattern: 'needle', path: '/big/longline.json' });
    expect(long.matches.map((m) => m.line_number)).toEqual([2, 3]);
    // The long line is shown as a window around the match.
    expect(long.matches[0]!.line.length).toBeLessThan(600);
    expect(long.matches[0]!.line).toMatch(/^…z+NEEDLEz+… \[3146734 characters\]$/);
  });

  it('glob_pattern: *.log, **/*.json, {a,b}; recursive false; a single file path', async () => {
    put('g/a.log', 'hit\n');
    put('g/b.json', 'hit\n');
    put('g/sub/c.json', 'hit\n');
    put('g/sub/deeper/d.yaml', 'hit\n');
    const paths = async (extra: object) => (await grepFiles(root, { pattern: 'hit', path: '/g', ...extra })).matches.map((m) => m.path);
    expect(await paths({ glob_pattern: '*.log' })).toEqual(['/g/a.log']);
    expect(await paths({ glob_pattern: '**/*.json' })).toEqual(['/g/sub/c.json', '/g/b.json']);
    expect(await paths({ glob_pattern: 'sub/**/*.yaml' })).toEqual(['/g/sub/deeper/d.yaml']);
    expect(await paths({ glob_pattern: '*.{log,yaml}' })).toEqual(['/g/sub/deeper/d.yaml', '/g/a.log']);
    expect(await paths({ recursive: false })).toEqual(['/g/a.log', '/g/b.json']);
    expect(await paths({ path: '/g/sub/c.json' })).toEqual(['/g/sub/c.json']);
  });

  it('binary files are skipped', async () => {
    const r = await grepFiles(root, { pattern: 'OOMKilled', path: '/kubernetes' });
    expect(r.matches.map((m) => m.path)).not.toContain('/kubernetes/core.bin');
    expect(r.matches.map((m) => m.path)).not.toContain('/kubernetes/logs/binary.log');
    expect(r.binary_files_skipped).toBe(2);
  });
});

describe('grepFiles: limits and errors', () => {
  it('max_results: truncated true and a hint', async () => {
    put('t/x.log', Array.from({ length: 50 }, (_, i) => `match ${i}`).join('\n'));
    const r = await grepFiles(root, { pattern: 'match', path: '/t', max_results: 10 });
    expect(r.matches).toHaveLength(10);
    expect(r.metadata).toMatchObject({ total_matches: 10, truncated: true });
    expect(
      r.text.endsWith(
        '  "truncated": true\n}\n```\n\nThe results stopped at max_results (10) matches (truncated): narrow the search with a more specific pattern, a path or a glob_pattern, or raise max_results.',
      ),
    ).toBe(true);
    // Exactly max_results matches in all is not truncated.
    const exact = await grepFiles(root, { pattern: 'match', path: '/t', max_results: 50 });
    expect(exact.metadata).toMatchObject({ total_matches: 50, truncated: false });
  });

  it('max_results_per_file', async () => {
    put('pf/a.log', 'x\nx\nx\nx\n');
    put('pf/b.log', 'x\n');
    const r = await grepFiles(root, { pattern: 'x', path: '/pf', max_results_per_file: 2 });
    expect(r.matches.map((m) => `${m.path}:${m.line_number}`)).toEqual(['/pf/a.log:1', '/pf/a.log:2', '/pf/b.log:1']);
    expect(r.files_truncated).toEqual(['/pf/a.log']);
    expect(r.metadata.truncated).toBe(true);
    expect(r.text).toContain('   2 | x\n```\n(more matches in this file not shown: max_results_per_file reached)\n\n**File: /pf/b.log**');
  });

  it('InvalidPatternError names the problem; PathNotFoundError; InvalidPatternError for a bad glob', async () => {
    const bad = await failure(grepFiles(root, { pattern: '(unclosed', path: '/' }));
    expect(bad.name).toBe('InvalidPatternError');
    expect(bad.message).toBe("Invalid regular expression '(unclosed': Unterminated group");
    expect((await failure(grepFiles(root, { pattern: '', path: '/' }))).message).toBe('Invalid pattern: the pattern is empty');
    const missing = await failure(grepFiles(root, { pattern: 'x', path: '/nope' }));
    expect(missing.name).toBe('PathNotFoundError');
    expect(missing.message).toBe("Path '/nope' not found");
    expect((await failure(grepFiles(root, { pattern: 'x', path: '/', glob_pattern: '*.{log' }))).message).toBe("Invalid glob_pattern '*.{log': unclosed '{'");
  });

  it('requiredLiteral finds text every match contains', () => {
    const cases: [string, string][] = [
      ['level=\\S+ msg', 'level='],
      ['error.*timeout', 'timeout'],
      ['fail(ed|ure)', 'fail'],
      ['colou?r', 'colo'],
      ['abc{0,2}d', 'ab'],
      ['x\\.y\\dz', 'x.y'],
      ['\\x41BC', 'BC'],
      ['a|b', ''],
      ['foo\\|bar', 'foo|bar'],
      ['(?<=foo)bar', 'bar'],
    ];
    for (const [p, lit] of cases) expect(requiredLiteral(p)).toBe(lit);
  });

  it('matchesOnlyAscii decides when UTF-8 can be searched as bytes', () => {
    for (const p of ['OOMKilled', 'E[0-9]{4} [0-9:.]+', 'fail(ed|ure)', '\\bpod\\b', '\\d+ms', 'a\\.b']) expect(matchesOnlyAscii(p)).toBe(true);
    for (const p of ['a.b', '[^x]', '\\S+', '\\s', '\\W', '\\D', '\\u00e9', '\\xe9', 'café']) expect(matchesOnlyAscii(p)).toBe(false);
  });
});

describe('grepFiles: time bounds (the search runs on a worker thread)', () => {
  /** Ticks of a 5 ms timer on this thread while `p` is pending: the event loop is free meanwhile. */
  async function ticksWhile<T>(p: Promise<T>): Promise<{ value: T | Error; ticks: number }> {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    try {
      return { value: await p.catch((err: Error) => err), ticks };
    } finally {
      clearInterval(timer);
    }
  }

  it('a catastrophic pattern is stopped after stallMs on one line and answered as such; the event loop runs meanwhile', async () => {
    put('cat/app.log', `starting\n${'a'.repeat(40)}!ab\ndone\n`);
    // Line by line (a lookahead), and through rg (which proposes the line JavaScript then checks), and a directory and a file.
    for (const [pattern, where] of [
      ['(?=a)(a+)+$', '/cat'],
      ['(a+)+b', '/cat'],
      ['(a+)+$', '/cat/app.log'],
    ] as const) {
      const { value, ticks } = await ticksWhile(grepFiles(root, { pattern, path: where }, { stallMs: 500 }));
      expect(value).toBeInstanceOf(BundleError);
      expect((value as BundleError).name).toBe('InvalidPatternError');
      expect((value as BundleError).message).toMatch(/^The pattern '.*' took longer than 0\.5 s on one line \(or one piece of text\) and was stopped: simplify it\. Nested quantifiers/);
      expect(ticks).toBeGreaterThan(5);
    }
    // The thread that was ended is replaced: the same files answer normal patterns as before.
    const r = await grepFiles(root, { pattern: 'a+!', path: '/cat', case_sensitive: true });
    expect(r.matches).toEqual([{ path: '/cat/app.log', line_number: 2, line: `${'a'.repeat(40)}!ab` }]);
  });

  it('a search that keeps progressing but runs past totalMs is stopped too', async () => {
    // Each line costs the pattern some milliseconds of backtracking; thousands of them cost far more than the bound.
    put('slow/app.log', `${'a'.repeat(18)}!\n`.repeat(5000));
    const err = await failure(grepFiles(root, { pattern: '(?=a)(a+)+$', path: '/slow' }, { stallMs: 60_000, totalMs: 500 }));
    expect(err.name).toBe('InvalidPatternError');
    expect(err.message).toBe("The search for '(?=a)(a+)+$' took longer than 0.5 s in all and was stopped: simplify the pattern, or narrow the search with path or glob_pattern.");
  });

  it("one owner's queue of slow searches does not starve another owner's search", async () => {
    const order: string[] = [];
    const slow = [1, 2, 3, 4].map((i) =>
      grepFiles(root, { pattern: '(?=a)(a+)+$', path: '/cat' }, { stallMs: 1000, owner: 'key-a' }).then(
        () => order.push(`a${i}`),
        () => order.push(`a${i}`),
      ),
    );
    const other = grepFiles(root, { pattern: 'starting', path: '/cat' }, { owner: 'key-b' }).then((r) => order.push(`b:${r.matches.length}`));
    await Promise.all([...slow, other]);
    // b took the first thread a freed, before a's later searches: first come, first served would have run it last.
    expect(order.indexOf('b:1')).toBeGreaterThan(-1);
    expect(order.indexOf('b:1')).toBeLessThan(order.indexOf('a4'));
  });

  it("one owner never holds every thread: another owner's search runs while its slow searches do", async () => {
    const order: string[] = [];
    // Two slow searches of key-a, started first: with two threads, it gets one of them.
    const slow = [1, 2].map((i) =>
      grepFiles(root, { pattern: '(?=a)(a+)+$', path: '/cat' }, { stallMs: 1000, owner: 'key-a' }).then(
        () => order.push(`a${i}`),
        () => order.push(`a${i}`),
      ),
    );
    const other = grepFiles(root, { pattern: 'starting', path: '/cat' }, { owner: 'key-b' }).then((r) => order.push(`b:${r.matches.length}`));
    await Promise.all([...slow, other]);
    // b ran on the thread a was not allowed to take, before either of a's searches ended.
    expect(order[0]).toBe('b:1');
  });

  it('a cancelled search ends its thread', async () => {
    const abort = new AbortController();
    const pending = grepFiles(root, { pattern: '(?=a)(a+)+$', path: '/cat' }, { signal: abort.signal });
    abort.abort(new Error('the client cancelled'));
    await expect(pending).rejects.toThrow('the client cancelled');
    expect((await grepFiles(root, { pattern: 'starting', path: '/cat' })).matches).toHaveLength(1);
  });
});

describe('grepFiles on the real fixture bundles', () => {
  let work: string;
  beforeAll(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'dk-grep-fx-'));
  });
  afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

  it('support-bundle.tar.gz: a log line, found once under its real path, and through all-logs', async () => {
    await extractBundle(path.join(FIXTURES, 'support-bundle.tar.gz'), path.join(work, 'a'));
    const root = await bundleRoot(path.join(work, 'a'));
    const all = await grepFiles(root, { pattern: 'Still waiting on: "kubernetes"', path: '/', case_sensitive: true, max_results: 10_000 });
    const files = new Set(all.matches.map((m) => m.path));
    expect([...files].sort()).toEqual([
      '/cluster-resources/pods/logs/kube-system/coredns-b96499967-tncf4/coredns-previous.log',
      '/cluster-resources/pods/logs/kube-system/coredns-b96499967-tncf4/coredns.log',
    ]);
    expect(all.matches[0]).toMatchObject({ line: '[INFO] plugin/ready: Still waiting on: "kubernetes"' });
    const viaLinks = await grepFiles(root, { pattern: 'still waiting', path: '/all-logs', glob_pattern: 'coredns.log' });
    expect(new Set(viaLinks.matches.map((m) => m.path))).toEqual(new Set(['/all-logs/coredns-b96499967-tncf4/coredns.log']));
    expect(viaLinks.matches.length).toBe(all.matches.filter((m) => m.path.endsWith('/coredns.log')).length);
  });

  it('support-bundle-2025-04-11T14_05_31.tar.gz: JSON resources and the coredns log', async () => {
    await extractBundle(path.join(FIXTURES, 'support-bundle-2025-04-11T14_05_31.tar.gz'), path.join(work, 'b'));
    const root = await bundleRoot(path.join(work, 'b'));
    const r = await grepFiles(root, { pattern: '"kind": "Pod"', path: '/cluster-resources/pods', glob_pattern: '*.json', case_sensitive: true });
    expect(r.metadata.total_matches).toBeGreaterThan(0);
    expect(r.matches.every((m) => m.path.startsWith('/cluster-resources/pods/') && m.path.endsWith('.json'))).toBe(true);
    const log = await grepFiles(root, { pattern: 'coredns', path: '/logs', glob_pattern: '**/*.log', max_results: 1 });
    expect(log.matches[0]!.path).toBe('/logs/coredns/coredns-ff8999cc5-6rpll/coredns.log');
  });
});
