import { DebugkitError } from '../../core/errors.js';
import { quoteMiString } from '../../core/mi/connection.js';

const USER_TOKEN = /^\d+(?=-)/;
const INTERRUPT = /^(-exec-interrupt\b|interrupt\b)/;

/**
 * CLI commands that resume the target. Run through `-interpreter-exec console`, GDB treats them
 * as foreground commands and stops reading its input until the target stops, even with
 * mi-async on; with a trailing "&" they run in the background like their -exec-* forms.
 */
const EXEC_ALIASES = new Set(['r', 'c', 'n', 's', 'si', 'ni', 'fin', 'u', 'j', 'fg', 'rc', 'rn', 'rs', 'rsi', 'rni']);
const EXEC_COMMANDS = [
  'run',
  'start',
  'starti',
  'continue',
  'next',
  'step',
  'stepi',
  'nexti',
  'finish',
  'until',
  'advance',
  'jump',
  'reverse-continue',
  'reverse-next',
  'reverse-step',
  'reverse-stepi',
  'reverse-nexti',
  'reverse-finish',
];

export function isExecCliCommand(command: string): boolean {
  const word = command.split(/\s/, 1)[0]!;
  if (EXEC_ALIASES.has(word)) return true;
  // GDB accepts unique prefixes ("cont", "fini", "reverse-cont"); four letters keeps clear of "condition" etc.,
  // and a prefix of "reverse-search" ("reve", "reverse-s") is not an execution command.
  return EXEC_COMMANDS.some((name) => name === word || (word.length >= 4 && name.startsWith(word) && !'reverse-search'.startsWith(word)));
}

/**
 * Turns what an agent typed into one MI command line. MI commands (leading "-") pass through
 * without any token the agent gave (debugkit adds its own); everything else is a CLI command run
 * through `-interpreter-exec console` so its text lands in the console stream.
 */
export function toMiCommand(raw: string): { mi: string; interrupt: boolean } {
  let command = raw.trim().replace(USER_TOKEN, '');
  if (command.length === 0) {
    throw new DebugkitError('INVALID_ARGUMENT', 'command is empty: give a GDB CLI command such as "break main" or an MI command such as "-break-insert main"');
  }
  if (/[\r\n]/.test(command)) {
    throw new DebugkitError('INVALID_ARGUMENT', 'command must be a single line: send one GDB command per call');
  }
  const interrupt = INTERRUPT.test(command);
  if (command.startsWith('-')) return { mi: command, interrupt };
  if (isExecCliCommand(command) && !command.endsWith('&')) command += '&';
  return { mi: `-interpreter-exec console ${quoteMiString(command)}`, interrupt };
}
