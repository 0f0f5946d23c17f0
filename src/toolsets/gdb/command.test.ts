import { describe, expect, it } from 'vitest';
import { DebugkitError } from '../../core/errors.js';
import { isExecCliCommand, toMiCommand } from './command.js';

/** What toMiCommand makes of a CLI command line (already escaped for an MI string). */
const console_ = (escaped: string) => `-interpreter-exec console "${escaped}"`;

function invalid(raw: string): DebugkitError {
  try {
    toMiCommand(raw);
  } catch (err) {
    expect(err).toBeInstanceOf(DebugkitError);
    expect((err as DebugkitError).code).toBe('INVALID_ARGUMENT');
    return err as DebugkitError;
  }
  throw new Error(`expected ${JSON.stringify(raw)} to be refused`);
}

const EMPTY_MESSAGE = 'command is empty: give a GDB CLI command such as "break main" or an MI command such as "-break-insert main"';
const MULTILINE_MESSAGE = 'command must be a single line: send one GDB command per call';

describe('toMiCommand: MI commands', () => {
  it.each([
    ['-break-insert main', '-break-insert main'],
    ['-exec-run', '-exec-run'],
    ['-exec-continue', '-exec-continue'],
    ['-data-evaluate-expression "a \\"b\\""', '-data-evaluate-expression "a \\"b\\""'],
    ['  -stack-list-frames  ', '-stack-list-frames'],
    ['\t-var-create - * x\t', '-var-create - * x'],
  ])('passes %j through as %j', (raw, mi) => {
    expect(toMiCommand(raw)).toEqual({ mi, interrupt: false });
  });

  it('does not add "&" to MI exec commands (they run in the background under mi-async already)', () => {
    expect(toMiCommand('-exec-next').mi).toBe('-exec-next');
    expect(toMiCommand('-exec-finish').mi).toBe('-exec-finish');
  });

  it.each([
    ['12-break-insert main', '-break-insert main'],
    ['1-exec-run', '-exec-run'],
    ['0-gdb-version', '-gdb-version'],
    ['  999999-stack-list-frames', '-stack-list-frames'],
  ])('strips the user token from %j (debugkit adds its own)', (raw, mi) => {
    expect(toMiCommand(raw)).toEqual({ mi, interrupt: false });
  });

  it('strips only a leading token', () => {
    expect(toMiCommand('-break-insert 12-foo').mi).toBe('-break-insert 12-foo');
  });

  it('does not strip digits that are not a token (CLI arguments)', () => {
    expect(toMiCommand('12 print x').mi).toBe(console_('12 print x'));
  });
});

describe('toMiCommand: CLI commands', () => {
  it.each([
    ['print x', 'print x'],
    ['info locals', 'info locals'],
    ['break main', 'break main'],
    ['set var x=1', 'set var x=1'],
    ['condition 1 x>3', 'condition 1 x>3'],
    ['rwatch x', 'rwatch x'],
    ['bt', 'bt'],
    ['  x/4xw $sp  ', 'x/4xw $sp'],
  ])('wraps %j in -interpreter-exec console', (raw, escaped) => {
    expect(toMiCommand(raw)).toEqual({ mi: console_(escaped), interrupt: false });
  });

  it('escapes double quotes', () => {
    expect(toMiCommand('print "hello"').mi).toBe('-interpreter-exec console "print \\"hello\\""');
  });

  it('escapes backslashes before quotes, so a trailing backslash cannot end the string', () => {
    expect(toMiCommand('print "a\\nb"').mi).toBe('-interpreter-exec console "print \\"a\\\\nb\\""');
    expect(toMiCommand('echo x\\').mi).toBe('-interpreter-exec console "echo x\\\\"');
    expect(toMiCommand('echo \\"').mi).toBe('-interpreter-exec console "echo \\\\\\""');
  });

  it('escapes quotes and backslashes in an exec command and still appends "&" inside the quotes', () => {
    expect(toMiCommand('run "arg one" C:\\tmp').mi).toBe('-interpreter-exec console "run \\"arg one\\" C:\\\\tmp&"');
  });

  it('keeps tabs and other inner whitespace', () => {
    expect(toMiCommand('print\tx').mi).toBe(console_('print\tx'));
    expect(toMiCommand('print   x').mi).toBe(console_('print   x'));
  });

  it('keeps non-ASCII text', () => {
    expect(toMiCommand('print "héllo"').mi).toBe('-interpreter-exec console "print \\"héllo\\""');
  });
});

describe('toMiCommand: exec CLI commands get a trailing "&"', () => {
  it.each([
    'run',
    'r',
    'c',
    'cont',
    'conti',
    'continue',
    'fg',
    'next',
    'n',
    'nexti',
    'ni',
    'step',
    's',
    'stepi',
    'si',
    'finish',
    'fin',
    'fini',
    'until',
    'u',
    'unti',
    'advance',
    'adva',
    'start',
    'starti',
    'jump',
    'j',
    'reverse-continue',
    'rc',
    'reverse-next',
    'rn',
    'reverse-nexti',
    'rni',
    'reverse-step',
    'rs',
    'reverse-stepi',
    'rsi',
    'reverse-finish',
    'reverse-cont',
    'reverse-fin',
  ])('%s', (command) => {
    expect(isExecCliCommand(command)).toBe(true);
    expect(toMiCommand(command)).toEqual({ mi: console_(`${command}&`), interrupt: false });
  });

  it.each([
    ['run --verbose input.txt', 'run --verbose input.txt&'],
    ['c 3', 'c 3&'],
    ['next 5', 'next 5&'],
    ['until 42', 'until 42&'],
    ['advance foo.c:12', 'advance foo.c:12&'],
    ['jump *0x401000', 'jump *0x401000&'],
    ['  step  ', 'step&'],
    ['finish\t', 'finish&'],
  ])('with arguments: %j -> %j', (raw, escaped) => {
    expect(toMiCommand(raw).mi).toBe(console_(escaped));
  });

  it.each(['continue &', 'continue&', 'c&', 'run args &', 'next   &'])('leaves an already backgrounded %j unchanged', (raw) => {
    expect(toMiCommand(raw).mi).toBe(console_(raw.trim()));
  });

  it('looks only at the first word: a leading number is not stripped from CLI commands', () => {
    expect(toMiCommand('3 continue').mi).toBe(console_('3 continue'));
  });
});

describe('toMiCommand: non-exec CLI commands get no "&"', () => {
  it.each([
    'condition 1 x>3',
    'cond 1 x>3',
    'print x',
    'p x',
    'info locals',
    'info frame',
    'set var x=1',
    'rwatch x',
    'watch x',
    'reverse-search foo',
    'rev foo',
    'reve foo',
    'rever foo',
    'reverse foo',
    'reverse-',
    'reverse-s foo',
    'reverse-se foo',
    'record full',
    'display x',
    'delete 1',
    'disable 2',
    'up',
    'down',
    'frame 1',
    'list main',
    'bt',
    'backtrace full',
    'shell ls',
    'sta', // too short to be taken as a prefix of "start"
    'fi', // "fi" is not "finish"
    'runner',
    'contx',
    'stepping',
    'nextfoo',
    'interrupt',
    'kill',
    'detach',
    'attach 1234',
    'file ./a.out',
    'echo continue',
    'printf "run\\n"',
    'commands 1',
  ])('%s', (command) => {
    expect(isExecCliCommand(command)).toBe(false);
    expect(toMiCommand(command).mi.endsWith('&"')).toBe(false);
  });

  it('matches the first word exactly, not its case', () => {
    expect(isExecCliCommand('RUN')).toBe(false);
    expect(isExecCliCommand('Continue')).toBe(false);
  });
});

describe('toMiCommand: invalid input', () => {
  it.each(['', ' ', '   ', '\t', ' \t \n ', '\n', '\r\n'])('refuses empty or whitespace-only %j', (raw) => {
    expect(invalid(raw).message).toBe(EMPTY_MESSAGE);
  });

  it.each(['print x\nprint y', 'print x\rprint y', 'print x\r\nprint y', '-break-insert main\n-exec-run', 'print "a\nb"', '12-break-insert main\nquit'])('refuses multi-line %j', (raw) => {
    expect(invalid(raw).message).toBe(MULTILINE_MESSAGE);
  });

  it('accepts a single line surrounded by newlines (trimmed first)', () => {
    expect(toMiCommand('\nprint x\n').mi).toBe(console_('print x'));
    expect(toMiCommand('\r\n-exec-run\r\n').mi).toBe('-exec-run');
  });
});

describe('toMiCommand: interrupt detection', () => {
  it.each([
    ['interrupt', console_('interrupt')],
    ['interrupt -a', console_('interrupt -a')],
    ['interrupt&', console_('interrupt&')],
    ['  interrupt  ', console_('interrupt')],
    ['-exec-interrupt', '-exec-interrupt'],
    ['-exec-interrupt --all', '-exec-interrupt --all'],
    ['-exec-interrupt --thread-group i1', '-exec-interrupt --thread-group i1'],
    ['5-exec-interrupt', '-exec-interrupt'],
  ])('%j is an interrupt', (raw, mi) => {
    expect(toMiCommand(raw)).toEqual({ mi, interrupt: true });
  });

  it('does not add "&" to interrupt', () => {
    expect(isExecCliCommand('interrupt')).toBe(false);
  });

  it.each(['interrupted', 'interrupts', 'info interrupt', 'print interrupt', '-exec-interrupted', '-exec-continue', 'echo interrupt', '-interrupt'])('%j is not an interrupt', (raw) => {
    expect(toMiCommand(raw).interrupt).toBe(false);
  });
});
