import { z } from 'zod';
import { DebuggerRpcError } from '../errors.js';
import { drive, findSession, finishStop, historyUnavailable, renderStopValue, sessionId, stopShape, waitSeconds, type DebuggerTool, defineTool } from './common.js';

export const stepBackwardTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_step_backward',
    contractName: 'debugger/step_backward',
    title: 'Step backward',
    description: 'Really execute backwards: after it, memory and registers are those of that earlier moment. count source lines back, or to: a position id / bookmark.',
    input: {
      count: z.number().int().min(1).max(1000).default(1),
      to: z.string().max(64).optional().describe('a position id (p3) or bookmark name to go back (or forward) to'),
      into: z.boolean().default(false).describe('step back into called functions'),
      session_id: sessionId,
      wait: waitSeconds,
    },
    output: stopShape,
    render: renderStopValue,
    async run({ count, to, into, session_id, wait }, call) {
      const session = findSession(ctx, call, session_id, true);
      if (session.mode === 'none') throw historyUnavailable(session, 'no history to step back through');
      if (to !== undefined || session.mode === 'checkpoint') {
        return session.engine.serial(async () => {
          if (session.engine.running) throw new DebuggerRpcError('HISTORY_UNAVAILABLE', 'the target is running: call debugger_interrupt first', { session_id });
          let target;
          if (to !== undefined) target = session.position(to);
          else {
            const index = session.positions.length - 1 - count;
            const reachable = session.positions.slice(0, Math.max(0, index + 1)).filter((p) => p.checkpoint !== undefined);
            target = reachable.at(-1);
            if (!target) throw historyUnavailable(session, `no checkpoint ${count} stop(s) back`);
          }
          const stopped = await session.travelTo(target);
          return finishStop(ctx, session, stopped, session.engine.takeOutput(), `back at ${target.id}`);
        });
      }
      const cmd = into ? '-exec-step --reverse' : '-exec-next --reverse';
      return drive(ctx, session, new Array<string>(count).fill(cmd), wait, call);
    },
  });
