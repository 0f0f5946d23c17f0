import { z } from 'zod';
import { DebugkitError } from '../../../core/errors.js';
import type { ToolSpec } from '../../../mcp/tools.js';
import { renderCall } from '../answer.js';
import type { CallOutcome } from '../session.js';
import type { GdbContext } from './index.js';
import { callOutput, sessionId, waitMs, waitSeconds } from './schemas.js';

/** Most commands one call may carry. */
export const MAX_COMMANDS = 32;
/**
 * Longest command (characters). Bounded so that a call's every command fits the audit's record
 * budget whole: MAX_COMMANDS of them and the longest session id kept (control/audit.ts MAX_STRING)
 * stay under MAX_TEXT, so no padding command can push the one that ran out of the entry.
 */
export const MAX_COMMAND_CHARS = 4 * 1024;

const command = z.string().max(MAX_COMMAND_CHARS, `a GDB command is at most ${MAX_COMMAND_CHARS} characters; send a longer job as several commands (or a script file gdb sources)`);

const input = {
  id: sessionId,
  command: command.optional().describe('A GDB command: CLI ("break main", "run", "bt", "print x") or MI ("-stack-list-frames")'),
  commands: z.array(command).min(1).max(MAX_COMMANDS).optional().describe('Several commands, one answer; stops at an error or a running program'),
  wait: waitSeconds,
  raw: z.boolean().optional().describe('`stopped` as MI sent it'),
};

/** The scopes each call's key was checked for, by its arguments: the commands must not need more when they are sent. */
const checkedScopes = new WeakMap<object, string[]>();

/** The call's commands: `command` or `commands`, exactly one of them. */
function commandsOf(args: { command?: string | undefined; commands?: string[] | undefined }): string[] {
  if ((args.command === undefined) === (args.commands === undefined)) {
    throw new DebugkitError('INVALID_ARGUMENT', 'give `command` (one GDB command) or `commands` (a list of them), not both and not neither');
  }
  return args.commands ?? [args.command!];
}

export function callTool(ctx: GdbContext): ToolSpec<typeof input, typeof callOutput> {
  return {
    name: 'call',
    title: 'Send a command to GDB',
    description:
      'Runs GDB commands (CLI or MI) in a session; answers the console output and where the program stopped. ' +
      'A command that resumes the program returns at the next stop, or after `wait` seconds as "running" (then gdb_wait or "-exec-interrupt").',
    input,
    output: callOutput,
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    // What the commands reach (a shell, files outside the root, another process) is read by the
    // session's policy, the same classifier that applies the operator's flags when it runs.
    // A file swapped between this check and the command's sending could make it reach further: the
    // session refuses a command that needs more scopes then than were checked here (issue 18).
    scopes: {
      of: (args, call) => {
        const session = ctx.registry.find(call.client.owner, args.id);
        const commands = args.commands ?? (args.command === undefined ? [] : [args.command]);
        const scopes = [...new Set(commands.flatMap((c) => session?.capabilityScopes(c) ?? []))];
        checkedScopes.set(args, scopes);
        return scopes;
      },
    },
    render: (v) => renderCall(v as CallOutcome),
    run: (args, call) => {
      const commands = commandsOf(args);
      const options = { waitMs: waitMs(args.wait), signal: call.signal, checkedScopes: checkedScopes.get(args), raw: args.raw === true };
      return ctx.registry.use(call.client.owner, args.id, (session) => (args.commands ? session.callAll(commands, options) : session.call(commands[0]!, options)));
    },
  };
}
