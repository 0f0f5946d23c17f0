import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { resolveContained } from '../../../core/paths.js';
import { clientKey } from '../../../core/sessions.js';
import { envEntries, envMap } from '../../../mcp/schemas.js';
import type { ToolSpec } from '../../../mcp/tools.js';
import { warnFor, type MocksContext } from './context.js';
import { mocksDir } from '../paths.js';
import { DebugkitError } from '../../../core/errors.js';
import { compilePath, ignoredPathsProblem } from '../http/json-diff.js';

const input = {
  command: z.string().describe("Test command to run (e.g. 'go test -v' or 'npm test')"),
  mockName: z.string().optional().describe('Name of the mock set to replay. Use keploy_list_mocks to see available mocks. If not provided, the latest mock set will be used.'),
  fallBackOnMiss: z.boolean().optional().describe('Whether to fall back to real calls when no mock matches (default: false)'),
  onMiss: z.enum(['fail', 'passthrough', 'record']).optional().describe('On a miss: fail (default), passthrough (real service), record (also added to the set)'),
  ignore: z.array(z.string().min(1).max(200)).max(100).optional().describe("Fields never matched on: 'header.<Name>', 'query.<name>', 'body.<JSON path>' (body.items[*].id)"),
  path: z.string().optional().describe('Where the mock sets are (default: ./keploy)'),
  timeout: z.number().int().min(1).max(3600).optional().describe('Seconds before the command is stopped (default 300)'),
  env: envEntries.optional().describe('["NAME=value", ...] for the command'),
  upstreamCaFile: z.string().optional().describe('PEM CAs for real services reached on a miss'),
  only: z
    .object({ names: z.array(z.string()).max(20_000).optional(), from: z.string().optional(), to: z.string().optional() })
    .optional()
    .describe("One test's mocks: by names, or requested from..to (ISO times)"),
  strict: z.boolean().optional().describe('Also fail on unused/reused/size-only mocks'),
};
const output = {
  success: z.boolean(),
  mocksReplayed: z.number(),
  mocksMissed: z.number(),
  appExitCode: z.number(),
  message: z.string(),
  configuration: z.object({ command: z.string(), mockName: z.string(), fallBackOnMiss: z.boolean() }),
  misses: z.array(z.string()).optional().describe('Each unmatched call, with the closest mock and how it differs (an HTTP call that fell back too)'),
  mocksFellBack: z.number().optional().describe('Misses sent to the real destination (fallBackOnMiss), counted in mocksMissed'),
  mocksUnverified: z.number().optional().describe('Replayed calls whose request body was matched by size only (recorded without body or SHA-256)'),
  unverifiedMatches: z.array(z.string()).optional(),
  mocksRecorded: z.number().optional().describe('Misses answered by the real destination and added to the set (onMiss: record)'),
  appOutput: z.string().optional().describe("The end of the program's output (stderr, else stdout) when it failed"),
  mocksUnused: z.number().optional().describe('Mocks never used'),
  unusedMocks: z.array(z.string()).optional(),
  mocksReused: z.number().optional().describe('Mocks answered more often than recorded'),
  reusedMocks: z.array(z.string()).optional(),
};

/** Keploy noise keys to matcher options; refuses what is not one, naming the valid forms. */
/** The program's output kept beside a miss report: its last lines (the misses say what went wrong). */
const MISSED_OUTPUT_CHARS = 600;

export function parseIgnore(fields: readonly string[]): { ignoreHeaders: string[]; ignoreQuery: string[]; ignoreJsonPaths: string[] } {
  const out = { ignoreHeaders: [] as string[], ignoreQuery: [] as string[], ignoreJsonPaths: [] as string[] };
  for (const field of fields) {
    const m = /^(header|query|body)(\.\.?)(.+)$/.exec(field.trim());
    const bad = (why: string) =>
      new DebugkitError('INVALID_ARGUMENT', `ignore: '${field}' ${why}; use 'header.<Name>', 'query.<name>' or 'body.<JSON path>' (body.data.ts, body.items[*].id, body..ts)`);
    if (!m) throw bad('is not a field');
    const [, where, dots, rest] = m as unknown as [string, string, string, string];
    if (where === 'body') {
      const p = `$${dots}${rest}`;
      if (!/^\$(\.\.?[A-Za-z0-9_@$-]+|\.\*|\[(\d+|\*)?\])+$/.test(p)) throw bad('is not a JSON path of names, [n] and [*]');
      if ((p.match(/\.\./g) ?? []).length > 1) throw bad("has more than one '..'");
      out.ignoreJsonPaths.push(p);
    } else {
      if (dots !== '.' || !/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(rest)) throw bad(`is not a ${where} name`);
      (where === 'header' ? out.ignoreHeaders : out.ignoreQuery).push(rest.toLowerCase());
    }
  }
  const problem = ignoredPathsProblem(out.ignoreJsonPaths.map(compilePath));
  if (problem) throw new DebugkitError('INVALID_ARGUMENT', `ignore: ${problem}`);
  return out;
}

/** The first names of a list, and how many more. */
function listed(names: readonly string[], total: number): string {
  const shown = names.slice(0, 5).join(', ');
  return total > 5 ? `${shown} and ${total - 5} more` : shown;
}

export function mockTestTool(ctx: MocksContext): ToolSpec<typeof input, typeof output> {
  const { config } = ctx;
  return {
    name: 'keploy_mock_test',
    title: 'Run tests against recorded mocks',
    description:
      'Replay recorded mocks while running your application. This intercepts outgoing calls and returns the recorded ' +
      'responses, enabling isolated testing without external dependencies. Each miss is in `misses`, with the closest mock.',
    input,
    output,
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: true },
    // It runs the command it is given.
    scopes: { always: ['mocks:run'] },
    async run(args, call) {
      const warn = warnFor(ctx, call);
      const onMiss = args.onMiss ?? (args.fallBackOnMiss ? 'passthrough' : 'fail');
      const fallBackOnMiss = onMiss !== 'fail';
      const configuration = { command: args.command, mockName: args.mockName ?? '', fallBackOnMiss };
      const failed = (message: string) => ({ success: false, mocksReplayed: 0, mocksMissed: 0, appExitCode: -1, message, configuration });
      if (!args.command.trim()) return failed('Command is required');
      if (args.fallBackOnMiss === true && args.onMiss === 'fail') return failed("fallBackOnMiss: true contradicts onMiss: 'fail'; give one of them");
      let ignore;
      try {
        ignore = parseIgnore(args.ignore ?? []);
      } catch (err) {
        return failed((err as Error).message);
      }
      try {
        // The replay engine (Keploy reader, proxies, protocol replayers, TLS) loads on the first call, not at start.
        const [{ MockStore }, { narrowSet, replayMocks, RECORDED_MAX_MOCKS, RECORDED_MAX_BYTES }, { appOutput }, { loadCa }] = await Promise.all([
          import('../keploy/store.js'),
          import('../replay.js'),
          import('../runner.js'),
          import('../session.js'),
        ]);
        const store = new MockStore(mocksDir(config.root, args.path), { root: config.root });
        // The set is parsed on the mock-set worker threads, within their bounds (keploy/describe.ts): never on the event loop.
        const onPool = { owner: call.client.principal?.id ?? call.client.owner, signal: call.signal };
        const name = args.mockName ?? (await store.latest(onPool.owner))?.name;
        if (!name) return failed('No mock sets found. Run keploy_mock_record first');
        configuration.mockName = name;
        const loaded = await store.load(name, onPool);
        let mocks = loaded;
        try {
          if (args.only) mocks = narrowSet(loaded, args.only);
        } catch (err) {
          return failed(`only: ${(err as Error).message}`);
        }
        const { ca, env } = await loadCa(warn);
        const upstreamCa = args.upstreamCaFile ? await readFile(resolveContained(config.root, args.upstreamCaFile, { what: 'upstreamCaFile' }), 'utf8') : undefined;
        const outcome = await replayMocks({
          command: args.command,
          ...(args.env ? { env: envMap(args.env) } : {}),
          mocks,
          cwd: config.root,
          ca,
          caEnv: env,
          fallBackOnMiss,
          onMiss,
          ignore,
          ...(upstreamCa ? { upstreamCa } : {}),
          timeoutMs: (args.timeout ?? 300) * 1000,
          ownPorts: [config.http.port],
          owner: clientKey(call.client),
          signal: call.signal,
          onTick: (ms, replayed, missed) => void call.progress(Math.round(ms / 1000), undefined, `testing: ${replayed} replayed, ${missed} missed`),
          warn,
        });
        const { replayed, missed, run } = outcome;
        const parts = [`Replayed ${replayed} mocks`];
        if (missed > 0) {
          // What the count holds apart from plain misses, and whether `misses` holds every line said.
          const notes = [];
          if (outcome.fellBack > 0) notes.push(`${outcome.fellBack} fell back to the real service`);
          if (outcome.missesOmitted > 0) notes.push(`\`misses\` lists the first ${outcome.misses.length} of ${outcome.misses.length + outcome.missesOmitted} lines`);
          parts.push(`${missed} mocks missed${notes.length > 0 ? ` (${notes.join('; ')})` : ''}`);
        }
        if (outcome.recorded.length > 0) {
          try {
            const total = await store.append(name, outcome.recorded, { owner: onPool.owner });
            parts.push(`recorded ${outcome.recorded.length} missing calls into '${name}' (now ${total} mocks)`);
          } catch (err) {
            parts.push(`the ${outcome.recorded.length} calls recorded on a miss could not be added to '${name}': ${(err as Error).message}`);
          }
        }
        if (outcome.recordedDropped > 0) {
          parts.push(`${outcome.recordedDropped} more calls missed and were not recorded: a set holds at most ${RECORDED_MAX_MOCKS} mocks and ${RECORDED_MAX_BYTES / (1024 * 1024)} MiB`);
        }
        if (run.timedOut) parts.push(`the command was stopped after ${args.timeout ?? 300} s`);
        else if (run.exitCode !== 0) parts.push(`app exited with code ${run.exitCode}`);
        const { usage } = outcome;
        const warning = args.strict ? 'strict: ' : 'warning: ';
        if (usage.unused > 0) parts.push(`${warning}${usage.unused} mocks of the set were never used (${listed(usage.unusedNames, usage.unused)})`);
        if (usage.reused > 0) parts.push(`${warning}${usage.reused} mocks answered more often than recorded (${listed(usage.reusedNames, usage.reused)})`);
        if (outcome.unverified > 0) {
          parts.push(
            `${warning}${outcome.unverified} calls were answered from a mock whose request body the recording did not keep (over its 1 MiB) nor its SHA-256: matched by size only, not verified (\`unverifiedMatches\`)`,
          );
        }
        const clean = missed === 0 && run.exitCode === 0 && !run.timedOut;
        const success = clean && !(args.strict && (usage.unused > 0 || usage.reused > 0 || outcome.unverified > 0));
        // A failed replay leads with what missed (the cause, most often), and then only the end of the program's output.
        return {
          success,
          mocksReplayed: replayed,
          mocksMissed: missed,
          appExitCode: run.exitCode,
          message: parts.join(', '),
          ...(outcome.misses.length > 0 ? { misses: outcome.misses } : {}),
          configuration,
          ...(outcome.fellBack > 0 ? { mocksFellBack: outcome.fellBack } : {}),
          ...(outcome.unverified > 0 ? { mocksUnverified: outcome.unverified, unverifiedMatches: outcome.unverifiedLines } : {}),
          ...(outcome.recorded.length > 0 ? { mocksRecorded: outcome.recorded.length } : {}),
          ...(usage.unused > 0 ? { mocksUnused: usage.unused, unusedMocks: usage.unusedNames } : {}),
          ...(usage.reused > 0 ? { mocksReused: usage.reused, reusedMocks: usage.reusedNames } : {}),
          ...(clean ? {} : { appOutput: appOutput(run, missed > 0 ? MISSED_OUTPUT_CHARS : undefined) }),
        };
      } catch (err) {
        // A set past the bounds (keploy/describe.ts MockSetBoundError) is an error result, naming the bound and what is valid.
        if (err instanceof DebugkitError && err.name === 'MockSetBoundError') throw err;
        return failed(`Failed to load mocks: ${(err as Error).message}`);
      }
    },
  };
}
