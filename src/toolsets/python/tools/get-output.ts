import { z } from 'zod';
import type { ToolSpec } from '../../../server/tools.js';
import type { PythonService } from '../service.js';
import { sessionId } from '../schemas.js';

const input = {
  sessionId,
  stream: z.enum(['stdout', 'stderr']).default('stdout'),
  cursor: z.number().int().min(0).default(0).describe('0 for the oldest kept text, or the cursor a previous read returned'),
  maxChars: z.number().int().min(1).max(100_000).default(16_000),
};
const output = {
  text: z.string(),
  cursor: z.number().describe('Pass this as cursor to read only newer output'),
  dropped: z.boolean().describe('True when output older than the cursor was already dropped (the last 1 MiB is kept)'),
};

export function getOutputTool(service: PythonService): ToolSpec<typeof input, typeof output> {
  return {
    name: 'python_get_output',
    title: "Read the program's output",
    description: "Reads the program's stdout or stderr from a cursor (the last 1 MiB of each is kept).",
    input,
    output,
    annotations: { readOnlyHint: true, openWorldHint: false },
    run: async (args, call) => {
      const rings = service.registry.get(call.client.owner, args.sessionId).output;
      if (!rings) return { text: '', cursor: 0, dropped: false };
      return rings[args.stream].read(args.cursor, args.maxChars);
    },
  };
}
