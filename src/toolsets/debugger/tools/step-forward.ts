import { z } from 'zod';
import { stopTool } from './common.js';

export const stepForwardTool = stopTool(
  'debugger_step_forward',
  'debugger/step_forward',
  'Step forward',
  'Execute the next source line(s), stepping over calls (into: true steps into them).',
  {
    count: z.number().int().min(1).max(1000).default(1),
    into: z.boolean().default(false).describe('step into called functions'),
  },
  (args) => ({ commands: new Array<string>(args.count as number).fill(args.into ? '-exec-step' : '-exec-next') }),
);
