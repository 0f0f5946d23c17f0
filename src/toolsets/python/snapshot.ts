import { readFile } from 'node:fs/promises';
import type { DebugProtocol } from '@vscode/debugprotocol';
import type { DapConnection } from '../../core/dap/connection.js';
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
}

const STACK_LEVELS = 20;
/** Frames a stop shows: from two above the one looked at (python_inspect `frame` pages through a deep stack). */
const SHOWN_FRAMES = 8;
const SOURCE_CONTEXT = 2;

/** What an agent needs at a stop, in one answer: where, the code around it, the stack, the locals. */
export async function takeSnapshot(dap: DapConnection, threadId: number, limits: Limits, frameIndex = 0): Promise<Snapshot> {
  const top = await dap.request('stackTrace', { threadId, startFrame: 0, levels: STACK_LEVELS });
  const frames = top.stackFrames;
  const depth = Math.max(top.totalFrames ?? 0, frames.length);
  const shownFrom = Math.max(0, Math.min(frameIndex, depth - 1) - 2);
  const window = shownFrom + SHOWN_FRAMES <= frames.length ? frames.slice(shownFrom, shownFrom + SHOWN_FRAMES) : await stackWindow(dap, threadId, shownFrom, SHOWN_FRAMES);
  const stack = window.map((f, i) => ({ index: shownFrom + i, name: f.name, file: f.source?.path ?? '<unknown>', line: f.line }));
  const frame = window[frameIndex - shownFrom];
  if (!frame) return { frames, depth, selected: undefined, frameInfo: null, locals: null, localsOmitted: 0, stack, source: undefined };
  const file = frame.source?.path ?? '<unknown>';
  const [{ locals, omitted }, source] = await Promise.all([frameLocals(dap, frame.id, limits), sourceAround(file, frame.line)]);
  return { frames, depth, selected: frame, frameInfo: { file, line: frame.line }, locals, localsOmitted: omitted, stack, source };
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

/** A few numbered lines around `line`, the current one marked with "->". */
export async function sourceAround(file: string, line: number, context = SOURCE_CONTEXT): Promise<string | undefined> {
  const lines = await readLines(file);
  if (!lines) return undefined;
  const from = Math.max(1, line - context);
  const to = Math.min(lines.length, line + context);
  const width = String(to).length;
  const out: string[] = [];
  for (let n = from; n <= to; n++) out.push(`${n === line ? '->' : '  '} ${String(n).padStart(width)}  ${lines[n - 1]}`);
  return out.join('\n');
}

export async function readLines(file: string): Promise<string[] | undefined> {
  try {
    return (await readFile(file, 'utf8')).split(/\r?\n/);
  } catch {
    return undefined;
  }
}

/** A Python-style traceback (most recent call last) from DAP frames (innermost first), `depth` the stack's real depth. */
export async function formatTraceback(frames: DebugProtocol.StackFrame[], type: string, message: string, depth = frames.length): Promise<string> {
  const parts = ['Traceback (most recent call last):'];
  if (depth > frames.length) parts.push(`  [... ${depth - frames.length} outer frames not shown: python_inspect with frame ${frames.length} or more shows them ...]`);
  for (const frame of [...frames].reverse()) {
    const file = frame.source?.path ?? '<unknown>';
    parts.push(`  File "${file}", line ${frame.line}, in ${frame.name}`);
    const code = (await readLines(file))?.[frame.line - 1]?.trim();
    if (code) parts.push(`    ${code}`);
  }
  parts.push(message ? `${type}: ${message}` : type);
  return parts.join('\n');
}
