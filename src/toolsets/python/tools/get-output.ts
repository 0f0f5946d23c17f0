import { z } from 'zod';
import { readPage } from '../../../core/ring.js';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { PythonContext } from '../context.js';
import { sessionId } from '../schemas.js';

const input = {
  sessionId,
  stream: z.enum(['stdout', 'stderr']).default('stdout'),
  cursor: z.number().int().default(0).describe('0: the oldest kept text; a cursor a read returned; negative: back from the end (-2000: the last 2,000 characters)'),
  tail: z.number().int().min(1).max(100_000).optional().describe('Read the last N characters instead (same as cursor -N)'),
  maxChars: z.number().int().min(1).max(100_000).default(16_000),
};
const output = {
  text: z.string(),
  cursor: z.number().describe('Pass this as cursor to read only newer output'),
  end: z.number().describe('The end of the output so far: the cursor of a reader that is up to date'),
  dropped: z.boolean().describe('True when output older than the cursor was already dropped (the last 1 MiB is kept)'),
  more: z.boolean().describe('True when more output is available after this read (read again from cursor)'),
};

export function getOutputTool({ service }: PythonContext): ToolSpec<typeof input, typeof output> {
  return {
    name: 'python_get_output',
    title: "Read the program's output",
    description:
      "Reads the program's stdout or stderr from a cursor, or its end with `tail` (or a negative cursor); the last 1 MiB of each is kept. " + 'Each answer gives its `end` cursor and `more`.',
    input,
    output,
    annotations: { readOnlyHint: true, openWorldHint: false },
    run: async (args, call) => {
      const rings = service.registry.get(call.client.owner, args.sessionId).output;
      if (!rings) return { text: '', cursor: 0, end: 0, dropped: false, more: false };
      return readPage(rings[args.stream], args.tail !== undefined ? -args.tail : args.cursor, args.maxChars);
    },
  };
}
