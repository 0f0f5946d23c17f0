import { closeSync, read, readSync, realpathSync } from 'node:fs';
import { opendir } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { coreMappedFiles, mappingOutside } from '../../../core/elf-core.js';
import { containment, descriptorPath, openVerified } from '../../../core/paths.js';
import { runBounded } from '../../../core/run.js';
import { TimeSlice } from '../../../core/wait.js';
import type { CrashSignature } from '../control.js';
import { makeSignature } from './signature.js';

const MAX_FILES = 2000;
/** Directory entries looked at in one scan, directories and files that are no artefact included. */
const MAX_ENTRIES = 20_000;
/** Frames read of one report (the first ones: a signature keeps five). */
const MAX_FRAMES = 64;
const MAX_TEXT_BYTES = 2 * 1024 * 1024;
const MAX_CORES = 8;
const readAt = promisify(read);
/** Lines are read to this many characters (a report's lines are short; a longer one is cut). */
const MAX_LINE = 1024;
/** Signatures kept from one file, and from one scan. */
const MAX_PER_FILE = 20;
const MAX_PER_SCAN = 500;

/**
 * Crash signatures found in files under `dir`: core dumps, sanitizer/valgrind reports, Python
 * tracebacks. Everything is opened the way debugkit opens what it checked (core/paths.ts
 * openVerified: no link followed at the end, no wait on a FIFO, the descriptor's own path inside
 * the root, a regular file or a directory as listed) and read through its descriptor, without
 * holding the event loop (reads are asynchronous, parsing goes in TimeSlice steps): a writer in the
 * root swapping a name for a FIFO, a device or a link out of the root reaches nothing.
 */
export async function scanArtefacts(dir: string, root: string, gdbPath: string, deadline: number, signal?: AbortSignal): Promise<{ signatures: CrashSignature[]; scanned: number; cut: boolean }> {
  const realRoot = realpathSync.native(root);
  const signatures: CrashSignature[] = [];
  const slice = new TimeSlice(10);
  let scanned = 0;
  let cores = 0;
  let seen = 0;
  const stack = [dir];
  while (stack.length > 0) {
    const current = stack.pop()!;
    for await (const e of listDirectory(realRoot, current)) {
      if (scanned >= MAX_FILES || ++seen > MAX_ENTRIES || Date.now() > deadline || signal?.aborted) return { signatures, scanned, cut: true };
      await slice.pause();
      const file = path.join(current, e.name);
      if (e.isDirectory()) {
        stack.push(file);
        continue;
      }
      if (!e.isFile()) continue;
      const reportName = /\.(log|txt|out|err|asan|valgrind|report)$/i.test(e.name) || /^(asan|ubsan|valgrind|crash)/i.test(e.name);
      const opened = openFile(realRoot, file);
      if (!opened) continue;
      scanned++;
      let text: string | undefined;
      try {
        const head = Buffer.alloc(20);
        const got = readSync(opened.fd, head, 0, head.length, 0);
        if (got >= 18 && head[0] === 0x7f && head.toString('latin1', 1, 4) === 'ELF' && head.readUInt16LE(16) === 4) {
          if (cores++ < MAX_CORES) {
            const sig = await analyseCore({ read: descriptorPath(opened.fd), real: opened.real }, realRoot, gdbPath, deadline, signal);
            if (sig) signatures.push(sig);
          }
          continue;
        }
        if (!reportName || opened.size > MAX_TEXT_BYTES) continue;
        // To the size checked at open: a file grown since is read no further.
        text = (await readUpTo(opened.fd, opened.size)).toString('utf8');
      } catch {
        continue;
      } finally {
        closeSync(opened.fd);
      }
      for (const sig of parseReports(text, path.relative(root, file))) signatures.push(sig);
      if (signatures.length >= MAX_PER_SCAN) return { signatures: signatures.slice(0, MAX_PER_SCAN), scanned, cut: true };
    }
  }
  return { signatures, scanned, cut: false };
}

/** At most `size` bytes of `fd` from its start. */
async function readUpTo(fd: number, size: number): Promise<Buffer> {
  const buf = Buffer.alloc(size);
  let got = 0;
  while (got < size) {
    const { bytesRead } = await readAt(fd, buf, got, size - got, got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return buf.subarray(0, got);
}

/**
 * Directory `dir`'s entries, read a batch at a time (a directory of a million names is never
 * listed whole) through a descriptor checked inside the root; none when it is not a directory
 * inside it (now). The directory is closed when the caller stops.
 */
async function* listDirectory(realRoot: string, dir: string): AsyncGenerator<import('node:fs').Dirent> {
  let opened;
  try {
    opened = openVerified(realRoot, dir, { type: 'directory' });
  } catch {
    return;
  }
  if (opened === 'changed' || opened.kind !== 'inside') return;
  try {
    const listing = await opendir(`/proc/self/fd/${opened.fd}`, { bufferSize: 256 });
    try {
      for (;;) {
        const entry = await listing.read();
        if (!entry) return;
        yield entry;
      }
    } finally {
      await listing.close().catch(() => undefined);
    }
  } catch {
    return;
  } finally {
    closeSync(opened.fd);
  }
}

/** File `file` (a name a listing gave) opened and checked: a regular file inside the root, or undefined. */
export function openFile(realRoot: string, file: string): { fd: number; real: string; size: number } | undefined {
  let opened;
  try {
    opened = openVerified(realRoot, file, { type: 'file' });
  } catch {
    return undefined;
  }
  if (opened === 'changed' || opened.kind !== 'inside') return undefined;
  return { fd: opened.fd, real: opened.real, size: opened.stats.size };
}

/** gdb in batch mode, bounded in time and output; its whole process group ends with the bound. */
async function gdbBatch(gdbPath: string, args: string[], timeoutMs: number, signal?: AbortSignal): Promise<string> {
  const run = await runBounded({ command: gdbPath, args: ['-batch', '-nx', ...args], timeoutMs, maxOutputChars: 1024 * 1024, ...(signal ? { signal } : {}) });
  return `${run.stdout}\n${run.stderr}`;
}

/**
 * Reads a core dump with gdb in batch mode: `core.read` is what gdb opens (the descriptor debugkit
 * opened and checked, /proc/<pid>/fd/N), `core.real` where it is. The executable is used when it
 * lies inside the root (`root`, a real path). A core is only read by gdb if the files its notes
 * map pass the rule `core-file` keeps to (core/elf-core.ts), and what gdb read from it is used only
 * if the shared libraries it found through the core's link map pass it too: a `:read` key must not
 * have gdb read files outside the root into a backtrace (attack 18l).
 */
async function analyseCore(core: { read: string; real: string }, root: string, gdbPath: string, deadline: number, cancel?: AbortSignal): Promise<CrashSignature | undefined> {
  try {
    if ((await mappingOutside((await coreMappedFiles(core.read)) ?? [], root)) !== undefined) return undefined;
  } catch {
    return undefined;
  }
  const budget = Math.max(1000, Math.min(10_000, deadline - Date.now()));
  const read = async (args: string[]) => {
    const out = await gdbBatch(gdbPath, ['-ex', 'info sharedlibrary', '-ex', 'bt 32', ...args], budget, cancel);
    const libraries = [...out.matchAll(/^(?:0x[0-9a-f]+\s+0x[0-9a-f]+|\s+)\s+(?:Yes|No)(?: \(\*\))?\s+(\/.*)$/gm)].map((m) => m[1]!.trim());
    return (await mappingOutside(libraries, root)) === undefined ? out : '';
  };
  let text = await read(['-c', core.read]);
  const program = /Core was generated by `([^'` ]+)/.exec(text)?.[1];
  if (program) {
    // Only an executable that really lies inside the root (links resolved) is read for symbols.
    const where = containment(root, path.resolve(path.dirname(core.real), program));
    if (where.kind === 'inside' && !cancel?.aborted) text = await read([where.real, core.read]);
  }
  const signal = /terminated with signal (SIG[A-Z]+)/.exec(text)?.[1] ?? 'SIGNAL';
  const frames = [...text.matchAll(/^#\d+\s+(?:0x[0-9a-f]+ in )?([^\s(]+)/gm)].map((m) => m[1]!);
  if (frames.length === 0) return undefined;
  return makeSignature(signal, frames, `core ${path.relative(root, core.real)}`, program);
}

/**
 * AddressSanitizer, UBSan and valgrind reports and Python tracebacks in one text, at most
 * MAX_PER_FILE. The text is read with every line cut at MAX_LINE characters and line and paragraph
 * separators (U+2028, U+2029, which patterns read as line starts and blanks) as spaces, and blanks
 * within a line are [ \t]: every pattern looks at each line a bounded number of times (a line
 * with no end, or one of separators, was quadratic). What a signature keeps is copied out of the
 * text, so no signature holds a file's whole text alive.
 */
export function parseReports(whole: string, source: string): CrashSignature[] {
  const text = readableText(whole);
  const out: CrashSignature[] = [];
  const add = (failure: string, frames: string[], pattern: CrashSignature['pattern']) => {
    if (out.length >= MAX_PER_FILE) return;
    const sig = makeSignature(failure, frames, source, undefined, pattern);
    out.push({ ...sig, failure: own(sig.failure), frames: sig.frames.map(own), signature: own(sig.signature) });
  };
  /** The first MAX_FRAMES captures of `re` in `block`. */
  const frames = (block: string, re: RegExp, reverse = false) => {
    const found: string[] = [];
    for (const f of block.matchAll(re)) {
      found.push(f[1]!);
      if (!reverse && found.length >= MAX_FRAMES) break;
    }
    return reverse ? found.reverse() : found;
  };
  for (const m of text.matchAll(/ERROR: (?:Address|Leak|Memory|Thread)Sanitizer: (?=([\w-]+))\1[^\n]*\n((?:[^\n]*\n){0,60})/g)) {
    const found = frames(firstBlock(m[2]!), /^[ \t]*#\d+ 0x[0-9a-f]+ in ([^\s(]+)/gm);
    if (found.length) add(m[1]!, found, 'memory');
  }
  for (const m of text.matchAll(/runtime error: ([^\n]*)\n((?:[^\n]*\n){0,40})/g)) {
    add(`ubsan: ${m[1]!.split(/ (?:of|for) /)[0]}`, frames(firstBlock(m[2]!), /^[ \t]*#\d+ 0x[0-9a-f]+ in ([^\s(]+)/gm), /overflow|alignment|null pointer/.test(m[1]!) ? 'memory' : 'logic');
  }
  for (const m of text.matchAll(
    /==\d+== (Invalid (?:read|write) of size \d+|Invalid free\(\)[^\n]*|Conditional jump[^\n]*|Use of uninitialised[^\n]*)\n((?:==\d+==[ \t]+(?:at|by) [^\n]*\n){1,200})/g,
  )) {
    add(m[1]!.replace(/ of size \d+/, ''), frames(m[2]!, /(?:at|by) 0x[0-9A-F]+: ([^\s(]+)/gi), 'memory');
  }
  // The header at the start of a line, its indented frames at most 400 lines.
  for (const m of text.matchAll(/^Traceback \(most recent call last\):\n((?: {2}[^\n]*\n){1,400})([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b)/gm)) {
    add(m[2]!, frames(m[1]!, /File "[^"]*", line \d+, in ([^\s]+)/g, true), 'logic');
  }
  return out;
}

/** `text` as parseReports reads it: lines cut at MAX_LINE, each ended by a newline, U+2028/U+2029 and CR as spaces. */
function readableText(text: string): string {
  return `${text
    .replace(/[\u2028\u2029\r]/g, ' ')
    .split('\n')
    .map((line) => (line.length > MAX_LINE ? line.slice(0, MAX_LINE) : line))
    .join('\n')}\n`;
}

/** A copy of `s` that shares no memory with the text it was cut from (V8 keeps a slice's whole parent alive). */
const own = (s: string): string => Buffer.from(s, 'utf8').toString('utf8');

/** A report's stack ends at the first blank line after it began. */
function firstBlock(text: string): string {
  const end = text.search(/\n\s*\n/);
  return end === -1 ? text : text.slice(0, end + 1);
}
