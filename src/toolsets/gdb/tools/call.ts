import { z } from 'zod';
import type { ToolSpec } from '../../../mcp/tools.js';
import type { GdbContext } from './index.js';
import { callOutput, sessionId, waitMs, waitSeconds } from './schemas.js';

const input = {
  id: sessionId,
  command: z.string().describe('One GDB command: CLI ("break main", "run", "bt", "print x", "info locals") or MI ("-break-insert main", "-stack-list-frames")'),
  wait: waitSeconds,
};

/** The scopes each call's key was checked for, by its arguments: the command must not need more when it is sent. */
const checkedScopes = new WeakMap<object, string[]>();

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
    // A file swapped between this check and the command's sending could make it reach further: the
    // session refuses a command that needs more scopes then than were checked here (issue 18).
    scopes: {
      of: (args, call) => {
        const scopes = ctx.registry.find(call.client.owner, args.id)?.capabilityScopes(args.command) ?? [];
        checkedScopes.set(args, scopes);
        return scopes;
      },
    },
    run: (args, call) =>
      ctx.registry.use(call.client.owner, args.id, (session) => session.call(args.command, { waitMs: waitMs(args.wait), signal: call.signal, checkedScopes: checkedScopes.get(args) })),
  };
}
