import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BundleError } from '../errors.js';
import { extractBundle } from '../store/extract.js';
import { bundleRoot } from '../store/store.js';
import { hexDump, readFile } from './read.js';
import { SUPPORT_BUNDLES } from '../../../../test/helpers/fixtures.js';

const FIXTURES = SUPPORT_BUNDLES;

/** The read_file response text of the support-bundle contract, verbatim. */
const CONTRACT_READ_TEXT =
  'Read text file /kubernetes/pods/kube-system/coredns-558bd4d5db-abcde.yaml (lines 1-17 of 17):\n```\n   1 | apiVersion: v1\n   2 | kind: Pod\n   3 | metadata:\n   4 |   name: coredns-558bd4d5db-abcde\n   5 |   namespace: kube-system\n   6 | spec:\n   7 |   containers:\n   8 |   - name: coredns\n   9 |     image: k8s.gcr.io/coredns:1.8.0\n  10 |     ports:\n  11 |     - containerPort: 53\n  12 |       name: dns\n  13 |       protocol: UDP\n  14 |     - containerPort: 53\n  15 |       name: dns-tcp\n  16 |       protocol: TCP\n  17 | status:\n```';

const COREDNS_YAML = CONTRACT_READ_TEXT.split('\n')
  .slice(2, -1)
  .map((l) => l.slice(7))
  .join('\n');

let base: string;
let root: string;
const put = (rel: string, data: string | Buffer) => {
  const file = path.join(root, rel);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, data);
};

beforeAll(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'dk-read-')));
  root = path.join(base, 'bundle');
  put('kubernetes/pods/kube-system/coredns-558bd4d5db-abcde.yaml', `${COREDNS_YAML}\n`);
  put('numbers.txt', Array.from({ length: 5000 }, (_, i) => `line ${i + 1}`).join('\n') + '\n');
  put('crlf.txt', 'one\r\ntwo\r\nthree');
  put('empty.txt', '');
  put('one-line.txt', 'no newline at the end');
  put('blank-lines.txt', '\n\n\n');
  put('huge-line.json', `${'x'.repeat(300 * 1024)}\nsecond\n`);
  put('wide.txt', Array.from({ length: 100 }, () => 'y'.repeat(10 * 1024)).join('\n') + '\n');
  put('utf8.txt', 'café\n日本語\n✓ done\n');
  put('bin/elf', Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), Buffer.alloc(3000, 0x41)]));
  put('bin/small.bin', Buffer.from([0x00, 0x01, 0x41, 0x42]));
  put('bin/latin1.txt', Buffer.from('caf\xe9\n', 'latin1'));
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

describe('readFile: the contract rendering', () => {
  it('renders exactly like the contract (start_line 0, end_line null: the whole file, numbered from 1)', async () => {
    const result = await readFile(root, '/kubernetes/pods/kube-system/coredns-558bd4d5db-abcde.yaml', 0, null);
    expect(result.text).toBe(CONTRACT_READ_TEXT);
    expect(result).toMatchObject({
      path: '/kubernetes/pods/kube-system/coredns-558bd4d5db-abcde.yaml',
      binary: false,
      start_line: 1,
      end_line: 17,
      total_lines: 17,
      truncated: false,
      content: COREDNS_YAML,
    });
  });

  it('start_line and end_line are 1-based and inclusive, the numbers grep_files gives; 0 reads as 1', async () => {
    const r = await readFile(root, '/numbers.txt', 3, 5);
    expect(r.text).toBe('Read text file /numbers.txt (lines 3-5 of 5000):\n```\n   3 | line 3\n   4 | line 4\n   5 | line 5\n```');
    expect(r).toMatchObject({ start_line: 3, end_line: 5, truncated: false });
    expect((await readFile(root, '/numbers.txt', 0, 0)).text).toBe((await readFile(root, '/numbers.txt', 1, 1)).text);
    const last = await readFile(root, '/numbers.txt', 5000, 100_000);
    expect(last.text).toBe('Read text file /numbers.txt (lines 5000-5000 of 5000):\n```\n5000 | line 5000\n```');
  });

  it('numbers widen past 9999', async () => {
    put('long.txt', Array.from({ length: 10_001 }, (_, i) => `${i + 1}`).join('\n'));
    const r = await readFile(root, '/long.txt', 9999, null);
    expect(r.text).toBe('Read text file /long.txt (lines 9999-10001 of 10001):\n```\n 9999 | 9999\n10000 | 10000\n10001 | 10001\n```');
  });

  it('CRLF, no final newline, empty file, blank lines, UTF-8', async () => {
    expect((await readFile(root, '/crlf.txt')).text).toBe('Read text file /crlf.txt (lines 1-3 of 3):\n```\n   1 | one\n   2 | two\n   3 | three\n```');
    expect((await readFile(root, '/one-line.txt')).text).toBe('Read text file /one-line.txt (lines 1-1 of 1):\n```\n   1 | no newline at the end\n```');
    expect((await readFile(root, '/empty.txt')).text).toBe('Read text file /empty.txt (empty file, 0 lines):\n```\n```');
    expect((await readFile(root, '/blank-lines.txt')).text).toBe('Read text file /blank-lines.txt (lines 1-3 of 3):\n```\n   1 | \n   2 | \n   3 | \n```');
    expect((await readFile(root, '/utf8.txt')).content).toBe('café\n日本語\n✓ done');
  });

  it('ranges that select nothing say why', async () => {
    expect((await readFile(root, '/numbers.txt', 5001)).text).toBe(
      'Read text file /numbers.txt: no lines to show: start_line 5001 is past the end of the file, which has 5000 lines (lines count from 1, so the last is start_line 5000).',
    );
    expect((await readFile(root, '/numbers.txt', 10, 5)).text).toBe('Read text file /numbers.txt: no lines to show: end_line 5 is before start_line 10.');
  });
});

describe('readFile: bounded answers', () => {
  it('at most 1000 lines, then says how to read on', async () => {
    const r = await readFile(root, '/numbers.txt');
    expect(r).toMatchObject({ start_line: 1, end_line: 1000, total_lines: 5000, truncated: true });
    expect(r.text.startsWith('Read text file /numbers.txt (lines 1-1000 of 5000):\n```\n   1 | line 1\n')).toBe(true);
    expect(r.text.endsWith('1000 | line 1000\n```\n\nShowing lines 1-1000 of 5000: one answer holds at most 1000 lines or 32 KiB. To read on, call read_file with start_line 1001.')).toBe(true);
    const next = await readFile(root, '/numbers.txt', 2001, 3000);
    expect(next).toMatchObject({ start_line: 2001, end_line: 3000, truncated: false });
    expect(next.text.startsWith('Read text file /numbers.txt (lines 2001-3000 of 5000):\n```\n2001 | line 2001\n')).toBe(true);
    const small = await readFile(root, '/numbers.txt', 11, 31, { maxLines: 5 });
    expect(small.text.endsWith('To read on, call read_file with start_line 16 and end_line 31.')).toBe(true);
  });

  it('at most 32 KiB of text: stops before the line that does not fit', async () => {
    const r = await readFile(root, '/wide.txt');
    // 10 KiB lines: 3 fit in 32 KiB (plus newlines not counted).
    expect(r).toMatchObject({ end_line: 3, total_lines: 100, truncated: true });
    expect(r.text).toContain('To read on, call read_file with start_line 4.');
  });

  it('a single line over the budget is cut, and says so', async () => {
    const r = await readFile(root, '/huge-line.json');
    expect(r).toMatchObject({ start_line: 1, end_line: 1, total_lines: 2, truncated: true });
    expect(r.content).toBe(`${'x'.repeat(32 * 1024)} … [line cut at 32 KiB of its ${300 * 1024} bytes]`);
    const second = await readFile(root, '/huge-line.json', 2);
    expect(second.text).toBe('Read text file /huge-line.json (lines 2-2 of 2):\n```\n   2 | second\n```');
  });
});

describe('readFile: binary files', () => {
  it('are shown as a hex dump of the first 1 KiB', async () => {
    const r = await readFile(root, '/bin/elf');
    expect(r).toMatchObject({ binary: true, size_bytes: 3008, total_lines: null, end_line: null, truncated: true });
    const lines = r.text.split('\n');
    expect(lines[0]).toBe('Read binary file /bin/elf (3008 bytes):');
    expect(lines[1]).toBe('```');
    expect(lines[2]).toBe('00000000  7f 45 4c 46 02 01 01 00  41 41 41 41 41 41 41 41  |.ELF....AAAAAAAA|');
    expect(lines).toHaveLength(1 + 1 + 64 + 1 + 2);
    expect(lines.at(-1)).toBe('Showing the first 1024 of 3008 bytes as a hex dump; binary files are not shown as text.');
  });

  it('small binary and invalid UTF-8', async () => {
    expect((await readFile(root, '/bin/small.bin')).text).toBe('Read binary file /bin/small.bin (4 bytes):\n```\n00000000  00 01 41 42                                       |..AB|\n```');
    expect((await readFile(root, '/bin/latin1.txt')).binary).toBe(true);
  });

  it('hexDump layout', () => {
    expect(hexDump(Buffer.from('0123456789abcdefXY'))).toBe(
      '00000000  30 31 32 33 34 35 36 37  38 39 61 62 63 64 65 66  |0123456789abcdef|\n00000010  58 59                                             |XY|',
    );
  });
});

describe('readFile: errors', () => {
  it('FileNotFoundError and NotAFileError, with the contract wording', async () => {
    const missing = await failure(readFile(root, '/kubernetes/pods/missing.yaml'));
    expect(missing.name).toBe('FileNotFoundError');
    expect(missing.message).toBe("File '/kubernetes/pods/missing.yaml' not found");
    const dir = await failure(readFile(root, '/kubernetes/pods'));
    expect(dir.name).toBe('NotAFileError');
    expect(dir.message).toBe("Path '/kubernetes/pods' is a directory, not a file");
  });

  it('a FIFO is not a file (and is never opened)', async () => {
    const { execFileSync } = await import('node:child_process');
    execFileSync('mkfifo', [path.join(root, 'pipe')]);
    const err = await failure(readFile(root, '/pipe'));
    expect(err.name).toBe('NotAFileError');
    expect(err.message).toBe("Path '/pipe' is not a regular file");
  });
});

describe('readFile on the real fixture bundles', () => {
  let work: string;
  beforeAll(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'dk-read-fx-'));
  });
  afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

  it('support-bundle.tar.gz: version.yaml, and a log through its all-logs symlink', async () => {
    await extractBundle(path.join(FIXTURES, 'support-bundle.tar.gz'), path.join(work, 'a'));
    const root = await bundleRoot(path.join(work, 'a'));
    const version = await readFile(root, '/version.yaml');
    expect(version.text).toMatch(/^Read text file \/version\.yaml \(lines 1-\d+ of \d+\):\n```\n {3}1 | apiVersion: troubleshoot\.sh\/v1beta2\n/);
    const viaLink = await readFile(root, '/all-logs/coredns-b96499967-tncf4/coredns.log', 1, 2);
    expect(viaLink.text).toBe(
      'Read text file /all-logs/coredns-b96499967-tncf4/coredns.log (lines 1-2 of ' +
        `${viaLink.total_lines}):\n\`\`\`\n   1 | [WARNING] No files matching import glob pattern: /etc/coredns/custom/*.server\n   2 | [INFO] plugin/ready: Still waiting on: "kubernetes"\n\`\`\``,
    );
  });

  it('support-bundle-2025-04-11T14_05_31.tar.gz: a file inside the *-errors.json directory', async () => {
    await extractBundle(path.join(FIXTURES, 'support-bundle-2025-04-11T14_05_31.tar.gz'), path.join(work, 'b'));
    const root = await bundleRoot(path.join(work, 'b'));
    const r = await readFile(root, '/cluster-resources/statefulsets-errors.json/wg-easy.json', 0, 0);
    expect(r.text).toMatch(/^Read text file \/cluster-resources\/statefulsets-errors\.json\/wg-easy\.json \(lines 1-1 of \d+\):\n```\n {3}1 | /);
    expect((await readFile(root, '/cluster-resources/custom-resource-definitions.json')).truncated).toBe(true);
  });
});
