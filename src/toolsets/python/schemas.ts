import { z } from 'zod';

/** The id python_start_session answered: its name says it, so tools/list (read every turn) does not say it 10 times over. */
export const sessionId = z.string().min(1);
/** A frame of the current stop, for python_evaluate and python_inspect. */
export const frameIndex = z.number().int().min(0).default(0).describe('stack frame: 0 innermost, 1 its caller, ...');
export const projectFile = z.string().min(1).describe('Project-relative path of a source file (inside the workspace root)');
export const line = z.number().int().min(1).describe('1-based line number');

export const startInput = {
  entry: z.string().min(1).describe('Project-relative path of the script or .go file to run'),
  args: z.array(z.string()).optional().describe('Command-line arguments for the script'),
  env: z.record(z.string(), z.string()).optional().describe('Extra environment variables'),
  pythonPath: z.string().optional().describe('Absolute path of the Python interpreter (default: python3 on PATH)'),
};

/**
 * Under a mock set (python_start_session `mocks`): what replay did ({set, replayed, missed, misses?,
 * fellBack?}, mocks/under.ts ReplayAtStop). Kept loose in the listed schema: it is on every run
 * answer, and tools/list carries each output schema whole.
 */
const replayAtStop = z.record(z.string(), z.unknown()).optional();

export const runLimits = {
  timeout: z.number().min(0.1).max(3600).optional().describe('Seconds before the program is paused with a TimeoutError (default 30)'),
  maxReprLength: z.number().int().min(10).max(100_000).optional().describe('Longest repr shown (default 200; longer ones are cut: isTruncated)'),
  maxLocals: z.number().int().min(1).max(1000).optional().describe('Most locals returned (default 50)'),
};

export const breakpointFields = {
  condition: z.string().optional().describe('Stop only when this expression is true'),
  hitCondition: z.string().optional().describe('Stop on the Nth hit, e.g. "3" or ">= 5"'),
  logMessage: z.string().optional().describe('Log this (with {expressions}) instead of stopping: a logpoint'),
};

const valueView = z.object({ type: z.string(), repr: z.string(), isTruncated: z.boolean() });
const frameInfo = z.object({ file: z.string(), line: z.number() }).nullable();
const errorInfo = z.object({ type: z.string(), message: z.string(), traceback: z.string().nullable() }).nullable();
const breakpointReport = z.object({
  file: z.string(),
  line: z.number(),
  verified: z.boolean(),
  actualLine: z.number().optional(),
  message: z.string().optional(),
  condition: z.string().optional(),
  hitCondition: z.string().optional(),
  logMessage: z.string().optional(),
});

/** The contract's run answer plus the snapshot debugkit adds. */
export const runOutput = {
  hit: z.boolean().describe('Whether a breakpoint was hit'),
  completed: z.boolean().describe('Whether the program ran to its end'),
  frameInfo,
  locals: z.record(z.string(), valueView).nullable(),
  error: errorInfo.describe('The uncaught exception (type, message, traceback), or TimeoutError'),
  status: z.enum(['idle', 'running', 'paused', 'completed', 'error']),
  reason: z.string().optional().describe('Why the program stopped: breakpoint, step, exception, pause, ...'),
  function: z.string().optional(),
  source: z.string().optional().describe('The lines around the stop, the current one marked ->'),
  stack: z
    .array(z.object({ index: z.number(), name: z.string(), file: z.string(), line: z.number() }))
    .optional()
    .describe('A few frames, from two above the one looked at: python_inspect with another frame pages through the rest'),
  stackDepth: z.number().optional().describe('How many frames the stack has'),
  localsOmitted: z.number().optional().describe('How many locals were left out (raise maxLocals, or python_evaluate one by name)'),
  thread: z.string().optional(),
  exitCode: z.number().optional(),
  breakpointWarnings: z.array(breakpointReport).optional().describe('Breakpoints debugpy moved or could not verify'),
  conditionError: z
    .object({ condition: z.string(), error: z.string(), message: z.string() })
    .optional()
    .describe("This stop's breakpoint condition raised (error: the exception line); the program stopped here rather than take it as false"),
  mocks: replayAtStop,
};

export const stateOutput = {
  status: z.enum(['idle', 'running', 'paused', 'completed', 'error']),
  lastBreakpoint: z.object({ file: z.string(), line: z.number(), hitCount: z.number() }).nullable(),
  timings: z.object({ lastRunMs: z.number().nullable(), totalCpuTimeMs: z.number().nullable() }).nullable(),
  mocks: replayAtStop.describe('Under a mock set: {set, replayed, missed, misses, fellBack} in all; each stop says {set, replayed, missed, misses} since the last'),
};

export const breakpointReports = { breakpoints: z.array(breakpointReport) };

export function runOptions(args: { timeout?: number; maxReprLength?: number; maxLocals?: number }, signal?: AbortSignal) {
  const limits: { maxReprLength?: number; maxLocals?: number } = {};
  if (args.maxReprLength !== undefined) limits.maxReprLength = args.maxReprLength;
  if (args.maxLocals !== undefined) limits.maxLocals = args.maxLocals;
  return { timeoutMs: Math.round((args.timeout ?? 30) * 1000), signal, limits };
}
