import { constants } from 'node:os';
import { DapRequestError } from '../../core/dap/request-error.js';
import { DebugkitError } from '../../core/errors.js';
import type { ErrorInfo } from './session.js';

/** How a Python program or its engine ended, read from what they left behind. */

const TRACEBACK_CHARS = 4000;

/** The last traceback Python printed to stderr, as an error: type, message, and the traceback (its end when long). */
export function uncaughtFromStderr(stderr: string): ErrorInfo | null {
  const start = stderr.lastIndexOf('Traceback (most recent call last):');
  if (start === -1) return null;
  const lines = stderr.slice(start).trimEnd().split('\n');
  // The exception line is the first after the traceback that is not indented (frames are).
  const last = lines.findIndex((l, i) => i > 0 && l.length > 0 && !/^\s/.test(l));
  if (last === -1) return null;
  const head = lines[last]!;
  const colon = head.indexOf(': ');
  const type = colon === -1 ? head.trim() : head.slice(0, colon);
  const message = colon === -1 ? '' : head.slice(colon + 2);
  let traceback = lines.slice(0, last + 1).join('\n');
  if (traceback.length > TRACEBACK_CHARS) {
    traceback = `Traceback (most recent call last):\n  [... ${traceback.length - TRACEBACK_CHARS} characters cut; the innermost frames follow ...]\n${traceback.slice(-TRACEBACK_CHARS)}`;
  }
  return { type, message, traceback };
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
