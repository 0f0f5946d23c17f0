import { constants } from 'node:os';
import { DapRequestError } from '../../core/dap/request-error.js';
import { DebugkitError } from '../../core/errors.js';
import type { ErrorInfo } from './engine.js';

/** How a Python program or its engine ended, read from what they left behind. */

const TRACEBACK_CHARS = 4000;

/**
 * The last traceback Python printed to stderr, as an error: type, message, and the traceback (its
 * end when long). `stderr` may be only the tail of what was printed: a traceback longer than it
 * (two functions recursing in turn, which Python cannot fold into "[Previous line repeated]") is
 * read from its exception line, the last line it prints.
 */
export function uncaughtFromStderr(stderr: string): ErrorInfo | null {
  const start = stderr.lastIndexOf(TRACEBACK_HEADER);
  const lines = stderr.slice(Math.max(start, 0)).trimEnd().split('\n');
  const last = start === -1 ? exceptionLineAtEnd(lines) : exceptionLineAfterHeader(lines);
  if (last === -1) return null;
  const head = lines[last]!;
  const colon = head.indexOf(': ');
  const type = colon === -1 ? head.trim() : head.slice(0, colon);
  const message = colon === -1 ? '' : head.slice(colon + 2);
  const traceback = tracebackWithin(lines.slice(0, last + 1).join('\n'), start !== -1);
  return { type: cutMessage(type, MAX_TYPE_CHARS), message: cutMessage(message), traceback };
}

/**
 * A traceback within TRACEBACK_CHARS: its end, the innermost frames and the exception line, which
 * say most. `whole` is false when its start was never read (a tail of stderr), which it then says.
 */
export function tracebackWithin(traceback: string, whole = true): string {
  if (whole && traceback.length <= TRACEBACK_CHARS) return traceback;
  const kept = traceback.slice(-TRACEBACK_CHARS);
  const cut = whole ? `${traceback.length - kept.length} characters cut` : 'its start was not kept';
  return `${TRACEBACK_HEADER}\n  [... ${cut}; the innermost frames follow ...]\n${kept}`;
}

/** Longest exception message a stop shows; an exception's text is the program's to make as long as it likes. */
export const MESSAGE_CHARS = 4000;
export const MAX_TYPE_CHARS = 256;
/** Of the message, what a traceback's last line keeps: the message itself is beside it. */
export const TRACEBACK_MESSAGE_CHARS = 400;

/**
 * An exception's message (or type name) within `max` characters: its start, and a note of how long
 * it was and where the rest is, so an answer stays within its budget (attack 18z Z9: an 800 KB
 * message made a 1.6 MB stop) and a cut is never taken for the whole.
 */
export function cutMessage(message: string, max = MESSAGE_CHARS): string {
  if (message.length <= max) return message;
  return `${message.slice(0, max)}... [cut: ${message.length} characters in all; at the exception's stop, python_evaluate \`str(__exception__[1])[${max}:${2 * max}]\` shows more]`;
}

const TRACEBACK_HEADER = 'Traceback (most recent call last):';

/** The exception line after a traceback's header: the first line not indented (frames are). */
function exceptionLineAfterHeader(lines: string[]): number {
  return lines.findIndex((l, i) => i > 0 && l.length > 0 && !/^\s/.test(l));
}

/**
 * Without a header: the exception line ends the text, a name (`RecursionError`, `pkg.Error`) and
 * its message after the indented lines of the innermost frame. Anything else at the end (output
 * printed after the traceback, a cut in mid-frame) is no error read.
 */
function exceptionLineAtEnd(lines: string[]): number {
  const last = lines.length - 1;
  if (last < 1 || !/^[A-Za-z_][\w.]*(: |$)/.test(lines[last]!) || !/^\s/.test(lines[last - 1]!)) return -1;
  // A frame's source line is under a `File "...", line N` line: a traceback, not indented output.
  return lines.slice(Math.max(0, last - 8), last).some((l) => /^ {2}File "[^"]*", line \d+/.test(l)) ? last : -1;
}

/**
 * debugpy reports a program ended by a signal as 256 - N (Python's -N, as an unsigned byte):
 * SIGKILL is 247. A negative code (-N) is taken the same way.
 */
export function killedBy(exitCode: number): ErrorInfo | null {
  const signal = exitCode < 0 ? -exitCode : exitCode > 256 - 32 && exitCode < 256 ? 256 - exitCode : 0;
  const name = Object.entries(constants.signals).find(([, n]) => n === signal)?.[0];
  if (!signal || !name) return null;
  return { type: 'ProgramKilled', message: `the program was killed by ${name} (debugpy reports exit code ${exitCode})`, traceback: null };
}

export function describeExit({ code, signal }: { code: number | null; signal: NodeJS.Signals | null }): string {
  return signal ? `killed by signal ${signal}` : `exit code ${code}`;
}

/**
 * debugpy answers a failed evaluation with its own traceback, ending in the exception line
 * ("SyntaxError: invalid syntax"): the agent needs that line, not pydevd's internals.
 */
export function evaluationError(expression: string, err: unknown): unknown {
  if (!(err instanceof DapRequestError)) return err;
  const text = err.message.replace(/^[\s\S]*?failed the "evaluate" request: /, '');
  const lines = text.trimEnd().split('\n');
  const last = [...lines].reverse().find((l) => /^[A-Za-z_][\w.]*(Error|Exception|Warning|Exit|Interrupt)\b/.test(l)) ?? lines.at(-1) ?? text;
  return new DebugkitError('INVALID_ARGUMENT', `cannot evaluate ${JSON.stringify(expression)}: ${last.trim()}`, { cause: err });
}
