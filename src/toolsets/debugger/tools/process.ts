import { statSync } from 'node:fs';
import { z } from 'zod';
import { CheckedProgram } from '../../../core/paths.js';
import { withText } from '../../../mcp/tools.js';
import { DebuggerRpcError } from '../errors.js';
import { clientKey } from '../../../core/sessions.js';
import { DEFAULT_IDLE_SECONDS, findSession, finishStop, newSessionId, sessionId, stopShape, waitSeconds, type DebuggerTool, defineTool } from './common.js';

const REPLY_TIMEOUT_MS = 30_000;

/** The debugger engine (GDB/MI session, record full, checkpoints) loads on the first attach or launch, not at start. */
const loadEngine = () => import('../session.js');

const idleTimeout = z
  .number()
  .int()
  .min(1)
  .max(86_400)
  .default(DEFAULT_IDLE_SECONDS)
  .describe(`seconds without calls before the session ends (a launched program is killed, an attached one detached); default ${DEFAULT_IDLE_SECONDS}`);

/** May this server attach to `pid`? -32004 when it does not exist, -32003 when not allowed. */
export function checkAttachable(pid: number, rule: 'same-user' | 'any' | 'none'): void {
  let uid: number;
  try {
    uid = statSync(`/proc/${pid}`).uid;
  } catch {
    throw new DebuggerRpcError('PROCESS_NOT_FOUND', `no process with pid ${pid} exists`, { pid });
  }
  if (pid === process.pid) throw new DebuggerRpcError('PERMISSION_DENIED', `pid ${pid} is debugkit itself`, { pid });
  if (rule === 'none')
    throw new DebuggerRpcError('PERMISSION_DENIED', `attaching is disabled on this server (the operator did not give --allow-attach); launch the program with debugger_launch instead`, { pid });
  const me = process.getuid?.() ?? -1;
  if (rule === 'same-user' && uid !== me) {
    throw new DebuggerRpcError('PERMISSION_DENIED', `process ${pid} belongs to uid ${uid}, not to debugkit's user (uid ${me}); only processes of debugkit's own user can be attached`, { pid });
  }
}

export const attachTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_attach',
    contractName: 'debugger/attach',
    title: 'Attach to a running process',
    description: 'Attach to a running process by pid (it stops; debugger_detach lets it run on). History comes from fork checkpoints taken at each stop.',
    input: { pid: z.number().int().positive().describe('Process ID to attach to'), session_id: newSessionId, timeout: idleTimeout },
    output: { pid: z.number(), session_id: z.string(), history: z.string(), program: z.string(), stop: z.object(stopShape) },
    scopes: { always: ['debugger:attach'] },
    async run({ pid, session_id, timeout }, call) {
      checkAttachable(pid, ctx.config.debugger.allowAttach);
      // The registry reserves session_id before gdb starts: a concurrent attach or launch of it is refused.
      await ctx.sessions.create(
        call.client.owner,
        timeout * 1000,
        async () => {
          try {
            const { DebugSession } = await loadEngine();
            return await DebugSession.attach(session_id, pid, { gdbPath: ctx.config.gdb.path, root: ctx.config.root, replyTimeoutMs: REPLY_TIMEOUT_MS, key: clientKey(call.client) });
          } catch (err) {
            const msg = (err as Error).message;
            if (/No such process/i.test(msg)) throw new DebuggerRpcError('PROCESS_NOT_FOUND', `process ${pid} ended before it could be attached`, { pid });
            if (/not permitted|ptrace/i.test(msg)) throw new DebuggerRpcError('PERMISSION_DENIED', `the system refused to let gdb trace ${pid}: ${msg}`, { pid });
            throw err;
          }
        },
        { id: session_id, key: clientKey(call.client) },
      );
      return ctx.sessions.use(call.client.owner, session_id, async (session) => {
        const stop = await finishStop(ctx, session, session.engine.latestStop, '');
        return withText({ pid, session_id, history: session.mode, program: session.program, stop }, `Successfully attached to process ${pid}\n${session.modeNote}`);
      });
    },
  });

export const launchTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_launch',
    title: 'Launch a program under the debugger, recorded',
    description: 'Start a program (a path under the workspace root) with arguments; it stops at main with GDB record full on, so debugger_step_backward really executes backwards.',
    input: {
      program: z.string().min(1).describe('executable, relative to the workspace root'),
      args: z.array(z.string().max(4096)).max(256).default([]).describe('its arguments (never seen by a shell)'),
      session_id: newSessionId,
      wait: waitSeconds,
      timeout: idleTimeout,
    },
    output: { pid: z.number(), session_id: z.string(), history: z.string(), program: z.string(), stop: z.object(stopShape) },
    async run({ program, args, session_id, wait, timeout }, call) {
      // Checked and opened here; gdb gets the file, or a private copy of it where others could swap its name (CheckedProgram), removed when gdb exits.
      const checked = await CheckedProgram.open(ctx.config.root, program);
      const file = checked.real;
      // The registry reserves session_id before gdb starts: a concurrent launch or attach of it is refused.
      try {
        await ctx.sessions.create(
          call.client.owner,
          timeout * 1000,
          async () =>
            (await loadEngine()).DebugSession.launch(
              session_id,
              checked,
              args,
              { gdbPath: ctx.config.gdb.path, root: ctx.config.root, replyTimeoutMs: REPLY_TIMEOUT_MS, key: clientKey(call.client) },
              wait * 1000,
            ),
          { id: session_id, key: clientKey(call.client) },
        );
      } catch (err) {
        checked.close();
        throw err;
      }
      return ctx.sessions.use(call.client.owner, session_id, async (session) => {
        const stop = await finishStop(ctx, session, session.engine.latestStop, '');
        return withText({ pid: session.pid, session_id, history: session.mode, program: file, stop }, `Launched ${file} as process ${session.pid}, stopped at main; history: ${session.modeNote}`);
      });
    },
  });

export const detachTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_detach',
    title: 'Detach (attached) or end (launched)',
    description: 'End a session: an attached process is detached and runs on; a launched one is killed.',
    input: { session_id: sessionId },
    output: { session_id: z.string(), pid: z.number(), action: z.enum(['detached', 'killed']) },
    async run({ session_id }, call) {
      const session = findSession(ctx, call, session_id, true);
      await ctx.sessions.close(call.client.owner, session_id, 'detached by the client');
      const action: 'detached' | 'killed' = session.kind === 'attached' ? 'detached' : 'killed';
      return withText({ session_id, pid: session.pid, action }, `${action === 'detached' ? 'Detached from' : 'Ended'} process ${session.pid}`);
    },
  });
