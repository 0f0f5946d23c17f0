import { z } from 'zod';
import { historyUnavailable, stopTool } from './common.js';

export const continueTool = stopTool(
  'debugger_continue',
  'debugger/continue',
  'Continue',
  'Run until a breakpoint, a signal or the end (reverse: true runs backwards to the previous breakpoint).',
  {
    reverse: z.boolean().default(false).describe('run backwards (recorded or checkpointed sessions)'),
  },
  (args, session) => {
    if (args.reverse && session.mode !== 'record') throw historyUnavailable(session, 'reverse continue needs a recorded session');
    return { commands: [args.reverse ? '-exec-continue --reverse' : '-exec-continue'] };
  },
);
