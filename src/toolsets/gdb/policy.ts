import path from 'node:path';
import { DebugkitError } from '../../core/errors.js';
import { resolveContained } from '../../core/paths.js';

/** What the operator lets a gdb session reach beyond the debugger itself. */
export interface GdbPolicy {
  /** Workspace root: files gdb reads or writes must be inside it unless allowShell. */
  root: string;
  /** gdb's working directory (inside root); relative file arguments resolve against it. */
  cwd: string;
  /** --allow-gdb-shell: shell, python, source, files outside root, remote targets, ... */
  allowShell: boolean;
  /** --allow-attach: attach to processes this session did not start. */
  allowAttach: boolean;
  /** Pids of programs this session started itself (attaching back to them is always allowed). */
  ownPids?: ReadonlySet<number>;
}

export class CommandRefusedError extends DebugkitError {
  override name = 'CommandRefusedError';
  constructor(message: string) {
    super('INVALID_ARGUMENT', message);
  }
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
type Rule = 'shell' | 'file' | 'attach' | 'quit' | 'nested' | 'args' | 'set';

/** GDB 13's top-level commands (and their aliases) that need more than "allowed". */
const CLI_RULES: Record<string, Rule> = {
  shell: 'shell', '!': 'shell', pipe: 'shell', '|': 'shell',
  python: 'shell', py: 'shell', 'python-interactive': 'shell', pi: 'shell',
  guile: 'shell', gu: 'shell', 'guile-repl': 'shell', gr: 'shell',
  source: 'shell', eval: 'shell', make: 'shell', edit: 'shell', compile: 'shell',
  define: 'shell', 'define-prefix': 'shell', document: 'shell', commands: 'shell', if: 'shell', while: 'shell', alias: 'shell',
  cd: 'shell', target: 'shell', 'new-ui': 'shell', 'interpreter-exec': 'shell', maintenance: 'shell', mt: 'shell',
  'jit-reader-load': 'shell', 'add-auto-load-safe-path': 'shell', 'add-auto-load-scripts-directory': 'shell',
  remote: 'shell', load: 'shell', path: 'shell',
  dump: 'file', append: 'file', restore: 'file', save: 'file', gcore: 'file', 'generate-core-file': 'file', tsave: 'file',
  file: 'file', 'exec-file': 'file', 'symbol-file': 'file', 'core-file': 'file', 'add-symbol-file': 'file',
  directory: 'file', dir: 'file', tty: 'file', record: 'file', rec: 'file', 'add-inferior': 'file',
  attach: 'attach',
  quit: 'quit', exit: 'quit', q: 'quit',
  thread: 'nested', t: 'nested', frame: 'nested', f: 'nested', faas: 'nested', taas: 'nested', tfaas: 'nested', with: 'nested', w: 'nested',
  run: 'args', r: 'args', start: 'args', starti: 'args',
  set: 'set',
};

/** Exact GDB commands and aliases that are prefixes of a name above but are themselves harmless. */
const SAFE_EXACT = new Set(['c', 'd', 'do', 'i', 'j', 'l', 'n', 'p', 's']);

/** Settings that reach the host: [words of the setting, rule, index of the file argument]. */
const SETTINGS: Array<{ words: string[]; rule: 'shell' | 'file' | 'args' }> = [
  { words: ['logging', 'file'], rule: 'file' },
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
  { words: ['solib-search-path'], rule: 'shell' },
  { words: ['debug-file-directory'], rule: 'shell' },
  { words: ['data-directory'], rule: 'shell' },
  { words: ['python'], rule: 'shell' },
  { words: ['guile'], rule: 'shell' },
  { words: ['script-extension'], rule: 'shell' },
  { words: ['substitute-path'], rule: 'shell' },
  { words: ['directories'], rule: 'file' },
];

/** MI commands that need more than "allowed"; MI names are exact (no abbreviations). */
const MI_RULES: Record<string, Rule | 'interpreter' | 'break-commands'> = {
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
};

const SHELL_FLAG = '--allow-gdb-shell';
const ATTACH_FLAG = '--allow-attach';
/** What /bin/sh would treat as more than words when gdb starts the program through it. */
const SHELL_SYNTAX = /[`$;|&<>()\n]/;

/** Throws CommandRefusedError when the operator's policy does not allow `command` (one CLI or MI line). */
export function checkCommand(command: string, policy: GdbPolicy): void {
  const text = command.trim().replace(/^\d+(?=-)/, '');
  // GDB 14 and later evaluate $_shell("cmd") in any expression (print, condition, set var, ...).
  if (!policy.allowShell && /\$_shell\b/.test(text)) refuse('"$_shell" runs a host command from an expression', SHELL_FLAG);
  if (text.startsWith('-')) checkMi(text, policy, 0);
  else checkCli(text, policy, 0);
}

function checkCli(text: string, policy: GdbPolicy, depth: number): void {
  if (depth > 8) refuse(`"${text}" nests commands too deeply`);
  const { word, rest } = splitCommand(text);
  if (!word) return;
  // "info" and its aliases: "i", "inf" (GDB's own alias), "info".
  if (word === 'i' || word === 'inf' || word === 'info') return checkInfo(rest, policy);
  const [name, rule] = resolve(word);
  if (!rule) return;
  switch (rule) {
    case 'shell':
      if (!policy.allowShell) refuse(`"${name}" runs outside the debugger (host commands, scripts or other machines)`, SHELL_FLAG);
      return;
    case 'quit':
      refuse(`"${name}" would end gdb behind the session's back: use the close tool to end the session`);
      return;
    case 'attach':
      checkAttach(rest, policy);
      return;
    case 'args':
      checkArgs(name, rest.replace(/\s*&\s*$/, ''), policy);
      return;
    case 'file':
      checkFileCommand(name, rest, policy);
      return;
    case 'set':
      checkSetting(rest, policy, 'set');
      return;
    case 'nested':
      checkNested(name, rest, policy, depth);
      return;
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
  const order: Rule[] = ['shell', 'quit', 'attach', 'file', 'args', 'set', 'nested'];
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

function checkNested(name: string, rest: string, policy: GdbPolicy, depth: number): void {
  if (name === 'with' || name === 'w') {
    const sep = rest.indexOf('--');
    checkSetting(sep === -1 ? rest : rest.slice(0, sep), policy, 'with');
    if (sep !== -1) checkCli(rest.slice(sep + 2), policy, depth + 1);
    return;
  }
  const tokens = rest.split(/\s+/).filter(Boolean);
  let i = 0;
  if (name === 'thread' || name === 't' || name === 'frame' || name === 'f') {
    // Only "apply" runs a command; "thread 2", "frame 1", "frame function f" do not.
    if (tokens.length === 0 || !'apply'.startsWith(tokens[0]!.toLowerCase()) || tokens[0]!.length < 1) return;
    i = 1;
    // The thread/frame selection: ids, ranges, "all", "level 1-3", counts, and options.
    while (i < tokens.length && /^(all|level|-?\d[\d.\-]*|\$\w+|-\S+)$/i.test(tokens[i]!)) i++;
  } else {
    while (i < tokens.length && tokens[i]!.startsWith('-')) i++;
  }
  const inner = tokens.slice(i).join(' ');
  if (inner) checkCli(inner, policy, depth + 1);
}

function checkSetting(rest: string, policy: GdbPolicy, via: string): void {
  const tokens = rest.split(/\s+/).filter(Boolean);
  for (const setting of SETTINGS) {
    const n = setting.words.length;
    if (tokens.length < n) continue;
    // GDB takes unique prefixes of each word ("set logg f"); a prefix is taken as the setting.
    if (!setting.words.every((w, k) => tokens[k]!.length > 0 && w.startsWith(tokens[k]!.toLowerCase()))) continue;
    const name = `${via} ${setting.words.join(' ')}`;
    const value = tokens.slice(n).join(' ');
    if (setting.rule === 'shell' && !policy.allowShell) refuse(`"${name}" reaches outside the debugger`, SHELL_FLAG);
    if (setting.rule === 'file') checkPath(name, value, policy);
    if (setting.rule === 'args') checkArgs(name, value, policy);
  }
}

/** Program arguments go through /bin/sh: plain words pass; expansions, redirections and command lists need the flag. */
function checkArgs(name: string, args: string, policy: GdbPolicy): void {
  if (policy.allowShell || !SHELL_SYNTAX.test(args)) return;
  refuse(
    `"${name}" with shell syntax in the program arguments (${JSON.stringify(args)}): gdb starts the program through /bin/sh, which would run it. ` +
      'Pass arguments with open {"args": [...]}, which quotes each one',
    SHELL_FLAG,
  );
}

/**
 * `info os` reads the host's tables (every process with its command line, open files, sockets);
 * `info proc [what] PID` reads another process's /proc entries (command line, cwd, exe, maps,
 * status). Without a PID it shows the session's own program, which is allowed, as is a PID of a
 * program the session started.
 */
function checkInfo(rest: string, policy: GdbPolicy): void {
  const tokens = rest.split(/\s+/).filter(Boolean);
  const sub = (tokens[0] ?? '').toLowerCase();
  // GDB resolves "info o" and "info os" to `info os`; "proc" needs at least "proc" (pr/pro are ambiguous there).
  if (sub !== '' && 'os'.startsWith(sub)) {
    const what = `info os ${tokens.slice(1).join(' ')}`.trim();
    if (!policy.allowShell) refuse(`"${what}": it reads the host's process, file and socket tables`, SHELL_FLAG);
    return;
  }
  if (!(sub.length >= 4 && 'proc'.startsWith(sub))) return;
  if (policy.allowAttach) return;
  const pid = tokens.slice(1).find((t) => /^\d+$/.test(t));
  if (pid === undefined || policy.ownPids?.has(Number(pid))) return;
  refuse(`"info proc ${tokens.slice(1).join(' ')}": it reads /proc of process ${pid}, which this session did not start`, ATTACH_FLAG);
}

function checkAttach(rest: string, policy: GdbPolicy): void {
  if (policy.allowAttach) return;
  const pid = Number(rest.trim().split(/\s+/)[0]);
  if (Number.isInteger(pid) && policy.ownPids?.has(pid)) return;
  refuse(`"attach ${rest.trim()}": attaching to a process this session did not start`, ATTACH_FLAG);
}

/** Commands whose argument is a host path; the path is the first word that is not a subcommand or option. */
const FILE_SUBCOMMANDS = new Set(['binary', 'ihex', 'srec', 'tekhex', 'verilog', 'value', 'memory', 'breakpoints', 'gdb-index', 'tracepoints', 'save', 'full', '-r', '-readnow', '-dwarf-5', '-no-copy', '-exec', '--exec', '-copies', '-no-connection', '-o']);

function checkFileCommand(name: string, rest: string, policy: GdbPolicy): void {
  const tokens = splitArgs(rest);
  if (name === 'record' || name === 'rec') {
    // Only "record save FILE" writes a file; other record subcommands stay in the debugger.
    if (tokens.length === 0 || !(tokens[0]!.length >= 2 && 'save'.startsWith(tokens[0]!))) return;
    return checkPath('record save', tokens[1] ?? '', policy);
  }
  if (name === 'add-inferior' || name === '-add-inferior') {
    const at = tokens.findIndex((t) => t === '-exec' || t === '--exec');
    if (at !== -1) checkPath(name, tokens[at + 1] ?? '', policy);
    return;
  }
  if (name === 'save') {
    if (tokens.length === 0) return;
    return checkPath(`save ${tokens[0]}`, tokens[1] ?? '', policy);
  }
  if (name === 'directory' || name === 'dir' || name === '-environment-directory') {
    for (const dir of tokens.filter((t) => !t.startsWith('-'))) for (const part of dir.split(':')) checkPath(name, part, policy);
    return;
  }
  const file = tokens.find((t) => !FILE_SUBCOMMANDS.has(t.toLowerCase()) && !/^-/.test(t));
  if (file !== undefined) checkPath(name, file, policy);
}

function checkPath(name: string, file: string, policy: GdbPolicy): void {
  if (policy.allowShell || file === '') return;
  const expanded = file.startsWith('~') ? path.join('/nonexistent-home', file.slice(1)) : file;
  try {
    resolveContained(policy.root, path.resolve(policy.cwd, expanded), { mustExist: false, what: `"${name}" file` });
  } catch (err) {
    if (err instanceof DebugkitError && err.code === 'PATH_OUTSIDE_ROOT') {
      refuse(`"${name} ${file}": the file is outside the workspace root ${policy.root}`, SHELL_FLAG);
    }
    throw err;
  }
}

function checkMi(text: string, policy: GdbPolicy, depth: number): void {
  if (depth > 8) refuse(`"${text}" nests commands too deeply`);
  const name = /^-[A-Za-z0-9_-]+/.exec(text)?.[0] ?? text;
  const rest = text.slice(name.length).trim();
  const rule = MI_RULES[name];
  if (!rule) return;
  // Options MI allows on any command ("--thread 1", "--frame 0") come first: skip them.
  let all = splitArgs(rest);
  while (/^--(thread|frame|thread-group|language)$/.test(all[0] ?? '')) all = all.slice(2);
  const args = all;
  switch (rule) {
    case 'interpreter': {
      const [interp, ...commands] = args;
      const target = (interp ?? '').toLowerCase();
      if (target === 'console') for (const c of commands) checkCli(c, policy, depth + 1);
      else if (/^mi\d?$/.test(target)) for (const c of commands) checkMi(c.trim(), policy, depth + 1);
      else if (!policy.allowShell) refuse(`"-interpreter-exec ${interp ?? ''}": only the console and mi interpreters are served`, SHELL_FLAG);
      return;
    }
    case 'break-commands':
      // -break-commands NUMBER "command" ...: each runs when the breakpoint is hit.
      for (const c of args.slice(1)) {
        if (c.startsWith('-')) checkMi(c, policy, depth + 1);
        else checkCli(c, policy, depth + 1);
      }
      return;
    case 'set':
      checkSetting(args.join(' '), policy, '-gdb-set');
      return;
    case 'shell':
      if (!policy.allowShell) refuse(`"${name}" reaches outside the debugger`, SHELL_FLAG);
      return;
    case 'attach':
      checkAttach(args.filter((a) => !a.startsWith('--')).join(' '), policy);
      return;
    case 'quit':
      refuse(`"${name}" would end gdb behind the session's back: use the close tool to end the session`);
      return;
    case 'args':
      checkArgs(name, rest, policy);
      return;
    case 'file':
      checkFileCommand(name, rest, policy);
      return;
    default:
      return;
  }
}

/** Splits MI/CLI arguments: words, and C strings in double quotes with backslash escapes. */
export function splitArgs(text: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    while (i < text.length && /\s/.test(text[i]!)) i++;
    if (i >= text.length) break;
    let word = '';
    if (text[i] === '"') {
      i++;
      while (i < text.length && text[i] !== '"') {
        if (text[i] === '\\' && i + 1 < text.length) {
          const next = text[i + 1]!;
          word += next === 'n' ? '\n' : next === 't' ? '\t' : next;
          i += 2;
        } else word += text[i++];
      }
      i++;
    } else {
      while (i < text.length && !/\s/.test(text[i]!)) word += text[i++];
    }
    out.push(word);
  }
  return out;
}

/** True for "attach PID" (any spelling GDB takes) and -target-attach: they answer with a stop. */
export function isAttachCommand(command: string): boolean {
  const text = command.trim().replace(/^\d+(?=-)/, '');
  const inner = /^-interpreter-exec\s+console\s+/.exec(text);
  if (inner) return splitArgs(text.slice(inner[0].length)).some((c) => isAttachCommand(c));
  if (text.startsWith('-')) return /^-target-attach\b/.test(text);
  const { word } = splitCommand(text);
  return word.length > 0 && resolve(word)[1] === 'attach';
}

/** True for "detach" (and its unique prefixes) and -target-detach. */
export function isDetachCommand(command: string): boolean {
  const text = command.trim().replace(/^\d+(?=-)/, '');
  if (text.startsWith('-')) return /^-target-detach\b/.test(text);
  const { word } = splitCommand(text);
  return word.length >= 3 && 'detach'.startsWith(word);
}

function refuse(what: string, flag?: string): never {
  const how = flag ? `; the operator can allow this by starting debugkit with ${flag}` : '';
  throw new CommandRefusedError(`refused: ${what}${how}`);
}
