import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { watchTurns } from '../mocks/http/test-support.js';
import { undefinedFunctions } from './checks.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'debugkit-checks-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Runs `work`, measuring the most CPU time (ms) the loop spent between two of its turns meanwhile. */
async function longestBlock<T>(work: () => Promise<T>): Promise<{ value: T; longest: number }> {
  const turns = watchTurns();
  const value = await work();
  return { value, longest: turns.stop().longest };
}

describe('undefinedFunctions', () => {
  it('finds def and async def of a name or the last part of a dotted one, and says which are defined nowhere', async () => {
    writeFileSync(path.join(root, 'app.py'), 'class Shop:\n    def total(self):\n        pass\n\nasync def fetch (url):\n    pass\ndef main():\n    pass\n');
    expect(await undefinedFunctions(root, ['main', 'Shop.total', 'client:fetch', 'missing', 'mai'])).toEqual(new Set(['missing', 'mai']));
  });

  it('scans each file once for every name: 1,000 names cost the loop about what one does (attack 18ao b2-4: one scan per name and file held it 4.3 s)', async () => {
    const dir = mkdtempSync(path.join(root, 'big-'));
    for (const n of [1, 2, 3]) writeFileSync(path.join(dir, `pad${n}.py`), ' '.repeat(2 * 1024 * 1024 - 64));
    const names = Array.from({ length: 1000 }, (_, i) => `f${i}`);
    const one = await longestBlock(() => undefinedFunctions(dir, ['f0']));
    const many = await longestBlock(() => undefinedFunctions(dir, names));
    expect(one.value).toEqual(new Set(['f0']));
    expect(many.value.size).toBe(1000);
    // Before: 1,000 scans of a 2 MiB file in one step, a thousand times one name's block. Now one scan a file.
    expect(many.longest).toBeLessThan(Math.max(20 * one.longest, 50));
  });
});
