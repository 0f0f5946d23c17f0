// Attack 18r I1: a program whose .gnu_debuglink names its debug file by a path (`../../outside/p.debug`)
// made gdb read a file outside the root as debug information (its functions listed), or read
// /dev/zero forever. Such a program needs what reading outside the root needs; a debug link that
// is a plain file name (what `objcopy --add-gnu-debuglink` writes) is gdb's ordinary lookup.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { debugLinkName } from '../src/core/elf-core.js';
import { connectStdio, type TestClient } from './helpers/client.js';
import { tempDir } from './helpers/programs.js';

let base: string;
let root: string;
let closed: TestClient;
let open: TestClient;

/** `name` built from p.c with its debug information moved out and a .gnu_debuglink naming `link`. */
function linked(name: string, link: string): void {
  const out = path.join(root, name);
  execFileSync('gcc', ['-g', '-O0', '-o', out, path.join(root, 'p.c')]);
  execFileSync('strip', ['--strip-debug', out]);
  const section = Buffer.alloc(Math.ceil((link.length + 1) / 4) * 4 + 4);
  section.write(link, 'latin1');
  writeFileSync(path.join(root, `${name}.link`), section);
  execFileSync('objcopy', ['--add-section', `.gnu_debuglink=${path.join(root, `${name}.link`)}`, out]);
}

beforeAll(async () => {
  base = tempDir('debugkit-18r-gdb-');
  root = path.join(base, 'root');
  mkdirSync(root);
  mkdirSync(path.join(base, 'outside'));
  writeFileSync(path.join(root, 'p.c'), 'int secret_function(void) { return 42; }\nint main(void) { return secret_function(); }\n');
  linked('p-out', '../outside/p.debug');
  linked('p-zero', '../../../../../../dev/zero');
  linked('p-plain', 'p-plain.debug');
  [closed, open] = await Promise.all([connectStdio({ root, args: ['--toolsets', 'gdb,debugger', '--no-allow-gdb-shell'] }), connectStdio({ root, args: ['--toolsets', 'gdb'] })]);
}, 60_000);
afterAll(async () => Promise.all([closed?.close(), open?.close()]));

describe('attack 18r I1: a debug link that leads out of the program directory', () => {
  it('debugLinkName reads the section as gdb does', async () => {
    expect(await debugLinkName(path.join(root, 'p-out'))).toBe('../outside/p.debug');
    expect(await debugLinkName(path.join(root, 'p-plain'))).toBe('p-plain.debug');
    expect(await debugLinkName(path.join(root, 'p.c'))).toBeUndefined();
  });

  it('open and file refuse it where the shell is not allowed, saying why; a plain link opens', async () => {
    for (const program of ['p-out', 'p-zero']) {
      const r = await closed.tool('open', { program });
      expect(r.isError, r.text).toBe(true);
      expect(r.text).toMatch(/names its debug file ".*" \(\.gnu_debuglink\), a path gdb would follow out of the program's directory.*--allow-gdb-shell/);
    }
    const { id } = await closed.ok('open', {});
    const file = await closed.tool('call', { id, command: 'file p-out' });
    expect(file.isError).toBe(true);
    expect(file.text).toMatch(/\.gnu_debuglink/);
    await closed.ok('close', { id });
    const plain = await closed.ok('open', { program: 'p-plain' });
    await closed.ok('close', { id: plain.id });
  });

  it('debugger_launch refuses it (the debugger toolset reads nothing outside the root)', async () => {
    const r = await closed.tool('debugger_launch', { program: 'p-out' });
    expect(r.isError).toBe(true);
    expect(r.text).toMatch(/names its debug file "\.\.\/outside\/p\.debug" \(\.gnu_debuglink\)/);
  });

  it('where the operator allows reading outside the root, it opens', async () => {
    const { id } = await open.ok('open', { program: 'p-out' });
    await open.ok('close', { id });
  });
});
