import { z } from 'zod';

export const sessionId = z.string().min(1).describe('Session id returned by "open"');

/** The answer of a command: shared by call and gdb_wait. */
export const callOutput = {
  result: z.record(z.string(), z.unknown()).describe('The parsed MI result record: {"class": "done"|"running"|..., ...fields}'),
  output: z.string().describe("GDB's console, target and log stream text for this command"),
  state: z.enum(['not started', 'running', 'stopped', 'exited']).describe('The target program after the command'),
  stopped: z.record(z.string(), z.unknown()).optional().describe('The *stopped record (reason, frame, ...) if the target stopped'),
  program_output: z
    .object({ stdout: z.string(), stderr: z.string(), truncated: z.boolean(), hint: z.string().optional() })
    .optional()
    .describe("The debuggee's own output since the previous call (more with gdb_program_output)"),
  truncated: z.boolean().optional().describe('True when output was cut to keep the result small'),
  mocks: z.record(z.string(), z.unknown()).optional().describe('Under a mock set: {set, replayed, missed, misses} since the last answer'),
};

export const waitSeconds = z.number().min(0).max(600).optional().describe('Seconds to wait for a resumed program to stop (default 10)');

export function waitMs(seconds: number | undefined): number {
  return Math.round((seconds ?? 10) * 1000);
}
