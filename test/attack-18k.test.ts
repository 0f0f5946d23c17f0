// Attack 18k on issue 18. Found, and fixed since: a `gdb` key (no gdb:shell, an empty root) read
// any file of the server's user through a core it wrote into the root with `dump`: the core's
// NT_FILE note said the file was mapped at 0x10000000, gdb opened it when `core-file` loaded the
// core and `x/s 0x10000000` printed it (/etc/shadow, another data directory's audit key). A core is
// now loaded from a private copy whose mapped files are checked first (src/core/elf-core.ts).
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coreMappedFiles, mappingOutside } from '../src/core/elf-core.js';
import { scanArtefacts } from '../src/toolsets/debugger/similar/artefacts.js';
import { answerText, gdbSession, plainCall, refused, startKeyedServer, stopAttackServer, type KeyedServer } from './helpers/attack.js';
import { compileC, tempDir } from './helpers/programs.js';

const SECRET = 'OUTSIDE-SECRET-5b1d';
const INSIDE = 'inside-text-90ce';
const ADDRESS = 0x10000000;

/** One ELF note: its header, name and description, each padded to 4 bytes. */
function coreNote(type: number, desc: Buffer, named = 'CORE'): Buffer {
  const name = Buffer.from(`${named}\0`);
  const pad = (b: Buffer) => Buffer.concat([b, Buffer.alloc((4 - (b.length % 4)) % 4)]);
  const head = Buffer.alloc(12);
  head.writeUInt32LE(name.length, 0);
  head.writeUInt32LE(desc.length, 4);
  head.writeUInt32LE(type, 8);
  return Buffer.concat([head, pad(name), pad(desc)]);
}

/** The notes every core has: the thread's registers (pc and sp at `pc`) and the process's name (`program`). */
function processNotes(pc: number, program = './prog'): Buffer {
  const prstatus = Buffer.alloc(336);
  prstatus.writeUInt32LE(4242, 32);
  prstatus.writeBigUInt64LE(BigInt(pc), 112 + 16 * 8); // rip
  prstatus.writeBigUInt64LE(BigInt(pc), 112 + 19 * 8); // rsp
  const prpsinfo = Buffer.alloc(136);
  prpsinfo.write(path.basename(program).slice(0, 15), 40);
  prpsinfo.write(program, 56);
  return Buffer.concat([coreNote(1, prstatus), coreNote(3, prpsinfo)]);
}

/**
 * A minimal x86-64 Linux core whose NT_FILE note maps `file` at ADDRESS (the attacker's 720
 * bytes); `noteName`: the NT_FILE note's name (BFD reads it under any); `phnum`: the header's
 * program header count as written (0xffff: PN_XNUM).
 */
function craftedCore(file: string, { noteName = 'CORE', phnum = 1 }: { noteName?: string; phnum?: number } = {}): Buffer {
  const mapping = Buffer.alloc(16 + 24);
  mapping.writeBigUInt64LE(1n, 0);
  mapping.writeBigUInt64LE(4096n, 8);
  mapping.writeBigUInt64LE(BigInt(ADDRESS), 16);
  mapping.writeBigUInt64LE(BigInt(ADDRESS + 0x100000), 24);
  const notes = Buffer.concat([processNotes(ADDRESS), coreNote(0x46494c45, Buffer.concat([mapping, Buffer.from(`${file}\0`)]), noteName)]);
  const elf = Buffer.alloc(64);
  Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1]).copy(elf);
  elf.writeUInt16LE(4, 16); // ET_CORE
  elf.writeUInt16LE(62, 18); // x86-64
  elf.writeUInt32LE(1, 20);
  elf.writeBigUInt64LE(64n, 32); // program headers right after this header
  elf.writeUInt16LE(64, 52);
  elf.writeUInt16LE(56, 54);
  elf.writeUInt16LE(phnum, 56);
  elf.writeUInt16LE(64, 58);
  const ph = Buffer.alloc(56);
  ph.writeUInt32LE(4, 0); // PT_NOTE
  ph.writeUInt32LE(4, 4);
  ph.writeBigUInt64LE(BigInt(64 + 56), 8);
  ph.writeBigUInt64LE(BigInt(notes.length), 32);
  ph.writeBigUInt64LE(4n, 48);
  return Buffer.concat([elf, ph, notes]);
}

/**
 * An executable whose .dynamic holds DT_DEBUG, and a core with no NT_FILE note whose memory holds
 * the r_debug and link map that DT_DEBUG leads to, naming `library` (loaded at SOLIB_BIAS, its
 * .dynamic at `dynamicAt` in it) as a shared library: gdb opens it and serves memory from it.
 */
const SOLIB_BIAS = 0x7f0000000000;
function craftedSolibCore(library: string, dynamicAt: number): { exec: Buffer; core: Buffer } {
  const DYN = 0x600000;
  const header = (type: number, phoff: number, phnum: number, shoff = 0, shnum = 0, shstrndx = 0, entry = 0) => {
    const h = Buffer.alloc(64);
    Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1]).copy(h);
    h.writeUInt16LE(type, 16);
    h.writeUInt16LE(62, 18);
    h.writeUInt32LE(1, 20);
    h.writeBigUInt64LE(BigInt(entry), 24);
    h.writeBigUInt64LE(BigInt(phoff), 32);
    h.writeBigUInt64LE(BigInt(shoff), 40);
    h.writeUInt16LE(64, 52);
    h.writeUInt16LE(56, 54);
    h.writeUInt16LE(phnum, 56);
    h.writeUInt16LE(64, 58);
    h.writeUInt16LE(shnum, 60);
    h.writeUInt16LE(shstrndx, 62);
    return h;
  };
  const segment = (type: number, flags: number, offset: number, vaddr: number, filesz: number, memsz: number, align: number) => {
    const p = Buffer.alloc(56);
    p.writeUInt32LE(type, 0);
    p.writeUInt32LE(flags, 4);
    p.writeBigUInt64LE(BigInt(offset), 8);
    p.writeBigUInt64LE(BigInt(vaddr), 16);
    p.writeBigUInt64LE(BigInt(vaddr), 24);
    p.writeBigUInt64LE(BigInt(filesz), 32);
    p.writeBigUInt64LE(BigInt(memsz), 40);
    p.writeBigUInt64LE(BigInt(align), 48);
    return p;
  };
  const section = (name: number, type: number, flags: number, addr: number, offset: number, size: number, align: number, entsize: number) => {
    const s = Buffer.alloc(64);
    s.writeUInt32LE(name, 0);
    s.writeUInt32LE(type, 4);
    s.writeBigUInt64LE(BigInt(flags), 8);
    s.writeBigUInt64LE(BigInt(addr), 16);
    s.writeBigUInt64LE(BigInt(offset), 24);
    s.writeBigUInt64LE(BigInt(size), 32);
    s.writeBigUInt64LE(BigInt(align), 48);
    s.writeBigUInt64LE(BigInt(entsize), 56);
    return s;
  };
  // The executable: .dynamic = [DT_DEBUG 0, DT_NULL].
  const dyn = Buffer.alloc(32);
  dyn.writeBigUInt64LE(21n, 0);
  const shstr = Buffer.from('\0.dynamic\0.shstrtab\0');
  const dynoff = 64 + 56 * 2;
  const shstroff = dynoff + dyn.length;
  const shoff = (shstroff + shstr.length + 7) & ~7;
  const execHead = Buffer.concat([header(2, 64, 2, shoff, 3, 2, 0x400000), segment(1, 5, 0, 0x400000, dynoff, dynoff, 0x1000), segment(2, 6, dynoff, DYN, dyn.length, dyn.length, 8), dyn, shstr]);
  const exec = Buffer.concat([execHead, Buffer.alloc(shoff - execHead.length), Buffer.alloc(64), section(1, 6, 3, DYN, dynoff, dyn.length, 8, 16), section(10, 3, 0, 0, shstroff, shstr.length, 1, 0)]);
  // The core's one page of memory at DYN: DT_DEBUG -> r_debug -> link map [the program, `library`].
  const mem = Buffer.alloc(0x1000);
  mem.writeBigUInt64LE(21n, 0);
  mem.writeBigUInt64LE(BigInt(DYN + 0x100), 8);
  mem.writeUInt32LE(1, 0x100);
  mem.writeBigUInt64LE(BigInt(DYN + 0x200), 0x108);
  mem.writeBigUInt64LE(BigInt(DYN + 0x400), 0x208); // l_name: ""
  mem.writeBigUInt64LE(BigInt(DYN + 0x300), 0x218); // l_next
  mem.writeBigUInt64LE(BigInt(SOLIB_BIAS), 0x300); // l_addr
  mem.writeBigUInt64LE(BigInt(DYN + 0x410), 0x308); // l_name
  mem.writeBigUInt64LE(BigInt(SOLIB_BIAS + dynamicAt), 0x310); // l_ld
  mem.writeBigUInt64LE(BigInt(DYN + 0x200), 0x320); // l_prev
  mem.write(`${library}\0`, 0x410);
  const threadNotes = processNotes(0x400000, 'x.elf');
  const noteoff = 64 + 56 * 2;
  const memoff = (noteoff + threadNotes.length + 0xfff) & ~0xfff;
  const coreHead = Buffer.concat([header(4, 64, 2), segment(4, 4, noteoff, 0, threadNotes.length, 0, 4), segment(1, 6, memoff, DYN, mem.length, mem.length, 0x1000), threadNotes]);
  return { exec, core: Buffer.concat([coreHead, Buffer.alloc(memoff - coreHead.length), mem]) };
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
    writeFileSync(path.join(root, 'named.core'), craftedCore(victim, { noteName: 'LINUX' }));
    writeFileSync(path.join(root, 'xnum.core'), craftedCore(victim, { phnum: 0xffff }));
    // /proc/self/cwd is gdb's working directory for gdb (the root), debugkit's for debugkit.
    writeFileSync(path.join(root, 'proc.core'), craftedCore(`/proc/self/cwd/../${path.basename(victim)}`));
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

  it('is refused however the mapping is spelled: a note of another name, PN_XNUM, a name through /proc (attack 18l)', async () => {
    for (const core of ['named.core', 'xnum.core', 'proc.core']) {
      const [loaded, shown] = await load(core, `x/s ${ADDRESS}`);
      expect(refused(loaded!), `${core}: ${answerText(loaded!)}`).toBe(true);
      expect(answerText(shown!), core).not.toContain(SECRET);
    }
  });

  it('is refused when its link map names a library outside the root (no NT_FILE at all); one inside the root loads', async () => {
    const secretSo = path.join(base, 'secret.so');
    writeFileSync(path.join(base, 'secret.c'), `const char secret_data[] = "${SECRET} in a library";\nint secret_fn(void) { return 42; }\n`);
    execFileSync('gcc', ['-shared', '-fPIC', '-o', secretSo, path.join(base, 'secret.c')]);
    const dynamicAt = parseInt(/\.dynamic\s+\S+\s+([0-9a-f]+)/.exec(execFileSync('readelf', ['-SW', secretSo], { encoding: 'utf8' }))![1]!, 16);
    const dataAt = parseInt(/^([0-9a-f]+) . secret_data$/m.exec(execFileSync('nm', [secretSo], { encoding: 'utf8' }))![1]!, 16);
    const outside = craftedSolibCore(secretSo, dynamicAt);
    writeFileSync(path.join(root, 'x.elf'), outside.exec, { mode: 0o755 });
    writeFileSync(path.join(root, 'solib-out.core'), outside.core);
    const [, loaded, listed, shown] = await session('file x.elf', 'core-file solib-out.core', 'info sharedlibrary', `x/s ${SOLIB_BIAS + dataAt}`);
    expect(refused(loaded!), answerText(loaded!)).toBe(true);
    expect(answerText(loaded!)).toContain(`the core names ${secretSo} as a shared library, outside the workspace root`);
    expect(answerText(listed!)).not.toContain(secretSo);
    expect(answerText(shown!)).not.toContain(SECRET);
    // The core first, the program after (no link map until then), or `sharedlibrary` after both
    // (attack 18m): the command that made gdb read the link map is the one refused. The library's
    // symbols go with the core (they stayed).
    for (const then of [['file x.elf'], ['file x.elf', 'sharedlibrary']]) {
      const answers = await session('core-file solib-out.core', ...then, 'info sharedlibrary', `x/s ${SOLIB_BIAS + dataAt}`, 'info functions secret_fn');
      expect(
        answers.some((a) => refused(a) && answerText(a).includes(`the core names ${secretSo} as a shared library`)),
        then.join(', '),
      ).toBe(true);
      for (const a of answers.slice(-3)) {
        expect(answerText(a)).not.toContain(SECRET);
        expect(answerText(a)).not.toContain(secretSo);
      }
    }
    // The same core naming a copy inside the root: gdb reads it (the check is what refused above).
    copyFileSync(secretSo, path.join(root, 'inside.so'));
    writeFileSync(path.join(root, 'solib-in.core'), craftedSolibCore(path.join(root, 'inside.so'), dynamicAt).core);
    const [, accepted, , read] = await session('file x.elf', 'core-file solib-in.core', 'info sharedlibrary', `x/s ${SOLIB_BIAS + dataAt}`);
    expect(refused(accepted!), answerText(accepted!)).toBe(false);
    expect(answerText(read!)).toContain(SECRET);
  });

  it('debugger_find_similar_bugs (a :read key) reads no such core, and no backtrace read through an outside library; a real one is read', async () => {
    const crash = path.join(root, 'crash');
    mkdirSync(crash, { recursive: true });
    // With their programs beside them: the link map is found through x.elf's DT_DEBUG.
    for (const file of ['out.core', 'proc.core', 'solib-out.core', 'x.elf', 'real.core', 'segv']) copyFileSync(path.join(root, file), path.join(crash, file));
    const { signatures } = await scanArtefacts(crash, root, 'gdb', Date.now() + 60_000);
    expect(signatures.map((sig) => sig.source)).toEqual(['core crash/real.core']);
  }, 60_000);

  it('reads only the notes it needs: a file that is not a core has no mappings, a cut one throws', async () => {
    expect(await coreMappedFiles(path.join(root, 'inside.txt'))).toBeUndefined();
    const cut = path.join(base, 'cut.core');
    writeFileSync(cut, craftedCore(victim).subarray(0, 80));
    await expect(coreMappedFiles(cut)).rejects.toThrow(/cut short/);
    expect(await mappingOutside(['relative/name'], root)).toBe('relative/name');
    expect(await mappingOutside([path.join(base, 'gone (deleted)')], root)).toBeUndefined();
    expect(await mappingOutside(['/etc/shadow'], root)).toBe('/etc/shadow');
    expect(await mappingOutside(['/x/../proc/1/root/etc/hostname'], root)).toBe('/x/../proc/1/root/etc/hostname');
    await expect(coreMappedFiles(path.join(root, 'xnum.core'))).rejects.toThrow(/PN_XNUM/);
    expect(await coreMappedFiles(path.join(root, 'named.core'))).toEqual([victim]);
  });
});
