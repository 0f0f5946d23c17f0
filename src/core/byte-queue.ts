/**
 * Bytes received and not yet consumed, kept contiguous for a parser that frames messages.
 *
 * Appending by `Buffer.concat` copies everything held on every chunk, which is quadratic when a
 * peer sends one large message (or a backlog builds) in many small chunks. Here the storage
 * doubles when full, so appending is linear overall, and consuming from the front is free.
 */
export class ByteQueue {
  private data: Buffer = Buffer.alloc(0);
  private start = 0;
  private end = 0;
  /** The storage is a chunk handed to `push` (not ours to write into). */
  private borrowed = false;

  get length(): number {
    return this.end - this.start;
  }

  /** The bytes held, as a view: it keeps its contents, but does not grow with later pushes. */
  view(): Buffer {
    return this.data.subarray(this.start, this.end);
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    if (this.length === 0) {
      // The common case, a message per chunk: no copy.
      [this.data, this.start, this.end, this.borrowed] = [chunk, 0, chunk.length, true];
      return;
    }
    if (this.borrowed || this.end + chunk.length > this.data.length) {
      // New storage (never written over: views handed out keep their bytes).
      const held = this.length;
      const next = Buffer.allocUnsafe(Math.max(held + chunk.length, 2 * held, 4096));
      this.data.copy(next, 0, this.start, this.end);
      [this.data, this.start, this.end, this.borrowed] = [next, 0, held, false];
    }
    chunk.copy(this.data, this.end);
    this.end += chunk.length;
  }

  /** Drops the first `n` bytes held. */
  consume(n: number): void {
    if (n < 0 || n > this.length) throw new RangeError(`cannot consume ${n} of ${this.length} bytes`);
    this.start += n;
    if (this.start === this.end) this.clear();
  }

  clear(): void {
    [this.data, this.start, this.end, this.borrowed] = [Buffer.alloc(0), 0, 0, false];
  }
}
