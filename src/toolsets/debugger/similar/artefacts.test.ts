import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpuTimes, linearMessage } from '../../../core/cputime.js';
import { openFile, scanArtefacts } from './artefacts.js';
import { parseReports } from './reports.js';

/** A slice that never asks to pause: the parse runs in one go (as CPU time is measured). */
const WHOLE = { over: () => false, pause: () => Promise.resolve() };

let base: string;
let root: string;
beforeAll(() => {
  base = mkdtempSync(path.join(os.tmpdir(), 'dk-artefacts-'));
  root = path.join(base, 'root');
  mkdirSync(path.join(root, 'logs'), { recursive: true });
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

const TRACEBACK = 'Traceback (most recent call last):\n  File "app.py", line 3, in <module>\n    main()\n  File "app.py", line 2, in main\n    1 / 0\nZeroDivisionError: division by zero\n';

describe('parseReports', () => {
  it('finds a Python traceback, and reads a text of headers alone in linear time (it was quadratic: 8,000 lines took 2 s)', async () => {
    expect((await parseReports(`log line\n${TRACEBACK}`, 'app.log', WHOLE)).map((s) => s.signature)).toEqual(['ZeroDivisionError | main | <module>']);
    const headers = (n: number) => '  Traceback (most recent call last):\n'.repeat(n) + '1\n';
    const indented = (n: number) => 'Traceback (most recent call last):\n' + '  x\n'.repeat(n) + '1\n';
    const noEnd = (n: number) => `ERROR: AddressSanitizer: ${'a'.repeat(15 * n)}`;
    const separators = (n: number) => `ERROR: AddressSanitizer: x\n${'\u2028'.repeat(8 * n)}y\n`;
    const ubsan = (n: number) => `x runtime error: a\n${'\u2028'.repeat(8 * n)}y\n`;
    const repeated = (n: number) => 'runtime error: '.repeat(n) + '==1== Conditional jump '.repeat(n);
    for (const [name, make] of [
      ['indented headers', headers],
      ['one header and its frames', indented],
      ['a sanitizer line with no end', noEnd],
      ['line separators after a sanitizer header', separators],
      ['line separators after a UBSan line', ubsan],
      ['report openings repeated on one line', repeated],
    ] as const) {
      const small = make(2_000);
      const big = make(8_000);
      const t = cpuTimes(
        () => parseReports(small, 'a.log', WHOLE),
        () => parseReports(big, 'a.log', WHOLE),
      );
      expect(t.big, linearMessage(name, t)).toBeLessThan(8 * t.small + 5);
    }
  });
});

describe('scanArtefacts', () => {
  it('opens no FIFO (a name swapped for one held the event loop for good) and follows no link out of the root', async () => {
    writeFileSync(path.join(root, 'logs', 'app.log'), TRACEBACK);
    execFileSync('mkfifo', [path.join(root, 'logs', 'zz.log')]);
    writeFileSync(path.join(base, 'outside.log'), TRACEBACK.replace('ZeroDivisionError', 'OutsideError'));
    symlinkSync(path.join(base, 'outside.log'), path.join(root, 'logs', 'link.log'));
    mkdirSync(path.join(base, 'outside-dir'));
    writeFileSync(path.join(base, 'outside-dir', 'x.log'), TRACEBACK.replace('ZeroDivisionError', 'OutsideDirError'));
    symlinkSync(path.join(base, 'outside-dir'), path.join(root, 'logs', 'dir'));
    // A FIFO handed to the opener as a name a listing called a file (the swap's outcome): not opened for reading, not waited on.
    expect(openFile(root, path.join(root, 'logs', 'zz.log'))).toBeUndefined();
    const scan = await scanArtefacts(path.join(root, 'logs'), root, 'gdb', Date.now() + 20_000);
    expect(scan.signatures.map((s) => s.signature)).toEqual(['ZeroDivisionError | main | <module>']);
  });
});

describe('parseReports and scanArtefacts keep little', () => {
  it('at most 20 signatures from one text, their strings copied out of it', async () => {
    const report = '==1== Invalid free() x\n==1==    at 0x1: f\n\n';
    const sigs = await parseReports(report.repeat(1000), 'many.log', WHOLE);
    expect(sigs).toHaveLength(20);
    expect(sigs[0]!.signature).toBe('Invalid free() x | f');
  });
});

describe('scanArtefacts ends with its call', () => {
  it('a cancelled scan stops at once (its client left: nothing runs on for no one)', async () => {
    mkdirSync(path.join(root, 'cancelled'));
    for (let i = 0; i < 50; i++) writeFileSync(path.join(root, 'cancelled', `r${i}.log`), TRACEBACK);
    const cancel = new AbortController();
    cancel.abort();
    const scan = await scanArtefacts(path.join(root, 'cancelled'), root, 'gdb', Date.now() + 20_000, cancel.signal);
    expect(scan).toMatchObject({ scanned: 0, cut: true, signatures: [] });
    expect((await scanArtefacts(path.join(root, 'cancelled'), root, 'gdb', Date.now() + 20_000)).signatures).toHaveLength(50);
  });
});
