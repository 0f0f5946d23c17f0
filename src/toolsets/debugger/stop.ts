import { replayLine, type ReplayAtStop } from '../mocks/option.js';
import path from 'node:path';
import { linesAround, type LinesAround } from '../../core/source-lines.js';
import { str, type MiTuple, type MiValue } from '../../core/mi/parser.js';
import { firstUserFrame } from '../../core/mi/user-frame.js';

export interface Frame {
  function: string;
  file?: string;
  line?: number;
  addr?: string;
}

/** The compact answer of every execution-control tool (a typical one is well under 400 tokens). */
export interface CompactStop {
  state: 'stopped' | 'running' | 'exited';
  position?: string;
  reason?: string;
  function?: string;
  file?: string;
  line?: number;
  source?: string[];
  frames?: Frame[];
  /** A crash outside the program's code (in libc): the first frame in its own sources, where it crashed. */
  user_frame?: UserFrame;
  changed?: Record<string, string>;
  truncated?: string;
  note?: string;
  /** Under a mock set: what replay did since the last stop. */
  mocks?: ReplayAtStop;
}

/** The frame of the program's own code a crash came from, and the code it crashed in (`strlen in libc.so.6`). */
export interface UserFrame extends Frame {
  level: number;
  crashed_in: string;
}

const MAX_VALUE = 120;
const MAX_CHANGED = 12;
/** The longest name of a changed local kept (C allows names of any length). */
const MAX_NAME = 80;
const CONTEXT = 2;

export function toFrame(t: MiTuple): Frame {
  const frame: Frame = { function: str(t.func) ?? '??' };
  const file = str(t.file);
  if (file) frame.file = file;
  const line = Number(str(t.line));
  if (line) frame.line = line;
  const addr = str(t.addr);
  if (addr) frame.addr = addr;
  return frame;
}

export function clip(value: string, max = MAX_VALUE): string {
  return value.length > max ? `${value.slice(0, max)}…` : value;
}

/** A local's name as a trace keeps it: its head and its tail past MAX_NAME characters, numbered if two so clipped read alike. */
function clippedName(name: string, taken: Record<string, string>): string {
  if (name.length <= MAX_NAME) return name;
  const half = MAX_NAME / 2;
  const short = `${name.slice(0, half)}…${name.slice(-half)}`;
  let unique = short;
  for (let n = 2; unique in taken; n++) unique = `${short}#${n}`;
  return unique;
}

/** Locals whose printed value differs from `before` (new names count as changed). */
export function changedLocals(before: Map<string, string>, now: Map<string, string>): { changed: Record<string, string>; more: number } {
  const changed: Record<string, string> = {};
  let count = 0;
  for (const [name, value] of now) {
    if (before.get(name) === value) continue;
    // A name is clipped as a value is: a program's 20,000-character names, kept at each of 10,000 positions, made an export
    // of the trace hold the loop for seconds (attack u2-1).
    if (count < MAX_CHANGED) changed[clippedName(name, changed)] = clip(value);
    count++;
  }
  return { changed, more: Math.max(0, count - MAX_CHANGED) };
}

/** `-stack-list-variables --all-values` result -> name -> printed value. */
export function localsOf(results: MiTuple): Map<string, string> {
  const out = new Map<string, string>();
  const vars = results.variables;
  if (!Array.isArray(vars)) return out;
  for (const v of vars) {
    if (typeof v !== 'object' || Array.isArray(v)) continue;
    const name = str(v.name);
    if (name) out.set(name, str(v.value) ?? `<${str(v.type) ?? 'value'}>`);
  }
  return out;
}

const sourceCache = new Map<string, LinesAround | null>();

/**
 * About five source lines around `line`, the current one marked. Only files inside `root` are
 * read (core/source-lines, opened as every file a client names is): the file names come from the
 * debuggee's debug info, which the client controls.
 */
export async function sourceLines(root: string, fullname: string | undefined, line: number | undefined): Promise<{ lines: string[]; modifiedMs: number } | undefined> {
  if (!fullname || !line) return undefined;
  const excerpt = await linesAround(root, fullname, line, { context: CONTEXT, maxLineChars: 161, cache: sourceCache });
  if (!excerpt) return undefined;
  return { lines: excerpt.lines.map((text, i) => `${excerpt.first + i === line ? '>' : ' '}${excerpt.first + i} ${clip(text, 160)}`), modifiedMs: excerpt.modifiedMs };
}

/**
 * Where a crash happened in the program's own code: the first frame of `stack` (a
 * `-stack-list-frames` answer, innermost first) whose source is inside `root`, when frames of
 * other code (libc's strlen) lie above it. Its source lines stand in for the top frame's, which
 * are outside the root.
 */
export async function crashSite(stop: CompactStop, stack: MiValue[], root: string): Promise<void> {
  const choice = firstUserFrame(stack, root);
  if (!choice) return;
  stop.user_frame = { level: choice.level, ...toFrame(choice.frame), crashed_in: choice.crashedIn };
  stop.source ??= (await sourceLines(root, str(choice.frame.fullname), stop.user_frame.line))?.lines;
}

/** The text content of a stop: what an agent reads first. */
export function renderStop(stop: CompactStop): string {
  const replayed = stop.mocks ? `\n${replayLine(stop.mocks)}` : '';
  if (stop.state === 'running') return `${stop.note ?? 'running'}${replayed}`;
  const head = [`${stop.state}${stop.reason ? ` (${stop.reason})` : ''}${stop.position ? ` at ${stop.position}` : ''}`];
  if (stop.function) head.push(`in ${stop.function}${stop.file ? ` ${stop.file}:${stop.line}` : ''}`);
  const lines = [head.join(' ')];
  const user = stop.user_frame;
  if (user) lines.push(`crashed in ${user.crashed_in}, called from ${user.function}${user.file ? ` at ${path.basename(user.file)}:${user.line}` : ''} (frame ${user.level})`);
  if (stop.source) lines.push(...stop.source);
  if (stop.frames && stop.frames.length > 1) {
    lines.push(`frames: ${stop.frames.map((f) => `${f.function}${f.file ? ` ${path.basename(f.file)}:${f.line}` : ''}`).join(' <- ')}`);
  }
  if (stop.changed && Object.keys(stop.changed).length > 0) {
    lines.push(
      `changed: ${Object.entries(stop.changed)
        .map(([k, v]) => `${k}=${v}`)
        .join(', ')}`,
    );
  }
  if (stop.truncated) lines.push(`[truncated: ${stop.truncated}]`);
  if (stop.note) lines.push(stop.note);
  return `${lines.join('\n')}${replayed}`;
}
