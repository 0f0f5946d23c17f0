import { z } from 'zod';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { GdbContext } from './index.js';
import { callOutput, sessionId, waitMs, waitSeconds } from './schemas.js';

const input = {
  id: sessionId,
  command: z
    .string()
    .describe('One GDB command: CLI ("break main", "run", "bt", "print x", "info locals") or MI ("-break-insert main", "-stack-list-frames")'),
  wait: waitSeconds,
};

export function callTool(ctx: GdbContext): ToolSpec<typeof input, typeof callOutput> {
  return {
    name: 'call',
    title: 'Send a command to GDB',
    description:
      'Runs one GDB command in a session. Returns `result` (the parsed MI result record) and `output` (console text). ' +
      'Commands that resume the program (run, continue, next, step, finish, -exec-*) return when it stops, with `stopped` ' +
      '(reason, frame), or after `wait` seconds with state "running": then call "-exec-interrupt" or gdb_wait. ' +
      "The program's own stdout/stderr come back separately in `program_output`.",
    input,
    output: callOutput,
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    // What the command reaches (a shell, files outside the root, another process) is read by the
    // session's policy, the same classifier that applies the operator's flags when it runs.
    scopes: {
      of: (args, call) => ctx.registry.find(call.client.owner, args.id)?.capabilityScopes(args.command) ?? [],
    },
    run: (args, call) =>
      ctx.registry.use(call.client.owner, args.id, (session) =>
        session.call(args.command, { waitMs: waitMs(args.wait), signal: call.signal }),
      ),
  };
}
