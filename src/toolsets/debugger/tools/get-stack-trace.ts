import { z } from 'zod';
import type { MiTuple } from '../../../core/mi/parser.js';
import { withText } from '../../../mcp/tools.js';
import { toFrame } from '../stop.js';
import { str } from '../../../core/mi/parser.js';
import { findSession, sessionId, type DebuggerTool, defineTool } from './common.js';

export const stackTraceTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_get_stack_trace',
    contractName: 'debugger/get_stack_trace',
    title: 'Get the stack trace',
    description: 'The call stack of the stopped thread, innermost first.',
    input: { max_frames: z.number().int().min(1).max(1000).default(20), session_id: sessionId },
    output: {
      frames: z.array(z.object({ level: z.number(), function: z.string(), file: z.string().optional(), line: z.number().optional(), addr: z.string().optional() })),
      truncated: z.string().optional(),
    },
    annotations: { readOnlyHint: true },
    async run({ max_frames, session_id }, call) {
      const session = findSession(ctx, call, session_id, true);
      return session.engine.serial(async () => {
        const depth = Number(str((await session.engine.mi_(`-stack-info-depth ${max_frames + 1}`)).depth) ?? 0);
        const r = await session.engine.mi_(`-stack-list-frames 0 ${max_frames - 1}`);
        const frames = (Array.isArray(r.stack) ? r.stack : []).map((f, level) => ({ level, ...toFrame(f as MiTuple) }));
        const out: { frames: typeof frames; truncated?: string } = { frames };
        if (depth > max_frames) out.truncated = `more frames exist: call again with a larger max_frames`;
        const text = frames.map((f) => `#${f.level} ${f.function}${f.file ? ` at ${f.file}:${f.line}` : ` (${f.addr ?? '?'})`}`).join('\n');
        return withText(out, out.truncated ? `${text}\n[${out.truncated}]` : text);
      });
    },
  });
