// Issue 17, the attack on the finished change: gdb command spellings an attacker holding a `gdb`
// key (no gdb:shell, no gdb:attach) tried against the one classifier. Each "misread" case was run
// through the real gdb 13 in MI mode (as debugkit drives it, see test/attack-17.test.ts) and
// reached the host while the classifier said it needed nothing (refused since: MI strings read with
// gdb's escapes, thread ID lists, aliases from gdb's own command table, the MI allowlist); each
// "held" case was refused already. All stay as regression tests.
import { mkdirSync, mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { capabilityScopes, checkCommand, classifyCommand, type GdbPolicy } from './policy.js';

const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'debugkit-policy-attack-')));
mkdirSync(path.join(root, 'sub'));
const closed: GdbPolicy = { root, cwd: root, allowShell: false, allowAttach: false, ownPids: new Set([4242]) };

function verdict(command: string): string {
  try {
    checkCommand(command, closed);
    return 'allowed';
  } catch (err) {
    return (err as Error).message;
  }
}

/**
 * Spellings that leave the debugger and that the classifier reads as harmless today. MI c-strings
 * take octal escapes (gdb's mi_parse_escape: "\163hell" is "shell", "\041" is "!", "\073" is ";"),
 * which the classifier's splitArgs reads as the digits themselves; a thread ID list may be "1.*"
 * or "$var.*"; "expression" is gdb's alias of "compile"; "solib-absolute-prefix" of "sysroot".
 */
const MISREAD_SHELL: Array<[string, string]> = [
  ['-interpreter-exec console "\\163hell id"', 'MI octal escape spells "shell" (gdb ran it)'],
  ['-interpreter-exec console "\\041id"', 'MI octal escape spells "!" (gdb ran it)'],
  ['-interpreter-exec console "\\160ython import os"', 'MI octal escape spells "python"'],
  ['-interpreter-exec console "run \\073 id"', 'MI octal escape puts ";" into the program arguments /bin/sh reads'],
  ['-interpreter-exec mi "-interpreter-exec console \\"\\\\163hell id\\""', 'MI nesting MI with an octal escape'],
  ['interpreter-exec mi "-interpreter-exec console \\"\\\\163hell id\\""', 'CLI interpreter-exec nesting MI with an octal escape (gdb ran it)'],
  ['-break-commands 1 "\\163hell id"', 'breakpoint commands with an octal escape (gdb ran them at the stop)'],
  ['-data-evaluate-expression "$_sh\\145ll(\\"id\\")"', '$_shell (GDB 14+) hidden by an octal escape from the $_shell pattern'],
  ['thread apply 1.* shell id', 'thread ID list "1.*" (gdb ran the shell command)'],
  ['t a 1.* she id', 'thread ID list "1.*", abbreviated'],
  ['thread apply $i.* shell id', 'thread ID list "$i.*" with a convenience variable'],
  ['thread apply 1.1 1.* shell id', 'thread ID list ending in "1.*"'],
  ['expression code int x = 0;', '"expression" is gdb\'s alias of "compile" (runs gcc, injects code)'],
  ['expr code int x = 0;', '"expr" is a unique prefix of "expression"'],
  ['set solib-absolute-prefix /', '"solib-absolute-prefix" is gdb\'s alias of "sysroot"'],
  ['-gdb-set solib-absolute-prefix /', '"solib-absolute-prefix" through -gdb-set'],
];

/** Files outside the root that gdb writes or reads through spellings the classifier lets pass. */
const MISREAD_FILES: Array<[string, string]> = [
  ['-inferior-tty-set /tmp/victim', 'MI form of "set inferior-tty": the program\'s output overwrites the file (gdb did it)'],
  ['-interpreter-exec mi "-inferior-tty-set /tmp/victim"', '-inferior-tty-set nested'],
  ['-trace-save /tmp/victim', 'MI form of "tsave": creates or truncates the file even when it then fails (gdb did it)'],
  ['-trace-save -ctf /tmp/dir', '-trace-save -ctf creates a directory outside the root (gdb did it)'],
  ['record full restore /etc/passwd', 'opens a host file outside the root as a record log'],
  ['rec full restore /etc/passwd', 'the same, abbreviated'],
];

describe('attack 17: spellings the classifier misread when attacked (refused since)', () => {
  it.each(MISREAD_SHELL)('%j needs gdb:shell: %s', (command) => {
    expect(capabilityScopes(command, closed)).toContain('gdb:shell');
    expect(verdict(command)).toMatch(/^refused: .*--allow-gdb-shell/);
  });

  it.each(MISREAD_FILES)('%j needs gdb:shell (a file outside the root): %s', (command) => {
    expect(capabilityScopes(command, closed)).toContain('gdb:shell');
    expect(verdict(command)).toMatch(/^refused: .*--allow-gdb-shell/);
  });
});

/** Spellings tried that the classifier already refuses: kept so they stay refused. */
const HELD_SHELL = [
  'thread apply 1.1-1 shell id',
  'thread apply all -- shell id',
  'frame apply all -- shell id',
  'frame apply level 0 -q shell id',
  'faas -- shell id',
  'tfaas -q !id',
  'with print pretty -- | p 1 | sh',
  'w print pretty -- w print pretty -- shell id',
  'set startup-w on',
  'set exec-w sh',
  'set env BASH_ENV=x',
  'set auto-load safe-path /',
  'set debuginfod urls http://x',
  'set substitute-path /a /b',
  'set data-dir /tmp',
  'set sysr /',
  'set solib-search-path /tmp',
  'set debug-file-directory /tmp',
  '-gdb-set --thread 1 --frame 0 exec-wrapper sh',
  '-interpreter-exec "console" "shell id"',
  '-interpreter-exec CONSOLE "shell id"',
  '-interpreter-exec tui "x"',
  '-interpreter-exec mi1 "-environment-cd /"',
  '-interpreter-exec console "print 1" "shell id"',
  '-break-commands 1 "print 1" "-interpreter-exec console \\"shell id\\""',
  'interpreter-exec console "print 1" "she id"',
  'eval "echo %d", 1',
  'alias ls = shell ls',
  'def x',
  'source x',
  'pipe p 1 | id',
  '|p 1|id',
  'py 1',
  'gu 1',
  'compile code 1;',
  'mt info sections',
  'maint info sections',
  'new-ui console /dev/null',
  'target native',
  'jit-reader-load x.so',
  'add-auto-load-scripts-directory /tmp',
  'run `id`',
  'run $HOME',
  'run > out',
  'run < /etc/passwd',
  'r a b | c',
  'start ; id',
  'set args (id)',
  '-exec-arguments `id`',
  'info os',
  'i o',
  '-info-os',
  'print $_shell("id")',
  'call $_shell("id")',
  'break main if $_shell("id")',
  'dprintf main,"%d",$_shell("id")',
];

const HELD_FILES = [
  'tty /tmp/x',
  'set inferior-tty /tmp/x',
  'set logging file /tmp/x',
  'with logging file /tmp/x -- p 1',
  'set history filename /tmp/x',
  'set tdesc filename /etc/passwd',
  'set remotelogfile /tmp/x',
  'set index-cache directory /tmp',
  'set cwd /tmp',
  'set directories /tmp',
  'tsave /tmp/x',
  'record save /tmp/x',
  'rec sa /tmp/x',
  'gcore /tmp/x',
  'dump memory /tmp/x 0 1',
  'dump binary value ~/x 1',
  'append value /tmp/x 1',
  'restore /etc/passwd',
  'save breakpoints /tmp/x',
  'save gdb-index /tmp',
  'core /tmp/core',
  'core-file /tmp/core',
  'file "/bin/sh"',
  "file '/bin'/sh",
  'file /bin/s\\h',
  'symbol-file /bin/sh',
  'add-symbol-file /bin/sh 0',
  'exec-file /bin/sh',
  'directory /etc',
  'dir sub:/etc',
  'add-inferior -exec /bin/sh',
  '-file-exec-file /bin/sh',
  '-file-exec-and-symbols "/bin/sh"',
  '-file-symbol-file /bin/sh',
  '-environment-directory /etc',
  'file sub/../../x',
];

describe('attack 17: spellings tried that the classifier refuses (held)', () => {
  it.each([...HELD_SHELL, ...HELD_FILES])('%j needs gdb:shell', (command) => {
    expect(capabilityScopes(command, closed)).toContain('gdb:shell');
  });

  it.each([
    'info proc 1',
    'i proc environ 1',
    'info proc cmdline 1 ',
    'thread apply all info proc 1',
    'attach 1',
    'at 1',
    '-target-attach 1',
    '-target-attach --thread-group i1 1',
    'with print pretty -- attach 1',
  ])('%j needs gdb:attach', (command) => {
    expect(capabilityScopes(command, closed)).toContain('gdb:attach');
  });

  it('a command the classifier cannot read nests or runs out of depth: refused, not passed', () => {
    const deep = `${'thread apply all '.repeat(12)}print 1`;
    expect(classifyCommand(deep, closed).map((n) => n.capability)).toContain('shell');
  });

  it.each(['quit', 'exit', 'q', '-gdb-exit', 'with print pretty -- quit', 'thread apply all quit', '-interpreter-exec console "q"'])('%j is refused whatever the key', (command) => {
    expect(verdict(command)).toMatch(/use the close tool/);
  });
});
