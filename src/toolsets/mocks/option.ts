import { z } from 'zod';

// Only the argument's schema: the tools that take it load at start-up, the replay engine (under.ts) with its first use.

/** The `mocks` argument of python_start_session, gdb's open and debugger_launch. */
export const mocksOption = z
  .object({
    set: z.string().min(1).max(255),
    path: z.string().optional(),
    onMiss: z.enum(['fail', 'passthrough', 'record']).optional(),
    stopOnMiss: z.boolean().optional(),
  })
  .describe("Replay the program's calls from mock set `set` (`path` default ./keploy) as keploy_mock_test does; stopOnMiss pauses at a miss");

export type MocksOption = z.infer<typeof mocksOption>;
