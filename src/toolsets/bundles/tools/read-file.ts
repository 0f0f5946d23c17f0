import { z } from 'zod';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { BundlesContext } from '../context.js';
import { bundlePath, split } from './common.js';

const readInput = {
  path: bundlePath,
  start_line: z.number().int().min(0).default(1).describe('First line to show, 1-based as grep_files numbers lines (0 reads as 1)'),
  end_line: z.number().int().min(0).nullable().default(null).describe('Last line to show, 1-based and inclusive; null: to the end, as far as one answer holds'),
};
const readOutput = {
  path: z.string(),
  binary: z.boolean(),
  size_bytes: z.number(),
  start_line: z.number(),
  end_line: z.number().nullable(),
  total_lines: z.number().nullable(),
  truncated: z.boolean(),
  content: z.string(),
};

export function readFileTool({ workspace }: BundlesContext): ToolSpec<typeof readInput, typeof readOutput> {
  return {
    name: 'read_file',
    title: 'Read a file in the bundle',
    description:
      'Reads lines of a bundle file, numbered from 1 as grep_files numbers them. ' +
      'One answer holds about 1000 lines or 32 KiB; a longer file is cut and the answer names the start_line to read on. Binary files are shown as a hex dump.',
    input: readInput,
    output: readOutput,
    annotations: { readOnlyHint: true, openWorldHint: false },
    run: async (args, call) => {
      const { readFile } = await import('../files/read.js');
      return split(await readFile(workspace.current(call.client.owner).root, args.path, args.start_line, args.end_line));
    },
  };
}
