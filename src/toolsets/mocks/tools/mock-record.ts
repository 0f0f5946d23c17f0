import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { resolveContained } from '../../../core/paths.js';
import { clientKey } from '../../../core/sessions.js';
import { envEntries, envMap } from '../../../mcp/schemas.js';
import type { ToolSpec } from '../../../mcp/tools.js';
import { warnFor, type MocksContext } from './context.js';
import { mocksDir } from '../paths.js';

const input = {
  command: z.string().describe("Application command to run (e.g. 'go run main.go' or 'npm start')"),
  path: z.string().optional().describe('Path to store mock files (default: ./keploy)'),
  timeout: z.number().int().min(1).max(3600).optional().describe('Seconds before the command is stopped (default 300)'),
  env: envEntries.optional().describe('["NAME=value", ...] for the command'),
  upstreamCaFile: z.string().optional().describe('PEM CAs for the real services'),
  insecureUpstream: z.boolean().optional().describe('Skip TLS verification of the real services'),
  replace: z
    .object({ set: z.string().min(1), names: z.array(z.string()).max(20_000).optional(), from: z.string().optional(), to: z.string().optional() })
    .optional()
    .describe('Re-record one test into `set` (its mocks by names or from..to)'),
};
const output = {
  success: z.boolean(),
  mockFilePath: z.string(),
  mockCount: z.number(),
  mocksDropped: z.number().optional().describe('Calls relayed but not recorded: past what a mock set may hold, or over the size limit per mock (absent when none); the message says why'),
  protocols: z.array(z.string()).nullable(),
  message: z.string(),
  configuration: z.object({ command: z.string(), path: z.string() }),
  appExitCode: z.number().optional(),
  appOutput: z.string().optional().describe("The end of the program's output (stderr, else stdout) when it failed"),
};

export function mockRecordTool(ctx: MocksContext): ToolSpec<typeof input, typeof output> {
  const { config } = ctx;
  return {
    name: 'keploy_mock_record',
    title: 'Record outgoing calls into mocks',
    description:
      'Record outgoing calls (HTTP APIs, databases, message queues, etc.) from your application. This captures all ' +
      'external dependencies while running your application command, creating mock files that can be replayed during ' +
      "testing. No root needed (proxychains4); HTTPS is decrypted with debugkit's CA. The command is split as a shell " +
      'would and run without one (no pipes or redirections).',
    input,
    output,
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: true },
    // It runs the command it is given.
    scopes: { always: ['mocks:run'] },
    async run(args, call) {
      const warn = warnFor(ctx, call);
      const shownPath = args.path ?? './keploy';
      const configuration = { command: args.command, path: shownPath };
      const failed = (message: string) => ({ success: false, mockFilePath: '', mockCount: 0, protocols: null, message, configuration });
      if (!args.command.trim()) return failed('Command is required');
      try {
        // The recording engine (proxies, protocol parsers, TLS) loads on the first call, not at start.
        const [{ recordMocks }, { appOutput }, { loadCa }] = await Promise.all([import('../record.js'), import('../runner.js'), import('../session.js')]);
        const { ca, env } = await loadCa(warn);
        const upstreamCa = args.upstreamCaFile ? resolveContained(config.root, args.upstreamCaFile, { what: 'upstreamCaFile' }) : undefined;
        const outcome = await recordMocks({
          command: args.command,
          ...(args.env ? { env: envMap(args.env) } : {}),
          dir: mocksDir(config.root, args.path),
          root: config.root,
          cwd: config.root,
          ca,
          caEnv: env,
          timeoutMs: (args.timeout ?? 300) * 1000,
          ownPorts: [config.http.port],
          owner: clientKey(call.client),
          ...(upstreamCa ? { upstreamCa: await readPem(upstreamCa) } : {}),
          ...(args.insecureUpstream ? { insecureUpstream: true } : {}),
          ...(args.replace ? { replace: args.replace } : {}),
          signal: call.signal,
          onTick: (ms, mocks) => void call.progress(Math.round(ms / 1000), undefined, `recording: ${mocks} calls captured after ${Math.round(ms / 1000)} s`),
          warn,
        });
        const mockFilePath = outcome.name ? `${shownPath.replace(/\/$/, '')}/${outcome.name}/mocks.yaml` : '';
        const base = {
          mockFilePath,
          mockCount: outcome.mockCount,
          ...(outcome.dropped > 0 ? { mocksDropped: outcome.dropped } : {}),
          protocols: outcome.protocols,
          configuration,
          appExitCode: outcome.run.exitCode,
        };
        // As keploy_mock_test says of the calls it records on a miss: the set holds the first ones, the rest are counted.
        const why = outcome.droppedWhy.length === 1 ? outcome.droppedWhy[0]!.why : outcome.droppedWhy.map((d) => `${d.count} ${d.why}`).join(', ');
        const dropped = outcome.dropped > 0 ? `; ${outcome.dropped} more calls were not recorded: ${why}` : '';
        const kept = (outcome.mockCount === 0 ? 'no mocks captured, no mock set written' : `${outcome.mockCount} mocks kept`) + dropped;
        if (outcome.run.timedOut) {
          return { ...base, success: false, message: `Recording stopped: the command ran longer than ${args.timeout ?? 300} s; ${kept}`, appOutput: appOutput(outcome.run) };
        }
        if (outcome.run.exitCode !== 0) {
          return { ...base, success: false, message: `Recording failed: the command exited with code ${outcome.run.exitCode}; ${kept}`, appOutput: appOutput(outcome.run) };
        }
        const into = outcome.replaced !== undefined ? ` into '${outcome.name}', in place of its ${outcome.replaced} mocks of this test (the rest of the set kept as it was)` : '';
        const message =
          (outcome.mockCount === 0
            ? `Recording completed but no mocks were captured; ${args.replace ? `'${args.replace.set}' was left as it was` : 'no mock set was written'}`
            : `Recorded ${outcome.mockCount} mocks (${outcome.protocols.join(', ')})${into}`) + dropped;
        return { ...base, success: true, message };
      } catch (err) {
        return failed(`Recording failed: ${(err as Error).message}`);
      }
    },
  };
}

function readPem(file: string): Promise<string> {
  return readFile(file, 'utf8');
}
