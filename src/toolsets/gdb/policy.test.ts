import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { capabilityScopes, checkCommand, classifyCommand, gdbArgv, isAttachCommand, isDetachCommand, type GdbPolicy } from './policy.js';
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

  it.each(['info proc 1', 'info proc cmdline 1', 'i proc mappings 1', 'inf proc 77', 'info proc all 1', 'info proc cwd 01', 'INFO PROC 1', 'info\tproc  1', 'i proc stat 1 ', 'with print pretty -- info proc 1', '-interpreter-exec console "info proc environ 1"', 'thread apply all info proc exe 1'])(
    'refuses %j (another process\'s /proc), naming --allow-attach',
    (command) => {
      const message = verdict(command);
      expect(message).toMatch(/^refused: "info proc .*reads \/proc of process \d+, which this session did not start/);
      expect(message).toContain('--allow-attach');
      expect(verdict(command, open)).toBe('allowed');
    },
  );

  it.each(['attach 1', 'att 1', 'at 1', '-target-attach 1', '-interpreter-exec console "attach 1"', 'thread apply all attach 1'])(
    'refuses %j, naming --allow-attach',
    (command) => {
      const message = verdict(command);
      expect(message).toMatch(/^refused: .*attach/);
      expect(message).toContain('--allow-attach');
    },
  );

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

  it.each(['attach 1', 'at 1', '-target-attach 1', 'info proc 1', 'thread apply all attach 1', '-interpreter-exec console "attach 1"'])(
    '%j needs gdb:attach (and the flag)',
    (command) => {
      expect(capabilityScopes(command, closed)).toEqual(['gdb:attach']);
      expect(verdict(command)).toContain('--allow-attach');
    },
  );

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
  const loaded = (command: string) =>
    execFileSync('gdb', ['-nx', '-batch', '-ex', command, '-ex', 'info inferiors'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

  it.each(["file '/bin/true'", 'file \\/bin/true', 'file "/bin/true"', "file '/bin'/true", "exec-file '/bin/true'"])('%j: gdb loads /bin/true, and the policy refuses it', (command) => {
    expect(loaded(command)).toMatch(/\/bin\/true/);
    expect(verdict(command)).toMatch(/^refused: .*outside the workspace root/);
  });
});

describe('the classifier resolves command words as the real gdb does', () => {
  // Every prefix of a command the policy restricts: gdb must resolve it to that command, call it
  // ambiguous, or resolve it to a command the policy knows is harmless (allowed above).
  const gdbHelp = (word: string) =>
    execFileSync('gdb', ['-nx', '-batch', '-ex', `help ${word}`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).split('\n')[0]!;

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
