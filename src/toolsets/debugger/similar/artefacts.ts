import { closeSync, read, readSync, realpathSync } from 'node:fs';
import { opendir } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { coreMappedFiles, mappingOutside } from '../../../core/elf-core.js';
import { containment, descriptorPath, openVerified } from '../../../core/paths.js';
import { runBounded } from '../../../core/run.js';
import { TimeSlice } from '../../../core/wait.js';
import type { CrashSignature } from '../control.js';
import { parseReports } from './reports.js';
import { makeSignature } from './signature.js';

const MAX_FILES = 2000;
/** Directory entries looked at in one scan, directories and files that are no artefact included. */
const MAX_ENTRIES = 20_000;
/** A report file larger than this is not read. */
const MAX_TEXT_BYTES = 2 * 1024 * 1024;
/** Bytes of report files read in one scan: the rest are not read (and counted). */
const MAX_SCAN_TEXT_BYTES = 16 * 1024 * 1024;
const MAX_CORES = 8;
const readAt = promisify(read);
/** Signatures kept from one scan. */
const MAX_PER_SCAN = 500;

/** What one scan found, and how far it went. */
export interface ArtefactScan {
  signatures: CrashSignature[];
  /** Files opened. */
  scanned: number;
  /** Whether the scan stopped before it had looked at every entry (files, entries, signatures or time ran out, or its call ended). */
  cut: boolean;
  /** Report files not read: larger than MAX_TEXT_BYTES, or past the MAX_SCAN_TEXT_BYTES one scan reads. */
  notRead: { tooLarge: number; pastBudget: number };
}

/**
 * Crash signatures found in files under `dir`: core dumps, sanitizer/valgrind reports, Python
 * tracebacks. Everything is opened the way debugkit opens what it checked (core/paths.ts
 * openVerified: no link followed at the end, no wait on a FIFO, the descriptor's own path inside
 * the root, a regular file or a directory as listed) and read through its descriptor, without
 * holding the event loop (reads are asynchronous, parsing goes in TimeSlice steps): a writer in the
 * root swapping a name for a FIFO, a device or a link out of the root reaches nothing. Report
 * files are read to MAX_SCAN_TEXT_BYTES in all: 2,000 files of 2 MiB each were 4 GiB to read and
 * parse for one call (attack 18an Z6); those left unread are counted.
 */
export async function scanArtefacts(dir: string, root: string, gdbPath: string, deadline: number, signal?: AbortSignal): Promise<ArtefactScan> {
  const realRoot = realpathSync.native(root);
  const signatures: CrashSignature[] = [];
  const slice = new TimeSlice(10);
  const notRead = { tooLarge: 0, pastBudget: 0 };
  let textBytes = 0;
  let scanned = 0;
  let cores = 0;
  let seen = 0;
  const stack = [dir];
  while (stack.length > 0) {
    const current = stack.pop()!;
    for await (const e of listDirectory(realRoot, current)) {
      if (scanned >= MAX_FILES || ++seen > MAX_ENTRIES || Date.now() > deadline || signal?.aborted) return { signatures, scanned, cut: true, notRead };
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
        if (!reportName) continue;
        if (opened.size > MAX_TEXT_BYTES) {
          notRead.tooLarge++;
          continue;
        }
        if (textBytes + opened.size > MAX_SCAN_TEXT_BYTES) {
          notRead.pastBudget++;
          continue;
        }
        textBytes += opened.size;
        // To the size checked at open: a file grown since is read no further.
        text = (await readUpTo(opened.fd, opened.size)).toString('utf8');
      } catch {
        continue;
      } finally {
        closeSync(opened.fd);
      }
      for (const sig of await parseReports(text, path.relative(root, file), slice)) signatures.push(sig);
      if (signatures.length >= MAX_PER_SCAN) return { signatures: signatures.slice(0, MAX_PER_SCAN), scanned, cut: true, notRead };
    }
  }
  return { signatures, scanned, cut: false, notRead };
}

/** The report files a scan did not read, in words (undefined when it read them all). */
export function notReadMessage({ notRead }: ArtefactScan): string | undefined {
  const parts: string[] = [];
  if (notRead.tooLarge) parts.push(`${notRead.tooLarge} report files larger than ${MAX_TEXT_BYTES / 1024 / 1024} MiB`);
  if (notRead.pastBudget) parts.push(`${notRead.pastBudget} report files past the ${MAX_SCAN_TEXT_BYTES / 1024 / 1024} MiB of reports one search reads`);
  return parts.length ? `not read: ${parts.join(', ')}: give a narrower search_path` : undefined;
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
