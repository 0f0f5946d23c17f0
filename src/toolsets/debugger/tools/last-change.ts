import { z } from 'zod';
import { withText } from '../../../mcp/tools.js';
import { DebuggerRpcError } from '../errors.js';
import { clip, str } from '../stop.js';
import { CALL, execToStop, findSession, historyUnavailable, sessionId, stopShape, waitSeconds, type DebuggerTool, defineTool } from './common.js';

/** C expressions an agent watches: names, members, indexing, pointers; no quotes, no commands. */
const EXPRESSION = /^[A-Za-z_][A-Za-z0-9_.[\]>*&() +-]{0,200}$/;

export const lastChangeTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_last_change',
    title: 'Find the last write to an expression',
    description: 'Run backwards to the last write of an expression (e.g. "s.b", "buf[3]", "*p"): answers where it happened and the value before and after. Recorded sessions (debugger_launch) only.',
    input: { expression: z.string().min(1).max(200), session_id: sessionId, wait: waitSeconds.default(30) },
    output: { expression: z.string(), found: z.boolean(), old_value: z.string().optional(), new_value: z.string(), stop: z.object(stopShape) },
    async run({ expression, session_id, wait }, call) {
      const session = findSession(ctx, call, session_id, true);
      if (!EXPRESSION.test(expression) || CALL.test(expression))
        throw new DebuggerRpcError('HISTORY_UNAVAILABLE', `"${expression}" is not a watchable expression: use names, members, [index], * and & (no function calls)`, { expression });
      if (session.mode !== 'record') throw historyUnavailable(session, 'finding the last write needs a recorded session');
      return session.engine.serial(async () => {
        const engine = session.engine;
        const now = str((await engine.mi_(`-data-evaluate-expression ${expression}`)).value) ?? '';
        const wpt = await engine.mi_(`-break-watch ${expression}`);
        const number = str((wpt.wpt as Record<string, string> | undefined)?.number);
        let stop;
        try {
          stop = await execToStop(ctx, session, '-exec-continue --reverse', wait, call);
        } finally {
          if (number) await engine.mi_(`-break-delete ${number}`).catch(() => undefined);
        }
        const found = stop.state === 'stopped' && stop.reason === 'watchpoint-trigger';
        // Going backwards, gdb's "old" is the later value and its "new" the earlier one.
        const reported = engine.latestStop?.value as { old?: string; new?: string } | undefined;
        const before = found ? (reported?.new ?? str((await engine.mi_(`-data-evaluate-expression ${expression}`).catch(() => ({ value: '' }))).value)) : undefined;
        const out: { expression: string; found: boolean; old_value?: string; new_value: string; stop: typeof stop } = { expression, found, new_value: clip(now, 400), stop };
        if (before !== undefined) out.old_value = clip(before, 400);
        const where = stop.frames?.find((f) => f.file && !f.file.startsWith('../')) ?? stop;
        const text = found
          ? `${expression} was last written at ${stop.position} in ${where.function ?? stop.function} ${where.file ?? ''}:${where.line ?? ''}: ${out.old_value} -> ${out.new_value}`
          : `no write to ${expression} in the recorded history (it is ${out.new_value} since recording began)`;
        return withText(out, `${text}\n${stop.source?.join('\n') ?? ''}`.trim());
      });
    },
  });
