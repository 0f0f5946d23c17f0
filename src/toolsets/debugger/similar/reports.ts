import type { TimeSlice } from '../../../core/wait.js';
import type { CrashSignature } from '../control.js';
import { makeSignature } from './signature.js';

/** Frames read of one report (the first ones: a signature keeps five). */
const MAX_FRAMES = 64;
/** Lines are read to this many characters (a report's lines are short; a longer one is cut). */
const MAX_LINE = 1024;
/** Signatures kept from one text. */
const MAX_PER_FILE = 20;
/** Characters of text split into lines at a time, between two looks at the slice's clock. */
const CHUNK_CHARS = 16 * 1024;
/** Lines after a sanitizer header, a UBSan line; valgrind frame lines; indented lines of a Python traceback. */
const ASAN_LINES = 60;
const UBSAN_LINES = 40;
const VALGRIND_LINES = 200;
const TRACEBACK_LINES = 400;

const SEPARATOR = /[\u2028\u2029\r]/;
const SEPARATORS = /[\u2028\u2029\r]/g;
const ASAN_HEADER = /ERROR: (?:Address|Leak|Memory|Thread)Sanitizer: (?=([\w-]+))\1/;
const UBSAN_HEADER = /runtime error: ([^\n]*)/;
const SANITIZER_FRAME = /^[ \t]*#\d+ 0x[0-9a-f]+ in ([^\s(]+)/;
const VALGRIND_HEADER = /==\d+== (Invalid (?:read|write) of size \d+$|Invalid free\(\)[^\n]*|Conditional jump[^\n]*|Use of uninitialised[^\n]*)/;
const VALGRIND_LINE = /^==\d+==[ \t]+(?:at|by) /;
const VALGRIND_FRAME = /(?:at|by) 0x[0-9A-F]+: ([^\s(]+)/gi;
const TRACEBACK_HEADER = 'Traceback (most recent call last):';
const EXCEPTION = /^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b/;
const PYTHON_FRAME = /File "[^"]*", line \d+, in ([^\s]+)/g;
const BLANK = /^\s*$/;
/** What each pattern's first line holds: a chunk with none of them, read while no report is open, holds no report. */
const OPENINGS = ['Sanitizer: ', 'runtime error: ', '== ', TRACEBACK_HEADER];
/** The shortest line that opens a report ("runtime error: " and an empty message). */
const SHORTEST_OPENING = 15;

/** A report being read: its failure, its lines so far (after its header), whether its stack goes on, its frames. */
type Block = { failure: string; lines: number; open: boolean; frames: string[] };

/**
 * AddressSanitizer, UBSan and valgrind reports and Python tracebacks in one text, at most
 * MAX_PER_FILE, read a line at a time in one pass, in slices of the main thread's time (`slice`):
 * a 2 MiB report read whole held the event loop 200-300 ms (attack 18an Z6). Each line is cut at
 * MAX_LINE characters and its line and paragraph separators (U+2028, U+2029) and CRs are read as
 * spaces; every pattern looks at a line once, and a report's lines are bounded (a sanitizer's stack
 * to 60 lines after its header, UBSan's 40, valgrind's 200 frame lines, a traceback's 400), so the
 * work is linear in the text. The signatures are the ones the four patterns below found when they
 * were matched over the whole text (sanitizer reports first, then UBSan, valgrind, tracebacks, each
 * in the order of the text). What a signature keeps is copied out of the text, so no signature
 * holds a file's whole text alive.
 */
export async function parseReports(text: string, source: string, slice: Pick<TimeSlice, 'over' | 'pause'>): Promise<CrashSignature[]> {
  const reader = new ReportReader();
  let pos = 0;
  for (;;) {
    // A chunk ends at a line's end: the first newline CHUNK_CHARS on, or the text's end.
    const newline = text.indexOf('\n', Math.min(text.length, pos + CHUNK_CHARS));
    const end = newline === -1 ? text.length : newline;
    const chunk = text.slice(pos, end);
    const separators = SEPARATOR.test(chunk);
    // Most of a log is no report: its lines are split only where one may begin, or one is open.
    // (A separator read as a space may make an opening: such a chunk is read line by line.)
    if (separators || !reader.idle() || OPENINGS.some((o) => chunk.includes(o))) {
      for (const whole of chunk.split('\n')) {
        if (whole.length < SHORTEST_OPENING && reader.idle()) continue;
        const cut = whole.length > MAX_LINE ? whole.slice(0, MAX_LINE) : whole;
        reader.line(separators && SEPARATOR.test(cut) ? cut.replace(SEPARATORS, ' ') : cut);
      }
    }
    if (newline === -1 || reader.full()) break;
    pos = newline + 1;
    if (slice.over()) await slice.pause();
  }
  return reader.signatures(source);
}

/** The four report patterns, each reading the lines in turn as it would match them over the whole text. */
class ReportReader {
  private readonly found = { asan: [] as Block[], ubsan: [] as Block[], valgrind: [] as Block[], traceback: [] as Block[] };
  private asan: Block | undefined;
  private ubsan: Block | undefined;
  /** A valgrind header seen on the line before (its frame lines must follow at once), or its frame lines being read. */
  private valgrindHeader: string | undefined;
  private valgrind: Block | undefined;
  /** A traceback's indented lines so far (undefined past TRACEBACK_LINES: it no longer matches). */
  private traceback: string[] | undefined;
  private inTraceback = false;

  /** Whether the signatures are decided: the sanitizer reports, which come first, fill them. */
  full(): boolean {
    return this.found.asan.length >= MAX_PER_FILE;
  }

  /** Whether no report is open: a line that holds none of OPENINGS then changes nothing. */
  idle(): boolean {
    return !this.asan && !this.ubsan && this.valgrindHeader === undefined && !this.valgrind && !this.inTraceback;
  }

  line(line: string): void {
    this.asan = this.sanitizer(this.asan, line, ASAN_LINES, this.found.asan, true, asanHeader);
    this.ubsan = this.sanitizer(this.ubsan, line, UBSAN_LINES, this.found.ubsan, false, ubsanHeader);
    this.valgrindLine(line);
    this.tracebackLine(line);
  }

  /**
   * One line for a sanitizer pattern: a header's following `max` lines are its report (no header is
   * looked for in them); its frames are those of the lines before the first blank line after the
   * first. `block` is the report being read; returns the one read after this line.
   */
  private sanitizer(block: Block | undefined, line: string, max: number, found: Block[], needsFrames: boolean, header: (line: string) => string | undefined): Block | undefined {
    if (block) {
      block.lines++;
      if (block.open && block.lines > 1 && BLANK.test(line)) block.open = false;
      if (block.open && block.frames.length < MAX_FRAMES) {
        const frame = SANITIZER_FRAME.exec(line);
        if (frame) block.frames.push(frame[1]!);
      }
      if (block.lines < max) return block;
      keep(found, block, needsFrames);
      return undefined;
    }
    const failure = header(line);
    return failure === undefined ? undefined : { failure, lines: 0, open: true, frames: [] };
  }

  /** A valgrind header must be followed at once by its "at"/"by" lines (1 to VALGRIND_LINES); the next header is looked for from the line after them. */
  private valgrindLine(line: string): void {
    const frameLine = line.startsWith('==') && VALGRIND_LINE.test(line);
    if (this.valgrind) {
      if (frameLine && this.valgrind.lines < VALGRIND_LINES) {
        this.valgrind.lines++;
        valgrindFrames(this.valgrind, line);
        return;
      }
      keep(this.found.valgrind, this.valgrind, false);
      this.valgrind = undefined;
    } else if (this.valgrindHeader !== undefined) {
      const failure = this.valgrindHeader;
      this.valgrindHeader = undefined;
      if (frameLine) {
        this.valgrind = { failure, lines: 1, open: true, frames: [] };
        valgrindFrames(this.valgrind, line);
        return;
      }
    }
    const m = line.includes('== ') ? VALGRIND_HEADER.exec(line) : null;
    if (m) this.valgrindHeader = m[1]!.replace(/ of size \d+/, '');
  }

  /** A traceback: its header line, 1 to TRACEBACK_LINES lines indented by two spaces, then a line that begins with an exception's name. */
  private tracebackLine(line: string): void {
    if (this.inTraceback) {
      if (line.startsWith('  ')) {
        if (this.traceback && this.traceback.length < TRACEBACK_LINES) this.traceback.push(line);
        else this.traceback = undefined;
        return;
      }
      const lines = this.traceback;
      this.inTraceback = false;
      this.traceback = undefined;
      const exception = lines && lines.length > 0 ? EXCEPTION.exec(line) : null;
      if (exception && lines) {
        // A frame's file name may run over lines, as the pattern read the block whole.
        const frames = [...lines.join('\n').matchAll(PYTHON_FRAME)].map((f) => f[1]!).reverse();
        if (this.found.traceback.length < MAX_PER_FILE) this.found.traceback.push({ failure: exception[0], lines: lines.length, open: false, frames });
        return;
      }
    }
    if (line === TRACEBACK_HEADER) {
      this.inTraceback = true;
      this.traceback = [];
    }
  }

  /** The signatures found, the open reports ended by the text's end (a traceback's needs its exception line). */
  signatures(source: string): CrashSignature[] {
    if (this.asan) keep(this.found.asan, this.asan, true);
    if (this.ubsan) keep(this.found.ubsan, this.ubsan, false);
    if (this.valgrind) keep(this.found.valgrind, this.valgrind, false);
    this.asan = this.ubsan = this.valgrind = undefined;
    const { asan, ubsan, valgrind, traceback } = this.found;
    const sig = (failure: string, frames: string[], pattern: CrashSignature['pattern']) => {
      const made = makeSignature(failure, frames, source, undefined, pattern);
      return { ...made, failure: own(made.failure), frames: made.frames.map(own), signature: own(made.signature) };
    };
    return [
      ...asan.map((b) => sig(b.failure, b.frames, 'memory')),
      ...ubsan.map((b) => sig(`ubsan: ${b.failure.split(/ (?:of|for) /)[0]}`, b.frames, /overflow|alignment|null pointer/.test(b.failure) ? 'memory' : 'logic')),
      ...valgrind.map((b) => sig(b.failure, b.frames, 'memory')),
      ...traceback.map((b) => sig(b.failure, b.frames, 'logic')),
    ].slice(0, MAX_PER_FILE);
  }
}

/** A sanitizer header's kind of error (its first one in the line), or undefined. */
function asanHeader(line: string): string | undefined {
  return line.includes('Sanitizer: ') ? ASAN_HEADER.exec(line)?.[1] : undefined;
}

/** A UBSan line's message (after its first "runtime error: "), or undefined. */
function ubsanHeader(line: string): string | undefined {
  return line.includes('runtime error: ') ? UBSAN_HEADER.exec(line)?.[1] : undefined;
}

/** Keeps a report read to its end (a sanitizer's only with frames), up to MAX_PER_FILE of a pattern. */
function keep(found: Block[], block: Block, needsFrames: boolean): void {
  if (found.length < MAX_PER_FILE && (!needsFrames || block.frames.length > 0)) found.push(block);
}

function valgrindFrames(block: Block, line: string): void {
  for (const f of line.matchAll(VALGRIND_FRAME)) {
    if (block.frames.length >= MAX_FRAMES) return;
    block.frames.push(f[1]!);
  }
}

/** A copy of `s` that shares no memory with the text it was cut from (V8 keeps a slice's whole parent alive). */
const own = (s: string): string => Buffer.from(s, 'utf8').toString('utf8');
