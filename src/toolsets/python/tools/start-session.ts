import { z } from 'zod';
import { clientKey } from '../../../core/sessions.js';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { PythonService } from '../service.js';
import { startInput } from '../schemas.js';

const input = {
  ...startInput,
  stopOnRaisedExceptions: z.boolean().optional().describe('Also stop where an exception is raised, even if it is caught (default: only uncaught ones)'),
  idleTimeout: z.number().int().min(1).max(86_400).optional().describe('Seconds without calls before the session is ended (default 1800)'),
};
const output = { sessionId: z.string() };

export function startSessionTool(service: PythonService): ToolSpec<typeof input, typeof output> {
  return {
    name: 'python_start_session',
    title: 'Start a Python debug session',
    description:
      'Prepares a Python script (project-relative `entry`) for debugging with debugpy. Nothing runs until ' +
      'python_run_to_breakpoint. Fails at once if the interpreter or debugpy is missing, naming the install command.',
    input,
    output,
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    run: (args, call) => service.start(call.client.owner, args, clientKey(call.client)),
  };
}
