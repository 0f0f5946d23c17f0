import { z } from 'zod';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { BundlesContext } from '../context.js';
import { bundlePath, split } from './common.js';

const listInput = {
  path: bundlePath.default('/'),
  recursive: z.boolean().default(false),
  compact: z.boolean().optional().describe('One line per entry (path, size, binary), no times; up to 400 entries'),
};
const listOutput = {
  entries: z.array(
    z.object({
      name: z.string(),
      path: z.string().optional(),
      type: z.enum(['file', 'directory']),
      size: z.number().nullable(),
      modified: z.string().optional(),
      accessed: z.string().optional(),
      is_binary: z.boolean().optional(),
    }),
  ),
  metadata: z.object({
    path: z.string(),
    recursive: z.boolean(),
    total_files: z.number(),
    total_dirs: z.number(),
    truncated: z.literal(true).optional(),
  }),
  truncated: z.boolean(),
};

export function listFilesTool({ workspace }: BundlesContext): ToolSpec<typeof listInput, typeof listOutput> {
  return {
    name: 'list_files',
    title: 'List files in the bundle',
    description: 'Lists a directory of the bundle (its subtree with recursive): type, size, times, binary or not. ' + 'At most 150 entries an answer (truncated: true: list a subdirectory).',
    input: listInput,
    output: listOutput,
    annotations: { readOnlyHint: true, openWorldHint: false },
    run: async (args, call) => {
      const { listFiles } = await import('../files/list.js');
      return split(await listFiles(workspace.current(call.client.owner).root, args.path, args.recursive, { compact: args.compact === true }));
    },
  };
}
