import { z } from 'zod';
import type { Config } from '../../../config.js';
import type { ToolSpec } from '../../../server/tools.js';
import { MockStore } from '../keploy/store.js';
import { mocksDir } from '../paths.js';
import { replayMocks } from '../replay.js';
import { loadCa } from '../session.js';

const input = {
  command: z.string().describe("Test command to run (e.g. 'go test -v' or 'npm test')"),
  mockName: z
    .string()
    .optional()
    .describe('Name of the mock set to replay. Use keploy_list_mocks to see available mocks. If not provided, the latest mock set will be used.'),
  fallBackOnMiss: z.boolean().optional().describe('Whether to fall back to real calls when no mock matches (default: false)'),
  path: z.string().optional().describe('Where the mock sets are (default: ./keploy)'),
  timeout: z.number().int().min(1).max(3600).optional().describe('Seconds the command may run before it is stopped (default 300)'),
};
const output = {
  success: z.boolean(),
  mocksReplayed: z.number(),
  mocksMissed: z.number(),
  appExitCode: z.number(),
  message: z.string(),
  configuration: z.object({ command: z.string(), mockName: z.string(), fallBackOnMiss: z.boolean() }),
  misses: z.array(z.string()).optional().describe('Each unmatched call, with the closest mock and how it differs'),
  mocksFellBack: z.number().optional().describe('Misses sent to the real destination (fallBackOnMiss)'),
};

export function mockTestTool(config: Config, warn: (m: string) => void): ToolSpec<typeof input, typeof output> {
  return {
    name: 'keploy_mock_test',
    title: 'Run tests against recorded mocks',
    description:
      'Replay recorded mocks while running your application. This intercepts outgoing calls and returns the recorded ' +
      'responses, enabling isolated testing without external dependencies. success = no call missed and exit code 0. ' +
      'A miss is answered with HTTP 502 (naming the closest mock) or a PostgreSQL error, and listed in `misses`.',
    input,
    output,
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: true },
    async run(args, call) {
      const fallBackOnMiss = args.fallBackOnMiss ?? false;
      const configuration = { command: args.command, mockName: args.mockName ?? '', fallBackOnMiss };
      const failed = (message: string) => ({ success: false, mocksReplayed: 0, mocksMissed: 0, appExitCode: -1, message, configuration });
      if (!args.command.trim()) return failed('Command is required');
      try {
        const store = new MockStore(mocksDir(config.root, args.path));
        const name = args.mockName ?? (await store.latest())?.name;
        if (!name) return failed('No mock sets found. Run keploy_mock_record first');
        configuration.mockName = name;
        const mocks = await store.read(name);
        const { ca, env } = await loadCa(warn);
        const outcome = await replayMocks({
          command: args.command,
          mocks,
          cwd: config.root,
          ca,
          caEnv: env,
          fallBackOnMiss,
          timeoutMs: (args.timeout ?? 300) * 1000,
          ownPorts: [config.http.port],
          signal: call.signal,
          onTick: (ms, replayed, missed) => void call.progress(Math.round(ms / 1000), undefined, `testing: ${replayed} replayed, ${missed} missed`),
          warn,
        });
        const { replayed, missed, run } = outcome;
        const parts = [`Replayed ${replayed} mocks`];
        if (missed > 0) parts.push(`${missed} mocks missed`);
        if (run.timedOut) parts.push(`the command was stopped after ${args.timeout ?? 300} s`);
        else if (run.exitCode !== 0) parts.push(`app exited with code ${run.exitCode}`);
        return {
          success: missed === 0 && run.exitCode === 0 && !run.timedOut,
          mocksReplayed: replayed,
          mocksMissed: missed,
          appExitCode: run.exitCode,
          message: parts.join(', '),
          configuration,
          ...(outcome.misses.length > 0 ? { misses: outcome.misses.slice(0, 50) } : {}),
          ...(outcome.fellBack > 0 ? { mocksFellBack: outcome.fellBack } : {}),
        };
      } catch (err) {
        return failed(`Failed to load mocks: ${(err as Error).message}`);
      }
    },
  };
}
