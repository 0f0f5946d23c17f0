import { open, readFile, rm, stat, writeFile } from 'node:fs/promises';
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
      'Positions: json (time, pc, function, file:line, changed values) or text, a page a call (next_snapshot), or binary, 256 KiB a call (offset: next_offset): GDB record save file (unrecorded: DKTRACE1 + gzip JSON).',
    input: {
      format: z.enum(['json', 'binary', 'text']).default('json'),
      start_snapshot: z.string().max(64).optional().describe('first position id or bookmark'),
      end_snapshot: z.string().max(64).optional().describe('last position id or bookmark'),
      offset: z.number().int().min(0).optional(),
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
      next_offset: z.number().optional(),
      note: z.string().optional(),
    },
    async run({ format, start_snapshot, end_snapshot, offset, session_id }, call) {
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
      // A binary trace is a file (GDB's record save file, or DKTRACE1 + gzipped JSON) kept in the session's directory and sent
      // a page at a time: a whole recording of 29 MB held the loop about 2 s as one answer (attack w2-2).
      if (offset !== undefined && offset > 0) {
        const saved = savedTraces.get(session);
        if (!saved) throw new DebugkitError('INVALID_ARGUMENT', `no binary trace of session ${session_id} to go on with: export it again without offset`);
        return page(saved, offset);
      }
      if (session.mode === 'record') {
        // GDB writes the program's memory with the recording (as gcore does): a program that only
        // reserved 1 GiB made a 1.29 GB file, written to disk before its size was checked (attack
        // 18am x1-2). What it would write is estimated from the memory map first.
        const memory = await dumpedMemory(session.pid);
        if (memory > MAX_BLOB) {
          throw new DebugkitError(
            'INVALID_ARGUMENT',
            `GDB writes the program's memory with a recording: this one would be over ${memory} bytes, over the ${MAX_BLOB}-byte limit of a binary trace: export json or text instead`,
          );
        }
        const file = path.join(session.tempDirPath, `trace-${++exports}.gdbrec`);
        await session.engine.serial(() => session.engine.cli(`record save ${file}`));
        const { size } = await stat(file);
        if (size > MAX_BLOB) {
          await rm(file, { force: true });
          throw new DebugkitError('INVALID_ARGUMENT', `the recording is ${size} bytes, over the ${MAX_BLOB}-byte limit of a binary trace: export json or text instead`);
        }
        return page(await keep(session, { file, size, count: to - from + 1, kind: 'gdbrec', uri: `debugkit://debugger/${session_id}/trace.gdbrec` }), 0);
      }
      const data = Buffer.concat([Buffer.from('DKTRACE1\n'), await gzipAsync(await positionsJson(all, from, to))]);
      const file = path.join(session.tempDirPath, `trace-${++exports}.dktrace`);
      await writeFile(file, data);
      return page(await keep(session, { file, size: data.length, count: to - from + 1, kind: 'dktrace', uri: `debugkit://debugger/${session_id}/trace.dktrace` }), 0);
    },
  });

/**
 * The bytes of a binary trace one answer carries: its base64 is built, written and checked on the
 * loop (about 75 ms a megabyte), so a page keeps that near 20 ms (512 KiB held another client's ping 50 ms at p99); `offset` fetches the next.
 */
export const BLOB_PAGE = 256 * 1024;

/** The two kinds of binary trace: what the answer names them, says of them, and calls them in its text. */
const KINDS = {
  gdbrec: {
    binary_format: 'gdb-record-full',
    note: 'GDB record save file of the whole recording (positions select nothing here): gdb PROGRAM -ex "target core FILE" -ex "record restore FILE"',
    what: 'GDB record save file',
  },
  dktrace: { binary_format: 'debugkit-trace-v1', note: 'the line "DKTRACE1" then gzip of the JSON export', what: 'DKTRACE1 + gzip JSON' },
} as const;

/** A binary trace saved in its session's directory, sent a page at a time (the last export of each session). */
interface SavedTrace {
  file: string;
  size: number;
  count: number;
  kind: keyof typeof KINDS;
  uri: string;
}
const savedTraces = new WeakMap<object, SavedTrace>();
/** Exports made: each saves its own file, so two at once never share one. */
let exports = 0;

/** Keeps `saved` as the session's binary trace to page through, and removes the one before it. */
async function keep(session: object, saved: SavedTrace): Promise<SavedTrace> {
  const before = savedTraces.get(session);
  savedTraces.set(session, saved);
  if (before) await rm(before.file, { force: true });
  return saved;
}

/** The page of a saved binary trace from `offset`, read off the loop. */
async function page(saved: SavedTrace, offset: number) {
  if (offset >= saved.size) throw new DebugkitError('INVALID_ARGUMENT', `offset ${offset} is past the trace's end (${saved.size} bytes): give an offset an answer returned`);
  const length = Math.min(BLOB_PAGE, saved.size - offset);
  const data = Buffer.alloc(length);
  const handle = await open(saved.file, 'r');
  try {
    await handle.read(data, 0, length, offset);
  } finally {
    await handle.close();
  }
  const end = offset + length;
  const cut = end < saved.size;
  const { binary_format, note, what } = KINDS[saved.kind];
  const value = {
    format: 'binary',
    count: saved.count,
    bytes: saved.size,
    binary_format,
    note: cut || offset > 0 ? `${note}. Bytes ${offset}..${end - 1} of ${saved.size}${cut ? `: export again with offset ${end} for the rest, and join the pages in order` : ''}` : note,
    ...(cut ? { next_offset: end } : {}),
  };
  return withText(
    Object.assign(value, { [BLOB]: { data, uri: saved.uri } }),
    `binary trace: ${offset > 0 || cut ? `bytes ${offset}..${end - 1} of ` : ''}${saved.size} bytes (${what})${cut ? `; next_offset ${end}` : ''}`,
  );
}

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
 * The bytes of memory GDB may write with a recording (`record save`, a core file), over-counted,
 * never under: every mapping but a read-only one of a file untouched by the program. GDB dumps
 * anonymous memory (heap, stack, private and shared), and a private mapping of a file once the
 * program has written a page of it (smaps' `Anonymous:`), whole: counting only anonymous mappings
 * let a program that mapped a sparse 2 GiB file and wrote one byte make GDB write 2.15 GB before
 * the file's size was checked (attack z2-1). So every writable mapping, and every one holding
 * anonymous pages, counts whole. 0 when /proc cannot be read (the size is checked after the save).
 */
async function dumpedMemory(pid: number): Promise<number> {
  let smaps: string;
  try {
    smaps = await readFile(`/proc/${pid}/smaps`, 'utf8');
  } catch {
    return 0;
  }
  let total = 0;
  let size = 0;
  let counted = true;
  for (const line of smaps.split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (head) {
      const name = head[5]!;
      size = Number.parseInt(head[2]!, 16) - Number.parseInt(head[1]!, 16);
      // The kernel's own pages are never in a core; a read-only mapping of a file is, once the program wrote to it.
      const special = name === '[vvar]' || name === '[vsyscall]' || name === '[vdso]';
      const anonymous = head[4] === '0' || name === '' || (name.startsWith('[') && !special);
      counted = !special && (anonymous || head[3]![1] === 'w');
      if (counted) total += size;
      continue;
    }
    const anon = /^Anonymous:\s+(\d+) kB/.exec(line);
    if (anon && !counted && Number(anon[1]) > 0) {
      counted = true;
      total += size;
    }
  }
  return total;
}
