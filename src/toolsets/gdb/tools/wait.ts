import type { ToolSpec } from '../../../mcp/tools.js';
import { renderCall } from '../answer.js';
import type { CallOutcome } from '../session.js';
import type { GdbContext } from './index.js';
import { callOutput, sessionId, waitMs, waitSeconds } from './schemas.js';

const input = { id: sessionId, timeout: waitSeconds };

export function waitTool(ctx: GdbContext): ToolSpec<typeof input, typeof callOutput> {
  return {
    name: 'gdb_wait',
    title: 'Wait for the program to stop',
    description:
      'Waits up to `timeout` seconds (default 10) for a running program to stop (breakpoint, signal, exit) and returns ' +
      'what happened since the last call, in the same shape as "call". Returns at once if the program is not running.',
    input,
    output: callOutput,
    annotations: { readOnlyHint: true, openWorldHint: false },
    render: (v) => renderCall(v as CallOutcome),
    run: (args, call) => ctx.registry.use(call.client.owner, args.id, (session) => session.wait({ waitMs: waitMs(args.timeout), signal: call.signal })),
  };
}
