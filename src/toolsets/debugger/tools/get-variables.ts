import { z } from 'zod';
import type { MiTuple } from '../../../core/mi/parser.js';
import { isInside } from '../../../core/paths.js';
import { withText } from '../../../mcp/tools.js';
import { clip } from '../stop.js';
import { str } from '../../../core/mi/parser.js';
import { findSession, frameNumber, frameOptions, sessionId, type DebuggerTool, defineTool } from './common.js';

const MAX_VARIABLES = 100;

export const variablesTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_get_variables',
    contractName: 'debugger/get_variables',
    title: 'Get variables',
    description: "Variables of a frame (local: locals and arguments), the program's globals (global), or both; filter keeps names containing it.",
    input: {
      scope: z.enum(['local', 'global', 'all']).default('local'),
      filter: z.string().max(100).optional().describe('keep names containing this text'),
      frame: frameNumber,
      session_id: sessionId,
    },
    output: {
      variables: z.array(z.object({ name: z.string(), scope: z.enum(['local', 'global']), type: z.string().optional(), value: z.string() })),
      truncated: z.string().optional(),
    },
    annotations: { readOnlyHint: true },
    async run({ scope, filter, frame, session_id }, call) {
      const session = findSession(ctx, call, session_id, true);
      return session.engine.serial(async () => {
        const vars: Array<{ name: string; scope: 'local' | 'global'; type?: string; value: string }> = [];
        if (scope !== 'global') {
          const r = await session.engine.mi_(`-stack-list-variables ${await frameOptions(session, frame)} --all-values`);
          for (const v of Array.isArray(r.variables) ? (r.variables as MiTuple[]) : []) {
            vars.push({ name: str(v.name) ?? '?', scope: 'local', value: clip(str(v.value) ?? '', 400) });
          }
        }
        if (scope !== 'local') {
          const names = globalNames(await session.engine.mi_('-symbol-info-variables'), ctx.config.root);
          for (const name of names.slice(0, MAX_VARIABLES)) {
            if (filter && !name.includes(filter)) continue;
            const r = await session.engine.mi_(`-data-evaluate-expression ${name}`).catch(() => undefined);
            if (r) vars.push({ name, scope: 'global', value: clip(str(r.value) ?? '', 400) });
          }
        }
        const kept = vars.filter((v) => !filter || v.name.includes(filter));
        const out: { variables: typeof kept; truncated?: string } = { variables: kept.slice(0, MAX_VARIABLES) };
        if (kept.length > MAX_VARIABLES) out.truncated = `${kept.length - MAX_VARIABLES} more: narrow with filter`;
        const text = out.variables.map((v) => `${v.scope === 'global' ? '::' : ''}${v.name} = ${v.value}`).join('\n') || 'no variables';
        return withText(out, out.truncated ? `${text}\n[${out.truncated}]` : text);
      });
    },
  });

/** Globals defined in the program's own sources (files under the workspace root). */
function globalNames(info: MiTuple, root: string): string[] {
  const names: string[] = [];
  const debug = (info.symbols as MiTuple | undefined)?.debug;
  for (const file of Array.isArray(debug) ? (debug as MiTuple[]) : []) {
    const fullname = str(file.fullname) ?? '';
    if (!isInside(root, fullname)) continue;
    for (const sym of Array.isArray(file.symbols) ? (file.symbols as MiTuple[]) : []) {
      const name = str(sym.name);
      if (name) names.push(name);
    }
  }
  return names;
}
