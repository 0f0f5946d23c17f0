import { z } from 'zod';
import type { ToolSpec } from '../../../server/tools.js';
import type { GdbContext } from './index.js';
import { sessionId } from './schemas.js';

const input = {
  id: sessionId,
  stream: z.enum(['stdout', 'stderr']).default('stdout'),
  cursor: z.number().int().min(0).default(0).describe('Position to read from: 0 for the oldest kept text, or the cursor a previous read returned'),
  max_chars: z.number().int().min(1).max(100_000).default(16_000),
};
const output = {
  text: z.string(),
  cursor: z.number().describe('Pass this as cursor to read only newer output'),
  dropped: z.boolean().describe('True when older output than the cursor was already dropped (the last 1 MiB is kept)'),
  more: z.boolean().describe('True when more output is available after this read'),
};

export function programOutputTool(ctx: GdbContext): ToolSpec<typeof input, typeof output> {
  return {
    name: 'gdb_program_output',
    title: "Read the program's output",
    description:
      "Reads the debuggee's own stdout or stderr (kept apart from GDB's output; the last 1 MiB of each) from a cursor. " +
      'Note: a C program writing to a pipe buffers stdout until it flushes or exits.',
    input,
    output,
    annotations: { readOnlyHint: true, openWorldHint: false },
    async run(args, call) {
      const session = ctx.registry.get(call.client.owner, args.id);
      const read = session.readProgramOutput(args.stream, args.cursor, args.max_chars);
      const end = session.readProgramOutput(args.stream, read.cursor, 1);
      return { ...read, more: end.text.length > 0 };
    },
  };
}
