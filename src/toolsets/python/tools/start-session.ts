import { z } from 'zod';
import { clientKey } from '../../../core/sessions.js';
import { envEntries, envMap } from '../../../mcp/schemas.js';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { PythonContext } from '../context.js';
import { startInput } from '../schemas.js';
import { mocksOption } from '../../mocks/option.js';

/**
 * `env` as `["NAME=value", ...]`, the form every LLM stack can be shown (a map of free keys is not:
 * Gemini's schemas and OpenAI's strict mode have no way to say one); the REST contract's map
 * (`{"NAME": "value"}`) is taken too. The REST route keeps the contract's map alone.
 */
const env = z.union([envEntries, startInput.env.unwrap()]).optional().describe('Extra environment variables, as ["NAME=value", ...]');

const input = {
  ...startInput,
  env,
  stopOnRaisedExceptions: z.boolean().optional().describe('Also stop where an exception is raised, even if it is caught (default: only uncaught ones)'),
  idleTimeout: z.number().int().min(1).max(86_400).optional().describe('Seconds without calls before the session is ended (default 1800)'),
  mocks: mocksOption.optional(),
  attach: z.number().int().min(1).max(65535).optional().describe("A node --inspect's 127.0.0.1 port to attach to (entry: its main file)"),
};
const output = { sessionId: z.string() };

export function startSessionTool({ service }: PythonContext): ToolSpec<typeof input, typeof output> {
  return {
    name: 'python_start_session',
    title: 'Start a debug session',
    description: "Prepares a Python, Go (a main package's .go file) or JavaScript/TypeScript program to debug. Nothing runs until python_run_to_breakpoint.",
    input,
    output,
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    // Under a mock set the program's calls go through a replay that may reach real services and add to the set: keploy_mock_test's scope.
    // Attaching reaches a process no session started: python:attach, and the operator's --allow-attach.
    scopes: { of: (args) => [...(args.mocks ? ['mocks:run'] : []), ...(args.attach !== undefined ? ['python:attach'] : [])] },
    run: ({ env: vars, ...args }, call) => service.start(call.client.owner, { ...args, env: envOf(vars) }, clientKey(call.client), call.signal),
  };
}

function envOf(vars: z.infer<typeof env>): Record<string, string> | undefined {
  return Array.isArray(vars) ? envMap(vars) : vars;
}
