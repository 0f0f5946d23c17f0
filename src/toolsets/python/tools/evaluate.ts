import { z } from 'zod';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { PythonContext } from '../context.js';
import { frameIndex, sessionId } from '../schemas.js';

const input = {
  sessionId,
  expression: z.string().min(1).describe('An expression, evaluated in the chosen frame (it may have side effects)'),
  frame: frameIndex,
  maxReprLength: z.number().int().min(10).max(100_000).default(2000),
  depth: z.number().int().min(0).max(3).default(0).describe('Also show members (attributes, items) this many levels deep, 25 per level (max 3)'),
};

interface Tree {
  type: string;
  repr: string;
  isTruncated: boolean;
  members?: Record<string, Tree>;
  membersOmitted?: number;
}
const tree: z.ZodType<Tree> = z.lazy(() =>
  z.object({
    type: z.string(),
    repr: z.string(),
    isTruncated: z.boolean(),
    members: z.record(z.string(), tree).optional(),
    membersOmitted: z.number().optional(),
  }),
);
const output = {
  type: z.string(),
  repr: z.string(),
  isTruncated: z.boolean(),
  expandable: z.boolean().describe('True when the value has members (ask with depth > 0 to see them)'),
  members: z.record(z.string(), tree).optional(),
  membersOmitted: z.number().optional().describe('Members left out beyond 25 at the top level'),
  membersTruncated: z.boolean().optional().describe('True when members were left out to keep the answer within its budget'),
  hint: z.string().optional().describe('How to ask for the part that was left out'),
};

export function evaluateTool({ service }: PythonContext): ToolSpec<typeof input, typeof output> {
  return {
    name: 'python_evaluate',
    title: 'Evaluate an expression',
    description: 'Evaluates an expression in a frame of the paused program and returns its type and repr; with depth, its members too, ' + 'at most about 12,000 characters (membersTruncated: cut).',
    input,
    output,
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    run: (args, call) => service.use(call.client.owner, args.sessionId, (s) => s.evaluate(args.expression, args.frame, args.maxReprLength, args.depth)),
  };
}
