/**
 * Protoscope text for protobuf messages without a schema: what Keploy writes as a gRPC message's
 * `decoded_data` (it calls `protoscope.Write(bytes, WriterOptions{})` from
 * github.com/protocolbuffers/protoscope, pinned at 8e7a6aafa2c9, and reads it back with that
 * package's scanner). `protoscopeText` produces the same text as that writer with default
 * options; `protoscopeBytes` assembles such text (the subset of the language the writer emits,
 * plus the explicit forms `N:LEN`, `N:SGROUP`, ...) back into bytes.
 *
 * The writer's heuristics, per the protoscope language notes: greedy tags (field 0 or wire type
 * 6/7 ends decoding, the rest as hex); varints as int64; fixed 32/64-bit values as floats (with
 * the bits as a `# 0x..iNN` remark) unless the exponent is extreme, then as integers; a
 * length-delimited field as a nested message if all of it parses, else a quoted string when
 * valid UTF-8 with at most 30% unprintable runes, else hex; groups as `!{ }`. Blocks of up to
 * three lines fold onto one (`1: {"ada"}`), remarks on contiguous lines share a column.
 *
 * Unlike protoscope, the work is linear in the message: whether a length-delimited field parses
 * as a message is decided by a scan that writes nothing and skips the nested fields' contents,
 * where protoscope writes the attempt and throws it away, so a field that fails at depth d had
 * its bytes written d times (a 507 KB message nested 1,500 deep took 108 s on the event loop,
 * at 2,000 deep the recursion overflowed the stack). Nesting (messages and groups) is also cut
 * at MAX_DEPTH: deeper fields are written in their flat forms (bytes, `N:SGROUP`), which read
 * back to the same bytes; normal messages are written as protoscope writes them.
 */

import type { TimeSlice } from '../../../core/wait.js';
import { exactUtf8 } from '../keploy/utf8.js';
import { MAX_MOCK_EXCHANGE_BYTES } from '../protocol.js';

// ------------------------------------------------------------------ the printer

interface Line {
  text: string;
  remarks: string[];
  /** How much the next line is indented relative to this one. */
  indent: number;
  folds: number;
}

interface Block {
  delimiters: boolean;
  foldAt: number;
  unindentAt: number;
  start: number;
}

const INDENT = 2;
const MAX_FOLDS = 3;
/**
 * Open blocks (messages and groups) under which a field still gets its own block. Deeper text is
 * not useful to a reader, and each level indents every line inside it (and costs a stack frame).
 */
export const MAX_DEPTH = 32;
/** A group opened past MAX_DEPTH, written flat (`N:SGROUP`, no block of its own). */
const FLAT_GROUP = -1;

class Printer {
  lines: Line[] = [];
  blocks: Block[] = [];
  /** Characters written (laid out in lines later), for the tests' bound on a step's work. */
  chars = 0;

  get current(): Line {
    return this.lines[this.lines.length - 1]!;
  }
  newLine(): void {
    this.lines.push({ text: '', remarks: [], indent: 0, folds: 0 });
  }
  discardLine(): void {
    this.lines.pop();
  }
  write(s: string): void {
    this.chars += s.length;
    this.current.text += s;
  }
  remark(s: string): void {
    this.current.remarks.push(s);
  }
  startBlock(delimiters: boolean, foldAt: number, unindentAt: number): void {
    this.blocks.push({ delimiters, foldAt, unindentAt, start: this.lines.length - 1 });
    this.current.indent++;
  }
  dropBlock(): Line {
    const b = this.blocks.pop()!;
    const start = this.lines[b.start]!;
    start.indent--;
    return start;
  }
  endBlock(): void {
    const b = this.blocks.pop()!;
    const start = this.lines[b.start]!;
    const height = this.lines.length - b.start;
    if (height >= 2 && height <= b.foldAt) {
      const inner = this.lines.slice(b.start);
      const folds = inner.reduce((n, l) => n + l.folds, 0);
      const remarked = inner.filter((l) => l.remarks.length > 0).length;
      if (folds <= MAX_FOLDS && remarked <= 1) {
        this.lines.slice(b.start + 1).forEach((line, i) => {
          if ((i !== 0 && i !== height - 2) || !b.delimiters) start.text += ' ';
          start.text += line.text;
          if (line.remarks.length > 0) start.remarks = line.remarks;
        });
        start.folds = folds;
        this.lines.length = b.start + 1;
      }
    }
    const h = this.lines.length - b.start;
    if (h <= b.unindentAt) this.lines[b.start]!.indent--;
    else this.lines[this.lines.length - 1 - b.unindentAt]!.indent--;
  }

  /**
   * The remark column from line `i` on: protoscope scans the remarked lines after it, taking the
   * longest, up to a line without a remark or (from the third line) a longer one that changes the
   * indent; `until` is that line (none at the end of the text). Scanned line by line, a run of
   * remarked lines reaching the end was scanned again from each of its lines (a 900 KB message of
   * 100,000 doubles: 455 s). The same answer from tables built once (Columns), in a step or two.
   */
  *finish(): Generator<void, string> {
    const columns = yield* Columns.of(this.lines);
    let out = '';
    let indent = 0;
    let col = -1;
    let colUntil = -1;
    for (let i = 0; i < this.lines.length; i++) {
      if (i % STEP_LINES === STEP_LINES - 1) yield;
      const line = this.lines[i]!;
      if (line.remarks.length > 0 && colUntil < i) {
        const scan = columns.from(i);
        col = scan.col;
        if (scan.until < this.lines.length) colUntil = scan.until;
        if (col % INDENT !== 0) col += INDENT - (col % INDENT);
      }
      out += ' '.repeat(Math.max(0, indent * INDENT)) + line.text;
      if (line.remarks.length > 0) {
        out += ' '.repeat(Math.max(0, col - indent * INDENT - Buffer.byteLength(line.text))) + '  # ' + line.remarks.join(', ');
      }
      indent += line.indent;
      out += '\n';
    }
    return out;
  }
}

/**
 * For Printer.finish: where a scan for the remark column from a line stops, and the column. A
 * line's length counts its indent, so it does not depend on where the scan began; the scan takes
 * each line longer than all before it in the scan (a record) and stops at a line without a remark
 * or at a record with an indent change from its third line on. So from line x the records are x,
 * next[x], next[next[x]], ... and `stop[x]` (the first of those that stops a scan) and `max[x]`
 * (the longest line before it) follow from the same for next[x].
 */
class Columns {
  private readonly len: number[] = [];
  private readonly next: number[];
  private readonly stop: number[];
  private readonly max: number[];

  private constructor(n: number) {
    this.next = new Array<number>(n);
    this.stop = new Array<number>(n + 1);
    this.max = new Array<number>(n + 1);
    this.stop[n] = n;
    this.max[n] = -1;
  }

  /** The tables for `lines`, built in steps (a generator that yields every STEP_LINES lines). */
  static *of(lines: readonly Line[]): Generator<void, Columns> {
    const c = new Columns(lines.length);
    yield* c.build(lines);
    return c;
  }

  private *build(lines: readonly Line[]): Generator<void, void> {
    const n = lines.length;
    let indent = 0;
    for (const l of lines) {
      if (this.len.length % STEP_LINES === STEP_LINES - 1) yield;
      // A line without a remark stops every scan: as long as no other, it is every line's next record.
      this.len.push(l.remarks.length === 0 ? Infinity : indent * INDENT + Array.from(l.text).length);
      indent += l.indent;
    }
    const longer: number[] = []; // later lines, each longer than those after it on the stack
    for (let x = n - 1; x >= 0; x--) {
      if (x % STEP_LINES === 0) yield;
      while (longer.length > 0 && this.len[longer[longer.length - 1]!]! <= this.len[x]!) longer.pop();
      this.next[x] = longer.length > 0 ? longer[longer.length - 1]! : n;
      longer.push(x);
      const stops = lines[x]!.remarks.length === 0 || lines[x]!.indent !== 0;
      this.stop[x] = stops ? x : this.stop[this.next[x]!]!;
      this.max[x] = stops ? -1 : Math.max(this.len[x]!, this.max[this.next[x]!]!);
    }
  }

  /** The scan from remarked line `i`: its first two records never stop it. */
  from(i: number): { col: number; until: number } {
    let first = this.next[i]!;
    let col = this.len[i]!;
    if (first === i + 1 && first < this.len.length && this.len[first] !== Infinity) {
      col = this.len[first]!;
      first = this.next[first]!;
    }
    return { col: Math.max(col, this.max[first]!), until: this.stop[first]! };
  }
}

// ------------------------------------------------------------------ the writer

interface Varint {
  value: bigint;
  /** Redundant bytes (a non-minimal encoding), written `long-form:N`. */
  extra: number;
  next: number;
}

function readVarint(src: Uint8Array, at: number, end: number): Varint | undefined {
  let value = 0n;
  let extra = 0;
  for (let count = 0; ; count++) {
    if (at >= end) return undefined;
    const b = src[at++]!;
    if (count === 9 && b > 1) return undefined;
    value |= BigInt(b & 0x7f) << BigInt(count * 7);
    extra = (b & 0x7f) === 0 ? extra + 1 : 0;
    if ((b & 0x80) === 0) break;
  }
  if (value === 0n) extra--;
  return { value, extra, next: at };
}

/** The bytes of a fixed-size value of wire type 1 (I64) or 5 (I32). */
const fixedSize = (type: number) => (type === 1 ? 8 : 4);

const int64 = (v: bigint) => BigInt.asIntN(64, v).toString();

/** Go's strconv 'g' with the shortest precision, as protoscope post-processes it. */
function shortestFloat(value: number, bits: 32 | 64): string {
  let digits: string;
  let exp: number;
  const abs = Math.abs(value);
  if (bits === 64) {
    const [m, e] = abs.toExponential().split('e');
    digits = m!.replace('.', '');
    exp = Number(e);
  } else {
    let p = 1;
    while (p < 9 && Math.fround(Number(abs.toPrecision(p))) !== abs) p++;
    const [m, e] = abs.toExponential(p - 1).split('e');
    digits = m!.replace('.', '').replace(/0+$/, '') || '0';
    exp = Number(e);
  }
  const sign = value < 0 ? '-' : '';
  let s: string;
  if (exp < -4 || exp >= 6) {
    const e = `${exp < 0 ? '-' : ''}${String(Math.abs(exp)).padStart(2, '0')}`;
    s = `${digits[0]}${digits.length > 1 ? '.' + digits.slice(1) : ''}e${e}`;
  } else if (exp < 0) {
    s = `0.${'0'.repeat(-exp - 1)}${digits}`;
  } else {
    const intLen = exp + 1;
    s = digits.length <= intLen ? digits + '0'.repeat(intLen - digits.length) : `${digits.slice(0, intLen)}.${digits.slice(intLen)}`;
  }
  if (!s.includes('.')) s = s.includes('e') ? s.replace('e', '.0e') : s + '.0';
  return sign + s;
}

/** The float text, or '' when the exponent says this is probably not a float. */
function floatText(raw: bigint, bits: 32 | 64): string {
  const mant = bits === 32 ? 23 : 52;
  const expBits = bits === 32 ? 8 : 11;
  if (raw === 0n) return '0.0';
  if (raw === 1n << BigInt(bits - 1)) return '-0.0';
  const bias = (1 << (expBits - 1)) - 1;
  const exp = Number((raw >> BigInt(mant)) & BigInt((1 << expBits) - 1)) - bias;
  if (Math.abs(exp) >= bias) return '';
  return shortestFloat(toFloat(raw, bits), bits);
}

function toFloat(raw: bigint, bits: 32 | 64): number {
  const b = Buffer.alloc(8);
  if (bits === 32) {
    b.writeUInt32LE(Number(raw));
    return b.readFloatLE(0);
  }
  b.writeBigUInt64LE(raw);
  return b.readDoubleLE(0);
}

function writeFixed(p: Printer, raw: bigint, bits: 32 | 64): void {
  const value = toFloat(raw, bits);
  const suffix = String(bits);
  if (value === Infinity) p.write(`inf${suffix}`);
  else if (value === -Infinity) p.write(`-inf${suffix}`);
  else if (Number.isNaN(value)) p.write(`0x${raw.toString(16)}i${suffix}`);
  else {
    const s = floatText(raw, bits);
    if (s) {
      p.write(bits === 64 ? s : `${s}i${suffix}`);
      p.remark(`0x${raw.toString(16)}i${suffix}`);
    } else {
      p.write(`${BigInt.asIntN(bits, raw).toString()}i${suffix}`);
    }
  }
}

const GRAPHIC = /[\p{L}\p{M}\p{N}\p{P}\p{S}\p{Zs}]/u;

/** Whether the rune `cp` (at `i` in `text`, `n` UTF-16 units) is printed as itself; ASCII without the regex. */
const graphic = (cp: number, text: string, i: number, n: number) => (cp < 0x80 ? cp >= 0x20 && cp < 0x7f : GRAPHIC.test(text.slice(i, i + n)));

const utf8Length = (cp: number) => (cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4);

/** The escape of each byte value in a string literal. */
const ESCAPE = Array.from({ length: 256 }, (_, b) => `\\x${b.toString(16).padStart(2, '0')}`);

/** A length-delimited field's contents that parse as a message, to be written as its fields. */
interface Nested {
  from: number;
  to: number;
}

/** A length-delimited field whose tag is written; its length is at `lengthAt` (Writer.delimited writes the rest, in steps). */
interface Delimited {
  lengthAt: number;
}

/** Thrown through the writer's steps when a message has more fields than it may write. */
class TooManyFields extends Error {}

/**
 * The bytes of a string or hex literal that count as one field, of the field budget and of a step:
 * a step writes at most STEP_FIELDS x LITERAL_BYTES = 16 KiB of a literal's bytes, 64 KiB of text
 * at most (an escape is 4 characters a byte). One 256 KiB string field counted as one field and was
 * written in one go, a 100-180 ms block of the loop a recorded answer (attack 18x U2).
 */
const LITERAL_BYTES = 64;
/** Tags scanned (Writer.parses, which writes nothing) between looks at the clock. */
const STEP_SCAN = 4096;

class Writer {
  readonly p = new Printer();
  groups: number[] = [];
  /** Bytes read or written, for the tests' bound on the work (each byte a few times at most). */
  examined = 0;
  /**
   * Fields written so far (nested ones too), a literal's LITERAL_BYTES bytes counting as one: the
   * work of the text, and of reading it back, is per field and per literal byte.
   */
  written = 0;
  /** The work of the current step in fields (as `written` counts them), and the tags scanned so far. */
  private stepWork = 0;
  private scanned = 0;

  constructor(
    private readonly src: Uint8Array,
    private readonly maxFields = Infinity,
  ) {}

  /** The whole text, written in steps (yields every STEP_FIELDS fields, STEP_SCAN tags scanned and STEP_LINES lines). */
  *text(): Generator<void, string> {
    const at = yield* this.fields(0, this.src.length);
    this.charge(Math.ceil((this.src.length - at) / LITERAL_BYTES));
    yield* this.hex(at, this.src.length);
    return yield* this.p.finish();
  }

  /** Counts `n` fields into the budget: past `maxFields` the message is kept as bytes. */
  private charge(n: number): void {
    this.written += n;
    if (this.written > this.maxFields) throw new TooManyFields();
  }

  /** Adds `n` fields of work to the step; true when the step is full (the caller yields). */
  private work(n: number): boolean {
    this.stepWork += n;
    if (this.stepWork < STEP_FIELDS) return false;
    this.stepWork = 0;
    return true;
  }

  /** The bytes as hex rows of 40 bytes (charged by the caller). */
  *hex(from: number, to: number): Generator<void, void> {
    if (from >= to) return;
    this.examined += to - from;
    const p = this.p;
    const src = Buffer.from(this.src.buffer, this.src.byteOffset, this.src.byteLength);
    for (let i = from; i < to; i += 40) {
      if (i > from && this.work(40 / LITERAL_BYTES)) yield;
      // A row in one native call: a string a byte left 40 small strings a row for the collector.
      p.newLine();
      p.write(`\`${src.toString('hex', i, Math.min(i + 40, to))}\``);
    }
  }

  resetGroup(): void {
    const start = this.p.dropBlock();
    start.text = start.text.slice(0, -3) + 'SGROUP';
  }

  /** Writes the fields from `from` until one does not parse (or `to`); the offset where they stop. */
  *fields(from: number, to: number): Generator<void, number> {
    const p = this.p;
    const outer = this.groups;
    this.groups = [];
    let at = from;
    while (at < to) {
      this.charge(1);
      if (this.work(1)) yield;
      p.newLine();
      const field = this.field(at, to);
      const next = field !== undefined && typeof field !== 'number' && 'lengthAt' in field ? yield* this.delimited(field.lengthAt, to) : field;
      if (next === undefined) {
        p.discardLine();
        break;
      }
      if (typeof next === 'number') at = next;
      else {
        // A nested message: its fields, then its closing brace.
        if (next.from < next.to) yield* this.fields(next.from, next.to);
        at = this.close(next.to);
      }
    }
    for (const open of this.groups) if (open !== FLAT_GROUP) this.resetGroup();
    this.groups = outer;
    return at;
  }

  /**
   * Whether `fields(from, to)` would write all of it, found without writing: the same reads as
   * `field`, but a length-delimited field's contents are skipped (whether they are a message does
   * not decide whether this one is), so each byte is scanned once for its own level only.
   */
  *parses(from: number, to: number): Generator<void, boolean> {
    let at = from;
    while (at < to) {
      if (++this.scanned % STEP_SCAN === 0) yield;
      const tag = this.tag(at, to);
      if (!tag) return false;
      const type = Number(tag.value & 7n);
      // Where the field ends, and how much of it was read (not a nested field's contents).
      let next: number | undefined;
      let read: number | undefined;
      if (type === 0) next = read = readVarint(this.src, tag.next, to)?.next;
      else if (type === 1 || type === 5) next = read = tag.next + fixedSize(type) <= to ? tag.next + fixedSize(type) : undefined;
      else if (type === 3 || type === 4) next = read = tag.next;
      else if (type === 2) {
        const len = this.length(tag.next, to);
        next = len?.to;
        read = len?.from;
      }
      if (next === undefined) return false;
      this.examined += read! - at;
      at = next;
    }
    return true;
  }

  /** A field's tag at `at` (field 0 does not parse). */
  tag(at: number, end: number): Varint | undefined {
    const tag = readVarint(this.src, at, end);
    return tag && tag.value >> 3n !== 0n ? tag : undefined;
  }

  /** A length-delimited field's length at `at`, when its contents end by `end`. */
  length(at: number, end: number): { extra: number; from: number; to: number } | undefined {
    const len = readVarint(this.src, at, end);
    if (!len || BigInt(end - len.next) < len.value) return undefined;
    return { extra: len.extra, from: len.next, to: len.next + Number(len.value) };
  }

  /**
   * One field at `at`; the offset after it, or undefined when it does not parse. A length-delimited
   * field is left to the caller (`fields`, which writes it in steps): its tag is written.
   */
  field(at: number, end: number): number | Delimited | undefined {
    const p = this.p;
    const tag = this.tag(at, end);
    if (!tag) return undefined;
    const number = tag.value >> 3n;
    this.examined += tag.next - at;
    at = tag.next;
    if (tag.extra > 0) p.write(`long-form:${tag.extra} `);
    p.write(`${number}:`);
    switch (Number(tag.value & 7n)) {
      case 0: {
        p.write(' ');
        const v = readVarint(this.src, at, end);
        if (!v) return undefined;
        if (v.extra > 0) p.write(`long-form:${v.extra} `);
        p.write(int64(v.value));
        return v.next;
      }
      case 1:
      case 5: {
        const size = fixedSize(Number(tag.value & 7n));
        p.write(' ');
        if (end - at < size) return undefined;
        const b = Buffer.from(this.src.buffer, this.src.byteOffset + at, size);
        writeFixed(p, size === 8 ? b.readBigUInt64LE(0) : BigInt(b.readUInt32LE(0)), size === 8 ? 64 : 32);
        return at + size;
      }
      case 3:
        if (p.blocks.length >= MAX_DEPTH) {
          p.write('SGROUP');
          this.groups.push(FLAT_GROUP);
          return at;
        }
        p.write(' !{');
        p.startBlock(true, 3, 1);
        this.groups.push(Number(number));
        return at;
      case 4: {
        if (this.groups.length === 0) {
          p.write('EGROUP');
          return at;
        }
        const open = this.groups.pop()!;
        if (open === FLAT_GROUP) {
          p.write('EGROUP');
        } else if (open === Number(number)) {
          p.current.text = '';
          if (tag.extra > 0) {
            p.write(`long-form:${tag.extra}`);
            p.newLine();
          }
          p.write('}');
          p.endBlock();
        } else {
          this.resetGroup();
          p.write('EGROUP');
        }
        return at;
      }
      case 2:
        return { lengthAt: at };
      default:
        return undefined;
    }
  }

  /** Closes a length-delimited field's block, which ends at `to`. */
  close(to: number): number {
    this.p.newLine();
    this.p.write('}');
    this.p.endBlock();
    return to;
  }

  *delimited(at: number, end: number): Generator<void, number | Nested | undefined> {
    const p = this.p;
    p.write(' ');
    const len = this.length(at, end);
    if (!len) return undefined;
    const { from, to } = len;
    if (len.extra > 0) p.write(`long-form:${len.extra} `);
    p.write('{');
    p.startBlock(true, 3, 1);

    // A nested message, if every byte of it parses (and it is not too deep to be worth a block).
    if (p.blocks.length <= MAX_DEPTH && (yield* this.parses(from, to))) return { from, to };

    // A string, if it is UTF-8 and mostly printable, else hex: its bytes count into the budget once.
    this.charge(Math.ceil((to - from) / LITERAL_BYTES));
    if (!(yield* this.string(from, to))) yield* this.hex(from, to);
    return this.close(to);
  }

  /** Writes the bytes as a string literal if they are UTF-8 and at most 30% unprintable runes; whether it did. */
  *string(from: number, to: number): Generator<void, boolean> {
    this.examined += to - from;
    const text = exactUtf8(this.src.subarray(from, to));
    if (text === undefined) return false;
    let runes = 0;
    let unprintable = 0;
    for (let i = 0; i < text.length; runes++) {
      const cp = text.codePointAt(i)!;
      const n = cp > 0xffff ? 2 : 1;
      if (!graphic(cp, text, i, n)) unprintable++;
      i += n;
      if (this.work(utf8Length(cp) / LITERAL_BYTES)) yield;
    }
    if (!(unprintable / runes <= 0.3)) return false;
    const p = this.p;
    p.newLine();
    // A line is written as one string, of runs of plain runes and escapes: a string a rune left
    // each line a chain of 80 small strings for the collector to copy.
    let parts = ['"'];
    let plain = -1; // where a run of runes written as themselves began
    const flush = (i: number) => {
      if (plain >= 0) parts.push(text.slice(plain, i));
      plain = -1;
    };
    let offset = 0;
    for (let i = 0; i < text.length;) {
      const cp = text.codePointAt(i)!;
      const n = cp > 0xffff ? 2 : 1;
      const size = utf8Length(cp);
      if (offset !== 0 && offset % 80 === 0) {
        flush(i);
        parts.push('"');
        p.write(parts.join(''));
        p.newLine();
        parts = ['"'];
      }
      if (cp === 0x0a || cp === 0x5c || cp === 0x22) {
        flush(i);
        parts.push(cp === 0x0a ? '\\n' : cp === 0x5c ? '\\\\' : '\\"');
      } else if (!graphic(cp, text, i, n)) {
        flush(i);
        for (let b = from + offset; b < from + offset + size; b++) parts.push(ESCAPE[this.src[b]!]!);
      } else if (plain < 0) plain = i;
      offset += size;
      i += n;
      if (this.work(size / LITERAL_BYTES)) {
        flush(i);
        p.write(parts.join(''));
        parts = [];
        yield;
      }
    }
    flush(text.length);
    parts.push('"');
    p.write(parts.join(''));
    return true;
  }
}

/** Fields written between looks at the clock (protoscopeTextSliced). */
const STEP_FIELDS = 256;
/** Lines of text laid out between looks at the clock. */
const STEP_LINES = 2048;

/** The protoscope text Keploy writes as `decoded_data` for these message bytes. */
export function protoscopeText(src: Uint8Array, stats?: { examined: number }): string {
  const w = new Writer(src);
  const steps = w.text();
  let step = steps.next();
  while (!step.done) step = steps.next();
  if (stats) stats.examined = w.examined;
  return step.value;
}

/**
 * protoscopeText in slices of the event loop, for a message being recorded: the work is per
 * field (256 KiB of nested empty messages, 131,072 fields, held the loop 0.3-0.6 s, attack 18u
 * P8) and per byte of a literal (LITERAL_BYTES of it count as a field). Undefined, with no more
 * work done, once the message has more than `maxFields` fields so counted: such a message is kept
 * as bytes. `fields` is how many it had. `stats.longestStep`: the most characters one step wrote.
 */
export async function protoscopeTextSliced(src: Uint8Array, slice: TimeSlice, maxFields = Infinity, stats?: { longestStep: number }): Promise<{ text: string; fields: number } | undefined> {
  const w = new Writer(src, maxFields);
  const steps = w.text();
  try {
    for (let chars = 0; ;) {
      const step = steps.next();
      if (stats) stats.longestStep = Math.max(stats.longestStep, w.p.chars - chars);
      chars = w.p.chars;
      if (step.done) return { text: step.value, fields: w.written };
      await slice.pause();
    }
  } catch (err) {
    if (err instanceof TooManyFields) return undefined;
    throw err;
  }
}

// ------------------------------------------------------------------ the scanner

export class ProtoscopeError extends Error {}

/** The most padding bytes `long-form:N` may add: a varint has at most 10 bytes. */
const MAX_LONG_FORM = 9;
/** Where `long-form:N` may stand, for the errors. */
const LONG_FORM_GOES = "it pads the varint right after it, so it must come right before a varint (a number without i32/i64, true, false), a tag, a '{' or a group's '}'";

function varint(value: bigint, extra = 0): number[] {
  const out: number[] = [];
  let v = BigInt.asUintN(64, value);
  do {
    const b = Number(v & 0x7fn);
    v >>= 7n;
    out.push(b);
  } while (v > 0n);
  for (let i = 0; i < extra; i++) out.push(0);
  for (let i = 0; i < out.length - 1; i++) out[i]! |= 0x80;
  return out;
}

const INT = /^(-?)(0x[0-9a-f]+|[0-9]+)(z|i32|i64)?$/i;
const FLOAT = /^(-?)([0-9]+\.[0-9]+(?:e-?[0-9]+)?|0x[0-9a-f]+\.[0-9a-f]+(?:p-?[0-9]+)?)(i32|i64)?$/i;
const TAG = /^(-?)(0x[0-9a-f]+|[0-9]+)(z?):([\w-]*)$/i;
const TYPES: Record<string, number> = { VARINT: 0, I64: 1, LEN: 2, SGROUP: 3, EGROUP: 4, I32: 5 };

/** The bytes that end a word. */
const WORD_END = new Set([...' \t\r\n{}"`#!'].map((c) => c.charCodeAt(0)));
/** The longest word: a 64-bit number in binary-free notations (20 digits, 0x and 16 hex digits) with a sign and a suffix, or a tag, fits many times. */
const MAX_WORD = 128;

/** The largest field number a tag's varint can hold beside its 3 bits of wire type (protobuf's own are 29 bits; the writer writes what any varint says). */
const MAX_FIELD = (1n << 61n) - 1n;

/** ZigZag of a signed 64-bit number (`z` suffix); one outside the signed range wrapped (attack 18w S2). */
function zigzag(n: bigint, fail: (why: string) => never): bigint {
  if (n < -(1n << 63n) || n >= 1n << 63n) fail(`${n}z is outside the signed 64-bit range`);
  return (n << 1n) ^ (n >> 63n);
}

/** A number of a protoscope word, which must fit 64 bits (signed or not): a bigger one was silently cut to its low 64 bits. */
function parseInt64(sign: string, digits: string): bigint {
  const v = BigInt(digits.toLowerCase().startsWith('0x') ? digits : digits.replace(/^0+(?=\d)/, ''));
  const n = sign ? -v : v;
  if (n >= 1n << 64n || n < -(1n << 63n)) throw new ProtoscopeError(`the number ${sign}${digits.length > 24 ? `${digits.slice(0, 24)}...` : digits} does not fit 64 bits`);
  return n;
}

/**
 * A float word's value. A hex float is exact (its digits times a power of two) and is rounded once,
 * to the nearest value of `bits` bits (ties to even); computed in doubles as digits / 16^n * 2^p it
 * was rounded twice, and 2^p alone underflowed or overflowed (0x10.0p-1075 was written as 0.0,
 * 0x0.1p1027 as +inf: attack 18x U4). One too big or too small for those bits is refused, as
 * integers are.
 */
function parseFloatToken(text: string, bits: 32 | 64, fail: (why: string) => never): number {
  const neg = text.startsWith('-');
  const t = neg ? text.slice(1) : text;
  const hex = /^0x([0-9a-f]+)\.([0-9a-f]+)(?:p(-?[0-9]+))?$/i.exec(t);
  const v = hex ? hexFloat(BigInt(`0x${hex[1]!}${hex[2]!}`), Number(hex[3] ?? 0) - 4 * hex[2]!.length, bits, (why) => fail(`${text}: ${why}`)) : Number(t);
  return neg ? -v : v;
}

/** `mantissa` x 2^`exp`, rounded to the nearest float of `bits` bits (a double holds it exactly). */
function hexFloat(mantissa: bigint, exp: number, bits: 32 | 64, fail: (why: string) => never): number {
  if (mantissa === 0n) return 0;
  const precision = bits === 32 ? 24 : 53;
  const maxExp = bits === 32 ? 127 : 1023;
  // The exponent of the least significant bit of the smallest (subnormal) float.
  const minLsb = bits === 32 ? -149 : -1074;
  const range = `a float${bits} is at most about 2^${maxExp + 1} and at least 2^${minLsb}`;
  const top = mantissa.toString(2).length - 1 + exp; // the value is in [2^top, 2^(top+1))
  if (top > maxExp) fail(`too big: ${range}`);
  if (top < minLsb - 1) fail(`too small: ${range}`);
  // The exponent of the result's least significant bit, and the mantissa rounded to it.
  const lsb = Math.max(top - precision + 1, minLsb);
  let rounded: bigint;
  if (lsb <= exp) rounded = mantissa << BigInt(exp - lsb);
  else {
    const shift = BigInt(lsb - exp);
    rounded = mantissa >> shift;
    const rest = mantissa - (rounded << shift);
    const half = 1n << (shift - 1n);
    if (rest > half || (rest === half && (rounded & 1n) === 1n)) rounded++;
  }
  if (rounded === 0n) fail(`too small: ${range}`);
  if (rounded.toString(2).length - 1 + lsb > maxExp) fail(`too big: ${range}`);
  // At most `precision` bits times a power of two the float holds: exact in a double.
  return Number(rounded) * 2 ** lsb;
}

function fixed(value: bigint | number, bits: 32 | 64, float: boolean): number[] {
  const b = Buffer.alloc(bits / 8);
  if (bits === 32) {
    if (float) b.writeFloatLE(Number(value));
    else b.writeUInt32LE(Number(BigInt.asUintN(32, BigInt(value))));
  } else if (float) b.writeDoubleLE(Number(value));
  else b.writeBigUInt64LE(BigInt.asUintN(64, BigInt(value)));
  return [...b];
}

/**
 * The assembled bytes, in a buffer that grows by doubling up to `max`: text from a set sizes
 * nothing beyond that, and no literal is spread into an argument list (a 2 MiB one overflowed
 * the stack there, attack 18u P4).
 */
class ByteSink {
  buf = new Uint8Array(256);
  length = 0;
  constructor(
    private readonly max: number,
    private readonly bound: string,
    private readonly fail: (why: string) => never,
  ) {}

  /** Room for `n` more bytes, refused past `max` (`reserved`: bytes already promised elsewhere). */
  room(n: number, reserved: number): void {
    const need = this.length + n;
    if (need + reserved > this.max) this.fail(`its bytes would be more than ${this.bound}`);
    if (need <= this.buf.length) return;
    const grown = new Uint8Array(Math.min(Math.max(need, this.buf.length * 2), this.max));
    grown.set(this.buf.subarray(0, this.length));
    this.buf = grown;
  }

  write(bytes: ArrayLike<number>, reserved: number): void {
    this.room(bytes.length, reserved);
    for (let i = 0; i < bytes.length; i++) this.buf[this.length++] = bytes[i]!;
  }
}

const varintLength = (value: number, extra: number) => {
  let n = 1;
  for (let v = value; v >= 0x80; v = Math.floor(v / 0x80)) n++;
  return n + extra;
};

/** Tokens assembled between looks at the clock (ProtoscopeAssembler.step). */
export const STEP_TOKENS = 1024;
/** Bytes of text one step reads at most (after the token it is in): a step is one turn of the loop between looks at the clock. */
const STEP_TEXT_BYTES = 64 * 1024;
/**
 * The longest string literal, in characters: one literal is read in one go, so its length is one
 * turn of the loop. The writer's longest is a whole message of TEXT_BUDGET (256 KiB) bytes, each
 * an escape of 4 characters; a 4 MiB literal held the loop ~200 ms (attack 18w S1).
 */
const MAX_LITERAL_TEXT = 4 * 256 * 1024 + 2;
/**
 * The most digits of a hex literal: the writer writes rows of 80, a hand-made set may hold a
 * whole message of TEXT_BUDGET (256 KiB) bytes in one. A literal is read in pieces, a step's text
 * at most; one of 4 MiB was one 66-72 ms token, checked whole before its length (attack 18x U1).
 */
const MAX_HEX_DIGITS = 2 * 256 * 1024;
/** Each byte's value as a hex digit, -1 for any other byte. */
const HEX_DIGIT = Int8Array.from({ length: 256 }, (_, b) => {
  const c = String.fromCharCode(b);
  return /[0-9a-f]/i.test(c) ? parseInt(c, 16) : -1;
});

/**
 * Assembles protoscope text into bytes a number of tokens at a time (`step`), so text from a set
 * is read in slices of the event loop (`protoscopeBytesSliced`). Open frames are kept as numbers
 * in arrays, not an object each: a `{` costs a few numbers, and its length prefix is a byte of
 * the output bound, so the text's braces are bounded by it too.
 */
class ProtoscopeAssembler {
  private readonly src: Buffer;
  private at = 0;
  private readonly out: ByteSink;
  // The open frames, innermost last (the first is the message itself): where each one's bytes
  // begin in the output (length prefixes not counted), the bytes of the length prefixes of frames
  // closed inside it (inserted at the end), its entry in the prefixes (-1 for a group) and a
  // group's field number (its closing brace writes the end tag).
  private readonly frameStart: number[] = [0];
  private readonly frameInserted: number[] = [0];
  private readonly framePrefix: number[] = [-1];
  private readonly frameGroup: Array<bigint | undefined> = [undefined];
  // A length-delimited frame's prefix, in the order frames open (which is the order of their
  // positions, outer before inner and earlier before later): where it goes in the output, the
  // length it encodes (known at the closing brace) and its long-form padding.
  private readonly prefixAt: number[] = [];
  private readonly prefixValue: number[] = [];
  private readonly prefixExtra: number[] = [];
  /** Bytes of all length prefixes: the closed ones exactly, an open one its least. */
  private prefixBytes = 0;
  private longForm: number | undefined;
  private lastWasLongForm = false;
  /** Where the hex literal being read ends (its closing backquote), -1 outside one. */
  private hexEnd = -1;

  constructor(text: string, { maxBytes = MAX_MOCK_EXCHANGE_BYTES, bound = `${maxBytes} bytes` }: AssemblyBound) {
    this.src = Buffer.from(text, 'utf8');
    this.out = new ByteSink(maxBytes, bound, this.fail);
  }

  private readonly fail = (why: string): never => {
    throw new ProtoscopeError(`protoscope at byte ${this.at}: ${why}`);
  };

  private emit(bytes: ArrayLike<number>): void {
    this.out.write(bytes, this.prefixBytes);
  }

  private skipSpace(): void {
    const src = this.src;
    while (this.at < src.length) {
      const c = src[this.at]!;
      if (c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a) this.at++;
      else if (c === 0x23) while (this.at < src.length && src[this.at] !== 0x0a) this.at++;
      else break;
    }
  }

  /**
   * The next word (a number, a tag, a keyword), at most MAX_WORD characters: no protoscope word is
   * longer, and one token is read between two looks at the clock, so a word of 4 MiB of digits was
   * one 0.8 s block of the loop (attack 18v Q1).
   */
  private word(): string {
    const start = this.at;
    while (this.at < this.src.length && !WORD_END.has(this.src[this.at]!)) {
      if (++this.at - start > MAX_WORD) this.fail(`a word of more than ${MAX_WORD} characters: no protoscope number, tag or keyword is that long`);
    }
    return this.src.subarray(start, this.at).toString('latin1');
  }

  /** The kind of the next token, for a tag without an explicit type. */
  private inferType(): number {
    const save = this.at;
    this.skipSpace();
    let type = 0;
    const c = this.src[this.at];
    if (c === 0x21) type = 3;
    else if (c === 0x7b) type = 2;
    else {
      const w = this.word();
      if (/^long-form:/.test(w)) {
        this.skipSpace();
        type = this.src[this.at] === 0x7b ? 2 : 0;
      } else if (/i32$/i.test(w) || /^-?inf32$/.test(w)) type = 5;
      else if (/i64$/i.test(w) || /^-?inf64$/.test(w) || FLOAT.test(w)) type = 1;
    }
    this.at = save;
    return type;
  }

  private takeLongForm(): number {
    const n = this.longForm ?? 0;
    this.longForm = undefined;
    return n;
  }

  /** Assembles up to `tokens` tokens; true once the text is read. */
  step(tokens: number): boolean {
    // Tokens, and bytes of text: 1,024 literals of 4 KiB of escapes were one 190 ms step (attack 18w S1).
    const began = this.at;
    for (let done = 0; done < tokens && this.at - began < STEP_TEXT_BYTES; done++) {
      if (this.hexEnd >= 0) {
        this.hexDigits(began + STEP_TEXT_BYTES);
        continue;
      }
      this.skipSpace();
      if (this.at >= this.src.length) {
        if (this.frameStart.length > 1) this.fail("unclosed '{'");
        if (this.longForm !== undefined) this.fail(`long-form:${this.longForm} at the end: ${LONG_FORM_GOES}`);
        return true;
      }
      const start = this.at;
      this.token(began + STEP_TEXT_BYTES);
      // What did not take the padding: it was kept for the next varint or tag, whatever came between (attack 18x U4).
      if (this.longForm !== undefined && !this.lastWasLongForm) {
        this.fail(`long-form:${this.longForm} before '${this.src.subarray(start, Math.min(this.at, start + 24)).toString()}': ${LONG_FORM_GOES}`);
      }
    }
    return false;
  }

  /** A hex literal's opening backquote at `at`: its length is checked, its digits read by hexDigits. */
  private hexLiteral(limit: number): void {
    const src = this.src;
    // The closing backquote is looked for only as far as the longest literal reaches.
    const window = Math.min(src.length, this.at + 2 + MAX_HEX_DIGITS);
    const end = src.subarray(0, window).indexOf(0x60, this.at + 1);
    if (end < 0) this.fail(window >= src.length ? 'unterminated hex literal' : `a hex literal of more than ${MAX_HEX_DIGITS} digits (256 KiB, the most a message is written as text)`);
    const digits = end - this.at - 1;
    if (digits % 2 !== 0) this.fail(`a hex literal of ${digits} digits: each byte is two, so the count must be even`);
    this.out.room(digits / 2, this.prefixBytes);
    this.hexEnd = end;
    this.at++;
    this.hexDigits(limit);
  }

  /** The hex literal's digits up to `limit` in the text (a pair at least), and its closing backquote if they reach it. */
  private hexDigits(limit: number): void {
    const src = this.src;
    const out = this.out;
    const stop = Math.min(this.hexEnd, this.at + 2 * Math.max(1, Math.floor((limit - this.at) / 2)));
    for (; this.at < stop; this.at += 2) {
      const hi = HEX_DIGIT[src[this.at]!]!;
      const lo = HEX_DIGIT[src[this.at + 1]!]!;
      if (hi < 0 || lo < 0) this.fail(`'${src.subarray(this.at, this.at + 2).toString('latin1')}' in a hex literal: only pairs of 0-9, a-f or A-F`);
      out.buf[out.length++] = (hi << 4) | lo;
    }
    if (this.at === this.hexEnd) {
      this.at++;
      this.hexEnd = -1;
    }
  }

  /** One token; `limit`: where in the text the step ends (a hex literal is read in pieces up to it). */
  private token(limit: number): void {
    const src = this.src;
    const c = src[this.at]!;
    const wasLongForm = this.lastWasLongForm;
    this.lastWasLongForm = false;
    if (c === 0x22) this.string();
    else if (c === 0x60) this.hexLiteral(limit);
    else if (c === 0x7b) {
      this.at++;
      const extra = this.takeLongForm();
      // Its prefix is at least a byte (and its padding): counted now, so braces that write nothing else are bounded too.
      this.out.room(0, this.prefixBytes + 1 + extra);
      this.prefixBytes += 1 + extra;
      this.frameStart.push(this.out.length);
      this.frameInserted.push(0);
      this.framePrefix.push(this.prefixAt.length);
      this.frameGroup.push(undefined);
      this.prefixAt.push(this.out.length);
      this.prefixValue.push(0);
      this.prefixExtra.push(extra);
    } else if (c === 0x21) {
      this.fail("'!{' must follow a tag without a type");
    } else if (c === 0x7d) {
      this.at++;
      if (this.frameStart.length < 2) this.fail("unmatched '}'");
      const start = this.frameStart.pop()!;
      const inserted = this.frameInserted.pop()!;
      const prefix = this.framePrefix.pop()!;
      const group = this.frameGroup.pop();
      const parent = this.frameInserted.length - 1;
      if (group !== undefined) {
        const extra = wasLongForm ? this.takeLongForm() : 0;
        this.emit(varint((group << 3n) | 4n, extra));
        this.frameInserted[parent]! += inserted;
      } else {
        const value = this.out.length - start + inserted;
        const length = varintLength(value, this.prefixExtra[prefix]!);
        this.out.room(0, this.prefixBytes + length - 1 - this.prefixExtra[prefix]!);
        this.prefixBytes += length - 1 - this.prefixExtra[prefix]!;
        this.prefixValue[prefix] = value;
        this.frameInserted[parent]! += inserted + length;
      }
    } else this.wordToken(c);
  }

  private string(): void {
    const src = this.src;
    const out = this.out;
    const end = Math.min(src.length, this.at + MAX_LITERAL_TEXT);
    this.at++;
    for (;;) {
      if (this.at >= end) this.fail(this.at >= src.length ? 'unterminated string' : `a string literal of more than ${MAX_LITERAL_TEXT} characters`);
      const b = src[this.at++]!;
      if (b === 0x22) return;
      out.room(1, this.prefixBytes);
      if (b !== 0x5c) {
        out.buf[out.length++] = b;
        continue;
      }
      const e = src[this.at++];
      let v: number;
      if (e === 0x5c || e === 0x22) v = e;
      else if (e === 0x6e) v = 0x0a;
      else if (e === 0x78) {
        const h = src.subarray(this.at, this.at + 2).toString('latin1');
        if (!/^[0-9a-f]{2}$/i.test(h)) this.fail(`bad \\x escape`);
        v = parseInt(h, 16);
        this.at += 2;
      } else if (e !== undefined && e >= 0x30 && e <= 0x37) {
        v = e - 0x30;
        for (let k = 0; k < 2 && src[this.at]! >= 0x30 && src[this.at]! <= 0x37; k++) v = v * 8 + (src[this.at++]! - 0x30);
        if (v > 255) this.fail('octal escape over 255');
      } else v = this.fail('unknown escape');
      out.buf[out.length++] = v;
    }
  }

  private wordToken(c: number): void {
    const w = this.word();
    let m: RegExpExecArray | null;
    if ((m = /^long-form:([0-9]+)$/.exec(w))) {
      if (this.longForm !== undefined) this.fail(`long-form:${this.longForm} before '${w}': ${LONG_FORM_GOES}`);
      // A varint has at most 10 bytes: more padding is no protobuf, and a count from the set must size nothing (attack 18s M4: long-form:200000000 crashed the server).
      this.longForm = Number(m[1]);
      if (this.longForm > MAX_LONG_FORM) this.fail(`long-form:${m[1]}: a varint has at most 10 bytes, so at most ${MAX_LONG_FORM} of padding`);
      this.lastWasLongForm = true;
    } else if ((m = TAG.exec(w))) {
      let n = parseInt64(m[1]!, m[2]!);
      if (m[3]) n = zigzag(n, this.fail);
      // A tag is one 64-bit varint: a bigger field number wrapped into another field (attack 18w S2).
      if (n < 0n || n > MAX_FIELD) this.fail(`field number ${n} is outside 0..${MAX_FIELD}`);
      const t = m[4]!;
      let type: number;
      if (t === '') type = this.inferType();
      else if (/^[0-7]$/.test(t)) type = Number(t);
      else if (t in TYPES) type = TYPES[t]!;
      else type = this.fail(`unknown wire type ${t}`);
      this.emit(varint((n << 3n) | BigInt(type), this.takeLongForm()));
      if (t === '' && type === 3) {
        this.skipSpace();
        if (this.src[this.at] !== 0x21 || this.src[this.at + 1] !== 0x7b) this.fail("expected '!{'");
        this.at += 2;
        this.frameStart.push(this.out.length);
        this.frameInserted.push(0);
        this.framePrefix.push(-1);
        this.frameGroup.push(n);
      }
    } else if (w === 'true' || w === 'false') this.emit(varint(w === 'true' ? 1n : 0n, this.takeLongForm()));
    else if ((m = /^(-?)inf(32|64)$/.exec(w))) this.emit(fixed(m[1] ? -Infinity : Infinity, Number(m[2]) as 32 | 64, true));
    else if ((m = INT.exec(w))) {
      let v = parseInt64(m[1]!, m[2]!);
      const s = m[3]?.toLowerCase();
      if (s === 'i32' && (v < -(1n << 31n) || v >= 1n << 32n)) this.fail(`${w} does not fit 32 bits`);
      if (s === 'i32' || s === 'i64') this.emit(fixed(v, s === 'i32' ? 32 : 64, false));
      else {
        if (s === 'z') v = zigzag(v, this.fail);
        this.emit(varint(v, this.takeLongForm()));
      }
    } else if ((m = FLOAT.exec(w))) {
      const bits = m[3]?.toLowerCase() === 'i32' ? 32 : 64;
      this.emit(fixed(parseFloatToken(m[1]! + m[2]!, bits, this.fail), bits, true));
    } else this.fail(`unknown token '${w || String.fromCharCode(c)}'`);
  }

  /** The output with the length prefixes (in the order of their positions) inserted. */
  result(): Uint8Array {
    const bytes = this.out.buf.subarray(0, this.out.length);
    const out = new Uint8Array(bytes.length + this.prefixBytes);
    let w = 0;
    let r = 0;
    for (let i = 0; i < this.prefixAt.length; i++) {
      // Byte by byte: a view (subarray) a prefix was an object each, a million for a text of braces.
      for (const at = this.prefixAt[i]!; r < at;) out[w++] = bytes[r++]!;
      // A length (at most the output's) as a varint, padded by its long-form bytes; no BigInt a prefix.
      let v = this.prefixValue[i]!;
      for (let extra = this.prefixExtra[i]!; ;) {
        const more = v >= 0x80 || extra > 0;
        out[w++] = (v & 0x7f) | (more ? 0x80 : 0);
        if (v >= 0x80) v = Math.floor(v / 0x80);
        else if (extra > 0) [v, extra] = [0, extra - 1];
        else break;
      }
    }
    out.set(bytes.subarray(r), w);
    return out;
  }
}

/** The most bytes text may assemble to (MAX_MOCK_EXCHANGE_BYTES by default), and that bound in words for the error. */
export interface AssemblyBound {
  maxBytes?: number;
  bound?: string;
}

/**
 * Assembles protoscope text into bytes; throws ProtoscopeError on text it cannot read, or whose
 * bytes would be more than `maxBytes`.
 */
export function protoscopeBytes(text: string, bound: AssemblyBound = {}): Uint8Array {
  const a = new ProtoscopeAssembler(text, bound);
  while (!a.step(Infinity));
  return a.result();
}

/** protoscopeBytes in slices of the event loop (text from a set: a few MiB of it is seconds of work). */
export async function protoscopeBytesSliced(text: string, slice: TimeSlice, bound: AssemblyBound = {}): Promise<Uint8Array> {
  const a = new ProtoscopeAssembler(text, bound);
  while (!a.step(STEP_TOKENS)) await slice.pause();
  return a.result();
}
