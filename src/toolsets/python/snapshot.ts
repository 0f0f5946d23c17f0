import type { DebugProtocol } from '@vscode/debugprotocol';
import type { DapConnection } from '../../core/dap/connection.js';
import { linesAround, type LinesAround } from '../../core/source-lines.js';
import type { TracebackFrames } from './engine.js';
import { localsView, type Limits, type ValueView } from './values.js';

export interface FrameView {
  index: number;
  name: string;
  file: string;
  line: number;
}

export interface Snapshot {
  /** The innermost frames (up to STACK_LEVELS). */
  frames: DebugProtocol.StackFrame[];
  /** How many frames the stack really has (debugpy's totalFrames). */
  depth: number;
  /** The frame looked at. */
  selected: DebugProtocol.StackFrame | undefined;
  frameInfo: { file: string; line: number } | null;
  locals: Record<string, ValueView> | null;
  localsOmitted: number;
  stack: FrameView[];
  source: string | undefined;
  /** When the file `source` was read from was last modified. */
  sourceModifiedMs?: number;
}

const STACK_LEVELS = 20;
/** Frames a stop shows: from two above the one looked at (python_inspect `frame` pages through a deep stack). */
const SHOWN_FRAMES = 8;
const SOURCE_CONTEXT = 2;

/**
 * What an agent needs at a stop, in one answer: where, the code around it, the stack, the locals.
 * `frame`: the frame looked at (0: the innermost), or how to pick it from the innermost frames.
 */
export async function takeSnapshot(dap: DapConnection, threadId: number, limits: Limits, frame: number | ((frames: DebugProtocol.StackFrame[]) => number) = 0): Promise<Snapshot> {
  const top = await dap.request('stackTrace', { threadId, startFrame: 0, levels: STACK_LEVELS });
  const frames = top.stackFrames;
  const depth = Math.max(top.totalFrames ?? 0, frames.length);
  const frameIndex = typeof frame === 'number' ? frame : frame(frames);
  const shownFrom = Math.max(0, Math.min(frameIndex, depth - 1) - 2);
  const window = shownFrom + SHOWN_FRAMES <= frames.length ? frames.slice(shownFrom, shownFrom + SHOWN_FRAMES) : await stackWindow(dap, threadId, shownFrom, SHOWN_FRAMES);
  const stack = window.map((f, i) => ({ index: shownFrom + i, name: f.name, file: f.source?.path ?? '<unknown>', line: f.line }));
  const selected = window[frameIndex - shownFrom];
  if (!selected) return { frames, depth, selected: undefined, frameInfo: null, locals: null, localsOmitted: 0, stack, source: undefined };
  const file = selected.source?.path ?? '<unknown>';
  const [{ locals, omitted }, excerpt] = await Promise.all([frameLocals(dap, selected.id, limits), sourceExcerpt(file, selected.line)]);
  return { frames, depth, selected, frameInfo: { file, line: selected.line }, locals, localsOmitted: omitted, stack, source: excerpt?.text, sourceModifiedMs: excerpt?.modifiedMs };
}

/** `levels` frames from `start` (0: the innermost). */
export async function stackWindow(dap: DapConnection, threadId: number, start: number, levels: number): Promise<DebugProtocol.StackFrame[]> {
  return (await dap.request('stackTrace', { threadId, startFrame: start, levels })).stackFrames;
}

async function frameLocals(dap: DapConnection, frameId: number, limits: Limits) {
  const { scopes } = await dap.request('scopes', { frameId });
  const scope = scopes.find((s) => s.presentationHint === 'locals') ?? scopes.find((s) => s.name === 'Locals') ?? scopes[0];
  if (!scope) return { locals: {}, omitted: 0 };
  const { variables } = await dap.request('variables', { variablesReference: scope.variablesReference });
  return localsView(variables, limits);
}

/** Source excerpts of the program's frames kept, by file and line (core/source-lines: by the file's identity, size and change time). */
const sourceCache = new Map<string, LinesAround | null>();
/** A source line's characters shown. */
const SOURCE_LINE_CHARS = 300;

/**
 * A few numbered lines around `line`, the current one marked with "->". The file is the one the
 * program's frame names (its own code, or the standard library's: what the program could read
 * itself), read only as far as those lines (core/source-lines): a 16 MiB file of newlines held
 * the loop seconds at every stop when read and split whole (attack 18ao b2-2).
 */
export async function sourceAround(file: string, line: number, context = SOURCE_CONTEXT): Promise<string | undefined> {
  return (await sourceExcerpt(file, line, context))?.text;
}

/** sourceAround's text, and when its file was last modified. */
async function sourceExcerpt(file: string, line: number, context = SOURCE_CONTEXT): Promise<{ text: string; modifiedMs: number } | undefined> {
  const excerpt = await linesAround(null, file, line, { context, maxLineChars: SOURCE_LINE_CHARS, cache: sourceCache });
  if (!excerpt) return undefined;
  const width = String(excerpt.first + excerpt.lines.length - 1).length;
  const text = excerpt.lines.map((text, i) => `${excerpt.first + i === line ? '->' : '  '} ${String(excerpt.first + i).padStart(width)}  ${text}`).join('\n');
  return { text, modifiedMs: excerpt.modifiedMs };
}

/** The source line `line` of `file` (a frame's), as sourceAround reads it. */
export async function sourceLine(file: string, line: number): Promise<string | undefined> {
  return (await linesAround(null, file, line, { context: 0, maxLineChars: SOURCE_LINE_CHARS, cache: sourceCache }))?.lines[0];
}

/** A Python-style traceback (most recent call last) from DAP frames (innermost first), `depth` the stack's real depth. */
export async function formatTraceback(frames: TracebackFrames['frames'], type: string, message: string, depth = frames.length): Promise<string> {
  const parts = ['Traceback (most recent call last):'];
  if (depth > frames.length) parts.push(`  [... ${depth - frames.length} outer frames not shown: python_inspect with frame ${frames.length} or more shows them ...]`);
  for (const frame of [...frames].reverse()) {
    const file = frame.source?.path ?? '<unknown>';
    parts.push(`  File "${file}", line ${frame.line}, in ${frame.name}`);
    const code = (await sourceLine(file, frame.line))?.trim();
    if (code) parts.push(`    ${code}`);
  }
  parts.push(message ? `${type}: ${message}` : type);
  return parts.join('\n');
}
