// Issue 17, the second attack (17b) on the one classifier, after the fixes of the first: spellings a
// key holder without gdb:shell / gdb:attach tried. Each "misread" family was run through the real
// gdb 13 in MI mode as debugkit drives it (GdbSession: CLI wrapped as -interpreter-exec console
// "<C-quoted>"), and the "gdb does it" tests below prove gdb ran or read what the classifier let
// pass; the classifier tests of those families failed on the code this attack was made against. The
// "held" cases were refused already and stay as regression tests; "gdb refuses" lists spellings the
// classifier lets pass but gdb 13 itself rejects (a later gdb that accepts one fails that test).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capabilityScopes, checkCommand, type GdbPolicy } from './policy.js';
import { GdbSession } from './session.js';

const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'debugkit-policy-attack17b-')));
const host = realpathSync(mkdtempSync(path.join(tmpdir(), 'debugkit-policy-attack17b-host-')));
mkdirSync(path.join(root, 'sub'));
/** 4242 is the session's own program; in octal, "04242" is pid 2210 to gdb's attach (strtol base 0). */
const closed: GdbPolicy = { root, cwd: root, allowShell: false, allowAttach: false, ownPids: new Set([4242]) };

function verdict(command: string): string {
  try {
    checkCommand(command, closed);
    return 'allowed';
  } catch (err) {
    return (err as Error).message;
  }
}

/** `..` segments that climb from `p` (an absolute path, its last segment included) to "/". */
const up = (p: string) => '../'.repeat(p.split('/').filter(Boolean).length);
const rootRel = root.slice(1);

// ---------------------------------------------------------------------------------------------
// Misread families (each failed before the fixes of the second attack).
// ---------------------------------------------------------------------------------------------

/**
 * 1. gdb's MI parser takes "--all" (like --thread/--frame/--thread-group/--language) before any MI
 * command's arguments; the classifier skips only the four with values, so "-gdb-set --all X" is a
 * setting named "--all" to it and "set X" to gdb. gdb ran `exec-wrapper sh -c '...'` at the next run.
 */
const MI_ALL: Array<[string, string]> = [
  ["-gdb-set --all exec-wrapper sh -c 'id'", 'the exec-wrapper runs through /bin/sh at the next run'],
  ['-gdb-set --all environment LD_PRELOAD=/w/x.so', 'the program environment (LD_PRELOAD, BASH_ENV)'],
  ['-gdb-set --all startup-with-shell on', 'startup-with-shell'],
  ['-gdb-set --all auto-load safe-path /', 'auto-load safe-path'],
  ['-gdb-set --thread 1 --all exec-wrapper sh', '--all after a --thread pair'],
  ['-gdb-set --all --thread 1 exec-wrapper sh', '--all before a --thread pair'],
  ['-interpreter-exec mi "-gdb-set --all exec-wrapper sh"', 'nested in -interpreter-exec mi'],
];
const MI_ALL_FILES: Array<[string, string]> = [
  ['-gdb-set --all logging file /tmp/x', 'logging file outside the root'],
  ['-gdb-set --all history filename /tmp/x', 'history file outside the root'],
  ['-gdb-set --all cwd /', 'the program cwd outside the root'],
];

/**
 * 2. gdb finds a (sub)command word as find_command_name_length does: it ends at the first character
 * that is not alphanumeric, "-", "_" or "."; "!" and "|" are one-character commands. The classifier
 * splits `thread apply` / `frame apply` at white space, so "all!id" is one word to it, starting with
 * a letter: a command "all" that needs nothing. gdb: `thread apply all` + "!id".
 */
const GLUED: Array<[string, string]> = [
  ['thread apply all!id', '"all" glued to "!" (gdb ran it once per thread)'],
  ['t a all!id', 'the same, abbreviated'],
  ['thread apply all|p 1|sh', '"all" glued to "|" (pipe)'],
  ['frame apply all!id', 'frame apply, "all" glued to "!" (gdb ran it once per frame)'],
  ['f apply all|p 1|sh', 'frame apply, "all" glued to "|"'],
  ['with print pretty -- thread apply all!id', 'nested in with'],
  ['-interpreter-exec console "thread apply all!id"', 'nested in -interpreter-exec console'],
];

/**
 * 3. `frame apply level LEVEL...`: gdb takes unique prefixes of the subcommand ("l", "le", "lev"...);
 * the classifier knows only "level" and "all", and reads "lev" / "l" as the nested command (no rule).
 */
const LEVEL_PREFIX: Array<[string, string]> = [
  ['frame apply lev 0 shell id', '"lev" is "level" to gdb (it ran the shell command)'],
  ['frame apply l 0 shell id', '"l" is "level" to gdb (it ran the shell command)'],
  ['frame apply leve 0-1 !id', '"leve"'],
  ['f apply le 0 | p 1 | sh', '"le", pipe'],
];

/**
 * 4. frame apply's options -past-main and -past-entry take a boolean value ("on", "off", "yes",
 * "no", "enable", "disable"); the classifier skips the option word and reads the value as the
 * command (no rule). gdb ran the shell command after each of these; faas and tfaas pass their
 * options to frame apply.
 */
const BOOLEAN_OPTION_VALUE: Array<[string, string]> = [
  ['frame apply all -past-main on shell id', '-past-main on'],
  ['frame apply 1 -past-entry off shell id', '-past-entry off, with a COUNT'],
  ['frame apply level 0 -past-main yes !id', 'with level'],
  ['faas -past-main on shell id', 'faas'],
  ['faas -past-entry enable !id', 'faas, "enable"'],
  ['tfaas -past-main no shell id', 'tfaas'],
  ['with print pretty -- faas -past-main disable shell id', 'nested in with'],
  ['faas -past-main 0 shell id', 'faas reads "0" as the command (frame apply skips it as a number)'],
];

/**
 * 5. An MI C string's octal escape above \377 (e.g. "\400" = 256) passes gdb's mi_parse_escape
 * (> 0) and is stored as a char: 256 & 0xff = NUL, which ends the argument for the C code that
 * reads it. The classifier decodes it as U+0100 and keeps reading, so "X\400/../../ROOT/x" is a
 * path inside the root to it and "X" to gdb. gdb loaded /bin/sh, read another process's
 * /proc/PID/cmdline, pointed the program's terminal at a file outside the root.
 */
const NUL_TRUNCATION_SHELL: Array<[string, string]> = [
  [`-interpreter-exec console "file /bin/sh\\400/../../${rootRel}/x"`, 'gdb loads /bin/sh (then `run -c ...` runs host commands)'],
  [`-interpreter-exec console "exec-file /bin/sh\\400/../../${rootRel}/x"`, 'exec-file'],
  [`-interpreter-exec console "dump binary value /tmp/x\\400/../../${rootRel}/x 1"`, 'dump writes /tmp/x'],
  [`-interpreter-exec console "set logging file /tmp/x\\400/../../${rootRel}/x"`, 'logging file'],
  [`-inferior-tty-set "/tmp/victim\\400/${up('/tmp/victim')}${rootRel}/x"`, "the program's output overwrites /tmp/victim"],
  [`-environment-directory "/etc\\400/../${rootRel}"`, 'adds /etc to the source path'],
  [`-break-commands 1 "file /bin/sh\\400/../../${rootRel}/x"`, 'in breakpoint commands'],
  [`-interpreter-exec mi "-interpreter-exec console \\"file /bin/sh\\\\400/../../${rootRel}/x\\""`, 'nested MI'],
];
const NUL_TRUNCATION_ATTACH: Array<[string, string]> = [
  ['-interpreter-exec console "info proc environ 1\\400"', "gdb reads pid 1's environment; the classifier sees no pid"],
  ['-interpreter-exec console "info proc cmdline 1\\400x"', 'the same with a suffix'],
  ['-break-commands 1 "info proc environ 1\\400"', 'in breakpoint commands'],
];

/**
 * 6. attach parses its pid with strtol(..., 0): "04242" is octal (pid 2210) to gdb and 4242 (the
 * session's own program) to the classifier's Number(). With an own pid of octal digits, gdb
 * attached to the process whose pid is that number read in octal.
 */
const OCTAL_ATTACH: Array<[string, string]> = [
  ['attach 04242', 'pid 2210 to gdb'],
  ['attach 0004242', 'leading zeros'],
  ['-target-attach 04242', 'MI'],
  ['with print pretty -- attach 04242', 'nested'],
  ['-interpreter-exec console "attach 04242"', 'nested MI'],
];

/**
 * 7. `complete LINE` (and MI -complete) runs LINE's completer: the file-name completers of file,
 * directory, source, dump... list any host directory (names of files in /root/.ssh, in the data
 * directory, in other users' homes). The classifier passes `complete` whatever it completes; it
 * should read the completed command as nested (completing `file /etc/` needs what `file /etc/x`
 * needs).
 */
const COMPLETE: Array<[string, string]> = [
  ['complete file /etc/', 'lists /etc'],
  ['complete source /root/.ss', 'lists /root'],
  ['complete directory /home/', 'lists /home'],
  ['-complete "file /etc/"', 'MI'],
  ['-complete "dump memory /root/ 0 1"', 'MI, dump'],
];

/**
 * 8. `set index-cache enabled on` (and its deprecated alias `set index-cache on`) makes gdb write an
 * index file for every objfile it loads into its cache directory, $XDG_CACHE_HOME/gdb or
 * ~/.cache/gdb: outside the root. The classifier restricts only `set index-cache directory`.
 */
const INDEX_CACHE: Array<[string, string]> = [
  ['set index-cache enabled on', 'writes ~/.cache/gdb/<build-id>.gdb-index (gdb did)'],
  ['set index-cache on', 'the deprecated alias'],
  ['-gdb-set index-cache enabled on', 'MI'],
  ['with index-cache enabled on -- file basic', 'for one command'],
];

describe('attack 17b: spellings the classifier misread (refused since)', () => {
  it.each(INDEX_CACHE)('index cache outside the root: %j needs gdb:shell (%s)', (command) => {
    expect(capabilityScopes(command, closed)).toContain('gdb:shell');
  });

  it.each([...MI_ALL, ...MI_ALL_FILES])('MI --all: %j needs gdb:shell (%s)', (command) => {
    expect(capabilityScopes(command, closed)).toContain('gdb:shell');
    expect(verdict(command)).toMatch(/^refused: .*--allow-gdb-shell/);
  });

  it.each(GLUED)('glued subcommand: %j needs gdb:shell (%s)', (command) => {
    expect(capabilityScopes(command, closed)).toContain('gdb:shell');
  });

  it.each(LEVEL_PREFIX)('frame apply level prefix: %j needs gdb:shell (%s)', (command) => {
    expect(capabilityScopes(command, closed)).toContain('gdb:shell');
  });

  it.each(BOOLEAN_OPTION_VALUE)('boolean option value: %j needs gdb:shell (%s)', (command) => {
    expect(capabilityScopes(command, closed)).toContain('gdb:shell');
  });

  it.each(NUL_TRUNCATION_SHELL)('MI "\\400" (NUL to gdb): %j needs gdb:shell (%s)', (command) => {
    expect(capabilityScopes(command, closed)).toContain('gdb:shell');
  });

  it.each(NUL_TRUNCATION_ATTACH)('MI "\\400" (NUL to gdb): %j needs gdb:attach (%s)', (command) => {
    expect(capabilityScopes(command, closed)).toContain('gdb:attach');
  });

  it.each(OCTAL_ATTACH)('octal pid: %j needs gdb:attach (%s)', (command) => {
    expect(capabilityScopes(command, closed)).toContain('gdb:attach');
  });

  it.each(COMPLETE)('completion of host paths: %j needs gdb:shell (%s)', (command) => {
    expect(capabilityScopes(command, closed)).toContain('gdb:shell');
  });
});

// ---------------------------------------------------------------------------------------------
// Held (regression).
// ---------------------------------------------------------------------------------------------

const HELD_SHELL = [
  // Glued forms the classifier reads right (the command word is split as gdb splits it).
  'faas!id',
  'taas!id',
  'tfaas|p 1|sh',
  'faas -q !id',
  'with print pretty --!id',
  'with print pretty --|p 1|sh',
  // "al" and "a" (gdb: "all") read as prefixes of alias/attach...: refused by luck, refused all the same.
  'thread apply al shell id',
  'frame apply al shell id',
  'thread apply a !id',
  // frame apply: a boolean value that does not start with a letter is skipped and the command read.
  'frame apply 1 -past-main 1 !id',
  // MI options on other MI commands.
  '-gdb-set --language c exec-wrapper sh',
  '-gdb-set --thread-group i1 exec-wrapper sh',
  '-interpreter-exec --all console "shell id"',
  '-break-commands --all 1 "shell id"',
  '-exec-arguments --all $(id)',
  '-file-exec-and-symbols --all /bin/sh',
  '-list-thread-groups --all --available',
  '-inferior-tty-set --all /tmp/x',
  '-list-thread-groups "\\055-available"',
  // Escapes that decode to the same byte for gdb and the classifier.
  '-interpreter-exec console "\\163\\150\\145\\154\\154 id"',
  '-interpreter-exec console "file \\057bin/sh"',
  // Interpreter names gdb does not know are refused (gdb: case-sensitive, no abbreviation).
  '-interpreter-exec Console "shell id"',
  '-interpreter-exec cons "print 1"',
  'interpreter-exec mi2 "-gdb-set exec-wrapper sh"',
];

const HELD_ATTACH = ['attach 0x1', 'attach 1', '-target-attach --thread-group i1 1', 'info proc 0001', 'info proc environ\t1', 'i proc cmdline 1'];

describe('attack 17b: spellings tried that the classifier refuses (held)', () => {
  it.each(HELD_SHELL)('%j needs gdb:shell', (command) => {
    expect(capabilityScopes(command, closed)).toContain('gdb:shell');
  });

  it.each(HELD_ATTACH)('%j needs gdb:attach', (command) => {
    expect(capabilityScopes(command, closed)).toContain('gdb:attach');
  });
});

// ---------------------------------------------------------------------------------------------
// The real gdb: what it does with the misread spellings, and what it refuses by itself.
// ---------------------------------------------------------------------------------------------

const PROGRAM = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../test/programs/basic.c');
const WRAPPER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), 'exec-wrapper.sh');
let session: GdbSession;

/** One command through GdbSession as debugkit sends it, with no policy (what gdb itself does). */
async function gdb(command: string): Promise<{ ok: boolean; text: string }> {
  try {
    const r = await session.call(command, { waitMs: 5000 });
    return { ok: true, text: r.output };
  } catch (err) {
    return { ok: false, text: (err as Error).message };
  }
}

describe('attack 17b: the real gdb 13 (driven as debugkit drives it)', () => {
  beforeAll(async () => {
    execFileSync('gcc', ['-g', '-O0', '-o', path.join(root, 'basic'), PROGRAM]);
    session = await GdbSession.start({ gdbPath: 'gdb', cwd: root, execWrapper: WRAPPER, replyTimeoutMs: 20_000 });
    await gdb(`-file-exec-and-symbols "${path.join(root, 'basic')}"`);
    await gdb('break main');
    await gdb('-exec-run');
  }, 60_000);

  afterAll(async () => {
    await session?.dispose('test done');
    rmSync(root, { recursive: true, force: true });
    rmSync(host, { recursive: true, force: true });
  });

  let n = 0;
  const marker = () => path.join(host, `gdb-marker-${++n}`);

  it.each([
    ['thread apply all!touch M'],
    ['frame apply all!touch M'],
    ['thread apply all|p 1|touch M'],
    ['frame apply lev 0 shell touch M'],
    ['frame apply l 0 shell touch M'],
    ['frame apply all -past-main on shell touch M'],
    ['faas -past-entry off shell touch M'],
    ['tfaas -past-main yes shell touch M'],
    ['faas -past-main 0 shell touch M'],
  ])('gdb runs %j (the classifier needs nothing for it today)', async (spelling) => {
    const m = marker();
    const command = spelling.replace('M', m);
    await gdb(command);
    expect(existsSync(m), `gdb did not run ${command}`).toBe(true);
  });

  /** Spellings the classifier lets pass but gdb 13 refuses by itself: if a gdb accepts one, read it. */
  it.each([
    ["set exec-wrapper'sh' -c 'touch M'", /Argument must be preceded by space/],
    ['set logging file/tmp/M', /Argument must be preceded by space/],
    ["with exec-wrapper'sh' -c 'touch M' -- show version", /Argument must be preceded by space/],
    ['thread apply 1!touch M', /Invalid thread ID/],
    ['frame apply 1!touch M', /Invalid COUNT/],
    ['thread apply all -q!touch M', /Undefined command: "-q"/],
    ['thread apply 1shell touch M', /Invalid thread ID/],
    ['attach 4242.0', /Illegal process-id/],
    ['-interpreter-exec Console "shell touch M"', /could not find interpreter/i],
  ])('gdb refuses %j by itself', async (spelling, error) => {
    const m = marker();
    const answer = await gdb(spelling.replace('M', m));
    expect(answer.ok).toBe(false);
    expect(answer.text).toMatch(error);
    expect(existsSync(m)).toBe(false);
    expect(readFileSync(PROGRAM, 'utf8').length).toBeGreaterThan(0);
  });

  it('gdb sets "-gdb-set --all exec-wrapper ..." and runs it at the next run', async () => {
    const m = marker();
    const s = await GdbSession.start({ gdbPath: 'gdb', cwd: root, execWrapper: WRAPPER, replyTimeoutMs: 20_000 });
    try {
      await s.call(`-file-exec-and-symbols "${path.join(root, 'basic')}"`, { waitMs: 0 });
      await s.call(`-gdb-set --all exec-wrapper sh -c 'touch ${m}'`, { waitMs: 0 });
      await s.call('-exec-run', { waitMs: 5000 }).catch(() => undefined);
    } finally {
      await s.dispose('test done');
    }
    expect(existsSync(m)).toBe(true);
  });

  it('gdb reads "\\400" in an MI string as NUL: the rest of the argument is gone', async () => {
    const loaded = await gdb(`-interpreter-exec console "file /bin/true\\400/../../${rootRel}/x"`);
    expect(loaded.text).toMatch(/Reading symbols from \/bin\/true/);
    const tty = path.join(host, 'victim-tty');
    await gdb(`-inferior-tty-set "${tty}\\400/${up(tty)}${rootRel}/x"`);
    expect((await gdb('show inferior-tty')).text).toContain(`"${tty}"`);
    await gdb('-inferior-tty-set ""');
    const environ = await gdb(`-interpreter-exec console "info proc cmdline ${process.pid}\\400"`);
    expect(environ.text).toContain(`process ${process.pid}`);
    await gdb(`-file-exec-and-symbols "${path.join(root, 'basic')}"`);
  });

  it('gdb attaches "attach 0NNN" to pid NNN read in octal', async () => {
    const answer = await gdb('attach 0777777');
    // 0777777 octal = 262143: gdb names that pid, not 777777.
    expect(answer.text).toMatch(/process 262143/);
  });

  it('gdb lists host directories for "complete file DIR/"', async () => {
    writeFileSync(path.join(host, 'secret-name.txt'), 'x');
    const listed = await gdb(`complete file ${host}/`);
    expect(listed.text).toContain('secret-name.txt');
  });
});
