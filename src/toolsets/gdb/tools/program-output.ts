import { z } from 'zod';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { GdbContext } from './index.js';
import { sessionId } from './schemas.js';

const input = {
  id: sessionId,
  stream: z.enum(['stdout', 'stderr']).default('stdout'),
  cursor: z.number().int().default(0).describe('0: the oldest kept text; a cursor a read returned; negative: back from the end (-2000: the last 2,000 characters)'),
  tail: z.number().int().min(1).max(100_000).optional().describe('Read the last N characters instead (same as cursor -N)'),
  max_chars: z.number().int().min(1).max(100_000).default(16_000),
};
const output = {
  text: z.string(),
  cursor: z.number().describe('Pass this as cursor to read only newer output'),
  end: z.number().describe('The end of the output so far: the cursor of a reader that is up to date'),
  dropped: z.boolean().describe('True when older output than the cursor was already dropped (the last 1 MiB is kept)'),
  more: z.boolean().describe('True when more output is available after this read (read again from cursor)'),
};

export function programOutputTool(ctx: GdbContext): ToolSpec<typeof input, typeof output> {
  return {
    name: 'gdb_program_output',
    title: "Read the program's output",
    description:
      "Reads the debuggee's own stdout or stderr (apart from GDB's; the last 1 MiB of each) from a cursor, " +
      'or its end with `tail`. Each answer gives its `end` cursor and if there is `more`. ' +
      '(C stdio to a pipe is buffered until flushed.)',
    input,
    output,
    annotations: { readOnlyHint: true, openWorldHint: false },
    async run(args, call) {
      const session = ctx.registry.get(call.client.owner, args.id);
      return session.readProgramOutput(args.stream, args.tail !== undefined ? -args.tail : args.cursor, args.max_chars);
    },
  };
}
