import { describe, expect, it } from 'vitest';
import { fitGrep } from './grep-files.js';

function answer(n: number, lineLength: number) {
  const matches = Array.from({ length: n }, (_, i) => ({ path: `/f${Math.floor(i / 10)}.log`, line_number: i + 1, line: 'x'.repeat(lineLength) }));
  const metadata = { pattern: 'x', path: '/', glob_pattern: null, total_matches: n, files_searched: 3, recursive: true, case_sensitive: false, truncated: false };
  const text = `Found ${n} matches for case-insensitive pattern 'x' in /:\n\n${'y'.repeat(n * (lineLength + 8))}\n\nSearch metadata:\n...`;
  return { matches, metadata, files_truncated: [], binary_files_skipped: 0, text };
}

describe('fitGrep', () => {
  it('leaves an answer within budget alone', () => {
    const a = answer(10, 10);
    expect(fitGrep(a)).toBe(a);
  });

  it('cuts at a line, keeps the header and metadata (truncated: true), and names the arguments that narrow', () => {
    const cut = fitGrep(answer(200, 400), 10_000);
    expect(cut.text.length).toBeLessThanOrEqual(11_000);
    expect(cut.text.startsWith("Found 200 matches for case-insensitive pattern 'x' in /:\n\n**File: /f0.log**\n```\n   1 | xxx")).toBe(true);
    expect(cut.metadata.truncated).toBe(true);
    expect(cut.matches.length).toBeGreaterThan(10);
    expect(cut.matches.length).toBeLessThan(30);
    expect(cut.text).toContain(`Showing ${cut.matches.length} of 200 matches`);
    expect(cut.text).toMatch(/"truncated": true/);
    expect(cut.text).toMatch(/Narrow with path \(a directory\), glob_pattern/);
    // Every line shown is in the structured matches, in order.
    const shown = [...cut.text.matchAll(/^ *(\d+) \| /gm)].map((m) => Number(m[1]));
    expect(shown).toEqual(cut.matches.map((m) => m.line_number));
  });
});
