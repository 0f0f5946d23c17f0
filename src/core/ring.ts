/**
 * A bounded text buffer with absolute cursors: readers ask "what came after position N" and
 * learn when older text has already been dropped, instead of silently missing it.
 */
export interface RingRead {
  text: string;
  /** Position to pass next time to get only newer text. */
  cursor: number;
  /** True when text between the requested cursor and the oldest kept text was dropped. */
  dropped: boolean;
}

export class OutputRing {
  private chunks: string[] = [];
  private keptChars = 0;
  /** Absolute position of the first kept character. */
  private start = 0;

  constructor(private readonly capacity = 1 << 20) {}

  get end(): number {
    return this.start + this.keptChars;
  }

  append(text: string): void {
    if (!text) return;
    this.chunks.push(text);
    this.keptChars += text.length;
    while (this.keptChars > this.capacity && this.chunks.length > 0) {
      const over = this.keptChars - this.capacity;
      const first = this.chunks[0]!;
      if (first.length <= over) {
        this.chunks.shift();
        this.keptChars -= first.length;
        this.start += first.length;
      } else {
        this.chunks[0] = first.slice(over);
        this.keptChars -= over;
        this.start += over;
      }
    }
  }

  /** Text after `cursor`, at most `maxChars` of it (the oldest first). */
  read(cursor = 0, maxChars = Number.POSITIVE_INFINITY): RingRead {
    const from = Math.max(cursor, this.start);
    const dropped = cursor < this.start;
    if (from >= this.end) return { text: '', cursor: Math.max(cursor, this.end), dropped };
    const all = this.chunks.length === 1 ? this.chunks[0]! : this.chunks.join('');
    if (this.chunks.length > 1) this.chunks = [all];
    const offset = from - this.start;
    const text = all.slice(offset, offset + maxChars);
    return { text, cursor: from + text.length, dropped };
  }
}

/** One page of a ring for a reader: where it is, where the end is, and whether more follows. */
export interface RingPage extends RingRead {
  /** Absolute position of the end of the output (what a reader that is up to date passes next). */
  end: number;
  /** True when text after `cursor` is already there (read again from `cursor`). */
  more: boolean;
}

/**
 * Reads a page for a tool: a cursor >= 0 is an absolute position (past the end: the end, never
 * echoed back); a negative cursor counts back from the end, so `-2000` is the last 2,000
 * characters. Text comes oldest first, at most `maxChars` of it.
 */
export function readPage(ring: OutputRing, cursor: number, maxChars: number): RingPage {
  const end = ring.end;
  const from = cursor < 0 ? Math.max(0, end + cursor) : Math.min(cursor, end);
  const read = ring.read(from, maxChars);
  // Asking for "the last N" is not losing anything, even when older text was dropped.
  const dropped = cursor >= 0 && read.dropped;
  return { text: read.text, cursor: read.cursor, dropped, end, more: read.cursor < end };
}

/**
 * The last `maxChars` of the text after `cursor`: what a bounded answer keeps when it must cut
 * (the end is where failures are). `skipped` counts the characters between `cursor` and the text.
 */
export function readTail(ring: OutputRing, cursor: number, maxChars: number): RingPage & { skipped: number } {
  const end = ring.end;
  const from = Math.max(cursor, end - maxChars);
  const read = ring.read(from, maxChars);
  return { text: read.text, cursor: read.cursor, dropped: cursor < from, end, more: false, skipped: from - cursor };
}
