/**
 * A small streaming reader for tar archives (ustar, GNU and POSIX pax), enough for support bundles:
 * it hands each entry's header to `onEntry`, the entry's data in chunks to `onData`, and calls
 * `onEnd` when an entry is complete. It writes nothing itself; extract.ts decides what is safe.
 */

export type TarEntryType = 'file' | 'directory' | 'symlink' | 'hardlink' | 'char' | 'block' | 'fifo' | 'other';

export interface TarHeader {
  /** The member's name as stored (pax `path` and GNU long names applied), not yet made safe. */
  path: string;
  type: TarEntryType;
  /** The raw typeflag character, for messages. */
  flag: string;
  size: number;
  mode: number;
  /** Seconds since the epoch. */
  mtime: number;
  linkpath: string;
}

export interface TarSink {
  onEntry(header: TarHeader): Promise<void> | void;
  onData(chunk: Buffer): Promise<void> | void;
  onEnd(): Promise<void> | void;
}

export class TarFormatError extends Error {
  override name = 'TarFormatError';
}

const BLOCK = 512;
/** pax and GNU long-name records larger than this are refused (a real one is a few hundred bytes). */
const MAX_META_BYTES = 1024 * 1024;

type State = 'header' | 'data' | 'meta' | 'pad' | 'done';

/**
 * Feed decompressed bytes with `push`; call `finish` at the end of input. `push` resolves to true
 * once the end-of-archive marker has been read: the caller can stop reading then.
 */
export class TarReader {
  private state: State = 'header';
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private remaining = 0;
  private padding = 0;
  private meta: Buffer[] = [];
  private metaKind = '';
  private pax: Record<string, string> = {};
  private longName: string | null = null;
  private longLink: string | null = null;
  private headersSeen = 0;
  /** Headers (including pax and long-name ones) read so far. */
  get headers(): number {
    return this.headersSeen;
  }
  /** Bytes of pax and long-name records read so far. */
  metaBytes = 0;

  constructor(private readonly sink: TarSink) {}

  get done(): boolean {
    return this.state === 'done';
  }

  async push(chunk: Buffer): Promise<boolean> {
    let off = 0;
    while (off < chunk.length && this.state !== 'done') {
      switch (this.state) {
        case 'header': {
          const need = BLOCK - this.pendingBytes;
          if (chunk.length - off < need) {
            this.pending.push(chunk.subarray(off));
            this.pendingBytes += chunk.length - off;
            off = chunk.length;
            break;
          }
          let block: Buffer;
          if (this.pendingBytes > 0) {
            this.pending.push(chunk.subarray(off, off + need));
            block = Buffer.concat(this.pending, BLOCK);
            this.pending = [];
            this.pendingBytes = 0;
          } else {
            block = chunk.subarray(off, off + BLOCK);
          }
          off += need;
          await this.header(block);
          break;
        }
        case 'data':
        case 'meta': {
          const n = Math.min(this.remaining, chunk.length - off);
          const piece = chunk.subarray(off, off + n);
          off += n;
          this.remaining -= n;
          if (this.state === 'meta') this.meta.push(piece);
          else if (n > 0) await this.sink.onData(piece);
          if (this.remaining === 0) await this.endOfData();
          break;
        }
        case 'pad': {
          const n = Math.min(this.padding, chunk.length - off);
          off += n;
          this.padding -= n;
          if (this.padding === 0) this.state = 'header';
          break;
        }
      }
    }
    return this.state === 'done';
  }

  /** Call at the end of input: an archive cut short is an error. */
  finish(): void {
    if (this.state === 'done') return;
    if (this.state === 'header' && this.pendingBytes === 0) {
      if (this.headersSeen === 0) throw new TarFormatError('the archive is empty');
      return; // no end-of-archive marker, but every entry was complete (some writers omit it)
    }
    throw new TarFormatError('unexpected end of archive (the file is truncated)');
  }

  private async header(block: Buffer): Promise<void> {
    if (isZero(block)) {
      // One zero block ends the archive (the second is padding): stop here, trailing bytes are ignored.
      if (this.headersSeen === 0) throw new TarFormatError('the archive is empty');
      this.state = 'done';
      return;
    }
    if (!checksumOk(block)) {
      throw new TarFormatError(this.headersSeen === 0 ? 'not a tar archive (bad header checksum)' : `corrupt tar header after ${this.headersSeen} entries (bad checksum)`);
    }
    this.headersSeen++;
    const flag = String.fromCharCode(block[156]!);
    const size = this.pax.size !== undefined ? parseDecimal(this.pax.size, 'pax size') : parseNumeric(block, 124, 12, 'size');
    const padding = (BLOCK - (size % BLOCK)) % BLOCK;

    if (flag === 'x' || flag === 'g' || flag === 'L' || flag === 'K') {
      if (size > MAX_META_BYTES) throw new TarFormatError(`a ${flag === 'L' || flag === 'K' ? 'GNU long name' : 'pax'} record of ${size} bytes is too large`);
      this.metaBytes += size;
      this.metaKind = flag;
      this.meta = [];
      this.remaining = size;
      this.padding = padding;
      this.state = 'meta';
      if (size === 0) await this.endOfData();
      return;
    }

    const ustar = block.toString('latin1', 257, 263);
    let name = cString(block, 0, 100);
    if (ustar === 'ustar\0') {
      const prefix = cString(block, 345, 155);
      if (prefix) name = `${prefix}/${name}`;
    }
    const header: TarHeader = {
      path: this.pax.path ?? this.longName ?? name,
      type: entryType(flag),
      flag,
      size,
      mode: parseNumeric(block, 100, 8, 'mode') & 0o7777,
      mtime: this.pax.mtime !== undefined ? Math.floor(Number(this.pax.mtime)) || 0 : parseNumeric(block, 136, 12, 'mtime'),
      linkpath: this.pax.linkpath ?? this.longLink ?? cString(block, 157, 100),
    };
    this.pax = {};
    this.longName = null;
    this.longLink = null;
    // Links, directories and devices carry no data even if a writer put a size in the header.
    const carriesData = header.type === 'file' || header.type === 'other';
    this.remaining = carriesData ? size : 0;
    this.padding = carriesData ? padding : 0;
    await this.sink.onEntry(header);
    this.state = 'data';
    if (this.remaining === 0) await this.endOfData();
  }

  private async endOfData(): Promise<void> {
    if (this.state === 'meta') {
      const data = Buffer.concat(this.meta);
      this.meta = [];
      if (this.metaKind === 'x') this.pax = parsePax(data);
      else if (this.metaKind === 'L') this.longName = cString(data, 0, data.length);
      else if (this.metaKind === 'K') this.longLink = cString(data, 0, data.length);
      // 'g' (global pax) carries nothing a support bundle needs: ignored.
    } else {
      await this.sink.onEnd();
    }
    if (this.padding > 0) this.state = 'pad';
    else this.state = 'header';
  }
}

function entryType(flag: string): TarEntryType {
  switch (flag) {
    case '0':
    case '\0':
    case '7':
      return 'file';
    case '1':
      return 'hardlink';
    case '2':
      return 'symlink';
    case '3':
      return 'char';
    case '4':
      return 'block';
    case '5':
    case 'D':
      return 'directory';
    case '6':
      return 'fifo';
    default:
      return 'other'; // sparse ('S'), volume labels, multi-volume continuations, vendor types
  }
}

function isZero(block: Buffer): boolean {
  for (let i = 0; i < BLOCK; i++) if (block[i] !== 0) return false;
  return true;
}

function checksumOk(block: Buffer): boolean {
  const stored = parseOctal(block, 148, 8);
  if (stored === null) return false;
  let unsigned = 0;
  let signed = 0;
  for (let i = 0; i < BLOCK; i++) {
    const b = i >= 148 && i < 156 ? 0x20 : block[i]!;
    unsigned += b;
    signed += b > 127 ? b - 256 : b;
  }
  return stored === unsigned || stored === signed;
}

function cString(buf: Buffer, start: number, length: number): string {
  const end = Math.min(buf.length, start + length);
  let stop = buf.indexOf(0, start);
  if (stop < 0 || stop > end) stop = end;
  return buf.toString('utf8', start, stop);
}

function parseOctal(buf: Buffer, start: number, length: number): number | null {
  const text = buf.toString('latin1', start, start + length).replace(/[\0 ]+$/, '').replace(/^[ ]+/, '');
  if (text === '') return 0;
  if (!/^[0-7]+$/.test(text)) return null;
  return parseInt(text, 8);
}

/** Octal, or GNU base-256 (high bit of the first byte set) for values too big for octal. */
function parseNumeric(buf: Buffer, start: number, length: number, what: string): number {
  const first = buf[start]!;
  if (first & 0x80) {
    if (first === 0xff) throw new TarFormatError(`negative ${what} in a tar header`);
    let value = first & 0x7f;
    for (let i = start + 1; i < start + length; i++) value = value * 256 + buf[i]!;
    if (!Number.isSafeInteger(value)) throw new TarFormatError(`${what} too large in a tar header`);
    return value;
  }
  const value = parseOctal(buf, start, length);
  if (value === null) throw new TarFormatError(`invalid ${what} field in a tar header`);
  return value;
}

function parseDecimal(text: string, what: string): number {
  if (!/^\d+$/.test(text)) throw new TarFormatError(`invalid ${what} "${text.slice(0, 40)}"`);
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new TarFormatError(`${what} too large`);
  return value;
}

/** pax records: "<length> <key>=<value>\n", the length counting the whole record. */
function parsePax(data: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  let off = 0;
  while (off < data.length) {
    const space = data.indexOf(0x20, off);
    if (space < 0) break;
    const len = Number(data.toString('latin1', off, space));
    if (!Number.isSafeInteger(len) || len <= 0 || off + len > data.length) throw new TarFormatError('corrupt pax header');
    const record = data.toString('utf8', space + 1, off + len - 1); // drop the trailing newline
    const eq = record.indexOf('=');
    if (eq > 0) out[record.slice(0, eq)] = record.slice(eq + 1);
    off += len;
  }
  return out;
}
