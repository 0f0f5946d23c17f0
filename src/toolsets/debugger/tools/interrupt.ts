import { findSession, finishStop, renderStopValue, sessionId, stopShape, type DebuggerTool, defineTool } from './common.js';

export const interruptTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_interrupt',
    title: 'Interrupt a running target',
    description: 'Stop a target that a continue or step left running.',
    input: { session_id: sessionId },
    output: stopShape,
    render: renderStopValue,
    async run({ session_id }, call) {
      const session = findSession(ctx, call, session_id, true);
      if (!session.engine.running) return finishStop(ctx, session, session.engine.latestStop, '', 'it was not running');
      await session.engine.interrupt(5000);
      return session.engine.serial(() => finishStop(ctx, session, session.engine.latestStop, session.engine.takeOutput()));
    },
  });
