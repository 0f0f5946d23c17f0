import { z } from 'zod';
import { DebugkitError } from '../../../core/errors.js';
import { quoteMiString } from '../../../core/mi/connection.js';
import { withText } from '../../../mcp/tools.js';
import { clip, str } from '../stop.js';
import { CALL, findSession, frameNumber, frameOptions, sessionId, type DebuggerTool, defineTool } from './common.js';

/** A register as gdb names it (`$pc`, `$rsp`, `$eflags`); `$_...` convenience functions and `$1` history are not. */
const REGISTER = /\$[a-z][a-z0-9]{0,15}\b/g;
/** Everything else an expression may hold: names, digits, C operators, spaces. */
const ALLOWED = /^[A-Za-z0-9_.[\]()*&+\-/%<>=!~^|?:, ]*$/;

/** Why gdb must not evaluate `expression`, or undefined: it only reads (no calls, assignments, side effects or text outside C operators). */
export function expressionRefusal(expression: string): string | undefined {
  if (/["'`\\;\n\r]/.test(expression)) return 'quotes, backslashes, ";" and newlines are refused';
  if (CALL.test(expression)) return 'function calls are refused (gdb would run them inside the program; sizeof(x) and casts before "(" count too)';
  if (/\+\+|--|(<<|>>|[-+*/%&|^])=/.test(expression) || /=/.test(expression.replace(/==|!=|<=|>=/g, ''))) {
    return 'assignments and side effects (=, +=, ++, --) are refused: evaluating only reads';
  }
  const rest = expression.replace(REGISTER, '');
  if (rest.includes('$')) return '"$" is taken only as a register name ($pc, $rsp): no convenience variables or functions';
  if (!ALLOWED.test(rest)) return 'only names, numbers, spaces and the C operators . -> [ ] ( ) * & + - / % < > = ! ~ ^ | ? : , are taken';
  return undefined;
}

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
