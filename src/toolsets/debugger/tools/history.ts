import { readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { z } from 'zod';
import { withText } from '../../../mcp/tools.js';
import { DebuggerRpcError } from '../errors.js';
import type { Position } from '../session.js';
import { clip, str } from '../stop.js';
import { BLOB, execToStop, findSession, sessionId, stopShape, waitSeconds, type DebuggerTool, defineTool } from './common.js';
import { CALL, historyUnavailable } from './execution.js';

/** C expressions an agent watches: names, members, indexing, pointers; no quotes, no commands. */
const EXPRESSION = /^[A-Za-z_][A-Za-z0-9_.[\]>*&() +-]{0,200}$/;
const MAX_BLOB = 32 * 1024 * 1024;

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

export const bookmarkTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_bookmark',
    title: 'Name the current position',
    description: 'Give the current position a name usable wherever a position id is (step_backward to, export_trace).',
    input: { name: z.string().regex(/^[A-Za-z][A-Za-z0-9_-]{0,40}$/), session_id: sessionId },
    output: { name: z.string(), position: z.string() },
    async run({ name, session_id }, call) {
      const session = findSession(ctx, call, session_id, true);
      const current = session.current;
      if (!current) throw new DebuggerRpcError('HISTORY_UNAVAILABLE', 'no position yet', { session_id });
      for (const p of session.positions) if (p.bookmark === name) delete p.bookmark;
      current.bookmark = name;
      return withText({ name, position: current.id }, `Bookmark ${name} = ${current.id}`);
    },
  });

export const exportTraceTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_export_trace',
    contractName: 'debugger/export_trace',
    title: 'Export the execution trace',
    description:
      'The positions of this session: json (time, pc, function, file:line, changed values), text, or binary (GDB record save file, loadable with "record restore"; for unrecorded sessions a gzip of the JSON after the line DKTRACE1).',
    input: {
      format: z.enum(['json', 'binary', 'text']).default('json'),
      start_snapshot: z.string().max(64).optional().describe('first position id or bookmark'),
      end_snapshot: z.string().max(64).optional().describe('last position id or bookmark'),
      session_id: sessionId,
    },
    output: {
      format: z.string(),
      count: z.number(),
      positions: z.array(z.record(z.string(), z.unknown())).optional(),
      bytes: z.number().optional(),
      binary_format: z.string().optional(),
      note: z.string().optional(),
    },
    async run({ format, start_snapshot, end_snapshot, session_id }, call) {
      const session = findSession(ctx, call, session_id, true);
      const all = session.positions;
      if (all.length === 0) throw new DebuggerRpcError('HISTORY_UNAVAILABLE', 'no positions yet', { session_id });
      const from = start_snapshot ? all.indexOf(session.position(start_snapshot)) : 0;
      const to = end_snapshot ? all.indexOf(session.position(end_snapshot)) : all.length - 1;
      if (from > to) throw new DebuggerRpcError('HISTORY_UNAVAILABLE', `start_snapshot ${start_snapshot} comes after end_snapshot ${end_snapshot}`, { session_id });
      const range = all.slice(from, to + 1).map(plain);
      if (format === 'json') return withText({ format, count: range.length, positions: range }, JSON.stringify({ positions: range }));
      if (format === 'text') {
        const text = range
          .map(
            (p) =>
              `${p.id}${p.bookmark ? ` [${p.bookmark}]` : ''} ${p.time} ${p.function ?? '?'} ${p.file ?? ''}:${p.line ?? ''}${
                Object.keys(p.changed).length
                  ? `  ${Object.entries(p.changed)
                      .map(([k, v]) => `${k}=${v}`)
                      .join(', ')}`
                  : ''
              }`,
          )
          .join('\n');
        return withText({ format, count: range.length }, text);
      }
      if (session.mode === 'record') {
        const file = path.join(session.tempDirPath, `trace-${Date.now()}.gdbrec`);
        await session.engine.serial(() => session.engine.cli(`record save ${file}`));
        try {
          const size = statSync(file).size;
          if (size > MAX_BLOB)
            throw new DebuggerRpcError('HISTORY_UNAVAILABLE', `the recording is ${size} bytes, over the ${MAX_BLOB}-byte limit of one answer: export json or text instead`, { bytes: size });
          const data = readFileSync(file);
          const value = {
            format,
            count: range.length,
            bytes: data.length,
            binary_format: 'gdb-record-full',
            note: 'GDB record save file of the whole recording (positions select nothing here): gdb PROGRAM -ex "target core FILE" -ex "record restore FILE"',
          };
          return withText(Object.assign(value, { [BLOB]: { data, uri: `debugkit://debugger/${session_id}/trace.gdbrec` } }), `binary trace: ${data.length} bytes (GDB record save file)`);
        } finally {
          rmSync(file, { force: true });
        }
      }
      const data = Buffer.concat([Buffer.from('DKTRACE1\n'), gzipSync(JSON.stringify({ positions: range }))]);
      const value = { format, count: range.length, bytes: data.length, binary_format: 'debugkit-trace-v1', note: 'the line "DKTRACE1" then gzip of the JSON export' };
      return withText(Object.assign(value, { [BLOB]: { data, uri: `debugkit://debugger/${session_id}/trace.dktrace` } }), `binary trace: ${data.length} bytes (DKTRACE1 + gzip JSON)`);
    },
  });

function plain(p: Position) {
  const { checkpoint: _c, ...rest } = p;
  return rest;
}
