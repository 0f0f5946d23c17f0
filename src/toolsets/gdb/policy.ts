import path from 'node:path';
import { DebugkitError } from '../../core/errors.js';
import { CheckedProgram, resolveContained, swappable } from '../../core/paths.js';
import { quoteMiString } from '../../core/mi/connection.js';
import { copyDebugFiles, coreMappedFiles, mappingOutside, outwardDebugLink } from '../../core/elf-core.js';

/**
 * What one gdb command reaches beyond the debugger. Each capability has one operator flag and one
 * key scope; a command runs only when the calling key holds the scope AND the flag is on. The
 * classifier below is the one place gdb syntax is read for this: the flag check (checkCommand)
 * and the scope check (capabilityScopes, asked by the call tool) both use it.
 */
export type Capability = 'shell' | 'attach';

/** The operator flag and the key scope that open each capability. */
export const CAPABILITIES: Record<Capability, { flag: string; scope: string }> = {
  shell: { flag: '--allow-gdb-shell', scope: 'gdb:shell' },
  attach: { flag: '--allow-attach', scope: 'gdb:attach' },
};

/** One thing a command needs: a capability, or `quit` (never allowed: the close tool ends sessions). */
export interface Need {
  capability: Capability | 'quit';
  /** What was found, for the refusal ("\"shell\" runs outside the debugger ..."). */
  what: string;
}

/** Where a session stands, for judging paths and pids. */
export interface CommandContext {
  /** Workspace root: files gdb reads or writes must be inside it, or the command needs `shell`. */
  root: string;
  /** gdb's working directory (inside root); relative file arguments resolve against it. */
  cwd: string;
  /**
   * The programs this session started itself (attaching back to them needs nothing): `has(pid)`
   * is true only while that pid is still the process the session started, never one that reused it.
   */
  ownPids?: { has(pid: number): boolean };
}

/** What the operator lets a gdb session reach beyond the debugger itself. */
export interface GdbPolicy extends CommandContext {
  /** --allow-gdb-shell: shell, python, source, files outside root, remote targets, ... */
  allowShell: boolean;
  /** --allow-attach: attach to processes this session did not start. */
  allowAttach: boolean;
  /** The API key whose session this is: private copies are counted against its bound (CheckedProgram). */
  key?: string;
}

export class CommandRefusedError extends DebugkitError {
  override name = 'CommandRefusedError';
  constructor(message: string) {
    super('INVALID_ARGUMENT', message);
  }
}

/** Everything `command` (one CLI or MI line) needs, in the order found; empty when it stays in the debugger. */
export function classifyCommand(command: string, context: CommandContext): Need[] {
  return classify(command, context).needs;
}

function classify(command: string, context: CommandContext): Classifier {
  const c = new Classifier(context);
  const text = command.trim().replace(/^\d+(?=-)/, '');
  if (text.startsWith('-')) c.mi(text, 0);
  else c.cli(text, 0);
  return c;
}

/**
 * Which of gdb's files a copy stands for (file, exec-file, symbol-file, core-file and their MI
 * forms): the program it runs, the main symbol file, the core. A copy is needed while one of them is it.
 */
export type FileSlot = 'exec' | 'symbols' | 'core';

/** The command to send gdb, and the private copy it reads instead of a workspace file (see prepareCommand). */
export interface PreparedCommand {
  command: string;
  /** The command may change what gdb's commands mean (Classifier.mayRedefine): later `shell` lines of the session are refused. */
  mayRedefine?: boolean;
  /** Close `program` once gdb has no use for it: once the `slots` it fills hold other files, or gdb has exited. */
  copy?: { program: CheckedProgram; slots: FileSlot[] };
}

/**
 * Open what was checked (issue 18): the classifier judges a file argument by its name, and gdb
 * opens that name itself later, so a writer who swaps the file or a directory on its way for a
 * link out of the root in between would have gdb use the file outside. The classifier therefore
 * also asks, of every file argument inside the root, whether any user other than debugkit's own
 * could make the name lead elsewhere (core/paths `swappable`: a link on the way, or a directory
 * on the way that others may write). When none can, the command goes to gdb as written: a writer
 * who could swap the file runs as debugkit's user or root and could read or write it anyway, so
 * racing gains nothing (onlyOwnUserWrites). Except a file gdb reads, which is judged by its
 * content (a core's mapped files, a program's debug links): it goes to gdb as a private copy,
 * judged itself, wherever it is, since its writer may be debugkit's own user (attack atk-p P10),
 * and a reading command no copy can stand for (add-symbol-file, a read nested or quoted) needs
 * `shell` wherever it is. When one can:
 * - a file gdb reads, given as the one plain argument of file, exec-file, symbol-file, core-file,
 *   -file-exec-and-symbols, -file-exec-file or -file-symbol-file sent as a command of its own, is
 *   opened here (checked inside the root, then judged by what was opened) and copied to a private
 *   directory (core/paths CheckedProgram), and gdb is sent the same command naming the copy: it
 *   reads, and each `run` executes, the checked file whatever the name leads to by then. The copy
 *   is needed as long as gdb uses that file (`copy.slots`);
 * - any other file use (files gdb writes: dump, append, save, gcore, tsave, record save, set
 *   logging/history/remotelogfile; directories it searches or works in: directory, set
 *   directories, set cwd, tty, complete; a read nested in another command or spelled with quotes,
 *   options with values or several files; and a file gdb writes under a default name in its
 *   working directory: gcore, record save, set logging enabled) needs `shell`, like a file outside
 *   the root: it is refused unless the operator gives --allow-gdb-shell and the key gdb:shell.
 *   A command run later (-break-commands) is judged when it is set: no other user can turn a
 *   directory closed to them into one they can write.
 * Throws CommandRefusedError as checkCommand does (this is checkCommand, for a command to send),
 * and for a need beyond `checkedScopes` (what the caller's key was checked for, when it was);
 * NOT_FOUND or PATH_OUTSIDE_ROOT when the file to copy cannot be opened inside the root.
 * Held by test/open-races.test.ts ("gdb commands naming files").
 */
export async function prepareCommand(command: string, policy: GdbPolicy, checkedScopes?: readonly string[]): Promise<PreparedCommand> {
  // One reading for both: judged twice, a file swapped in between could pass the flags as a plain
  // file and then be sent by name, unjudged, as a link.
  const { needs, copy: read, mayRedefine } = classify(command, policy);
  refuseUnopened(needs, policy);
  // The key's scopes were checked on an earlier reading (capabilityScopes): a file swapped since may
  // make the command reach further, which that check did not allow, whatever the flags say.
  const beyond = checkedScopes && needs.find((n) => n.capability !== 'quit' && !checkedScopes.includes(CAPABILITIES[n.capability].scope));
  if (beyond) throw new CommandRefusedError(`refused: ${beyond.what}; it reaches further than when the call's scopes were checked (a file changed meanwhile)`);
  if (!read) return { command, mayRedefine };
  const core = read.slots.includes('core');
  // Always a copy: what is judged (a core's mapped files, a program's debug links) must be what gdb reads (attack atk-p P10).
  const program = await CheckedProgram.open(policy.root, path.resolve(policy.cwd, read.file), `"${read.name}" file`, { copy: true, key: policy.key });
  if (core) {
    try {
      await refuseOutsideMappings(program.path, read.file, policy, checkedScopes);
    } catch (err) {
      program.close();
      throw err;
    }
  } else await judgeProgramCopy(program, `"${read.name} ${read.file}"`, policy, checkedScopes);
  return { command: read.command(program.path), copy: { program, slots: read.slots }, mayRedefine };
}

/**
 * A core whose NT_FILE note names a file outside the root would have gdb open that file and serve
 * the memory of its range from it (`x/s` then prints it): that is reading outside the root, and
 * needs what any file outside the root needs.
 */
async function refuseOutsideMappings(copy: string, shown: string, policy: GdbPolicy, checkedScopes?: readonly string[]): Promise<void> {
  let why: string | undefined;
  try {
    const outside = await mappingOutside((await coreMappedFiles(copy)) ?? [], policy.root);
    if (outside !== undefined) why = `the core maps ${outside}, outside the workspace root, which gdb would read into its memory`;
  } catch (err) {
    why = `the core's list of mapped files cannot be checked: ${(err as Error).message}`;
  }
  if (why) refuseReach(`"core-file ${shown}": ${why}`, policy, checkedScopes);
}

/**
 * A program whose `.gnu_debuglink` names its debug file by a path (`../../outside/p.debug`), not a
 * file name: gdb would follow it out of the program's directory and read what it leads to as debug
 * information (or a device forever). It needs what reading outside the root needs. (attack 18r I1)
 */
export async function refuseDebugLinkOut(file: string, shown: string, policy: GdbPolicy, checkedScopes?: readonly string[]): Promise<void> {
  const outward = await outwardDebugLink(file, policy.root);
  if (outward) refuseReach(`${shown} ${outward}`, policy, checkedScopes);
}

/**
 * A program's private copy (CheckedProgram.open with `copy`) made ready for gdb: its debug links
 * judged on the copy itself, which is what gdb reads (attack atk-p P10), and the debug files gdb
 * would find by plain name beside the program brought beside the copy, each checked
 * (copyDebugFiles): gdb looks only beside the copy, never at a workspace name that a link there
 * could lead out of the root or to a device (attack atk-p P3). Closes the copy when refused.
 */
export async function judgeProgramCopy(program: CheckedProgram, shown: string, policy: GdbPolicy, checkedScopes?: readonly string[]): Promise<void> {
  try {
    await refuseDebugLinkOut(program.path, shown, policy, checkedScopes);
    const why = await copyDebugFiles(program.path, program.real, policy.root);
    // Allowed to reach out (shell): the file is simply not there for gdb to find.
    if (why) refuseReach(`${shown} ${why}`, policy, checkedScopes);
  } catch (err) {
    program.close();
    throw err;
  }
}

/**
 * Once a core is loaded: the shared libraries gdb opened for it (`files`, as gdb found them) were
 * named by the core's memory (its link map), not its notes, and gdb serves memory from them as
 * from mapped files: they must pass the same rule, or need what reading outside the root needs.
 */
export async function refuseOutsideLibraries(files: readonly string[], policy: GdbPolicy, checkedScopes?: readonly string[]): Promise<void> {
  const outside = await mappingOutside(files, policy.root);
  if (outside !== undefined) refuseReach(`the core names ${outside} as a shared library, outside the workspace root, which gdb would read into its memory`, policy, checkedScopes);
}

/** Refuses what reaches outside the root unless the operator's flag and the key's scopes both allow it. */
function refuseReach(what: string, policy: GdbPolicy, checkedScopes?: readonly string[]): void {
  const need: Need = { capability: 'shell', what };
  refuseUnopened([need], policy);
  if (checkedScopes && !checkedScopes.includes(CAPABILITIES.shell.scope)) throw new CommandRefusedError(`refused: ${need.what}; the key needs the ${CAPABILITIES.shell.scope} scope`);
}

/** Throws CommandRefusedError when the operator's flags do not allow `command`: the first need they do not open. */
export function checkCommand(command: string, policy: GdbPolicy): void {
  refuseUnopened(classifyCommand(command, policy), policy);
}

function refuseUnopened(needs: Need[], policy: GdbPolicy): void {
  for (const need of needs) {
    if (need.capability === 'quit') throw new CommandRefusedError(`refused: ${need.what}`);
    if (!flagAllows(policy, need.capability)) {
      throw new CommandRefusedError(`refused: ${need.what}; the operator can allow this by starting debugkit with ${CAPABILITIES[need.capability].flag}`);
    }
  }
}

/**
 * The key scopes `command` needs, sorted, without repeats. They are checked before the flags (a
 * key without the scope is refused -32003 whatever the flags, and the attempt is audited as
 * denied); a key with them still needs the operator's flag (checkCommand).
 */
export function capabilityScopes(command: string, context: CommandContext): string[] {
  const scopes = new Set<string>();
  for (const need of classifyCommand(command, context)) if (need.capability !== 'quit') scopes.add(CAPABILITIES[need.capability].scope);
  return [...scopes].sort();
}

function flagAllows(policy: GdbPolicy, capability: Capability): boolean {
  return capability === 'shell' ? policy.allowShell : policy.allowAttach;
}

/**
 * How a command is treated:
 * - shell: leaves the debugger (runs host programs or scripts, reads command files, talks to other
 *   machines); needs --allow-gdb-shell.
 * - file: takes a host path (argument `fileArg`); the path must be inside the root unless --allow-gdb-shell.
 * - attach: needs --allow-attach unless the pid is the session's own program.
 * - quit: refused: the session ends with the close tool.
 * - nested: runs another command (thread apply, frame apply, with, faas, ...): that one is classified.
 * - args: program arguments, which gdb hands to /bin/sh: shell syntax needs --allow-gdb-shell.
 * - set: a setting: classified by the setting's name.
 */
type Rule = 'shell' | 'file' | 'attach' | 'quit' | 'nested' | 'args' | 'set' | 'complete';

/** GDB 13's top-level commands (and their aliases) that need more than "allowed". */
const CLI_RULES: Record<string, Rule> = {
  shell: 'shell',
  '!': 'shell',
  pipe: 'shell',
  '|': 'shell',
  python: 'shell',
  py: 'shell',
  'python-interactive': 'shell',
  pi: 'shell',
  guile: 'shell',
  gu: 'shell',
  'guile-repl': 'shell',
  gr: 'shell',
  source: 'shell',
  eval: 'shell',
  make: 'shell',
  edit: 'shell',
  compile: 'shell',
  expression: 'shell',
  // Read the lines that follow as commands or answers (they would take debugkit's next commands), or run Python.
  actions: 'shell',
  'while-stepping': 'shell',
  stepping: 'shell',
  ws: 'shell',
  explore: 'shell',
  // Talk to a remote target's monitor or flash.
  monitor: 'shell',
  'flash-erase': 'shell',
  define: 'shell',
  'define-prefix': 'shell',
  document: 'shell',
  commands: 'shell',
  if: 'shell',
  while: 'shell',
  alias: 'shell',
  cd: 'shell',
  target: 'shell',
  'new-ui': 'shell',
  'interpreter-exec': 'shell',
  maintenance: 'shell',
  mt: 'shell',
  'jit-reader-load': 'shell',
  'add-auto-load-safe-path': 'shell',
  'add-auto-load-scripts-directory': 'shell',
  remote: 'shell',
  load: 'shell',
  path: 'shell',
  dump: 'file',
  append: 'file',
  restore: 'file',
  save: 'file',
  gcore: 'file',
  'generate-core-file': 'file',
  tsave: 'file',
  file: 'file',
  'exec-file': 'file',
  'symbol-file': 'file',
  'core-file': 'file',
  'add-symbol-file': 'file',
  directory: 'file',
  dir: 'file',
  tty: 'file',
  record: 'file',
  rec: 'file',
  'add-inferior': 'file',
  attach: 'attach',
  quit: 'quit',
  exit: 'quit',
  q: 'quit',
  thread: 'nested',
  t: 'nested',
  frame: 'nested',
  f: 'nested',
  faas: 'nested',
  taas: 'nested',
  tfaas: 'nested',
  with: 'nested',
  w: 'nested',
  // Completing a command's arguments reads what the command would (file names list host directories).
  complete: 'complete',
  run: 'args',
  r: 'args',
  start: 'args',
  starti: 'args',
  set: 'set',
};

/** Exact GDB commands and aliases that are prefixes of a name above but are themselves harmless. */
const SAFE_EXACT = new Set(['c', 'd', 'do', 'i', 'j', 'l', 'n', 'p', 's', 'step']);

/** Settings that reach the host: the words of the setting (each may be given as a prefix) and its rule. */
const SETTINGS: Array<{ words: string[]; rule: 'shell' | 'file' | 'args' | 'cwd-file' }> = [
  { words: ['logging', 'file'], rule: 'file' },
  // Logging writes gdb.txt in gdb's working directory unless a file was set (checked when it was).
  { words: ['logging', 'enabled'], rule: 'cwd-file' },
  { words: ['logging', 'on'], rule: 'cwd-file' },
  { words: ['history', 'filename'], rule: 'file' },
  { words: ['cwd'], rule: 'file' },
  { words: ['inferior-tty'], rule: 'file' },
  { words: ['args'], rule: 'args' },
  { words: ['exec-wrapper'], rule: 'shell' },
  // The program's environment runs code before main (LD_PRELOAD, BASH_ENV read by the start-up shell).
  { words: ['environment'], rule: 'shell' },
  { words: ['startup-with-shell'], rule: 'shell' },
  { words: ['auto-load'], rule: 'shell' },
  { words: ['debuginfod'], rule: 'shell' },
  { words: ['remote'], rule: 'shell' },
  { words: ['sysroot'], rule: 'shell' },
  { words: ['solib-absolute-prefix'], rule: 'shell' },
  // Where gdb looks for libthread_db, which it loads into itself.
  { words: ['libthread-db-search-path'], rule: 'shell' },
  { words: ['solib-search-path'], rule: 'shell' },
  { words: ['debug-file-directory'], rule: 'shell' },
  { words: ['data-directory'], rule: 'shell' },
  { words: ['python'], rule: 'shell' },
  { words: ['guile'], rule: 'shell' },
  { words: ['script-extension'], rule: 'shell' },
  { words: ['substitute-path'], rule: 'shell' },
  { words: ['directories'], rule: 'file' },
  // Files gdb writes or reads where the setting says.
  // The index cache is written to a directory (by default ~/.cache/gdb) as soon as it is on.
  { words: ['index-cache'], rule: 'shell' },
  { words: ['remotelogfile'], rule: 'file' },
  { words: ['tdesc', 'filename'], rule: 'file' },
];

/** gdb's exact aliases of settings that would otherwise read as a prefix of a restricted one. */
const SETTING_ALIASES: Record<string, string> = { c: 'check', ch: 'check', g: 'gnutarget', p: 'print', pr: 'print' };

/** MI commands that need more than "allowed"; MI names are exact (no abbreviations). */
const MI_RULES: Record<string, Exclude<Rule, 'nested'> | 'interpreter' | 'break-commands' | 'thread-groups'> = {
  '-interpreter-exec': 'interpreter',
  '-break-commands': 'break-commands',
  '-gdb-set': 'set',
  '-environment-cd': 'shell',
  '-environment-path': 'shell',
  '-target-select': 'shell',
  '-target-download': 'shell',
  '-target-file-put': 'shell',
  '-target-file-get': 'shell',
  '-target-file-delete': 'shell',
  '-target-attach': 'attach',
  '-gdb-exit': 'quit',
  '-exec-arguments': 'args',
  '-environment-directory': 'file',
  '-file-exec-and-symbols': 'file',
  '-file-exec-file': 'file',
  '-file-symbol-file': 'file',
  '-add-inferior': 'file',
  // The host's process, file, socket and IPC tables (what `info os` shows).
  '-info-os': 'shell',
  '-list-thread-groups': 'thread-groups',
  // The program's terminal: its output goes to that file.
  '-inferior-tty-set': 'file',
  // Writes the trace data to a file or (-ctf) a directory.
  '-trace-save': 'file',
  // Takes a Python expression that gdb evaluates.
  '-var-set-visualizer': 'shell',
  '-target-flash-erase': 'shell',
  // Completes a CLI command: read as that command (completing file names lists host directories).
  '-complete': 'complete',
};

/**
 * GDB 13's other MI commands (every one `-info-gdb-mi-command` knows, less those above): they act
 * on the debugger and its program only. An MI command in neither table needs `shell`, so one a
 * later gdb adds is refused until it has been read (policy.test.ts checks this list against gdb).
 */
export const MI_SAFE = new Set([
  '-ada-task-info',
  '-break-after',
  '-break-condition',
  '-break-delete',
  '-break-disable',
  '-break-enable',
  '-break-info',
  '-break-insert',
  '-break-list',
  '-break-passcount',
  '-break-watch',
  '-catch-assert',
  '-catch-exception',
  '-catch-handlers',
  '-catch-load',
  '-catch-unload',
  '-catch-throw',
  '-catch-catch',
  '-catch-rethrow',
  '-data-disassemble',
  '-data-evaluate-expression',
  '-data-list-changed-registers',
  '-data-list-register-names',
  '-data-list-register-values',
  '-data-read-memory',
  '-data-read-memory-bytes',
  '-data-write-memory',
  '-data-write-memory-bytes',
  '-data-write-register-values',
  '-dprintf-insert',
  '-enable-frame-filters',
  '-enable-pretty-printing',
  '-enable-timings',
  '-environment-pwd',
  '-exec-continue',
  '-exec-finish',
  '-exec-interrupt',
  '-exec-jump',
  '-exec-next',
  '-exec-next-instruction',
  '-exec-return',
  '-exec-run',
  '-exec-step',
  '-exec-step-instruction',
  '-exec-until',
  '-file-list-exec-source-file',
  '-file-list-exec-source-files',
  '-file-list-shared-libraries',
  '-fix-breakpoint-script-output',
  '-fix-multi-location-breakpoint-output',
  '-gdb-show',
  '-gdb-version',
  '-inferior-tty-show',
  '-info-ada-exceptions',
  '-info-gdb-mi-command',
  '-list-features',
  '-list-target-features',
  '-remove-inferior',
  '-stack-info-depth',
  '-stack-info-frame',
  '-stack-list-arguments',
  '-stack-list-frames',
  '-stack-list-locals',
  '-stack-list-variables',
  '-stack-select-frame',
  '-symbol-info-functions',
  '-symbol-info-module-functions',
  '-symbol-info-module-variables',
  '-symbol-info-modules',
  '-symbol-info-types',
  '-symbol-info-variables',
  '-symbol-list-lines',
  '-target-detach',
  '-target-disconnect',
  '-thread-info',
  '-thread-list-ids',
  '-thread-select',
  '-trace-define-variable',
  '-trace-find',
  '-trace-frame-collected',
  '-trace-list-variables',
  '-trace-start',
  '-trace-status',
  '-trace-stop',
  '-var-assign',
  '-var-create',
  '-var-delete',
  '-var-evaluate-expression',
  '-var-info-expression',
  '-var-info-num-children',
  '-var-info-path-expression',
  '-var-info-type',
  '-var-list-children',
  '-var-set-format',
  '-var-set-frozen',
  '-var-set-update-range',
  '-var-show-attributes',
  '-var-show-format',
  '-var-update',
]);

/** What /bin/sh would treat as more than words when gdb starts the program through it. */
const SHELL_SYNTAX = /[`$;|&<>()\n\r]/;

/** A pure option word ("-exec", "--readnow"): never a path. */
const OPTION_WORD = /^--?[A-Za-z][A-Za-z0-9-]*$/;

/**
 * Reads one command the way gdb does and collects what it needs. Nothing here depends on the
 * operator's flags or the key's scopes: those decide afterwards, from the needs.
 */
class Classifier {
  readonly needs: Need[] = [];
  /** The file a command of its own reads, where other users could swap it: what to send instead (prepareCommand). */
  copy: CopyableRead | undefined;
  /** CLI texts already read (the nested command scan reads suffixes of one line: each once). */
  private readonly read = new Set<string>();

  constructor(private readonly context: CommandContext) {}

  /**
   * Whether the command may change what gdb's commands mean (define, alias, Python, Guile, a
   * script, eval, another interpreter...): anything needing the shell capability but a plain
   * `shell`/`!` line and `$_shell`. After one, `shell` may be a user's command (prepareCommand).
   */
  mayRedefine = false;

  need(capability: Need['capability'], what: string, plainShell = false): void {
    if (capability === 'shell' && !plainShell) this.mayRedefine = true;
    this.needs.push({ capability, what });
  }

  /** GDB 14 and later evaluate $_shell("cmd") in any expression (print, condition, set var, ...). */
  private expressions(text: string): void {
    if (/\$_shell\b/.test(text)) this.need('shell', '"$_shell" runs a host command from an expression', true);
  }

  cli(text: string, depth: number): void {
    if (depth > 8) return this.need('shell', `"${text.slice(0, 80)}" nests commands too deeply`);
    if (this.read.has(text)) return;
    this.read.add(text);
    this.expressions(text);
    const { word, rest } = splitCommand(text);
    if (!word) return;
    // "info" and its aliases: "i", "inf" (GDB's own alias), "info".
    if (word === 'i' || word === 'inf' || word === 'info') return this.info(rest);
    const [name, rule] = resolve(word);
    if (!rule) return;
    switch (rule) {
      case 'shell':
        if (name === 'interpreter-exec') return this.interpreterExec(gdbArgv(rest), depth);
        return this.need('shell', `"${name}" runs outside the debugger (host commands, scripts or other machines)`, name === 'shell' || name === '!');
      case 'quit':
        return this.need('quit', `"${name}" would end gdb behind the session's back: use the close tool to end the session`);
      case 'attach':
        return this.attach(rest);
      case 'args':
        return this.args(name, rest.replace(/\s*&\s*$/, ''));
      case 'file':
        return this.fileCommand(name, rest, 'cli', depth);
      case 'set':
        return this.setting(rest, 'set');
      case 'nested':
        return this.nested(name, rest, depth);
      case 'complete':
        return this.cli(rest, depth + 1);
    }
  }

  mi(text: string, depth: number): void {
    if (depth > 8) return this.need('shell', `"${text.slice(0, 80)}" nests commands too deeply`);
    const name = /^-[A-Za-z0-9_-]+/.exec(text)?.[0] ?? text;
    const rest = text.slice(name.length).trim();
    // Options MI allows on any command ("--thread 1", "--frame 0") come first: skip them.
    let args = splitArgs(rest);
    for (const arg of args) this.expressions(arg);
    // MI's own options, taken before any command's arguments: --all alone, the others with a value.
    for (;;) {
      if (args[0] === '--all') args = args.slice(1);
      else if (/^--(thread|frame|thread-group|language)$/.test(args[0] ?? '')) args = args.slice(2);
      else break;
    }
    // MI commands are an allowlist: one this table does not know may do anything.
    if (MI_SAFE.has(name)) return;
    const rule = MI_RULES[name];
    if (!rule) return this.need('shell', `"${name}" is not an MI command debugkit knows to stay inside the debugger`);
    switch (rule) {
      case 'interpreter':
        return this.interpreterExec(args, depth);
      case 'break-commands':
        // -break-commands NUMBER "command" ...: each runs when the breakpoint is hit.
        for (const c of args.slice(1)) {
          if (c.trimStart().startsWith('-')) this.mi(c.trim(), depth + 1);
          else this.cli(c, depth + 1);
        }
        return;
      case 'set':
        return this.setting(args.join(' '), '-gdb-set');
      case 'shell':
        return this.need('shell', `"${name}" reaches outside the debugger`);
      case 'attach':
        return this.attach(args.filter((a) => !a.startsWith('--')).join(' '));
      case 'quit':
        return this.need('quit', `"${name}" would end gdb behind the session's back: use the close tool to end the session`);
      case 'args':
        return this.args(name, rest);
      case 'file':
        return this.fileCommand(name, rest, 'mi', depth);
      case 'complete':
        for (const c of args) this.cli(c, depth + 1);
        return;
      case 'thread-groups':
        // --available lists every process on the host with its command line (what `info os` shows).
        if (args.includes('--available')) this.need('shell', `"${name} --available" reads the host's process table`);
        return;
      default:
        return;
    }
  }

  /** `interpreter-exec INTERP CMD...` (CLI, arguments split as gdb's buildargv does) and MI `-interpreter-exec`. */
  private interpreterExec([interp, ...commands]: string[], depth: number): void {
    const target = (interp ?? '').toLowerCase();
    if (target === 'console') for (const c of commands) this.cli(c, depth + 1);
    else if (/^mi\d?$/.test(target)) for (const c of commands) this.mi(c.trim(), depth + 1);
    else this.need('shell', `"interpreter-exec ${interp ?? ''}": only the console and mi interpreters are served`);
  }

  private nested(name: string, rest: string, depth: number): void {
    if (name === 'with' || name === 'w') {
      // gdb splits at the first "--" anywhere in the line, as here.
      const sep = rest.indexOf('--');
      this.setting(sep === -1 ? rest : rest.slice(0, sep), 'with');
      if (sep !== -1) this.cli(rest.slice(sep + 2), depth + 1);
      return;
    }
    let selection = rest;
    if (name === 'thread' || name === 't' || name === 'frame' || name === 'f') {
      // Only "apply" runs a command; "thread 2", "frame 1", "frame function f" do not.
      const sub = /^[A-Za-z0-9_.-]*/.exec(rest)![0].toLowerCase();
      if (sub === '' || !'apply'.startsWith(sub)) return;
      selection = rest.slice(sub.length);
    }
    // What comes before the nested command (thread ids and lists like "1.*", "all", "level" and
    // its prefixes, options and their values, in any spelling gdb takes, glued or not) is not
    // parsed: the command may start at any place a command word can, and each is read as one.
    const starts = commandStarts(selection);
    if (starts.length > MAX_NESTED_STARTS) {
      return this.need('shell', `"${name} ${rest.slice(0, 80)}" is too long to read for the command it runs`);
    }
    for (const at of starts) this.cli(selection.slice(at), depth + 1);
  }

  private setting(rest: string, via: string): void {
    const words = wordsWithOffsets(rest);
    // An exact alias wins over prefixes in gdb ("set p" is "set print", not "set python").
    const first = SETTING_ALIASES[words[0]?.word.toLowerCase() ?? ''];
    const word = (k: number) => (k === 0 && first ? first : words[k]!.word.toLowerCase());
    for (const setting of SETTINGS) {
      const n = setting.words.length;
      if (words.length < n) continue;
      // GDB takes unique prefixes of each word ("set logg f"); a prefix is taken as the setting.
      if (!setting.words.every((w, k) => w.startsWith(word(k)))) continue;
      const name = `${via} ${setting.words.join(' ')}`;
      const value = words.length > n ? rest.slice(words[n]!.at).trim() : '';
      if (setting.rule === 'shell') this.need('shell', `"${name}" reaches outside the debugger`);
      if (setting.rule === 'file') this.paths(name, [value, ...pathWords(value, 'cli')], setting.words[0] === 'directories', undefined, value);
      if (setting.rule === 'args') this.args(name, value);
      if (setting.rule === 'cwd-file' && !/^(off|0|no|disable)$/i.test(value)) this.workingDirectoryFile(name, 'gdb.txt');
    }
  }

  /** Program arguments go through /bin/sh: plain words pass; expansions, redirections and command lists need `shell`. */
  private args(name: string, args: string): void {
    if (!SHELL_SYNTAX.test(args)) return;
    this.need(
      'shell',
      `"${name}" with shell syntax in the program arguments (${JSON.stringify(args)}): gdb starts the program through /bin/sh, which would run it. ` +
        'Pass arguments with open {"args": [...]}, which quotes each one',
    );
  }

  /**
   * `info os` reads the host's tables (every process with its command line, open files, sockets);
   * `info proc [what] PID` reads another process's /proc entries (command line, cwd, exe, maps,
   * status). Without a PID it shows the session's own program, as does a PID the session started.
   */
  private info(rest: string): void {
    const tokens = rest.split(/\s+/).filter(Boolean);
    const sub = (tokens[0] ?? '').toLowerCase();
    // GDB resolves "info o" and "info os" to `info os`; "proc" needs at least "proc" (pr/pro are ambiguous there).
    if (sub !== '' && 'os'.startsWith(sub)) {
      return this.need('shell', `"${`info os ${tokens.slice(1).join(' ')}`.trim()}": it reads the host's process, file and socket tables`);
    }
    if (!(sub.length >= 4 && 'proc'.startsWith(sub))) return;
    // Any word starting with a digit may be a pid to gdb (in decimal, octal "0..." or hex "0x...").
    const pid = tokens.slice(1).find((t) => /^\d/.test(t));
    if (pid === undefined || this.isOwn(pid)) return;
    this.need('attach', `"info proc ${tokens.slice(1).join(' ')}": it reads /proc of process ${pid}, which this session did not start`);
  }

  private attach(rest: string): void {
    if (this.isOwn(rest.trim().split(/\s+/)[0] ?? '')) return;
    this.need('attach', `"attach ${rest.trim()}": attaching to a process this session did not start`);
  }

  /**
   * Whether `word` names a program this session started. Only a plain decimal pid is taken: gdb
   * reads "0..." as octal and "0x..." as hex (strtol base 0), another process than the digits say.
   */
  private isOwn(word: string): boolean {
    return /^[1-9]\d{0,9}$/.test(word) && this.context.ownPids?.has(Number(word)) === true;
  }

  /**
   * Commands that take host paths. Every word that could be a path, as gdb's argument splitter
   * reads it (quotes and backslashes removed) and as written, must stay inside the root: which
   * word is the file differs by command and subcommand, and the other words (subcommands, numbers,
   * expressions) are relative names that pass.
   */
  private fileCommand(name: string, rest: string, syntax: 'cli' | 'mi', depth: number): void {
    const words = pathWords(rest, syntax);
    if (name === 'record' || name === 'rec') {
      // "record [full] save FILE" writes a file and "record full restore FILE" reads one; other
      // record subcommands ("record instruction-history /m") stay in the debugger.
      const subs = rest.trim().split(/\s+/);
      const at = subs.findIndex((w) => (w.length >= 2 && 'save'.startsWith(w.toLowerCase())) || (w.length >= 3 && 'restore'.startsWith(w.toLowerCase())));
      if (at === -1) return;
      const sub = `record ${subs.slice(0, at + 1).join(' ')}`;
      const files = pathWords(subs.slice(at + 1).join(' '), syntax);
      // Without a file, "record save" writes gdb_record.PID in gdb's working directory.
      if (!files.some((w) => !OPTION_WORD.test(w)) && subs[at]!.toLowerCase().startsWith('s')) return this.workingDirectoryFile(sub, 'gdb_record.PID');
      return this.paths(sub, files, false, undefined, subs.slice(at + 1).join(' '));
    }
    // Without a file, gcore writes core.PID in gdb's working directory.
    if ((name === 'gcore' || name === 'generate-core-file') && !words.some((w) => !OPTION_WORD.test(w))) return this.workingDirectoryFile(name, 'core.PID');
    const directories = name === 'directory' || name === 'dir' || name === '-environment-directory';
    this.paths(name, words, directories, depth === 0 ? copyableRead(name, rest, syntax) : undefined, rest.trim());
  }

  /**
   * Every word that may be a path must be inside the root, and lead there steadily (prepareCommand):
   * otherwise the command needs `shell`, unless `read` names the one file it reads, which a copy can stand for.
   */
  private paths(name: string, candidates: string[], colonLists: boolean, read?: CopyableRead, shown = candidates.join(' ')): void {
    let swapped: string | undefined;
    // Option words too: for some commands ("core-file -x", MI file commands) they are file names.
    for (const word of candidates) {
      for (const part of colonLists ? word.split(':') : [word]) {
        if (part === '') continue;
        if (!this.inside(name, part)) {
          return this.need('shell', `"${name} ${word}": the file is outside the workspace root ${this.context.root}`);
        }
        swapped ??= this.swappable(part);
      }
    }
    // A core lists files gdb maps into its memory and reads (NT_FILE), a program or symbol file the
    // debug files gdb reads with it (.gnu_debuglink, .gnu_debugaltlink): they are judged on a
    // private copy, the one gdb reads (anyone who may write the file, debugkit's own user
    // included, could rewrite it after a check of the workspace file; attack atk-p P10), which
    // only a command naming one plain file can be pointed at.
    const core = READS[name]?.includes('core') ?? false;
    const judged = core || ((READS[name] !== undefined || name === 'add-symbol-file') && candidates.some((w) => !OPTION_WORD.test(w)));
    if (!swapped && !judged) return;
    if (read) this.copy = read;
    else if (swapped) this.need('shell', `"${name} ${shown}": ${swapped}, so a writer there could swap a file it names for a link out of the workspace root between debugkit's check and gdb's use`);
    else
      this.need(
        'shell',
        `"${name} ${shown}": debugkit checks what a file makes gdb read (the files a core maps, a program's debug files) on a private copy of it, and this spelling names no one plain file to copy ` +
          "(give the file's name as one word, unquoted, to file, exec-file, symbol-file or core-file, or their MI forms)",
      );
  }

  /** A file gdb writes under a name of its own in its working directory: the directory must be steady. */
  private workingDirectoryFile(name: string, file: string): void {
    const swapped = this.swappable('.');
    if (swapped) this.need('shell', `"${name}" writes ${file} in gdb's working directory, and ${swapped}, so a writer there could put a link out of the workspace root in its place`);
  }

  /** Why another user could make `file` (as gdb reads it, against its working directory) lead elsewhere before gdb opens it. */
  private swappable(file: string): string | undefined {
    return swappable(path.isAbsolute(file) ? file : `${this.context.cwd}/${file}`);
  }

  private inside(name: string, file: string): boolean {
    // gdb expands "~" and "~user" to a home directory: never the root's.
    if (file.startsWith('~')) return false;
    try {
      resolveContained(this.context.root, path.resolve(this.context.cwd, file), { mustExist: false, what: `"${name}" file` });
      return true;
    } catch (err) {
      if (err instanceof DebugkitError && err.code === 'PATH_OUTSIDE_ROOT') return false;
      throw err;
    }
  }
}

/** Resolves the command word the way GDB does: exact names and aliases first, then unique prefixes. */
function resolve(word: string): [string, Rule | undefined] {
  const exact = CLI_RULES[word];
  if (exact) return [word, exact];
  if (SAFE_EXACT.has(word)) return [word, undefined];
  // A prefix of a listed command either resolves to it or is ambiguous in GDB (an error there):
  // either way it is treated as the listed command, the strictest rule first.
  const matches = Object.keys(CLI_RULES).filter((name) => name.startsWith(word));
  if (matches.length === 0) return [word, undefined];
  const order: Rule[] = ['shell', 'quit', 'attach', 'file', 'args', 'set', 'nested', 'complete'];
  matches.sort((a, b) => order.indexOf(CLI_RULES[a]!) - order.indexOf(CLI_RULES[b]!));
  return [matches[0]!, CLI_RULES[matches[0]!]];
}

/** GDB's command word: "!" and "|" stand alone; otherwise letters, digits, "-", "_" and ".". */
function splitCommand(text: string): { word: string; rest: string } {
  const trimmed = text.trimStart();
  if (trimmed.startsWith('!') || trimmed.startsWith('|')) return { word: trimmed[0]!, rest: trimmed.slice(1).trim() };
  const m = /^[A-Za-z0-9_.-]*/.exec(trimmed)!;
  return { word: m[0].toLowerCase(), rest: trimmed.slice(m[0].length).trim() };
}

/** A read a private copy can stand for: the file (as gdb reads it) and the command naming the copy instead. */
interface CopyableRead {
  name: string;
  file: string;
  command: (copy: string) => string;
  slots: FileSlot[];
}

/** Commands that read one file, and which of gdb's files it becomes. */
const READS: Record<string, FileSlot[]> = {
  file: ['exec', 'symbols'],
  'exec-file': ['exec'],
  'symbol-file': ['symbols'],
  'core-file': ['core'],
  '-file-exec-and-symbols': ['exec', 'symbols'],
  '-file-exec-file': ['exec'],
  '-file-symbol-file': ['symbols'],
};

/**
 * The one file a reading command names, when it is unambiguous under every reading: the MI forms
 * with one argument; the CLI forms with one plain word (no quotes or backslashes, which gdb's
 * splitter and core-file, which takes its whole argument as written, would read differently)
 * besides options without values (-readnow, -readnever). Otherwise undefined: no copy.
 */
function copyableRead(name: string, rest: string, syntax: 'cli' | 'mi'): CopyableRead | undefined {
  const slots = READS[name];
  if (!slots) return undefined;
  if (syntax === 'mi') {
    // These take exactly one argument, the file name, whatever it looks like.
    const args = splitArgs(rest);
    if (args.length !== 1 || args[0] === '') return undefined;
    return { name, file: args[0]!, slots, command: (copy) => `${name} ${quoteMiString(copy)}` };
  }
  if (/['"\\]/.test(rest)) return undefined;
  const words = rest.split(/\s+/).filter(Boolean);
  // core-file has no options: "-x" is a file; for the others it is an option, and -o takes a value.
  const files = name === 'core-file' ? words : words.filter((w) => !OPTION_WORD.test(w) || w === '-o');
  if (files.length !== 1 || (name !== 'core-file' && OPTION_WORD.test(files[0]!))) return undefined;
  const file = files[0]!;
  // core-file takes its argument as written; the others split it as gdb_argv does (a backslash keeps the next character).
  const quote = (copy: string) => (name === 'core-file' ? copy : copy.replace(/[\s'"\\]/g, '\\$&'));
  return { name, file, slots, command: (copy) => [name, ...words.map((w) => (w === file ? quote(copy) : w))].join(' ') };
}

/** At most this many places are read as a possible nested command of one thread/frame apply (or faas, ...). */
const MAX_NESTED_STARTS = 256;

/**
 * Every place in `text` where gdb could find a command word: a "!" or "|" anywhere (one-character
 * commands, which gdb reads even glued to a word: "all!id"), and a letter not inside a word (gdb's
 * command words are letters, digits, "-", "_" and "."; a letter after a digit, ".", "*", "$" or
 * punctuation may start one; after "-" it is an option's name).
 */
function commandStarts(text: string): number[] {
  const starts: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === '!' || ch === '|' || (/[A-Za-z]/.test(ch) && (i === 0 || !/[A-Za-z_-]/.test(text[i - 1]!)))) starts.push(i);
  }
  return starts;
}

/** Whitespace-separated words with where each starts, so the rest of a line can be taken as written. */
function wordsWithOffsets(text: string): Array<{ word: string; at: number }> {
  return [...text.matchAll(/\S+/g)].map((m) => ({ word: m[0], at: m.index! }));
}

/** The words of a file command's arguments under every reading gdb may give them: split as written, and dequoted. */
function pathWords(text: string, syntax: 'cli' | 'mi'): string[] {
  const raw = text.split(/\s+/).filter(Boolean);
  return [...new Set([...raw, ...gdbArgv(text), ...(syntax === 'mi' ? splitArgs(text) : [])])];
}

/** White space as C's isspace sees it (what gdb's argument splitters skip). */
function space(ch: string): boolean {
  return ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r' || ch === '\v' || ch === '\f';
}

/**
 * Splits a CLI command's arguments as gdb's `gdb_argv` (libiberty's buildargv) does, which `file`,
 * `exec-file`, `symbol-file`, `core-file`, `add-symbol-file`, `directory` and `interpreter-exec`
 * use: whitespace separates; a backslash takes the next character as it is, inside quotes too;
 * single and double quotes group and are removed.
 */
export function gdbArgv(text: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    while (i < text.length && space(text[i]!)) i++;
    if (i >= text.length) break;
    let arg = '';
    let single = false;
    let double = false;
    let escaped = false;
    for (; i < text.length; i++) {
      const ch = text[i]!;
      if (space(ch) && !single && !double && !escaped) break;
      if (escaped) {
        escaped = false;
        arg += ch;
      } else if (ch === '\\') escaped = true;
      else if (single) {
        if (ch === "'") single = false;
        else arg += ch;
      } else if (double) {
        if (ch === '"') double = false;
        else arg += ch;
      } else if (ch === "'") single = true;
      else if (ch === '"') double = true;
      else arg += ch;
    }
    out.push(arg);
  }
  return out;
}

/**
 * Splits MI arguments as gdb's MI parser (mi_parse_argv) does: an unquoted word runs to the next
 * white space as written; a quoted one is a C string whose backslash escapes gdb decodes with
 * mi_parse_escape: up to three octal digits ("\163" is "s"), \a \b \f \n \r \t \v, and any other
 * character taken as itself ("\"", "\\", "\e" is "e"). Read any other way, "\163hell" would hide
 * "shell" from the classifier.
 */
export function splitArgs(text: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    while (i < text.length && space(text[i]!)) i++;
    if (i >= text.length) break;
    let word = '';
    if (text[i] === '"') {
      i++;
      while (i < text.length && text[i] !== '"') {
        if (text[i] !== '\\' || i + 1 >= text.length) {
          word += text[i++];
          continue;
        }
        i++;
        const ch = text[i]!;
        if (ch >= '0' && ch <= '7') {
          const digits = /^[0-7]{1,3}/.exec(text.slice(i))![0];
          // gdb stores the value as a char: "\400" (256) is a NUL, which ends the string for gdb.
          word += String.fromCharCode(parseInt(digits, 8) & 0xff);
          i += digits.length;
          continue;
        }
        word += MI_ESCAPES[ch] ?? ch;
        i++;
      }
      i++;
    } else {
      while (i < text.length && !space(text[i]!)) word += text[i++];
    }
    // What gdb reads of an argument ends at its first NUL (a C string).
    const nul = word.indexOf('\0');
    out.push(nul === -1 ? word : word.slice(0, nul));
  }
  return out;
}

const MI_ESCAPES: Record<string, string> = { a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' };

/** True for "attach PID" (any spelling GDB takes) and -target-attach: they answer with a stop. */
export function isAttachCommand(command: string): boolean {
  const text = command.trim().replace(/^\d+(?=-)/, '');
  const inner = /^-interpreter-exec\s+console\s+/.exec(text);
  if (inner) return splitArgs(text.slice(inner[0].length)).some((c) => isAttachCommand(c));
  if (text.startsWith('-')) return /^-target-attach\b/.test(text);
  const { word } = splitCommand(text);
  return word.length > 0 && resolve(word)[1] === 'attach';
}

/**
 * True for a command that starts the program (again): "run", "start", "starti" (their aliases and
 * prefixes), -exec-run, and those sent through -interpreter-exec console.
 */
export function isStartCommand(command: string): boolean {
  const text = command.trim().replace(/^\d+(?=-)/, '');
  const inner = /^-interpreter-exec\s+console\s+/.exec(text);
  if (inner) return splitArgs(text.slice(inner[0].length)).some((c) => isStartCommand(c));
  if (text.startsWith('-')) return /^-exec-run\b/.test(text);
  const { word } = splitCommand(text);
  if (word.length === 0) return false;
  const name = resolve(word)[0];
  // `with SETTING [VALUE] -- COMMAND` runs COMMAND with the setting changed for it (split at the first "--", as gdb and the policy do).
  if (name === 'with' || name === 'w') {
    const sep = text.indexOf('--', word.length);
    return sep !== -1 && isStartCommand(text.slice(sep + 2));
  }
  return ['run', 'r', 'start', 'starti'].includes(name);
}

/** True for "detach" (and its unique prefixes) and -target-detach. */
export function isDetachCommand(command: string): boolean {
  const text = command.trim().replace(/^\d+(?=-)/, '');
  if (text.startsWith('-')) return /^-target-detach\b/.test(text);
  const { word } = splitCommand(text);
  return word.length >= 3 && 'detach'.startsWith(word);
}
