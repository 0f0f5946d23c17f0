import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * Source Map v3 (the ECMA-426 format TypeScript, esbuild and tsx write): which line and column of
 * an original source each position of a generated script came from, and back. Only what a debugger
 * needs: decoding `mappings`, and the two lookups.
 */

/** A position, 0-based (CDP's, and the map's). */
export interface Position {
  line: number;
  column: number;
}

/**
 * The largest map read, a file or an inline one: decoding is on the event loop, and a 30 MB map of
 * one-field segments held it 46 s at 1.6 GB (attack 18aq j2-3). A map past it is not used: that
 * script's breakpoints and stops are by its generated lines.
 */
export const MAX_MAP_BYTES = 4 * 1024 * 1024;
/** The most segments decoded from one map (20 bytes each). */
export const MAX_SEGMENTS = 500_000;

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const DIGIT = new Int8Array(128).fill(-1);
for (let i = 0; i < BASE64.length; i++) DIGIT[BASE64.charCodeAt(i)] = i;

/** Each decoded segment is five numbers: generated line and column, source index (-1: none), original line and column. */
const FIELDS = 5;

export class SourceMap {
  /** The original sources, as absolute paths where they are files (else as the map names them). */
  readonly sources: string[];
  /** Segments, packed (FIELDS numbers each), by generated line then column: 20 bytes a segment (attack 18aq k2-3: objects took 70). */
  private readonly rows: Int32Array;
  /** Where each generated line's segments start in `rows` (in segments), and one past the last line. */
  private readonly lineStart: Int32Array;

  private constructor(sources: string[], decoded: Decoded) {
    this.sources = sources;
    this.rows = decoded.rows;
    this.lineStart = decoded.lineStart;
  }

  /** How many segments the map has. */
  get segments(): number {
    return this.rows.length / FIELDS;
  }

  /**
   * Parses a map. `mapUrl` is where it was found (a file URL, or the script's own URL for an inline
   * one): relative sources are resolved from it, with `sourceRoot` before them.
   */
  static parse(text: string, mapUrl: string): SourceMap {
    const raw = JSON.parse(text) as { version?: number; sources?: unknown; sourceRoot?: unknown; mappings?: unknown; sections?: unknown };
    if (raw.sections !== undefined) throw new Error('index source maps (with "sections") are not supported');
    if (!Array.isArray(raw.sources) || typeof raw.mappings !== 'string') throw new Error('not a source map: it has no "sources" list or no "mappings" string');
    const root = typeof raw.sourceRoot === 'string' ? raw.sourceRoot : '';
    const sources = raw.sources.map((s) => resolveSource(typeof s === 'string' ? s : '', root, mapUrl));
    return new SourceMap(sources, decodeMappings(raw.mappings, sources.length));
  }

  /** The original position of a generated one: the segment at or before it on its line (else the line's first). */
  original(at: Position): (Position & { source: string }) | undefined {
    if (at.line < 0 || at.line + 1 >= this.lineStart.length) return undefined;
    const from = this.lineStart[at.line]!;
    const to = this.lineStart[at.line + 1]!;
    if (from >= to) return undefined;
    // The last segment at or before the column (binary search), else the line's first.
    let lo = from;
    let hi = to - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.rows[mid * FIELDS + 1]! <= at.column) lo = mid;
      else hi = mid - 1;
    }
    const row = lo * FIELDS;
    const source = this.rows[row + 2]!;
    if (source < 0) return undefined;
    return { source: this.sources[source]!, line: this.rows[row + 3]!, column: this.rows[row + 4]! };
  }

  /**
   * Where an original line's code starts in the generated script: its first mapped position, or
   * the next original line's with code (up to `lookAhead` lines on), as a debugger moves a
   * breakpoint on a blank line to the next line that runs. Undefined when the source is not one of
   * this map's or nothing maps there.
   */
  generated(source: string, line: number, lookAhead = 20): (Position & { originalLine: number }) | undefined {
    const index = this.sources.indexOf(source);
    if (index < 0) return undefined;
    // One pass (rows are in generated order): the first segment of the nearest original line at or after `line`.
    let best: { line: number; column: number; originalLine: number } | undefined;
    for (let row = 0; row < this.rows.length; row += FIELDS) {
      if (this.rows[row + 2] !== index) continue;
      const original = this.rows[row + 3]!;
      if (original < line || original > line + lookAhead || (best && original >= best.originalLine)) continue;
      best = { line: this.rows[row]!, column: this.rows[row + 1]!, originalLine: original };
      if (original === line) break;
    }
    return best;
  }

  /** Whether `source` is one of this map's. */
  has(source: string): boolean {
    return this.sources.includes(source);
  }
}

/** A source's absolute path when it names a file (relative to the map, after sourceRoot), else its name as given. */
function resolveSource(source: string, root: string, mapUrl: string): string {
  const joined = root && !/^[a-z]+:/i.test(source) && !source.startsWith('/') ? `${root.replace(/\/?$/, '/')}${source}` : source;
  try {
    const url = new URL(joined, mapUrl);
    return url.protocol === 'file:' ? path.normalize(fileURLToPath(url)) : url.href;
  } catch {
    return joined;
  }
}

interface Decoded {
  rows: Int32Array;
  lineStart: Int32Array;
}

/** Decodes `mappings` (semicolon-separated lines of comma-separated base64 VLQ segments) into packed rows. */
function decodeMappings(mappings: string, sourceCount: number): Decoded {
  let rows = new Int32Array(4096 * FIELDS);
  let count = 0;
  const lineStarts: number[] = [0];
  let source = 0;
  let line = 0;
  let column = 0;
  let genColumn = 0;
  let genLine = 0;
  let lineFrom = 0;
  let sorted = true;
  const fields: number[] = [];
  const push = (values: [number, number, number, number, number]) => {
    if (++count > MAX_SEGMENTS) throw new Error(`the source map has more than ${MAX_SEGMENTS} segments`);
    if ((count - 1) * FIELDS + FIELDS > rows.length) {
      const grown = new Int32Array(rows.length * 2);
      grown.set(rows);
      rows = grown;
    }
    rows.set(values, (count - 1) * FIELDS);
  };
  let i = 0;
  const n = mappings.length;
  while (i <= n) {
    const c = i < n ? mappings.charCodeAt(i) : 59; // the end closes the last line, as a ';' would
    if (c === 59 || c === 44) {
      if (fields.length >= 1) {
        const before = genColumn;
        genColumn += fields[0]!;
        if (count > lineFrom && genColumn < before) sorted = false;
        if (fields.length >= 4) {
          source += fields[1]!;
          line += fields[2]!;
          column += fields[3]!;
          push([genLine, genColumn, source >= 0 && source < sourceCount ? source : -1, line, column]);
        } else {
          push([genLine, genColumn, -1, 0, 0]);
        }
      }
      fields.length = 0;
      if (c === 59) {
        // Segments are in column order in every map seen; a line that is not gets sorted.
        if (!sorted) sortLine(rows, lineFrom, count);
        sorted = true;
        lineFrom = count;
        lineStarts.push(count);
        genColumn = 0;
        genLine++;
      }
      i++;
      continue;
    }
    // One VLQ number: 5 bits a digit, the sixth says another digit follows; the lowest bit of the value is its sign.
    let value = 0;
    let shift = 0;
    for (;;) {
      const digit = i < n ? (DIGIT[mappings.charCodeAt(i)] ?? -1) : -1;
      if (digit < 0) throw new Error(`source map mappings: bad character at ${i}`);
      i++;
      value += (digit & 31) * 2 ** shift;
      shift += 5;
      if ((digit & 32) === 0) break;
      if (shift > 30) throw new Error(`source map mappings: a number too long at ${i}`);
    }
    fields.push(value % 2 === 1 ? -Math.floor(value / 2) : Math.floor(value / 2));
  }
  return { rows: rows.slice(0, count * FIELDS), lineStart: Int32Array.from(lineStarts) };
}

/** Sorts the segments [from, to) of one generated line by column. */
function sortLine(rows: Int32Array, from: number, to: number): void {
  const line: number[][] = [];
  for (let k = from; k < to; k++) line.push(Array.from(rows.subarray(k * FIELDS, k * FIELDS + FIELDS)));
  line.sort((a, b) => a[1]! - b[1]!);
  line.forEach((values, k) => rows.set(values, (from + k) * FIELDS));
}

/**
 * Loads the map a script names (`sourceMapURL`, relative to `scriptUrl`): an inline `data:` URL, or a
 * file, which `readFile` reads (it decides which files may be read, and how much). Undefined when
 * there is none or it cannot be read; throws on a bad map (the error never quotes the file).
 */
export function loadSourceMap(sourceMapURL: string, scriptUrl: string, readFile: (file: string) => string | undefined): SourceMap | undefined {
  if (!sourceMapURL) return undefined;
  let text: string | undefined;
  let base = scriptUrl.startsWith('/') ? pathToFileURL(scriptUrl).href : scriptUrl;
  if (sourceMapURL.startsWith('data:')) {
    const comma = sourceMapURL.indexOf(',');
    if (comma < 0) return undefined;
    const meta = sourceMapURL.slice(5, comma);
    const payload = sourceMapURL.slice(comma + 1);
    // Base64 is 4 characters for 3 bytes, and a percent-escape up to 3 for one.
    if (payload.length > (/;base64$/i.test(meta) ? (MAX_MAP_BYTES / 3) * 4 : MAX_MAP_BYTES * 3)) throw new Error(`the source map is larger than ${MAX_MAP_BYTES / 1024 / 1024} MiB`);
    text = /;base64$/i.test(meta) ? Buffer.from(payload, 'base64').toString('utf8') : decodeURIComponent(payload);
  } else {
    let url: URL;
    try {
      url = new URL(sourceMapURL, base);
    } catch {
      return undefined;
    }
    if (url.protocol !== 'file:') return undefined;
    text = readFile(fileURLToPath(url));
    base = url.href;
  }
  if (text === undefined) return undefined;
  if (text.length > MAX_MAP_BYTES) throw new Error(`the source map is larger than ${MAX_MAP_BYTES / 1024 / 1024} MiB`);
  try {
    return SourceMap.parse(text, base);
  } catch (err) {
    // JSON.parse quotes the text it failed on: a "map" could be any file the program names, so the cause is left out.
    // eslint-disable-next-line preserve-caught-error
    throw new Error(err instanceof SyntaxError ? 'the source map is not valid JSON' : (err as Error).message);
  }
}
