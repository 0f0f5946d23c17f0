import { DebugkitError } from '../../core/errors.js';
import { quoteMiString } from './mi/connection.js';

const USER_TOKEN = /^\d+(?=-)/;
const INTERRUPT = /^(-exec-interrupt\b|interrupt\b)/;

/**
 * Turns what an agent typed into one MI command line. MI commands (leading "-") pass through
 * without any token the agent gave (debugkit adds its own); everything else is a CLI command run
 * through `-interpreter-exec console` so its text lands in the console stream.
 */
export function toMiCommand(raw: string): { mi: string; interrupt: boolean } {
  const command = raw.trim().replace(USER_TOKEN, '');
  if (command.length === 0) {
    throw new DebugkitError('INVALID_ARGUMENT', 'command is empty: give a GDB CLI command such as "break main" or an MI command such as "-break-insert main"');
  }
  if (/[\r\n]/.test(command)) {
    throw new DebugkitError('INVALID_ARGUMENT', 'command must be a single line: send one GDB command per call');
  }
  const interrupt = INTERRUPT.test(command);
  if (command.startsWith('-')) return { mi: command, interrupt };
  return { mi: `-interpreter-exec console ${quoteMiString(command)}`, interrupt };
}
