import { z } from 'zod';
import { withText } from '../../../mcp/tools.js';
import { DebugkitError } from '../../../core/errors.js';
import { quoteMiString } from '../../../core/mi/connection.js';
import { clip } from '../stop.js';
import { str } from '../../../core/mi/parser.js';
import { execToStop, expressionRefusal, findSession, historyUnavailable, sessionId, stopShape, waitSeconds, type DebuggerTool, defineTool } from './common.js';

export const lastChangeTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_last_change',
    title: 'Find the last write to an expression',
    description: 'Run backwards to the last write of an expression (e.g. "s.b", "buf[3]", "*p"): answers where, and the values before and after. Recorded sessions (debugger_launch) only.',
    input: { expression: z.string().min(1).max(200), session_id: sessionId, wait: waitSeconds.default(30) },
    output: {
      expression: z.string(),
      address: z.string().optional().describe('The location watched (the address the expression has at the call): `*(TYPE *)ADDRESS` names it from any frame'),
      found: z.boolean(),
      old_value: z.string().optional(),
      new_value: z.string(),
      stop: z.object(stopShape),
    },
    async run({ expression, session_id, wait }, call) {
      const session = findSession(ctx, call, session_id, true);
      const refused = expressionRefusal(expression);
      if (refused) throw new DebugkitError('INVALID_ARGUMENT', `"${expression}" is not a watchable expression: ${refused}; use names, members, [index], *, &, casts and addresses`);
      if (session.mode !== 'record') throw historyUnavailable(session, 'finding the last write needs a recorded session');
      return session.engine.serial(async () => {
        const engine = session.engine;
        const now = str((await engine.mi_(`-data-evaluate-expression ${quoteMiString(expression)}`)).value) ?? '';
        const address = /0x[0-9a-f]+/.exec(str((await engine.mi_(`-data-evaluate-expression ${quoteMiString(`(void *)&(${expression})`)}`).catch(() => ({ value: '' }))).value) ?? '')?.[0];
        // The location the expression names now, as `watch -location` does: through a local pointer
        // (`j->payload[8]`) a plain watch also watched `j`, and answered the prologue that stored it.
        const set = await engine.cli(`watch -location ${expression}`);
        const number = /atchpoint (\d+): -location/.exec(set)?.[1];
        if (!number) throw new DebugkitError('INVALID_ARGUMENT', `gdb cannot watch ${expression}: ${set.trim() || 'no watchpoint was set'}`);
        let stop;
        try {
          stop = await execToStop(ctx, session, '-exec-continue --reverse', wait, call);
        } finally {
          if (number) await engine.mi_(`-break-delete ${number}`).catch(() => undefined);
        }
        const found = stop.state === 'stopped' && stop.reason === 'watchpoint-trigger';
        // Going backwards, gdb's "old" is the later value and its "new" the earlier one.
        const reported = engine.latestStop?.value as { old?: string; new?: string } | undefined;
        const before = found ? (reported?.new ?? str((await engine.mi_(`-data-evaluate-expression ${quoteMiString(expression)}`).catch(() => ({ value: '' }))).value)) : undefined;
        const out: { expression: string; address?: string; found: boolean; old_value?: string; new_value: string; stop: typeof stop } = {
          expression,
          ...(address ? { address } : {}),
          found,
          new_value: clip(now, 400),
          stop,
        };
        if (before !== undefined) out.old_value = clip(before, 400);
        const where = stop.frames?.find((f) => f.file && !f.file.startsWith('../')) ?? stop;
        const at = address ? ` (at ${address})` : '';
        const text = found
          ? `${expression}${at} was last written at ${stop.position} in ${where.function ?? stop.function} ${where.file ?? ''}:${where.line ?? ''}: ${out.old_value} -> ${out.new_value}`
          : `no write to ${expression}${at} in the recorded history (it is ${out.new_value} since recording began)`;
        return withText(out, `${text}\n${stop.source?.join('\n') ?? ''}`.trim());
      });
    },
  });
