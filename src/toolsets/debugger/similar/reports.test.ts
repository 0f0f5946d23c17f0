import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CrashSignature } from '../control.js';
import { notReadMessage, scanArtefacts } from './artefacts.js';
import { parseReports } from './reports.js';
import { makeSignature } from './signature.js';

// Attack 18an Z6: debugger_find_similar_bugs read each report file (up to 2 MiB) whole on the
// main thread: four regex passes over the text, 200-300 ms a file, up to 2,000 files a call.

/** A slice that never asks to pause: the parse runs in one go. */
const WHOLE = { over: () => false, pause: () => Promise.resolve() };
const MiB = 1024 * 1024;

/**
 * The parse as it was (four regex passes over the whole text), the reference the line-at-a-time
 * parse must agree with: its signatures are what the tool's answers are made of.
 */
function wholeTextParse(whole: string, source: string): CrashSignature[] {
  const text = `${whole
    .replace(/[\u2028\u2029\r]/g, ' ')
    .split('\n')
    .map((line) => (line.length > 1024 ? line.slice(0, 1024) : line))
    .join('\n')}\n`;
  const out: CrashSignature[] = [];
  const add = (failure: string, frames: string[], pattern: CrashSignature['pattern']) => {
    if (out.length < 20) out.push(makeSignature(failure, frames, source, undefined, pattern));
  };
  const frames = (block: string, re: RegExp, reverse = false) => {
    const found: string[] = [];
    for (const f of block.matchAll(re)) {
      found.push(f[1]!);
      if (!reverse && found.length >= 64) break;
    }
    return reverse ? found.reverse() : found;
  };
  const firstBlock = (t: string) => {
    const end = t.search(/\n\s*\n/);
    return end === -1 ? t : t.slice(0, end + 1);
  };
  for (const m of text.matchAll(/ERROR: (?:Address|Leak|Memory|Thread)Sanitizer: (?=([\w-]+))\1[^\n]*\n((?:[^\n]*\n){0,60})/g)) {
    const found = frames(firstBlock(m[2]!), /^[ \t]*#\d+ 0x[0-9a-f]+ in ([^\s(]+)/gm);
    if (found.length) add(m[1]!, found, 'memory');
  }
  for (const m of text.matchAll(/runtime error: ([^\n]*)\n((?:[^\n]*\n){0,40})/g)) {
    add(`ubsan: ${m[1]!.split(/ (?:of|for) /)[0]}`, frames(firstBlock(m[2]!), /^[ \t]*#\d+ 0x[0-9a-f]+ in ([^\s(]+)/gm), /overflow|alignment|null pointer/.test(m[1]!) ? 'memory' : 'logic');
  }
  for (const m of text.matchAll(
    /==\d+== (Invalid (?:read|write) of size \d+|Invalid free\(\)[^\n]*|Conditional jump[^\n]*|Use of uninitialised[^\n]*)\n((?:==\d+==[ \t]+(?:at|by) [^\n]*\n){1,200})/g,
  )) {
    add(m[1]!.replace(/ of size \d+/, ''), frames(m[2]!, /(?:at|by) 0x[0-9A-F]+: ([^\s(]+)/gi), 'memory');
  }
  for (const m of text.matchAll(/^Traceback \(most recent call last\):\n((?: {2}[^\n]*\n){1,400})([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b)/gm)) {
    add(m[2]!, frames(m[1]!, /File "[^"]*", line \d+, in ([^\s]+)/g, true), 'logic');
  }
  return out;
}

const LINES = [
  '',
  '  ',
  ' \t',
  '\u2028',
  'a\u2029b',
  'x\r',
  'log line',
  'ERROR: AddressSanitizer: heap-buffer-overflow on address 0x1',
  'x ERROR: LeakSanitizer: detected memory leaks',
  'ERROR: AddressSanitizer:  no kind ERROR: ThreadSanitizer: data-race',
  'READ of size 4 at 0x1 thread T0',
  '    #0 0x4c in copy_header /src/h.c:10',
  '#1 0xab in main',
  '\t#2 0x1 in __interceptor_memcpy (/a+0x1)',
  '    #3 0xZZ in bad',
  'a.c:1:2: runtime error: signed integer overflow: 1 + 1 cannot be represented for int',
  'runtime error: load of null pointer of type int',
  'y runtime error: runtime error: misaligned',
  '==1== Invalid read of size 4',
  '==12== Invalid write of size 8 x',
  'p ==3== Invalid free() at ==4== Invalid free() y',
  '==1== Conditional jump or move depends on uninitialised value(s)',
  '==2== Use of uninitialised value of size 8',
  '==1==    at 0x10916D: walk (l.c:8)',
  '==1==    by 0x1091A0: main (l.c:15)',
  '==1==\tby 0xab: k by 0xCD: m',
  '==1== at 0x1: no-blank',
  '==1==    by 0x2: g ==1== Invalid free() in a frame line',
  '==1==    at 0xq: odd',
  'Traceback (most recent call last):',
  'Traceback (most recent call last): x',
  '  Traceback (most recent call last):',
  '  File "a.py", line 3, in <module>',
  '    main()',
  '  File "b',
  'c.py", line 4, in f',
  '  File "app.py", line 5, in main',
  'ValueError: bad value',
  'a.bError.c',
  'KeyboardInterrupt',
  'SystemExit: 1',
  'ErrorX',
  `${'x'.repeat(1100)} ERROR: AddressSanitizer: cut-away`,
  `ERROR: AddressSanitizer: ${'a'.repeat(1030)}`,
  `  File "long.py", line 1, in ${'g'.repeat(1100)}`,
];

/** A small deterministic generator (xorshift32): the same texts on every run. */
function random(seed: number): (n: number) => number {
  let x = seed;
  return (n) => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % n;
  };
}

/** A text of report-like lines: single lines, and runs of one line long enough to pass each pattern's line bound. */
function reportText(next: (n: number) => number): string {
  const lines: string[] = [];
  const count = next(80);
  for (let i = 0; i < count; i++) {
    const line = LINES[next(LINES.length)]!;
    const run = next(16) === 0 ? [39, 40, 41, 59, 60, 61, 199, 200, 201, 399, 400, 401][next(12)]! : 1;
    for (let j = 0; j < run; j++) lines.push(line);
  }
  return lines.join('\n') + (next(2) ? '\n' : '');
}

/** Texts at each pattern's line bounds, one line under, at and over. */
function boundaryTexts(): string[] {
  const texts: string[] = [];
  const times = (line: string, n: number) => Array.from({ length: n }, () => line);
  for (const n of [0, 1, 2, 39, 40, 41, 59, 60, 61, 63, 64, 199, 200, 201, 399, 400, 401]) {
    const tb = ['Traceback (most recent call last):', ...times('  File "a.py", line 1, in f', n), 'ValueError: x'];
    texts.push(tb.join('\n'), [...tb, ''].join('\n'));
    texts.push(['ERROR: AddressSanitizer: stack-overflow', ...times('x', n), '    #0 0x1 in f', 'ERROR: AddressSanitizer: heap-use-after-free', '    #0 0x2 in g'].join('\n'));
    texts.push(['a.c:1: runtime error: division by zero', ...times('x', n), '    #0 0x1 in f', 'runtime error: shift exponent', '    #0 0x2 in g'].join('\n'));
    texts.push(['ERROR: AddressSanitizer: stack-overflow', '', ...times('    #0 0x1 in f', n), '', '#1 0x2 in g'].join('\n'));
    texts.push(['==1== Invalid read of size 4', ...times('==1==    at 0x1: malloc', n), '==1==    by 0x2: real'].join('\n'));
    texts.push(['==1== Invalid read of size 4', ...times('==1==    at 0x1: f', n), '==1==    by 0x2: g ==1== Invalid free() x', '==1==    at 0x3: h'].join('\n'));
  }
  return texts;
}

const shape = (sigs: CrashSignature[]) => sigs.map(({ failure, pattern, frames, signature, source }) => ({ failure, pattern, frames, signature, source }));

describe('parseReports: one pass, a line at a time', () => {
  it('finds what the four patterns over the whole text found, in their order (500 generated texts, some past 64 KiB, and texts at the line bounds of each pattern)', async () => {
    const next = random(0x18a6);
    for (let i = 0; i < 500; i++) {
      let text = reportText(next);
      // Texts over a chunk (64 KiB) are read in more than one.
      if (i % 40 === 0) text = `${reportText(next)}\n${`${'z'.repeat(900)}\n`.repeat(80)}${reportText(next)}`;
      expect(shape(await parseReports(text, 'r.log', WHOLE)), JSON.stringify(text.slice(0, 2000))).toEqual(shape(wholeTextParse(text, 'r.log')));
    }
    for (const text of boundaryTexts()) expect(shape(await parseReports(text, 'r.log', WHOLE)), JSON.stringify(text.slice(0, 300))).toEqual(shape(wholeTextParse(text, 'r.log')));
  });

  it('yields to the event loop at least once per 64 KiB (the whole text was one synchronous step)', async () => {
    const pausesFor = async (text: string) => {
      let pauses = 0;
      const sigs = await parseReports(text, 'a.log', {
        over: () => true,
        pause: async () => {
          pauses++;
        },
      });
      return { pauses, sigs };
    };
    for (const [name, text] of [
      ['2 MiB of newlines', '\n'.repeat(2 * MiB)],
      ['2 MiB of line separators in lines', '\u2028\u2028\u2028\n'.repeat(MiB / 2)],
      ['2 MiB of valgrind frame lines', '==1==    at 0x1: f\n'.repeat((2 * MiB) / 19)],
      ['2 MiB of traceback lines', `Traceback (most recent call last):\n${'  File "a", line 1, in f\n'.repeat((2 * MiB) / 26)}`],
    ] as const) {
      const { pauses } = await pausesFor(text);
      expect(pauses, `${name}: ${pauses} pauses`).toBeGreaterThanOrEqual((text.length / (64 * 1024)) * 0.9);
    }
    // With the pauses, reports are still found across them.
    const report = 'ERROR: AddressSanitizer: heap-use-after-free\n    #0 0x1 in f\n\n';
    const { pauses, sigs } = await pausesFor(`${'\n'.repeat(MiB)}${report}${'\n'.repeat(MiB)}${report}`);
    expect(pauses).toBeGreaterThanOrEqual(30);
    expect(sigs.map((s) => s.signature)).toEqual(['heap-use-after-free | f', 'heap-use-after-free | f']);
  });
});

describe('scanArtefacts reads a bounded amount of report text', () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'dk-reports-'));
    mkdirSync(path.join(root, 'logs'));
    // Nine 2 MiB logs (16 MiB are read in one scan), one over 2 MiB, and a small report.
    for (let i = 0; i < 9; i++) writeFileSync(path.join(root, 'logs', `n${i}.log`), '\n'.repeat(2 * MiB));
    writeFileSync(path.join(root, 'logs', 'big.log'), '\n'.repeat(3 * MiB));
    writeFileSync(path.join(root, 'logs', 'crash.txt'), 'Traceback (most recent call last):\n  File "a.py", line 1, in f\nValueError\n');
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('leaves out what is past 16 MiB, and says so', async () => {
    const scan = await scanArtefacts(path.join(root, 'logs'), root, 'gdb', Date.now() + 60_000);
    // Which 2 MiB log is left out depends on the listing's order; the small report may be read before or after the budget is spent.
    expect(scan.notRead.tooLarge).toBe(1);
    expect(scan.notRead.pastBudget).toBeGreaterThanOrEqual(1);
    expect(scan.notRead.pastBudget).toBeLessThanOrEqual(2);
    expect(scan.cut).toBe(false);
    expect(notReadMessage(scan)).toMatch(/^not read: 1 report files larger than 2 MiB, [12] report files past the 16 MiB of reports one search reads: give a narrower search_path$/);
  }, 60_000);
});
