import { z } from 'zod';
import { withText } from '../../../mcp/tools.js';
import { DebuggerRpcError } from '../errors.js';
import { attachRefusal, type AttachRule } from '../../../core/attach.js';
import { clientKey } from '../../../core/sessions.js';
import { REPLY_TIMEOUT_MS, finishStop, idleTimeout, loadEngine, newSessionId, stopShape, type DebuggerTool, defineTool } from './common.js';

/** May this server attach to `pid`? -32004 when it does not exist, -32003 when not allowed (core/attach: the one rule). */
export function checkAttachable(pid: number, rule: AttachRule): void {
  const refused = attachRefusal(pid, rule, 'launch the program with debugger_launch instead');
  if (refused) throw new DebuggerRpcError(refused.reason === 'not-found' ? 'PROCESS_NOT_FOUND' : 'PERMISSION_DENIED', refused.message, { pid });
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
        { id: session_id, key: clientKey(call.client), signal: call.signal },
      );
      return ctx.sessions.use(call.client.owner, session_id, async (session) => {
        const stop = await finishStop(ctx, session, session.engine.latestStop, '');
        return withText({ pid, session_id, history: session.mode, program: session.program, stop }, `Successfully attached to process ${pid}\n${session.modeNote}`);
      });
    },
  });
