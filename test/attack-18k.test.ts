// Attack 18k on issue 18. Found, and fixed since: a `gdb` key (no gdb:shell, an empty root) read
// any file of the server's user through a core it wrote into the root with `dump`: the core's
// NT_FILE note said the file was mapped at 0x10000000, gdb opened it when `core-file` loaded the
// core and `x/s 0x10000000` printed it (/etc/shadow, another data directory's audit key). A core is
// now loaded from a private copy whose mapped files are checked first (src/core/elf-core.ts).
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coreMappedFiles, mappingOutside } from '../src/core/elf-core.js';
import { answerText, gdbSession, plainCall, refused, startKeyedServer, stopAttackServer, type KeyedServer } from './helpers/attack.js';
import { compileC, tempDir } from './helpers/programs.js';

const SECRET = 'OUTSIDE-SECRET-5b1d';
const INSIDE = 'inside-text-90ce';
const ADDRESS = 0x10000000;

/** A minimal x86-64 Linux core whose NT_FILE note maps `file` at ADDRESS (the attacker's 720 bytes). */
function craftedCore(file: string): Buffer {
  const note = (type: number, desc: Buffer) => {
    const name = Buffer.from('CORE\0');
    const pad = (b: Buffer) => Buffer.concat([b, Buffer.alloc((4 - (b.length % 4)) % 4)]);
    const head = Buffer.alloc(12);
    head.writeUInt32LE(name.length, 0);
    head.writeUInt32LE(desc.length, 4);
    head.writeUInt32LE(type, 8);
    return Buffer.concat([head, pad(name), pad(desc)]);
  };
  const prstatus = Buffer.alloc(336);
  prstatus.writeUInt32LE(4242, 32);
  prstatus.writeBigUInt64LE(BigInt(ADDRESS), 112 + 16 * 8); // rip
  prstatus.writeBigUInt64LE(BigInt(ADDRESS), 112 + 19 * 8); // rsp
  const prpsinfo = Buffer.alloc(136);
  prpsinfo.write('prog', 40);
  prpsinfo.write('./prog', 56);
  const mapping = Buffer.alloc(16 + 24);
  mapping.writeBigUInt64LE(1n, 0);
  mapping.writeBigUInt64LE(4096n, 8);
  mapping.writeBigUInt64LE(BigInt(ADDRESS), 16);
  mapping.writeBigUInt64LE(BigInt(ADDRESS + 0x100000), 24);
  const notes = Buffer.concat([note(1, prstatus), note(3, prpsinfo), note(0x46494c45, Buffer.concat([mapping, Buffer.from(`${file}\0`)]))]);
  const elf = Buffer.alloc(64);
  Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1]).copy(elf);
  elf.writeUInt16LE(4, 16); // ET_CORE
  elf.writeUInt16LE(62, 18); // x86-64
  elf.writeUInt32LE(1, 20);
  elf.writeBigUInt64LE(64n, 32); // program headers right after this header
  elf.writeUInt16LE(64, 52);
  elf.writeUInt16LE(56, 54);
  elf.writeUInt16LE(1, 56);
  elf.writeUInt16LE(64, 58);
  const ph = Buffer.alloc(56);
  ph.writeUInt32LE(4, 0); // PT_NOTE
  ph.writeUInt32LE(4, 4);
  ph.writeBigUInt64LE(BigInt(64 + 56), 8);
  ph.writeBigUInt64LE(BigInt(notes.length), 32);
  ph.writeBigUInt64LE(4n, 48);
  return Buffer.concat([elf, ph, notes]);
}

describe('attack 18k: a core that maps files from outside the root', () => {
  let s: KeyedServer;
  let base: string;
  let root: string;
  let victim: string;

  beforeAll(async () => {
    base = tempDir('debugkit-attack18k-');
    root = path.join(base, 'root');
    mkdirSync(root);
    victim = path.join(base, 'secret.txt');
    writeFileSync(victim, `${SECRET}\n`, { mode: 0o644 });
    writeFileSync(path.join(root, 'inside.txt'), `${INSIDE}\n`);
    writeFileSync(path.join(root, 'out.core'), craftedCore(victim));
    writeFileSync(path.join(root, 'in.core'), craftedCore(path.join(root, 'inside.txt')));
    // A real core of a real program in the root: it maps the C library from /usr/lib.
    const prog = compileC(root, 'segv');
    execFileSync('gdb', ['-batch', '-nx', '-ex', 'run', '-ex', `gcore ${path.join(root, 'real.core')}`, prog], { stdio: 'pipe', cwd: root });
    s = await startKeyedServer(root, { debug: 'gdb' }, ['--toolsets', 'gdb']);
  }, 60_000);
  afterAll(async () => {
    await stopAttackServer(s, undefined);
    rmSync(base, { recursive: true, force: true });
  });

  /** The answers to `commands` in one fresh gdb session of the `gdb` key. */
  const session = async (...commands: string[]) => {
    const key = s.keys.debug!.key;
    const id = await gdbSession(s, key);
    const answers = [];
    for (const command of commands) answers.push(await plainCall(s, key, 'call', { id, command }));
    await plainCall(s, key, 'close', { id });
    return answers;
  };
  const load = (core: string, ...then: string[]) => session(`core-file ${core}`, ...then);

  it('is refused, naming the file; what gdb shows afterwards holds nothing of it', async () => {
    const [loaded, shown] = await load('out.core', `x/s ${ADDRESS}`);
    expect(refused(loaded!)).toBe(true);
    expect(answerText(loaded!)).toContain(`the core maps ${victim}, outside the workspace root`);
    expect(answerText(shown!)).not.toContain(SECRET);
  });

  it('one that maps a file inside the root is loaded and read (the check is not a blanket refusal)', async () => {
    const [loaded, shown] = await load('in.core', `x/s ${ADDRESS}`);
    expect(refused(loaded!)).toBe(false);
    expect(answerText(shown!)).toContain(INSIDE);
  });

  it("a real program's core, mapping the system's libraries, loads", async () => {
    const names = (await coreMappedFiles(path.join(root, 'real.core')))!;
    expect(names.some((n) => n.startsWith('/usr/lib') || n.startsWith('/lib'))).toBe(true);
    expect(await mappingOutside(names, root)).toBeUndefined();
    const [, loaded, bt] = await session('file segv', 'core-file real.core', 'bt');
    expect(refused(loaded!), answerText(loaded!)).toBe(false);
    expect(answerText(loaded!)).toContain('SIGSEGV');
    expect(answerText(bt!)).toMatch(/ in main \(\) at .*segv\.c/);
  });

  it('a spelling that names no one plain file to copy is refused without gdb:shell', async () => {
    const [quoted] = await load('"out.core"');
    expect(refused(quoted!)).toBe(true);
    const [nested, shown] = await session('interpreter-exec console "core-file out.core"', `x/s ${ADDRESS}`);
    expect(refused(nested!)).toBe(true);
    expect(answerText(shown!)).not.toContain(SECRET);
  });

  it('reads only the notes it needs: a file that is not a core has no mappings, a cut one throws', async () => {
    expect(await coreMappedFiles(path.join(root, 'inside.txt'))).toBeUndefined();
    const cut = path.join(base, 'cut.core');
    writeFileSync(cut, craftedCore(victim).subarray(0, 80));
    await expect(coreMappedFiles(cut)).rejects.toThrow(/cut short/);
    expect(await mappingOutside(['relative/name'], root)).toBe('relative/name');
    expect(await mappingOutside([path.join(base, 'gone (deleted)')], root)).toBeUndefined();
    expect(await mappingOutside(['/etc/shadow'], root)).toBe('/etc/shadow');
  });
});
