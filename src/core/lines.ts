/**
 * Splits a stream's text into lines as it comes, each character looked at once: a line still open
 * is kept as its chunks, and only a new chunk is searched for the line's end. (Joining the open line
 * with each chunk and searching it again from its start was quadratic: one 27 MB line of gdb's held
 * every other client 1 s at a time for 48 s, attack w2-1.) A line longer than `maxLine` is cut there;
 * the rest of it, to its newline, is dropped, and `onLine` is told the whole line's length.
 */
export class LineSplitter {
  private parts: string[] = [];
  private length = 0;
  private total = 0;

  constructor(private readonly maxLine: number) {}

  /** Calls `onLine` with each line `chunk` ends (without its newline) and the line's whole length (more than its own when it was cut). */
  push(chunk: string, onLine: (line: string, total: number) => void): void {
    let from = 0;
    for (let newline = chunk.indexOf('\n'); newline !== -1; newline = chunk.indexOf('\n', from)) {
      this.keep(chunk.slice(from, newline));
      const line = this.parts.length === 1 ? this.parts[0]! : this.parts.join('');
      const total = this.total;
      this.parts = [];
      this.length = 0;
      this.total = 0;
      onLine(line, total);
      from = newline + 1;
    }
    if (from < chunk.length) this.keep(chunk.slice(from));
  }

  private keep(text: string): void {
    this.total += text.length;
    const room = this.maxLine - this.length;
    if (room <= 0 || text.length === 0) return;
    const kept = text.length > room ? text.slice(0, room) : text;
    this.parts.push(kept);
    this.length += kept.length;
  }
}
