import type { MiTuple } from './mi/parser.js';

/** Stream text beyond this is cut from one call's `output` (about 25k tokens is the ceiling). */
const MAX_OUTPUT_CHARS = 80_000;

/** What gdb said during one call (or between two calls): stream text and the last stop. */
export class CallCollector {
  private chunks: string[] = [];
  private size = 0;
  private cut = false;
  private stopped: MiTuple | undefined;

  addOutput(text: string): void {
    if (this.size >= MAX_OUTPUT_CHARS) {
      this.cut = true;
      return;
    }
    const room = MAX_OUTPUT_CHARS - this.size;
    const kept = text.length > room ? text.slice(0, room) : text;
    if (kept.length < text.length) this.cut = true;
    this.chunks.push(kept);
    this.size += kept.length;
  }

  setStopped(results: MiTuple): void {
    this.stopped = results;
  }

  take(): { output: string; truncated: boolean; stopped?: MiTuple } {
    let output = this.chunks.join('');
    if (this.cut) output += `\n[debugkit: output truncated at ${MAX_OUTPUT_CHARS} characters; narrow the command, e.g. print a member or use x/N with a smaller N]\n`;
    return { output, truncated: this.cut, stopped: this.stopped };
  }
}
