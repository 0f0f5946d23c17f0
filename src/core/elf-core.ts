import { closeSync, constants } from 'node:fs';
import { chmod, lstat, mkdir, open, realpath, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { containment, copyIntoPrivate, isInside, MAX_PROGRAM_COPY_BYTES, openInside, swappable } from './paths.js';

/** ELF's note of the files mapped into a process (NT_FILE, "FILE"), named "CORE". */
const NT_FILE = 0x46494c45;
const PT_NOTE = 4;
const ET_CORE = 4;
/** What is read of a core's notes at most: a real NT_FILE lists a few thousand names. */
const MAX_NOTE_BYTES = 8 * 2 ** 20;
const PN_XNUM = 0xffff;

/**
 * The file names a core's NT_FILE notes say were mapped into the process. GDB opens each of them
 * when it loads the core and reads the memory of those ranges from them, whatever the files are:
 * a core is a list of files to read as much as a picture of memory. Undefined for a file that is
 * not an ELF core; throws when its notes cannot be read within bounds.
 */
export async function coreMappedFiles(file: string): Promise<string[] | undefined> {
  const handle = await open(file, 'r');
  try {
    const elf = await elfHeader(handle);
    if (!elf) return undefined;
    const { ident, wide, u16, u32, word } = elf;
    if (u16(ident, 16) !== ET_CORE) return undefined;
    const phoff = word(ident, wide ? 32 : 28);
    const phentsize = u16(ident, wide ? 54 : 42);
    const phnum = u16(ident, wide ? 56 : 44);
    // PN_XNUM: the real count is in section header 0, which BFD honours; no real core needs it.
    if (phnum === PN_XNUM) throw new Error('it numbers its program headers the extended way (PN_XNUM)');
    if (phentsize < (wide ? 56 : 32)) throw new Error('its program headers are malformed');
    const headers = Buffer.alloc(phentsize * phnum);
    if ((await handle.read(headers, 0, headers.length, phoff)).bytesRead < headers.length) throw new Error('its program headers are cut short');
    const names: string[] = [];
    let budget = MAX_NOTE_BYTES;
    for (let i = 0; i < phnum; i++) {
      const h = i * phentsize;
      if (u32(headers, h) !== PT_NOTE) continue;
      const offset = word(headers, h + (wide ? 8 : 4));
      const size = word(headers, h + (wide ? 32 : 16));
      if (size > budget) throw new Error(`its notes are over ${MAX_NOTE_BYTES / 2 ** 20} MiB`);
      budget -= size;
      const notes = Buffer.alloc(size);
      const got = (await handle.read(notes, 0, size, offset)).bytesRead;
      names.push(...fileNotes(notes.subarray(0, got), { wide, u32, word }));
    }
    return names;
  } finally {
    await handle.close();
  }
}

/** An ELF file's header (its first 64 bytes) and readers of its byte order and word size; undefined for a file that is not ELF. */
async function elfHeader(handle: FileHandle) {
  const ident = Buffer.alloc(64);
  const { bytesRead } = await handle.read(ident, 0, 64, 0);
  if (bytesRead < 52 || ident.toString('latin1', 0, 4) !== '\x7fELF') return undefined;
  const wide = ident[4] === 2;
  const little = ident[5] !== 2;
  const u16 = (b: Buffer, at: number) => (little ? b.readUInt16LE(at) : b.readUInt16BE(at));
  const u32 = (b: Buffer, at: number) => (little ? b.readUInt32LE(at) : b.readUInt32BE(at));
  const word = (b: Buffer, at: number) => (wide ? Number(little ? b.readBigUInt64LE(at) : b.readBigUInt64BE(at)) : u32(b, at));
  return { ident, wide, u16, u32, word };
}

interface Reader {
  wide: boolean;
  u32: (b: Buffer, at: number) => number;
  word: (b: Buffer, at: number) => number;
}

/** The names in the NT_FILE notes of one note segment (count, page size, count ranges, then count names), under any note name. */
function fileNotes(notes: Buffer, { wide, u32, word }: Reader): string[] {
  const names: string[] = [];
  const align = (n: number) => (n + 3) & ~3;
  for (let at = 0; at + 12 <= notes.length;) {
    const namesz = u32(notes, at);
    const descsz = u32(notes, at + 4);
    const type = u32(notes, at + 8);
    const nameAt = at + 12;
    const descAt = nameAt + align(namesz);
    if (descAt + descsz > notes.length) break;
    // Whatever the note's name: BFD reads an NT_FILE under any name but a few of other systems,
    // and a check that skipped one gdb reads would be no check.
    if (type === NT_FILE) {
      const desc = notes.subarray(descAt, descAt + descsz);
      const w = wide ? 8 : 4;
      const count = desc.length >= 2 * w ? word(desc, 0) : 0;
      const first = 2 * w + 3 * w * count;
      if (first <= desc.length) names.push(...desc.toString('utf8', first).split('\0').filter(Boolean).slice(0, count));
    }
    at = descAt + align(descsz);
  }
  return names;
}

/** Where a core may map files from outside the root: system libraries and programs, which every user may read. */
const SYSTEM_DIRS = ['/usr/lib', '/usr/lib32', '/usr/lib64', '/usr/libx32', '/usr/libexec', '/usr/share', '/usr/bin', '/usr/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/bin', '/sbin'];

/**
 * The first file a core would have GDB read that a key confined to `root` must not: a name that
 * leads out of the root (links resolved) to anything but a world-readable regular file of the
 * system's own (its libraries and programs, which real cores map) or /dev/zero. A name that does
 * not exist is fine (GDB says it cannot open it); a relative one is not (GDB would look it up on
 * its PATH). Undefined when every name is fine.
 */
export async function mappingOutside(names: readonly string[], root: string): Promise<string | undefined> {
  const realRoot = await realpath(root);
  for (const name of new Set(names)) {
    if (!path.isAbsolute(name)) return name;
    // /proc/self, /proc/<pid>/cwd, fd, root: they lead elsewhere for gdb than for this process, so
    // what is judged here would not be what gdb opens.
    if (path.resolve(name).startsWith('/proc/')) return name;
    if (containment(realRoot, name).kind !== 'outside') continue;
    try {
      await lstat(name);
    } catch {
      continue; // gone (a deleted file's "(deleted)" name): nothing to read
    }
    let real: string;
    try {
      real = await realpath(name);
    } catch {
      return name;
    }
    if (real === '/dev/zero') continue;
    const stats = await stat(real).catch(() => undefined);
    const system = SYSTEM_DIRS.some((dir) => real.startsWith(`${dir}/`));
    if (!system || !stats?.isFile() || (stats.mode & 0o004) === 0) return name;
  }
  return undefined;
}

/** What is read of a program's section table at most: every header of a real program, its section names. */
const MAX_SECTION_HEADERS = 1 << 20;
const MAX_SECTION_NAMES = 16 * 2 ** 20;
const MAX_LINK_NAME = 4096;
/** e_shnum's and e_shstrndx's "see section 0" (ELF extended numbering, which BFD reads). */
const SHN_XINDEX = 0xffff;

/** The files a program names for gdb to read beside it: its separate debug file and its dwz file. */
export interface DebugLinks {
  /** `.gnu_debuglink`: joined, as written, to the program's directory and to the debug directories. */
  debuglink?: string;
  /** `.gnu_debugaltlink`: the dwz file, opened by its path (absolute, or from the program's directory). */
  altlink?: string;
}

/** DebugLinks, and where in the file `altlink` is written (its NUL and the dwz file's build-id follow it). */
interface PlacedLinks extends DebugLinks {
  altlinkAt?: number;
}

/**
 * The debug files a program names (`.gnu_debuglink`, `.gnu_debugaltlink`); undefined for a file
 * that is not ELF or has no section table; `unreadable` for a section table debugkit cannot read
 * whole within its bounds (gdb may still read it: such a program's links are unknown). Reads are
 * bounded, and follow ELF as BFD does (extended numbering included; attack 18s N1).
 */
export async function debugLinks(file: string): Promise<DebugLinks | 'unreadable' | undefined> {
  const links = await placedLinks(file);
  if (typeof links !== 'object') return links;
  const { altlinkAt: _, ...named } = links;
  return named;
}

/** debugLinks, with where the dwz file's name is written. */
async function placedLinks(file: string): Promise<PlacedLinks | 'unreadable' | undefined> {
  const handle = await open(file, 'r');
  try {
    const elf = await elfHeader(handle);
    if (!elf) return undefined;
    const { ident, wide, u16, u32, word } = elf;
    const shoff = word(ident, wide ? 40 : 32);
    const shentsize = u16(ident, wide ? 58 : 46);
    if (shoff === 0) return undefined;
    if (shentsize < (wide ? 64 : 40)) return 'unreadable';
    const read = async (offset: number, size: number) => {
      const b = Buffer.alloc(size);
      return b.subarray(0, (await handle.read(b, 0, size, offset)).bytesRead);
    };
    const header0 = await read(shoff, shentsize);
    if (header0.length < shentsize) return 'unreadable';
    let shnum = u16(ident, wide ? 60 : 48);
    let shstrndx = u16(ident, wide ? 62 : 50);
    if (shnum === 0) shnum = word(header0, wide ? 32 : 20);
    if (shstrndx === SHN_XINDEX) shstrndx = u32(header0, wide ? 40 : 24);
    if (shnum === 0) return undefined;
    if (shnum > MAX_SECTION_HEADERS || shstrndx >= shnum) return 'unreadable';
    const headers = await read(shoff, shentsize * shnum);
    if (headers.length < shentsize * shnum) return 'unreadable';
    const section = (i: number) => ({ name: u32(headers, i * shentsize), offset: word(headers, i * shentsize + (wide ? 24 : 16)), size: word(headers, i * shentsize + (wide ? 32 : 20)) });
    const names = section(shstrndx);
    if (names.size > MAX_SECTION_NAMES) return 'unreadable';
    const strings = await read(names.offset, names.size);
    const links: PlacedLinks = {};
    for (let i = 0; i < shnum; i++) {
      const s = section(i);
      if (s.name >= strings.length) continue; // no name gdb could read either
      const end = strings.indexOf(0, s.name);
      const name = strings.toString('latin1', s.name, end < 0 ? strings.length : end);
      const field = name === '.gnu_debuglink' ? 'debuglink' : name === '.gnu_debugaltlink' ? 'altlink' : undefined;
      // The first of each, as gdb takes it.
      if (!field || links[field] !== undefined) continue;
      const data = await read(s.offset, Math.min(s.size, MAX_LINK_NAME));
      const nul = data.indexOf(0);
      links[field] = data.toString('latin1', 0, nul < 0 ? data.length : nul);
      if (field === 'altlink' && nul >= 0) links.altlinkAt = s.offset;
    }
    return links;
  } finally {
    await handle.close();
  }
}

/** The name a program's `.gnu_debuglink` gives its separate debug file, if it has one (debugLinks). */
export async function debugLinkName(file: string): Promise<string | undefined> {
  const links = await debugLinks(file);
  return typeof links === 'object' ? links.debuglink : undefined;
}

/**
 * What `file` makes gdb read outside the program's directory, said for a refusal: a debug link
 * with a `/` (joined to the program's directory as written), a dwz link with one (absolute, or
 * from the program's directory), or a section table too odd to tell. The one rule for the gdb and
 * debugger toolsets; undefined for plain names, none, or a file gdb reads no sections of.
 */
export async function outwardDebugLink(file: string, root: string): Promise<string | undefined> {
  let links: Awaited<ReturnType<typeof debugLinks>>;
  try {
    links = await debugLinks(file);
  } catch {
    return undefined; // not readable as a file: gdb cannot load it either
  }
  if (links === 'unreadable') return 'has a section table debugkit cannot read whole, so where gdb would look for its debug files is unknown';
  if (links?.debuglink?.includes('/')) return `names its debug file "${links.debuglink}" (.gnu_debuglink), a path gdb would follow out of the program's directory`;
  const alt = links?.altlink;
  if (alt?.includes('/')) {
    if (!path.isAbsolute(alt)) return `names its dwz file "${alt}" (.gnu_debugaltlink), a path gdb would open out of the program's directory`;
    const why = await absoluteAltlinkOut(alt, root);
    if (why) return `names its dwz file "${alt}" (.gnu_debugaltlink), ${why}`;
  }
  return undefined;
}

/** Where gdb finds a separate debug file of a system program (its debug-file-directory): the one place out of the root a debug file may come from. */
const SYSTEM_DEBUG_DIR = '/usr/lib/debug/';

/**
 * Why gdb must not open an absolute dwz file name, which it opens as written, or undefined: one
 * leading out of the root must be a system file (Debian's own programs name theirs under
 * /usr/lib/debug/.dwz, as a core may map one: mappingOutside), and one that does not exist there
 * yet, but under /usr/lib/debug, is outside all the same (it could be made after the check; attack atk-p P3); whatever it
 * leads to must be a regular file (a device, /dev/zero included, or a FIFO would have gdb read forever).
 */
async function absoluteAltlinkOut(alt: string, root: string): Promise<string | undefined> {
  const where = containment(await realpath(root), alt);
  if (where.kind === 'missing') return undefined; // inside the root, not there: gdb says it cannot open it
  const stats = await stat(alt).catch(() => undefined);
  if (where.kind === 'outside') {
    // Not there yet: only the system's debug directory, which only root writes, may name it.
    if (!stats) return path.resolve(alt).startsWith(SYSTEM_DEBUG_DIR) ? undefined : 'a path outside the workspace root that gdb would open if it were made';
    if ((await mappingOutside([alt], root)) !== undefined) return "a path gdb would open out of the program's directory";
  }
  return stats?.isFile() === false ? 'which is not a regular file' : undefined;
}

/**
 * Puts beside a program's private copy (`copy`, in a directory of its own) the debug files gdb
 * would find by plain name beside the program itself (`real`, checked inside `root`): for a
 * `.gnu_debuglink` NAME, `<dir>/NAME` and `<dir>/.debug/NAME`; for a `.gnu_debugaltlink` NAME,
 * `<dir>/NAME`; and a found debug file's own plain dwz name beside it. gdb, handed the copy, looks
 * only beside the copy (and in its debug-file-directory), so it reads what was checked here, never
 * a workspace name a writer could point elsewhere afterwards (attack atk-p P3, P10). Each must lead
 * to a regular file inside the root, or to a system debug file under /usr/lib/debug: the reason
 * otherwise (nothing is copied then). Names with a `/` are outwardDebugLink's to judge.
 */
export async function copyDebugFiles(copy: string, real: string, root: string, { judgeOnly = false } = {}): Promise<string | undefined> {
  const realRoot = await realpath(root);
  return bringLinked(copy, path.dirname(real), realRoot, true, judgeOnly);
}

/**
 * The plain-named files `file` (a copy) links to, brought from `from` beside it; `debuglink`: its
 * .gnu_debuglink too, not only its dwz file; `judgeOnly`: nothing copied (a key's scopes are
 * judged before the copy is made), the found debug files' own links read where they are.
 */
async function bringLinked(file: string, from: string, realRoot: string, debuglink: boolean, judgeOnly: boolean): Promise<string | undefined> {
  let links: Awaited<ReturnType<typeof placedLinks>>;
  try {
    links = await placedLinks(file);
  } catch {
    return undefined;
  }
  if (typeof links !== 'object') return undefined;
  const to = path.dirname(file);
  const plain = (name: string | undefined) => (name && !name.includes('/') && name !== '.' && name !== '..' ? name : undefined);
  const wanted: { sub: string; name: string; kind: string }[] = [];
  const link = debuglink ? plain(links.debuglink) : undefined;
  if (link) wanted.push({ sub: '', name: link, kind: 'debug file' }, { sub: '.debug', name: link, kind: 'debug file' });
  const alt = plain(links.altlink);
  if (alt) wanted.push({ sub: '', name: alt, kind: 'dwz file' });
  for (const { sub, name, kind } of wanted) {
    const target = path.join(to, sub, name);
    if (target === file) continue; // the program's own name: gdb would find the program itself
    const source = path.join(from, sub, name);
    const why = await bringOne(source, judgeOnly ? undefined : target, realRoot);
    if (why) return `has its ${kind} "${name}" at ${source}, which ${why}`;
    // A separate debug file names its dwz file itself, beside it.
    const brought = judgeOnly ? source : target;
    if (kind === 'debug file' && (await lstat(brought).catch(() => undefined))) {
      const inner = (await outwardDebugLink(brought, realRoot)) ?? (await bringLinked(brought, path.dirname(source), realRoot, false, judgeOnly));
      if (inner) return `has its debug file "${name}" at ${source}, which ${inner}`;
    }
  }
  return bringAbsoluteAlt(file, links, realRoot, judgeOnly);
}

/**
 * An absolute dwz name inside the root (or to be made there): gdb would open that name itself when
 * it loads `file`, after the check, so a writer could swap it for a link out of the root in
 * between (attack atk-r R3: 11 of 40 opens read the outside file). The checked dwz file is copied
 * beside `file` instead, and `file`'s `.gnu_debugaltlink` rewritten to name that copy from its own
 * directory: gdb never opens a workspace name for it. The new name has the old one's length (gdb
 * reads the build-id right after the name's first NUL), so it is `./` repeated, then a short name.
 * A name not there: `file` names a file of its private directory that is not there either.
 * A name out of the root that no other user can make lead elsewhere (swappable) is left as it is:
 * absoluteAltlinkOut judged it (a system file, which only root writes).
 */
async function bringAbsoluteAlt(file: string, links: PlacedLinks, realRoot: string, judgeOnly: boolean): Promise<string | undefined> {
  const alt = links.altlink;
  if (!alt || !path.isAbsolute(alt)) return undefined;
  // Judged by where it reads as well as where it leads now: a name in the root that leads out at
  // this moment may lead back in when gdb opens it, and the other way round.
  const systemOnly = !isInside(realRoot, path.resolve(alt)) && containment(realRoot, alt).kind === 'outside' && swappable(alt) === undefined;
  if (systemOnly) return undefined;
  const to = path.dirname(file);
  const name = await privateAltName(to, alt.length);
  if (!name || links.altlinkAt === undefined) return `names its dwz file "${alt}" (.gnu_debugaltlink), which debugkit cannot replace by a private copy's name`;
  const why = await bringOne(alt, judgeOnly ? undefined : path.join(to, name.base), realRoot);
  if (why) return `has its dwz file at ${alt}, which ${why}`;
  if (judgeOnly) return undefined;
  const { mode } = await stat(file);
  await chmod(file, mode | 0o200);
  const handle = await open(file, 'r+');
  try {
    await handle.write(Buffer.from(name.link, 'latin1'), 0, name.link.length, links.altlinkAt);
  } finally {
    await handle.close();
    await chmod(file, mode);
  }
  return undefined;
}

/** A name in `dir` not taken, and the relative link to it of exactly `length` characters; undefined when none fits. */
async function privateAltName(dir: string, length: number): Promise<{ base: string; link: string } | undefined> {
  for (let i = 0; i < 100; i++) {
    let base = `.dwz${i}`;
    if ((length - base.length) % 2 !== 0) base += '_';
    if (base.length > length) return undefined;
    if (await lstat(path.join(dir, base)).catch(() => undefined)) continue;
    return { base, link: './'.repeat((length - base.length) / 2) + base };
  }
  return undefined;
}

/** Copies `source` to `target` (when given) when it is there and may be read (see copyDebugFiles); the reason it may not, otherwise. */
async function bringOne(source: string, target: string | undefined, realRoot: string): Promise<string | undefined> {
  if (!(await lstat(source).catch(() => undefined))) return undefined; // not there: gdb would not find it either
  const where = containment(realRoot, source);
  if (where.kind === 'missing') return undefined; // a link to nothing inside the root
  let handle: FileHandle | undefined;
  try {
    if (where.kind === 'inside') {
      const opened = openInside(realRoot, source, { type: 'file' });
      if (opened.kind === 'outside') return 'leads out of the workspace root';
      // openInside opens no FIFO or device: those are "missing" to it.
      if (opened.kind !== 'inside') return 'is not a regular file';
      try {
        handle = await open(`/proc/self/fd/${opened.fd}`, 'r');
      } finally {
        closeSync(opened.fd);
      }
    } else {
      const leads = await realpath(source).catch(() => undefined);
      if (!leads?.startsWith(SYSTEM_DEBUG_DIR)) return 'leads out of the workspace root (only a system debug file under /usr/lib/debug may)';
      // Without waiting on a FIFO; what was opened is judged, not the name.
      handle = await open(leads, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    }
    const stats = await handle.stat();
    if (!stats.isFile()) return 'is not a regular file';
    if (stats.size > MAX_PROGRAM_COPY_BYTES) return `is over ${MAX_PROGRAM_COPY_BYTES / 2 ** 20} MiB, more than debugkit copies for gdb`;
    if (!target) return undefined;
    await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
    await copyIntoPrivate(handle, stats.size, target, source);
    return undefined;
  } finally {
    await handle?.close();
  }
}
