import { z } from 'zod';
import { DebugkitError } from '../../../core/errors.js';
import { quoteMiString } from '../../../core/mi/connection.js';
import { withText } from '../../../mcp/tools.js';
import { clip } from '../stop.js';
import { str } from '../../../core/mi/parser.js';
import { expressionRefusal, findSession, frameNumber, frameOptions, sessionId, type DebuggerTool, defineTool } from './common.js';

export const evaluateTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_evaluate',
    title: 'Evaluate',
    description: 'The value of a C expression in a frame ("p->len * 2", "$pc"); read-only: no calls, assignments, ++ or --.',
    input: { expression: z.string().min(1).max(400), frame: frameNumber, session_id: sessionId },
    output: { expression: z.string(), value: z.string(), type: z.string().optional() },
    annotations: { readOnlyHint: true },
    async run({ expression, frame, session_id }, call) {
      const session = findSession(ctx, call, session_id, true);
      const why = expressionRefusal(expression);
      if (why) throw new DebugkitError('INVALID_ARGUMENT', `"${clip(expression, 80)}" is not evaluated: ${why}`);
      return session.engine.serial(async () => {
        const engine = session.engine;
        const at = await frameOptions(session, frame);
        let value: string;
        try {
          value = str((await engine.mi_(`-data-evaluate-expression ${at} ${quoteMiString(expression)}`)).value) ?? '';
        } catch (err) {
          throw new DebugkitError('INVALID_ARGUMENT', `gdb cannot evaluate ${expression} in frame ${frame}: ${(err as Error).message}`);
        }
        // The type, from a variable object made and dropped at once.
        const made = await engine.mi_(`-var-create ${at} - * ${quoteMiString(expression)}`).catch(() => undefined);
        const type = str(made?.type);
        if (made?.name) await engine.mi_(`-var-delete ${str(made.name)}`).catch(() => undefined);
        const out: { expression: string; value: string; type?: string } = { expression, value: clip(value, 400) };
        if (type) out.type = type;
        return withText(out, `${expression} = ${out.value}${type ? ` (${type})` : ''}${frame > 0 ? ` [frame ${frame}]` : ''}`);
      });
    },
  });
