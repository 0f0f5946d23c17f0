import { describe, expect, it } from 'vitest';
import { keepEnd, MAX_OUTPUT_CHARS } from './kubectl.js';

describe('keepEnd: a cut log keeps its newest lines', () => {
  const log = Array.from({ length: 5000 }, (_, i) => `line ${i + 1} ${'x'.repeat(20)}`).join('\n');

  it('keeps whole lines from the end within the budget, and names the read_file range before them', () => {
    const r = keepEnd(log, '/cluster-resources/pods/logs/ns/p/c.log');
    expect(r.truncated).toBe(true);
    expect(r.output.length).toBeLessThanOrEqual(MAX_OUTPUT_CHARS);
    expect(r.output.endsWith(`line 5000 ${'x'.repeat(20)}`)).toBe(true);
    const firstShown = Number(/^line (\d+) /.exec(r.output)![1]);
    expect(r.hint).toBe(
      `Showing the last ${5001 - firstShown} of 5000 lines (lines ${firstShown}-5000; ${MAX_OUTPUT_CHARS} characters an answer holds). ` +
        `Use --tail N for fewer, or read_file {"path": "/cluster-resources/pods/logs/ns/p/c.log", "start_line": 1, "end_line": ${firstShown - 1}} reads the earlier lines.`,
    );
  });

  it('without a file, or after dropping the start of a huge log, says so without line numbers it cannot know', () => {
    expect(keepEnd(log, undefined).hint).toMatch(/read_file on the log under \/cluster-resources\/pods\/logs\/NAMESPACE\/POD\//);
    expect(keepEnd(log, undefined, true).hint).toMatch(/^Showing the last \d+ lines of a log over \d+ characters/);
  });

  it('shows the end of a single line longer than the budget', () => {
    const r = keepEnd(`start\n${'y'.repeat(MAX_OUTPUT_CHARS * 2)}END`, undefined);
    expect(r.output.endsWith('END')).toBe(true);
    expect(r.output.startsWith('… ')).toBe(true);
    expect(r.output.length).toBeLessThanOrEqual(MAX_OUTPUT_CHARS + 2);
  });
});
