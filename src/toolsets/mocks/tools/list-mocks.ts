import { z } from 'zod';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { MocksContext } from './context.js';
import { mocksDir } from '../paths.js';

const input = { path: z.string().optional().describe('Path to search for mock files (default: ./keploy)') };
const output = {
  success: z.boolean(),
  mockSets: z.array(z.string()),
  count: z.number(),
  path: z.string(),
  message: z.string(),
};

export function listMocksTool({ config }: MocksContext): ToolSpec<typeof input, typeof output> {
  return {
    name: 'keploy_list_mocks',
    title: 'List mock sets',
    description:
      'List available mock sets in the Keploy directory. This helps you discover what mocks have been recorded and can ' +
      'be used with keploy_mock_test. Returns mock sets sorted by recency (latest first).',
    input,
    output,
    annotations: { readOnlyHint: true, openWorldHint: false },
    async run(args, call) {
      const shown = args.path ?? './keploy';
      try {
        const dir = mocksDir(config.root, args.path);
        // The Keploy reader (YAML) loads on the first call, not at start.
        const { MockStore } = await import('../keploy/store.js');
        // Sets are described off the event loop and bounded (keploy/describe.ts): big ones are counted, not parsed.
        const sets = await new MockStore(dir, { root: config.root }).list(call.client.principal?.id ?? call.client.owner);
        const names = sets.map((s) => s.name);
        let message = names.length === 0 ? 'No mock sets found. Use keploy_mock_record to create mocks first.' : `Found ${names.length} mock set(s). The latest is '${names[0]}'.`;
        // What could not be read, or was only counted, and why (paths as the client gave them).
        const local = (text: string) => text.split(dir).join(shown.replace(/\/+$/, '')).slice(0, 400);
        const unread = sets.filter((s) => s.error !== undefined);
        const scanned = sets.filter((s) => s.note !== undefined);
        const some = <T extends { name: string }>(list: T[], why: (s: T) => string) =>
          `${list
            .slice(0, 10)
            .map((s) => `'${s.name}' (${local(why(s))})`)
            .join('; ')}${list.length > 10 ? `; and ${list.length - 10} more` : ''}`;
        if (unread.length > 0) message += ` Could not read ${unread.length} of them: ${some(unread, (s) => s.error!)}.`;
        if (scanned.length > 0) message += ` Listed without parsing ${scanned.length} of them: ${some(scanned, (s) => s.note!)}.`;
        return { success: true, mockSets: names, count: names.length, path: shown, message };
      } catch (err) {
        return { success: false, mockSets: [], count: 0, path: shown, message: `Failed to list mocks: ${(err as Error).message}` };
      }
    },
  };
}
