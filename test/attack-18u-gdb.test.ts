// Attack atk-p P10: `open` judged the program's debug link on the workspace file and gdb then
// loaded that same name, so a writer renaming a bad build over a clean one in between had gdb read
// a debug file outside the root (16 of 80 opens). P3: a plain debug-link name found beside the
// program, in its `.debug/` directory, was a link out of the root (or to /dev/zero, which gdb read
// forever). gdb now gets a private copy, judged itself, with only the checked debug files beside it.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyDebugFiles, outwardDebugLink } from '../src/core/elf-core.js';
import { connectStdio, type TestClient } from './helpers/client.js';
import { tempDir } from './helpers/programs.js';

let base: string;
let root: string;
let outside: string;
let closed: TestClient;
let shell: TestClient;

/** root/dir/name built from p.c, its debug information moved to `debug` (written there), and a .gnu_debuglink naming `link`. */
function stripped(dir: string, name: string, link: string, debug: string): void {
  const out = path.join(root, dir, name);
  execFileSync('gcc', ['-g', '-O0', '-o', out, path.join(root, 'p.c')]);
  execFileSync('objcopy', ['--only-keep-debug', out, debug]);
  execFileSync('strip', ['--strip-debug', '--strip-unneeded', out]);
  if (path.basename(link) === path.basename(debug) && !link.includes('/')) {
    // Named as gdb finds it, with the debug file's CRC (gdb skips a file whose CRC differs).
    execFileSync('objcopy', [`--add-gnu-debuglink=${debug}`, out]);
    return;
  }
  // The name, NUL-padded to 4 bytes, then the debug file's CRC-32, which gdb checks before it reads it.
  const section = Buffer.alloc(Math.ceil((link.length + 1) / 4) * 4 + 4);
  section.write(link, 'latin1');
  section.writeUInt32LE(crc32(readFileSync(debug)), section.length - 4);
  writeFileSync(`${out}.link`, section);
  execFileSync('objcopy', ['--add-section', `.gnu_debuglink=${out}.link`, out]);
}

beforeAll(async () => {
  base = tempDir('debugkit-18u-gdb-');
  root = path.join(base, 'root');
  outside = path.join(base, 'outside');
  for (const dir of [root, outside, path.join(root, 'race'), path.join(root, 'dl', '.debug'), path.join(root, 'ok', '.debug')]) mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(root, 'p.c'), 'char *password = "hunter2";\nint secret_function(void) { return 42; }\nint main(void) { return secret_function(); }\n');
  // P10: the same build twice, one linking its debug file by name, the other by a path out of the root.
  stripped('race', 'clean', 'race.debug', path.join(outside, 'race.debug'));
  stripped('race', 'bad', '../../outside/race.debug', path.join(outside, 'race.debug'));
  copyFileSync(path.join(root, 'race', 'clean'), path.join(root, 'race', 'prog'));
  // P3: a plain name whose file in .debug/ is a link out of the root, or to /dev/zero.
  stripped('dl', 'prog', 'prog.debug', path.join(outside, 'prog.debug'));
  symlinkSync(path.join(outside, 'prog.debug'), path.join(root, 'dl', '.debug', 'prog.debug'));
  stripped('dl', 'zprog', 'zprog.debug', path.join(outside, 'zprog.debug'));
  symlinkSync('/dev/zero', path.join(root, 'dl', '.debug', 'zprog.debug'));
  execFileSync('mkfifo', [path.join(root, 'dl', 'fprog.debug')]);
  stripped('dl', 'fprog', 'fprog.debug', path.join(outside, 'fprog.debug'));
  // What still works: debug files inside the root, beside the program and in its .debug/.
  stripped('ok', 'beside', 'beside.debug', path.join(root, 'ok', 'beside.debug'));
  stripped('ok', 'sub', 'sub.debug', path.join(root, 'ok', '.debug', 'sub.debug'));
  [closed, shell] = await Promise.all([connectStdio({ root, args: ['--toolsets', 'gdb,debugger', '--no-allow-gdb-shell'] }), connectStdio({ root, args: ['--toolsets', 'gdb'] })]);
}, 60_000);
afterAll(async () => Promise.all([closed?.close(), shell?.close()]));

describe('attack atk-p P10: a program swapped between the check and gdb', () => {
  it('no open reads the outside debug file while a writer renames a bad build over a clean one (80 opens)', async () => {
    const dir = path.join(root, 'race');
    const stop = new Int32Array(new SharedArrayBuffer(8));
    // The swapper: atomic renames of a fresh copy of one build or the other over race/prog, a few
    // milliseconds apart (Atomics.wait paces it; it is the writer's speed, not a bound of the test).
    const swapper = new Worker(
      `const { workerData: { dir, stop } } = require('node:worker_threads');
       const fs = require('node:fs');
       for (let i = 0; Atomics.load(stop, 0) === 0; i++) {
         fs.copyFileSync(dir + (i % 2 ? '/clean' : '/bad'), dir + '/x.tmp');
         fs.renameSync(dir + '/x.tmp', dir + '/prog');
         Atomics.add(stop, 1, 1);
         Atomics.wait(stop, 0, 0, 3);
       }`,
      { eval: true, workerData: { dir, stop } },
    );
    const counts = { opened: 0, refused: 0, outside: 0 };
    try {
      for (let i = 0; i < 80; i++) {
        const r = await closed.tool('open', { program: 'race/prog' });
        if (r.isError) {
          counts.refused++;
          continue;
        }
        counts.opened++;
        const { id } = (r.structured as { content: { id: string } }).content;
        const sources = await closed.tool('call', { id, command: 'info sources' });
        if (sources.text.includes(outside)) counts.outside++;
        await closed.ok('close', { id });
      }
    } finally {
      Atomics.store(stop, 0, 1);
      await swapper.terminate();
      renameSync(path.join(dir, 'clean'), path.join(dir, 'prog'));
    }
    // The swapper ran all along, and both builds were seen.
    expect(Atomics.load(stop, 1)).toBeGreaterThan(80);
    expect(counts.opened, JSON.stringify(counts)).toBeGreaterThan(0);
    expect(counts.refused, JSON.stringify(counts)).toBeGreaterThan(0);
    expect(counts.outside, JSON.stringify(counts)).toBe(0);
    console.log('P10 race', JSON.stringify(counts));
  }, 600_000);
});

describe("attack atk-p P3: a plain debug-link name that is a link in the program's directory", () => {
  it('open and debugger_launch refuse a .debug/ link out of the root; where the shell is allowed, gdb does not read it', async () => {
    const r = await closed.tool('open', { program: 'dl/prog' });
    expect(r.isError).toBe(true);
    expect(r.text).toMatch(/has its debug file "prog\.debug" at .*\/dl\/\.debug\/prog\.debug, which leads out of the workspace root.*--allow-gdb-shell/);
    const launched = await closed.tool('debugger_launch', { program: 'dl/prog' });
    expect(launched.isError).toBe(true);
    expect(launched.text).toMatch(/leads out of the workspace root/);
    const { id } = await shell.ok('open', { program: 'dl/prog' });
    const sources = await shell.tool('call', { id, command: 'info sources' });
    expect(sources.text).not.toContain(outside);
    const ptype = await shell.tool('call', { id, command: 'ptype password' });
    expect(ptype.text).not.toMatch(/char \*/);
    await shell.ok('close', { id });
  });

  it('a link to /dev/zero, or a FIFO, is refused before gdb reads it; with the shell allowed gdb never sees it', async () => {
    for (const program of ['dl/zprog', 'dl/fprog']) {
      const r = await closed.tool('open', { program });
      expect(r.isError, r.text).toBe(true);
      expect(r.text).toMatch(/which (leads out of the workspace root|is not a regular file)/);
      const launched = await closed.tool('debugger_launch', { program, session_id: `s-${path.basename(program)}` });
      expect(launched.isError, launched.text).toBe(true);
      // Opened without the debug file (not copied), rather than gdb reading /dev/zero or waiting on the FIFO.
      const { id } = await shell.ok('open', { program });
      await shell.ok('close', { id });
    }
  });

  it('debug files inside the root, beside the program or in its .debug/, are still found (through the copy)', async () => {
    for (const program of ['ok/beside', 'ok/sub']) {
      const { id } = await closed.ok('open', { program });
      const ptype = await closed.tool('call', { id, command: 'ptype password' });
      expect(ptype.text, program).toMatch(/type = char \*/);
      const sources = await closed.tool('call', { id, command: 'info sources' });
      expect(sources.text).toMatch(/debugkit-prog-/);
      await closed.ok('close', { id });
    }
    const launched = await closed.tool('debugger_launch', { program: 'ok/beside', session_id: 'ok' });
    expect(launched.isError, launched.text).toBe(false);
    expect(launched.text).toMatch(/stopped at main/);
  });

  it('call add-symbol-file (no copy can stand for it) needs the shell', async () => {
    const { id } = await closed.ok('open', {});
    const r = await closed.tool('call', { id, command: 'add-symbol-file dl/prog 0' });
    expect(r.isError).toBe(true);
    expect(r.text).toMatch(/names no one plain file to copy.*--allow-gdb-shell/);
    await closed.ok('close', { id });
  });

  it('copyDebugFiles and outwardDebugLink: a missing absolute dwz file outside the root is outside', async () => {
    const prog = path.join(root, 'ok', 'alt');
    execFileSync('gcc', ['-g', '-o', prog, path.join(root, 'p.c')]);
    writeFileSync(`${prog}.alt`, `${outside}/not-yet.dwz\0${'b'.repeat(20)}`, 'latin1');
    execFileSync('objcopy', ['--add-section', `.gnu_debugaltlink=${prog}.alt`, prog]);
    expect(await outwardDebugLink(prog, root)).toMatch(/a path outside the workspace root that gdb would open if it were made/);
    // A plain program has nothing to bring.
    const plain = path.join(root, 'ok', 'plain');
    execFileSync('gcc', ['-o', plain, path.join(root, 'p.c')]);
    expect(await copyDebugFiles(plain, plain, root)).toBeUndefined();
  });
});
