import { replayLine } from '../mocks/option.js';
import path from 'node:path';
import { isTuple, str, type MiTuple } from '../../core/mi/parser.js';
import type { UserFrameChoice } from '../../core/mi/user-frame.js';
import { MAX_OUTPUT_CHARS, PROGRAM_OUTPUT_PER_CALL } from './collector.js';
import type { CallOutcome } from './session.js';

/**
 * What an agent reads of a gdb answer: GDB's console text and one compact stop line. The parsed
 * answer (the contract's `{"type":"ok","content":...}`) is the structured content, once; the raw
 * MI stop record only when asked for (`raw`).
 */

/** Fields of MI's *stopped record an agent never needs: machine details, and `fullname` (kept as `file`). */
const NOISE = new Set(['arch', 'core', 'stopped-threads', 'disp', 'fullname']);

/**
 * The *stopped record without its noise: `file` is the full path, `@entry` twins of arguments
 * (gdb's entry values) are dropped, and a stop outside the program's code names its first own
 * frame (`user_frame`).
 */
export function compactStopped(stopped: MiTuple, user?: UserFrameChoice): MiTuple {
  const out: MiTuple = {};
  for (const [key, value] of Object.entries(stopped)) {
    if (NOISE.has(key)) continue;
    out[key] = key === 'frame' && isTuple(value) ? compactFrame(value) : value;
  }
  if (user) out.user_frame = { level: String(user.level), ...compactFrame(user.frame), 'stopped-in': user.crashedIn };
  return out;
}

function compactFrame(frame: MiTuple): MiTuple {
  const out: MiTuple = {};
  for (const [key, value] of Object.entries(frame)) {
    if (NOISE.has(key)) continue;
    if (key === 'args' && Array.isArray(value)) out.args = value.filter((a) => !(isTuple(a) && typeof a.name === 'string' && a.name.endsWith('@entry')));
    else out[key] = value;
  }
  if (typeof frame.fullname === 'string') out.file = frame.fullname;
  return out;
}

/** The text content of `call` and `gdb_wait`: the console output, the program's output, one line for where the program is. */
export function renderCall(v: CallOutcome): string {
  const parts: string[] = [];
  const output = v.output.trimEnd();
  const { class: resultClass, ...fields } = v.result;
  if (output) parts.push(output);
  // An MI command's answer is its result record: no console text says it.
  else if (Object.keys(fields).length > 0) parts.push(JSON.stringify(fields, lean));
  if (v.program_output) {
    const { stdout, stderr, hint } = v.program_output;
    if (stdout) parts.push(`[program stdout]\n${stdout.trimEnd()}`);
    if (stderr) parts.push(`[program stderr]\n${stderr.trimEnd()}`);
    if (hint) parts.push(`[${hint}]`);
  }
  const where = stateLine(v);
  if (where) parts.push(where);
  if (v.mocks) parts.push(replayLine(v.mocks));
  return parts.length > 0 ? parts.join('\n') : resultClass;
}

/** One line: how the program stopped and where, or that it still runs; nothing when a command did not move it. */
function stateLine(v: CallOutcome): string | undefined {
  if (v.state === 'running') return '[running: not stopped yet; gdb_wait waits for the stop, "-exec-interrupt" stops it]';
  const s = v.stopped;
  if (!s) return undefined;
  const reason = str(s.reason);
  if (reason === 'exited-normally') return '[exited normally]';
  if (reason === 'exited') return `[exited with code ${Number.parseInt(str(s['exit-code']) ?? '0', 8)}]`;
  if (reason === 'exited-signalled') return `[killed by ${str(s['signal-name']) ?? 'a signal'}]`;
  const what = stopWhat(s, reason);
  const frame = isTuple(s.frame) ? s.frame : undefined;
  const thread = str(s['thread-id']);
  let line = `[stopped: ${what}${frame ? ` in ${frameText(frame)}` : ''}${thread ? `, thread ${thread}` : ''}`;
  const user = isTuple(s.user_frame) ? s.user_frame : undefined;
  if (user) line += `; the program's own code: frame #${str(user.level)} ${frameText(user)}`;
  return `${line}]`;
}

function stopWhat(s: MiTuple, reason: string | undefined): string {
  switch (reason) {
    case 'breakpoint-hit':
      return `breakpoint ${str(s.bkptno) ?? ''}`.trimEnd();
    case 'signal-received':
      return `${str(s['signal-name']) ?? 'signal'}${s['signal-meaning'] ? ` (${str(s['signal-meaning'])})` : ''}`;
    case 'end-stepping-range':
      return 'step done';
    case 'function-finished':
      return `finished${s['return-value'] !== undefined ? `, returned ${clip(str(s['return-value']) ?? '')}` : ''}`;
    case 'watchpoint-trigger':
    case 'access-watchpoint-trigger':
    case 'read-watchpoint-trigger': {
      const value = isTuple(s.value) ? s.value : {};
      const change = value.old !== undefined || value.new !== undefined ? ` ${clip(str(value.old) ?? '?')} -> ${clip(str(value.new) ?? str(value.value) ?? '?')}` : '';
      return `watchpoint${change}`;
    }
    case undefined:
      return 'interrupted';
    default:
      return reason;
  }
}

function frameText(f: MiTuple): string {
  const func = str(f.func) ?? str(f.addr) ?? '??';
  const file = str(f.file);
  const line = str(f.line);
  if (file) return `${func} at ${path.basename(file)}${line ? `:${line}` : ''}`;
  const from = str(f.from);
  return from ? `${func} from ${path.basename(from)}` : func;
}

/** MI's answers as text without the fields that repeat or never matter to an agent: `arch`, and `fullname` where it is `file`. */
function lean(this: unknown, key: string, value: unknown): unknown {
  if (key === 'arch') return undefined;
  if (key === 'fullname' && typeof this === 'object' && this !== null && (this as MiTuple).file === value) return undefined;
  return value;
}

const clip = (s: string, max = 80) => (s.length > max ? `${s.slice(0, max)}…` : s);

/** One command of a `commands` call and its answer. */
export interface CallStep {
  command: string;
  outcome: CallOutcome;
}

/**
 * The one answer of several commands: each command's output under its `(gdb) command` line, all
 * of it within what one command may print (MAX_OUTPUT_CHARS), the last result, stop and state, and
 * the program's output of them all (its end, when long). `notSent` commands were left after one
 * that left the program running.
 */
export function mergeCalls(steps: readonly CallStep[], notSent: number): CallOutcome {
  const last = steps[steps.length - 1]!.outcome;
  let output = steps.map((s) => `(gdb) ${s.command}\n${s.outcome.output}`).join('');
  let truncated = steps.some((s) => s.outcome.truncated);
  if (output.length > MAX_OUTPUT_CHARS) {
    output = `${output.slice(0, MAX_OUTPUT_CHARS)}\n[debugkit: the commands' output was cut at ${MAX_OUTPUT_CHARS} characters; send fewer commands at once, or narrow them]\n`;
    truncated = true;
  }
  if (notSent > 0) output += `[debugkit: the program is running, so the ${notSent} command(s) after "${steps[steps.length - 1]!.command}" were not sent: gdb_wait for the stop, then send them]\n`;
  const merged: CallOutcome = { result: last.result, output, state: last.state };
  const stopped = [...steps].reverse().find((s) => s.outcome.stopped)?.outcome.stopped;
  if (stopped) merged.stopped = stopped;
  const programs = steps.flatMap((s) => (s.outcome.program_output ? [s.outcome.program_output] : []));
  if (programs.length > 0) {
    const tail = (text: string) => (text.length > PROGRAM_OUTPUT_PER_CALL ? text.slice(-PROGRAM_OUTPUT_PER_CALL) : text);
    const stdout = programs.map((p) => p.stdout).join('');
    const stderr = programs.map((p) => p.stderr).join('');
    const cut = programs.some((p) => p.truncated) || stdout.length > PROGRAM_OUTPUT_PER_CALL || stderr.length > PROGRAM_OUTPUT_PER_CALL;
    merged.program_output = { stdout: tail(stdout), stderr: tail(stderr), truncated: cut };
    if (cut) merged.program_output.hint = `only the end of the program's output is shown; gdb_program_output reads all of it (a negative cursor counts from the end)`;
  }
  if (truncated) merged.truncated = true;
  return merged;
}
