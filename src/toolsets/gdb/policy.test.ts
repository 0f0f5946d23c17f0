import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { capabilityScopes, checkCommand, classifyCommand, gdbArgv, isAttachCommand, isDetachCommand, isStartCommand, MI_SAFE, prepareCommand, splitArgs, type GdbPolicy } from './policy.js';
import { ALLOWED, FILES, SHELL } from './test-support.js';

const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'debugkit-policy-')));
mkdirSync(path.join(root, 'sub'));
const closed: GdbPolicy = { root, cwd: root, allowShell: false, allowAttach: false, ownPids: new Set([4242]) };
const open: GdbPolicy = { ...closed, allowShell: true, allowAttach: true };

function verdict(command: string, policy = closed): string {
  try {
    checkCommand(command, policy);
    return 'allowed';
  } catch (err) {
    return (err as Error).message;
  }
}

describe('gdb command policy (closed: the HTTP default)', () => {
  it.each(SHELL)('refuses %j, naming --allow-gdb-shell', (command) => {
    const message = verdict(command);
    expect(message).toMatch(/^refused: /);
    expect(message).toContain('--allow-gdb-shell');
  });

  it.each(FILES)('refuses %j (a host path outside the root), naming --allow-gdb-shell', (command) => {
    const message = verdict(command);
    expect(message).toMatch(/^refused: .*outside the workspace root/);
    expect(message).toContain('--allow-gdb-shell');
  });

  it.each(ALLOWED)('allows %j', (command) => {
    expect(verdict(command)).toBe('allowed');
  });

  it.each([
    'info proc 1',
    'info proc cmdline 1',
    'i proc mappings 1',
    'inf proc 77',
    'info proc all 1',
    'info proc cwd 01',
    'INFO PROC 1',
    'info\tproc  1',
    'i proc stat 1 ',
    'with print pretty -- info proc 1',
    '-interpreter-exec console "info proc environ 1"',
    'thread apply all info proc exe 1',
  ])("refuses %j (another process's /proc), naming --allow-attach", (command) => {
    const message = verdict(command);
    expect(message).toMatch(/^refused: "info proc .*reads \/proc of process \d+, which this session did not start/);
    expect(message).toContain('--allow-attach');
    expect(verdict(command, open)).toBe('allowed');
  });

  it.each(['attach 1', 'att 1', 'at 1', '-target-attach 1', '-interpreter-exec console "attach 1"', 'thread apply all attach 1'])('refuses %j, naming --allow-attach', (command) => {
    const message = verdict(command);
    expect(message).toMatch(/^refused: .*attach/);
    expect(message).toContain('--allow-attach');
  });

  it.each(['quit', 'q', 'exit', 'qui', '-gdb-exit', '-interpreter-exec console "quit"'])('refuses %j with "use close", even when open', (command) => {
    expect(verdict(command, open)).toMatch(/use the close tool/);
  });

  it('allows everything but quit with --allow-gdb-shell and --allow-attach', () => {
    for (const command of [...SHELL, ...FILES, 'attach 1', '-target-attach 1']) expect(verdict(command, open)).toBe('allowed');
  });

  it('recognises attach and detach spellings', () => {
    expect(['attach 1', 'att 1', '-target-attach 1', '5-target-attach 1', '-interpreter-exec console "attach 1"'].every(isAttachCommand)).toBe(true);
    expect(['break attach', 'p attach', '-target-detach'].some(isAttachCommand)).toBe(false);
    expect(['detach', 'det', 'deta', '-target-detach'].every(isDetachCommand)).toBe(true);
    expect(['delete', 'de', 'display'].some(isDetachCommand)).toBe(false);
  });
});

describe('one classifier for the flags and the scopes', () => {
  it.each([...SHELL, ...FILES])('%j needs gdb:shell (and the flag)', (command) => {
    expect(classifyCommand(command, closed).map((n) => n.capability)).toContain('shell');
    expect(capabilityScopes(command, closed)).toContain('gdb:shell');
    expect(capabilityScopes(command, closed)).not.toContain('gdb:attach');
  });

  it.each(['attach 1', 'at 1', '-target-attach 1', 'info proc 1', 'thread apply all attach 1', '-interpreter-exec console "attach 1"'])('%j needs gdb:attach (and the flag)', (command) => {
    expect(capabilityScopes(command, closed)).toEqual(['gdb:attach']);
    expect(verdict(command)).toContain('--allow-attach');
  });

  it.each(ALLOWED)('%j needs no capability', (command) => {
    expect(classifyCommand(command, closed)).toEqual([]);
    expect(capabilityScopes(command, open)).toEqual([]);
  });

  it('quit needs no scope: it is refused whatever the key', () => {
    expect(classifyCommand('quit', open)).toEqual([{ capability: 'quit', what: expect.stringContaining('use the close tool') }]);
    expect(capabilityScopes('quit', open)).toEqual([]);
  });

  it('splits arguments as gdb_argv does: quotes group and go, a backslash takes the next character', () => {
    expect(gdbArgv(`'/bin/sh' "a b" c\\ d 'it''s' \\'x e\\"`)).toEqual(['/bin/sh', 'a b', 'c d', 'its', "'x", 'e"']);
    expect(gdbArgv(`  one\ttwo  `)).toEqual(['one', 'two']);
    expect(gdbArgv(`'a\\'b'`)).toEqual(["a'b"]);
  });
});

describe('the classifier reads file arguments as the real gdb does', () => {
  // What gdb itself loads for each spelling: the classifier must see the same path.
  const loaded = (command: string) => execFileSync('gdb', ['-nx', '-batch', '-ex', command, '-ex', 'info inferiors'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

  it.each(["file '/bin/true'", 'file \\/bin/true', 'file "/bin/true"', "file '/bin'/true", "exec-file '/bin/true'"])('%j: gdb loads /bin/true, and the policy refuses it', (command) => {
    expect(loaded(command)).toMatch(/\/bin\/true/);
    expect(verdict(command)).toMatch(/^refused: .*outside the workspace root/);
  });
});

describe('the classifier resolves command words as the real gdb does', () => {
  // Every prefix of a command the policy restricts: gdb must resolve it to that command, call it
  // ambiguous, or resolve it to a command the policy knows is harmless (allowed above).
  const gdbHelp = (word: string) => execFileSync('gdb', ['-nx', '-batch', '-ex', `help ${word}`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).split('\n')[0]!;

  it('no prefix of shell, python, pipe, source, eval, define, attach or quit reaches gdb as something else', () => {
    const restricted = ['shell', 'pipe', 'python', 'source', 'eval', 'define', 'attach', 'quit', 'target', 'guile', 'make'];
    for (const name of restricted) {
      for (let n = 1; n <= name.length; n++) {
        const word = name.slice(0, n);
        const refused = verdict(`${word} 1`) !== 'allowed';
        let help: string;
        try {
          help = gdbHelp(word);
        } catch (err) {
          help = String((err as { stderr?: string }).stderr ?? err);
        }
        // gdb's answer for a word the policy lets through must not be the restricted command.
        if (!refused) expect({ word, help }).not.toEqual({ word, help: gdbHelp(name) });
      }
    }
  });
});

describe('the classifier knows every command of the installed gdb', () => {
  /** `help all`: "name, alias, alias -- doc" for every command and subcommand gdb has. */
  const entries = execFileSync('gdb', ['-nx', '-batch', '-ex', 'help all'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
    .split('\n')
    .filter((line) => line.includes(' -- '))
    .map((line) =>
      line
        .slice(0, line.indexOf(' -- '))
        .split(', ')
        .map((n) => n.trim()),
    );
  const topLevel = entries.filter((names) => !names[0]!.includes(' '));
  const needs = (command: string) => classifyCommand(command, closed).map((n) => n.capability);
  /** Whether the classifier restricts a command word, whatever its arguments (a path outside the root, shell syntax). */
  const restricted = (word: string) => needs(`${word} /outside/x $(id)`).length > 0;

  // Top-level commands read and found to stay in the debugger (or only to act on its program).
  // A gdb that adds a command fails this test until the command has been read and placed.
  const REVIEWED_SAFE = new Set([
    '+',
    '-',
    '<',
    '>',
    'add-symbol-file-from-memory',
    'advance',
    'agent-printf',
    'apropos',
    'awatch',
    'backtrace',
    'break',
    'break-range',
    'call',
    'catch',
    'checkpoint',
    'clear',
    'clone-inferior',
    'collect',
    'compare-sections',
    'complete',
    'condition',
    'continue',
    'delete',
    'demangle',
    'detach',
    'disable',
    'disassemble',
    'disconnect',
    'display',
    'dont-repeat',
    'down',
    'down-silently',
    'dprintf',
    'echo',
    'enable',
    'end',
    'find',
    'finish',
    'forward-search',
    'ftrace',
    'function',
    'handle',
    'hbreak',
    'help',
    'ignore',
    'inferior',
    'info',
    'init-if-undefined',
    'interrupt',
    'jit-reader-unload',
    'jump',
    'kill',
    'list',
    'macro',
    'mem',
    'memory-tag',
    'next',
    'nexti',
    'nosharedlibrary',
    'output',
    'overlay',
    'passcount',
    'print',
    'print-object',
    'printf',
    'ptype',
    'pwd',
    'queue-signal',
    'rbreak',
    'remove-inferiors',
    'remove-symbol-file',
    'restart',
    'return',
    'reverse-continue',
    'reverse-finish',
    'reverse-next',
    'reverse-nexti',
    'reverse-search',
    'reverse-step',
    'reverse-stepi',
    'rwatch',
    'section',
    'select-frame',
    'sharedlibrary',
    'show',
    'signal',
    'skip',
    'start',
    'starti',
    'step',
    'stepi',
    'stop',
    'strace',
    'task',
    'tbreak',
    'tcatch',
    'tdump',
    'teval',
    'tfind',
    'thbreak',
    'trace',
    'tstart',
    'tstatus',
    'tstop',
    'tui',
    'tvariable',
    'undisplay',
    'unset',
    'until',
    'up',
    'up-silently',
    'update',
    'watch',
    'whatis',
    'x',
  ]);

  it('every top-level command is restricted or has been read and found safe', () => {
    // run/start take arguments (restricted when they hold shell syntax); set/with/thread/frame/faas/... are read through.
    const readThrough = ['set', 'with', 'thread', 'frame', 'faas', 'taas', 'tfaas', 'record'];
    const unread = topLevel.map((names) => names[0]!).filter((name) => !REVIEWED_SAFE.has(name) && !readThrough.includes(name) && !restricted(name));
    expect(unread, 'commands neither restricted nor reviewed').toEqual([]);
  });

  it('every alias of a restricted command is restricted too', () => {
    const missed: string[] = [];
    for (const names of topLevel) {
      const [name, ...aliases] = names;
      if (REVIEWED_SAFE.has(name!)) continue;
      if (!restricted(name!)) continue;
      for (const alias of aliases) if (!restricted(alias)) missed.push(`${alias} (alias of ${name})`);
    }
    expect(missed).toEqual([]);
  });

  it('a safe command, or its alias, is never mistaken for a restricted one', () => {
    const refused = topLevel
      .filter((names) => REVIEWED_SAFE.has(names[0]!))
      .flat()
      .filter((word) => /^[a-z]/.test(word) && !['info', 'show'].includes(word) && needs(`${word} 1`).length > 0);
    expect(refused).toEqual([]);
  });

  it('every alias of a restricted setting is restricted too, and no alias of a safe one is', () => {
    const wrong: string[] = [];
    for (const names of entries.filter((n) => n[0]!.startsWith('set ') && n.length > 1)) {
      const canonical = needs(`${names[0]} /outside/x`).length > 0;
      for (const alias of names.slice(1)) if (needs(`${alias} /outside/x`).length > 0 !== canonical) wrong.push(`${alias} (alias of ${names[0]})`);
    }
    expect(wrong).toEqual([]);
  });

  it('every MI command gdb has is ruled or known to stay inside; the lists name only real commands', () => {
    // The MI table is not listed by gdb: its names are found in the binary and confirmed one by one.
    const gdbPath = execFileSync('sh', ['-c', 'command -v gdb'], { encoding: 'utf8' }).trim();
    const inBinary = execFileSync('sh', ['-c', `strings -n 6 ${gdbPath} | grep -E '^[a-z]+(-[a-z]+)+$' | sort -u`], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
      .split('\n')
      .filter(Boolean)
      .map((n) => `-${n}`);
    const candidates = [...new Set([...inBinary, ...MI_SAFE])];
    const script = [...candidates.map((c) => `-info-gdb-mi-command ${c.slice(1)}`), '-gdb-exit'].join('\n');
    const answers = execFileSync('gdb', ['--interpreter=mi3', '-nx', '-q'], { input: `${script}\n`, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
      .split('\n')
      .filter((l) => l.startsWith('^'));
    const exists = new Set(candidates.filter((_, i) => answers[i]?.includes('exists="true"')));
    expect(
      [...MI_SAFE].filter((c) => !exists.has(c)),
      'MI_SAFE names a command gdb does not have',
    ).toEqual([]);
    const unknown = [...exists].filter((c) => !MI_SAFE.has(c) && classifyCommand(c, closed).every((n) => !n.what.includes('not an MI command')));
    // Every real command is either in MI_SAFE, or ruled (classified by its rule, never as unknown).
    expect(unknown.filter((c) => !MI_SAFE.has(c) && classifyCommand(c, closed).some((n) => n.what.includes('not an MI command')))).toEqual([]);
    expect(exists.size).toBeGreaterThan(100);
  });

  it("MI strings are read with gdb's escapes: octal, the C letters, any other character as itself", () => {
    expect(splitArgs('"\\163hell id" "\\041id" "a\\"b" "\\e\\q\\\\" \\163 "\\1011"')).toEqual(['shell id', '!id', 'a"b', 'eq\\', '\\163', 'A1']);
    expect(splitArgs('"\\n\\t\\a"')).toEqual(['\n\t\x07']);
  });
});

describe('files another user could swap before gdb opens them (issue 18; the races: test/open-races.test.ts)', () => {
  // `root` (mode 0700 under a sticky /tmp): only debugkit's user can write on the way. `shared`: anyone can.
  const shared = realpathSync(mkdtempSync(path.join(tmpdir(), 'debugkit-policy-shared-')));
  mkdirSync(path.join(shared, 'sub'));
  for (const dir of [shared, path.join(shared, 'sub')]) chmodSync(dir, 0o777);
  for (const dir of [root, shared]) copyFileSync('/bin/true', path.join(dir, 'prog'));
  const outside = realpathSync(mkdtempSync(path.join(tmpdir(), 'debugkit-policy-out-')));
  mkdirSync(path.join(outside, 'a', 'b'), { recursive: true });
  symlinkSync(path.join(outside, 'a', 'b'), path.join(root, 'out-link'));
  symlinkSync('/etc/passwd', path.join(root, '-x'));
  const inShared: GdbPolicy = { ...closed, root: shared, cwd: shared };
  afterAll(() => {
    for (const dir of [shared, outside]) rmSync(dir, { recursive: true, force: true });
  });

  /** What prepareCommand sends gdb (the copy closed at once), or its refusal. */
  async function sent(command: string, policy = inShared): Promise<string> {
    try {
      const prepared = await prepareCommand(command, policy);
      prepared.copy?.program.close();
      return prepared.command;
    } catch (err) {
      return (err as Error).message;
    }
  }

  it("where only debugkit's user can write, file commands go to gdb as written", async () => {
    for (const command of ['dump memory out.bin 0 1', 'set logging enabled on', 'gcore', 'record save', 'directory sub', '-break-commands 1 "dump memory out.bin 0 1"']) {
      expect(await sent(command, closed), command).toBe(command);
    }
    // Except a file gdb reads: a core's mapped files and a program's debug links are judged on a
    // copy that debugkit's own user (a gdb `dump` of another session) cannot rewrite after the
    // check (test/attack-18k.test.ts, test/attack-18u-gdb.test.ts); a read no copy can stand for needs the shell.
    expect(await sent('core-file prog', closed)).toMatch(/^core-file \/\S*debugkit-prog-[^/\s]+\/prog$/);
    expect(await sent('file prog', closed)).toMatch(/^file \/\S*debugkit-prog-[^/\s]+\/prog$/);
    expect(await sent('-file-exec-and-symbols "prog"', closed)).toMatch(/^-file-exec-and-symbols "\/\S*debugkit-prog-[^/\s]+\/prog"$/);
    for (const command of ['with print pretty -- file prog', 'add-symbol-file prog 0']) expect(await sent(command, closed)).toMatch(/names no one plain file to copy.*--allow-gdb-shell/);
  });

  it('a file gdb reads, named plainly by a command of its own, is read from a private copy of the checked file', async () => {
    const copy = String.raw`/\S*debugkit-prog-[^/\s]+/prog`;
    expect(await sent('file prog')).toMatch(new RegExp(`^file ${copy}$`));
    expect(await sent('fil prog')).toMatch(new RegExp(`^file ${copy}$`));
    expect(await sent('exec-file prog')).toMatch(new RegExp(`^exec-file ${copy}$`));
    expect(await sent('symbol-file -readnow prog')).toMatch(new RegExp(`^symbol-file -readnow ${copy}$`));
    expect(await sent('core prog')).toMatch(new RegExp(`^core-file ${copy}$`));
    expect(await sent(`file ${shared}/sub/../prog`)).toMatch(new RegExp(`^file ${copy}$`));
    expect(await sent('-file-exec-and-symbols "prog"')).toMatch(new RegExp(`^-file-exec-and-symbols "${copy}"$`));
    expect(await sent('12-file-symbol-file prog')).toMatch(new RegExp(`^-file-symbol-file "${copy}"$`));
    const prepared = await prepareCommand('file prog', inShared);
    try {
      expect(prepared.copy?.slots).toEqual(['exec', 'symbols']);
      expect(existsSync(prepared.copy!.program.path)).toBe(true);
    } finally {
      prepared.copy?.program.close();
    }
    expect(await sent('file nope')).toMatch(/"file" file not found/);
  });

  it('every other file use there is refused without --allow-gdb-shell, naming why', async () => {
    for (const command of [
      "file 'prog'",
      'file -o 0x10 prog',
      'add-symbol-file prog 0',
      'with print pretty -- file prog',
      'complete file pr',
      '-interpreter-exec console "file prog"',
      'dump memory out.bin 0 1',
      'append binary value out.bin 1',
      'save breakpoints bp.txt',
      'gcore',
      'gcore core.1',
      'record save',
      'record full restore r',
      'set logging file log.txt',
      'set logging enabled on',
      'set logg en on',
      'set logging on',
      'with logging enabled on -- p 1',
      'directory sub',
      'dir sub:.',
      'set cwd sub',
      'tty t',
      '-break-commands 1 "dump memory out.bin 0 1"',
      '-trace-save t',
    ]) {
      expect(await sent(command), command).toMatch(/can be written by users other than debugkit's.*--allow-gdb-shell/);
      expect(capabilityScopes(command, inShared), command).toEqual(['gdb:shell']);
    }
    expect(await sent('set logging enabled off')).toBe('set logging enabled off');
    expect(await sent('record stop')).toBe('record stop');
  });

  it('a name is judged where the kernel leads it: a ".." after a link, or an option-like file name, cannot lead out', async () => {
    // out-link -> outside/a/b: "out-link/../x" reads as root/x but leads to outside/a/x.
    expect(await sent('dump memory out-link/../x 0 1', closed)).toMatch(/leads through a link.*--allow-gdb-shell/);
    // A read there is read from what debugkit checked (root/prog, which no other user can swap), not what gdb would reach.
    expect(await sent('file out-link/../prog', closed)).toMatch(/^file \/\S*debugkit-prog-[^/\s]+\/prog$/);
    // core-file takes "-x" as a file name: here a link to /etc/passwd.
    expect(await sent('core-file -x', closed)).toMatch(/outside the workspace root/);
    expect(await sent('-file-exec-and-symbols -x', closed)).toMatch(/outside the workspace root/);
  });

  it("a command that reaches further when sent than when the key's scopes were checked is refused, whatever the flags", async () => {
    await expect(prepareCommand('file /bin/sh', open, [])).rejects.toThrow(/reaches further than when the call's scopes were checked/);
    expect((await prepareCommand('file /bin/sh', open, ['gdb:shell'])).command).toBe('file /bin/sh');
    expect((await prepareCommand('file /bin/sh', open)).command).toBe('file /bin/sh');
  });
});

describe('the commands that start the program (a rebuilt program is reloaded before them)', () => {
  it('knows run, start and starti in every spelling the policy lets through, nested ones included', () => {
    for (const c of [
      'run',
      'r',
      'ru a b',
      'start',
      'starti',
      '-exec-run',
      '-exec-run --start',
      '12-exec-run',
      '-interpreter-exec console "run"',
      'with print pretty -- run',
      'w print pretty on -- r 1 2',
      'with print pretty -- start',
    ])
      expect(isStartCommand(c), c).toBe(true);
    for (const c of ['print 1', 'with print pretty -- print 1', 'with print pretty', 'continue', '-exec-continue', 'rwatch x', 'stepi']) expect(isStartCommand(c), c).toBe(false);
  });
});
