// Round 18aj (attacker r1-1): each replay (and recording) kept at most 64 MiB of unfinished calls,
// but nothing bounded how many ran at once: 20 replays each holding 62 MiB of a request body took
// the server to 1.45 GB. Every replay's and recording's budget now takes from the server's too.
import { describe, expect, it } from 'vitest';
import { KeptBytes, keptBudget, RECORDING_KEPT_MAX_BYTES, SERVER_KEPT_MAX_BYTES } from './kept.js';

const MiB = 1024 * 1024;

describe('attack 18aj r1-1: one budget over all the replays and recordings running at once', () => {
  it('a child takes from its parent; past the parent it keeps no more, and what it gives back returns to both', () => {
    const server = new KeptBytes(10 * MiB, Number.MAX_SAFE_INTEGER);
    const a = new KeptBytes(8 * MiB, 1000, server);
    const b = new KeptBytes(8 * MiB, 1000, server);
    expect(a.take(6 * MiB)).toBe(true);
    expect(b.take(6 * MiB)).toBe(false); // within b's own 8 MiB, past the server's 10
    expect(b.take(4 * MiB)).toBe(true);
    expect(server.take(1)).toBe(false);
    a.give(6 * MiB);
    expect(b.take(4 * MiB)).toBe(true);
    b.give(100 * MiB); // more than it took: only what it holds goes back
    expect(server.take(10 * MiB)).toBe(true);
  });

  it("the toolset's budgets share the server's: a few replays fill it, the next keeps nothing", () => {
    const n = Math.ceil(SERVER_KEPT_MAX_BYTES / RECORDING_KEPT_MAX_BYTES);
    const replays = Array.from({ length: n }, () => keptBudget());
    try {
      for (const r of replays) expect(r.take(RECORDING_KEPT_MAX_BYTES)).toBe(true);
      const late = keptBudget();
      expect(late.take(1)).toBe(false);
    } finally {
      for (const r of replays) r.give(RECORDING_KEPT_MAX_BYTES);
    }
    const after = keptBudget();
    expect(after.take(MiB)).toBe(true);
    after.give(MiB);
  });
});
