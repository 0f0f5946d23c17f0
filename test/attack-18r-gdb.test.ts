// Attack 18r I1: a program whose .gnu_debuglink names its debug file by a path (`../../outside/p.debug`)
// made gdb read a file outside the root as debug information (its functions listed), or read
// /dev/zero forever. Such a program needs what reading outside the root needs; a debug link that
// is a plain file name (what `objcopy --add-gnu-debuglink` writes) is gdb's ordinary lookup.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { debugLinkName, debugLinks } from '../src/core/elf-core.js';
import { connectStdio, type TestClient } from './helpers/client.js';
import { tempDir } from './helpers/programs.js';

let base: string;
let root: string;
let closed: TestClient;
let open: TestClient;

/** `name` built from p.c with its debug information moved out and a .gnu_debuglink naming `link`. */
function linked(name: string, link: string, padding: string[] = [], altlink?: string): void {
  const out = path.join(root, name);
  execFileSync('gcc', ['-g', '-O0', '-o', out, path.join(root, 'p.c')]);
  execFileSync('strip', ['--strip-debug', out]);
  const section = Buffer.alloc(Math.ceil((link.length + 1) / 4) * 4 + 4);
  section.write(link, 'latin1');
  writeFileSync(path.join(root, `${name}.link`), section);
  writeFileSync(path.join(root, `${name}.one`), 'x');
  const pads = padding.flatMap((p) => ['--add-section', `${p}=${path.join(root, `${name}.one`)}`]);
  if (pads.length > 0) execFileSync('objcopy', [...pads, out]);
  if (altlink !== undefined) {
    writeFileSync(path.join(root, `${name}.alt`), altlink, 'latin1');
    execFileSync('objcopy', ['--add-section', `.gnu_debugaltlink=${path.join(root, `${name}.alt`)}`, out]);
  }
  execFileSync('objcopy', ['--add-section', `.gnu_debuglink=${path.join(root, `${name}.link`)}`, out]);
}

beforeAll(async () => {
  base = tempDir('debugkit-18r-gdb-');
  root = path.join(base, 'root');
  mkdirSync(root);
  mkdirSync(path.join(base, 'outside'));
  writeFileSync(path.join(base, 'outside', 'p.debug'), 'a file outside the root');
  writeFileSync(path.join(root, 'p.c'), 'int secret_function(void) { return 42; }\nint main(void) { return secret_function(); }\n');
  linked('p-out', '../outside/p.debug');
  linked('p-zero', '../../../../../../dev/zero');
  linked('p-plain', 'p-plain.debug');
  // Attack 18s N1: the link's section name past the first 69,632 bytes of the section names (20 sections of 4,000-character names before it).
  linked(
    'p-far',
    '../outside/p.debug',
    Array.from({ length: 20 }, (_, i) => `.pad${i}${'a'.repeat(4000)}`),
  );
  // Attack 18s N2: a dwz link (.gnu_debugaltlink: a path, a NUL, a build-id), which gdb opens by its path.
  linked('p-alt', 'p-alt.debug', [], `${base}/outside/p.debug\0${'b'.repeat(20)}`);
  [closed, open] = await Promise.all([connectStdio({ root, args: ['--toolsets', 'gdb,debugger', '--no-allow-gdb-shell'] }), connectStdio({ root, args: ['--toolsets', 'gdb'] })]);
}, 60_000);
afterAll(async () => Promise.all([closed?.close(), open?.close()]));

describe('attack 18r I1: a debug link that leads out of the program directory', () => {
  it('debugLinkName reads the section as gdb does', async () => {
    expect(await debugLinkName(path.join(root, 'p-out'))).toBe('../outside/p.debug');
    expect(await debugLinkName(path.join(root, 'p-plain'))).toBe('p-plain.debug');
    expect(await debugLinkName(path.join(root, 'p.c'))).toBeUndefined();
    expect(await debugLinkName(path.join(root, 'p-far'))).toBe('../outside/p.debug');
    expect(await debugLinks(path.join(root, 'p-alt'))).toEqual({ debuglink: 'p-alt.debug', altlink: `${base}/outside/p.debug` });
  });

  it('attack 18s: a link named past the first 64 KiB of section names, and a dwz link, are refused the same way', async () => {
    const far = await closed.tool('open', { program: 'p-far' });
    expect(far.isError).toBe(true);
    expect(far.text).toMatch(/names its debug file "\.\.\/outside\/p\.debug" \(\.gnu_debuglink\)/);
    const alt = await closed.tool('open', { program: 'p-alt' });
    expect(alt.isError).toBe(true);
    expect(alt.text).toMatch(/names its dwz file ".*\/outside\/p\.debug" \(\.gnu_debugaltlink\), a path gdb would open out of the program's directory/);
    const launched = await closed.tool('debugger_launch', { program: 'p-alt' });
    expect(launched.isError).toBe(true);
    expect(launched.text).toMatch(/\.gnu_debugaltlink/);
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
