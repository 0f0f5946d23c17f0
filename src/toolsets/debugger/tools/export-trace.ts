import { readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { z } from 'zod';
import { CHARS_PER_TOKEN, DEFAULT_RESULT_MAX_TOKENS } from '../../../mcp/result-ceiling.js';
import { withText } from '../../../mcp/tools.js';
import { DebugkitError } from '../../../core/errors.js';
import { DebuggerRpcError } from '../errors.js';
import type { Position } from '../session.js';
import { BLOB, findSession, sessionId, type DebuggerTool, defineTool } from './common.js';

const MAX_BLOB = 32 * 1024 * 1024;
const gzipAsync = promisify(gzip);

export const exportTraceTool: DebuggerTool = (ctx) =>
  defineTool({
    name: 'debugger_export_trace',
    contractName: 'debugger/export_trace',
    title: 'Export the execution trace',
    description:
      'Positions: json (time, pc, function, file:line, changed values) or text, a page per call (next_snapshot: the next), or binary (GDB record save file for "record restore"; unrecorded: DKTRACE1 line + gzipped JSON).',
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
      total: z.number().optional(),
      next_snapshot: z.string().optional(),
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
      if (from > to) throw new DebugkitError('INVALID_ARGUMENT', `start_snapshot ${start_snapshot} comes after end_snapshot ${end_snapshot}: give them in the order they were reached`);
      if (format === 'json' || format === 'text') {
        // One page at a time, built only as far as an answer holds (the whole of 10,000 positions held the loop for
        // seconds before the answer ceiling cut it: attack u2-1); the next page starts where this one stops.
        const page: Array<ReturnType<typeof plain>> = [];
        const lines: string[] = [];
        let chars = 0;
        let next: string | undefined;
        for (let i = from; i <= to; i++) {
          const p = plain(all[i]!);
          const line = format === 'json' ? JSON.stringify(p) : textLine(p);
          if (page.length > 0 && chars + line.length + 1 > PAGE_CHARS) {
            next = p.id;
            break;
          }
          page.push(p);
          lines.push(line);
          chars += line.length + 1;
        }
        const total = to - from + 1;
        const more = next
          ? { next_snapshot: next, note: `${page.length} of ${total} positions (an answer holds about ${PAGE_CHARS} characters): export again with start_snapshot "${next}" for the rest` }
          : {};
        if (format === 'json') return withText({ format, count: page.length, total, positions: page, ...more }, `{"positions":[${lines.join(',')}]}${next ? `\n${more.note}` : ''}`);
        return withText({ format, count: page.length, total, ...more }, `${lines.join('\n')}${next ? `\n${more.note}` : ''}`);
      }
      if (session.mode === 'record') {
        // GDB writes the program's memory with the recording (as gcore does): a program that only
        // reserved 1 GiB made a 1.29 GB file, written to disk before its size was checked (attack
        // 18am x1-2). What it would write is estimated from the memory map first.
        const memory = dumpedMemory(session.pid);
        if (memory > MAX_BLOB) {
          throw new DebugkitError(
            'INVALID_ARGUMENT',
            `GDB writes the program's memory with a recording: this one would be over ${memory} bytes, over the ${MAX_BLOB}-byte limit of one answer: export json or text instead`,
          );
        }
        const file = path.join(session.tempDirPath, `trace-${Date.now()}.gdbrec`);
        await session.engine.serial(() => session.engine.cli(`record save ${file}`));
        try {
          const size = statSync(file).size;
          if (size > MAX_BLOB) throw new DebugkitError('INVALID_ARGUMENT', `the recording is ${size} bytes, over the ${MAX_BLOB}-byte limit of one answer: export json or text instead`);
          const data = readFileSync(file);
          const value = {
            format,
            count: to - from + 1,
            bytes: data.length,
            binary_format: 'gdb-record-full',
            note: 'GDB record save file of the whole recording (positions select nothing here): gdb PROGRAM -ex "target core FILE" -ex "record restore FILE"',
          };
          return withText(Object.assign(value, { [BLOB]: { data, uri: `debugkit://debugger/${session_id}/trace.gdbrec` } }), `binary trace: ${data.length} bytes (GDB record save file)`);
        } finally {
          rmSync(file, { force: true });
        }
      }
      const data = Buffer.concat([Buffer.from('DKTRACE1\n'), await gzipAsync(await positionsJson(all, from, to))]);
      const value = { format, count: to - from + 1, bytes: data.length, binary_format: 'debugkit-trace-v1', note: 'the line "DKTRACE1" then gzip of the JSON export' };
      return withText(Object.assign(value, { [BLOB]: { data, uri: `debugkit://debugger/${session_id}/trace.dktrace` } }), `binary trace: ${data.length} bytes (DKTRACE1 + gzip JSON)`);
    },
  });

/** The characters of one json or text page: its text and its structured copy each count against the answer ceiling. */
const PAGE_CHARS = Math.floor((DEFAULT_RESULT_MAX_TOKENS * CHARS_PER_TOKEN - 2000) / 2);
/** Positions written per turn of the loop in a binary export (about 1 ms each). */
const SLICE = 200;

/** One position as a line of the text export. */
function textLine(p: ReturnType<typeof plain>): string {
  const changed = Object.entries(p.changed);
  return `${p.id}${p.bookmark ? ` [${p.bookmark}]` : ''} ${p.time} ${p.function ?? '?'} ${p.file ?? ''}:${p.line ?? ''}${changed.length ? `  ${changed.map(([k, v]) => `${k}=${v}`).join(', ')}` : ''}`;
}

/** `{"positions":[...]}` of positions from..to, written a slice per turn of the loop (the binary export gzips it). */
async function positionsJson(all: readonly Position[], from: number, to: number): Promise<string> {
  const parts: string[] = [];
  for (let i = from; i <= to; i += SLICE) {
    if (i > from) await new Promise((resolve) => setImmediate(resolve));
    parts.push(
      all
        .slice(i, Math.min(to + 1, i + SLICE))
        .map((p) => JSON.stringify(plain(p)))
        .join(','),
    );
  }
  return `{"positions":[${parts.join(',')}]}`;
}

function plain(p: Position) {
  const { checkpoint: _c, ...rest } = p;
  return rest;
}

/**
 * The bytes of memory GDB writes with a recording (`record save`, a core file): the anonymous
 * mappings a core keeps by default (heap, stack, private and shared anonymous memory; the
 * coredump_filter's default), from /proc/PID/maps. 0 when the map cannot be read.
 */
function dumpedMemory(pid: number): number {
  let maps: string;
  try {
    maps = readFileSync(`/proc/${pid}/maps`, 'utf8');
  } catch {
    return 0;
  }
  let total = 0;
  for (const line of maps.split('\n')) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) (r)\S* \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (!m) continue;
    const name = m[5]!;
    // File-backed mappings are not dumped (their pages are in the file); anonymous ones are, touched or not.
    if (m[4] !== '0' && name !== '' && !name.startsWith('[')) continue;
    if (name === '[vvar]' || name === '[vsyscall]' || name === '[vdso]') continue;
    total += Number.parseInt(m[2]!, 16) - Number.parseInt(m[1]!, 16);
  }
  return total;
}
