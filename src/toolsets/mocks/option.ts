import { z } from 'zod';

// Only the argument's schema: the tools that take it load at start-up, the replay engine (under.ts) with its first use.

/** The `mocks` argument of python_start_session, gdb's open and debugger_launch. */
export const mocksOption = z
  .object({
    set: z.string().min(1).max(1024),
    onMiss: z.enum(['fail', 'passthrough', 'record']).optional(),
    stopOnMiss: z.boolean().optional(),
  })
  .describe('Answer its calls from mock set `set` (DIR/NAME outside ./keploy); stopOnMiss: pause at a miss');

/** Where the set of a `mocks` argument is: `NAME` in ./keploy, `DIR/NAME` in DIR (inside the root). */
export function setPlace(set: string): { path: string | undefined; name: string } {
  const cut = set.lastIndexOf('/');
  return cut < 0 ? { path: undefined, name: set } : { path: set.slice(0, cut) || '/', name: set.slice(cut + 1) };
}

export type MocksOption = z.infer<typeof mocksOption>;

/** What replay did between two stops, as a stop shows it (mocks/under.ts makes it; absent when it did nothing). */
export type ReplayAtStop = {
  set: string;
  replayed: number;
  missed: number;
  /** The misses since the last stop, each with the closest mock (the first few; `missed` counts them all). */
  misses?: string[];
};

/** The line a stop's text gives what replay did since the last stop: its counts, then each miss with the closest mock. */
export function replayLine(m: ReplayAtStop): string {
  const misses = (m.misses ?? []).map((line) => `\n  miss: ${line}`).join('');
  return `[mock set '${m.set}': ${m.replayed} replayed, ${m.missed} missed${misses}]`;
}
