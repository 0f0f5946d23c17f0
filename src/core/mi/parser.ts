/**
 * GDB/MI output-record parser: one line of GDB's MI output -> one MiRecord.
 *
 * Grammar: GDB manual, "GDB/MI Output Syntax" (plus the Result, Stream and
 * Async Records sections). Hand-written recursive descent over an index, so
 * parsing is linear in the line length and never backtracks; a regex-based
 * parser would be both slower and fragile on multi-megabyte value strings.
 *
 * Representation choices (the grammar leaves these to the client):
 * - A list of results, e.g. `stack=[frame={..},frame={..}]`, becomes an array
 *   of the values (`[{..},{..}]`): GDB only uses the repeated key as a label,
 *   and arrays are what callers want to iterate.
 * - A key repeated inside a tuple or the top-level results becomes an array of
 *   all its values, in order. The first occurrence stays a scalar until the
 *   second one appears, so the common single-occurrence case stays simple.
 * - mi1/mi2 emit multi-location breakpoints as `bkpt={..},{..},{..}` (keyless
 *   values, violating the grammar). A keyless value is treated as another
 *   occurrence of the preceding key, giving `bkpt: [{..},{..},{..}]`; one with
 *   no preceding key (`+download,{..}`) is stored under the key "".
 */

export type MiValue = string | MiTuple | MiValue[];
export interface MiTuple {
  [key: string]: MiValue;
}

/** A field of a record as a string, when it is one (MI values are strings, tuples or lists). */
export const str = (v: MiValue | undefined): string | undefined => (typeof v === 'string' ? v : undefined);
/** Whether a field is a tuple (`{...}`), not a string or a list. */
export const isTuple = (v: MiValue | undefined): v is MiTuple => typeof v === 'object' && v !== null && !Array.isArray(v);

export type MiAsyncKind = 'exec' | 'status' | 'notify';
export type MiStreamKind = 'console' | 'target' | 'log';

export type MiRecord =
  | { kind: 'result'; token?: number; resultClass: string; results: MiTuple }
  | { kind: MiAsyncKind; token?: number; asyncClass: string; results: MiTuple }
  | { kind: MiStreamKind; text: string }
  | { kind: 'prompt' }
  | { kind: 'unknown'; text: string };

/** Thrown by parseCString (and used internally) for malformed input. */
export class MiSyntaxError extends Error {
  override name = 'MiSyntaxError';
  constructor(
    message: string,
    readonly index: number,
  ) {
    super(`${message} at index ${index}`);
  }
}

// Real MI nests < 100 deep; the cap keeps hostile input from blowing the stack.
const MAX_DEPTH = 1000;
const PROMPT = /^\(gdb\) *$/; // GDB 13 prints "(gdb) " with a trailing space.
const RESULT_CLASSES = new Set(['done', 'running', 'connected', 'error', 'exit']);
const ASYNC_KINDS = new Map<string, MiAsyncKind>([
  ['*', 'exec'],
  ['+', 'status'],
  ['=', 'notify'],
]);
const STREAM_KINDS = new Map<string, MiStreamKind>([
  ['~', 'console'],
  ['@', 'target'],
  ['&', 'log'],
]);
// Escape letter (char code) -> byte; indexed by char code for speed on escape-heavy values.
const SIMPLE_ESCAPES: (number | undefined)[] = [];
for (const [letter, byte] of Object.entries({ n: 10, t: 9, r: 13, '"': 34, '\\': 92, a: 7, b: 8, f: 12, v: 11, e: 27 })) {
  SIMPLE_ESCAPES[letter.charCodeAt(0)] = byte;
}
// ignoreBOM: keep a leading EF BB BF as U+FEFF instead of silently dropping it.
const UTF8 = new TextDecoder('utf-8', { ignoreBOM: true });
const UTF8_ENCODER = new TextEncoder();
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Parse position in one line; the parse functions below advance `i`. */
interface Cursor {
  readonly s: string;
  i: number;
}

/**
 * Parses one MI output line (without its "\n"; a trailing "\r" is stripped).
 * Never throws: anything that is not well-formed MI (e.g. debuggee output
 * sharing GDB's stdout) comes back as `{ kind: 'unknown', text }`.
 */
export function parseMiLine(line: string): MiRecord {
  const text = line.endsWith('\r') ? line.slice(0, -1) : line;
  try {
    return parseRecord(text) ?? { kind: 'unknown', text };
  } catch {
    return { kind: 'unknown', text };
  }
}

function parseRecord(s: string): MiRecord | undefined {
  if (PROMPT.test(s)) return { kind: 'prompt' };
  const stream = STREAM_KINDS.get(s.charAt(0));
  if (stream) {
    const { value, end } = parseCString(s, 1);
    return end === s.length ? { kind: stream, text: value } : undefined;
  }
  const c: Cursor = { s, i: 0 };
  const token = parseToken(c);
  const marker = s.charAt(c.i++);
  const asyncKind = ASYNC_KINDS.get(marker);
  if (marker !== '^' && !asyncKind) return undefined;
  const cls = parseClass(c);
  if (!cls) return undefined;
  const results = parseTopResults(c);
  const tok = token === undefined ? {} : { token };
  if (asyncKind) return { kind: asyncKind, ...tok, asyncClass: cls, results };
  return RESULT_CLASSES.has(cls) ? { kind: 'result', ...tok, resultClass: cls, results } : undefined;
}

function parseToken(c: Cursor): number | undefined {
  const start = c.i;
  while (isDigit(c.s.charCodeAt(c.i))) c.i++;
  return c.i > start ? Number(c.s.slice(start, c.i)) : undefined;
}

/** Result/async class: an identifier like `done` or `thread-group-added`. */
function parseClass(c: Cursor): string | undefined {
  const start = c.i;
  if (!isLetter(c.s.charCodeAt(c.i))) return undefined;
  while (isClassChar(c.s.charCodeAt(c.i))) c.i++;
  return c.i === c.s.length || c.s.charCodeAt(c.i) === 0x2c ? c.s.slice(start, c.i) : undefined;
}

function parseTopResults(c: Cursor): MiTuple {
  if (c.i === c.s.length) return {};
  expect(c, ','); // parseClass guarantees this is a comma
  const results = parseResults(c, 0);
  if (c.i !== c.s.length) throw new MiSyntaxError('trailing garbage', c.i);
  return results;
}

/** `result ("," result)*`; stops before the first character that is not a comma. */
function parseResults(c: Cursor, depth: number): MiTuple {
  const tuple: MiTuple = {};
  const repeated = new Set<string>();
  let key: string | undefined;
  do {
    skipSpaces(c);
    const keyless = isValueStart(c.s.charCodeAt(c.i)); // mi2 quirk, see header
    key = keyless ? (key ?? '') : parseVariable(c);
    addResult(tuple, repeated, key, parseValue(c, depth));
    skipSpaces(c);
  } while (eat(c, ','));
  return tuple;
}

/** Variable names are `[A-Za-z0-9_-]+` in practice; accept anything up to `=` that is not structural. */
function parseVariable(c: Cursor): string {
  const start = c.i;
  while (c.i < c.s.length && !isStructural(c.s.charCodeAt(c.i))) c.i++;
  const name = c.s.slice(start, c.i).trimEnd();
  if (!name) throw new MiSyntaxError('expected variable name', start);
  expect(c, '=');
  skipSpaces(c);
  return name;
}

function addResult(tuple: MiTuple, repeated: Set<string>, key: string, value: MiValue): void {
  if (!Object.hasOwn(tuple, key)) {
    define(tuple, key, value);
  } else if (repeated.has(key)) {
    (tuple[key] as MiValue[]).push(value);
  } else {
    // Tracked in a set so that a first value which is itself a list is not mistaken for the repeat array.
    repeated.add(key);
    define(tuple, key, [tuple[key]!, value]);
  }
}

/** Plain assignment of "__proto__" would replace the prototype instead of adding a key. */
function define(tuple: MiTuple, key: string, value: MiValue): void {
  if (key === '__proto__') {
    Object.defineProperty(tuple, key, { value, writable: true, enumerable: true, configurable: true });
  } else {
    tuple[key] = value;
  }
}

function parseValue(c: Cursor, depth: number): MiValue {
  if (depth >= MAX_DEPTH) throw new MiSyntaxError('nesting too deep', c.i);
  const ch = c.s.charAt(c.i);
  if (ch === '"') {
    const { value, end } = parseCString(c.s, c.i);
    c.i = end;
    return value;
  }
  if (ch === '{') return parseTuple(c, depth + 1);
  if (ch === '[') return parseList(c, depth + 1);
  throw new MiSyntaxError('expected value', c.i);
}

function parseTuple(c: Cursor, depth: number): MiTuple {
  c.i++; // '{'
  skipSpaces(c);
  if (eat(c, '}')) return {};
  const tuple = parseResults(c, depth);
  expect(c, '}');
  return tuple;
}

/** Lists hold values or results; for results the (repeated) key is dropped, see header. */
function parseList(c: Cursor, depth: number): MiValue[] {
  c.i++; // '['
  const items: MiValue[] = [];
  skipSpaces(c);
  if (eat(c, ']')) return items;
  do {
    skipSpaces(c);
    if (!isValueStart(c.s.charCodeAt(c.i))) parseVariable(c);
    items.push(parseValue(c, depth));
    skipSpaces(c);
  } while (eat(c, ','));
  expect(c, ']');
  return items;
}

/**
 * Decodes the C string whose opening quote is at `start`; `end` is the index
 * just past the closing quote. Octal and \x escapes denote raw bytes (GDB
 * escapes every byte >= 0x80, e.g. "\303\251" for "é"), so the decoded text
 * is UTF-8 decoded (invalid sequences -> U+FFFD).
 * Throws MiSyntaxError if there is no string at `start` or it is unterminated.
 */
export function parseCString(src: string, start: number): { value: string; end: number } {
  if (src.charCodeAt(start) !== QUOTE) throw new MiSyntaxError('expected "', start);
  const close = findClosingQuote(src, start + 1);
  const body = src.slice(start + 1, close);
  const value = body.includes('\\') ? new EscapeDecoder(src, start + 1, close).decode() : body;
  return { value, end: close + 1 };
}

/** Index of the unescaped quote ending a string whose body starts at `i`. */
function findClosingQuote(src: string, i: number): number {
  for (; i < src.length; i++) {
    const ch = src.charCodeAt(i);
    if (ch === QUOTE) return i;
    if (ch === BACKSLASH) i++;
  }
  throw new MiSyntaxError('unterminated string', i);
}

/**
 * Decodes an escaped string body into UTF-8 bytes, then to text in one
 * TextDecoder call: escaped bytes may form one character (and GDB escapes
 * bytes one by one), and a single decode per string is much faster than one
 * per byte run on escape-heavy megabyte values.
 */
class EscapeDecoder {
  // A UTF-16 unit needs at most 3 UTF-8 bytes; escapes only shrink the text.
  private readonly bytes: Uint8Array;
  private n = 0;

  constructor(
    private readonly src: string,
    private i: number,
    private readonly end: number,
  ) {
    this.bytes = new Uint8Array((end - i) * 3);
  }

  decode(): string {
    const { src, end, bytes } = this;
    while (this.i < end) {
      const ch = src.charCodeAt(this.i);
      if (ch === BACKSLASH) {
        this.escape(src.charCodeAt(this.i + 1));
      } else if (ch < 0x80) {
        bytes[this.n++] = ch;
        this.i++;
      } else {
        this.nonAscii();
      }
    }
    return UTF8.decode(bytes.subarray(0, this.n));
  }

  /** Raw non-ASCII text (GDB never sends it, but a UTF-8 decoded stream may carry it). */
  private nonAscii(): void {
    let j = this.i + 1;
    while (j < this.end && this.src.charCodeAt(j) >= 0x80) j++;
    this.n += UTF8_ENCODER.encodeInto(this.src.slice(this.i, j), this.bytes.subarray(this.n)).written;
    this.i = j;
  }

  private escape(ch: number): void {
    const simple = SIMPLE_ESCAPES[ch];
    if (simple !== undefined) {
      this.bytes[this.n++] = simple;
      this.i += 2;
    } else if (ch >= 0x30 && ch <= 0x37) {
      this.numericByte(this.i + 1, 3, 8);
    } else if (ch === 0x78 && hexValue(this.src.charCodeAt(this.i + 2)) >= 0) {
      this.numericByte(this.i + 2, 2, 16); // \xHH
    } else {
      this.i++; // unknown escape (\', \?, \x without digits): drop the backslash, keep the character
    }
  }

  private numericByte(from: number, maxDigits: number, radix: number): void {
    let value = 0;
    let to = from;
    while (to < from + maxDigits) {
      const digit = hexValue(this.src.charCodeAt(to));
      if (digit < 0 || digit >= radix) break;
      value = value * radix + digit;
      to++;
    }
    this.bytes[this.n++] = value & 0xff; // "\777" overflows a byte; C truncates too
    this.i = to;
  }
}

function expect(c: Cursor, ch: string): void {
  if (!eat(c, ch)) throw new MiSyntaxError(`expected '${ch}'`, c.i);
}

function eat(c: Cursor, ch: string): boolean {
  if (c.s.charAt(c.i) !== ch) return false;
  c.i++;
  return true;
}

// GDB never emits blanks between MI tokens, but hand-written input and other MI servers do.
function skipSpaces(c: Cursor): void {
  while (c.s.charCodeAt(c.i) === 0x20 || c.s.charCodeAt(c.i) === 0x09) c.i++;
}

const isDigit = (ch: number): boolean => ch >= 0x30 && ch <= 0x39;
const isLetter = (ch: number): boolean => (ch | 0x20) >= 0x61 && (ch | 0x20) <= 0x7a;
const hexValue = (ch: number): number => (isDigit(ch) ? ch - 0x30 : (ch | 0x20) >= 0x61 && (ch | 0x20) <= 0x66 ? (ch | 0x20) - 0x57 : -1);
const isClassChar = (ch: number): boolean => isLetter(ch) || isDigit(ch) || ch === 0x2d || ch === 0x5f;
const isValueStart = (ch: number): boolean => ch === QUOTE || ch === 0x7b || ch === 0x5b; // " { [
// = , { } [ ] " : characters that end a variable name
const isStructural = (ch: number): boolean => ch === 0x3d || ch === 0x2c || ch === 0x7b || ch === 0x7d || ch === 0x5b || ch === 0x5d || ch === QUOTE;
