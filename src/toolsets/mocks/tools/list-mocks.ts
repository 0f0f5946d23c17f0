import { z } from 'zod';
import type { Config } from '../../../config.js';
import type { ToolSpec } from '../../../mcp/tools.js';
import { MockStore } from '../keploy/store.js';
import { mocksDir } from '../paths.js';

const input = { path: z.string().optional().describe('Path to search for mock files (default: ./keploy)') };
const output = {
  success: z.boolean(),
  mockSets: z.array(z.string()),
  count: z.number(),
  path: z.string(),
  message: z.string(),
};

export function listMocksTool(config: Config): ToolSpec<typeof input, typeof output> {
  return {
    name: 'keploy_list_mocks',
    title: 'List mock sets',
    description:
      'List available mock sets in the Keploy directory. This helps you discover what mocks have been recorded and can ' +
      'be used with keploy_mock_test. Returns mock sets sorted by recency (latest first).',
    input,
    output,
    annotations: { readOnlyHint: true, openWorldHint: false },
    async run(args) {
      const shown = args.path ?? './keploy';
      try {
        const sets = await new MockStore(mocksDir(config.root, args.path)).list();
        const names = sets.map((s) => s.name);
        const message =
          names.length === 0
            ? 'No mock sets found. Use keploy_mock_record to create mocks first.'
            : `Found ${names.length} mock set(s). The latest is '${names[0]}'.`;
        return { success: true, mockSets: names, count: names.length, path: shown, message };
      } catch (err) {
        return { success: false, mockSets: [], count: 0, path: shown, message: `Failed to list mocks: ${(err as Error).message}` };
      }
    },
  };
}

