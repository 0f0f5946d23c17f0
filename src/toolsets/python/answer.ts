import path from 'node:path';
import type { z } from 'zod';
import type { runOutput } from './schemas.js';

type RunAnswer = z.infer<z.ZodObject<typeof runOutput>>;

/**
 * What an agent reads of a stop (python_run_to_breakpoint, python_continue, python_step,
 * python_inspect): one line for where and why, the source around it, each local once as
 * `name=repr type`, the frames; the same answer as structured content, for programs. The text
 * is not that JSON again: each value is shown once.
 */
export function renderRun(v: RunAnswer): string {
  const lines: string[] = [];
  const where = v.frameInfo ? ` at ${path.basename(v.frameInfo.file)}:${v.frameInfo.line}` : '';
  const depth = `${v.thread ? ` on thread ${v.thread}` : ''}${v.stackDepth !== undefined ? `, stack depth ${v.stackDepth}` : ''}`;
  if (v.status === 'completed' || v.completed) lines.push(`completed${v.exitCode !== undefined ? `, exit code ${v.exitCode}` : ''}`);
  else lines.push(`${v.status}${v.reason ? ` (${v.reason})` : ''}${v.function ? ` in ${v.function}` : ''}${where}${depth}`);
  if (v.conditionError) lines.push(`the breakpoint's condition \`${v.conditionError.condition}\` raised ${v.conditionError.error}: stopped here rather than take it as false`);
  if (v.error) {
    lines.push(`error: ${v.error.type}: ${v.error.message}`);
    // Where the error happened: the innermost frames, last in a Python traceback, first in a Go one (`panic: ...`, attack 18ap i2-4).
    const trace = v.error.traceback?.trimEnd().split('\n') ?? [];
    // A JavaScript stack, too: the error line, then `at` lines innermost first.
    const tail = /^(?:panic|fatal error|SIG[A-Z0-9]+): /.test(trace[0] ?? '') ? trace.slice(3, 9) : /^\s+at /.test(trace[1] ?? '') ? trace.slice(1, 7) : trace.slice(-6);
    if (tail && tail.length > 0) lines.push(...tail.map((l) => `  ${l}`));
  }
  if (v.source) lines.push(v.source);
  if (v.locals && Object.keys(v.locals).length > 0) {
    const shown = Object.entries(v.locals).map(([name, value]) => `${name}=${value.repr}${value.isTruncated ? ' (cut)' : ''} ${value.type}`);
    lines.push(`locals: ${shown.join(', ')}`);
  }
  if (v.localsOmitted) lines.push(`(${v.localsOmitted} more locals: python_evaluate one by name, or raise maxLocals)`);
  if (v.stack && v.stack.length > 0) {
    const frames = v.stack.map((f) => `#${f.index} ${f.name} ${path.basename(f.file)}:${f.line}`).join(' <- ');
    const more = v.stackDepth !== undefined && v.stackDepth > v.stack.length ? ` (${v.stackDepth - v.stack.length} more: python_inspect {frame})` : '';
    lines.push(`stack: ${frames}${more}`);
  }
  for (const w of v.breakpointWarnings ?? []) lines.push(`breakpoint ${w.file}:${w.line}: ${w.verified ? `moved to line ${w.actualLine}` : 'not verified'}${w.message ? ` (${w.message})` : ''}`);
  return lines.join('\n');
}
